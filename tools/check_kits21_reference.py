"""clinseg's KiTS21 evaluation against kits21's own code, on generated cases, NIfTI folders and the real KiTS19 label.

    python tools/check_kits21_reference.py SCRATCH [--cases N] [--keep DIR]

SCRATCH is a folder holding kits21's files as in the repository (neheller/kits21: kits21/evaluation/metrics.py and
ranking.py @ 0cf253ff5b1942927aa54808260bea13c54176f7, kits21/configuration/labels.py @ 697892ba, paths.py, empty
__init__.py files), and `_deps/` for what they import that is not installed (batchgenerators'
file_and_folder_operations). They need SimpleITK, medpy and DeepMind's surface-distance (`pip install
surface-distance`). The one repair for numpy 2: ranking.py's CSV writing formats arrays of one element with %.8f.

Checks:
- per case: `compute_metrics_for_label` on the generated arrays (tests/reference/kits_nnunet_cases.py) for each HEC
  against `clinseg.competitions.kits21.score_case`;
- folders: kits21's `evaluate_predictions` (its TRAINING_DIR pointed at a temporary data folder) writes evaluation.csv;
  clinseg's `evaluate_folders` + `write_evaluation_csv` writes another: identical byte for byte, and the means of the
  cases' arrays equal clinseg's summary;
- the real label $CLINSEG_DATA/kits19/case_00061/segmentation.nii.gz (when CLINSEG_DATA is set), with a perturbed
  prediction written beside it: kits21's `compute_metrics_for_case` (SimpleITK) against clinseg (nibabel);
- ranking: kits21's `rank_then_aggregate` on the six means against `rank_then_aggregate`, and its `rank_participants`
  (reading and writing CSVs) against `rank_participants`, on the repository's example and on random tables with ties.
Prints the figures; exits 1 on any difference.
"""
import argparse, contextlib, io, os, shutil, sys, tempfile, warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.competitions import kits21  # noqa: E402
from clinseg.folders import evaluate_folders  # noqa: E402
from clinseg.nifti import read_nifti_label  # noqa: E402
from tests.reference.kits_nnunet_cases import make_cases  # noqa: E402


def save(path, data, affine):
    import nibabel as nib
    img = nib.Nifti1Image(np.asarray(data, np.uint8), affine)
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    nib.save(img, str(path))


def diff(ours, theirs):
    return float(np.max(np.abs(np.asarray(ours, float) - np.asarray(theirs, float))))


def check_cases(m, cases):
    worst, n = 0.0, 0
    for name, scenario, pred, truth, spacing in cases:
        rows = kits21.score_case(pred, truth, spacing)
        for r in rows:
            hec = r["region"]
            d, sd = m.compute_metrics_for_label(pred, truth, m.KITS_HEC_LABEL_MAPPING[hec], spacing,
                                                m.HEC_SD_TOLERANCES_MM[hec])
            worst, n = max(worst, diff([r["Dice"], r["SD"]], [d, sd])), n + 2
    print(f"compute_metrics_for_label: {len(cases)} cases x 3 HECs, {n} values, largest difference {worst:.3g}")
    return worst <= 1e-12


def check_folders(m, cases, work):
    data, truth, preds = work / "data", work / "truth", work / "predictions"
    for d in (truth, preds): d.mkdir(parents=True)
    for name, scenario, pred, t, spacing in cases:
        affine = np.diag(list(spacing) + [1.0])
        (data / name).mkdir(parents=True)
        save(data / name / m.GT_SEGM_FNAME, t, affine)
        save(truth / f"{name}.nii.gz", t, affine)
        save(preds / f"{name}.nii.gz", pred, affine)
    m.TRAINING_DIR = data                       # where evaluate_predictions looks for the truth
    with contextlib.redirect_stdout(io.StringIO()):
        metrics, files = m.evaluate_predictions(str(preds), num_processes=2)
    theirs = (preds / "evaluation.csv").read_text()
    (preds / "evaluation.csv").unlink()         # not a NIfTI file, but keep the folder as it was
    ev = evaluate_folders(truth, preds, kits21.KITS21)
    kits21.write_evaluation_csv(ev, work / "clinseg_evaluation.csv")
    ours = (work / "clinseg_evaluation.csv").read_text()
    mean = metrics.mean(0)
    worst = max(diff([ev.summary[h]["Dice"], ev.summary[h]["SD"]], mean[i]) for i, h in enumerate(m.HEC_NAME_LIST))
    per_case = max(diff([[r["Dice"], r["SD"]] for r in ev.cases[Path(f).name[:-7]].rows], metrics[k])
                   for k, f in enumerate(files))
    print(f"evaluate_predictions on {len(files)} NIfTI cases: per case largest difference {per_case:.3g}, means "
          f"{worst:.3g}; evaluation.csv ({len(theirs)} bytes) "
          f"{'identical byte for byte' if ours == theirs else 'DIFFERS'}")
    return ours == theirs and worst <= 1e-12 and per_case <= 1e-12


