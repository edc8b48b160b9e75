"""clinseg's nnU-Net evaluation (clinseg.competitions.nnunet) against a re-expression of nnU-Net's code
(tests/reference/nnunet_metrics.py): per-case metrics, the summary and summary.json's text, on 40 generated cases
(tests/reference/kits_nnunet_cases.py), with labels, regions and an ignore label; every number to 1e-12, the file
byte for byte. `tools/check_nnunet_reference.py` runs nnU-Net's own code instead."""
import json, math

import numpy as np
import pytest

from clinseg.competitions import nnunet
from clinseg.folders import Case, Evaluation, evaluate_folders
from clinseg.regions import LabelValueError
from tests.reference import nnunet_metrics as ref
from tests.reference.kits_nnunet_cases import make_cases

CASES = make_cases(40, seed=3)
LABELS = [1, 2, 3]
REGIONS = [(1, 2, 3), (2, 3), 2]      # KiTS-style regions as a region-based nnU-Net dataset.json would give them


def with_ignore(truth, k):
    "Every fourth case: the reference marks a slab as unannotated (label 4)"
    if k % 4: return truth
    t = truth.copy()
    t[:, :, :2] = 4
    return t


def equal(a, b):
    "Nested dicts and lists equal, keys in the same order, NaN equal to NaN"
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list): return isinstance(b, list) and len(a) == len(b) and all(map(equal, a, b))
    return type(a) is type(b) and ref.same(a, b)


def check_rows(rows, expected):
    assert [r["region"] for r in rows] == [ref.label_or_region_to_key(k) for k in expected]
    for r, (k, m) in zip(rows, expected.items()):
        for col in nnunet.NNUNET_COLUMNS:
            a, b = r[col], m[col]
            if isinstance(b, float) and math.isnan(b): assert math.isnan(a), (k, col)
            else: assert abs(a - b) <= 1e-12 and type(a) is (float if col in ("Dice", "IoU") else int), (k, col, a, b)


@pytest.mark.parametrize("what", ["labels", "regions", "ignore"])
def test_cases(what):
    lr = REGIONS if what == "regions" else LABELS
    for k, (name, scenario, pred, truth, spacing) in enumerate(CASES):
        ign = 4 if what == "ignore" else None
        t = with_ignore(truth, k) if ign else truth
        rows = nnunet.score_case(pred, t, spacing, nnunet.nnunet_regions(lr), ignore_label=ign)
        check_rows(rows, ref.compute_metrics(t, pred, lr, ign)["metrics"])


def evaluation(lr, ign=None):
    "An Evaluation of the generated cases (no files), and the reference's per-case results in file order"
    proto = nnunet.nnunet_protocol(regions=lr, ignore_label=ign)
    ev = Evaluation(proto, proto.regions)
    results = []
    for k, (name, scenario, pred, truth, spacing) in enumerate(CASES):
        t = with_ignore(truth, k) if ign else truth
        rp, rt = f"/p/{name}.nii.gz", f"/t/{name}.nii.gz"
        ev.cases[name] = Case(name, rt, rp, spacing, proto.score_case(pred, t, spacing, proto.regions))
        results.append(ref.compute_metrics(t, pred, lr, ign, reference_file=rt, prediction_file=rp))
    ev.summary = proto.summarise(ev)
    return ev, ref.summarise(results, lr)


@pytest.mark.parametrize("what", ["labels", "regions", "ignore"])
def test_summary_json(what, tmp_path):
    lr = REGIONS if what == "regions" else LABELS
    ev, expected = evaluation(lr, 4 if what == "ignore" else None)
    nnunet.write_json(ev, tmp_path / "summary.json")
    text = (tmp_path / "summary.json").read_text()
    assert text == ref.summary_json_text(expected)          # keys, order, values, NaN: byte for byte
    assert list(json.loads(text)) == ["foreground_mean", "mean", "metric_per_case"]
    assert nnunet.compare_summary(ev, tmp_path / "summary.json") == []
    got = nnunet.read_summary_json(tmp_path / "summary.json")
    want = ref.load_summary_json(text)
    assert equal(got, want)
    assert ev.summary["foreground_mean"] == expected["foreground_mean"]
    for key, m in expected["mean"].items():
        for col, v in m.items(): assert ref.same(ev.summary[ref.label_or_region_to_key(key)][col], v)


