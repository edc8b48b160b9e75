"""Run-length files scored by panoptic quality (`score(..., metric="pq")`, `clinseg score --metric pq`): every row
equal to `nuclei_scores` on the label images, and to a re-expression of HoVer-Net's metrics
(tests/reference/hovernet_stats.py) where those do not fail"""
import csv, json, subprocess, sys

import numpy as np
import pytest

from clinseg.instance_labels import runs_to_labels
from clinseg.panoptic import nuclei_scores
from clinseg.samples import missing_sample, real_sample
from clinseg.submissions import get_competition, score, write_solution, write_submission
from tests.reference import hovernet_stats as hn

TOL = 1e-12
SHAPES = {"dsb2018": (40, 50), "sartorius": (520, 704), "airbus": (768, 768)}
IDS = {"dsb2018": lambda k: f"{k:064x}", "sartorius": lambda k: f"{k:012x}", "airbus": lambda k: f"{k:09x}.jpg"}


def _scenes(shape):
    "(truth, prediction) label images: touching, split, merged, shifted, empty on both sides, truth without prediction"
    def blank(): return np.zeros(shape, np.int32)
    out = []
    t, p = blank(), blank()                            # two touching nuclei and a third; the border between moves
    t[5:15, 5:12], t[5:15, 12:20], t[20:28, 30:40] = 1, 2, 3
    p[5:15, 5:13], p[5:15, 13:20], p[19:28, 30:41] = 7, 3, 5
    out.append((t, p))
    t, p = blank(), blank()                            # one nucleus split unevenly in two, one found exactly
    t[4:20, 4:24], t[25:32, 25:35] = 1, 2
    p[4:20, 4:18], p[4:20, 18:24], p[25:32, 25:35] = 1, 2, 3
    out.append((t, p))
    t, p = blank(), blank()                            # two touching nuclei merged in one, an invented one
    t[10:20, 10:18], t[10:20, 18:26] = 1, 2
    p[10:20, 10:26], p[30:36, 2:8] = 4, 9
    out.append((t, p))
    out.append((blank(), blank()))                     # empty: no nucleus, no prediction
    t = blank()
    t[3:9, 3:9], t[3:9, 9:14] = 1, 2
    out.append((t, blank()))                           # truth, no prediction
    t, p = blank(), blank()
    p[30:36, 40:46] = 1
    out.append((t, p))                                 # a prediction, no truth
    t, p = blank(), blank()                            # a nucleus shifted by two pixels (IoU 0.6), below 0.5 at 4
    t[10:20, 10:20], t[25:35, 10:20] = 1, 2
    p[10:20, 12:22], p[25:35, 14:24] = 1, 2
    out.append((t, p))
    return out


def _check_row(row, t, p, match_iou=0.5):
    "A table row equal to `nuclei_scores` on the label images; returns how many HoVer-Net figures it was compared with"
    s = nuclei_scores(t, p, match_iou, empty=1.0)
    mine = {"score": s.pq.pq, "SQ": s.pq.sq, "RQ": s.pq.rq, "TP": s.pq.tp, "FP": s.pq.fp, "FN": s.pq.fn,
            "AJI": s.aji, "AJI+": s.aji_plus, "Dice2": s.dice2}
    for k, v in mine.items(): assert abs(row[k] - v) <= TOL, (k, row[k], v)
    assert (row["true_objects"], row["predicted_objects"]) == (len(np.unique(t)) - 1, len(np.unique(p)) - 1)
    tt, pp = hn.remap(t), hn.remap(p)
    compared = 0
    try: (dq, sq, _), (pt, _, ut, up) = hn.fast_pq(tt, pp, match_iou)
    except ZeroDivisionError: assert row["TP"] + row["FP"] + row["FN"] == 0 and row["score"] == 1.0
    else:
        assert (row["TP"], row["FP"], row["FN"]) == (len(pt), len(up), len(ut))
        assert abs(row["RQ"] - dq) <= TOL and abs(row["SQ"] * row["TP"] / (row["TP"] + 1e-6) - sq) <= TOL
        compared += 1
    for key, fn in (("AJI", hn.fast_aji), ("AJI+", hn.fast_aji_plus), ("Dice2", hn.fast_dice_2)):
        try: ref = fn(tt, pp)
        except (ZeroDivisionError, ValueError): continue          # HoVer-Net has no value for this image
        if np.isnan(ref): continue                                # AJI+ of an image with nothing at all: 0/0
        assert abs(row[key] - ref) <= TOL, (key, row[key], ref)
        compared += 1
    return compared


