"""Speed of clinseg's RLE against pycocotools, hotcoco, rlemasklib and the classic numpy idiom, same inputs, one run.

    python bench/bench_rle.py [--rounds N] [--quick]

Inputs, each a C-ordered boolean array as numpy makes it:
- a 1024x1024 smooth blob (few runs) and 1024x1024 noise (each pixel on with p = 0.0127: about 13,000 runs);
- a 200x512x512 volume with a blob tumour (few runs) and a 200x512x512 noisy volume (p = 0.0127: about 650,000 runs).
Every contender goes from the array to text and back, its own layout preparation included:
- COCO strings (2-D: one mask; 3-D: one string per slice, as the COCO tools store a stack): clinseg `encode(m, "coco")`
  / `decode` (a stack: `encode` per slice; every string read by one `coco_rles_to_objects` call, each run moved to
  its slice, then one `runs_to_mask` of the (h, w, n) stack, the layout the COCO tools return);
  pycocotools `mask.encode` of a Fortran uint8 copy (it takes nothing else) / `mask.decode`; hotcoco `mask.encode` of
  the array (any layout) / `mask.decode`; rlemasklib `encode` / `decode`;
- start/length text (clinseg only, and the classic idiom: pad, compare neighbours, join to text; decoding splits the
  text and writes each run): row-major NeoPolyp (2-D) or hw2 (3-D), column-major DSB (2-D).
Timing: rounds of paired measurements (every contender once per round, in turn, the order shuffled each round,
seeded, so that no contender always runs right after the same one); each figure is the median over rounds with the
min-max range, each ratio (clinseg / peer, below 1 clinseg is faster) the median of the per-round ratios with its
range. `--quick`: small inputs, a few rounds, and every result checked against the peers (identical COCO strings,
identical masks back), so a broken benchmark fails.
"""
import argparse, math, os, platform, time
from importlib.metadata import version
import numpy as np
from pycocotools import mask as coco_mask
from hotcoco import mask as hot_mask
import rlemasklib
from clinseg.rle import encode, decode
from clinseg.runs import runs_to_mask
from clinseg.coco import coco_rles_to_objects
from clinseg.kernels import numba_available


def blob(shape, seed=0):
    "A smooth irregular blob filling about a third of the image or a tumour-sized part of a volume"
    grid = np.indices(shape, dtype=np.float32)
    centre = np.array(shape, np.float32) / 2
    radius = min(shape) / 3
    dist = np.sqrt(sum((grid[i] - centre[i]) ** 2 for i in range(len(shape))))
    wobble = 1 + 0.12 * np.sin(grid[-1] / 17 + seed) + 0.1 * np.cos(grid[-2] / 23)
    return dist < radius * wobble


def noise(shape, p=0.0127, seed=0):
    "Each pixel on with probability p: about 2p(1 - p) boundaries per pixel, the many-run worst case"
    return np.random.default_rng(seed).random(shape, dtype=np.float32) < p


def classic_encode(mask, order="C"):
    pixels = np.concatenate([[0], mask.ravel(order=order), [0]])
    runs = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    runs[1::2] -= runs[0::2]
    return " ".join(str(x) for x in runs)


def classic_decode(text, shape, order="C"):
    s = text.split()
    starts, lengths = (np.asarray(x, dtype=int) for x in (s[0::2], s[1::2]))
    starts -= 1
    img = np.zeros(int(np.prod(shape)), dtype=np.uint8)
    for lo, hi in zip(starts, starts + lengths): img[lo:hi] = 1
    return img.reshape(shape, order=order)


def coco_contenders(m):
    "encode and decode functions of each contender for COCO strings of `m` (2-D: one string; 3-D: one per slice)"
    if m.ndim == 2:
        shape = m.shape
        return {
            "clinseg": (lambda: encode(m, "coco"), lambda t: decode(t, shape, "coco")),
            "pycocotools": (lambda: coco_mask.encode(np.asfortranarray(m, np.uint8)), coco_mask.decode),
            "hotcoco": (lambda: hot_mask.encode(m), hot_mask.decode),
            "rlemasklib": (lambda: rlemasklib.encode(m), rlemasklib.decode),
        }
    shape = m.shape[1:]
    # every string read by one call (`coco_rles_to_objects`), each run moved to its slice, one fill of an (h, w, n)
    # stack
    def clinseg_decode(texts):
        o = coco_rles_to_objects([{"counts": t, "size": list(shape)} for t in texts])
        return runs_to_mask(o.starts + o.owner * math.prod(shape), o.lengths, (*shape, len(texts)), "F")
    return {
        "clinseg": (lambda: [encode(s, "coco") for s in m], clinseg_decode),
        "pycocotools": (lambda: coco_mask.encode(np.asfortranarray(m.transpose(1, 2, 0), np.uint8)), coco_mask.decode),
        "hotcoco": (lambda: hot_mask.encode(m.transpose(1, 2, 0)), hot_mask.decode),
        "rlemasklib": (lambda: rlemasklib.encode(m, batch_first=True), rlemasklib.decode),
    }


def as_strings(result):
    "COCO strings of a contender's encode result, for comparison"
    items = result if isinstance(result, list) else [result]
    return [(r["counts"].decode() if isinstance(r["counts"], bytes) else r["counts"]) if isinstance(r, dict) else r
            for r in items]


def as_volume(mask, like):
    "A decoded mask as a boolean array of `like`'s shape (the COCO tools give (h, w, n) for a stack)"
    a = np.asarray(mask).astype(bool)
    return a if a.shape == like.shape else a.transpose(2, 0, 1)


