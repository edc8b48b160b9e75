"""KiTS21's evaluation, re-expressed for the tests (not shipped, not clinseg's code path).

Follows neheller/kits21:
- kits21/evaluation/metrics.py @ 0cf253ff5b1942927aa54808260bea13c54176f7 (`construct_HEC_from_segmentation`,
  `compute_metrics_for_label`, `compute_metrics_for_case`, the evaluation.csv layout of `evaluate_predictions`);
- kits21/configuration/labels.py @ 697892ba028e347f6fb0f4f033926e5394b6361b (`KITS_HEC_LABEL_MAPPING`,
  `HEC_NAME_LIST`, `HEC_SD_TOLERANCES_MM`);
- kits21/evaluation/ranking.py @ 0cf253ff5b1942927aa54808260bea13c54176f7 (`rank_then_aggregate`,
  `rank_participants`), and kits21/evaluation/README.md (the six-value ranking it describes).

The surface Dice uses DeepMind's `compute_surface_distances` (surface-distance 0.1, deepmind/surface-distance
surface_distance/metrics.py), re-expressed densely: crop to the masks' box plus one cell, neighbour codes by
`ndimage.correlate` with the 2x2x2 kernel, borders where the code is neither 0 nor 255, the EDT of the whole crop of
"not the other border", areas from the 256-entry table. The table comes from surface-distance's
`lookup_tables.create_table_neighbour_code_to_surface_area` when the package is installed, else from
`clinseg.surface.surfel_area_table` (chapter 05 checks the two equal to 1e-12). Dice is medpy's `dc`
(2 |A and B| / (|A| + |B|), 0 when both are empty) with kits21's rule: 1 when both masks are empty.
"""
import numpy as np
from scipy import ndimage
from scipy import stats

KITS_HEC_LABEL_MAPPING = {
    'kidney_and_mass': (1, 2, 3),
    'mass': (2, 3),
    'tumor': (2, ),
}
HEC_NAME_LIST = list(KITS_HEC_LABEL_MAPPING.keys())
HEC_SD_TOLERANCES_MM = {
    'kidney_and_mass': 1.0330772532390826,
    'mass': 1.1328796488598762,
    'tumor': 1.1498198361434828,
}


def area_table(spacing):
    "DeepMind's surfel area per neighbour code (mm^2)"
    try: from surface_distance import lookup_tables
    except ImportError:
        from clinseg.surface import surfel_area_table
        return surfel_area_table(spacing)
    return lookup_tables.create_table_neighbour_code_to_surface_area(spacing)


def hec_mask(segmentation, label):
    "construct_HEC_from_segmentation: the union of the labels' voxels"
    if not isinstance(label, (tuple, list)): return segmentation == label
    mask = np.zeros(segmentation.shape, dtype=bool)
    for value in label: mask[segmentation == value] = True
    return mask


def medpy_dc(result, reference):
    "medpy.metric.binary.dc"
    result, reference = np.atleast_1d(result.astype(bool)), np.atleast_1d(reference.astype(bool))
    intersection = np.count_nonzero(result & reference)
    size = np.count_nonzero(result) + np.count_nonzero(reference)
    return 2. * intersection / float(size) if size else 0.0


def surface_distances(mask_gt, mask_pred, spacing):
    "compute_surface_distances(mask_gt, mask_pred, spacing): gt to pred, pred to gt, gt areas, pred areas"
    both = mask_gt | mask_pred
    lo = [int(np.flatnonzero(both.any(axis=tuple(a for a in range(3) if a != k)))[0]) for k in range(3)]
    hi = [int(np.flatnonzero(both.any(axis=tuple(a for a in range(3) if a != k)))[-1]) for k in range(3)]
    box = tuple(slice(a, b + 1) for a, b in zip(lo, hi))
    kernel = np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]])

    def codes(m):
        crop = np.zeros(tuple(b - a + 2 for a, b in zip(lo, hi)), np.uint8)
        crop[:-1, :-1, :-1] = m[box]
        return ndimage.correlate(crop, kernel, mode="constant", cval=0)
    c_gt, c_pred = codes(mask_gt), codes(mask_pred)
    b_gt, b_pred = (c_gt != 0) & (c_gt != 255), (c_pred != 0) & (c_pred != 255)
    table = area_table(spacing)
    d_gt = ndimage.distance_transform_edt(~b_gt, sampling=spacing) if b_gt.any() else np.full(b_gt.shape, np.inf)
    d_pred = (ndimage.distance_transform_edt(~b_pred, sampling=spacing) if b_pred.any()
              else np.full(b_pred.shape, np.inf))
    return d_pred[b_gt], d_gt[b_pred], table[c_gt[b_gt]], table[c_pred[b_pred]]


