"""Speed and peak memory of clinseg's `hd95` against medpy's `hd95` and the brute force, in paired rounds.

    python bench/bench_surface.py [--quick] [--rounds N]

Inputs, made or read here:
- "organ": two overlapping spheres of radius 120 and 115 voxels (shifted by 6, 2, 3 voxels) in a 512x512x300 boolean
  volume, spacing (0.8, 0.8, 2.5) mm; with --quick, radius 15 and 14 in 64x64x40;
- "kits19": the kidney (label 1) of $CLINSEG_DATA/kits19/case_00061/segmentation.nii.gz (29x512x512, spacing from
  the nibabel header's zooms, in nibabel's Fortran order) against a perturbed kidney: moved by (1, 3, -2) voxels,
  plus a false-positive ball of radius 8 mm;
  with --quick, the box of one kidney only (slices 10-15, rows 190-319, columns 100-229);
- "kits19 crop": slices 10-15 of the kidney's box (two slices of one kidney with --quick), where the all-pairs brute
  force is affordable.
Contenders: `clinseg.surface.hd95(pred, truth, spacing=...)`; `medpy.metric.binary.hd95(pred, truth, voxelspacing=...)`
when medpy is importable (it is not a clinseg dependency); `surface_distances_brute` on the crop. Values are checked
equal before timing. Each round times both contenders on the same input, in alternating order; the ratio is the
peer's time over clinseg's in that round, reported as the median and the range over rounds. Peak memory is measured
in a separate call of each with tracemalloc (numpy and scipy allocate through it), as a multiple of one boolean mask.
"""
import argparse, statistics, sys, time, tracemalloc
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.surface import hd95, surface_distances, surface_distances_brute  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from volumes import KITS, KITS_MISSING, spheres   # noqa: E402


def kits_pair():
    "(perturbed kidney, kidney, spacing) of the KiTS19 case, or None when the file is absent"
    if KITS is None: return None
    import nibabel as nib
    img = nib.load(KITS)
    kidney = np.asanyarray(img.dataobj) == 1
    s = tuple(float(v) for v in img.header.get_zooms())
    p = np.roll(kidney, (1, 3, -2), axis=(0, 1, 2))
    zz, yy, xx = np.ogrid[:kidney.shape[0], :kidney.shape[1], :kidney.shape[2]]
    p |= ((zz - 14) * s[0]) ** 2 + ((yy - 100) * s[1]) ** 2 + ((xx - 256) * s[2]) ** 2 <= 8 ** 2
    return p, kidney, s


def peak(f):
    "Peak bytes allocated while f() runs"
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally: tracemalloc.stop()


def paired(ours, theirs, rounds):
    "Per-round times of both, taking turns; the ratios theirs / ours"
    t_ours, t_theirs = [], []
    for i in range(rounds):
        for f, out in ((ours, t_ours), (theirs, t_theirs))[::1 if i % 2 == 0 else -1]:
            t0 = time.perf_counter()
            f()
            out.append(time.perf_counter() - t0)
    return t_ours, t_theirs, [b / a for a, b in zip(t_ours, t_theirs)]


def row(name, size, ours, theirs, rounds, volume_bytes):
    t_o, t_t, r = paired(ours, theirs, rounds)
    p_o, p_t = peak(ours) / volume_bytes, peak(theirs) / volume_bytes
    return (f"| {name} | {size} | {statistics.median(t_o) * 1e3:.0f} | {statistics.median(t_t) * 1e3:.0f} | "
            f"{statistics.median(r):.1f} ({min(r):.1f}–{max(r):.1f}) | {p_o:.2f} | {p_t:.2f} |")


def main(quick, rounds):
    try:
        import medpy, medpy.metric.binary as mb
        peer = f"medpy {medpy.__version__}"
    except Exception as exc:
        mb, peer = None, "medpy"
        print(f"medpy not importable ({type(exc).__name__}: {exc}): its rows are left out", file=sys.stderr)
    cases = {}
    shape = (64, 64, 40) if quick else (512, 512, 300)
    a, b = spheres(shape, *((15, 14) if quick else (120, 115)))
    cases[f"organ {'×'.join(map(str, shape))}"] = (a, b, (0.8, 0.8, 2.5))
    k = kits_pair()
    if k is None: print(f"skipped the KiTS19 rows: {KITS_MISSING}", file=sys.stderr)
    elif quick:
        cases["kits19 one kidney's box vs perturbed"] = (tuple(np.ascontiguousarray(v[10:16, 190:320, 100:230])
                                                               for v in k[:2]) + (k[2],))
    else: cases["kits19 kidney vs perturbed"] = k
    lines = [f"| case | voxels | clinseg hd95 ms | {peer if mb else 'peer'} hd95 ms | peer / clinseg: median (range) | "
             "clinseg peak × one mask | peer peak × one mask |",
             "|---|---|---|---|---|---|---|"]
    for name, (p, t, s) in cases.items():
        def ours(): return hd95(p, t, spacing=s)
        if mb is not None:
            def theirs(): return mb.hd95(p, t, voxelspacing=s)
            assert ours() == theirs(), (name, ours(), theirs())
            lines.append(row(name, "×".join(map(str, p.shape)), ours, theirs, rounds, p.nbytes))
    if k is not None:   # the brute force on a crop of the KiTS box
        p, t, s = k
        crop = ((slice(10, 12), slice(200, 310), slice(110, 225)) if quick
                else (slice(10, 16), slice(80, 340), slice(100, 400)))
        pc, tc = np.ascontiguousarray(p[crop]), np.ascontiguousarray(t[crop])
        ours, brute = lambda: surface_distances(pc, tc, s), lambda: surface_distances_brute(pc, tc, s)
        for x, y in zip(ours(), brute()): np.testing.assert_allclose(x, y, rtol=1e-12)
        lines.append(row("kits19 crop, surface_distances vs brute force (peer)", "×".join(map(str, pc.shape)), ours,
                         brute, rounds, pc.nbytes))
    print(f"{rounds} paired rounds; numpy {np.__version__}" + (" (quick)" if quick else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a 64x64x40 synthetic pair, one KiTS19 kidney's box, a 2-slice crop and 2 rounds: seconds")
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 5, 2 with --quick)")
    args = ap.parse_args()
    main(args.quick, args.rounds or (2 if args.quick else 5))
