"""Benchmark: where the time of COCO's twelve numbers goes, clinseg's `coco_summary` stage by stage beside hotcoco's.

The input is bench_ap.py's "coco500" set (500 images 480x640, ~30 overlapping true objects and 36 detections each,
compressed RLE strings, crowd regions) or, with `--images N`, its first N images' worth of the same generator.
clinseg's stages are the steps of `coco_summary` called one by one with the public functions it is made of:
reading the ground truth (`coco_truth`: every record checked, every string decoded to runs), reading the results
(`coco_predictions`), matching (`cap_detections` and `match_by_area`: pairs, IoUs, greedy matching in four area
ranges) and accumulating (`count_by_area`, `rank_by_class`, `coco_tables`). hotcoco's are its calls:
`COCO(gt)`, `load_res`, `evaluate`, `accumulate` + `summarize`. A last row gives the floor of any reader written in
Python: getting every field of every record out of the dicts (no checks, no decoding).

Paired rounds (the two tools alternate which runs first), medians with the min-max range; wall time, and the process
CPU time of each tool's whole run (hotcoco runs threads). The staged AP must equal `coco_summary`'s, and clinseg's
twelve numbers hotcoco's, to 1e-12.

`--memory N` measures instead the peak memory of `coco_summary` on N images (the 500-image set repeated under new
image and annotation ids, so 5,000 images have ~150,000 true objects and 180,000 detections): a fresh process reads the
two JSON files with `json.load`, then imports the tool (numba's loads LLVM: ~130 MiB), then scores them; its peak
resident memory (VmHWM) is given after each step, beside hotcoco's in a process of its own, and the twelve numbers
must agree.

Usage: `python bench/bench_coco_stages.py` (500 images), `--images 50`, `--memory 5000`, or `--quick` (CI: small,
seconds, the memory part too).
"""
import argparse, contextlib, copy, gc, importlib.util, io, json, operator, resource, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import numpy as np  # noqa: E402
from bench_ap import coco_hotcoco, coco_set  # noqa: E402


def clinseg_stages(gt, dets):
    "clinseg's `coco_summary`, stage by stage: ({stage: seconds}, AP)"
    from clinseg.ap import COCO_THRESHOLDS, image_order
    from clinseg.coco_eval import (COCO_AREAS, COCO_MAX_DETS, coco_classes, coco_predictions, coco_tables, coco_truth,
                                   count_by_area, rank_by_class)
    from clinseg.matching import match_by_area
    from clinseg.predictions import cap_detections
    t, clock = {}, time.perf_counter
    t0 = clock()
    truth = coco_truth(gt)
    t1 = clock()
    pr = coco_predictions(dets, truth)
    t2 = clock()
    classes = coco_classes(gt)
    truths = [truth[k] for k in image_order(truth)]
    caps = cap_detections(pr, COCO_MAX_DETS)
    matched = match_by_area(truths, pr, caps[-1], classes, COCO_THRESHOLDS, False, False, list(COCO_AREAS.values()))
    t3 = clock()
    n_truth = count_by_area(truths, classes, True).sum(1)
    order, ci, bounds = rank_by_class(pr, caps[-1], classes)
    ap, _ = coco_tables([m[0] for m in matched], order, bounds, ci, caps, n_truth)   # and the recall tables
    t4 = clock()
    t.update({"read the ground truth": t1 - t0, "read the results": t2 - t1, "match": t3 - t2,
              "accumulate": t4 - t3})
    return t, float(np.nanmean(ap[0]))


def hotcoco_stages(gt, dets):
    "hotcoco's calls, one by one: ({stage: seconds}, twelve numbers)"
    import hotcoco
    t, clock = {}, time.perf_counter
    t0 = clock()
    g = hotcoco.COCO(gt)
    t1 = clock()
    res = g.load_res(dets)
    t2 = clock()
    E = hotcoco.COCOeval(g, res, "segm")
    with contextlib.redirect_stdout(io.StringIO()):
        E.evaluate()
        t3 = clock()
        E.accumulate()
        E.summarize()
    t4 = clock()
    t.update({"COCO(gt)": t1 - t0, "load_res": t2 - t1, "evaluate": t3 - t2, "accumulate + summarize": t4 - t3})
    return t, np.array(E.stats[:12])