@pytest.fixture(scope="module", params=["dsb2018", "sartorius", "airbus"])
def written(request, tmp_path_factory):
    "(competition, solution, submission, {id: (truth, prediction)}) written by clinseg's own writers"
    name = request.param
    tmp = tmp_path_factory.mktemp(name)
    images = {IDS[name](k): tp for k, tp in enumerate(_scenes(SHAPES[name]))}
    write_solution(tmp / "solution.csv", {i: t for i, (t, _) in images.items()}, name)
    write_submission(tmp / "submission.csv", {i: p for i, (_, p) in images.items()}, name)
    return name, tmp / "solution.csv", tmp / "submission.csv", images


@pytest.mark.parametrize("match_iou", [0.5, 0.3])
def test_rows_equal_nuclei_scores_and_hovernet(written, match_iou):
    name, sol, sub, images = written
    res = score(sol, sub, name, metric="pq", match_iou=match_iou)
    comp = get_competition(name)
    assert res.competition == name and len(res.table) == len(images)
    compared = sum(_check_row(r, *images[r[comp.id_column]], match_iou) for r in res.table)
    assert compared >= 3 * len(images)                            # most figures of most images were compared
    assert abs(res.score - np.mean([r["score"] for r in res.table])) <= TOL
    assert res.table[3]["score"] == 1.0 and res.table[4]["score"] == 0.0     # empty; truth without prediction
    nan = score(sol, sub, name, metric="pq", empty=float("nan"))
    assert np.isnan(nan.table[3]["AJI"]) and np.isnan(nan.score)


def test_pq_is_not_the_competitions_own(written):
    name, sol, sub, _ = written
    own, pq = score(sol, sub, name), score(sol, sub, name, metric="pq")
    assert "AJI" not in own.table.columns
    assert pq.table.columns[-9:-2] == ["RQ", "TP", "FP", "FN", "AJI", "AJI+", "Dice2"]
    with pytest.raises(TypeError, match="has no option thresholds: its options are empty, match_iou"):
        score(sol, sub, name, metric="pq", thresholds=[0.5])
    with pytest.raises(ValueError, match="unknown metric 'aji': the choices are"):
        score(sol, sub, name, metric="aji")


def test_per_mask_competitions_refused():
    from clinseg.scoring import with_metric
    for name in ("hw2", "siim_acr", "uw_madison", "neopolyp", "hubmap"):
        with pytest.raises(ValueError, match=f"^{name} scores one mask per .*, so PQ has no objects to match") as e:
            with_metric(get_competition(name), "pq")
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="^wad2018 is scored over the whole set by its own scorer"):
        with_metric(get_competition("wad2018"), "pq")


def test_overlapping_truth_refused_naming_the_image(tmp_path):
    "A Sartorius solution may hold overlapping cells: PQ refuses that image in one line naming it"
    from clinseg.competitions.sartorius import write_sartorius_solution
    a, b = np.zeros(SHAPES["sartorius"], bool), np.zeros(SHAPES["sartorius"], bool)
    a[10:20, 10:20], b[15:25, 15:25] = True, True
    i = IDS["sartorius"](7)
    write_sartorius_solution(tmp_path / "solution.csv", {i: [a, b]})
    write_submission(tmp_path / "submission.csv", {i: a.astype(np.int32)}, "sartorius")
    assert score(tmp_path / "solution.csv", tmp_path / "submission.csv", "sartorius").table[0]["score"] < 1
    with pytest.raises(ValueError, match=f"^sartorius: image {i}: truth objects 0 and 1 overlap") as e:
        score(tmp_path / "solution.csv", tmp_path / "submission.csv", "sartorius", metric="pq")
    assert "\n" not in str(e.value)


# --- the real DSB 2018 stage-1 solution --------------------------------------------------------------------------

def _real(*parts):
    "The real sample `parts` under CLINSEG_DATA; the test is skipped without it (and fails in CI, where it must be)"
    path = real_sample(*parts, quiet=True)
    if path is None: pytest.skip(missing_sample(*parts))
    return path


def _labels(rows, shape):
    "The label image of DSB rows (1-based starts, column-major), decoded by `runs_to_labels`"
    runs = []
    for r in rows:
        v = np.array(r.split(), np.int64).reshape(-1, 2)
        runs.append((v[:, 0] - 1, v[:, 1]))
    return runs_to_labels(runs, shape, order="F")