def check_real(m, work):
    root = os.environ.get("CLINSEG_DATA", "").strip()
    path = Path(root) / "kits19" / "case_00061" / "segmentation.nii.gz" if root else None
    if path is None or not path.is_file():
        print("skipped: the real KiTS19 label needs CLINSEG_DATA (the folder of real samples)")
        return True
    lab = read_nifti_label(path)
    t = np.asarray(lab.data)
    p = np.roll(t, (1, 2), axis=(0, 1))
    far = np.zeros(t.shape, bool)
    far[:, :, int(np.median(np.nonzero(t == 2)[2])):] = True
    p[(p == 2) & far] = 3
    save(work / "case_00061_pred.nii.gz", p, lab.affine)
    theirs = m.compute_metrics_for_case(str(work / "case_00061_pred.nii.gz"), str(path))
    ours = [[r["Dice"], r["SD"]] for r in kits21.score_case(read_nifti_label(work / "case_00061_pred.nii.gz").data,
                                                             t, tuple(float(s) for s in lab.spacing))]
    worst = diff(ours, theirs)
    print(f"compute_metrics_for_case on KiTS19 case_00061 {t.shape} (SimpleITK's axes reversed, clinseg's nibabel "
          f"axes): largest difference {worst:.3g}; Dice, SD per HEC: {np.round(theirs, 6).tolist()}")
    return worst <= 1e-12


def check_ranking(r, work):
    ok, n_tables = True, 0
    tables = [kits21.KITS21_EXAMPLE]
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        data = rng.choice(np.linspace(0.5, 1.0, 6), size=(n, 6))
        data[rng.random((n, 6)) < 0.3] = 0.8
        tables.append({f"team{i}": tuple(data[i]) for i in range(n)})
    for table in tables:
        data = np.array(list(table.values()), float)
        final, aggregated = r.rank_then_aggregate(data)
        got = {x["submission"]: x for x in kits21.rank_then_aggregate(table)}
        ok &= all(got[t]["rank"] == final[i] and got[t]["mean_rank"] == aggregated[i] for i, t in enumerate(table))
        csv_in, csv_out = work / "summary.csv", work / "ranking.csv"
        csv_in.write_text(",Dice_kidney,Dice_masses,Dice_tumor,SD_kidney,SD_masses,SD_tumor\n" + "".join(
            f"{t}," + ",".join(repr(float(v)) for v in vals) + "\n" for t, vals in table.items()))
        with contextlib.redirect_stdout(io.StringIO()): r.rank_participants(str(csv_in), str(csv_out))
        theirs = {line.split(",")[0]: line for line in csv_out.read_text().splitlines()[1:]}
        rows = kits21.rank_participants({t: np.array(v, float) for t, v in table.items()})
        mine = {x["team_name"]: "%s,%d,%.4f,%.8f,%.8f,%.8f" % tuple(x.values()) for x in rows}
        ok &= mine == theirs
        n_tables += 1
    print(f"ranking: {n_tables} tables (the repository's example and random ones with ties): rank_then_aggregate "
          f"and rank_participants {'agree' if ok else 'DIFFER'}")
    example = kits21.rank_then_aggregate(kits21.KITS21_EXAMPLE)
    print("   example, six means:", [(x["submission"], x["rank"]) for x in example])
    print("   example, ranking.py:", [(x["team_name"], x["final_rank"])
                                      for x in kits21.rank_participants(kits21.KITS21_EXAMPLE)])
    return ok


def main(scratch, n_cases, keep):
    sys.path[:0] = [str(scratch), str(scratch / "_deps")]
    warnings.filterwarnings("ignore", category=DeprecationWarning)   # surface-distance's scipy.ndimage.filters
    from kits21.evaluation import metrics as m, ranking as r
    print(f"kits21's module: {Path(m.__file__)}")
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="clinseg-kits21-check-"))
    try:
        cases = make_cases(n_cases, seed=13)
        results = [check_cases(m, cases), check_folders(m, cases, work / "folders"), check_real(m, work),
                   check_ranking(r, work)]
    finally:
        if not keep: shutil.rmtree(work, ignore_errors=True)
    print("all equal" if all(results) else "FAILED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scratch", type=Path, help="the folder holding kits21/ (and _deps/)")
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--keep", help="write the folders here and keep them")
    args = ap.parse_args()
    sys.exit(main(args.scratch.resolve(), args.cases, args.keep))
