"""Speed and memory of the submission reader, validator and scorer (issue 7).

    python bench/bench_submission.py [--mb 200] [--jobs 4] [--repeat 5]
    python bench/bench_submission.py --quick     # a 2 MB file: seconds (CI)

1. writes a DSB-style submission of about `--mb` megabytes (synthetic nuclei on 256x256 images, 64-hex ids,
   many rows per image) and its solution in a temporary folder;
2. parses + validates it with `validate` (goal: at least 300 MB/s on 2 cores), `--repeat` times, and gives the
   median and the range, with the load average (other processes share the cores); against the obvious way (csv
   rows, one `parse_runs` call per row) as a ratio;
3. scores it (serial, and with `--jobs` processes);
4. scores the real 65-image stage-1 solution against itself (goal: under 1 s), when CLINSEG_DATA has it;
5. peak traced memory (tracemalloc) of validate on a quarter-size and the full-size file: it must not grow
   with the file's length.
"""
import argparse, csv, os, statistics, sys, tempfile, time, tracemalloc
from pathlib import Path

import numpy as np

from clinseg.rle import parse_runs
from clinseg.submissions import read_solution, score, validate
from clinseg.instance_labels import label_to_runs
from clinseg.rle import format_runs
from clinseg.samples import missing_sample, real_sample

ROOT = Path(__file__).resolve().parents[1]
REAL = ("dsb2018", "stage1_solution.csv")


def nuclei(shape, n, rng):
    "Label image of n random discs"
    yy, xx = np.mgrid[:shape[0], :shape[1]]
    lab = np.zeros(shape, np.int32)
    for k in range(1, n + 1):
        cy, cx, r = rng.uniform(0, shape[0]), rng.uniform(0, shape[1]), rng.uniform(4, 12)
        lab[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = k
    return lab


def make_files(folder, mb, seed=0):
    "A DSB-style submission of about `mb` MB and its solution (the truth shifted by one pixel is the prediction)"
    rng = np.random.default_rng(seed)
    templates = []
    for k in range(16):
        lab = nuclei((256, 256), 60, rng)
        truth = [format_runs(s, l, "dsb2018") for s, l in label_to_runs(lab, "F")[1]]
        pred = [format_runs(s, l, "dsb2018") for s, l in label_to_runs(np.roll(lab, 1, axis=1), "F")[1]]
        templates.append((truth, pred))
    sub, sol = folder / "submission.csv", folder / "solution.csv"
    size, n = 0, 0
    with open(sub, "w", newline="") as fs, open(sol, "w", newline="") as ft:
        fs.write("ImageId,EncodedPixels\n")
        ft.write("ImageId,EncodedPixels,Height,Width,Usage\n")
        while size < mb * 1e6:
            truth, pred = templates[n % len(templates)]
            iid = f"{n:064x}"
            usage = "Public" if n % 3 == 0 else "Private"
            block = "".join(f"{iid},{p}\n" for p in pred)
            fs.write(block)
            size += len(block)
            ft.write("".join(f"{iid},{t},256,256,{usage}\n" for t in truth))
            n += 1
    return sub, sol, n


def naive_validate(path):
    "The obvious reader: csv rows, one parse_runs per row; returns the rows and the pixels they hold"
    rows = pixels = 0
    with open(path, encoding="utf-8-sig", newline="") as f:
        r = csv.reader(f)
        next(r)
        for row in r:
            s, l = parse_runs(row[1], "dsb2018", (256, 256))
            rows += 1
            pixels += int(l.sum())
    return rows, pixels


def timed(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def rates(n, size, fn, *a, **k):
    "The last result of n calls, and the median, least and greatest MB/s with the 1-minute load average"
    mbs = []
    for _ in range(n):
        out, t = timed(fn, *a, **k)
        mbs.append(size / t)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    runs = f"{n} run{'s' if n > 1 else ''}"
    return out, statistics.median(mbs), (f"{statistics.median(mbs):.0f} MB/s ({min(mbs):.0f}-{max(mbs):.0f}, {runs}, "
                                         f"load {load:.2f})")


def peak_mb(fn, *a, **k):
    tracemalloc.start()
    fn(*a, **k)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200, help="submission size in MB (default 200)")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help="processes for the parallel score")
    ap.add_argument("--repeat", type=int, default=5, help="runs of validate, for the median (default 5)")
    ap.add_argument("--quick", action="store_true", help="a 2 MB file, 2 processes and 1 run: seconds")
    args = ap.parse_args()
    if args.quick: args.mb, args.jobs, args.repeat = 2, 2, 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_submission_") as tmp:
        tmp = Path(tmp)
        (sub, sol, n), t = timed(make_files, tmp, args.mb)
        size = os.path.getsize(sub) / 1e6
        print(f"wrote {size:.0f} MB submission, {n} images ({t:.1f} s)", file=sys.stderr)
        solution = read_solution(sol, "dsb2018")
        report, rate, say = rates(args.repeat, size, validate, sub, "dsb2018", solution)
        assert report.ok, report
        t_val = size / rate
        rows.append(("validate (with solution)", f"{size:.0f} MB", f"{t_val:.2f} s", say))
        report, rate, say = rates(args.repeat, size, validate, sub, "dsb2018")
        rows.append(("validate (no solution)", f"{size:.0f} MB", f"{size / rate:.2f} s", say))
        (n_rows, n_pixels), t_naive = timed(naive_validate, sub)
        assert n_rows == report.rows, (n_rows, report.rows)   # the obvious reader and the validator see the same rows
        rows.append(("csv + parse_runs per row (the obvious way)", f"{size:.0f} MB", f"{t_naive:.2f} s",
                     f"{size / t_naive:.0f} MB/s ({t_naive / t_val:.1f}x slower)"))
        res, t = timed(score, solution, sub, "dsb2018")
        assert sum(r["predicted_objects"] for r in res.table) == n_rows
        rows.append(("score, 1 process", f"{n} images", f"{t:.2f} s", f"score {res.score:.4f}"))
        if args.jobs > 1:
            res2, t = timed(score, solution, sub, "dsb2018", jobs=args.jobs)
            assert res2.table.rows == res.table.rows
            rows.append((f"score, {args.jobs} processes", f"{n} images", f"{t:.2f} s", f"score {res2.score:.4f}"))
        quarter = tmp / "quarter.csv"
        with open(sub) as f, open(quarter, "w") as g:
            lines = f.readlines()
            g.writelines(lines[:len(lines) // 4])
        del lines
        p1 = peak_mb(validate, quarter, "dsb2018", solution)
        p2 = peak_mb(validate, sub, "dsb2018", solution)
        rows.append(("peak traced memory of validate", f"{size / 4:.0f} MB / {size:.0f} MB",
                     f"{p1:.1f} MB / {p2:.1f} MB", "flat" if p2 < 1.5 * p1 + 5 else "GROWS"))
        p3 = peak_mb(score, solution, sub, "dsb2018")
        rows.append(("peak traced memory of score", f"{size:.0f} MB", f"{p3:.1f} MB",
                     "(solution index + one image + table)"))
    real = real_sample(*REAL, quiet=True)   # in CI a missing sample is an error
    if real is not None:
        best = min(timed(score, real, real, "dsb2018")[1] for _ in range(3))
        res = score(real, real, "dsb2018")
        rows.append(("score real stage-1 solution vs itself", "65 images, 4152 rows", f"{best:.3f} s",
                     f"score {res.score}"))
    else: print(f"skipped the real solution: {missing_sample(*REAL)}", file=sys.stderr)
    print("| task | size | time / memory | rate / result |\n|---|---|---|---|")
    for r in rows: print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
