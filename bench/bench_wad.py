"""Benchmark: `clinseg score` of a WAD 2018-sized test set, end to end, from its label folder and its run-length file.

Generates a WAD-shaped test set with the wad2018 module's generator and writers: N frames of 2710x3384 (the scene
generator `clinseg.ap.synthetic_scene`: about 20 instances and 1-3 ignore regions per frame, 20 predictions per frame,
a few of them duplicates, misses, wrong classes and detections on the ignore regions), the 16-bit label PNGs
(`write_wad_solution`) and the submission (`write_wad`). The label folder is converted once into a run-length
solution file (`write_wad_runs`, timed). Then `clinseg score` runs in a fresh process for each size (the first n
frames: 50, 100, 250, 500 by default) and each kind of solution, paired (folder, file, folder, file, ...):
wall time (the process, interpreter start and imports included), and the process's peak resident memory (VmHWM).
The truth is held as runs: the folder path decodes one frame at a time. Every score is checked against
`average_precision` on the generator's own truth and predictions (the library's in-memory API), and the folder and
the file must give the same JSON to the last digit.

Run: python bench/bench_wad.py [--frames 500] [--sizes 50 100 250 500] [--rounds 3] [--jobs] [--keep DIR]
     python bench/bench_wad.py --quick     # 3 frames, seconds (CI)
"""
import argparse, json, os, platform, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

RUN = r"""
import json, sys
from clinseg.cli import main
rc = main(sys.argv[1:])
hwm = next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM'))
print(json.dumps({"rc": rc, "hwm": hwm}), file=sys.stderr)
sys.exit(rc)
"""


def generate(root, n, preds_per_frame=20, truth_per_frame=22, seed=0):
    "Write n label PNGs and the submission; returns (frame ids, {id: ImageTruth}, records, seconds)"
    from clinseg.ap import synthetic_scene
    from clinseg.competitions.wad2018 import WAD_FRAME, wad_truth
    from clinseg.competitions.wad2018 import write_wad, write_wad_solution
    t0 = time.perf_counter()
    ids, truth, records = [], {}, []
    for k in range(n):
        i = f"171206_{k:09d}_Camera_{5 + k % 2}"
        lab, preds = synthetic_scene(WAD_FRAME, truth_per_frame, preds_per_frame, seed=seed * 100000 + k)
        write_wad_solution(root / "labels", {i: lab})
        truth[i] = wad_truth(lab)
        records += [(i, c, s, r) for c, s, r in preds]
        ids.append(i)
        if n >= 50 and (k + 1) % 50 == 0: print(f"  generated {k + 1}/{n} frames ({time.perf_counter() - t0:.0f} s)",
                                                flush=True)
    write_wad(root / "submission.csv", records)
    return ids, truth, records, time.perf_counter() - t0


def subset(root, ids, n, runs_file):
    "Folder of the first n labels (hard links), their submission rows and their run-length rows"
    d = root / f"first_{n}"
    (d / "labels").mkdir(parents=True, exist_ok=True)
    keep = set(ids[:n])
    for i in ids[:n]:
        dst = d / "labels" / f"{i}_instanceIds.png"
        if not dst.exists(): os.link(root / "labels" / dst.name, dst)
    for src, dst in ((root / "submission.csv", d / "submission.csv"), (runs_file, d / "runs.csv")):
        with open(src) as f, open(dst, "w") as g:
            g.write(f.readline())
            g.writelines(l for l in f if l.split(",", 1)[0] in keep)
    return d


def score_process(solution, submission, extra=()):
    "Wall seconds, peak RSS bytes and JSON result of `clinseg score` in a fresh process"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", RUN, "score", "-c", "wad2018", str(solution), str(submission), "--json",
                        "--quiet", *extra],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0: raise SystemExit(f"clinseg score failed ({r.returncode}):\n{r.stderr}")
    stats = json.loads(r.stderr.strip().splitlines()[-1])
    return wall, stats["hwm"], json.loads(r.stdout)


