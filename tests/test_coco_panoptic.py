"""clinseg's COCO panoptic quality (clinseg.coco_panoptic) against a re-expression of panopticapi's pq_compute
(tests/reference/panopticapi_pq.py) on generated COCO panoptic files (things and stuff, crowds, VOID, predictions
mostly on VOID, IoU exactly 0.5, empty images, a category absent): every number to 1e-12, both engines; and one
clear line for each kind of bad input. Both engines of `panoptic_pq` and the streaming `coco_panoptic_pq` are
compared. `tools/check_panopticapi_reference.py` runs panopticapi's own code instead."""
import json
import math

import numpy as np
import pytest

from clinseg.coco_panoptic import (PanopticSet, coco_panoptic_pq, panoptic_pq, read_coco_panoptic, synthetic_panoptic,
                                   write_coco_panoptic)
from clinseg.imageio import ImageError
from tests.reference import panopticapi_pq as ref

NAMES = [("All", None), ("Things", True), ("Stuff", False)]


def write_pair(folder, gt, pred):
    "Write truth and prediction as COCO panoptic files under `folder`; their JSON paths"
    write_coco_panoptic(folder / "gt.json", folder / "gt", gt)
    write_coco_panoptic(folder / "pred.json", folder / "pred", pred)
    return str(folder / "gt.json"), str(folder / "pred.json")


def compare(gt_json, pred_json, eps=1e-12):
    "Assert clinseg (both engines, read from the files) equals the re-expression; the largest difference"
    stats, cats = ref.pq_stats(gt_json, pred_json)
    gt = read_coco_panoptic(gt_json)
    pred = read_coco_panoptic(pred_json, categories=gt.categories)
    worst = 0.0
    for engine in ("fast", "textbook", "files"):
        ours = coco_panoptic_pq(gt_json, pred_json) if engine == "files" else panoptic_pq(gt, pred, engine=engine)
        for (name, isthing), mine in zip(NAMES, (ours[:4], ours.things, ours.stuff)):
            try:
                theirs, per = ref.average(stats, cats, isthing)
            except ZeroDivisionError:              # panopticapi divides by zero for a mean over no category
                assert mine[3] == 0 and all(math.isnan(v) for v in mine[:3]), (name, mine)
                continue
            assert mine[3] == theirs["n"], (name, mine, theirs)
            for k, v in zip(("pq", "sq", "rq"), mine[:3]):
                worst = max(worst, abs(v - theirs[k]))
                assert abs(v - theirs[k]) <= eps, (engine, name, k, v, theirs[k])
            if isthing is None:
                for c, row in per.items():
                    mine_c = ours.per_category.get(c)
                    if mine_c is None:
                        assert stats.get(c, [0, 0, 0, 0])[1:] == [0, 0, 0] and row == {"pq": 0.0, "sq": 0.0, "rq": 0.0}
                        continue
                    assert [mine_c[k] for k in ("tp", "fp", "fn")] == stats[c][1:], (c, mine_c, stats[c])
                    for k in ("pq", "sq", "rq"):
                        assert abs(mine_c[k] - row[k]) <= eps, (engine, c, k, mine_c[k], row[k])
    return worst


def test_sets_match_panopticapi(tmp_path):
    "6 generated sets of 13 image pairs (78 pairs), each scored whole"
    for seed in range(6):
        gt, pred = synthetic_panoptic(seed, 8)
        compare(*write_pair(tmp_path / f"s{seed}", gt, pred))


def test_single_images_match_panopticapi(tmp_path):
    "Each image pair of one set scored on its own: empty images, IoU one half, stuff-only or thing-only images"
    gt, pred = synthetic_panoptic(11, 12)
    for iid in gt.images:
        one = [PanopticSet(s.categories, {iid: s.images[iid]}) for s in (gt, pred)]
        compare(*write_pair(tmp_path / f"i{iid}", *one))


def test_generated_sets_cover_the_rules():
    "The generated sets hold two crowds of one category in an image, predictions mostly on VOID, an absent category"
    two_crowds = mostly_void = 0
    for seed in range(6):
        gt, pred = synthetic_panoptic(seed, 8)
        for iid, g in gt.images.items():
            crowd_cats = [s["category_id"] for s in g.segments if s["iscrowd"] == 1]
            two_crowds += len(crowd_cats) != len(set(crowd_cats))
            p = pred.images[iid]
            for k in range(1, len(p.segments) + 1):
                mostly_void += 2 * np.sum((p.index == k) & (g.index == 0)) > p.areas[k - 1]
        assert all(s["category_id"] != 12 for im in gt.images.values() for s in im.segments)
    assert two_crowds > 0 and mostly_void > 0, (two_crowds, mostly_void)


@pytest.mark.slow
def test_many_large_sets_match_panopticapi(tmp_path):
    "30 sets of 25 larger image pairs (64x96)"
    for seed in range(100, 130):
        gt, pred = synthetic_panoptic(seed, 20, shape=(64, 96))
        compare(*write_pair(tmp_path / f"s{seed}", gt, pred))


def edit(path, change):
    "Rewrite a JSON file after `change(data)`"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def one_line(call, *parts):
    "`call` raises PanopticError (or ImageError) with one line holding every part"
    with pytest.raises(ImageError) as e:   # PanopticError is an ImageError, as is a missing PNG
        call()
    message = str(e.value)
    assert "\n" not in message and all(p in message for p in parts), message


def test_bad_input_is_one_line(tmp_path):
    gt, pred = synthetic_panoptic(3, 2)
    gt_json, pred_json = (tmp_path / "gt.json", tmp_path / "pred.json")
    write_pair(tmp_path, gt, pred)
    seg = gt.images[1].segments[0]
    # a JSON segment the PNG does not have
    edit(gt_json, lambda d: d["annotations"][0]["segments_info"].append(dict(seg, id=12345)))
    one_line(lambda: read_coco_panoptic(gt_json), "000001.png (image 1)", "names segment 12345")
    # a PNG segment the JSON does not name
    edit(gt_json, lambda d: d["annotations"][0]["segments_info"].pop(0) and d["annotations"][0]["segments_info"].pop())
    one_line(lambda: read_coco_panoptic(gt_json), "000001.png (image 1)", "the PNG has segment")
    write_pair(tmp_path, gt, pred)
    # an unknown category
    edit(pred_json, lambda d: d["annotations"][1]["segments_info"][0].update(category_id=77))
    one_line(lambda: read_coco_panoptic(pred_json, categories=gt.categories), "image 2", "unknown category_id 77")
    # an image listed twice
    write_pair(tmp_path, gt, pred)
    edit(pred_json, lambda d: d["annotations"].append(d["annotations"][0]))
    one_line(lambda: read_coco_panoptic(pred_json), "pred.json", "image 1 is listed twice")
    # a missing PNG
    write_pair(tmp_path, gt, pred)
    (tmp_path / "pred" / "000002.png").unlink()
    one_line(lambda: read_coco_panoptic(pred_json), "000002.png: missing")
    # no prediction for an image; a true area that is not the PNG's
    write_pair(tmp_path, gt, pred)
    edit(pred_json, lambda d: d["annotations"].pop())
    g = read_coco_panoptic(gt_json)
    one_line(lambda: panoptic_pq(g, read_coco_panoptic(pred_json)), f"no prediction for image {max(gt.images)}")
    write_pair(tmp_path, gt, pred)
    edit(gt_json, lambda d: d["annotations"][0]["segments_info"][0].update(area=1))
    one_line(lambda: panoptic_pq(read_coco_panoptic(gt_json), pred), "image 1", "area 1 in the JSON")
