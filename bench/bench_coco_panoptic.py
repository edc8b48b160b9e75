"""Speed of clinseg's COCO panoptic quality against panopticapi's `pq_compute`, in paired rounds.

    python bench/bench_coco_panoptic.py [--quick] [--rounds N] [--images N] [--panopticapi DIR]

The inputs: generated COCO panoptic files (clinseg.coco_panoptic.synthetic_panoptic: things, stuff, crowds, VOID; the
COCO val2017 size of 480 x 640 pixels, 40 image pairs, 12 with --quick), written to a temporary folder as PNGs + JSON.
Both sides do the whole job from the files: read both JSONs, decode every PNG, score.
- clinseg: `coco_panoptic_pq` (streaming from the files, one pair in memory at a time); and `read_coco_panoptic` twice
  (every segment checked against its PNG) then `panoptic_pq` (engine "fast"). numba compiles two loops when installed
  (CLINSEG_NO_NUMBA=1: numpy only).
- the peer: with `--panopticapi DIR` (a folder holding panopticapi/evaluation.py, e.g. the scratch copy that
  tools/check_panopticapi_reference.py writes to /tmp/wH3), panopticapi's own `pq_compute_single_core` on one worker
  (its multiprocessing left out: one core against one core), then `PQStat.pq_average` for All / Things / Stuff, as
  `pq_compute` does; without it, the test-only re-expression tests/reference/panopticapi_pq.py (one process).
Every number is checked equal (1e-12) before timing. The floor is decoding every PNG once (Pillow to numpy), which
both sides must do: the peer's time over it bounds any ratio. Below that floor is the zlib inflation alone of the
PNGs' image data (stdlib zlib, no filtering, no array): no PNG reader built on zlib can take less. Each round times
both once, the order alternating; the ratio (peer time / clinseg time) is per round, reported as the median with the
range (min-max), the times as medians.
"""
import argparse, contextlib, importlib, io, json, statistics, sys, tempfile, time, zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.coco_panoptic import (coco_panoptic_pq, panoptic_pq, read_coco_panoptic,  # noqa: E402
                                   synthetic_panoptic, write_coco_panoptic)
from tests.reference import panopticapi_pq as ref  # noqa: E402


def peer(folder, panopticapi):
    "A function scoring the files in `folder` the peer's way: {'All', 'Things', 'Stuff': {pq, sq, rq, n}}"
    gt_json, pred_json = str(folder / "gt.json"), str(folder / "pred.json")
    if panopticapi is None:
        return lambda: ref.pq_compute(gt_json, pred_json)
    sys.path.insert(0, str(panopticapi))
    ev = importlib.import_module("panopticapi.evaluation")

    def run():
        gt, pred = json.loads(Path(gt_json).read_text()), json.loads(Path(pred_json).read_text())
        cats = {c["id"]: c for c in gt["categories"]}
        preds = {a["image_id"]: a for a in pred["annotations"]}
        pairs = [(a, preds[a["image_id"]]) for a in gt["annotations"]]
        with contextlib.redirect_stdout(io.StringIO()):
            stat = ev.pq_compute_single_core(0, pairs, str(folder / "gt"), str(folder / "pred"), cats)
        out = {}
        for name, isthing in [("All", None), ("Things", True), ("Stuff", False)]:
            out[name], per = stat.pq_average(cats, isthing)
            if name == "All": out["per_class"] = per
        return out
    return run


def streamed(folder):
    "clinseg straight from the files, one image pair at a time"
    return coco_panoptic_pq(folder / "gt.json", folder / "pred.json")


def ours(folder):
    "clinseg from the same files, both sets read first"
    gt = read_coco_panoptic(folder / "gt.json")
    return panoptic_pq(gt, read_coco_panoptic(folder / "pred.json", categories=gt.categories))


def decode_all(folder):
    "The floor both sides pay: decoding every PNG once (Pillow, to a numpy array)"
    from PIL import Image
    for f in sorted((folder / "gt").glob("*.png")) + sorted((folder / "pred").glob("*.png")):
        with Image.open(f) as im: np.asarray(im)


