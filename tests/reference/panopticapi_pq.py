"""Test-only re-expression of the COCO panoptic evaluation: `pq_compute` of cocodataset/panopticapi, commit 7bb4655,
panopticapi/evaluation.py (`pq_compute_single_core`, `PQStat.pq_average`), with `rgb2id` of panopticapi/utils.py.

One process, no printing; otherwise the same steps on the same files: the PNGs read with Pillow as uint32, every
(true id, predicted id) pair counted with one `np.unique`, the true areas taken from the JSON (the predicted ones from
the PNG), the pairs visited in that order, and the averages over all / things / stuff categories (a mean over no
category divides by zero, as the original does). Bad input raises as the original would; this module checks nothing
more. Independent of clinseg's implementation."""
import json
import os

import numpy as np
from PIL import Image

VOID = 0
OFFSET = 256 * 256 * 256


def png_ids(path):
    "The segment id of every pixel of a COCO panoptic PNG: R + 256 G + 256^2 B"
    rgb = np.array(Image.open(path), dtype=np.uint32)
    return rgb[:, :, 0] + 256 * rgb[:, :, 1] + 256 * 256 * rgb[:, :, 2]


def image_stats(gt_ann, pred_ann, gt_folder, pred_folder, categories, stats):
    "Add one image pair's iou sum, tp, fp, fn per category to `stats` {category: [iou, tp, fp, fn]}"
    gt = png_ids(os.path.join(gt_folder, gt_ann["file_name"]))
    pred = png_ids(os.path.join(pred_folder, pred_ann["file_name"]))
    gt_segs = {s["id"]: dict(s) for s in gt_ann["segments_info"]}
    pred_segs = {s["id"]: dict(s) for s in pred_ann["segments_info"]}

    unnamed = set(pred_segs)
    for i, n in zip(*np.unique(pred, return_counts=True)):
        if i not in pred_segs:
            if i == VOID:
                continue
            raise KeyError(f"image {gt_ann['image_id']}: PNG segment {i} not in the JSON")
        pred_segs[i]["area"] = n
        unnamed.discard(i)
        if pred_segs[i]["category_id"] not in categories:
            raise KeyError(f"image {gt_ann['image_id']}: segment {i} of unknown category")
    if unnamed:
        raise KeyError(f"image {gt_ann['image_id']}: JSON segments {sorted(unnamed)} not in the PNG")

    pairs = gt.astype(np.uint64) * OFFSET + pred.astype(np.uint64)
    shared = {}
    for v, n in zip(*np.unique(pairs, return_counts=True)):
        shared[(int(v) // OFFSET, int(v) % OFFSET)] = n

    def cat(c):
        return stats.setdefault(c, [0.0, 0, 0, 0])

    gt_hit, pred_hit = set(), set()
    for (g, p), n in shared.items():
        if g not in gt_segs or p not in pred_segs or gt_segs[g]["iscrowd"] == 1:
            continue
        if gt_segs[g]["category_id"] != pred_segs[p]["category_id"]:
            continue
        union = pred_segs[p]["area"] + gt_segs[g]["area"] - n - shared.get((VOID, p), 0)
        iou = n / union
        if iou > 0.5:
            row = cat(gt_segs[g]["category_id"])
            row[0] += iou
            row[1] += 1
            gt_hit.add(g)
            pred_hit.add(p)

    crowd_of = {}
    for g, s in gt_segs.items():
        if g in gt_hit:
            continue
        if s["iscrowd"] == 1:
            crowd_of[s["category_id"]] = g          # one per category: the last in the JSON's order
            continue
        cat(s["category_id"])[3] += 1

    for p, s in pred_segs.items():
        if p in pred_hit:
            continue
        ignored = shared.get((VOID, p), 0)
        if s["category_id"] in crowd_of:
            ignored += shared.get((crowd_of[s["category_id"]], p), 0)
        if ignored / s["area"] > 0.5:
            continue
        cat(s["category_id"])[2] += 1


def average(stats, categories, isthing):
    "panopticapi's pq_average: ({pq, sq, rq, n}, {category: {pq, sq, rq}}) over all (None), things or stuff"
    pq = sq = rq = 0.0
    n = 0
    per = {}
    for c, info in categories.items():
        if isthing is not None and isthing != (info["isthing"] == 1):
            continue
        iou, tp, fp, fn = stats.get(c, [0.0, 0, 0, 0])
        if tp + fp + fn == 0:
            per[c] = {"pq": 0.0, "sq": 0.0, "rq": 0.0}
            continue
        n += 1
        d = tp + 0.5 * fp + 0.5 * fn
        per[c] = {"pq": iou / d, "sq": iou / tp if tp != 0 else 0, "rq": tp / d}
        pq += per[c]["pq"]
        sq += per[c]["sq"]
        rq += per[c]["rq"]
    return {"pq": pq / n, "sq": sq / n, "rq": rq / n, "n": n}, per


def pq_stats(gt_json_file, pred_json_file, gt_folder=None, pred_folder=None):
    "({category: [iou sum, tp, fp, fn]}, categories) summed over the images, as pq_compute's PQStat"
    with open(gt_json_file) as f:
        gt_json = json.load(f)
    with open(pred_json_file) as f:
        pred_json = json.load(f)
    gt_folder = gt_folder if gt_folder is not None else gt_json_file.replace(".json", "")
    pred_folder = pred_folder if pred_folder is not None else pred_json_file.replace(".json", "")
    categories = {c["id"]: c for c in gt_json["categories"]}
    preds = {a["image_id"]: a for a in pred_json["annotations"]}
    stats = {}
    for gt_ann in gt_json["annotations"]:
        if gt_ann["image_id"] not in preds:
            raise Exception(f"no prediction for the image with id: {gt_ann['image_id']}")
        image_stats(gt_ann, preds[gt_ann["image_id"]], gt_folder, pred_folder, categories, stats)
    return stats, categories


def pq_compute(gt_json_file, pred_json_file, gt_folder=None, pred_folder=None):
    "{'All', 'Things', 'Stuff': {pq, sq, rq, n}, 'per_class': {category: {pq, sq, rq}}}, as pq_compute returns"
    stats, categories = pq_stats(gt_json_file, pred_json_file, gt_folder, pred_folder)
    results = {}
    for name, isthing in [("All", None), ("Things", True), ("Stuff", False)]:
        results[name], per = average(stats, categories, isthing)
        if name == "All":
            results["per_class"] = per
    return results
