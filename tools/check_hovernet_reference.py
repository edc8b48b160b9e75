"""Run HoVer-Net's REAL metrics against clinseg.panoptic on the test scenes, and print the figures.

    python tools/check_hovernet_reference.py DIR [--hovernet-git GIT_DIR]

DIR is a scratch folder outside the project (e.g. /tmp/wH2). If DIR/stats_utils.py is missing, it is copied unchanged
from vqdang/hover_net (commit 67e2ce5, metrics/stats_utils.py) out of the bare mirror. The file imports cv2 and
matplotlib.pyplot at the top and uses neither in the four functions compared: an empty stand-in module is put in
`sys.modules` for whichever of them is not installed. Ids are made contiguous first (HoVer-Net's functions need it).

With --conic, CoNIC's metrics/stats_utils.py and misc/utils.py (TissueImageAnalytics/CoNIC, commit c1c4964) are copied
unchanged to DIR/conic and its `get_multi_pq_info` is run on classified scenes against `multi_pq(aggregate="conic")`:
pooled TP, FP, FN, IoU sums, and CoNIC's mPQ+ (compute_stats.py's pooling formula) from them. sklearn, which it
imports for `r2_score` only, is stubbed when missing.
"""
import argparse
import importlib.util
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MIRROR = "/work/.mirror/vqdang+hover_net/repo"


def load_stats_utils(folder, git_dir=MIRROR):
    "The real stats_utils module from `folder` (copied there unchanged first if missing), and the stubs it needed"
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "stats_utils.py"
    if not path.exists():
        text = subprocess.run(["git", f"--git-dir={git_dir}", "show", "HEAD:metrics/stats_utils.py"], check=True,
                              capture_output=True).stdout
        path.write_bytes(text)
    stubs = []
    for name in ("cv2", "matplotlib.pyplot"):
        try:
            importlib.import_module(name)
        except ImportError:
            stubs.append(name)
            sys.modules[name] = types.ModuleType(name)
            if "." in name: setattr(sys.modules.setdefault(name.split(".")[0], types.ModuleType(name.split(".")[0])),
                                    name.split(".")[1], sys.modules[name])
    spec = importlib.util.spec_from_file_location("hovernet_stats_utils", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, stubs


CONIC = "/work/.mirror/TissueImageAnalytics+CoNIC/repo"


def load_conic(folder, git_dir=CONIC):
    "CoNIC's real metrics.stats_utils, copied unchanged under folder/conic, and the stubs it needed"
    root = Path(folder) / "conic"
    for path in ("metrics/stats_utils.py", "misc/utils.py"):
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            dest.write_bytes(subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], check=True,
                                            capture_output=True).stdout)
    stubs = []
    try:
        importlib.import_module("sklearn.metrics")
    except ImportError:
        stubs.append("sklearn.metrics")
        sk, skm = types.ModuleType("sklearn"), types.ModuleType("sklearn.metrics")
        def r2_score(*a, **k): raise NotImplementedError("sklearn is stubbed")
        skm.r2_score, sk.metrics = r2_score, skm
        sys.modules.update({"sklearn": sk, "sklearn.metrics": skm})
    sys.path.insert(0, str(root))
    return importlib.import_module("metrics.stats_utils"), stubs


def compare_conic(cs, scenes, n_classes=3):
    "Max |difference| of pooled counts and of CoNIC's mPQ+ (from its own counts vs clinseg's) over the scenes"
    from clinseg.panoptic import multi_pq
    ti, tc, pi, pc, _ = zip(*scenes)
    infos = [cs.get_multi_pq_info(np.stack(t, -1), np.stack(p, -1), nr_classes=n_classes)
             for t, p in zip(zip(ti, tc), zip(pi, pc))]
    total = np.sum(np.array(infos, dtype=float), axis=0)
    mine = multi_pq(ti, pi, tc, pc, n_classes, "conic")
    pooled = mine.counts.sum(axis=0)

    def mpq(c):
        tp, fp, fn, iou = c.T
        return float(np.mean(tp / ((tp + 0.5 * fp + 0.5 * fn) + 1.0e-6) * (iou / (tp + 1.0e-6))))
    return {"pooled TP, FP, FN": float(np.abs(pooled[:, :3] - total[:, :3]).max()),
            "pooled IoU sums": float(np.abs(pooled[:, 3] - total[:, 3]).max()),
            "mPQ+ (CoNIC's formula on each side's counts)": abs(mpq(pooled) - mpq(total)),
            "mPQ+ (clinseg's exact formula) vs CoNIC's": abs(mine.score - mpq(total))}