def import_seconds(rounds=3):
    "Median wall time of a process that only imports the CLI (the fixed part of every run)"
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import clinseg.cli"], check=True)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=500)
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="subset sizes (default 50 100 250 and --frames)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", action="store_true", help="also score the largest folder with --jobs 2 and --workers 2")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the test set here and keep it (default: a temporary folder, removed)")
    ap.add_argument("--quick", action="store_true", help="3 frames, one round (seconds): checks that everything agrees")
    args = ap.parse_args()
    if args.quick: args.frames, args.sizes, args.rounds = 3, [1, 3], 1
    sizes = sorted(set(args.sizes or [s for s in (50, 100, 250) if s < args.frames] + [args.frames]))
    if max(sizes) > args.frames: raise SystemExit("--sizes: a size above --frames")

    import numpy as np
    from clinseg.ap import average_precision
    from clinseg.competitions.wad2018 import WAD_CLASSES
    from clinseg.competitions.wad2018 import write_wad_runs
    import PIL
    print(f"python {platform.python_version()}, numpy {np.__version__}, Pillow {PIL.__version__}, {os.cpu_count()} "
          f"cores, load average {os.getloadavg()[0]:.2f} at start")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="clinseg_bench_wad_"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        print(f"generating {args.frames} frames of 2710x3384 in {root} ...", flush=True)
        ids, truth, records, gen = generate(root, args.frames)
        n_obj = sum(len(t.ids) for t in truth.values())
        png = sum(p.stat().st_size for p in (root / "labels").iterdir())
        print(f"  {gen:.1f} s: {n_obj} true instances ({n_obj / len(ids):.1f} per frame), {len(records)} predictions, "
              f"label PNGs {png / 1e6:.1f} MB, submission {(root / 'submission.csv').stat().st_size / 1e6:.1f} MB")
        t = time.perf_counter()
        runs_file = write_wad_runs(root / "runs.csv", root / "labels")
        conv = time.perf_counter() - t
        print(f"one-time conversion write_wad_runs: {conv:.2f} s ({conv / len(ids) * 1e3:.0f} ms per frame), "
              f"run-length file {runs_file.stat().st_size / 1e6:.1f} MB ({runs_file.stat().st_size / png:.2f}x the "
              "PNGs)")
        base = import_seconds()
        print(f"a process that only imports clinseg.cli: {base:.2f} s (included in every wall time below)\n")
        print(f"{'frames':>6} {'solution':>8} {'wall median [min-max] s':>26} {'ms/frame':>9} {'peak RSS MB':>12}  "
              "score")
        table = {}
        for n in sizes:
            d = subset(root, ids, n, runs_file)
            want = average_precision({i: truth[i] for i in ids[:n]}, [r for r in records if r[0] in set(ids[:n])],
                                     classes=WAD_CLASSES).ap
            got = {"folder": [], "file": []}
            for _ in range(args.rounds):
                for kind, sol in (("folder", d / "labels"), ("file", d / "runs.csv")):
                    got[kind].append(score_process(sol, d / "submission.csv"))
            out = {k: v[0][2] for k, v in got.items()}
            assert out["folder"] == out["file"], (n, out)
            assert out["folder"]["score"] == want, (n, out["folder"]["score"], want)
            for kind, runs in got.items():
                walls, hwm = [w for w, _, _ in runs], max(h for _, h, _ in runs)
                med = statistics.median(walls)
                table[n, kind] = med
                print(f"{n:>6} {kind:>8} {med:>10.2f} [{min(walls):.2f}-{max(walls):.2f}]{'':>6} "
                      f"{(med - base) / n * 1e3:>9.1f} {hwm / 2**20:>12.0f}  {out[kind]['score']:.6f}", flush=True)
        if len(sizes) > 1:
            lo, hi = sizes[0], sizes[-1]
            for kind in ("folder", "file"):
                a, b = table[lo, kind] - base, table[hi, kind] - base
                print(f"growth {kind}: {hi / lo:.0f}x the frames, {b / a:.1f}x the time (after the import)" if a > 0
                      else f"growth {kind}: too fast to tell")
        if args.jobs:
            d = root / f"first_{sizes[-1]}"
            for extra in (["--jobs", "2"], ["--workers", "2"]):
                w, h, o = score_process(d / "labels", d / "submission.csv", extra)
                assert o == json.loads(json.dumps(out["folder"])), extra
                print(f"{sizes[-1]:>6} folder {' '.join(extra)}: {w:.2f} s, peak RSS of the main process "
                      f"{h / 2**20:.0f} MB")
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end; every score agrees with average_precision on the "
              "generator's truth")
    finally:
        if not args.keep: shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
