"""Speed of clinseg's RLE against pycocotools and the classic numpy idiom, on the same inputs, in one run.

    python bench/bench_rle.py [--repeat N]

Inputs: a 1024x1024 blob mask and a 512x512x200 volume mask with a blob tumour, both C-ordered boolean
arrays as numpy makes them. Every contender goes from the array to text and back:
- clinseg: `encode(mask, convention)` / `decode(text, shape, convention)`, in row-major (NeoPolyp) and
  column-major (DSB) order, with no layout preparation;
- pycocotools: `mask.encode` (compressed COCO counts) / `mask.decode`; it needs a Fortran-ordered uint8
  array (h, w, n), which is prepared *outside* the timing (shown separately as "layout copy");
- classic: pad, compare neighbours, flatnonzero, join to text; decoding splits the text and assigns each run.
Ratios are clinseg's time / the contender's time for the same input and direction: below 1.0 clinseg is faster.
Goals (issue 2): ratio <= 1.0 against pycocotools, <= 0.5 against the classic idiom.
"""
import argparse, time
import numpy as np
from pycocotools import mask as coco_mask
from clinseg.rle import encode, decode, mask_to_runs


def blob(shape, seed=0):
    "A smooth irregular blob filling about a third of the image or a tumour-sized part of a volume"
    grid = np.indices(shape, dtype=np.float32)
    centre = np.array(shape, np.float32) / 2
    radius = min(shape) / 3
    dist = np.sqrt(sum((grid[i] - centre[i]) ** 2 for i in range(len(shape))))
    wobble = 1 + 0.12 * np.sin(grid[-1] / 17 + seed) + 0.1 * np.cos(grid[-2] / 23)
    return dist < radius * wobble


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


def best(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
    return min(times)


def run(repeat):
    rows = []
    cases = {"1024x1024 blob": blob((1024, 1024)), "512x512x200 volume": blob((200, 512, 512))}
    for label, m in cases.items():
        reps = repeat if m.size < 5e6 else max(2, repeat // 3)
        # pycocotools wants (h, w, n) Fortran uint8: one 2-D mask, or n slices of the volume
        t_layout = best(lambda: np.asfortranarray(m.astype(np.uint8) if m.ndim == 2 else m.transpose(1, 2, 0).astype(np.uint8)), reps)
        fortran = np.asfortranarray(m.astype(np.uint8) if m.ndim == 2 else m.transpose(1, 2, 0).astype(np.uint8))
        rle = coco_mask.encode(fortran)
        for conv, order in (("neopolyp", "C"), ("dsb2018", "F")):
            text = encode(m, conv)
            assert (decode(text, m.shape, conv) == m).all()
            assert classic_encode(m, order) == text if m.ndim == 2 else True
            t_enc = best(lambda: encode(m, conv), reps)
            t_dec = best(lambda: decode(text, m.shape, conv), reps)
            t_cls_enc = best(lambda: classic_encode(m, order), reps)
            t_cls_dec = best(lambda: classic_decode(text, m.shape, order), reps)
            rows.append((label, f"clinseg {conv} ({'row' if order == 'C' else 'column'}-major)", t_enc, t_dec, 1.0, 1.0))
            rows.append((label, f"classic idiom, {'row' if order == 'C' else 'column'}-major", t_cls_enc, t_cls_dec, t_enc / t_cls_enc, t_dec / t_cls_dec))
        t_runs = best(lambda: mask_to_runs(m, "C"), reps)
        rows.append((label, "clinseg runs only (mask_to_runs, row-major; no text)", t_runs, float("nan"), 1.0, float("nan")))
        t_runs_f = best(lambda: mask_to_runs(m, "F"), reps)
        rows.append((label, "clinseg runs only (mask_to_runs, column-major; no text)", t_runs_f, float("nan"), 1.0, float("nan")))
        t_coco_enc = best(lambda: coco_mask.encode(fortran), reps)
        t_coco_dec = best(lambda: coco_mask.decode(rle), reps)
        ref_enc = max(r[2] for r in rows if r[0] == label and r[1].startswith("clinseg") and "only" not in r[1])  # the slower order
        ref_dec = max(r[3] for r in rows if r[0] == label and r[1].startswith("clinseg") and "only" not in r[1])
        rows.append((label, "pycocotools, from the same C-ordered mask (layout copy + encode)", t_coco_enc + t_layout, t_coco_dec, ref_enc / (t_coco_enc + t_layout), ref_dec / t_coco_dec))
        rows.append((label, "pycocotools, Fortran uint8 input prepared untimed", t_coco_enc, t_coco_dec, ref_enc / t_coco_enc, ref_dec / t_coco_dec))
        rows.append((label, "  same, against clinseg's runs only", t_coco_enc, float("nan"), max(t_runs, t_runs_f) / t_coco_enc, float("nan")))
    return rows


def table(rows):
    out = ["| input | contender | encode ms | decode ms | encode ratio | decode ratio |", "|---|---|---|---|---|---|"]
    for label, who, te, td, re_, rd in rows:
        f = lambda x: "" if x != x else f"{x:.2f}"
        out.append(f"| {label} | {who} | {te * 1e3:.2f} | {f(td * 1e3) if td == td else ''} | {f(re_)} | {f(rd)} |")
    return "\n".join(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="timings per measurement; the best is kept")
    args = ap.parse_args()
    print(table(run(args.repeat)))
    print("\nratio = clinseg's time / the contender's time (pycocotools rows: the slower of clinseg's two orders). "
          "Goals: <= 1.0 against pycocotools, <= 0.5 against the classic idiom.")
