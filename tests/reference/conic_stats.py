"""Test-only re-expression of the CoNIC 2022 evaluation: `get_pq`, `get_multi_pq_info`, `get_multi_r2` and the
pooling of `compute_stats.py --mode=seg_class`.

Follows TissueImageAnalytics/CoNIC, commit c1c4964d2aefcb9ec0ba08e88ed563fd80d41ac4, metrics/stats_utils.py
(`get_pq`, `get_multi_pq_info`, `get_multi_r2`), misc/utils.py (`remap_label`) and compute_stats.py: the same
quantities in the same order of operations, rewritten for tests; not their code.

Kept on purpose, as the original does:
- ids are made contiguous 1..n in sorted order (`remap_label`); pairs match at IoU > 0.5 (`get_multi_pq_info` never
  passes its `match_iou` on);
- DQ = TP / (TP + FP/2 + FN/2 + 1e-6), SQ = IoU sum / (TP + 1e-6): a patch or class with no object at all scores 0;
- "pq" is the mean over the patches of the binary PQ; "multi_pq+" pools TP, FP, FN and the IoU sum of each class over
  the patches, then takes the mean over the six classes of DQ x SQ;
- R² is scikit-learn's `r2_score` (force_finite): 1 - SS_res / SS_tot, and for a constant true column 1.0 when predicted
  exactly, else 0.0; the mean over the six class columns (the order of the script's list does not change the mean).
"""
import numpy as np

from tests.reference.hovernet_stats import remap  # HoVer-Net's remap_label, shared by both scripts

CLASS_COLUMNS = ("epithelial", "lymphocyte", "plasma", "neutrophil", "eosinophil", "connective")  # the script's order


def pq_stats(true, pred):
    "([dq, sq, pq], [tp, fp, fn], iou_sum) of two contiguous instance maps, as `get_pq` (match_iou=0.5)"
    true, pred = np.asarray(true, np.int32), np.asarray(pred, np.int32)
    t_ids, p_ids = list(np.unique(true))[1:], list(np.unique(pred))[1:]
    iou = np.zeros((len(t_ids) + 1, len(p_ids) + 1))
    for t in t_ids:
        tm = true == t
        for p in np.unique(pred[tm]):
            if p == 0:
                continue
            pm = pred == p
            total = int(tm.sum()) + int(pm.sum())
            inter = int((tm & pm).sum())
            iou[t - 1, p - 1] = inter / (total - inter)
    iou[iou <= 0.5] = 0.0
    rows, cols = np.nonzero(iou)
    paired = iou[rows, cols]
    tp = len(rows)
    fp, fn = len(p_ids) - tp, len(t_ids) - tp
    dq = tp / ((tp + 0.5 * fp + 0.5 * fn) + 1.0e-6)
    sq = paired.sum() / (tp + 1.0e-6)
    return [dq, sq, dq * sq], [tp, fp, fn], paired.sum()


def multi_pq_info(true, pred, nr_classes=6):
    "[[tp, fp, fn, iou_sum] per class] of one HxWx2 patch, as `get_multi_pq_info`"
    out = []
    for c in range(1, nr_classes + 1):
        t = remap(true[..., 0] * (true[..., 1] == c))
        p = remap(pred[..., 0] * (pred[..., 1] == c))
        _, (tp, fp, fn), iou_sum = pq_stats(t, p)
        out.append([tp, fp, fn, iou_sum])
    return out


def seg_class(true_array, pred_array):
    "{'pq': ..., 'multi_pq+': ...} of two (N, H, W, 2) arrays, as compute_stats.py --mode=seg_class"
    pqs, infos = [], []
    for true, pred in zip(true_array, pred_array):
        pqs.append(pq_stats(remap(true[..., 0]), remap(pred[..., 0]))[0][2])
        infos.append(multi_pq_info(true, pred))
    total = np.sum(np.array(infos, dtype=float), axis=0)
    per_class = [tp / ((tp + 0.5 * fp + 0.5 * fn) + 1.0e-6) * (iou / (tp + 1.0e-6)) for tp, fp, fn, iou in total]
    return {"pq": float(np.mean(np.array(pqs))), "multi_pq+": float(np.mean(np.array(per_class))),
            "per_class": per_class, "total": total}


def r2_score(y_true, y_pred):
    "scikit-learn's r2_score of one output, force_finite=True"
    y_true, y_pred = np.asarray(y_true, float), np.asarray(y_pred, float)
    res = ((y_true - y_pred) ** 2).sum()
    tot = ((y_true - y_true.mean()) ** 2).sum()
    if tot == 0:
        return 1.0 if res == 0 else 0.0
    return 1 - res / tot


def multi_r2(true, pred):
    "Mean over the classes of R², from two {column name: list of counts} tables, as `get_multi_r2`"
    for table in (true, pred):
        for col in table:
            if col not in CLASS_COLUMNS:
                raise ValueError("%s column header not recognised")   # sic: the script leaves %s unfilled
    return float(np.mean(np.array([r2_score(true[c], pred[c]) for c in CLASS_COLUMNS])))