def reading_floor(gt, dets):
    "Every field of every record taken out of the dicts, the strings joined: what any Python reader pays at least"
    clock = time.perf_counter
    t0 = clock()
    ann = operator.itemgetter("id", "image_id", "category_id", "segmentation", "area", "iscrowd")
    det = operator.itemgetter("image_id", "category_id", "score", "segmentation")
    rows = [ann(a) for a in gt["annotations"]]
    b"".join(r[3]["counts"].encode() for r in rows)
    rows = [det(d) for d in dets]
    b"".join(r[3]["counts"].encode() for r in rows)
    return {"floor: every field out of the dicts": clock() - t0}


def timed(tool, gt, dets):
    "One call on fresh copies (hotcoco's load_res and COCO's readers may write into the records): result, CPU seconds"
    g, d = copy.deepcopy(gt), copy.deepcopy(dets)
    gc.collect()
    c0 = time.process_time()
    out = tool(g, d)
    return out, time.process_time() - c0


def repeated(gt, dets, times):
    "The set `times` over, each copy under new image and annotation ids"
    n_img, n_ann = len(gt["images"]), len(gt["annotations"])
    images = [dict(im, id=im["id"] + k * n_img) for k in range(times) for im in gt["images"]]
    anns = [dict(a, id=a["id"] + k * n_ann, image_id=a["image_id"] + k * n_img)
            for k in range(times) for a in gt["annotations"]]
    dets = [dict(d, image_id=d["image_id"] + k * n_img) for k in range(times) for d in dets]
    return dict(gt, images=images, annotations=anns), dets


def peak_mb():
    ("This process's peak resident memory, MiB: VmHWM (getrusage's maxrss would carry over the parent's, as a child "
     "keeps it across fork and exec on Linux)")
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"): return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hotcoco_summary(gt, dets): return coco_hotcoco(gt, dets)[2]


def memory_child(tool, gt_path, dets_path):
    ("In a fresh process: read the two files, import the tool and score the first image alone (numba's loops loaded), "
     "score the files; print the peak memory after each step, and the twelve numbers")
    gt, dets = json.loads(Path(gt_path).read_text()), json.loads(Path(dets_path).read_text())
    read = peak_mb()
    if tool == "clinseg":
        from clinseg.coco_eval import coco_summary
        def run(g, d): return coco_summary(g, d).stats
    else: run = hotcoco_summary
    first = gt["images"][0]["id"]
    run(dict(gt, images=gt["images"][:1], annotations=[a for a in gt["annotations"] if a["image_id"] == first]),
        [d for d in dets if d["image_id"] == first])
    ready = peak_mb()
    stats = run(gt, dets)
    print(json.dumps(dict(read=read, ready=ready, scored=peak_mb(), stats=[float(v) for v in stats])))


