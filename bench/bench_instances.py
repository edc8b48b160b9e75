"""Speed of clinseg's instance matching against its peers, as ratios measured in one run.

1. DSB 2018 scoring of the 65 real stage-1 images (the released solution) against a copy with every
   nucleus shifted one pixel right: clinseg (from label images, and from runs) versus the reference
   2-D-histogram algorithm most teams copied. Goal: at least 20x faster.
2. IoU matrix of 300 x 300 objects on a 1024 x 1024 image: clinseg (label images, runs) versus
   `pycocotools.mask.iou` on the same objects as COCO RLE. Goal: faster. Also: every object's runs
   from a label image in one pass versus one `pycocotools.mask.encode` per object.

Run: `python bench/bench_instances.py` from the repository (the real-data part is skipped, with a
message, when ../shared/data is absent).
"""
import csv, sys, time
from pathlib import Path

import numpy as np

from clinseg.runs import mask_to_runs
from clinseg.rle import parse_runs
from clinseg.instances import (dsb_image_score, iou_matrix, label_to_runs, reference_histogram_score, runs_to_labels,
                               synthetic_nuclei, synthetic_prediction)

ROOT = Path(__file__).resolve().parents[1]
DATA = next((p for p in [ROOT.parent / "shared" / "data", ROOT / ".." / "shared" / "data"] if p.exists()), ROOT.parent / "shared" / "data")


def best_of(f, repeat=5):
    "Smallest wall time of `repeat` calls of f, in seconds, and f's last result"
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def shift_right(starts, lengths, height, size):
    "Column-major runs moved one pixel right; pixels past the last column dropped"
    s, e = starts + height, np.minimum(starts + lengths + height, size)
    keep = e > s
    return s[keep], (e - s)[keep]


def bench_dsb(rows):
    path = DATA / "dsb2018" / "stage1_solution.csv"
    if not path.exists():
        print(f"skipped the DSB part: {path} not found")
        return
    images = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            texts, _ = images.setdefault(row["ImageId"], ([], (int(row["Height"]), int(row["Width"]))))
            texts.append(row["EncodedPixels"])
    truth_runs, pred_runs, truth_labels, pred_labels = [], [], [], []
    for texts, (h, w) in images.values():
        tr = [parse_runs(x, "dsb2018", (h, w)) for x in texts]
        pr = [r for r in (shift_right(s, l, h, h * w) for s, l in tr) if r[0].size]
        truth_runs.append(tr); pred_runs.append(pr)
        truth_labels.append(runs_to_labels(tr, (h, w), "F"))     # labels 1..N: the reference is right on them
        pred_labels.append(runs_to_labels(pr, (h, w), "F"))
    pixels = sum(t.size for t in truth_labels)
    t_ref, ref = best_of(lambda: [reference_histogram_score(t, p) for t, p in zip(truth_labels, pred_labels)], 3)
    t_lab, lab = best_of(lambda: [dsb_image_score(t, p).score for t, p in zip(truth_labels, pred_labels)])
    t_run, run = best_of(lambda: [dsb_image_score(t, p).score for t, p in zip(truth_runs, pred_runs)])
    diff = max(np.abs(np.subtract(ref, lab)).max(), np.abs(np.subtract(run, lab)).max())
    print(f"DSB stage-1: 65 images, {pixels / 1e6:.1f} Mpixels, {sum(map(len, truth_runs))} nuclei; "
          f"mean score {np.mean(lab):.4f}; largest difference between the three: {diff:.1e}")
    rows += [("DSB score, 65 real images: reference 2-D histogram (label images)", t_ref, None),
             ("DSB score, 65 real images: clinseg from label images", t_lab, t_ref / t_lab),
             ("DSB score, 65 real images: clinseg from runs (no dense images)", t_run, t_ref / t_run)]


def bench_iou(rows):
    try: import pycocotools.mask as cocomask
    except ImportError:
        print("skipped the pycocotools part: pycocotools is not installed (pip install pycocotools)")
        return
    _, truth = synthetic_nuclei((1024, 1024), 300, seed=1)
    pred = synthetic_prediction(truth, seed=2, miss=0, extra=0)
    t_ids, t_runs = label_to_runs(truth, "F")
    p_ids, p_runs = label_to_runs(pred, "F")
    assert len(t_ids) == len(p_ids) == 300, (len(t_ids), len(p_ids))
    encode = lambda labels, ids: [cocomask.encode(np.asfortranarray(labels == k, dtype=np.uint8)) for k in ids]
    t_enc, gt = best_of(lambda: encode(truth, t_ids), 1)
    dt = encode(pred, p_ids)
    t_coco, coco = best_of(lambda: cocomask.iou(dt, gt, [0] * len(gt)), 50)       # about a millisecond each: many repeats
    t_lab, (iou_lab, _, _) = best_of(lambda: iou_matrix(truth, pred), 50)
    t_run, (iou_run, _, _) = best_of(lambda: iou_matrix(t_runs, p_runs), 50)
    t_l2r, _ = best_of(lambda: label_to_runs(truth, "F"))
    t_e2e, _ = best_of(lambda: cocomask.iou(encode(pred, p_ids), encode(truth, t_ids), [0] * len(t_ids)), 1)
    diff = max(np.abs(coco.T - iou_lab).max(), np.abs(iou_run - iou_lab).max())
    print(f"IoU 300 x 300 on 1024 x 1024: {int((iou_lab > 0).sum())} overlapping pairs; largest difference from pycocotools: {diff:.1e}")
    rows += [("IoU 300x300, 1024^2: pycocotools.mask.iou on COCO RLE", t_coco, None),
             ("IoU 300x300, 1024^2: clinseg iou_matrix on label images", t_lab, t_coco / t_lab),
             ("IoU 300x300, 1024^2: clinseg iou_matrix on runs", t_run, t_coco / t_run),
             ("IoU 300x300 from label images: pycocotools encode (one per object) + iou", t_e2e, None),
             ("IoU 300x300 from label images: clinseg iou_matrix", t_lab, t_e2e / t_lab),
             ("all 300 objects to RLE: pycocotools.mask.encode, one per object", t_enc, None),
             ("all 300 objects to runs: clinseg label_to_runs, one pass", t_l2r, t_enc / t_l2r)]


if __name__ == "__main__":
    rows = []
    bench_dsb(rows)
    bench_iou(rows)
    print(f"\n| task | time (ms) | speed-up vs the peer above |\n|---|---:|---:|")
    for name, secs, ratio in rows:
        ms = f"{secs * 1e3:.2f}" if secs < 0.01 else f"{secs * 1e3:.1f}"
        print(f"| {name} | {ms} | {'peer' if ratio is None else f'{ratio:.2f}x' if ratio < 10 else f'{ratio:.0f}x'} |")
    print(f"\nnumpy {np.__version__}, Python {sys.version.split()[0]}")
