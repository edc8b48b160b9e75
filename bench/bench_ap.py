"""Benchmark: clinseg's `average_precision` against pycocotools, faster-coco-eval and (when installed) hotcoco.

(a) WAD-like frames (default 20 frames of 2710x3384, ~30 true and ~50 predicted instances each, from
    `clinseg.ap.synthetic_scene`): every tool starts from the 16-bit label image and the predicted masks as dense
    boolean frames, one mask at a time; the time counts turning them into the tool's representation
    (clinseg: runs; COCO tools: per-object masks, Fortran order, RLE encode) plus the evaluation. The
    ignore region is given to the COCO tools as one crowd region per class, and clinseg runs with COCO's rules
    (`>=`, ignore overlap over the prediction's area, 100 detections), so the APs must agree.
(b) COCO segm, 50 images (480x640) x 30 instances, data as a COCO ground-truth dict and a results list with
    compressed RLE strings: load + evaluate (+ accumulate, summarize).

Each tool runs in its own subprocess (clean imports, its own peak memory from getrusage maxrss).
Usage: `python bench/bench_ap.py` (full size) or e.g. `python bench/bench_ap.py --frames 3 --coco-images 10`.
"""
import argparse, contextlib, io, json, os, resource, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import numpy as np

CATS = [33, 34, 35, 36, 38, 39, 40]


