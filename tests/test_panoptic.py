"""clinseg.panoptic against a re-expression of HoVer-Net's metrics (tests/reference/hovernet_stats.py), to 1e-12"""
import numpy as np
import pytest

from clinseg.iou_sweep import synthetic_nuclei, synthetic_prediction
from clinseg.panoptic import aji, aji_plus, dice2, edited_prediction, nuclei_scores, panoptic_quality
from clinseg.samples import missing_sample, real_sample
from tests.reference import hovernet_stats as hn

TOL = 1e-12


def _merged(labels, rng):
    "A prediction that merges two touching nuclei (or two random ones) and keeps the rest"
    pred = labels.copy()
    ids = np.unique(labels)[1:]
    if len(ids) < 2: return pred
    a = rng.choice(ids)
    right = np.roll(labels == a, 1, axis=1) | np.roll(labels == a, 1, axis=0)
    near = np.unique(labels[right & (labels != a) & (labels > 0)])
    b = near[0] if len(near) else rng.choice(ids[ids != a])
    pred[pred == b] = a
    return pred


def _boxes_3d(rng, shape=(8, 20, 20), n=6):
    "A 3-D label volume of touching boxes"
    out = np.zeros(shape, np.int32)
    for k in range(1, n + 1):
        z, y, x = (rng.integers(0, s - 3) for s in shape)
        d, h, w = rng.integers(2, 6, 3)
        out[z:z + d, y:y + h, x:x + w] = k
    return out


