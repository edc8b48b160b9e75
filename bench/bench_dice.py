"""Speed of clinseg's `dice` against the floor, the numpy one-liners and medpy, in paired rounds.

    python bench/bench_dice.py [--quick] [--rounds N]

Inputs (boolean volumes; 512x512x300, 79 MB each, C order; with --quick 128x128x64):
- "tumour": two overlapping spheres of radius 40 and 38 voxels (0.3% of the volume), the HW2 situation;
- "organ": two overlapping spheres of radius 120 and 115 voxels (9% of the volume), a liver-sized object;
- "dense": independent random voxels, 50% each: no part of either volume is empty;
- "noisy": the organ sphere against itself with 5% of its voxels flipped at random: a many-run noise mask
  (about 7.5 million runs in the prediction);
- "kits19": the real KiTS19 kidney (label 1 of $CLINSEG_DATA/kits19/case_00061/segmentation.nii.gz, 29x512x512,
  in nibabel's Fortran order) against a perturbed kidney (moved by (1, 3, -2) voxels, plus a ball of radius 8
  voxels), both Fortran-ordered as nibabel gives them; skipped with a message when the file is absent;
- "mixed": the organ pair with the truth in Fortran order and the prediction in C order (with --quick too).
Contenders, on the same arrays:
- floor: `np.count_nonzero(a) + np.count_nonzero(b)`, reading both volumes once (not a Dice: the least any Dice
  must do);
- clinseg `dice(a, b)` (its compiled loop when numba is installed), and the same with `CLINSEG_NO_NUMBA=1` (its
  numpy engine);
- naive `2 * (a & b).sum() / (a.sum() + b.sum())`;
  numpy `2 * count_nonzero(a & b) / (count_nonzero(a) + count_nonzero(b))`;
- medpy `medpy.metric.binary.dc(a, b)` when medpy is importable (it is not a clinseg dependency).
Every contender's Dice is checked equal (to 1e-12) before timing. Each round times every contender once, the order
shuffled from round to round (seeded), so that no contender always runs right after the same one; a contender's ratio
in a round is its time over the floor's time in that round. The table gives the median time and the median ratio with
its range (min-max) over the rounds.
"""
import argparse, os, statistics, sys, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.dice import dice  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from volumes import KITS, KITS_MISSING, spheres   # noqa: E402


