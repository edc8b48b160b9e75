"""Speed of clinseg's instance matching against its peers, in paired rounds.

    python bench/bench_instances.py [--quick] [--rounds N]

1. DSB 2018 scoring of the real stage-1 test set ($CLINSEG_DATA/dsb2018/stage1_solution.csv, 65 images, 4,152
   nuclei) against a real baseline's predictions: the stage-1 submission of ZengChen94/Kaggle-2018-Data-Science-Bowl
   `results/rcnn-396.csv` (README "LB = 0.396"; $CLINSEG_DATA/external/3e601b58...; 2,525 nuclei). The peer is the
   competition-era kernel most teams copied (`reference_histogram_score`: `np.histogram2d` on label images). clinseg
   scores the same images given as:
   - label images, both C order;
   - label images in mixed memory layouts: the truth in Fortran order (decoded column-major, as DSB numbers pixels),
     the prediction in C order (as a model returns it);
   - 0-based runs (what `parse_runs` gives for the RLE strings);
   - lists of dense boolean masks, one full-size mask per nucleus (as the DSB training folders store them); here the
     peer is also timed with its own way to build label images from such lists (`labels[mask] = k + 1`), and the floor
     is reading every mask once (`np.count_nonzero` of each). The mask lists are timed in rounds of their own, with
     their peer and floor: their 1.1 GB would evict the label images from the caches of the rounds of the other forms.
   With --quick: the first 8 images.
2. IoU matrix of 300 x 300 objects on a 1024 x 1024 image: clinseg (label images, runs) versus `pycocotools.mask.iou`
   on the same objects as COCO RLE (with --quick: 60 objects on 256 x 256).
Every result is checked equal to the peer's before timing (DSB scores to 1e-12, IoU to 1e-12). Each round times every
contender of a part once, the order shuffled from round to round (seeded: no contender always runs right after the
same one); ratios (peer time / clinseg time) are per round, reported as the median with the range (min-max). The
real-data part is skipped, with a message, when the data is absent.
"""
import argparse, csv, os, statistics, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.rle import parse_runs  # noqa: E402
from clinseg.instances import iou_matrix  # noqa: E402
from clinseg.instance_labels import label_to_runs, runs_to_labels  # noqa: E402
from clinseg.iou_sweep import (reference_histogram_score, sweep_image_score, synthetic_nuclei,  # noqa: E402
                               synthetic_prediction)

from clinseg.samples import missing_sample, real_sample  # noqa: E402

BASELINE_PARTS = ("external", "3e601b58fe87fa320559d95010dd6e31758c46e8")   # rcnn-396.csv, LB 0.396


def paired(funcs, rounds):
    "Per-round times of every function, the order shuffled each round"
    names = list(funcs)
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in np.random.default_rng(r).permutation(names).tolist():
            t0 = time.perf_counter()
            funcs[n]()
            times[n].append(time.perf_counter() - t0)
    return times


def rows_from(times, peer_of, sizes):
    "Table rows: median time, and for each contender the median and range of its peer's time over its own, per round"
    out = []
    for name, t in times.items():
        peer = peer_of.get(name)
        if peer is None: ratio = "peer"
        else:
            r = [p / s for p, s in zip(times[peer], t)]
            ratio = f"{statistics.median(r):.1f}× ({min(r):.1f}–{max(r):.1f}) vs {peer}"
        out.append(f"| {name} | {sizes} | {statistics.median(t) * 1e3:.1f} | {ratio} |")
    return out


def read_csv_rows(path):
    with open(path, newline="") as f: return list(csv.DictReader(f))


def paint(masks, shape):
    "The peer's way from a list of masks to a label image"
    labels = np.zeros(shape, np.int32)
    for k, m in enumerate(masks): labels[m] = k + 1
    return labels