def _scenes(n_random=40, shape=(64, 64), n_nuclei=15):
    "(name, truth, pred) scenes: touching, shifted, split, merged, empty sides, IoU exactly 0.5, 3-D"
    rng = np.random.default_rng(7)
    half = np.zeros((4, 8), np.int32)
    half[:2, :4] = 1
    out = [("iou exactly 0.5", half, np.where(half > 0, np.arange(8)[None, :] % 4 // 2 + 1, 0) * (half > 0)),
           ("iou exactly 0.5 (the left half)", half, np.pad(half[:, :2], ((0, 0), (0, 6))))]
    for k in range(n_random):
        lab = synthetic_nuclei(shape, n=n_nuclei, seed=k, noise=0)[1]
        kind = k % 4
        if kind == 0: pred = synthetic_prediction(lab, seed=k, shift=int(rng.integers(1, 6)))
        elif kind == 1: pred = edited_prediction(lab, int(rng.integers(1, lab.max() + 1)), 1, -1, True)
        elif kind == 2: pred = _merged(lab, rng)
        else: pred = synthetic_prediction(_merged(lab, rng), seed=k, shift=2, miss=0.3, extra=0.3)
        out.append((f"2-D {kind} seed {k}", lab, pred.astype([np.int32, np.uint16, np.int64, np.uint8][k % 4])))
    lab = synthetic_nuclei(shape, n=n_nuclei, seed=99, noise=0)[1]
    out += [("empty truth", np.zeros_like(lab), lab), ("empty prediction", lab, np.zeros_like(lab)),
            ("both empty", np.zeros_like(lab), np.zeros_like(lab))]
    for k in range(6):
        t3 = _boxes_3d(rng)
        p3 = np.roll(t3, int(rng.integers(0, 2)), axis=int(rng.integers(0, 3)))
        out.append((f"3-D seed {k}", t3, p3))
    return out


def _pq_close(name, t, p, m):
    "clinseg's PQ vs the re-expression's on contiguous ids (HoVer-Net needs them)"
    tt, pp = hn.remap(t), hn.remap(p)
    q, f = panoptic_quality(t, p, m), nuclei_scores(t, p, m).pq
    assert q == f, name
    try:
        (dq, sq, pq), (pt, pp_, ut, up) = hn.fast_pq(tt, pp, m)
    except ZeroDivisionError:                          # no object at all: clinseg says `empty` (NaN)
        assert q.tp + q.fp + q.fn == 0 and np.isnan(q.pq), name
        return
    assert (q.tp, q.fp, q.fn) == (len(pt), len(up), len(ut)), name
    assert abs(q.dq - dq) <= TOL and abs(q.iou_sum / (q.tp + 1e-6) - sq) <= TOL, name
    assert abs(q.rq * q.iou_sum / (q.tp + 1e-6) - pq) <= TOL and abs(q.pq - pq) <= 1e-6, name
    remapped = panoptic_quality(tt, pp, m)
    assert sorted((a, b) for a, b, _ in remapped.pairs) == sorted(zip(map(int, pt), map(int, pp_))), name


def _jaccards_close(name, t, p):
    tt, pp = hn.remap(t), hn.remap(p)
    f = nuclei_scores(t, p)
    mine = {"aji": aji(t, p), "aji_plus": aji_plus(t, p), "dice2": dice2(t, p)}
    for key, fn in (("aji", hn.fast_aji), ("aji_plus", hn.fast_aji_plus), ("dice2", hn.fast_dice_2)):
        assert mine[key] == getattr(f, key) or (np.isnan(mine[key]) and np.isnan(getattr(f, key))), (name, key)
        try:
            ref = fn(tt, pp)
        except (ZeroDivisionError, ValueError):        # HoVer-Net has no value here; clinseg's is documented
            want = np.nan if not (t.any() or p.any()) else 0.0
            assert mine[key] == want or (np.isnan(want) and np.isnan(mine[key])), (name, key, mine[key])
            continue
        if np.isnan(ref):
            assert np.isnan(mine[key]), (name, key)
        else:
            assert abs(mine[key] - ref) <= TOL, (name, key, mine[key], ref)


SCENES = _scenes()


def test_scene_count():
    assert len(SCENES) >= 50


@pytest.mark.parametrize("m", [0.5, 0.3, 0.75, 0.1])
def test_pq_matches_reference(m):
    for name, t, p in SCENES: _pq_close(name, t, p, m)


def test_jaccards_match_reference():
    for name, t, p in SCENES: _jaccards_close(name, t, p)


def test_iou_exactly_half_is_not_a_match():
    half = np.zeros((2, 4), np.int32)
    half[:, :2] = 1
    pred = np.zeros_like(half)
    pred[:, 1:3] = 1                                   # 2 shared of 6: IoU 1/3
    pred2 = np.zeros_like(half)
    pred2[0, :2] = 1                                   # 2 of 4: IoU exactly 0.5
    assert panoptic_quality(half, pred2).tp == 0 and panoptic_quality(half, pred2, 0.49).tp == 1
    assert panoptic_quality(half, pred, 0.3).tp == 1 and panoptic_quality(half, pred).tp == 0


def test_bad_input_one_line():
    t = np.zeros((4, 4), np.int32)
    for bad, words in [(np.zeros((4, 4), float), "integers"), (np.full((4, 4), -1), "negative"),
                       (np.zeros((4, 5), np.int32), "different shapes"), (np.zeros((4, 4), bool), "boolean")]:
        for f in (panoptic_quality, aji, aji_plus, dice2, nuclei_scores):
            with pytest.raises((TypeError, ValueError), match=words) as e:
                f(t, bad)
            assert "\n" not in str(e.value)


@pytest.mark.slow
def test_large_scenes_match_reference():
    for k in range(12):
        lab = synthetic_nuclei((256, 256), n=60, seed=100 + k, noise=0)[1]
        pred = synthetic_prediction(lab, seed=k, shift=3)
        for m in (0.5, 0.3): _pq_close(f"256 seed {k}", lab, pred, m)
        _jaccards_close(f"256 seed {k}", lab, pred)


def _dsb_labels(folder):
    from PIL import Image
    masks = sorted((folder / "masks").glob("*.png"))
    lab = None
    for k, m in enumerate(masks, 1):
        a = np.asarray(Image.open(m)) > 0
        lab = np.zeros(a.shape, np.int32) if lab is None else lab
        lab[a & (lab == 0)] = k
    return lab


def test_real_dsb2018_labels():
    root = real_sample("dsb2018", "stage1_train_original", quiet=True)
    if root is None: pytest.skip(missing_sample("dsb2018", "stage1_train_original"))
    folders = sorted(p for p in root.iterdir() if (p / "masks").is_dir())
    assert folders
    for k, folder in enumerate(folders):
        lab = _dsb_labels(folder)
        for shift in (1, 3):
            pred = synthetic_prediction(lab, seed=k, shift=shift)
            for m in (0.5, 0.3): _pq_close(folder.name, lab, pred, m)
            _jaccards_close(folder.name, lab, pred)


def _classified_scenes(n=8, k=3, seed=3):
    "(true inst, true classes, pred inst, pred classes, tissue) of n 64x64 images with k classes of nuclei"
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        t = synthetic_nuclei((64, 64), n=14, seed=200 + i, noise=0)[1]
        p = synthetic_prediction(t, seed=i, shift=2)
        t_of = rng.integers(1, k + 1, t.max() + 1)
        p_of = np.zeros(p.max() + 1, np.int64)
        for j in np.unique(p)[1:]:
            under = t[(p == j) & (t > 0)]
            p_of[j] = t_of[np.bincount(under).argmax()] if len(under) else rng.integers(1, k + 1)
            if rng.random() < 0.2: p_of[j] = rng.integers(1, k + 1)
        out.append((t, np.where(t > 0, t_of[t], 0), p, np.where(p > 0, p_of[p], 0), "ab"[i % 2]))
    return out


def test_multi_pq_conic_matches_reference():
    from clinseg.panoptic import multi_pq
    scenes = _classified_scenes()
    ti, tc, pi, pc, _ = zip(*scenes)
    mine = multi_pq(ti, pi, tc, pc, 3, "conic")
    want, total = hn.conic_mpq_plus([np.stack(x, -1) for x in zip(ti, tc)], [np.stack(x, -1) for x in zip(pi, pc)], 3)
    pooled = mine.counts.sum(axis=0)
    assert (pooled[:, :3] == total[:, :3]).all() and np.abs(pooled[:, 3] - total[:, 3]).max() <= TOL
    tp, fp, fn, iou = pooled.T
    conic_from_mine = np.mean(tp / ((tp + 0.5 * fp + 0.5 * fn) + 1e-6) * (iou / (tp + 1e-6)))
    assert abs(conic_from_mine - want) <= TOL and abs(mine.score - want) <= 1e-5


def test_multi_pq_pannuke_matches_reference():
    from clinseg.panoptic import multi_pq
    scenes = _classified_scenes()
    ti, tc, pi, pc, tissue = zip(*scenes)
    mine = multi_pq(ti, pi, tc, pc, 3, "pannuke", tissues=tissue)
    chans = [np.stack([x * (c == j) for j in (1, 2, 3)], -1) for x, c in zip(ti, tc)]
    pchans = [np.stack([x * (c == j) for j in (1, 2, 3)], -1) for x, c in zip(pi, pc)]
    want = hn.pannuke_mpq(np.stack(chans), np.stack(pchans), tissue, 3)
    assert abs(mine.score - want) <= 1e-6, (mine.score, want)   # HoVer-Net's SQ divides by TP + 1e-6
