"""BraTS 2023's lesion-wise evaluation, re-expressed for the tests (not shipped, not clinseg's code path).

Follows rachitsaluja/BraTS-2023-Metrics, metrics.py @ 43c905242b2eecf421d4ab2da7af8ece9777d322, pass for pass:
`get_TissueWiseSeg` (WT/TC/ET masks, other values set to 0), `get_GTseg_combinedByDilation`,
`get_LesionWiseScores` (whole-volume Dice and HD95, GaNDLF's sensitivity and specificity, volumes with the
prediction's header zooms, 26-connected components of the truth, of its dilation by
`generate_binary_structure(3, 2)` and of the prediction, then one full-volume pass per merged lesion: its dilation,
the predicted components inside it, their union, Dice and HD95), and `get_LesionWiseResults` (the sub-challenges'
dilation and threshold, lesions of volume <= threshold dropped, inf replaced by 374, the means over counted lesions
and false positives, NaN -> 1 and 0, the CSV's columns in order, every column float as pandas makes it).
pandas is not used: its frame operations are written out (the per-lesion table sorted by lesion number, sums in
that order).

The HD95 is DeepMind's `compute_surface_distances` and `compute_robust_hausdorff` (the copy the repository ships in
surface_distance/metrics.py): crop to the masks' box plus one cell, neighbour codes by `ndimage.correlate` with the
2x2x2 kernel, borders where the code is neither 0 nor 255, the EDT of "not the other border" with the spacing,
surfels sorted by (distance, area), the first distance whose cumulated area share reaches 95 %, the larger of the two
directions, inf when a mask is empty. The area table is surface-distance's own
(`lookup_tables.create_table_neighbour_code_to_surface_area`) when the package is installed, else
`clinseg.surface.surfel_area_table` (chapter 05 checks the two equal). Components come from cc3d (the script's
library) when it is installed, else from scipy with the full 26-neighbourhood: the same components, numbered
possibly otherwise, which changes only the order of the sums.
"""
import math, sys

import numpy as np
from scipy import ndimage

CHALLENGES = {'BraTS-GLI': (3, 50), 'BraTS-SSA': (3, 50), 'BraTS-MEN': (1, 50), 'BraTS-PED': (3, 50),
              'BraTS-MET': (1, 2)}   # metrics.py:307-321: (dilation_factor, lesion_volume_thresh)
LABEL_VALUES = ['WT', 'TC', 'ET']
COLUMNS = ['Labels', 'Num_TP', 'Num_FP', 'Num_FN', 'Sensitivity', 'Specificity', 'Legacy_Dice', 'Legacy_HD95',
           'GT_Complete_Volume', 'LesionWise_Score_Dice', 'LesionWise_Score_HD95']
TISSUES = {'WT': (1, 2, 3), 'TC': (1, 3), 'ET': (3,)}


def _cc26(mask):
    try:
        import cc3d
    except ImportError:
        return ndimage.label(mask, np.ones((3, 3, 3), bool))[0]
    return cc3d.connected_components(np.asarray(mask), connectivity=26)


def _area_table(spacing):
    try:
        from surface_distance import lookup_tables
        return lookup_tables.create_table_neighbour_code_to_surface_area(spacing)
    except ImportError:
        from clinseg.surface import surfel_area_table
        return surfel_area_table(spacing)


def dice(im1, im2):
    im1, im2 = np.asarray(im1).astype(bool), np.asarray(im2).astype(bool)
    return 2. * np.logical_and(im1, im2).sum() / (im1.sum() + im2.sum())


def surface_distances(mask_gt, mask_pred, spacing):
    "(distances gt -> pred, pred -> gt, areas gt, areas pred), sorted by (distance, area)"
    mask_gt, mask_pred = np.asarray(mask_gt).astype(bool), np.asarray(mask_pred).astype(bool)
    both = mask_gt | mask_pred
    if not both.any(): return [np.array([])] * 4
    lo = [int(np.flatnonzero(both.any(axis=tuple(a for a in range(3) if a != ax))).min()) for ax in range(3)]
    hi = [int(np.flatnonzero(both.any(axis=tuple(a for a in range(3) if a != ax))).max()) for ax in range(3)]
    box = tuple(slice(a, b + 1) for a, b in zip(lo, hi))
    kernel = np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]])
    codes, borders = [], []
    for m in (mask_gt, mask_pred):
        crop = np.zeros(tuple(b - a + 2 for a, b in zip(lo, hi)), np.uint8)
        crop[:-1, :-1, :-1] = m[box]
        c = ndimage.correlate(crop, kernel, mode='constant', cval=0)
        codes.append(c)
        borders.append((c != 0) & (c != 255))
    dist = [ndimage.distance_transform_edt(~b, sampling=spacing) if b.any() else np.inf * np.ones(b.shape)
            for b in borders]
    table = _area_table(spacing)
    out = []
    for d, b, c in ((dist[1], borders[0], codes[0]), (dist[0], borders[1], codes[1])):
        dd, aa = d[b], table[c[b]]
        if len(dd):
            order = sorted(zip(dd.tolist(), aa.tolist()))
            dd, aa = np.array([x for x, _ in order]), np.array([y for _, y in order])
        out.append((dd, aa))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def robust_hausdorff(sd, percent):
    def one(d, a):
        if not len(d): return np.inf
        idx = np.searchsorted(np.cumsum(a) / np.sum(a), percent / 100.0)
        return d[min(idx, len(d) - 1)]
    return max(one(sd[0], sd[2]), one(sd[1], sd[3]))


