"CoNIC 2022 and PanNuke modules against test-only re-expressions of the organisers' metrics, and their bad-input lines"
import numpy as np
import pytest
from clinseg.competitions import conic2022 as conic
from tests.reference import conic_stats


@pytest.fixture(scope="module")
def patches():
    _, labels = conic.conic_patches(n=4, seed=3, nuclei=25)
    return labels.astype(np.int64), conic.baseline_prediction(labels, seed=5)


def test_mpq_plus_and_pq_equal_the_script(patches):
    truth, pred = patches
    ref = conic_stats.seg_class(truth, pred)
    ours = conic.score_conic(truth, pred)
    assert abs(ours.mpq_plus - ref["multi_pq+"]) < 1e-12
    assert abs(ours.pq - ref["pq"]) < 1e-12
    assert np.abs(np.array(list(ours.per_class_pq.values())) - np.array(ref["per_class"])).max() < 1e-12
    assert (ours.counts == ref["total"]).all()


def test_per_patch_info_equals_the_script(patches):
    truth, pred = patches
    m = conic.mpq_plus(truth, pred)
    for i in range(len(truth)):
        assert np.abs(m.counts[i] - np.array(conic_stats.multi_pq_info(truth[i], pred[i]), float)).max() < 1e-12


def test_edge_cases_equal_the_script(patches):
    truth, pred = patches
    empty = np.zeros_like(truth[:1])
    for t, p in [(empty, empty), (truth[:1], empty), (empty, pred[:1]), (truth[:1], truth[:1])]:
        ref = conic_stats.seg_class(t, p)
        ours = conic.score_conic(t, p)
        assert abs(ours.mpq_plus - ref["multi_pq+"]) < 1e-12 and abs(ours.pq - ref["pq"]) < 1e-12


def test_r2_equals_the_script(patches):
    truth, pred = patches
    t, p = conic.patch_counts(truth), conic.patch_counts(pred)
    table = {name: col.tolist() for name, col in zip(conic.CLASSES, t.T)}
    ptable = {name: col.tolist() for name, col in zip(conic.CLASSES, p.T)}
    assert abs(conic.multi_r2(t, p) - conic_stats.multi_r2(table, ptable)) < 1e-12
    const = np.ones_like(t)
    assert conic.multi_r2(const, const) == conic_stats.multi_r2(
        {c: [1] * len(t) for c in conic.CLASSES}, {c: [1] * len(t) for c in conic.CLASSES}) == 1.0


def test_counts_file_round_trip(tmp_path, patches):
    truth, _ = patches
    root = conic.write_conic_dataset(tmp_path / "c", n=2, seed=1)
    labels = conic.read_labels(root / "labels.npy")
    assert (conic.read_counts(root / "counts.csv") == conic.patch_counts(labels)).all()
    assert np.load(root / "labels.npy").dtype == np.uint16 and np.load(root / "images.npy").shape == (2, 256, 256, 3)


