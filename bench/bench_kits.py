"""Speed of clinseg's KiTS21 case scoring against kits21's metrics.py and the tests' re-expression, in paired rounds.

    python bench/bench_kits.py [--quick] [--rounds N] [--kits21 SCRATCH]

Input, made here: a KiTS-sized case, 100x512x512 voxels of spacing (3.0, 0.78125, 0.78125) mm (axes z, y, x): two
kidneys (ellipsoids of radii 60, 35 and 28 mm), a tumour of radius 22 mm in one and a cyst of 9 mm in the other; the
prediction is the truth moved by (1, 2, -1) voxels, the tumour's far half called a cyst, and a false-positive
tumour of 8 mm. With --quick: 30x128x128 voxels of (3.0, 2.0, 2.0) mm, the same organs, 2 rounds.
Also the real KiTS19 label, $CLINSEG_DATA/kits19/case_00061/segmentation.nii.gz (29x512x512), against a prediction moved
by (1, 2) voxels with the tumour's far half called a cyst (not with --quick).

Contenders, each scoring the three HECs (Dice and surface Dice) of one case given as arrays:
- clinseg: `clinseg.competitions.kits21.score_case(pred, truth, spacing)`;
- kits21: `compute_metrics_for_label` of kits21/evaluation/metrics.py for each HEC, as `compute_metrics_for_case` calls
  it after reading the files (with --kits21 SCRATCH, the folder holding a copy of the repository's kits21/ and _deps/;
  see tools/check_kits21_reference.py; it needs medpy and DeepMind's surface-distance);
- re-expression: `tests/reference/kits21_metrics.py` `metrics_for_case` (dense, like DeepMind's code).
The values are checked equal (1e-12) before timing. Each round times every contender once, the order rotating between
rounds; a ratio is the peer's time over clinseg's in the same round, reported as the median and the range.
"""
import argparse, statistics, sys, time, warnings
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.competitions.kits21 import score_case  # noqa: E402
from tests.reference import kits21_metrics as ref  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from volumes import KITS, KITS_MISSING  # noqa: E402


def ellipsoid_mm(shape, spacing, centre_mm, radii_mm):
    grids = np.ogrid[tuple(slice(0, n) for n in shape)]
    return sum(((g * s - c) / r) ** 2 for g, s, c, r in zip(grids, spacing, centre_mm, radii_mm)) <= 1


def kits_sized(quick):
    "(pred, truth, spacing) of the synthetic KiTS-sized case"
    shape, spacing = ((30, 128, 128), (3.0, 2.0, 2.0)) if quick else ((100, 512, 512), (3.0, 0.78125, 0.78125))
    ext = [n * s for n, s in zip(shape, spacing)]
    truth = np.zeros(shape, np.uint8)
    left = ellipsoid_mm(shape, spacing, (ext[0] / 2, ext[1] * 0.55, ext[2] * 0.3), (60, 35, 28))
    right = ellipsoid_mm(shape, spacing, (ext[0] / 2 + 6, ext[1] * 0.55, ext[2] * 0.7), (60, 35, 28))
    truth[left | right] = 1
    truth[ellipsoid_mm(shape, spacing, (ext[0] / 2 + 20, ext[1] * 0.55 + 15, ext[2] * 0.3), (22, 22, 22)) & left] = 2
    truth[ellipsoid_mm(shape, spacing, (ext[0] / 2 - 25, ext[1] * 0.55, ext[2] * 0.7), (9, 9, 9)) & right] = 3
    pred = np.roll(truth, (1, 2, -1), axis=(0, 1, 2))
    pred[(pred == 2) & (np.arange(shape[2]) * spacing[2] > ext[2] * 0.3)[None, None, :]] = 3
    pred[ellipsoid_mm(shape, spacing, (ext[0] / 2, ext[1] * 0.3, ext[2] * 0.5), (8, 8, 8))] = 2
    return pred, truth, spacing