def metrics_for_label(pred, truth, label, spacing, tolerance):
    "compute_metrics_for_label: (Dice, surface Dice) of one HEC"
    mask_pred, mask_gt = hec_mask(pred, label), hec_mask(truth, label)
    gt_empty, pred_empty = np.sum(mask_gt) == 0, np.sum(mask_pred) == 0
    dice = 1 if gt_empty and pred_empty else medpy_dc(mask_pred, mask_gt)
    if gt_empty and pred_empty: return dice, 1
    if gt_empty or pred_empty: return dice, 0
    d_gt_pred, d_pred_gt, a_gt, a_pred = surface_distances(mask_gt, mask_pred, tuple(spacing))
    overlap_gt, overlap_pred = np.sum(a_gt[d_gt_pred <= tolerance]), np.sum(a_pred[d_pred_gt <= tolerance])
    return dice, (overlap_gt + overlap_pred) / (np.sum(a_gt) + np.sum(a_pred))


def metrics_for_case(pred, truth, spacing):
    "compute_metrics_for_case on arrays: 3x2 (HECs in HEC_NAME_LIST order x Dice, SD)"
    out = np.zeros((len(HEC_NAME_LIST), 2), dtype=float)
    for i, hec in enumerate(HEC_NAME_LIST):
        out[i] = metrics_for_label(pred, truth, KITS_HEC_LABEL_MAPPING[hec], spacing, HEC_SD_TOLERANCES_MM[hec])
    return out


def evaluation_csv(case_ids, metrics):
    "The evaluation.csv text evaluate_predictions writes (metrics: cases x 3 x 2)"
    lines = ["caseID,Dice_kidney,Dice_masses,Dice_tumor,SD_kidney,SD_masses,SD_tumor\n"]
    for c, m in zip(case_ids, metrics):
        lines.append("%s,%0.8f,%0.8f,%0.8f,%0.8f,%0.8f,%0.8f\n" % (c, m[0, 0], m[1, 0], m[2, 0], m[0, 1], m[1, 1],
                                                                    m[2, 1]))
    mean = np.asarray(metrics).mean(0)
    lines.append("average,%0.8f,%0.8f,%0.8f,%0.8f,%0.8f,%0.8f" % (mean[0, 0], mean[1, 0], mean[2, 0], mean[0, 1],
                                                                  mean[1, 1], mean[2, 1]))
    return "".join(lines)


def rank_then_aggregate(data, aggr_fn=np.mean):
    "ranking.py: data is (algorithms x metrics), higher is better; (final rank, aggregated rank)"
    ranked = np.apply_along_axis(stats.rankdata, 0, -data, 'min')
    aggregated = aggr_fn(ranked, axis=-1)
    return stats.rankdata(aggregated, 'min'), aggregated


def rank_six(means):
    "README's ranking: (teams x 6) means [Dice x 3 HECs, SD x 3 HECs] each ranked, the ranks averaged, then ranked"
    return rank_then_aggregate(np.asarray(means, dtype=float))


def rank_participants(metrics):
    ("ranking.py's rank_participants on (teams x 6) means: rank on mean Dice and mean SD, tumour Dice breaks ties; "
     "(ranks, mean rank, mean Dice, mean SD)")
    metrics = np.asarray(metrics, dtype=float)
    mean_dice = np.mean(metrics[:, :3], axis=1, keepdims=True)
    mean_sd = np.mean(metrics[:, 3:], axis=1, keepdims=True)
    ranks, aggregated = rank_then_aggregate(np.concatenate((mean_dice, mean_sd), axis=1))
    n, rank = len(metrics), 1
    while rank < n + 1:
        tied = ranks == rank
        if tied.sum() <= 1:
            rank += 1
            continue
        new_ranks = rank_then_aggregate(metrics[tied, 2:3])[0] - 1 + rank
        if len(np.unique(new_ranks)) == 1: rank += 1
        if len(np.unique(new_ranks)) != tied.sum():
            ranks[tied] = new_ranks
            continue
        ranks[tied] = new_ranks
        rank += 1
    return ranks, aggregated, mean_dice[:, 0], mean_sd[:, 0]
