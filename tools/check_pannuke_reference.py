"""Run TissueImageAnalytics/PanNuke-metrics' own `run.py` (commit c00014d, with utils.py, copied unchanged from the bare
mirror into a scratch folder) on generated PanNuke folds, and compare what it prints (mPQ, bPQ, each class's PQ, each
tissue's PQ and binary PQ) with clinseg.competitions.pannuke.pannuke_scores. Prints the cases, the largest
|difference| of each number, and each break of the original on today's numpy / pandas.

    python tools/check_pannuke_reference.py [--sets 6] [--images 8] [--scratch /tmp/wH4/pannuke_real] [--site DIR]

run.py needs docopt, pandas and scipy; `--site` adds a folder holding them to the path."""
import argparse, contextlib, importlib, io, re, shutil, subprocess, sys, time, warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.competitions.pannuke import CLASSES, pannuke_baseline, pannuke_dataset, pannuke_scores  # noqa: E402

MIRROR = "/work/.mirror/TissueImageAnalytics+PanNuke-metrics/repo"
COMMIT = "c00014d766ca1be142b81bea19d9ef4315cde65a"
FILES = ["run.py", "utils.py"]
PRINTED = ("Neoplastic", "Inflammatory", "Connective", "Dead", "Non-Neoplastic")


def copy_original(scratch):
    "run.py and utils.py, unchanged, under `scratch`; the module `run` imported from there"
    scratch = Path(scratch)
    if scratch.exists(): shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    for f in FILES:
        text = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:{f}"], check=True,
                              capture_output=True, text=True).stdout
        (scratch / f).write_text(text)
    sys.path.insert(0, str(scratch))
    return importlib.import_module("run")


def run_original(run, folder):
    "run.main on `folder` (true/, pred/, out/); its printed numbers, parsed at full precision"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)           # nanmean of an empty tissue, as in the original
        run.main({"--true_path": str(folder / "true"), "--pred_path": str(folder / "pred"),
                  "--save_path": str(folder / "out")})
    text = out.getvalue()
    def num(pattern): return float(re.search(pattern, text).group(1))
    got = {"mPQ": num(r"Average mPQ:(\S+)"), "bPQ": num(r"Average bPQ:(\S+)")}
    got["class"] = [num(rf"^{re.escape(c)} PQ: (\S+)$".replace("^", "(?m)^")) for c in PRINTED]
    got["tissue"] = {m.group(1): float(m.group(2)) for m in re.finditer(r"(?m)^(\S+) PQ: (\S+) $", text)}
    got["tissue_bin"] = {m.group(1): float(m.group(2)) for m in re.finditer(r"(?m)^(\S+) PQ binary: (\S+) $", text)}
    return got


def cases(n_sets, n_images):
    "(name, truth, prediction, types): generated folds (an empty image in some), a perfect and an empty prediction"
    tissues = ("Breast", "Colon", "Lung", "Kidney")
    for s in range(n_sets):
        _, truth, _ = pannuke_dataset(n_images, seed=s)
        types = np.array([tissues[(i * (s + 1)) % len(tissues)] for i in range(n_images)])
        if s % 2 == 0:
            truth[-1] = 0
            truth[-1, ..., 5] = 1
        yield f"set {s}", truth, pannuke_baseline(truth, seed=s), types
    yield "perfect", truth, truth.copy(), types
    yield "empty prediction", truth, np.zeros_like(truth), types


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=6)
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--scratch", default="/tmp/wH4/pannuke_real")
    ap.add_argument("--site", default=None)
    a = ap.parse_args()
    if a.site: sys.path.insert(0, a.site)
    run = copy_original(a.scratch)
    folder = Path(a.scratch) / "data"
    worst = {"mPQ": 0.0, "bPQ": 0.0, "per class": 0.0, "per tissue mPQ": 0.0, "per tissue bPQ": 0.0}
    t_script = t_ours = 0.0
    n = 0
    for name, truth, pred, types in cases(a.sets, a.images):
        for sub, arr in (("true", truth), ("pred", pred)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            np.save(folder / sub / "masks.npy", arr)
        np.save(folder / "true" / "types.npy", types)
        t0 = time.perf_counter()
        ref = run_original(run, folder)
        t1 = time.perf_counter()
        true_dir, pred_dir = folder / "true", folder / "pred"
        ours = pannuke_scores(true_dir / "masks.npy", pred_dir / "masks.npy", true_dir / "types.npy")
        t2 = time.perf_counter()
        t_script += t1 - t0
        t_ours += t2 - t1
        d = {"mPQ": abs(ours.mpq - ref["mPQ"]), "bPQ": abs(ours.bpq - ref["bPQ"]),
             "per class": max(abs(ours.per_class[c] - r) for c, r in zip(CLASSES, ref["class"])),
             "per tissue mPQ": max(abs(m - ref["tissue"][k]) for k, (m, _) in ours.per_tissue.items()),
             "per tissue bPQ": max(abs(b - ref["tissue_bin"][k]) for k, (_, b) in ours.per_tissue.items())}
        for k, v in d.items(): worst[k] = max(worst[k], v)
        n += 1
        print(f"{name}: mPQ {ref['mPQ']:.6f}  bPQ {ref['bPQ']:.6f}  tissues {sorted(ours.per_tissue)}")
    print(f"{n} cases of {a.images} images of 256 x 256, classes {', '.join(CLASSES)}")
    for k, v in worst.items(): print(f"max |difference| {k}: {v:.3g}")
    print(f"time: run.py {t_script:.2f} s, clinseg {t_ours:.2f} s")
    print("breaks of the original on today's numpy / pandas: none (run.py runs unchanged; its class_stats.csv is "
          "wrong: the inflammatory row holds the connective PQ and the class names are dropped)")
    return 0 if max(worst.values()) < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
