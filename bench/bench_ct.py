"""Benchmark: reading a CT series with `clinseg.read_dicom_series` versus a plain pydicom loop.

Writes a 200-slice 512×512 series with `clinseg.phantom.ct_phantom` in a temporary folder, then
- times each reader over several alternating rounds (files in the page cache after a warm-up); the best
  round is the figure compared (least disturbed by other processes), the median is shown too;
- measures each reader's peak memory in a fresh process (tracemalloc peak, and the growth of the peak RSS).
The plain loop neither sorts, checks geometry nor converts to HU; "plain + HU" adds the float32 conversion.
Goal: clinseg / plain ≤ 1.05 and peak memory < 2.5× the float32 volume.

Both readers' volumes are checked equal (clinseg's HU against the plain loop + HU) before anything is timed.

Run: python bench/bench_ct.py [--slices 200] [--size 512] [--rounds 7]
     python bench/bench_ct.py --quick     # 8 slices of 128x128, 2 rounds: seconds (CI)
"""
import argparse, json, statistics, subprocess, sys, tempfile, time
from pathlib import Path

READERS = {
    "plain loop": "import numpy as np, pydicom\n"
                  "vol = np.stack([pydicom.dcmread(f).pixel_array for f in files])",
    "plain loop + HU float32": "import numpy as np, pydicom\n"
                               "def hu(f):\n"
                               "    d = pydicom.dcmread(f)\n"
                               "    return d.pixel_array.astype(np.float32) * float(d.RescaleSlope) + "
                               "float(d.RescaleIntercept)\n"
                               "vol = np.stack([hu(f) for f in files])",
    "clinseg read_dicom_series": "from clinseg.ct import read_dicom_series\n"
                                 "vol = read_dicom_series(folder).hu",
}

MEMORY_SCRIPT = r"""
import json, resource, sys, tracemalloc
from pathlib import Path
def hwm():
    "Peak resident memory of this process in bytes (VmHWM: unlike ru_maxrss, not inherited from the parent)"
    try: return next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM'))
    except (OSError, StopIteration): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
import numpy as np, pydicom
import clinseg.ct
folder = Path(sys.argv[1]); files = sorted(folder.iterdir())
code = sys.stdin.read()
before = hwm()
tracemalloc.start()
exec(code)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
after = hwm()
print(json.dumps(dict(peak=peak, rss=after - before, shape=list(vol.shape))))
"""


def time_readers(folder, rounds):
    "(best, median) seconds of each reader over `rounds` alternating rounds, after one warm-up round"
    files = sorted(folder.iterdir())
    fns = {}
    for name, code in READERS.items():
        def run(code=code):
            ns = dict(folder=folder, files=files)
            exec(code, ns)
            return ns["vol"]
        fns[name] = run
    for fn in fns.values(): fn()  # warm-up: files in the page cache, imports done
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}


def check_agree(folder):
    ("The readers give the same slices: clinseg's HU equals the plain loop + HU sorted by slice position (the phantom "
     "shuffles the file names)")
    import numpy as np, pydicom
    from clinseg.ct import read_dicom_series
    slices = []
    for f in sorted(folder.iterdir()):
        d = pydicom.dcmread(f)
        slices.append((float(d.ImagePositionPatient[2]),
                       d.pixel_array.astype(np.float32) * float(d.RescaleSlope) + float(d.RescaleIntercept)))
    plain = np.stack([a for _, a in sorted(slices, key=lambda x: x[0])])
    ours = read_dicom_series(folder).hu
    same = ours.shape == plain.shape and (np.array_equal(ours, plain) or np.array_equal(ours, plain[::-1]))
    assert same, "clinseg's HU volume differs from the plain loop's (sorted by ImagePositionPatient)"
    print(f"pydicom {pydicom.__version__}, numpy {np.__version__}: volumes agree ({'x'.join(map(str, ours.shape))}, "
          f"{ours.dtype})")


def memory_of(folder, code):
    "Peak traced memory and maxrss growth (bytes) of one reader in a fresh process"
    res = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(folder)], input=code, capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=200)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="8 slices of 128x128 and 2 rounds: seconds")
    args = ap.parse_args()
    if args.quick: args.slices, args.size, args.rounds = 8, 128, 2
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from clinseg.phantom import ct_phantom
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        ph = ct_phantom(tmp, shape=(args.slices, args.size, args.size), label_dir=False)
        print(f"wrote {args.slices} slices of {args.size}×{args.size} in {time.perf_counter() - t:.1f} s")
        folder = ph.dicom_dir
        check_agree(folder)
        volume = args.slices * args.size * args.size * 4
        secs = time_readers(folder, args.rounds)
        mem = {name: memory_of(folder, code) for name, code in READERS.items()}
    base, base_med = secs["plain loop"]
    print(f"\nfloat32 volume: {volume / 2**20:.0f} MiB; best and median of {args.rounds} rounds; memory in a fresh "
          "process each\n")
    print("| reader | best (s) | ratio to plain loop | median (s) | ratio of medians | peak traced memory (× volume) | "
          "peak RSS growth (× volume) |")
    print("|---|---|---|---|---|---|---|")
    for name in READERS:
        best, med = secs[name]
        print(f"| {name} | {best:.3f} | {best / base:.2f} | {med:.3f} | {med / base_med:.2f} | "
              f"{mem[name]['peak'] / volume:.2f} | {mem[name]['rss'] / volume:.2f} |")
    ratio = secs["clinseg read_dicom_series"][0] / base
    peak = max(mem["clinseg read_dicom_series"]["peak"], mem["clinseg read_dicom_series"]["rss"]) / volume
    print(f"\ngoal ratio ≤ 1.05: {'met' if ratio <= 1.05 else 'NOT met'} ({ratio:.2f}); "
          f"goal peak < 2.5× volume: {'met' if peak < 2.5 else 'NOT met'} ({peak:.2f}×)")


if __name__ == "__main__":
    main()
