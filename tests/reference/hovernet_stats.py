"""Test-only re-expression of HoVer-Net's instance metrics: `get_fast_pq`, `get_fast_aji`, `get_fast_aji_plus`,
`get_fast_dice_2`.

Follows vqdang/hover_net, commit 67e2ce5e3f1a64a2ece77ad1c24233653a9e0901, metrics/stats_utils.py: the same quantities
in the same order of operations (so ties and rounding fall the same way), rewritten for tests; not their code.

Kept on purpose, as the original does:
- the ids are `np.unique(labels)[1:]`: the smallest value is taken to be the background (0), and the ids must be
  contiguous 1..n (call `remap` first);
- PQ's SQ divides the IoU sum by TP + 1e-6; AJI and AJI+ rank pairs by intersection / (union + 1e-6);
- the failures: no object at all in PQ, or no overlapping pair in Dice2, divide by zero (ZeroDivisionError); AJI with
  nothing predicted takes the argmax of an empty row (ValueError); AJI+ with nothing at all gives nan (0/0 in numpy).

`conic_multi_pq_info` and `conic_mpq_plus` follow TissueImageAnalytics/CoNIC, commit
c1c4964d2aefcb9ec0ba08e88ed563fd80d41ac4, metrics/stats_utils.py (`get_multi_pq_info`, `get_pq`) and compute_stats.py
(the "multi_pq+" pooling): per class, the instance map masked by the class map, ids made contiguous, TP, FP, FN and the
IoU sum at IoU > 0.5 (CoNIC's `get_multi_pq_info` does not pass its `match_iou` on: it is always 0.5); pooled over the
patches; PQ per class = DQ x SQ with DQ = TP / (TP + FP/2 + FN/2 + 1e-6) and SQ = IoU sum / (TP + 1e-6); the mean.

`pannuke_mpq` follows TissueImageAnalytics/PanNuke-metrics, commit 2079a3cab2a27cc03ce5392bccfc5dce5936cfe5, run.py, as
it evidently means (as written it cannot run: `pq = np.nan` then `pq.append(...)`, and `nonneo`, `inflamm_PQ`,
`all_tissue_PQ` are undefined): per image and class, NaN when the class has no true nucleus, else HoVer-Net's PQ; the
nanmean over the classes of each image, the nanmean over the images of each tissue, the nanmean over the tissues.
(A later commit of that repository, c00014d, runs as written; tests/reference/pannuke_metrics.py follows it, and
tools/check_pannuke_reference.py checks clinseg.competitions.pannuke against it.)
"""
import numpy as np
from scipy.optimize import linear_sum_assignment


def remap(labels):
    "Ids made contiguous 1..n in their sorted order, 0 kept as background (HoVer-Net's `remap_label`, by_size=False)"
    labels = np.asarray(labels)
    ids = np.unique(labels)
    ids = ids[ids != 0]
    out = np.zeros(labels.shape, np.int32)
    for k, v in enumerate(ids, 1):
        out[labels == v] = k
    return out


def _pairwise(true, pred):
    "Id lists and dense (n_true, n_pred) intersection and union tables, zero where objects do not meet"
    t_ids, p_ids = list(np.unique(true))[1:], list(np.unique(pred))[1:]
    t_masks = {t: (true == t).astype(np.uint8) for t in t_ids}
    p_masks = {p: (pred == p).astype(np.uint8) for p in p_ids}
    inter = np.zeros((len(t_ids), len(p_ids)))
    union = np.zeros((len(t_ids), len(p_ids)))
    for t in t_ids:
        tm = t_masks[t]
        for p in np.unique(pred[tm > 0]):
            if p == 0:
                continue
            pm = p_masks[p]
            both, shared = (tm + pm).sum(), (tm * pm).sum()
            inter[t - 1, p - 1] = shared
            union[t - 1, p - 1] = both - shared
    return t_ids, p_ids, t_masks, p_masks, inter, union


def _aggregate(t_ids, p_ids, t_masks, p_masks, inter, union, rows, cols):
    "Aggregated Jaccard of the pairs (rows, cols): unpaired objects of either side add their areas to the union"
    num, den = inter[rows, cols].sum(), union[rows, cols].sum()
    used_t, used_p = set(int(r) + 1 for r in rows), set(int(c) + 1 for c in cols)
    for t in t_ids:
        if t not in used_t:
            den += t_masks[t].sum()
    for p in p_ids:
        if p not in used_p:
            den += p_masks[p].sum()
    return num / den


def fast_aji(true, pred):
    "MoNuSeg's AJI as `get_fast_aji` computes it"
    t_ids, p_ids, tm, pm, inter, union = _pairwise(true, pred)
    score = inter / (union + 1.0e-6)
    best = np.argmax(score, axis=1)           # ValueError when nothing is predicted (as the original)
    rows = np.nonzero(np.max(score, axis=1) > 0.0)[0]
    return _aggregate(t_ids, p_ids, tm, pm, inter, union, rows, best[rows])


