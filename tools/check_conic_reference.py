"""Run TissueImageAnalytics/CoNIC's own `compute_stats.py` (commit c1c4964, with metrics/stats_utils.py and
misc/utils.py, copied unchanged from the bare mirror into a scratch folder) on generated CoNIC patches and counts, in
both its modes, and compare its numbers with clinseg.competitions.conic2022.score_conic: "pq", "multi_pq+", the
pooled per-class counts (its `get_multi_pq_info`) and "multi_r2". Prints the cases, the largest |difference| of each
number, and each break of the original on today's numpy / pandas.

    python tools/check_conic_reference.py [--sets 8] [--patches 6] [--scratch /tmp/wH4/conic_real] [--site DIR]

The script needs docopt, tqdm, pandas and scikit-learn; `--site` adds a folder holding them to the path."""
import argparse, contextlib, io, runpy, shutil, subprocess, sys, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from clinseg.competitions.conic2022 import (CLASSES, baseline_prediction, conic_patches, patch_counts,  # noqa: E402
                                            score_conic, write_counts)

MIRROR = "/work/.mirror/TissueImageAnalytics+CoNIC/repo"
COMMIT = "c1c4964d2aefcb9ec0ba08e88ed563fd80d41ac4"
FILES = ["compute_stats.py", "metrics/stats_utils.py", "misc/utils.py"]


def copy_original(scratch):
    "The script's files, unchanged, under `scratch`"
    scratch = Path(scratch)
    if scratch.exists(): shutil.rmtree(scratch)
    for f in FILES:
        text = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:{f}"], check=True,
                              capture_output=True, text=True).stdout
        (scratch / f).parent.mkdir(parents=True, exist_ok=True)
        (scratch / f).write_text(text)
    sys.path.insert(0, str(scratch))
    return scratch


def run_script(scratch, *argv):
    "compute_stats.py run as `python compute_stats.py ARGV` in-process; its `all_metrics` (full precision)"
    old = sys.argv
    sys.argv = [str(scratch / "compute_stats.py"), *argv]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            g = runpy.run_path(str(scratch / "compute_stats.py"), run_name="__main__")
    finally:
        sys.argv = old
    return g["all_metrics"]


def cases(n_sets, n_patches):
    "(name, truth, prediction): generated sets, an empty patch among them, a perfect and an empty prediction"
    for s in range(n_sets):
        _, truth = conic_patches(n_patches, seed=s, nuclei=20 + 5 * s)
        truth[-1] = 0 if s % 3 == 0 else truth[-1]           # an empty patch in some sets
        yield f"set {s}", truth, baseline_prediction(truth, seed=s)
    yield "perfect", truth, truth.copy()
    yield "empty prediction", truth, np.zeros_like(truth)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=8)
    ap.add_argument("--patches", type=int, default=6)
    ap.add_argument("--scratch", default="/tmp/wH4/conic_real")
    ap.add_argument("--site", default=None)
    a = ap.parse_args()
    if a.site: sys.path.insert(0, a.site)
    scratch = copy_original(a.scratch)
    from metrics.stats_utils import get_multi_pq_info
    worst = {"pq": 0.0, "multi_pq+": 0.0, "per-class counts": 0.0, "multi_r2": 0.0}
    t_script = t_ours = 0.0
    n = 0
    for name, truth, pred in cases(a.sets, a.patches):
        np.save(scratch / "true.npy", truth)
        np.save(scratch / "pred.npy", pred)
        write_counts(scratch / "true.csv", patch_counts(truth))
        write_counts(scratch / "pred.csv", patch_counts(pred))
        t0 = time.perf_counter()
        seg = run_script(scratch, "--mode=seg_class", f"--pred={scratch}/pred.npy", f"--true={scratch}/true.npy")
        reg = run_script(scratch, "--mode=regression", f"--pred={scratch}/pred.csv", f"--true={scratch}/true.csv")
        info = np.sum(np.array([get_multi_pq_info(t, p) for t, p in zip(truth, pred)], dtype=float), axis=0)
        t1 = time.perf_counter()
        ours = score_conic(scratch / "true.npy", scratch / "pred.npy", scratch / "true.csv", scratch / "pred.csv")
        t2 = time.perf_counter()
        t_script += t1 - t0
        t_ours += t2 - t1
        d = {"pq": abs(ours.pq - seg["pq"][0]), "multi_pq+": abs(ours.mpq_plus - seg["multi_pq+"][0]),
             "per-class counts": float(np.abs(ours.counts - info).max()), "multi_r2": abs(ours.r2 - reg["multi_r2"][0])}
        for k, v in d.items(): worst[k] = max(worst[k], v)
        n += 1
        print(f"{name}: pq {seg['pq'][0]:.6f}  multi_pq+ {seg['multi_pq+'][0]:.6f}  multi_r2 {reg['multi_r2'][0]:.6f}")
    print(f"{n} cases of {a.patches} patches of 256 x 256 ({', '.join(CLASSES)})")
    for k, v in worst.items(): print(f"max |difference| {k}: {v:.3g}")
    print(f"time: script {t_script:.2f} s (pq, multi_pq+, counts twice over), clinseg {t_ours:.2f} s")
    print("breaks of the original on today's numpy / pandas: none found")
    return 0 if max(worst.values()) < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
