"""Benchmark: clinseg's `average_precision` against pycocotools, faster-coco-eval and hotcoco (each when installed).

(a) WAD-like frames (default 20 frames of 2710x3384, ~30 true and ~50 predicted instances each, from
    `clinseg.ap.synthetic_scene`): every tool starts from the 16-bit label image and the predicted masks as dense
    boolean frames, one mask at a time; the time counts turning them into the tool's representation
    (clinseg: runs; COCO tools: per-object masks, Fortran order, RLE encode) plus the evaluation. The
    ignore region is given to the COCO tools as one crowd region per class, and clinseg runs with COCO's rules
    (`>=`, ignore overlap over the prediction's area, 100 detections), so the APs must agree. Each tool runs once,
    in its own subprocess (clean imports, its own peak memory from getrusage maxrss).
(b) COCO segm end to end from a COCO ground-truth dict and a results list with compressed RLE strings (decode, load,
    evaluate, accumulate, summarize), on two sets whose true objects overlap one another (COCO annotations may):
    "coco", 50 images 480x640 x 30 objects x 36 detections, 3 classes, and "crowded", 5 images of 300 objects and
    360 detections, and "coco500", 500 images like "coco"'s. clinseg runs three ways: as a student calls it for AP
    (`coco_average_precision` on the dicts), for COCOeval's twelve numbers (`coco_summary`: the same work as the
    peers' evaluate + accumulate + summarize, and the fair comparison), and through the general path for AP (every
    string decoded to its own runs, `ImageTruth` from lists of runs, prediction records). All
    tools in one process, paired rounds (every tool once per round, the order shuffled, seeded), medians with the
    min-max range, ratios clinseg / tool per round. "Fresh pages" counts the minor page faults of a call: 4 KiB pages
    the system had to map and zero, because the memory was given back to it (often by the tool before). Every AP must
    equal pycocotools' to 1e-12 (clinseg's on every class and threshold too), and so must the twelve numbers of every
    tool that gives them.

Usage: `python bench/bench_ap.py` (full size; `--only coco`, `--rounds`, `--frames` and friends to narrow it), or
`python bench/bench_ap.py --quick` (seconds, small inputs, still checking the APs agree: CI runs it).
"""
import argparse, contextlib, importlib.util, io, json, os, resource, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

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
    from clinseg.competitions.wad2018 import wad_truth
    spent, truth, records = 0.0, {}, []
    for f, labels, preds in frames(args):
        t0 = time.perf_counter()
        truth[f] = wad_truth(labels)
        spent += time.perf_counter() - t0
        for c, s, make in preds:
            m = make()
            t0 = time.perf_counter()
            records.append((f, c, s, mask_to_runs(m)))
            spent += time.perf_counter() - t0
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
                for c in CATS: anns.append(dict(id=len(anns) + 1, image_id=f, category_id=c, segmentation=rle,
                                                area=area, iscrowd=1))
            elif v // 1000 in CATS:
                anns.append(dict(id=len(anns) + 1, image_id=f, category_id=v // 1000, segmentation=rle, area=None,
                                 iscrowd=0))
        spent += time.perf_counter() - t0
        for c, s, make in preds:
            m = make()
            t0 = time.perf_counter()
            dets.append(dict(image_id=f, category_id=c, score=s, segmentation=encode(np.asfortranarray(m))))
            spent += time.perf_counter() - t0
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
        E.evaluate()
        E.accumulate()
        E.summarize()
    return time.perf_counter() - t0, float(E.stats[0])


def wad_pycocotools(args):
    from pycocotools import mask as mu
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    def enc(m): return mu.encode(m.astype(np.uint8))
    spent, images, anns, dets = _coco_from_frames(args, enc)
    t, ap = _run_cocoeval(COCO, COCOeval, images, anns, dets, mu.area)
    return dict(encode=spent, evaluate=t, ap=ap)