def dense(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(shape, dtype=np.float32) < 0.5, rng.random(shape, dtype=np.float32) < 0.5


def noisy(shape, r, seed=1):
    "(prediction, truth): a sphere, and the sphere with 5% of all voxels flipped"
    truth, _ = spheres(shape, r, r)
    return truth ^ (np.random.default_rng(seed).random(shape, dtype=np.float32) < 0.05), truth


def kits_pair():
    "(perturbed kidney, kidney) of the KiTS19 case in nibabel's Fortran order, or None when the file is absent"
    if KITS is None: return None
    import nibabel as nib
    kidney = np.asanyarray(nib.load(KITS).dataobj) == 1
    p = np.roll(kidney, (1, 3, -2), axis=(0, 1, 2))
    zz, yy, xx = np.ogrid[:kidney.shape[0], :kidney.shape[1], :kidney.shape[2]]
    p |= (zz - 14) ** 2 + (yy - 100) ** 2 + (xx - 256) ** 2 <= 8 ** 2
    return np.asfortranarray(p), np.asfortranarray(kidney)


def numpy_engine(a, b):
    "clinseg's dice with the compiled loop switched off"
    old = os.environ.get("CLINSEG_NO_NUMBA")
    os.environ["CLINSEG_NO_NUMBA"] = "1"
    try: return dice(a, b)
    finally:
        if old is None: del os.environ["CLINSEG_NO_NUMBA"]
        else: os.environ["CLINSEG_NO_NUMBA"] = old


def contenders():
    out = {"floor (count a + count b)": lambda a, b: np.count_nonzero(a) + np.count_nonzero(b),
           "clinseg dice": dice,
           "clinseg dice, numpy engine (CLINSEG_NO_NUMBA=1)": numpy_engine,
           "naive 2*(a&b).sum()/(a.sum()+b.sum())": lambda a, b: 2 * (a & b).sum() / (a.sum() + b.sum()),
           "numpy count_nonzero one-liner": lambda a,
           b: 2 * np.count_nonzero(a & b) / (np.count_nonzero(a) + np.count_nonzero(b))}
    try:
        import medpy
        from medpy.metric.binary import dc
        out[f"medpy {medpy.__version__} dc"] = dc
    except Exception as exc:
        print(f"medpy not importable ({type(exc).__name__}: {exc}): its row is left out", file=sys.stderr)
    return out


def paired(funcs, a, b, rounds):
    "Per-round times of every function on (a, b), the order shuffled each round"
    names = list(funcs)
    times = {n: [] for n in names}
    for f in funcs.values(): f(a, b)   # warm-up (and the compiled loop's first call)
    for r in range(rounds):
        for n in np.random.default_rng(r).permutation(names).tolist():
            t0 = time.perf_counter()
            funcs[n](a, b)
            times[n].append(time.perf_counter() - t0)
    return times


def versions():
    import platform
    out = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        import numba
        out.append(f"numba {numba.__version__}")
    except ImportError: out.append("numba not installed (clinseg's numpy engine runs)")
    return ", ".join(out)


def main(quick, rounds):
    shape = (64, 128, 128) if quick else (300, 512, 512)
    s = shape[1] / 512
    cases = {"tumour": lambda: spheres(shape, 40 * s, 38 * s), "organ": lambda: spheres(shape, 120 * s, 115 * s),
             "dense": lambda: dense(shape), "noisy": lambda: noisy(shape, 120 * s), "kits19": kits_pair,
             "mixed": lambda: (lambda a, b: (a, np.asfortranarray(b)))(*spheres(shape, 120 * s, 115 * s))}
    funcs = contenders()
    floor = next(iter(funcs))
    print(f"{versions()}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {rounds} paired rounds")
    head = "| input | size | " + " | ".join(n for n in funcs) + " |"
    lines = [head, "|" + "---|" * (2 + len(funcs))]
    summary = []
    for case, make in cases.items():
        pair = make()
        if pair is None:
            print(f"skipped the KiTS19 row: {KITS_MISSING}", file=sys.stderr)
            continue
        a, b = pair
        want = 2 * np.count_nonzero(a & b) / (np.count_nonzero(a) + np.count_nonzero(b))
        for name, f in funcs.items():
            if name != floor:
                got = f(a, b)
                assert abs(got - want) < 1e-12, (case, name, got, want)   # every contender computes the same Dice
        times = paired(funcs, a, b, rounds)
        cells = []
        for name in funcs:
            t = statistics.median(times[name]) * 1e3
            if name == floor:
                cells.append(f"{t:.2f} ms")
                continue
            r = [x / y for x, y in zip(times[name], times[floor])]
            cells.append(f"{t:.2f} ms, {statistics.median(r):.2f}× ({min(r):.2f}–{max(r):.2f})")
            if name == "clinseg dice": summary.append(f"{case}: clinseg dice {statistics.median(r):.2f}× the floor")
        size = "×".join(map(str, a.shape)) + f" ({'F' if a.flags.f_contiguous and not a.flags.c_contiguous else 'C'}"
        size += f"/{'F' if b.flags.f_contiguous and not b.flags.c_contiguous else 'C'})"
        lines.append(f"| {case} | {size} | " + " | ".join(cells) + " |")
        del a, b, pair
    print("\n".join(lines))
    print("; ".join(summary))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="small volumes, a few rounds (seconds): checks every contender agrees")
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 15, 3 with --quick)")
    args = ap.parse_args()
    main(args.quick, args.rounds or (3 if args.quick else 15))