def memory_part(n_images, quick):
    base = 8 if quick else 500
    gt, dets = coco_set(base, 30, 36, (120, 160) if quick else (480, 640), seed=1)
    gt, dets = repeated(gt, dets, -(-n_images // base))
    with tempfile.TemporaryDirectory() as d:
        paths = [str(Path(d) / "gt.json"), str(Path(d) / "results.json")]
        Path(paths[0]).write_text(json.dumps(gt))
        Path(paths[1]).write_text(json.dumps(dets))
        print(f"Peak memory of a fresh process, {len(gt['images'])} images, {len(gt['annotations'])} true "
              f"objects, {len(dets)} detections; JSON files of {Path(paths[0]).stat().st_size / 2**20:.0f} and "
              f"{Path(paths[1]).stat().st_size / 2**20:.0f} MiB")
        print("| tool | after json.load, MiB | after importing the tool, MiB | after scoring, MiB | seconds |\n"
              "|---|---|---|---|---|")
        out = {}
        for tool in ["clinseg"] + (["hotcoco"] if importlib.util.find_spec("hotcoco") else []):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, __file__, "--memory-child", tool, *paths], capture_output=True,
                               text=True, check=True)
            out[tool] = json.loads(r.stdout)
            m, spent = out[tool], time.perf_counter() - t0
            print(f"| {tool} | {m['read']:.0f} | {m['ready']:.0f} | {m['scored']:.0f} | {spent:.1f} |")
    if "hotcoco" in out and not np.allclose(out["clinseg"]["stats"], out["hotcoco"]["stats"], rtol=0, atol=1e-12):
        raise AssertionError(f"the twelve numbers differ: {out['clinseg']['stats']} {out['hotcoco']['stats']}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small input, 2 rounds (CI)")
    p.add_argument("--images", type=int, default=500)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--memory", type=int, metavar="N", help="the peak memory of N images instead of the stages")
    p.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_child: return memory_child(*args.memory_child)
    if args.memory or args.quick:
        memory_part(args.memory or 40, args.quick)
        if args.memory: return
    n, shape, rounds = (8, (120, 160), 2) if args.quick else (args.images, (480, 640), args.rounds)
    gt, dets = coco_set(n, 30, 36, shape, seed=1)
    have_hotcoco = importlib.util.find_spec("hotcoco") is not None
    from clinseg.coco_eval import coco_summary
    summary = coco_summary(copy.deepcopy(gt), copy.deepcopy(dets))   # also loads numba's cached loops
    stages, cpu = {}, {"clinseg": [], "hotcoco": []}
    for r in range(rounds):
        tools = [("clinseg", clinseg_stages)] + ([("hotcoco", hotcoco_stages)] if have_hotcoco else [])
        for name, tool in (tools if r % 2 == 0 else tools[::-1]):
            (t, value), c = timed(tool, gt, dets)
            cpu[name].append(c)
            for k, v in t.items(): stages.setdefault((name, k), []).append(v)
            if name == "clinseg" and not abs(value - summary.stats[0]) <= 1e-12:
                raise AssertionError(f"staged AP {value!r} differs from coco_summary's {summary.stats[0]!r}")
            if name == "hotcoco" and not np.allclose(value, summary.stats, rtol=0, atol=1e-12):
                raise AssertionError(f"coco_summary's twelve numbers differ from hotcoco's: {summary.stats} {value}")
        for k, v in reading_floor(gt, dets).items(): stages.setdefault(("python", k), []).append(v)
    print(f"COCO segm, {n} images {shape[0]}x{shape[1]}, {len(gt['annotations'])} true objects, {len(dets)} "
          f"detections; {rounds} paired rounds, ms, median [min-max]")
    print("| tool | stage | ms |\n|---|---|---|")
    for name in ("clinseg", "hotcoco", "python"):
        rows = [(k, np.array(v)) for (tn, k), v in stages.items() if tn == name]
        for k, x in rows:
            print(f"| {name} | {k} | {1000 * np.median(x):.1f} [{1000 * x.min():.1f}-{1000 * x.max():.1f}] |")
        if name != "python" and rows:
            total = np.sum([x for _, x in rows], axis=0)
            c = np.array(cpu[name])
            print(f"| {name} | **total** (process CPU) | {1000 * np.median(total):.1f} [{1000 * total.min():.1f}-"
                  f"{1000 * total.max():.1f}] ({1000 * np.median(c):.1f}) |")
    if have_hotcoco:
        ratio = (np.sum([v for (tn, _), v in stages.items() if tn == "clinseg"], axis=0)
                 / np.sum([v for (tn, _), v in stages.items() if tn == "hotcoco"], axis=0))
        print(f"clinseg / hotcoco, wall, median of rounds: {np.median(ratio):.2f}x "
              f"[{ratio.min():.2f}-{ratio.max():.2f}]"
              "; the twelve numbers equal to 1e-12")
    else:
        print("hotcoco is not installed: clinseg's stages only")


if __name__ == "__main__":
    main()