def bench_dsb(quick, rounds):
    path = real_sample("dsb2018", "stage1_solution.csv", quiet=True)   # in CI a missing sample is an error
    baseline = real_sample(*BASELINE_PARTS, quiet=True)
    if path is None or baseline is None:
        missing = ("dsb2018", "stage1_solution.csv") if path is None else BASELINE_PARTS
        print("skipped the DSB part:", missing_sample(*missing))
        return []
    images = {}
    for row in read_csv_rows(path):
        images.setdefault(row["ImageId"], ([], (int(row["Height"]), int(row["Width"]))))[0].append(row["EncodedPixels"])
    preds = {}
    for row in read_csv_rows(baseline):
        if row["EncodedPixels"].strip(): preds.setdefault(row["ImageId"], []).append(row["EncodedPixels"])
    keys = list(images)[:8 if quick else None]
    T, P, TF, TR, PR, TM, PM = [], [], [], [], [], [], []
    for k in keys:
        texts, shape = images[k]
        tr = [parse_runs(x, "dsb2018", shape) for x in texts]
        pr = [parse_runs(x, "dsb2018", shape) for x in preds.get(k, [])]
        t, p = runs_to_labels(tr, shape, "F"), runs_to_labels(pr, shape, "F")   # labels 1..N: the peer is right on them
        T.append(np.ascontiguousarray(t))
        TF.append(np.asfortranarray(t))
        P.append(np.ascontiguousarray(p))
        TR.append(tr)
        PR.append(pr)
        TM.append([t == i for i in range(1, t.max() + 1)])
        PM.append([p == i for i in range(1, p.max() + 1)])
    ref = [reference_histogram_score(t, p) for t, p in zip(T, P)]
    funcs = {
        "histogram2d kernel, label images": lambda: [reference_histogram_score(t, p) for t, p in zip(T, P)],
        "clinseg, label images (C/C)": lambda: [sweep_image_score(t, p).score for t, p in zip(T, P)],
        "clinseg, label images (truth F / pred C)": lambda: [sweep_image_score(t, p).score for t, p in zip(TF, P)],
        "clinseg, runs": lambda: [sweep_image_score(t, p, order="F").score for t, p in zip(TR, PR)],
    }
    # timed in its own rounds below: its 1.1 GB of masks would evict the label images of the rounds above
    def mask_lists(): return [sweep_image_score(t, p).score for t, p in zip(TM, PM)]
    for name, f in list(funcs.items()) + [("clinseg, lists of dense masks", mask_lists)]:
        got = f()
        assert np.abs(np.subtract(got, ref)).max() < 1e-12, (name, np.abs(np.subtract(got, ref)).max())
    masks_peer = {"histogram2d kernel, from the mask lists (labels[mask] = k + 1 first)":
                      lambda: [reference_histogram_score(paint(t, t[0].shape), paint(p, p[0].shape)) for t,
                               p in zip(TM, PM)],
                  "floor: reading every mask once (np.count_nonzero)":
                      lambda: [np.count_nonzero(m) for ms in TM + PM for m in ms],
                  "clinseg, lists of dense masks": mask_lists}
    for f in list(funcs.values()) + list(masks_peer.values()): f()   # warm-up (and compiled loops' first calls)
    px = sum(t.size for t in T) / 1e6
    nt, npr = sum(map(len, TR)), sum(map(len, PR))
    print(f"DSB stage-1: {len(keys)} images, {px:.1f} Mpixels, {nt} true and {npr} predicted nuclei (rcnn-396), "
          f"mean score {np.mean(ref):.4f}; every clinseg form agrees with the kernel to 1e-12")
    peer = "histogram2d kernel, label images"
    lines = rows_from(paired(funcs, rounds), {n: peer for n in funcs if n != peer}, f"{len(keys)} images")
    t2 = paired(masks_peer, max(2, rounds // 2))
    pk = list(masks_peer)
    lines += rows_from({pk[0]: t2[pk[0]], pk[1]: t2[pk[1]], pk[2]: t2[pk[2]]}, {pk[2]: pk[0]}, f"{len(keys)} images")
    fl = [c / f for c, f in zip(t2[pk[2]], t2[pk[1]])]
    lines.append(f"| clinseg, lists of dense masks ÷ the floor of reading them | | | {statistics.median(fl):.2f}× "
                 f"({min(fl):.2f}–{max(fl):.2f}) |")
    return lines


def bench_iou(quick, rounds):
    try:
        import pycocotools.mask as cocomask
        from importlib.metadata import version
        coco_version = version("pycocotools")
    except ImportError:
        print("skipped the pycocotools part: pycocotools is not installed (pip install pycocotools)")
        return []
    shape, n = ((256, 256), 60) if quick else ((1024, 1024), 300)
    _, truth = synthetic_nuclei(shape, n, seed=1)
    pred = synthetic_prediction(truth, seed=2, miss=0, extra=0)
    t_ids, t_runs = label_to_runs(truth, "F")
    p_ids, p_runs = label_to_runs(pred, "F")
    def encode(labels, ids): return [cocomask.encode(np.asfortranarray(labels == k, dtype=np.uint8)) for k in ids]
    gt, dt = encode(truth, t_ids), encode(pred, p_ids)
    coco = cocomask.iou(dt, gt, [0] * len(gt))
    for got in (iou_matrix(truth, pred)[0], iou_matrix(t_runs, p_runs)[0]):
        assert np.abs(coco.T - got).max() < 1e-12
    reps = 10
    funcs = {f"pycocotools {coco_version} mask.iou, COCO RLE (x{reps})":
                 lambda: [cocomask.iou(dt, gt, [0] * len(gt)) for _ in range(reps)],
             f"clinseg iou_matrix, label images (x{reps})": lambda: [iou_matrix(truth, pred) for _ in range(reps)],
             f"clinseg iou_matrix, runs (x{reps})": lambda: [iou_matrix(t_runs, p_runs) for _ in range(reps)]}
    for f in funcs.values(): f()
    peer = next(iter(funcs))
    size = f"{len(t_ids)}×{len(p_ids)} on {shape[0]}×{shape[1]}"
    lines = rows_from(paired(funcs, rounds), {n: peer for n in funcs if n != peer}, size)
    e2e = {f"pycocotools {coco_version}: encode every object of two label images, then mask.iou":
               lambda: cocomask.iou(encode(pred, p_ids), encode(truth, t_ids), [0] * len(t_ids)),
           "clinseg iou_matrix from the two label images": lambda: iou_matrix(truth, pred),
           f"pycocotools {coco_version}: mask.encode, one call per object of a label image":
               lambda: encode(truth, t_ids),
           "clinseg label_to_runs: every object of a label image, one pass": lambda: label_to_runs(truth, "F"),
           f"pycocotools {coco_version}: encode every dense mask of two lists, then mask.iou":
               lambda: cocomask.iou([cocomask.encode(m) for m in pm], [cocomask.encode(m) for m in tm], [0] * len(tm)),
           "clinseg iou_matrix from the two lists of dense masks": lambda: iou_matrix(tm, pm)}
    # pycocotools wants Fortran-ordered masks: both get the same lists
    tm = [np.asfortranarray(truth == k) for k in t_ids]
    pm = [np.asfortranarray(pred == k) for k in p_ids]
    assert np.abs(e2e[list(e2e)[4]]().T - iou_matrix(tm, pm)[0]).max() < 1e-12
    k = list(e2e)
    return lines + rows_from(paired(e2e, max(2, rounds // 2)), {k[1]: k[0], k[3]: k[2], k[5]: k[4]}, size)


def versions():
    import platform
    out = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        import numba
        out.append(f"numba {numba.__version__}")
    except ImportError: out.append("numba not installed (clinseg's numpy engines run)")
    return ", ".join(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="a few images, small IoU matrix, 3 rounds (seconds): results checked")
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 7, 3 with --quick)")
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(f"{versions()}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {rounds} paired rounds")
    lines = bench_dsb(args.quick, rounds) + bench_iou(args.quick, rounds)
    print("\n| task | input | median time (ms) | speed-up: peer time ÷ clinseg time, median (range) "
          "|\n|---|---|---:|---|")
    print("\n".join(lines))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