def tissue(mat, tissue_type):
    out = np.array(mat, dtype=float)
    keep = np.isin(out, TISSUES[tissue_type])
    out[~keep] = 0
    out[out > 0] = 1
    return out


def sensitivity_specificity(result_array, target_array):
    iC, rC = np.sum(result_array), np.sum(target_array)
    overlap = np.where(result_array == target_array, 1, 0)
    TP = overlap[result_array == 1].sum()
    FP, FN = iC - TP, rC - TP
    TN = np.count_nonzero((result_array != 1) & (target_array != 1))
    sens = 1.0 * TP / (TP + FN + sys.float_info.min)
    spec = 1.0 * TN / (TN + FP + sys.float_info.min)
    if iC == 0 and rC == 0: sens = 1.0
    return float(sens), float(spec)


def lesion_wise_scores(pred_labels, gt_labels, spacing, label_value, dil_factor):
    "get_LesionWiseScores on arrays: (tp, fn, fp, gt_tp, metric_pairs, full_dice, full_hd95, gt_vol, sens, spec)"
    sx, sy, sz = spacing
    pred_mat, gt_mat = tissue(pred_labels, label_value), tissue(gt_labels, label_value)
    both_empty = np.all(gt_mat == 0) and np.all(pred_mat == 0)
    full_dice = 1.0 if both_empty else dice(pred_mat, gt_mat)
    full_hd95 = 0.0 if both_empty else robust_hausdorff(
        surface_distances(gt_mat.astype(int), pred_mat.astype(int), (sx, sy, sz)), 95)
    sens, spec = sensitivity_specificity(pred_mat, gt_mat)
    full_gt_vol = np.sum(gt_mat) * sx * sy * sz
    struct = ndimage.generate_binary_structure(3, 2)
    gt_cc, pred_cc = _cc26(gt_mat), _cc26(pred_mat)
    dil_cc = _cc26(ndimage.binary_dilation(gt_mat, structure=struct, iterations=dil_factor))
    combined = np.zeros_like(dil_cc)
    for comp in range(1, int(np.max(dil_cc)) + 1):
        tmp = (gt_cc * (dil_cc == comp)).astype(combined.dtype)
        tmp[tmp > 0] = comp
        combined += tmp
    tp, fn, gt_tp, pairs = [], [], [], []
    for comp in range(1, int(np.max(combined)) + 1):
        gt_tmp = (combined == comp).astype(np.int64)
        roi = ndimage.binary_dilation(gt_tmp, structure=struct, iterations=dil_factor)
        gt_vol = np.sum(gt_tmp) * sx * sy * sz
        hits = np.unique(pred_cc * roi)
        hits = hits[hits != 0]
        tp += list(hits)
        pred_tmp = np.isin(pred_cc, hits).astype(np.int64)
        d = dice(pred_tmp, gt_tmp)
        h = robust_hausdorff(surface_distances(gt_tmp, pred_tmp, (sx, sy, sz)), 95)
        pairs.append((hits, comp, float(gt_vol), float(d), float(h)))
        (gt_tp if len(hits) else fn).append(comp)
    fp = np.unique(pred_cc[np.isin(pred_cc, tp + [0], invert=True)])
    return tp, fn, fp, gt_tp, pairs, float(full_dice), float(full_hd95), float(full_gt_vol), sens, spec


def lesion_wise_results(pred_labels, gt_labels, spacing, challenge_name):
    "get_LesionWiseResults on arrays: the three rows of the per-case CSV, as dicts with COLUMNS in order"
    dil, thresh = CHALLENGES[challenge_name]
    rows = []
    for label in LABEL_VALUES:
        tp, fn, fp, gt_tp, pairs, fdice, fhd95, gvol, sens, spec = lesion_wise_scores(
            pred_labels, gt_labels, spacing, label, dil)
        pairs = sorted(pairs, key=lambda r: r[1])
        fn_sub = sum(1 for r in pairs if len(r[0]) == 0 and r[2] <= thresh)
        gt_tp_sub = sum(1 for r in pairs if len(r[0]) != 0 and r[2] <= thresh)
        pairs = [(a, b, c, d, 374.0 if e == np.inf else e) for a, b, c, d, e in pairs]
        kept = [r for r in pairs if r[2] > thresh]
        n = len(kept) + len(fp)
        if n == 0: lw_dice, lw_hd95 = 1.0, 0.0   # 0/0: nan, replaced by 1 and 0 (metrics.py:360-374)
        else:
            lw_dice = float(np.sum(np.array([r[3] for r in kept], float)) / n)
            lw_hd95 = float((np.sum(np.array([r[4] for r in kept], float)) + len(fp) * 374) / n)
        values = [len(gt_tp) - gt_tp_sub, len(fp), len(fn) - fn_sub, sens, spec, fdice, fhd95, gvol, lw_dice, lw_hd95]
        values = [374.0 if v == np.inf else float(v) for v in values]   # metrics.py:399-403
        assert not any(math.isnan(v) for v in values)
        rows.append(dict(zip(COLUMNS, [label] + values)))
    return rows


def lesion_wise_results_files(pred_file, gt_file, challenge_name):
    "The same from two NIfTI files, read as the script reads them (get_fdata, the prediction's header zooms)"
    import nibabel as nib
    pred, gt = nib.load(str(pred_file)), nib.load(str(gt_file))
    spacing = tuple(float(z) for z in pred.header.get_zooms())
    return lesion_wise_results(pred.get_fdata(), gt.get_fdata(), spacing, challenge_name)