def maxrss_mb(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- (a) WAD-like frames, from dense masks
def frames(args):
    "The frames one at a time: (frame id, uint16 label image, predictions (class, confidence, dense mask generator))"
    from clinseg.runs import runs_to_mask
    from clinseg.ap import synthetic_scene
    shape = (args.height, args.width)
    for f in range(args.frames):
        labels, preds = synthetic_scene(shape, args.truth, args.preds, seed=f)
        yield f, labels, [(c, s, (lambda r=r: runs_to_mask(*r, shape))) for c, s, r in preds]


def wad_clinseg(args):
    from clinseg.runs import mask_to_runs
    from clinseg.ap import average_precision
    from clinseg.ap import wad_truth
    spent, truth, records = 0.0, {}, []
    for f, labels, preds in frames(args):
        t0 = time.perf_counter(); truth[f] = wad_truth(labels); spent += time.perf_counter() - t0
        for c, s, make in preds:
            m = make()
            t0 = time.perf_counter(); records.append((f, c, s, mask_to_runs(m))); spent += time.perf_counter() - t0
            del m
    t0 = time.perf_counter()
    res = average_precision(truth, records, classes=CATS, compare=">=", ignore_overlap="area", max_dets=100)
    evaluate = time.perf_counter() - t0
    return dict(encode=spent, evaluate=evaluate, ap=res.ap)


def _coco_from_frames(args, encode):
    "COCO ground truth and results from the frames, encoding every mask with `encode` (timed)"
    spent, images, anns, dets = 0.0, [], [], []
    for f, labels, preds in frames(args):
        images.append(dict(id=f, height=labels.shape[0], width=labels.shape[1]))
        t0 = time.perf_counter()
        values = np.unique(labels)
        for v in values.tolist():
            if v == 255: continue
            rle = encode(np.asfortranarray(labels == v))
            area = float((labels == v).sum()) if v == 65535 else None
            if v == 65535:
                for c in CATS: anns.append(dict(id=len(anns) + 1, image_id=f, category_id=c, segmentation=rle, area=area, iscrowd=1))
            elif v // 1000 in CATS:
                anns.append(dict(id=len(anns) + 1, image_id=f, category_id=v // 1000, segmentation=rle, area=None, iscrowd=0))
        spent += time.perf_counter() - t0
        for c, s, make in preds:
            m = make()
            t0 = time.perf_counter(); dets.append(dict(image_id=f, category_id=c, score=s, segmentation=encode(np.asfortranarray(m)))); spent += time.perf_counter() - t0
            del m
    return spent, images, anns, dets


def _run_cocoeval(COCO, COCOeval, images, anns, dets, area, **kw):
    t0 = time.perf_counter()
    for a in anns:
        if a["area"] is None: a["area"] = float(area(a["segmentation"]))
    gt = COCO()
    gt.dataset = dict(images=images, annotations=anns, categories=[dict(id=c, name=str(c)) for c in CATS])
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(dets)
        E = COCOeval(gt, dt, "segm", **kw)
        E.evaluate(); E.accumulate(); E.summarize()
    return time.perf_counter() - t0, float(E.stats[0])


def wad_pycocotools(args):
    from pycocotools import mask as mu
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    enc = lambda m: mu.encode(m.astype(np.uint8))
    spent, images, anns, dets = _coco_from_frames(args, enc)
    t, ap = _run_cocoeval(COCO, COCOeval, images, anns, dets, mu.area)
    return dict(encode=spent, evaluate=t, ap=ap)


def wad_faster(args):
    from faster_coco_eval import COCO, COCOeval_faster
    from faster_coco_eval.core import mask as mu
    enc = lambda m: mu.encode(m.astype(np.uint8))
    spent, images, anns, dets = _coco_from_frames(args, enc)
    t, ap = _run_cocoeval(COCO, COCOeval_faster, images, anns, dets, mu.area, print_function=lambda *a: None)
    return dict(encode=spent, evaluate=t, ap=ap)


def _hotcoco_eval(images, anns, dets, area):
    import hotcoco
    t0 = time.perf_counter()
    for a in anns:
        if a["area"] is None: a["area"] = float(area(a["segmentation"]))
    gt = hotcoco.COCO(dict(images=images, annotations=anns, categories=[dict(id=c, name=str(c)) for c in CATS]))
    dt = gt.load_res(dets)
    E = hotcoco.COCOeval(gt, dt, "segm")
    with contextlib.redirect_stdout(io.StringIO()):
        E.evaluate(); E.accumulate(); E.summarize()
    return time.perf_counter() - t0, float(E.stats[0])


def wad_hotcoco(args):
    import hotcoco
    enc = lambda m: hotcoco.mask.encode(m.astype(np.uint8))
    spent, images, anns, dets = _coco_from_frames(args, enc)
    t, ap = _hotcoco_eval(images, anns, dets, hotcoco.mask.area)
    return dict(encode=spent, evaluate=t, ap=ap)


# ---------------------------------------------------------------- (b) COCO segm from a COCO dict and results list
def coco_data(args, path):
    "Write the COCO dataset (gt dict and results, compressed RLE strings) once, with clinseg's own encoder"
    from clinseg.runs import reorder_runs
    from clinseg.instances import label_to_runs
    from clinseg.ap import synthetic_scene
    from clinseg.coco import runs_to_coco_counts, coco_string
    shape = (480, 640)
    size = shape[0] * shape[1]
    rle = lambda s, l: dict(size=list(shape), counts=coco_string(runs_to_coco_counts(s, l, size)))
    images, anns, dets = [], [], []
    for i in range(args.coco_images):
        labels, preds = synthetic_scene(shape, args.coco_instances, args.coco_instances, seed=1000 + i, ignore=False)
        images.append(dict(id=i, height=shape[0], width=shape[1]))
        ids, runs = label_to_runs(labels.astype(np.int64), "F")
        for v, (s, l) in zip(ids.tolist(), runs):
            if v == 255: continue
            anns.append(dict(id=len(anns) + 1, image_id=i, category_id=v // 1000, segmentation=rle(s, l), area=float(l.sum()), iscrowd=0))
        for c, sc, (s, l) in preds:
            dets.append(dict(image_id=i, category_id=c, score=sc, segmentation=rle(*reorder_runs(s, l, shape, "C", "F"))))
    Path(path).write_text(json.dumps(dict(images=images, annotations=anns, dets=dets, categories=[dict(id=c, name=str(c)) for c in CATS])))


def coco_load(path):
    d = json.loads(Path(path).read_text())
    return d["images"], d["annotations"], d["dets"]


def coco_clinseg(args):
    from clinseg.ap import ImageTruth, average_precision
    from clinseg.coco import coco_rles_to_runs
    images, anns, dets = coco_load(args.data)
    t0 = time.perf_counter()
    runs = coco_rles_to_runs([a["segmentation"] for a in anns])
    by_image = {im["id"]: [] for im in images}
    for a, r in zip(anns, runs): by_image[a["image_id"]].append((a, r))
    truth = {}
    for im in images:
        objs = by_image[im["id"]]
        truth[im["id"]] = ImageTruth((im["height"], im["width"]), [r for _, r in objs], [a["category_id"] for a, _ in objs],
                                     [bool(a["iscrowd"]) for a, _ in objs])
    pruns = coco_rles_to_runs([d["segmentation"] for d in dets])
    records = [(d["image_id"], d["category_id"], d["score"], r) for d, r in zip(dets, pruns)]
    res = average_precision(truth, records, classes=CATS, compare=">=", max_dets=100, order="F")
    return dict(evaluate=time.perf_counter() - t0, ap=res.ap)


def coco_pycocotools(args):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    images, anns, dets = coco_load(args.data)
    t, ap = _run_cocoeval(COCO, COCOeval, images, anns, dets, None)
    return dict(evaluate=t, ap=ap)


def coco_faster(args):
    from faster_coco_eval import COCO, COCOeval_faster
    images, anns, dets = coco_load(args.data)
    t, ap = _run_cocoeval(COCO, COCOeval_faster, images, anns, dets, None, print_function=lambda *a: None)
    return dict(evaluate=t, ap=ap)


def coco_hotcoco(args):
    images, anns, dets = coco_load(args.data)
    t, ap = _hotcoco_eval(images, anns, dets, None)
    return dict(evaluate=t, ap=ap)


WORKERS = {"wad:clinseg": wad_clinseg, "wad:pycocotools": wad_pycocotools, "wad:faster-coco-eval": wad_faster, "wad:hotcoco": wad_hotcoco,
           "coco:clinseg": coco_clinseg, "coco:pycocotools": coco_pycocotools, "coco:faster-coco-eval": coco_faster, "coco:hotcoco": coco_hotcoco}


def run_worker(name, argv):
    "Run one tool in a fresh process; None when it is not installed"
    res = subprocess.run([sys.executable, __file__, "--worker", name, *argv], capture_output=True, text=True)
    if res.returncode:
        if "ModuleNotFoundError" in res.stderr: return None
        raise RuntimeError(f"{name} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=20); p.add_argument("--height", type=int, default=2710); p.add_argument("--width", type=int, default=3384)
    p.add_argument("--truth", type=int, default=30); p.add_argument("--preds", type=int, default=50)
    p.add_argument("--coco-images", type=int, default=50); p.add_argument("--coco-instances", type=int, default=30)
    p.add_argument("--repeat", type=int, default=3, help="runs of (b); the best is kept")
    p.add_argument("--worker"); p.add_argument("--data")
    args = p.parse_args()
    if args.worker:
        out = WORKERS[args.worker](args)
        out["maxrss_mb"] = maxrss_mb()
        print(json.dumps(out)); return
    argv = [f"--frames={args.frames}", f"--height={args.height}", f"--width={args.width}", f"--truth={args.truth}", f"--preds={args.preds}"]
    print(f"(a) {args.frames} frames {args.height}x{args.width}, ~{args.truth} true and ~{args.preds} predicted instances each, from dense masks")
    rows = {}
    for tool in ("clinseg", "pycocotools", "faster-coco-eval", "hotcoco"):
        r = run_worker(f"wad:{tool}", argv)
        if r: rows[tool] = r
    base = rows["clinseg"]["encode"] + rows["clinseg"]["evaluate"]
    print(f"| tool | to runs / RLE (s) | evaluate (s) | total (s) | total vs clinseg | peak RSS (MB) | AP |\n|---|---|---|---|---|---|---|")
    for tool, r in rows.items():
        tot = r["encode"] + r["evaluate"]
        print(f"| {tool} | {r['encode']:.2f} | {r['evaluate']:.3f} | {tot:.2f} | {tot / base:.1f}x | {r['maxrss_mb']:.0f} | {r['ap']:.6f} |")
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "coco.json")
        coco_data(args, data)
        print(f"\n(b) COCO segm, {args.coco_images} images 480x640 x {args.coco_instances} instances (compressed RLE in memory), best of {args.repeat}")
        rows = {}
        for tool in ("clinseg", "pycocotools", "faster-coco-eval", "hotcoco"):
            runs = [run_worker(f"coco:{tool}", [f"--data={data}"]) for _ in range(args.repeat)]
            if runs[0]: rows[tool] = min(runs, key=lambda r: r["evaluate"])
        base = rows["clinseg"]["evaluate"]
        print("| tool | load + evaluate (ms) | vs clinseg | AP |\n|---|---|---|---|")
        for tool, r in rows.items():
            print(f"| {tool} | {1000 * r['evaluate']:.0f} | {r['evaluate'] / base:.1f}x | {r['ap']:.6f} |")


if __name__ == "__main__":
    main()
