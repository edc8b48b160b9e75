"""clinseg's BraTS 2023 rows against a re-expression of the organisers' script (tests/reference/brats2023_metrics.py,
rachitsaluja/BraTS-2023-Metrics metrics.py @ 43c9052): every number of every row to 1e-12, on generated NIfTI cases of
every kind (empty truth, empty prediction, both empty, a lesion split, lesions merged by dilation, a lesion under the
threshold, anisotropic voxels, random ones) under every sub-challenge. The files are read by each side as it reads
them: clinseg through the folder protocol (the prediction put on the truth's grid through the affines), the
re-expression as the script does (`get_fdata`, the prediction's header zooms). `--slow` adds a larger set."""
import math

import numpy as np
import pytest

from clinseg.competitions.brats2023 import (CASE_KINDS, COLUMNS, PROTOCOLS, SUB_CHALLENGES, brats_case,
                                            score_rows, write_brats_cases)
from clinseg.folders import evaluate_folders, read_case
from clinseg.regions import LabelValueError
from tests.reference import brats2023_metrics as ref

KINDS = [k for k in CASE_KINDS if k != "bad_label"]


def compare(rows, want, what):
    assert [list(r) for r in rows] == [list(COLUMNS)] * 3, what
    for got, exp in zip(rows, want):
        assert got["Labels"] == exp["Labels"], what
        for c in COLUMNS[1:]:
            assert math.isclose(got[c], exp[c], rel_tol=0, abs_tol=1e-12), (what, got["Labels"], c, got[c], exp[c])


def check_folder(folder, cases):
    subs = list(SUB_CHALLENGES)
    for i, case in enumerate(cases):
        sub = subs[i % len(subs)]
        t, p = folder / "truth" / f"{case}.nii.gz", folder / "pred" / f"{case}.nii.gz"
        pred, truth, spacing = read_case(t, p)
        compare(score_rows(pred, truth, spacing, sub), ref.lesion_wise_results_files(p, t, f"BraTS-{sub}"),
                f"{case} ({cases[case]}, {sub})")


def test_rows_equal_the_reference(tmp_path):
    cases = write_brats_cases(tmp_path, KINDS, repeat=3, seed=1, shape=(32, 36, 28))
    assert len(cases) >= 30 and set(cases.values()) == set(KINDS)
    check_folder(tmp_path, cases)


def test_folder_protocol_and_voxel_threshold(tmp_path):
    cases = write_brats_cases(tmp_path, ["small", "anisotropic", "several"], seed=5, shape=(32, 36, 28))
    ev = evaluate_folders(tmp_path / "truth", tmp_path / "pred", PROTOCOLS[0])
    for case in cases:
        t, p = tmp_path / "truth" / f"{case}.nii.gz", tmp_path / "pred" / f"{case}.nii.gz"
        compare(ev.cases[case].rows, ref.lesion_wise_results_files(p, t, "BraTS-GLI"), case)
    # the README's rule (threshold in voxels) differs from the script's (mm³) only off 1 mm voxels
    pred, truth, _ = brats_case("typical", 2)
    assert score_rows(pred, truth, (1, 1, 1), size_unit="voxels") == score_rows(pred, truth, (1, 1, 1))


def test_label_outside_the_regions_is_an_error(tmp_path):
    pred, truth, _ = brats_case("bad_label", 2)
    assert (pred == 4).any()
    with pytest.raises(LabelValueError, match="label 4"):
        score_rows(pred, truth, (1.0, 1.0, 1.0))
    rows = ref.lesion_wise_results(pred, truth, (1.0, 1.0, 1.0), "BraTS-GLI")   # the script drops it silently
    assert rows[2]["Legacy_Dice"] == 0.0


def test_small_lesion_and_empty_cases():
    pred, truth, _ = brats_case("small", 3)
    et = score_rows(pred, truth, (1.0, 1.0, 1.0), "GLI")[2]
    assert (et["Num_FN"], et["Num_FP"]) == (0.0, 0.0)          # the 18-voxel lesion and the stray voxel: not counted
    assert score_rows(pred, truth, (1.0, 1.0, 1.0), "MET")[2]["Num_FN"] == 1.0   # MET's threshold is 2 mm³
    z = np.zeros((10, 10, 10), np.uint8)
    row = score_rows(z, z, (1, 1, 1))[0]
    assert [row[c] for c in COLUMNS[1:]] == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]


@pytest.mark.slow
def test_more_cases_equal_the_reference(tmp_path):
    cases = write_brats_cases(tmp_path, KINDS, repeat=8, seed=11, shape=(48, 52, 40))
    check_folder(tmp_path, cases)
