"""clinseg's KiTS21 evaluation (clinseg.competitions.kits21) against a re-expression of kits21's code
(tests/reference/kits21_metrics.py): per-case Dice and surface Dice, the means, evaluation.csv and both rankings, on
40 generated cases (tests/reference/kits_nnunet_cases.py); every number to 1e-12. The real KiTS19 label is used when
CLINSEG_DATA names the folder of real samples. `tools/check_kits21_reference.py` runs kits21's own code instead."""
import numpy as np
import pytest

from clinseg.competitions import kits21
from clinseg.folders import Case, Evaluation
from clinseg.regions import REGION_PRESETS, LabelValueError
from clinseg.samples import missing_sample, real_sample
from tests.reference import kits21_metrics as ref
from tests.reference.kits_nnunet_cases import make_cases

CASES = make_cases(40, seed=5)


def as_array(rows):
    "score_case's rows as kits21's 3x2 array (HECs x Dice, SD)"
    assert [r["region"] for r in rows] == ref.HEC_NAME_LIST
    return np.array([[r["Dice"], r["SD"]] for r in rows])


def test_facts():
    assert REGION_PRESETS["kits21"] == ref.KITS_HEC_LABEL_MAPPING
    assert list(kits21.KITS21_REGIONS) == ref.HEC_NAME_LIST
    assert kits21.KITS21_TOLERANCES_MM == ref.HEC_SD_TOLERANCES_MM


def test_cases():
    seen = set()
    for name, scenario, pred, truth, spacing in CASES:
        got, want = as_array(kits21.score_case(pred, truth, spacing, None)), ref.metrics_for_case(pred, truth, spacing)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"{name} ({scenario})")
        seen.add(scenario)
    assert len(seen) == 10


def test_empty_rules():
    z = np.zeros((5, 6, 7), np.uint8)
    k = z.copy()
    k[1:4, 1:5, 2:6] = 1
    assert as_array(kits21.score_case(z, z, (1, 1, 1))).tolist() == [[1, 1]] * 3
    assert as_array(kits21.score_case(k, z, (1, 1, 1))).tolist() == [[0, 0], [1, 1], [1, 1]]
    assert as_array(kits21.score_case(z, k, (1, 1, 1))).tolist() == [[0, 0], [1, 1], [1, 1]]


def test_label_outside_regions():
    name, scenario, pred, truth, spacing = CASES[0]
    bad = truth.copy()
    bad[0, 0, 0] = 4
    with pytest.raises(LabelValueError, match="the truth holds label 4"):
        kits21.score_case(pred, bad, spacing)
    with pytest.raises(LabelValueError, match="the prediction holds label 4"):
        kits21.score_case(bad, truth, spacing)


def evaluation():
    ev = Evaluation(kits21.KITS21, kits21.KITS21.regions)
    for name, scenario, pred, truth, spacing in CASES[::-1]:       # kits21 orders the cases by file name
        ev.cases[name] = Case(name, f"/t/{name}.nii.gz", f"/p/{name}.nii.gz", spacing,
                              kits21.score_case(pred, truth, spacing, kits21.KITS21.regions))
    ev.summary = kits21.KITS21.summarise(ev)
    return ev


def test_means_and_csv(tmp_path):
    ev = evaluation()
    metrics = np.array([ref.metrics_for_case(p, t, s) for _, _, p, t, s in CASES])
    mean = metrics.mean(0)
    for i, hec in enumerate(ref.HEC_NAME_LIST):
        assert abs(ev.summary[hec]["Dice"] - mean[i, 0]) <= 1e-12 and abs(ev.summary[hec]["SD"] - mean[i, 1]) <= 1e-12
        assert ev.summary[hec]["n"] == len(CASES)
    kits21.write_evaluation_csv(ev, tmp_path / "evaluation.csv")
    assert (tmp_path / "evaluation.csv").read_text() == ref.evaluation_csv([c[0] for c in CASES], metrics)


def teams(rng, n):
    "n teams' six means, with ties (equal values) on purpose"
    data = rng.choice(np.linspace(0.5, 1.0, 6), size=(n, 6))
    data[rng.random((n, 6)) < 0.3] = 0.8
    return {f"team{i}": data[i] for i in range(n)}


@pytest.mark.parametrize("seed", range(12))
def test_rankings(seed):
    rng = np.random.default_rng(seed)
    table = teams(rng, int(rng.integers(2, 9)))
    data = np.array(list(table.values()))
    final, aggregated = ref.rank_six(data)
    got = {r["submission"]: r for r in kits21.rank_then_aggregate(table)}
    for i, t in enumerate(table):
        assert got[t]["rank"] == final[i] and got[t]["mean_rank"] == aggregated[i]
    ranks, mean_rank, mean_dice, mean_sd = ref.rank_participants(data)
    got = {r["team_name"]: r for r in kits21.rank_participants(table)}
    for i, t in enumerate(table):
        assert (got[t]["final_rank"], got[t]["mean_rank"], got[t]["mean_dice"], got[t]["mean_sd"]) == (
            ranks[i], mean_rank[i], mean_dice[i], mean_sd[i])


def test_rank_from_evaluations():
    ev = evaluation()
    perfect = {r: {"Dice": 1.0, "SD": 1.0} for r in kits21.KITS21_REGIONS}
    rows = kits21.KITS21.rank({"ours": ev, "perfect": perfect, "six": [0.0] * 6})      # ranking.py's
    assert [r["team_name"] for r in rows] == ["perfect", "ours", "six"]
    assert rows[1]["tumor_dice"] == ev.summary["tumor"]["Dice"]
    rows = kits21.KITS21_SIX_RANKS.rank({"ours": ev, "perfect": perfect, "six": [0.0] * 6})   # the README's
    assert [r["submission"] for r in rows] == ["perfect", "ours", "six"]
    assert rows[1]["Dice tumor"] == ev.summary["tumor"]["Dice"]


def test_kits19_real():
    "case_00061 (29x512x512, affine permuting axes): a shifted prediction with half the tumour called a cyst"
    path = real_sample("kits19", "case_00061", "segmentation.nii.gz", quiet=True)
    if path is None: pytest.skip(missing_sample("kits19", "case_00061", "segmentation.nii.gz"))
    from clinseg.nifti import read_nifti_label
    lab = read_nifti_label(path)
    truth, spacing = np.ascontiguousarray(lab.data), tuple(float(s) for s in lab.spacing)
    pred = np.roll(truth, (1, 2), axis=(0, 1))
    far = np.zeros(truth.shape, bool)
    far[:, :, int(np.median(np.nonzero(truth == 2)[2])):] = True
    pred[(pred == 2) & far] = 3
    got = as_array(kits21.score_case(pred, truth, spacing))
    np.testing.assert_allclose(got, ref.metrics_for_case(pred, truth, spacing), rtol=0, atol=1e-12)
    assert got[2, 0] < got[1, 0] < got[0, 0]


def test_fine_spacing_and_textbook():
    "A spacing fine enough for the exact-distance fallback, and the chapter's textbook version, on every scenario"
    for name, scenario, pred, truth, spacing in CASES[:20]:
        fine = tuple(x / 10 for x in spacing)
        want = ref.metrics_for_case(pred, truth, fine)
        np.testing.assert_allclose(as_array(kits21.score_case(pred, truth, fine)), want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(as_array(kits21.textbook_score_case(pred, truth, spacing)),
                                   ref.metrics_for_case(pred, truth, spacing), rtol=0, atol=1e-12)
