"""Speed of clinseg's `dice` against the naive numpy one-liner and medpy, relative to the floor, in one run.

    python bench/bench_dice.py [--repeat N]

Inputs: pairs of 512x512x300 boolean volumes (C order, 79 MB each), made here:
- "tumour": two overlapping spheres of radius 40 and 38 voxels (0.3% of the volume), the HW2 situation;
- "organ": two overlapping spheres of radius 120 and 115 voxels (9% of the volume), a liver-sized object;
- "dense": independent random voxels, 50% each: the worst case, where no part of either volume is empty.
Contenders, on the same arrays:
- floor: reading both arrays once, `np.count_nonzero(a) + np.count_nonzero(b)` (not a Dice: the least any
  Dice must do);
- clinseg: `clinseg.dice(a, b)`;
- naive: `2 * (a & b).sum() / (a.sum() + b.sum())`;
- numpy counts: `2 * np.count_nonzero(a & b) / (np.count_nonzero(a) + np.count_nonzero(b))`, the careful one-liner;
- medpy: `medpy.metric.binary.dc(a, b)`, when medpy is installed (it is not a clinseg dependency).
Best of N runs, the contenders taking turns; ratio = time / floor time. Goal (issue 3): clinseg within 1.5x of the floor and faster than every peer.
"""
import argparse, sys, time
from pathlib import Path
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout without installing
from clinseg.dice import dice

SHAPE = (512, 512, 300)


def spheres(r1, r2, shift=(6, 2, 3)):
    "Two overlapping spheres in the middle of the volume"
    z, y, x = (np.arange(n, dtype=np.float32) - n / 2 for n in SHAPE)
    z, y, x = z[:, None, None], y[None, :, None], x[None, None, :]
    a = z ** 2 + y ** 2 + x ** 2 < r1 ** 2
    b = (z - shift[0]) ** 2 + (y - shift[1]) ** 2 + (x - shift[2]) ** 2 < r2 ** 2
    return a, b


def dense(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(SHAPE, dtype=np.float32) < 0.5, rng.random(SHAPE, dtype=np.float32) < 0.5


def best_times(funcs, a, b, repeat):
    "Best time of each function on (a, b), the functions taking turns so that a busy moment hits them all alike"
    times = {name: [] for name in funcs}
    for f in funcs.values(): f(a, b)   # warm-up
    for _ in range(repeat):
        for name, f in funcs.items():
            t0 = time.perf_counter(); f(a, b); times[name].append(time.perf_counter() - t0)
    return {name: min(t) for name, t in times.items()}


def contenders():
    out = {"floor (count a + count b)": lambda a, b: np.count_nonzero(a) + np.count_nonzero(b),
           "clinseg dice": dice,
           "naive 2*(a&b).sum()/(a.sum()+b.sum())": lambda a, b: 2 * (a & b).sum() / (a.sum() + b.sum()),
           "numpy count_nonzero one-liner": lambda a, b: 2 * np.count_nonzero(a & b) / (np.count_nonzero(a) + np.count_nonzero(b))}
    try:
        from medpy.metric.binary import dc
        import medpy
        out[f"medpy {getattr(medpy, '__version__', '')} dc".replace("  ", " ")] = dc
    except Exception as exc:
        print(f"medpy not available ({type(exc).__name__}: {exc}); its row is left out", file=sys.stderr)
    return out


def run(repeat):
    cases = {"tumour": lambda: spheres(40, 38), "organ": lambda: spheres(120, 115), "dense": dense}
    funcs = contenders()
    times = {}
    for case, make in cases.items():
        a, b = make()
        want = 2 * np.count_nonzero(a & b) / (np.count_nonzero(a) + np.count_nonzero(b))
        for name, f in funcs.items():
            if name.startswith("floor"): continue
            got = f(a, b)
            assert abs(got - want) < 1e-12, (case, name, got, want)   # every contender computes the same Dice
        for name, t in best_times(funcs, a, b, repeat).items(): times[name, case] = t
        del a, b
    floor = next(iter(funcs))
    head = "| method | " + " | ".join(f"{c}: ms | {c}: × floor" for c in cases) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(cases))]
    for name in funcs:
        cells = []
        for c in cases: cells += [f"{times[name, c] * 1e3:.1f}", f"{times[name, c] / times[floor, c]:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    print(f"512x512x300 boolean volumes, best of {repeat}; numpy {np.__version__}")
    print("\n".join(lines))
    clin = {c: times["clinseg dice", c] for c in cases}
    for c in cases:
        peers = {n: times[n, c] for n in funcs if n not in (floor, "clinseg dice")}
        fastest = min(peers, key=peers.get)
        print(f"{c}: clinseg {clin[c] / times[floor, c]:.2f}x the floor (goal <= 1.5); "
              f"{peers[fastest] / clin[c]:.1f}x faster than the fastest peer ({fastest})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    run(ap.parse_args().repeat)