def test_real_dsb_solution(tmp_path):
    src = _real("dsb2018", "stage1_solution.csv")
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    ids = list(dict.fromkeys(r["ImageId"] for r in rows))[:20]
    rows = [r for r in rows if r["ImageId"] in ids]
    shape = {r["ImageId"]: (int(r["Height"]), int(r["Width"])) for r in rows}
    with open(tmp_path / "solution.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    same = score(tmp_path / "solution.csv", tmp_path / "solution.csv", "dsb2018", metric="pq")
    assert same.score == 1.0 and len(same.table) == 20
    assert all(r[k] == 1.0 for r in same.table for k in ("SQ", "RQ", "AJI", "AJI+", "Dice2"))
    # perturbed: every second image left out, every third keeps every other nucleus, one takes another's nuclei
    of = {i: [r["EncodedPixels"] for r in rows if r["ImageId"] == i] for i in ids}
    twin = next(((a, b) for a in ids[1::2] for b in ids if b != a and shape[a] == shape[b]), None)
    sub = {i: ([] if k % 2 else v[::2] if k % 3 == 0 else v) for k, (i, v) in enumerate(of.items())}
    if twin is not None: sub[twin[0]] = of[twin[1]]
    with open(tmp_path / "submission.csv", "w", newline="") as f:
        f.write("ImageId,EncodedPixels\n" + "".join(f"{i},{e}\n" for i, v in sub.items() for e in v))
    res = score(tmp_path / "solution.csv", tmp_path / "submission.csv", "dsb2018", metric="pq")
    assert len(res.table) == 20 and 0 < res.score < 1
    for r in res.table:
        i = r["ImageId"]
        _check_row(r, _labels(of[i], shape[i]), _labels(sub[i], shape[i]))
    by_id = {r["ImageId"]: r for r in res.table}
    assert all(by_id[i]["TP"] == 0 and by_id[i]["score"] == 0.0 for i in ids[1::2] if twin is None or i != twin[0])
    assert [p.level for p in res.report.problems] == ["warning"] * len(res.report.problems)   # images without rows


# --- the command line ----------------------------------------------------------------------------------------------

def clinseg(*args):
    "Run `python -m clinseg.cli *args`; returns the CompletedProcess (text)"
    return subprocess.run([sys.executable, "-m", "clinseg.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_cli_metric_pq(tmp_path):
    images = {IDS["dsb2018"](k): tp for k, tp in enumerate(_scenes(SHAPES["dsb2018"]))}
    sol, sub, table = tmp_path / "solution.csv", tmp_path / "submission.csv", tmp_path / "per_image.csv"
    write_solution(sol, {i: t for i, (t, _) in images.items()}, "dsb2018")
    write_submission(sub, {i: p for i, (_, p) in images.items()}, "dsb2018")
    want = score(sol, sub, "dsb2018", metric="pq")
    r = clinseg("score", "-c", "dsb2018", "--metric", "pq", sol, sub, "--json", "--per-image", table, "--quiet")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["score"] == want.score and out["options"] == {"match_iou": 0.5, "empty": 1.0}
    with open(table, newline="") as f:
        got = list(csv.DictReader(f))
    assert [g["ImageId"] for g in got] == list(images) and list(got[0])[:4] == ["ImageId", "Usage", "score", "SQ"]
    for g, w in zip(got, want.table):
        assert all(abs(float(g[k]) - w[k]) <= TOL for k in ("score", "SQ", "RQ", "AJI", "AJI+", "Dice2", "TP"))
    r = clinseg("score", "-c", "dsb2018", "--metric", "pq", "--match-iou", "0.3", sol, sub)
    low = score(sol, sub, "dsb2018", metric="pq", match_iou=0.3)
    assert (r.returncode, r.stdout.splitlines()[0]) == (0, f"score {low.score:.6f}") and low.score != want.score
    for name, item in (("hw2", "volume"), ("siim_acr", "image")):
        r = clinseg("score", "-c", name, "--metric", "pq", sol, sub)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"clinseg: error: {name} scores one mask per {item}, so "
                                                      "PQ has no objects to match: metric='pq' needs a competition "
                                                      "that lists objects per image\n")
    r = clinseg("score", "-c", "dsb2018", "--match-iou", "0.3", sol, sub)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "clinseg: error: --match-iou is used only with --metric pq\n")
