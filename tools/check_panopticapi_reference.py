"""Run cocodataset/panopticapi's own `pq_compute` (commit 7bb4655, panopticapi/evaluation.py and utils.py, copied
unchanged from the bare mirror into a scratch folder) on generated COCO panoptic files, and compare every number
with clinseg.coco_panoptic.panoptic_pq (both engines) and coco_panoptic_pq (streaming from the files): PQ, SQ, RQ
and n of All / Things / Stuff and each category's PQ, SQ, RQ. Prints the cases, the largest |difference| per number,
and each break of the original on today's numpy / Pillow (repaired only in the scratch copy, and only what breaks).

    python tools/check_panopticapi_reference.py [--sets 40] [--images 12] [--scratch /tmp/wH3]

By default pq_compute runs as it is, with its multiprocessing pool (one worker per CPU)."""
import argparse, contextlib, importlib, io, math, shutil, subprocess, sys, tempfile
from pathlib import Path

import numpy as np
import PIL

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.coco_panoptic import (PanopticSet, coco_panoptic_pq, panoptic_image, panoptic_pq, read_coco_panoptic,  # noqa: E402
                                   synthetic_panoptic, write_coco_panoptic)

MIRROR = "/work/.mirror/cocodataset+panopticapi/repo"
COMMIT = "7bb4655"
FILES = ["panopticapi/__init__.py", "panopticapi/evaluation.py", "panopticapi/utils.py"]
BREAKS = []   # (what broke, the repair in the scratch copy)


def copy_original(scratch):
    "panopticapi's files, unchanged, under `scratch`; the module `panopticapi.evaluation` imported from there"
    scratch = Path(scratch)
    if scratch.exists(): shutil.rmtree(scratch)
    for f in FILES:
        text = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:{f}"], check=True,
                              capture_output=True, text=True).stdout
        (scratch / f).parent.mkdir(parents=True, exist_ok=True)
        (scratch / f).write_text(text)
    sys.path.insert(0, str(scratch))
    return importlib.import_module("panopticapi.evaluation")


def run_original(ev, gt_json, pred_json):
    "pq_compute's results (its printing swallowed); the exception, if it raises"
    with contextlib.redirect_stdout(io.StringIO()):
        try: return ev.pq_compute(gt_json, pred_json)
        except ZeroDivisionError as e: return e


def compare(res, ours, worst):
    "Update `worst` {number: max |difference|} with one case; assert equal n and the same categories"
    for name, mine in (("All", ours[:4]), ("Things", ours.things), ("Stuff", ours.stuff)):
        assert res[name]["n"] == mine[3], (name, res[name], mine)
        for k, v in zip(("pq", "sq", "rq"), mine[:3]):
            worst[f"{name} {k}"] = max(worst.get(f"{name} {k}", 0.0), abs(v - res[name][k]))
    for c, row in res["per_class"].items():
        mine = ours.per_category.get(c)
        if mine is None:
            assert row == {"pq": 0.0, "sq": 0.0, "rq": 0.0}, (c, row)
            continue
        for k in ("pq", "sq", "rq"):
            worst[f"category {k}"] = max(worst.get(f"category {k}", 0.0), abs(mine[k] - row[k]))


def coco_samples(scratch, out):
    "panopticapi's two COCO val2017 sample images as truth; predictions: the truth shifted and some categories changed"
    src = Path(scratch) / "sample"
    for f in ["sample_data/panoptic_examples.json", "sample_data/panoptic_examples/000000142238.png",
              "sample_data/panoptic_examples/000000439180.png"]:
        data = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:{f}"], check=True,
                              capture_output=True).stdout
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_bytes(data)
    gt = read_coco_panoptic(src / "sample_data/panoptic_examples.json")
    rng = np.random.default_rng(0)
    for k, shift in enumerate([(0, 0), (1, 2), (3, -2), (6, 9), (15, 0)]):
        images = {}
        for iid, im in gt.images.items():
            ids = np.roll(im.ids, shift, axis=(0, 1))
            segs = [{"id": s["id"], "category_id": s["category_id"] if rng.random() > 0.1 * k
                     else int(rng.choice(list(gt.categories)))} for s in im.segments]
            images[iid] = panoptic_image(iid, ids, segs, im.file_name)
        f = Path(out) / f"coco{k}"
        write_coco_panoptic(f / "gt.json", f / "gt", gt)
        write_coco_panoptic(f / "pred.json", f / "pred", PanopticSet(gt.categories, images))
        yield f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=40)
    ap.add_argument("--images", type=int, default=12, help="random image pairs per set (plus 5 fixed ones)")
    ap.add_argument("--scratch", default="/tmp/wH3")
    a = ap.parse_args()
    print(f"numpy {np.__version__}, Pillow {PIL.__version__}, Python {sys.version.split()[0]}; "
          f"panopticapi {COMMIT} copied unchanged to {a.scratch}")
    ev = copy_original(a.scratch)
    worst, cases, images, zero_div = {}, 0, 0, 0
    with tempfile.TemporaryDirectory() as d:
        folders = []
        for seed in range(a.sets):
            gt, pred = synthetic_panoptic(seed, a.images, shape=(24, 32) if seed % 2 else (48, 64))
            sets = [(gt, pred)]
            if seed < 4:                       # each image on its own too
                sets += [tuple(PanopticSet(s.categories, {i: s.images[i]}) for s in (gt, pred)) for i in gt.images]
            for k, (g, p) in enumerate(sets):
                f = Path(d) / f"{seed}_{k}"
                write_coco_panoptic(f / "gt.json", f / "gt", g)
                write_coco_panoptic(f / "pred.json", f / "pred", p)
                folders.append(f)
        folders += list(coco_samples(a.scratch, d))
        for f in folders:
            res = run_original(ev, str(f / "gt.json"), str(f / "pred.json"))
            gt_r = read_coco_panoptic(f / "gt.json")
            pr_r = read_coco_panoptic(f / "pred.json", categories=gt_r.categories)
            for engine in ("fast", "textbook", "files"):
                ours = (coco_panoptic_pq(f / "gt.json", f / "pred.json") if engine == "files"
                        else panoptic_pq(gt_r, pr_r, engine=engine))
                if isinstance(res, ZeroDivisionError):
                    assert math.isnan(ours.pq) or math.isnan(ours.things.pq) or math.isnan(ours.stuff.pq)
                else:
                    compare(res, ours, worst)
            zero_div += isinstance(res, ZeroDivisionError)
            cases += 1
            images += len(gt_r.images)
        print(f"  of which 5 cases: panopticapi's 2 COCO val2017 sample images, the predictions shifted by up to 15 "
              f"pixels, categories changed; last: PQ {ours.pq:.4f}")
    print(f"{cases} cases ({images} image pairs; {zero_div} where pq_compute divides by zero, a mean over no "
          "category, and clinseg gives NaN)")
    for k, v in worst.items(): print(f"  max |difference| {k:12s} {v:.3g}")
    print("breaks of the original on this numpy / Pillow:", "none" if not BREAKS else "")
    for what, repair in BREAKS: print(f"  - {what}; repaired in the scratch copy: {repair}")
    assert max(worst.values()) <= 1e-12


if __name__ == "__main__":
    main()