def fast_aji_plus(true, pred):
    "AJI+ as `get_fast_aji_plus` computes it"
    t_ids, p_ids, tm, pm, inter, union = _pairwise(true, pred)
    score = inter / (union + 1.0e-6)
    rows, cols = linear_sum_assignment(-score)
    keep = score[rows, cols] > 0.0
    with np.errstate(invalid="ignore"):
        return _aggregate(t_ids, p_ids, tm, pm, inter, union, rows[keep], cols[keep])


def _pq_pairs(true, pred, match_iou):
    "Matched (rows, cols, IoUs), id lists, as `get_fast_pq` finds them"
    t_ids, p_ids, _, _, inter, union = _pairwise(true, pred)
    iou = np.zeros(inter.shape)
    met = inter > 0
    iou[met] = inter[met] / union[met]
    if match_iou >= 0.5:
        rows, cols = np.nonzero(iou > match_iou)
    else:
        rows, cols = linear_sum_assignment(-iou)
        keep = iou[rows, cols] > match_iou
        rows, cols = rows[keep], cols[keep]
    return rows, cols, iou[rows, cols], t_ids, p_ids


def fast_pq(true, pred, match_iou=0.5):
    "[dq, sq, pq] and [paired true, paired pred, unpaired true, unpaired pred] as `get_fast_pq` returns them"
    assert match_iou >= 0.0
    rows, cols, paired_iou, t_ids, p_ids = _pq_pairs(true, pred, match_iou)
    paired_t, paired_p = list(rows + 1), list(cols + 1)
    unpaired_t = [t for t in t_ids if t not in paired_t]
    unpaired_p = [p for p in p_ids if p not in paired_p]
    tp, fp, fn = len(paired_t), len(unpaired_p), len(unpaired_t)
    dq = tp / (tp + 0.5 * fp + 0.5 * fn)     # ZeroDivisionError when there is no object at all
    sq = paired_iou.sum() / (tp + 1.0e-6)
    return [dq, sq, dq * sq], [paired_t, paired_p, unpaired_t, unpaired_p]


def conic_multi_pq_info(true, pred, nr_classes=6):
    "[[tp, fp, fn, iou_sum] per class] of one HxWx2 patch (instances, classes), as CoNIC's `get_multi_pq_info`"
    out = []
    for c in range(1, nr_classes + 1):
        t = remap(true[..., 0] * (true[..., 1] == c))
        p = remap(pred[..., 0] * (pred[..., 1] == c))
        rows, _, ious, t_ids, p_ids = _pq_pairs(t, p, 0.5)
        out.append([len(rows), len(p_ids) - len(rows), len(t_ids) - len(rows), ious.sum()])
    return out


def conic_mpq_plus(true_patches, pred_patches, nr_classes=6):
    "CoNIC's multi-class PQ+ of a stack of patches, and the pooled [tp, fp, fn, iou_sum] per class"
    total = np.sum(np.array([conic_multi_pq_info(t, p, nr_classes) for t, p in zip(true_patches, pred_patches)],
                            dtype=float), axis=0)
    per_class = [(tp / ((tp + 0.5 * fp + 0.5 * fn) + 1.0e-6)) * (iou / (tp + 1.0e-6)) for tp, fp, fn, iou in total]
    return float(np.mean(per_class)), total


def pannuke_mpq(true_masks, pred_masks, types, nr_classes=5):
    "PanNuke's mPQ of (n, H, W, channels) instance maps, one channel per class, and `types` (tissue per image)"
    per_image = []
    for i in range(len(true_masks)):
        row = []
        for j in range(nr_classes):
            t, p = remap(true_masks[i, :, :, j]), remap(pred_masks[i, :, :, j])
            row.append(np.nan if len(np.unique(t)) == 1 else fast_pq(t, p)[0][2])
        per_image.append(np.nanmean(row) if not np.all(np.isnan(row)) else np.nan)
    types = np.asarray(types)
    tissues = [np.nanmean([per_image[i] for i in np.flatnonzero(types == x)]) for x in dict.fromkeys(types.tolist())]
    return float(np.nanmean(tissues))


def fast_dice_2(true, pred):
    "Ensemble Dice as `get_fast_dice_2` computes it"
    t_ids, p_ids, tm, pm, inter, union = _pairwise(true, pred)
    total = shared = 0
    for i, j in zip(*np.nonzero(inter > 0)):
        shared += int(inter[i, j])
        total += int(tm[t_ids[i]].sum()) + int(pm[p_ids[j]].sum())
    return 2 * shared / total                 # ZeroDivisionError when no pair overlaps