def test_empty_rules_and_keys():
    z = np.zeros((3, 4, 5), np.uint8)
    one = z.copy()
    one[1, 1, 1] = 1
    rows = nnunet.score_case(z, z, None, nnunet.nnunet_regions([1]))
    assert math.isnan(rows[0]["Dice"]) and math.isnan(rows[0]["IoU"]) and rows[0]["TN"] == z.size
    assert nnunet.score_case(one, z, None, nnunet.nnunet_regions([1]))[0]["Dice"] == 0.0
    assert nnunet.score_case(z, one, None, nnunet.nnunet_regions([1]))[0]["IoU"] == 0.0
    for r in [1, (1, 2), (2,), (1, 2, 3)]:
        assert nnunet.label_or_region_key(r) == ref.label_or_region_to_key(r)
        assert nnunet.key_label_or_region(ref.label_or_region_to_key(r)) == ref.key_to_label_or_region(str(r))


def test_label_outside_regions():
    name, scenario, pred, truth, spacing = CASES[0]
    bad = truth.copy()
    bad[0, 0, 0] = 7
    with pytest.raises(LabelValueError, match="the truth holds label 7"):
        nnunet.score_case(pred, bad, spacing, nnunet.nnunet_regions([1, 2, 3]))
    with pytest.raises(LabelValueError, match="the prediction holds label 7"):
        nnunet.score_case(bad, truth, spacing, nnunet.nnunet_regions([1, 2, 3]))


@pytest.mark.parametrize("labels", [
    {"background": 0, "kidney": 1, "tumor": 2, "cyst": 3},
    {"background": 0, "kidney_and_masses": [1, 2, 3], "masses": [2, 3], "tumor": 2},
    {"background": 0, "kidney": 1, "tumor": 2, "cyst": 3, "ignore": 4},
    {"background": 0, "b": [0], "c": 3, "a": [1]}])
def test_dataset_json(labels):
    regions, ign = nnunet.dataset_json_regions({"labels": labels})
    want, want_ign = ref.labels_from_dataset_json(labels)
    assert ign == want_ign
    assert regions == nnunet.nnunet_regions(want)
    assert list(regions) == [ref.label_or_region_to_key(r) for r in want]


def test_folders(tmp_path):
    ("The protocol through evaluate_folders on NIfTI files, regions not given (the labels found; case 3 has none, case "
     "1 no cyst): summary.json as the reference computes it from the arrays with dataset.json's labels 1, 2, 3")
    import nibabel as nib
    affine = np.diag([2.5, 0.8, 0.8, 1.0])
    results = []
    for name, scenario, pred, truth, spacing in CASES[:12]:
        for folder, data in (("ref", truth), ("pred", pred)):
            img = nib.Nifti1Image(data, affine)
            img.set_qform(affine, code=1)
            img.set_sform(affine, code=1)
            (tmp_path / folder).mkdir(exist_ok=True)
            nib.save(img, str(tmp_path / folder / f"{name}.nii.gz"))
    ev = evaluate_folders(tmp_path / "ref", tmp_path / "pred", nnunet.NNUNET)
    for name, scenario, pred, truth, spacing in CASES[:12]:
        results.append(ref.compute_metrics(truth, pred, LABELS, None, str(tmp_path / "ref" / f"{name}.nii.gz"),
                                           str(tmp_path / "pred" / f"{name}.nii.gz")))
    nnunet.write_json(ev, tmp_path / "summary.json")
    assert (tmp_path / "summary.json").read_text() == ref.summary_json_text(ref.summarise(results, LABELS))
