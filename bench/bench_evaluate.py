"""Folder evaluation: how `clinseg evaluate` scales with worker processes, and the peak memory of one case.

    python bench/bench_evaluate.py [--quick] [--cases N] [--protocol NAME] [--rounds N]

Input, made here in a temporary folder: N cases (100; 6 with --quick) of a BraTS-sized grid, 240x240x155 voxels
(48x48x31 with --quick), spacing (1, 1, 1) mm, labels 0-3 as BraTS 2023 writes them. Each truth holds two to four
tumours of nested ellipsoids (oedema, enhancing rim, necrotic core); the prediction shifts each by up to two voxels,
drops one in three of the small ones and adds a false positive in half the cases. Files are gzipped NIfTI, as
challenges ship them.

Measured: the wall time of `evaluate_folders(truth, predictions, protocol)` with jobs=1 and jobs=2, in paired rounds
(alternating order, 2 rounds; one case scored first, untimed, as a warm-up), reported as medians and the speed-up
(jobs=1 time over jobs=2 time; 2.0 is linear on two cores); both runs' rows are checked equal. Peak memory:
tracemalloc's peak during one case scored in this process (`score_case_files`: reading both files, aligning, checking
labels, scoring), in MB and as a multiple of one volume: as stored (uint8), and as float64 (what nibabel's
`get_fdata`, which the challenge scripts call, makes of it). Protocol: brats2023-gli when that protocol is
installed, else dice (`--protocol` to choose).
"""
import argparse, statistics, sys, tempfile, time, tracemalloc
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.folders import evaluate_folders, find_cases, get_protocol, protocols, score_case_files  # noqa: E402


def ellipsoid(shape, centre, radii):
    zz, yy, xx = np.ogrid[:shape[0], :shape[1], :shape[2]]
    return sum(((g - c) / r) ** 2 for g, c, r in zip((zz, yy, xx), centre, radii)) <= 1


def tumour_case(shape, rng):
    "(truth, prediction) label volumes: nested tumours, shifted, some missed, perhaps a false positive"
    truth, pred = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
    scale = shape[0] / 240
    for k in range(rng.integers(2, 5)):
        r = rng.uniform(6, 30) * scale
        centre = [rng.uniform(r + 2, s - r - 2) for s in shape]
        shift = rng.integers(-2, 3, 3)
        for out, c in ((truth, centre), (pred, np.add(centre, shift))):
            if out is pred and r < 12 * scale and k % 3 == 0: continue
            out[ellipsoid(shape, c, (r, r * 0.8, r * 0.9))] = 2
            out[ellipsoid(shape, c, (r * 0.6, r * 0.5, r * 0.55))] = 3
            out[ellipsoid(shape, c, (r * 0.3, r * 0.25, r * 0.3))] = 1
    if rng.random() < 0.5: pred[ellipsoid(shape, [s * 0.5 for s in shape], (4 * scale + 1,) * 3)] = 2
    return truth, pred


def write_cases(folder, n, shape, seed=0):
    import nibabel as nib
    rng = np.random.default_rng(seed)
    affine = np.diag([-1.0, -1.0, 1.0, 1.0])
    for i in range(n):
        for sub, vol in zip(("truth", "pred"), tumour_case(shape, rng)):
            img = nib.Nifti1Image(vol, affine)
            img.set_sform(affine, code=1)
            img.set_qform(affine, code=1)
            (folder / sub).mkdir(parents=True, exist_ok=True)
            nib.save(img, str(folder / sub / f"BraTS-GLI-{i:05d}-000.nii.gz"))


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def main(quick, n, protocol, rounds):
    shape = (48, 48, 31) if quick else (240, 240, 155)
    name = protocol or ("brats2023-gli" if "brats2023-gli" in protocols() else "dice")
    p = get_protocol(name)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t_write, _ = timed(lambda: write_cases(tmp, n, shape))
        print(f"{n} cases of {'x'.join(map(str, shape))} written in {t_write:.1f} s; protocol {p.name}")
        first = next(iter(find_cases(tmp / "truth").values()))
        score_case_files(p, p.regions, first.name, first, tmp / "pred" / first.name)   # warm-up: imports, kernels
        tracemalloc.start()
        score_case_files(p, p.regions, first.name, first, tmp / "pred" / first.name)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        one_t, two_t = [], []
        for r in range(rounds):
            order = [(1, one_t), (2, two_t)][:: 1 if r % 2 == 0 else -1]
            for jobs, out in order:
                t, ev = timed(lambda: evaluate_folders(tmp / "truth", tmp / "pred", p, jobs=jobs))
                out.append(t)
                rows = [c.rows for c in ev.cases.values()]
                if jobs == 1: rows_one = rows
                else: rows_two = rows
            assert repr(rows_one) == repr(rows_two), "jobs=1 and jobs=2 differ"
    s1, s2 = statistics.median(one_t), statistics.median(two_t)
    ratios = [a / b for a, b in zip(one_t, two_t)]
    print("| cases | jobs=1 s | jobs=2 s | speed-up (range) | s per case, jobs=1 | peak MB per case | in uint8 volumes "
          "| in float64 volumes |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {n} | {s1:.2f} | {s2:.2f} | {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
          f"{s1 / n:.3f} | {peak / 2**20:.0f} | {peak / np.prod(shape):.1f} | {peak / np.prod(shape) / 8:.2f} |")


if __name__ == "__main__":
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--quick", action="store_true", help="6 small cases, one round (CI)")
    a.add_argument("--cases", type=int, help="number of cases (100; 6 with --quick)")
    a.add_argument("--protocol", help="the protocol (brats2023-gli if installed, else dice)")
    a.add_argument("--rounds", type=int, help="paired rounds (2; 1 with --quick)")
    args = a.parse_args()
    main(args.quick, args.cases or (6 if args.quick else 100), args.protocol, args.rounds or (1 if args.quick else 2))