def check(m, enc, dec):
    "Every contender's strings equal clinseg's, every decoded mask equals the input"
    ref = as_strings(enc["clinseg"])
    for who, r in enc.items():
        assert as_strings(r) == ref, f"{who}: COCO strings differ from clinseg's"
        assert (as_volume(dec[who], m) == m).all(), f"{who}: decoded mask differs from the input"


def paired(fns, rounds, reps):
    ("Times of each function over `rounds` rounds (each the mean of `reps` calls), every function once per round, "
     "order shuffled")
    names = list(fns)
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in np.random.default_rng(r).permutation(names).tolist():
            t0 = time.perf_counter()
            for _ in range(reps): fns[n]()
            times[n].append((time.perf_counter() - t0) / reps)
    return {n: np.array(t) for n, t in times.items()}


def summary(times, ref="clinseg"):
    "name -> (median, min, max, median ratio to ref, min ratio, max ratio), ratios paired per round"
    out = {}
    for n, t in times.items():
        q = times[ref] / t
        out[n] = (np.median(t), t.min(), t.max(), np.median(q), q.min(), q.max())
    return out


def run(quick, rounds):
    if quick:
        cases = {"256x256 blob": blob((256, 256)), "256x256 noise": noise((256, 256)),
                 "20x96x128 volume blob": blob((20, 96, 128)), "20x96x128 noisy volume": noise((20, 96, 128))}
    else:
        cases = {"1024x1024 blob": blob((1024, 1024)), "1024x1024 noise": noise((1024, 1024)),
                 "200x512x512 volume blob": blob((200, 512, 512)), "200x512x512 noisy volume": noise((200, 512, 512))}
    rows = []
    for label, m in cases.items():
        runs = int(np.count_nonzero(np.diff(m.reshape(-1).view(np.uint8), prepend=0, append=0)) // 2)
        reps = 1 if m.size > 5e6 else 3 if quick else 20   # calls per timing: small inputs many times
        fns = coco_contenders(m)
        enc = {who: e() for who, (e, _) in fns.items()}      # also the first (compiling) call, outside the timing
        dec = {who: fns[who][1](enc[who]) for who in fns}
        check(m, enc, dec)
        te = summary(paired({who: e for who, (e, _) in fns.items()}, rounds, reps))
        td = summary(paired({who: (lambda w=who: fns[w][1](enc[w])) for who in fns}, rounds, reps))
        for who in fns: rows.append((label, runs, f"{who}: COCO {'string' if m.ndim == 2 else 'string per slice'}",
                                     te[who], td[who]))
        convs = [("neopolyp", "C"), ("dsb2018", "F")] if m.ndim == 2 else [("hw2", "C")]
        for conv, order in convs:
            text = encode(m, conv)
            assert (decode(text, m.shape, conv) == m).all(), f"clinseg {conv}: round trip differs"
            base = 0 if conv == "hw2" else 1
            cls_enc = (lambda: classic_encode(m, order)) if base == 1 else None
            if cls_enc is not None and m.size < 5e6:   # the classic idiom on the 2-D masks only (seconds on a volume)
                assert cls_enc() == text, f"classic idiom differs from clinseg {conv}"
                te = summary(paired({"clinseg": lambda: encode(m, conv), "classic": cls_enc}, rounds, reps))
                td = summary(paired({"clinseg": lambda: decode(text, m.shape, conv),
                                     "classic": lambda: classic_decode(text, m.shape, order)}, rounds, reps))
                rows.append((label, runs, f"clinseg: {conv} text", te["clinseg"], td["clinseg"]))
                rows.append((label, runs, f"classic idiom: {conv} text", te["classic"], td["classic"]))
            else:
                te = summary(paired({"clinseg": lambda: encode(m, conv)}, rounds, reps))
                td = summary(paired({"clinseg": lambda: decode(text, m.shape, conv)}, rounds, reps))
                rows.append((label, runs, f"clinseg: {conv} text", te["clinseg"], td["clinseg"]))
    return rows


def table(rows):
    def ms(s): return f"{s[0] * 1e3:.3g} ({s[1] * 1e3:.3g}–{s[2] * 1e3:.3g})"
    def ratio(s): return "" if s[3] == 1 and s[4] == 1 else f"{s[3]:.2f} ({s[4]:.2f}–{s[5]:.2f})"
    out = ["| input | runs | contender | encode ms | clinseg ÷ it | decode ms | clinseg ÷ it |",
           "|---|---|---|---|---|---|---|"]
    for label, runs, who, te, td in rows:
        out.append(f"| {label} | {runs:,} | {who} | {ms(te)} | {ratio(te)} | {ms(td)} | {ratio(td)} |")
    return "\n".join(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 7, 3 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="small inputs, a few rounds, results checked against the peers")
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    versions = ", ".join(f"{p} {version(p)}" for p in ["numpy", "numba", "pycocotools", "hotcoco", "rlemasklib"])
    print(f"# {versions}; python {platform.python_version()}; compiled loops {'on' if numba_available() else 'off'}; "
          f"{os.cpu_count()} cores, load average before {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    rows = run(args.quick, rounds)
    print(table(rows))
    print(f"\n{rounds} paired rounds; figures: median (min–max); ratio: clinseg's time / the contender's, per round, "
          "median (min–max). "
          f"Load average after: {os.getloadavg()[0]:.2f}; {time.perf_counter() - t0:.1f} s.")