def wad_faster(args):
    from faster_coco_eval import COCO, COCOeval_faster
    from faster_coco_eval.core import mask as mu
    def enc(m): return mu.encode(m.astype(np.uint8))
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
        E.evaluate()
        E.accumulate()
        E.summarize()
    return time.perf_counter() - t0, float(E.stats[0])


def wad_hotcoco(args):
    import hotcoco
    def enc(m): return hotcoco.mask.encode(m.astype(np.uint8))
    spent, images, anns, dets = _coco_from_frames(args, enc)
    t, ap = _hotcoco_eval(images, anns, dets, hotcoco.mask.area)
    return dict(encode=spent, evaluate=t, ap=ap)


# ---------------------------------------------------------------- (b) COCO segm from a COCO dict and results list
COCO_SETS = {  # name: (images, true objects per image, detections per image, image shape)
    "coco": (50, 30, 36, (480, 640)),
    "crowded": (5, 300, 360, (480, 640)),
    "coco500": (500, 30, 36, (480, 640)),
}
QUICK_SETS = {"coco": (6, 30, 36, (120, 160)), "crowded": (1, 120, 150, (160, 200))}
COCO_CLASSES = (1, 2, 3)


def _ellipse(shape, cy, cx, ry, rx):
    y, x = np.ogrid[:shape[0], :shape[1]]
    return ((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2 <= 1


def coco_set(n_images, n_objects, n_dets, shape, seed=0, crowd_rate=0.3):
    """A COCO segm ground truth dict and a results list (compressed RLE strings, clinseg's encoder). The true objects
    are ellipses drawn independently, so they overlap one another as COCO annotations may; some images have a crowd
    region;
    the detections are jittered copies of most objects (5% with the wrong class), the rest random ellipses."""
    from clinseg.runs import mask_to_runs
    from clinseg.coco import runs_to_coco_counts, coco_string
    rng = np.random.default_rng(seed)
    H, W = shape
    scale = min(H / 480, W / 640)
    def rle(m):
        s, l = mask_to_runs(m, "F")
        return dict(size=[H, W], counts=coco_string(runs_to_coco_counts(s, l, H * W)))
    images, anns, dets = [], [], []
    for i in range(n_images):
        images.append(dict(id=i + 1, height=H, width=W))
        objs = []
        for _ in range(n_objects):
            e = (rng.uniform(0, H), rng.uniform(0, W), rng.uniform(8, 50) * scale, rng.uniform(8, 50) * scale)
            m = _ellipse(shape, *e)
            if not m.any(): continue
            c = int(rng.choice(COCO_CLASSES))
            objs.append((c, e))
            anns.append(dict(id=len(anns) + 1, image_id=i + 1, category_id=c, segmentation=rle(m), area=float(m.sum()),
                             iscrowd=0))
        if rng.random() < crowd_rate:
            m = _ellipse(shape, rng.uniform(0, H), rng.uniform(0, W), 60 * scale, 90 * scale)
            anns.append(dict(id=len(anns) + 1, image_id=i + 1, category_id=int(rng.choice(COCO_CLASSES)),
                             segmentation=rle(m),
                             area=float(m.sum()), iscrowd=1))
        made = 0
        for c, (cy, cx, ry, rx) in objs:
            if made >= n_dets or rng.random() < 0.15: continue
            j = rng.normal(0, 0.12, 4)
            m = _ellipse(shape, cy + j[0] * ry, cx + j[1] * rx, ry * np.exp(j[2]), rx * np.exp(j[3]))
            if not m.any(): continue
            k = c if rng.random() > 0.05 else int(rng.choice(COCO_CLASSES))
            score = round(float(np.clip(1 - np.abs(j).sum() + rng.normal(0, 0.1), 0.01, 1)), 3)
            dets.append(dict(image_id=i + 1, category_id=k, score=score, segmentation=rle(m)))
            made += 1
        while made < n_dets:
            m = _ellipse(shape, rng.uniform(0, H), rng.uniform(0, W), rng.uniform(8, 50) * scale,
                         rng.uniform(8, 50) * scale)
            if not m.any(): continue
            dets.append(dict(image_id=i + 1, category_id=int(rng.choice(COCO_CLASSES)),
                             score=round(float(rng.uniform(0.01, 0.7)), 3),
                             segmentation=rle(m)))
            made += 1
    return dict(images=images, annotations=anns, categories=[dict(id=c, name=str(c)) for c in COCO_CLASSES]), dets


def overlapping_images(gt):
    "How many images have two true objects that share a pixel"
    from clinseg.coco import coco_rles_to_runs
    from clinseg.objects import find_overlaps
    by = {}
    runs_of = coco_rles_to_runs([a["segmentation"] for a in gt["annotations"]])
    for a, r in zip(gt["annotations"], runs_of): by.setdefault(a["image_id"], []).append(r)
    return sum(find_overlaps(runs)[0].size > 0 for runs in by.values())


def coco_clinseg(gt, dets):
    "clinseg from the COCO dict and results, as a student calls it: `coco_average_precision` (chapter 8a)"
    from clinseg.coco_eval import coco_average_precision
    res = coco_average_precision(gt, dets)
    return res.ap, res.per_class, None


def coco_clinseg_summary(gt, dets):
    "clinseg's twelve numbers, the same work as the peers' evaluate + accumulate + summarize: `coco_summary`"
    from clinseg.coco_eval import coco_summary
    s = coco_summary(gt, dets)
    return float(s.stats[0]), s.ap[0], s.stats


def coco_clinseg_records(gt, dets):
    ("clinseg from the same dicts through the general path: decode every string to its own runs, one ImageTruth per "
     "image from lists of runs, prediction records")
    from clinseg.predictions import ImageTruth
    from clinseg.ap import average_precision, COCO_THRESHOLDS
    from clinseg.coco import coco_rles_to_runs
    anns = gt["annotations"]
    runs = coco_rles_to_runs([a["segmentation"] for a in anns])
    by_image = {im["id"]: [] for im in gt["images"]}
    for a, r in zip(anns, runs): by_image[a["image_id"]].append((a, r))
    truth = {im["id"]: ImageTruth((im["height"], im["width"]), [r for _, r in by_image[im["id"]]],
                                  [a["category_id"] for a, _ in by_image[im["id"]]],
                                  [bool(a["iscrowd"]) for a, _ in by_image[im["id"]]],
                                  area=[a["area"] for a, _ in by_image[im["id"]]])
             for im in gt["images"]}
    pruns = coco_rles_to_runs([d["segmentation"] for d in dets])
    records = [(d["image_id"], d["category_id"], d["score"], r) for d, r in zip(dets, pruns)]
    res = average_precision(truth, records, thresholds=COCO_THRESHOLDS, classes=[c["id"] for c in gt["categories"]],
                            compare=">=",
                            ignore_overlap="area", max_dets=100, area_range=(0, 1e10), order="F")
    return res.ap, res.per_class, None


def coco_decode_only(gt, dets):
    ("The part of `coco_clinseg` that decodes the strings (chapter 3's `coco_rles_to_objects`, as "
     "`coco_average_precision` calls it), for the breakdown")
    from clinseg.coco import coco_rles_to_objects
    coco_rles_to_objects([a["segmentation"] for a in gt["annotations"]])
    coco_rles_to_objects([d["segmentation"] for d in dets])
    return None


def _cocoeval(COCO, COCOeval, gt, dets, **kw):
    g = COCO()
    g.dataset = gt
    with contextlib.redirect_stdout(io.StringIO()):
        g.createIndex()
        E = COCOeval(g, g.loadRes(dets), "segm", **kw)
        E.evaluate()
        E.accumulate()
        E.summarize()
    # thresholds x recall levels x classes, area all, maxDets 100
    p = E.eval["precision"][:, :, :, 0, 2]
    return float(E.stats[0]), np.where((p > -1).all(1), p.mean(1), np.nan).T, np.array(E.stats[:12])


def coco_pycocotools(gt, dets):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    return _cocoeval(COCO, COCOeval, gt, dets)


def coco_faster(gt, dets):
    from faster_coco_eval import COCO, COCOeval_faster
    return _cocoeval(COCO, COCOeval_faster, gt, dets, print_function=lambda *a: None)


def coco_hotcoco(gt, dets):
    import hotcoco
    g = hotcoco.COCO(gt)
    E = hotcoco.COCOeval(g, g.load_res(dets), "segm")
    with contextlib.redirect_stdout(io.StringIO()):
        E.evaluate()
        E.accumulate()
        E.summarize()
    return float(E.stats[0]), None, np.array(E.stats[:12])


COCO_TOOLS = {"clinseg": coco_clinseg, "clinseg: twelve numbers": coco_clinseg_summary,
              "clinseg: records": coco_clinseg_records,
              "clinseg: decoding only": coco_decode_only, "pycocotools": coco_pycocotools,
              "faster-coco-eval": coco_faster, "hotcoco": coco_hotcoco}
PEER_MODULES = {"pycocotools": "pycocotools", "faster-coco-eval": "faster_coco_eval", "hotcoco": "hotcoco"}


def versions():
    from importlib.metadata import version, PackageNotFoundError
    out = {"python": sys.version.split()[0]}
    for name in ("clinseg", "numpy", "numba", "pycocotools", "faster-coco-eval", "hotcoco"):
        try: out[name] = version(name)
        except PackageNotFoundError: out[name] = "not installed"
    from clinseg.kernels import numba_available
    out["compiled loops"] = "on" if numba_available() else "off (numpy engine)"
    return out


def cpu_and_wall(tool, gt, dets, rounds):
    "Median process CPU time and wall time of one tool (CPU above wall: the tool runs threads)"
    import copy, gc
    cpu, wall = [], []
    for _ in range(rounds):
        g, d = copy.deepcopy(gt), copy.deepcopy(dets)
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        COCO_TOOLS[tool](g, d)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return float(np.median(cpu)), float(np.median(wall))


def paired_rounds(tools, gt, dets, rounds):
    """Every tool once per round, the order shuffled each round (seeded), so that no tool always runs right after the
    same one (which pays for the memory the one before gave back); each call gets fresh copies of the data (COCO's
    loadRes writes into the results). Returns {tool: [seconds per round]}, the last result of each tool, and
    {tool: [fresh memory pages (minor page faults) per round]}"""
    import copy, gc
    times, results, faults = {t: [] for t in tools}, {}, {t: [] for t in tools}
    for r in range(rounds):
        for t in np.random.default_rng(r).permutation(tools).tolist():
            g, d = copy.deepcopy(gt), copy.deepcopy(dets)
            gc.collect()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            results[t] = COCO_TOOLS[t](g, d)
            times[t].append(time.perf_counter() - t0)
            faults[t].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    return times, results, faults


def check_agreement(name, results):
    "Every tool's AP equals pycocotools' to 1e-12, and clinseg's AP of every class and threshold equals COCOeval's"
    if "pycocotools" not in results: return "pycocotools not installed: nothing to compare"
    ref_ap, ref_per, ref_stats = results["pycocotools"]
    for t, (ap, _, stats) in ((t, r) for t, r in results.items() if r is not None):
        if not abs(ap - ref_ap) <= 1e-12: raise AssertionError(f"{name}: {t} AP {ap!r} differs from pycocotools' "
                                                               f"{ref_ap!r}")
        if stats is not None and not np.allclose(stats, ref_stats, rtol=0, atol=1e-12):
            raise AssertionError(f"{name}: {t}: the twelve numbers differ from COCOeval's: {stats} {ref_stats}")
    for t in ("clinseg", "clinseg: twelve numbers", "clinseg: records"):
        per = results[t][1]
        same_nan = np.array_equal(np.isnan(per), np.isnan(ref_per))
        if not (same_nan and np.allclose(per[~np.isnan(per)], ref_per[~np.isnan(ref_per)], rtol=0, atol=1e-12)):
            raise AssertionError(f"{name}: {t}: AP per class and threshold differs from COCOeval's")
    return (f"AP {ref_ap:.12f}: every tool within 1e-12 of pycocotools (the twelve numbers of every tool that gives "
            "them), clinseg on every class and threshold too")


def coco_part(args):
    sets = QUICK_SETS if args.quick else COCO_SETS
    tools = (["clinseg", "clinseg: twelve numbers", "clinseg: records", "clinseg: decoding only"]
             + [t for t, m in PEER_MODULES.items() if importlib.util.find_spec(m)])
    rounds = 2 if args.quick else args.rounds
    t0 = time.perf_counter()
    COCO_TOOLS["clinseg"](*coco_set(1, 3, 3, (20, 30), seed=99))
    first = time.perf_counter() - t0
    print(f"\n(b) COCO segm from a COCO dict and a results list (compressed RLE strings), {rounds} paired rounds, "
          "median [min-max]")
    print("    clinseg's first call in this process (loading numba and its cached loops, or compiling them once): "
          f"{1000 * first:.0f} ms")
    for name, (n_img, n_obj, n_det, shape) in sets.items():
        gt, dets = coco_set(n_img, n_obj, n_det, shape, seed=1)
        n_ann = len(gt["annotations"])
        n_crowd = sum(a["iscrowd"] for a in gt["annotations"])
        load0 = os.getloadavg()[0]
        times, results, faults = paired_rounds(tools, gt, dets, rounds)
        load1 = os.getloadavg()[0]
        print(f"\n{name}: {n_img} images {shape[0]}x{shape[1]}, {n_ann} true objects ({n_crowd} crowd regions; "
              f"{overlapping_images(gt)} images with "
              f"overlapping objects), {len(dets)} detections, {len(COCO_CLASSES)} classes; load average {load0:.1f} -> "
              f"{load1:.1f}")
        print("| tool | ms, median [min-max] | clinseg AP / tool, median of rounds [min-max] | clinseg twelve numbers "
              "/ tool | fresh pages per call, median |\n|---|---|---|---|---|")
        base, twelve = np.array(times["clinseg"]), np.array(times["clinseg: twelve numbers"])
        for t in tools:
            x = np.array(times[t])
            r, r12 = base / x, twelve / x
            ratio = ("- | -" if t.startswith("clinseg") else f"{np.median(r):.2f}x [{r.min():.2f}-{r.max():.2f}] | "
                     f"{np.median(r12):.2f}x [{r12.min():.2f}-{r12.max():.2f}]")
            print(f"| {t} | {1000 * np.median(x):.1f} [{1000 * x.min():.1f}-{1000 * x.max():.1f}] | "
                  + ratio + f" | {np.median(faults[t]):.0f} |")
        print(check_agreement(name, results))
        boundary_part(gt, dets, rounds)
        for t in ("clinseg", "hotcoco"):
            if t in tools:
                c, w = cpu_and_wall(t, gt, dets, rounds)
                print(f"    {t}: CPU {1000 * c:.1f} ms for {1000 * w:.1f} ms of wall time (medians of {rounds} calls)")


def boundary_faster(gt, dets):
    "faster-coco-eval's Boundary AP: its twelve numbers"
    from faster_coco_eval import COCO, COCOeval_faster
    g = COCO()
    g.dataset = gt
    g.createIndex()
    E = COCOeval_faster(g, g.loadRes(dets), "boundary", print_function=lambda *a: None)
    E.evaluate()
    E.accumulate()
    E.summarize()
    return np.array(E.stats[:12])


def boundary_clinseg(gt, dets):
    from clinseg.coco_eval import coco_summary
    return coco_summary(gt, dets, "boundary").stats


def boundary_part(gt, dets, rounds):
    ("Boundary AP's twelve numbers, clinseg against faster-coco-eval's boundary mode, paired rounds (the order "
     "alternating), the numbers checked equal")
    import copy, gc
    if not importlib.util.find_spec("faster_coco_eval"): return
    tools = {"clinseg": boundary_clinseg, "faster-coco-eval": boundary_faster}
    times, out = {t: [] for t in tools}, {}
    for r in range(rounds):
        for t in (list(tools) if r % 2 == 0 else list(tools)[::-1]):
            g, d = copy.deepcopy(gt), copy.deepcopy(dets)
            gc.collect()
            t0 = time.perf_counter()
            out[t] = tools[t](g, d)
            times[t].append(time.perf_counter() - t0)
    if not np.allclose(out["clinseg"], out["faster-coco-eval"], rtol=0, atol=1e-12):
        raise AssertionError(f"Boundary AP differs: {out}")
    c, f = np.array(times["clinseg"]), np.array(times["faster-coco-eval"])
    print(f"    Boundary AP (dilation 0.02), twelve numbers equal to 1e-12: clinseg {1000 * np.median(c):.1f} ms "
          f"[{1000 * c.min():.1f}-{1000 * c.max():.1f}], faster-coco-eval {1000 * np.median(f):.1f} ms; clinseg / "
          f"faster-coco-eval {np.median(c / f):.2f}x [{(c / f).min():.2f}-{(c / f).max():.2f}]")


WORKERS = {"wad:clinseg": wad_clinseg, "wad:pycocotools": wad_pycocotools, "wad:faster-coco-eval": wad_faster,
           "wad:hotcoco": wad_hotcoco}


def run_worker(name, argv):
    "Run one tool in a fresh process; None when it is not installed"
    res = subprocess.run([sys.executable, __file__, "--worker", name, *argv], capture_output=True, text=True)
    if res.returncode:
        if "ModuleNotFoundError" in res.stderr: return None
        raise RuntimeError(f"{name} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def wad_part(args):
    argv = [f"--frames={args.frames}", f"--height={args.height}", f"--width={args.width}", f"--truth={args.truth}",
            f"--preds={args.preds}"]
    print(f"(a) {args.frames} frames {args.height}x{args.width}, ~{args.truth} true and ~{args.preds} predicted "
          "instances each, from dense masks "
          f"(one run per tool, each in its own process; load average {os.getloadavg()[0]:.1f})")
    rows = {}
    for tool in ("clinseg", "pycocotools", "faster-coco-eval", "hotcoco"):
        r = run_worker(f"wad:{tool}", argv)
        if r: rows[tool] = r
    base = rows["clinseg"]["encode"] + rows["clinseg"]["evaluate"]
    print("| tool | to runs / RLE (s) | evaluate (s) | total (s) | total vs clinseg | peak RSS (MB) | AP "
          "|\n|---|---|---|---|---|---|---|")
    for tool, r in rows.items():
        tot = r["encode"] + r["evaluate"]
        print(f"| {tool} | {r['encode']:.2f} | {r['evaluate']:.3f} | {tot:.2f} | {tot / base:.1f}x | "
              f"{r['maxrss_mb']:.0f} | {r['ap']:.6f} |")
    for tool, r in rows.items():
        if not abs(r["ap"] - rows["clinseg"]["ap"]) <= 1e-12:
            raise AssertionError(f"(a): {tool} AP {r['ap']!r} differs from clinseg's {rows['clinseg']['ap']!r}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="small inputs, a few seconds, still checking that every tool gives the same AP (CI runs it)")
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--height", type=int, default=2710)
    p.add_argument("--width", type=int, default=3384)
    p.add_argument("--truth", type=int, default=30)
    p.add_argument("--preds", type=int, default=50)
    p.add_argument("--rounds", type=int, default=5, help="paired rounds of (b)")
    p.add_argument("--only", choices=["wad", "coco"], help="run one part")
    p.add_argument("--worker")
    args = p.parse_args()
    if args.quick: args.frames, args.height, args.width, args.truth, args.preds = 2, 300, 400, 12, 20
    if args.worker:
        out = WORKERS[args.worker](args)
        out["maxrss_mb"] = maxrss_mb()
        print(json.dumps(out))
        return
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()) + f"; {os.cpu_count()} cores")
    if args.only != "coco": wad_part(args)
    if args.only != "wad": coco_part(args)


if __name__ == "__main__":
    main()
