"""Test-only re-expression of PanNuke's evaluation: `run.py`'s bPQ, mPQ, per-class and per-tissue PQ.

Follows TissueImageAnalytics/PanNuke-metrics, commit c00014d766ca1be142b81bea19d9ef4315cde65a, run.py and utils.py
(`get_fast_pq`, `remap_label`, `binarize`): the same quantities in the same order of operations, rewritten for tests;
not their code.

Kept on purpose, as the original does:
- per image, each of the channels 0..4 is an instance map, ids made contiguous; PQ with DQ = TP / (TP + FP/2 + FN/2)
  (exact) and SQ = IoU sum / (TP + 1e-6), pairs at IoU > 0.5; NaN when the channel's truth is empty;
- bPQ: the five channels merged into one map, each (channel, id) a new id, a later channel's pixel overwriting an
  earlier one (`binarize`); NaN when the merged truth is empty;
- per image the nanmean over the five classes; per tissue (only the 19 names of the script's list) the nanmean over
  its images; the nanmean over the tissues. A tissue with no image gives NaN and drops out.
"""
import numpy as np

from tests.reference.hovernet_stats import remap  # HoVer-Net's remap_label, shared by both scripts

TISSUES = ("Adrenal_gland", "Bile-duct", "Bladder", "Breast", "Cervix", "Colon", "Esophagus", "HeadNeck", "Kidney",
           "Liver", "Lung", "Ovarian", "Pancreatic", "Prostate", "Skin", "Stomach", "Testis", "Thyroid", "Uterus")


def merge_channels(x):
    "(H, W, C) channels of instance ids as one map, as `binarize`: every (channel, id) a new id, later ones on top"
    out = np.zeros(x.shape[:2], np.int64)
    k = 1
    for c in range(x.shape[2]):
        for v in np.unique(x[..., c]):
            if v == 0:
                continue
            m = x[..., c] == v
            out[m] = k
            k += 1
    return out


def fast_pq(true, pred):
    "PQ of two contiguous instance maps as PanNuke's `get_fast_pq` (match_iou=0.5)"
    t_ids, p_ids = [v for v in np.unique(true) if v], [v for v in np.unique(pred) if v]
    iou = np.zeros((len(t_ids), len(p_ids)))
    for t in t_ids:
        tm = true == t
        for p in np.unique(pred[tm]):
            if p == 0:
                continue
            pm = pred == p
            inter = int((tm & pm).sum())
            iou[t - 1, p - 1] = inter / (int(tm.sum()) + int(pm.sum()) - inter)
    paired = iou[iou > 0.5]
    tp = len(paired)
    fp, fn = len(p_ids) - tp, len(t_ids) - tp
    return tp / (tp + 0.5 * fp + 0.5 * fn) * (paired.sum() / (tp + 1.0e-6))


def pannuke_stats(true, pred, types):
    "{'mPQ', 'bPQ', 'per_class' (5), 'per_tissue' {tissue: (mPQ, bPQ)}} of (N, H, W, >=5) masks, as run.py"
    m_all, b_all = [], []
    for i in range(len(true)):
        tb, pb = merge_channels(true[i, ..., :5]), merge_channels(pred[i, ..., :5])
        b_all.append(np.nan if len(np.unique(tb)) == 1 else fast_pq(remap(tb), remap(pb)))
        row = []
        for j in range(5):
            t, p = remap(true[i, ..., j].astype(np.int32)), remap(pred[i, ..., j].astype(np.int32))
            row.append(np.nan if len(np.unique(t)) == 1 else fast_pq(t, p))
        m_all.append(row)
    m_img = [np.nanmean(r) if not np.all(np.isnan(r)) else np.nan for r in m_all]
    per_class = [np.nanmean([r[j] for r in m_all]) for j in range(5)]
    tissues = {}
    for name in TISSUES:
        idx = [i for i, x in enumerate(types) if x == name]
        if idx:
            mt = [m_img[i] for i in idx]
            bt = [b_all[i] for i in idx]
            tissues[name] = (np.nanmean(mt) if not np.all(np.isnan(mt)) else np.nan,
                             np.nanmean(bt) if not np.all(np.isnan(bt)) else np.nan)
    return {"mPQ": float(np.nanmean([v[0] for v in tissues.values()])),
            "bPQ": float(np.nanmean([v[1] for v in tissues.values()])),
            "per_class": per_class, "per_tissue": tissues}