def kits19_case():
    "(pred, truth, spacing) of the real KiTS19 label, or None"
    if KITS is None: return None
    from clinseg.nifti import read_nifti_label
    lab = read_nifti_label(KITS)
    t = np.ascontiguousarray(lab.data)
    p = np.roll(t, (1, 2), axis=(0, 1))
    far = np.zeros(t.shape, bool)
    far[:, :, int(np.median(np.nonzero(t == 2)[2])):] = True
    p[(p == 2) & far] = 3
    return p, t, tuple(float(s) for s in lab.spacing)


def contenders(kits21_dir):
    "{name: f(pred, truth, spacing) -> 3x2 array}"
    out = {"clinseg": lambda p, t, s: np.array([[r["Dice"], r["SD"]] for r in score_case(p, t, s)])}
    if kits21_dir is not None:
        sys.path[:0] = [str(kits21_dir), str(kits21_dir / "_deps")]
        warnings.filterwarnings("ignore", category=DeprecationWarning)   # surface-distance's scipy.ndimage.filters
        from kits21.evaluation import metrics as m
        out["kits21 metrics.py"] = lambda p, t, s: np.array(
            [m.compute_metrics_for_label(p, t, m.KITS_HEC_LABEL_MAPPING[h], s, m.HEC_SD_TOLERANCES_MM[h])
             for h in m.HEC_NAME_LIST], dtype=float)
    out["re-expression"] = ref.metrics_for_case
    return out


def paired(fs, args, rounds):
    "{name: [seconds per round]}, the order of the contenders rotating between rounds"
    names, times = list(fs), {n: [] for n in fs}
    for i in range(rounds):
        for n in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            fs[n](*args)
            times[n].append(time.perf_counter() - t0)
    return times


def main(quick, rounds, kits21_dir):
    fs = contenders(kits21_dir)
    if kits21_dir is None: print("kits21's metrics.py not given (--kits21 SCRATCH): its column is left out",
                                 file=sys.stderr)
    cases = {"KiTS-sized synthetic": kits_sized(quick)}
    if not quick:
        k = kits19_case()
        if k is None: print(f"skipped the KiTS19 row: {KITS_MISSING}", file=sys.stderr)
        else: cases["KiTS19 case_00061"] = k
    peers = [n for n in fs if n != "clinseg"]
    print(f"{rounds} paired rounds; numpy {np.__version__}" + (" (quick)" if quick else ""))
    print("| case | voxels | spacing mm | clinseg ms | " + " | ".join(f"{n} ms" for n in peers) + " | "
          + " | ".join(f"{n} / clinseg: median (range)" for n in peers) + " |")
    print("|---" * (4 + 2 * len(peers)) + "|")
    for name, (p, t, s) in cases.items():
        values = {n: f(p, t, s) for n, f in fs.items()}
        for n in peers: np.testing.assert_allclose(values["clinseg"], values[n], rtol=0, atol=1e-12, err_msg=n)
        times = paired(fs, (p, t, s), rounds)
        ratios = {n: [b / a for a, b in zip(times["clinseg"], times[n])] for n in peers}
        med = {n: statistics.median(v) * 1e3 for n, v in times.items()}
        print(f"| {name} | {'×'.join(map(str, t.shape))} | {', '.join(f'{x:g}' for x in s)} | {med['clinseg']:.0f} | "
              + " | ".join(f"{med[n]:.0f}" for n in peers) + " | "
              + " | ".join(f"{statistics.median(r):.1f} ({min(r):.1f}–{max(r):.1f})" for r in ratios.values()) + " |")
        print(f"  same numbers (Dice, SD per HEC): {np.round(values['clinseg'], 6).tolist()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 30x128x128 case and 2 rounds: seconds")
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 5, 2 with --quick)")
    ap.add_argument("--kits21", type=Path, default=None,
                    help="the scratch folder holding a copy of kits21's code (kits21/ and _deps/)")
    args = ap.parse_args()
    main(args.quick, args.rounds or (2 if args.quick else 5), args.kits21.resolve() if args.kits21 else None)