def compare(su, scenes, thresholds=(0.5, 0.3, 0.75, 0.1)):
    "Max |difference| per metric over the scenes, and every failure of the real code: {(metric, error): [cases]}"
    from clinseg.panoptic import nuclei_scores
    from tests.reference.hovernet_stats import remap
    diffs, breaks, cases = {}, {}, 0

    def note(key, d): diffs[key] = max(diffs.get(key, 0.0), d)

    def run(metric, name, f, *args):
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                out = f(*args)
            for x in w: breaks.setdefault((metric, f"{x.category.__name__}: {x.message}"), []).append(name)
            return out
        except Exception as e:  # noqa: BLE001 - every failure of the real code is a figure to report
            breaks.setdefault((metric, f"{type(e).__name__}: {e}"), []).append(name)
            return None

    for name, t, p in scenes:
        tt, pp = remap(t), remap(p)
        cases += 1
        for m in thresholds:
            mine = nuclei_scores(t, p, m).pq
            ref = run(f"get_fast_pq({m})", name, su.get_fast_pq, tt, pp, m)
            if ref is None: continue
            (dq, sq, pq), (pt, pp_, ut, up) = ref
            note("PQ counts (TP, FP, FN) differ", float((mine.tp, mine.fp, mine.fn) != (len(pt), len(up), len(ut))))
            note("DQ = RQ", abs(mine.dq - dq))
            note("SQ (HoVer-Net's: IoU sum / (TP + 1e-6))", abs(mine.iou_sum / (mine.tp + 1e-6) - sq))
            note("PQ (HoVer-Net's, as above)", abs(mine.rq * mine.iou_sum / (mine.tp + 1e-6) - pq))
            note("PQ (clinseg: mean IoU) vs HoVer-Net's", abs(mine.pq - pq))
        s = nuclei_scores(t, p)
        for key, f in (("AJI", su.get_fast_aji), ("AJI+", su.get_fast_aji_plus), ("Dice2", su.get_fast_dice_2)):
            ref = run(f.__name__, name, f, tt, pp)
            mine = {"AJI": s.aji, "AJI+": s.aji_plus, "Dice2": s.dice2}[key]
            if ref is None: continue
            if np.isnan(ref): note(f"{key} (nan in both)", 0.0 if np.isnan(mine) else 1.0)
            else: note(key, abs(mine - float(ref)))
    return cases, diffs, breaks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="scratch folder holding (or to hold) HoVer-Net's stats_utils.py, outside the project")
    ap.add_argument("--hovernet-git", default=MIRROR, help="bare git mirror of vqdang/hover_net")
    ap.add_argument("--large", type=int, default=0, help="also this many 256x256 images of 60 nuclei")
    ap.add_argument("--conic", action="store_true", help="also CoNIC's get_multi_pq_info against multi_pq")
    args = ap.parse_args(argv)
    su, stubs = load_stats_utils(args.dir, args.hovernet_git)
    from tests.test_panoptic import _scenes
    scenes = _scenes()
    if args.large:
        from clinseg.iou_sweep import synthetic_nuclei, synthetic_prediction
        for k in range(args.large):
            lab = synthetic_nuclei((256, 256), n=60, seed=100 + k, noise=0)[1]
            scenes.append((f"256x256 seed {k}", lab, synthetic_prediction(lab, seed=k, shift=3)))
    print(f"real stats_utils.py: {Path(args.dir) / 'stats_utils.py'}; numpy {np.__version__}; "
          f"stubbed imports: {', '.join(stubs) or 'none'}")
    cases, diffs, breaks = compare(su, scenes)
    print(f"{cases} cases (PQ at match_iou 0.5, 0.3, 0.75, 0.1; AJI, AJI+, Dice2)")
    for key, d in diffs.items(): print(f"  max |difference| {key}: {d:.3g}")
    print("failures of the real code:" if breaks else "no failure of the real code")
    for (metric, what), names in sorted(breaks.items()):
        print(f"  {metric}: {what} -- {len(names)} case(s), e.g. {names[0]}")
    if args.conic:
        from tests.test_panoptic import _classified_scenes
        cs, stubs = load_conic(args.dir)
        scenes = _classified_scenes(n=24)
        print(f"CoNIC: {Path(args.dir) / 'conic'}; stubbed imports: {', '.join(stubs) or 'none'}; "
              f"{len(scenes)} patches 64x64, 3 classes")
        for key, d in compare_conic(cs, scenes).items(): print(f"  max |difference| {key}: {d:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