def inflate_all(folder):
    "The floor under the floor: only the zlib inflation of every PNG's image data (its IDAT chunks), stdlib zlib"
    for f in sorted((folder / "gt").glob("*.png")) + sorted((folder / "pred").glob("*.png")):
        data, at, parts = f.read_bytes(), 8, []
        while at < len(data):
            n, kind = int.from_bytes(data[at:at + 4], "big"), data[at + 4:at + 8]
            if kind == b"IDAT": parts.append(data[at + 8:at + 8 + n])
            at += 12 + n
        zlib.decompress(b"".join(parts))


def check(theirs, mine):
    "Every average and every category's PQ, SQ, RQ equal to 1e-12"
    for name, m in (("All", mine[:4]), ("Things", mine.things), ("Stuff", mine.stuff)):
        assert theirs[name]["n"] == m[3]
        assert all(abs(v - theirs[name][k]) <= 1e-12 for k, v in zip(("pq", "sq", "rq"), m[:3])), (name, m)
    for c, row in mine.per_category.items():
        assert all(abs(row[k] - theirs["per_class"][c][k]) <= 1e-12 for k in ("pq", "sq", "rq")), c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--images", type=int)
    ap.add_argument("--panopticapi", help="folder holding panopticapi/evaluation.py (its own code, one worker)")
    a = ap.parse_args()
    n_images = a.images or (12 if a.quick else 40)
    rounds = a.rounds or (5 if a.quick else 9)
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        gt, pred = synthetic_panoptic(2026, n_images, shape=(480, 640))
        gt = gt._replace(images={i: im for i, im in gt.images.items() if i > 5})     # 480 x 640 images only
        pred = pred._replace(images={i: im for i, im in pred.images.items() if i > 5})
        write_coco_panoptic(folder / "gt.json", folder / "gt", gt)
        write_coco_panoptic(folder / "pred.json", folder / "pred", pred)
        n_seg = sum(len(im.segments) for s in (gt, pred) for im in s.images.values())
        name = "panopticapi pq_compute_single_core (1 worker)" if a.panopticapi else "re-expression (tests/reference)"
        run_peer = peer(folder, a.panopticapi)
        mine = ours(folder)
        check(run_peer(), mine)
        check(run_peer(), streamed(folder))
        print(f"{len(gt.images)} image pairs of 480 x 640 pixels, {n_seg} segments; PQ {mine.pq:.4f} "
              f"(things {mine.things.pq:.4f}, stuff {mine.stuff.pq:.4f}); equal to the peer to 1e-12")
        times = [[], [], [], [], []]
        jobs = (streamed, ours, lambda f: run_peer(), decode_all, inflate_all)
        for r in range(rounds):
            for who in ((0, 1, 2, 3, 4) if r % 2 else (4, 3, 2, 1, 0)):
                t = time.perf_counter()
                jobs[who](folder)
                times[who].append(time.perf_counter() - t)
    t_peer, t_floor, t_inflate = times[2], times[3], times[4]
    print(f"peer: {name}, {statistics.median(t_peer) * 1e3:.1f} ms; {rounds} rounds; numpy {np.__version__}")
    for label, t_ours in (("clinseg coco_panoptic_pq (streaming)", times[0]),
                          ("clinseg read_coco_panoptic x2 + panoptic_pq", times[1])):
        ratios = [p / o for p, o in zip(t_peer, t_ours)]
        print(f"  {label:44s} {statistics.median(t_ours) * 1e3:8.1f} ms   ratio {statistics.median(ratios):.1f}x "
              f"({min(ratios):.1f}-{max(ratios):.1f})")
    print(f"  floor (decoding every PNG once, which both must do): {statistics.median(t_floor) * 1e3:.1f} ms; the "
          f"best ratio any reader could reach: {statistics.median(t_peer) / statistics.median(t_floor):.1f}x")
    t_inflate = statistics.median(t_inflate)
    print(f"  under it, zlib's inflation of the PNGs' data alone: {t_inflate * 1e3:.1f} ms; the best ratio of a reader "
          f"that did nothing else: {statistics.median(t_peer) / t_inflate:.1f}x")


if __name__ == "__main__":
    main()