def _one_line(fn, *words):
    with pytest.raises(ValueError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_bad_labels(tmp_path, patches):
    truth, pred = patches
    _one_line(lambda: conic.check_labels(pred.astype(float), "p.npy"), "p.npy", "dtype float64")
    _one_line(lambda: conic.check_labels(pred[..., :1], "p.npy"), "shape (4, 256, 256, 1)")
    _one_line(lambda: conic.check_labels(np.moveaxis(pred, -1, 1), "p.npy"), "shape (4, 2, 256, 256)")
    neg = pred.copy()
    neg[2, 0, 0, 0] = -4
    _one_line(lambda: conic.check_labels(neg, "p.npy"), "patch 2", "negative instance id -4")
    cls = pred.copy()
    cls[1, 5, 5, 1] = 7
    _one_line(lambda: conic.check_labels(cls, "p.npy"), "patch 1", "class id 7 outside 0..6")
    two = pred.copy()
    k = two[3, ..., 0].max()
    ys, xs = np.nonzero(two[3, ..., 0] == k)
    two[3, ys[0], xs[0], 1] = two[3, ys[0], xs[0], 1] % 6 + 1
    _one_line(lambda: conic.check_labels(two, "p.npy"), "patch 3", f"nucleus {k} has two class values")
    np.save(tmp_path / "f.npy", pred.astype(np.float32))
    _one_line(lambda: conic.score_conic(truth, tmp_path / "f.npy"), "f.npy", "dtype float32")
    (tmp_path / "junk.npy").write_text("not numpy")
    _one_line(lambda: conic.read_labels(tmp_path / "junk.npy"), "junk.npy", "not a .npy array")
    _one_line(lambda: conic.read_labels(tmp_path / "none.npy"), "none.npy", "no such file")
    _one_line(lambda: conic.score_conic(truth, pred[:2]), "4 true patches but 2 predicted")


def test_bad_counts(tmp_path):
    (tmp_path / "a.csv").write_text("neutrophil,epithelial,lymphocyte,plasma,eosinophil\n1,2,3,4,5\n")
    _one_line(lambda: conic.read_counts(tmp_path / "a.csv"), "a.csv", "missing column 'connective'")
    (tmp_path / "b.csv").write_text(",".join(conic.CLASSES) + "\n1,2,x,4,5,6\n")
    _one_line(lambda: conic.read_counts(tmp_path / "b.csv"), "b.csv", "line 2", "'lymphocyte'", "'x'")
    (tmp_path / "c.csv").write_text(",".join(reversed(conic.CLASSES)) + "\n6,5,4,3,2,1\n")
    assert conic.read_counts(tmp_path / "c.csv").tolist() == [[1, 2, 3, 4, 5, 6]]


# ---------------------------------------------------------------- PanNuke
from clinseg.competitions import pannuke  # noqa: E402
from tests.reference import pannuke_metrics  # noqa: E402


@pytest.fixture(scope="module")
def pannuke_set():
    _, masks, _ = pannuke.pannuke_dataset(n=5, seed=2)
    masks[4] = 0                                      # an image with no nucleus: NaN in bPQ and mPQ
    masks[4, ..., 5] = 1
    types = np.array(["Breast", "Colon", "Breast", "Lung", "Lung"])
    return masks, pannuke.pannuke_baseline(masks, seed=4), types


def test_pannuke_equals_the_script(pannuke_set):
    truth, pred, types = pannuke_set
    ref = pannuke_metrics.pannuke_stats(truth, pred, types)
    ours = pannuke.pannuke_scores(truth, pred, types)
    assert abs(ours.mpq - ref["mPQ"]) < 1e-12 and abs(ours.bpq - ref["bPQ"]) < 1e-12
    assert np.abs(np.array(list(ours.per_class.values())) - np.array(ref["per_class"])).max() < 1e-12
    assert ours.per_tissue.keys() == ref["per_tissue"].keys()
    for k, (m, b) in ours.per_tissue.items():
        assert abs(m - ref["per_tissue"][k][0]) < 1e-12 and abs(b - ref["per_tissue"][k][1]) < 1e-12


def test_pannuke_perfect_and_empty(pannuke_set):
    truth, _, types = pannuke_set
    for pred in (truth, np.zeros_like(truth)):
        ref = pannuke_metrics.pannuke_stats(truth, pred, types)
        ours = pannuke.pannuke_scores(truth, pred, types)
        assert abs(ours.mpq - ref["mPQ"]) < 1e-12 and abs(ours.bpq - ref["bPQ"]) < 1e-12


def test_pannuke_files_and_mat(tmp_path, pannuke_set):
    from scipy.io import savemat
    truth, pred, types = pannuke_set
    root = pannuke.write_pannuke_dataset(tmp_path / "p", n=3, seed=1)
    assert np.load(root / "masks.npy").dtype == np.float64 and np.load(root / "masks.npy").shape == (3, 256, 256, 6)
    assert len(pannuke.read_types(root / "types.npy", 3)) == 3
    inst, cls = pannuke.to_instance_maps(pred[:1])
    types_of = [int(cls[0][inst[0] == k][0]) for k in range(1, int(inst.max()) + 1)]
    savemat(tmp_path / "a.mat", {"inst_map": inst[0].astype(np.int32), "inst_type": np.array(types_of)[:, None]})
    assert (pannuke.read_hovernet_mat(tmp_path / "a.mat")[..., :5] == pannuke.to_masks(inst, cls)[0, ..., :5]).all()
    savemat(tmp_path / "b.mat", {"inst_map": inst[0].astype(np.int32), "inst_type": np.array(types_of[:-1])[:, None]})
    _one_line(lambda: pannuke.read_hovernet_mat(tmp_path / "b.mat"), "b.mat", f"instance id {int(inst.max())} has no")
    savemat(tmp_path / "c.mat", {"inst_map": inst[0].astype(np.int32)})
    _one_line(lambda: pannuke.read_hovernet_mat(tmp_path / "c.mat"), "c.mat", "no 'inst_type'")


def test_pannuke_bad_input(tmp_path, pannuke_set):
    truth, pred, types = pannuke_set
    _one_line(lambda: pannuke.check_masks(pred[..., :3], "p.npy"), "p.npy", "shape (5, 256, 256, 3)")
    neg = pred.copy()
    neg[1, 3, 3, 2] = -1
    _one_line(lambda: pannuke.check_masks(neg, "p.npy"), "image 1", "negative instance id -1", "connective")
    frac = pred.copy()
    frac[2, 3, 3, 0] = 1.5
    _one_line(lambda: pannuke.check_masks(frac, "p.npy"), "image 2", "1.5 is not an instance id")
    both = pred.copy()
    both[3, 7, 9, 1] = both[3, 7, 9, 3] = 2
    _one_line(lambda: pannuke.check_masks(both, "p.npy"), "image 3", "pixel (7, 9) is in two class channels")
    np.save(tmp_path / "t.npy", np.array(["Breast", "Brain"]))
    _one_line(lambda: pannuke.read_types(tmp_path / "t.npy"), "t.npy", "image 1", "'Brain'")
    _one_line(lambda: pannuke.pannuke_scores(truth, pred[:2], types), "5 true images but 2 predicted")
