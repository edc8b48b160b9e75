"""clinseg's nnU-Net evaluation against nnU-Net's own code, on generated NIfTI folders.

    python tools/check_nnunet_reference.py SCRATCH [--cases N] [--keep DIR]

SCRATCH is a folder holding a copy of nnU-Net's files (MIC-DKFZ/nnUNet, e.g. @ 0e495086eb108ff79afe106291e8c15bd2f2bc3a)
laid out as in the repository, and a `_deps` folder for what they import that is not installed:

    SCRATCH/nnunetv2/__init__.py, configuration.py, utilities/default_n_proc_DA.py,
        evaluation/__init__.py, evaluation/evaluate_predictions.py,            (the real files, unchanged)
        imageio/__init__.py, imageio/base_reader_writer.py, imageio/simpleitk_reader_writer.py,
        utilities/__init__.py, utilities/json_export.py
    SCRATCH/nnunetv2/imageio/reader_writer_registry.py           (stub: the real one imports every reader)
    SCRATCH/nnunetv2/utilities/plans_handling/plans_handler.py   (stub: PlansManager needs torch)
    SCRATCH/_deps/torch/__init__.py                               (stub: json_export only tests for torch.device)
    SCRATCH/_deps/batchgenerators/...                             (batchgenerators' file_and_folder_operations, or
                                                                   pip install batchgenerators)

For labels (1, 2, 3) (given to clinseg, or left for it to find case by case), for KiTS-style regions ((1, 2, 3), (2, 3),
2) and for labels with an ignore label (4), it writes
the generated cases of tests/reference/kits_nnunet_cases.py as NIfTI files (anisotropic affines), then
- per case: nnU-Net's `compute_metrics(ref, pred, SimpleITKIO(), labels_or_regions, ignore_label)` against
  `clinseg.competitions.nnunet.score_case` on the same files read by clinseg (nibabel), every number;
- per folder: nnU-Net's `compute_metrics_on_folder` writes summary.json, clinseg's `evaluate_folders` +
  `write_json` writes another: the two files must be identical byte for byte, and `compare_summary` must find nothing.
Prints the figures; exits 1 on any difference.
"""
import argparse, json, math, shutil, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.competitions import nnunet  # noqa: E402
from clinseg.folders import evaluate_folders  # noqa: E402
from clinseg.nifti import read_nifti_label  # noqa: E402
from tests.reference.kits_nnunet_cases import make_cases  # noqa: E402

# (what nnU-Net is given, its ignore label, clinseg given the same regions or left to find the labels per case)
SETUPS = {"labels": ([1, 2, 3], None, True), "labels found by clinseg": ([1, 2, 3], None, False),
          "regions": ([(1, 2, 3), (2, 3), 2], None, True), "ignore label": ([1, 2, 3], 4, True)}


def save(path, data, spacing):
    import nibabel as nib
    affine = np.diag(list(spacing) + [1.0])
    affine[:3, 3] = (-10.0, 20.0, 5.0)
    img = nib.Nifti1Image(np.asarray(data, np.uint8), affine)
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    nib.save(img, str(path))


def write_folders(root, cases, ignore):
    (root / "ref").mkdir(parents=True)
    (root / "pred").mkdir()
    for k, (name, scenario, pred, truth, spacing) in enumerate(cases):
        t = truth
        if ignore is not None and k % 4 == 0:
            t = truth.copy()
            t[:, :, :2] = ignore
        save(root / "ref" / f"{name}.nii.gz", t, spacing)
        save(root / "pred" / f"{name}.nii.gz", pred, spacing)


def compare_case(theirs, ours):
    "(values compared, largest difference, problems) of one case's metrics"
    n, worst, problems = 0, 0.0, []
    rows = {r["region"]: r for r in ours}
    for key, m in theirs["metrics"].items():
        r = rows.get(nnunet.label_or_region_key(key))
        if r is None:
            problems.append(f"{key}: no clinseg row")
            continue
        for col, v in m.items():
            n += 1
            a, b = float(r[col]), float(v)
            if math.isnan(a) or math.isnan(b):
                if not (math.isnan(a) and math.isnan(b)): problems.append(f"{key} {col}: {a} vs {b}")
                continue
            worst = max(worst, abs(a - b))
            if abs(a - b) > 1e-12: problems.append(f"{key} {col}: clinseg {a!r}, nnU-Net {b!r}")
    return n, worst, problems


def main(scratch, n_cases, keep):
    sys.path[:0] = [str(scratch), str(scratch / "_deps")]
    from nnunetv2.evaluation import evaluate_predictions as ep
    from nnunetv2.imageio.simpleitk_reader_writer import SimpleITKIO
    print(f"nnU-Net's module: {Path(ep.__file__)}")
    cases = make_cases(n_cases, seed=11)
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="clinseg-nnunet-check-"))
    failed = False
    try:
        for setup, (lr, ignore, given) in SETUPS.items():
            root = work / setup.replace(" ", "_")
            write_folders(root, cases, ignore)
            values, worst, problems = 0, 0.0, []
            for name, *_ in cases:
                rf, pf = str(root / "ref" / f"{name}.nii.gz"), str(root / "pred" / f"{name}.nii.gz")
                theirs = ep.compute_metrics(rf, pf, SimpleITKIO(), lr, ignore)
                ours = nnunet.score_case(read_nifti_label(pf).data, read_nifti_label(rf).data, None,
                                         nnunet.nnunet_regions(lr), ignore_label=ignore)
                v, w, p = compare_case(theirs, ours)
                values, worst, problems = values + v, max(worst, w), problems + [f"{name} {x}" for x in p]
            ep.compute_metrics_on_folder(str(root / "ref"), str(root / "pred"), str(root / "nnunet_summary.json"),
                                         SimpleITKIO(), ".nii.gz", lr, ignore, num_processes=2)
            ev = evaluate_folders(str(root / "ref"), str(root / "pred"),
                                  nnunet.nnunet_protocol(regions=lr, ignore_label=ignore) if given else nnunet.NNUNET)
            nnunet.write_json(ev, root / "clinseg_summary.json")
            a, b = (root / "clinseg_summary.json").read_bytes(), (root / "nnunet_summary.json").read_bytes()
            diffs = nnunet.compare_summary(ev, root / "nnunet_summary.json")
            n_json = len(json.loads(b)["metric_per_case"])
            print(f"{setup}: {len(cases)} cases, {values} per-case values compared with compute_metrics, largest "
                  f"difference {worst:.3g}; summary.json ({n_json} cases, {len(b)} bytes) "
                  f"{'identical byte for byte' if a == b else 'DIFFERS'}; compare_summary: {len(diffs)} differences")
            for p in problems[:10] + [str(d) for d in diffs[:10]]: print("   ", p)
            failed |= bool(problems or diffs or a != b)
    finally:
        if not keep: shutil.rmtree(work, ignore_errors=True)
    print("FAILED" if failed else "all equal")
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scratch", type=Path, help="the folder holding nnunetv2/ (and _deps/)")
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--keep", help="write the folders here and keep them")
    args = ap.parse_args()
    sys.exit(main(args.scratch.resolve(), args.cases, args.keep))
