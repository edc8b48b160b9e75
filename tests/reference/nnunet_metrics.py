"""nnU-Net v2's evaluation, re-expressed for the tests (not shipped, not clinseg's code path).

Follows MIC-DKFZ/nnUNet @ 0e495086eb108ff79afe106291e8c15bd2f2bc3a (nnunetv2 2.8.1),
nnunetv2/evaluation/evaluate_predictions.py: `label_or_region_to_key`, `key_to_label_or_region`,
`region_or_label_to_mask`, `compute_tp_fp_fn_tn`, `compute_metrics` (on arrays instead of files), the means of
`compute_metrics_on_folder` (np.nanmean over cases per label or region; foreground_mean the np.mean of those means
leaving out the key 0) and `save_summary_json` (keys turned into str(label or region), written by batchgenerators'
save_json: json.dump(..., sort_keys=True, indent=4), so NaN is written as the bare word NaN);
nnunetv2/utilities/json_export.py `recursive_fix_for_json_export` (numpy scalars to Python numbers);
nnunetv2/utilities/label_handling/label_handling.py (`LabelManager`: regions when a label value is a list or tuple of
more than one label, the ignore label, the foreground labels or regions that compute_metrics_on_folder2 evaluates).
"""
import json, math

import numpy as np


def label_or_region_to_key(label_or_region):
    return str(label_or_region)


def key_to_label_or_region(key):
    try: return int(key)
    except ValueError:
        key = key.replace('(', '').replace(')', '')
        return tuple(int(i) for i in key.split(',') if len(i) > 0)


def region_or_label_to_mask(segmentation, region_or_label):
    if np.isscalar(region_or_label): return segmentation == region_or_label
    mask = np.zeros_like(segmentation, dtype=bool)
    for r in region_or_label: mask[segmentation == r] = True
    return mask


def tp_fp_fn_tn(mask_ref, mask_pred, ignore_mask=None):
    use = np.ones_like(mask_ref, dtype=bool) if ignore_mask is None else ~ignore_mask
    return (np.sum((mask_ref & mask_pred) & use), np.sum(((~mask_ref) & mask_pred) & use),
            np.sum((mask_ref & (~mask_pred)) & use), np.sum(((~mask_ref) & (~mask_pred)) & use))


def compute_metrics(seg_ref, seg_pred, labels_or_regions, ignore_label=None, reference_file="", prediction_file=""):
    "compute_metrics on two label arrays: {'reference_file', 'prediction_file', 'metrics': {label or region: {...}}}"
    ignore_mask = seg_ref == ignore_label if ignore_label is not None else None
    results = {'reference_file': reference_file, 'prediction_file': prediction_file, 'metrics': {}}
    for r in labels_or_regions:
        m = results['metrics'][r] = {}
        tp, fp, fn, tn = tp_fp_fn_tn(region_or_label_to_mask(seg_ref, r), region_or_label_to_mask(seg_pred, r),
                                     ignore_mask)
        if tp + fp + fn == 0: m['Dice'], m['IoU'] = np.nan, np.nan
        else: m['Dice'], m['IoU'] = 2 * tp / (2 * tp + fp + fn), tp / (tp + fp + fn)
        m['FP'], m['TP'], m['FN'], m['TN'] = fp, tp, fn, tn
        m['n_pred'], m['n_ref'] = fp + tp, fn + tp
    return results


def _fix(v):
    "recursive_fix_for_json_export on one value"
    if isinstance(v, dict): return {(int(k) if isinstance(k, np.integer) else k): _fix(x) for k, x in v.items()}
    if isinstance(v, list): return [_fix(x) for x in v]
    if isinstance(v, np.bool_): return bool(v)
    if isinstance(v, np.integer): return int(v)
    if isinstance(v, np.floating): return float(v)
    return v


def summarise(results, labels_or_regions):
    "compute_metrics_on_folder's result dict from the per-case results (cases in the folder's sorted order)"
    metric_list = list(results[0]['metrics'][labels_or_regions[0]].keys())
    means = {r: {m: np.nanmean([i['metrics'][r][m] for i in results]) for m in metric_list}
             for r in labels_or_regions}
    foreground_mean = {m: np.mean([means[k][m] for k in means if not (k == 0 or k == '0')]) for m in metric_list}
    return {'metric_per_case': _fix(results), 'mean': _fix(means), 'foreground_mean': _fix(foreground_mean)}


def summary_json_text(result):
    "What save_summary_json writes"
    converted = dict(result)
    converted['mean'] = {label_or_region_to_key(k): v for k, v in result['mean'].items()}
    converted['metric_per_case'] = [dict(c, metrics={label_or_region_to_key(k): v for k, v in c['metrics'].items()})
                                    for c in result['metric_per_case']]
    return json.dumps(converted, sort_keys=True, indent=4)


def load_summary_json(text):
    "load_summary_json on the text of a summary.json"
    results = json.loads(text)
    results['mean'] = {key_to_label_or_region(k): v for k, v in results['mean'].items()}
    for c in results['metric_per_case']:
        c['metrics'] = {key_to_label_or_region(k): v for k, v in c['metrics'].items()}
    return results


def labels_from_dataset_json(labels):
    ("LabelManager on dataset.json's 'labels': (what compute_metrics_on_folder2 evaluates, the ignore label): the "
     "foreground regions if any value is a list of several labels, else the foreground labels")
    has_regions = any(isinstance(v, (tuple, list)) and len(v) > 1 for v in labels.values())
    ignore = labels.get('ignore')
    if has_regions:
        out = []
        for k, r in labels.items():
            if k == 'ignore': continue
            if (np.isscalar(r) and r == 0) or (isinstance(r, (tuple, list)) and len(np.unique(r)) == 1
                                               and np.unique(r)[0] == 0): continue
            out.append(tuple(r) if isinstance(r, list) else r)
        return out, ignore
    found = []
    for k, r in labels.items():
        if k == 'ignore': continue
        found += [int(x) for x in r] if isinstance(r, (tuple, list)) else [int(r)]
    return [int(i) for i in np.unique(found) if i != 0], ignore


def same(a, b):
    "Two numbers equal, NaN equal to NaN"
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b
