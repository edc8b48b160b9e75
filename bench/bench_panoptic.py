"""Speed of clinseg's `nuclei_scores` (PQ, AJI, AJI+ from one table) against HoVer-Net's functions, in paired rounds.

    python bench/bench_panoptic.py [--quick] [--rounds N] [--images N] [--hovernet DIR]

Inputs, made here: N label images of 256x256 (1,000; 20 with --quick), each `synthetic_nuclei((256, 256), n=60,
seed=k)` (about sixty touching elliptic nuclei), and its prediction `synthetic_prediction(labels, seed=k, shift=3)`
(objects shifted by up to 3 pixels, 10% missed, 10% invented), ids made contiguous (HoVer-Net needs them).
Contenders, each computing PQ (match_iou 0.5), AJI and AJI+ of every image:
- clinseg: `clinseg.panoptic.nuclei_scores(truth, pred)`;
- "re-expression": tests/reference/hovernet_stats.py (`fast_pq`, `fast_aji`, `fast_aji_plus`);
- "hover_net": the real `get_fast_pq`, `get_fast_aji`, `get_fast_aji_plus` of metrics/stats_utils.py, when --hovernet
  DIR names a scratch folder holding it (copied unchanged from the mirror when missing; see
  tools/check_hovernet_reference.py).
Values are checked equal (to 1e-12; HoVer-Net's SQ divides by TP + 1e-6) before timing. Each round times every
contender on the whole set; the ratio is the peer's time over clinseg's in that round, reported as the median and the
range over rounds.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.iou_sweep import synthetic_nuclei, synthetic_prediction  # noqa: E402
from clinseg.panoptic import nuclei_scores  # noqa: E402
from tests.reference import hovernet_stats as ref  # noqa: E402


def image_set(n):
    "n (truth, pred) pairs of 256x256 label images with about 60 touching nuclei each"
    out = []
    for k in range(n):
        lab = synthetic_nuclei((256, 256), n=60, seed=k, noise=0)[1]
        out.append((ref.remap(lab), ref.remap(synthetic_prediction(lab, seed=k, shift=3))))
    return out


def clinseg_scores(pairs):
    out = []
    for t, p in pairs:
        s = nuclei_scores(t, p)
        out.append((s.pq.rq * s.pq.iou_sum / (s.pq.tp + 1e-6), s.aji, s.aji_plus))
    return out


def peer(pq, aji, aji_plus):
    "A contender from three HoVer-Net-style functions"
    def scores(pairs):
        return [(pq(t, p, 0.5)[0][2], aji(t, p), aji_plus(t, p)) for t, p in pairs]
    return scores


def timed(f, pairs):
    t0 = time.perf_counter()
    out = f(pairs)
    return time.perf_counter() - t0, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 images, 3 rounds (under ~30 s)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--images", type=int, default=None)
    ap.add_argument("--hovernet", default=None, help="scratch folder with HoVer-Net's stats_utils.py")
    a = ap.parse_args(argv)
    n = a.images or (20 if a.quick else 1000)
    rounds = a.rounds or 3
    t0 = time.perf_counter()
    pairs = image_set(n)
    print(f"{n} images 256x256, {np.mean([t.max() for t, _ in pairs]):.1f} true nuclei per image on average "
          f"(made in {time.perf_counter() - t0:.1f} s); {rounds} rounds")
    contenders = {"clinseg": clinseg_scores,
                  "re-expression": peer(ref.fast_pq, ref.fast_aji, ref.fast_aji_plus)}
    if a.hovernet:
        sys.path.insert(0, str(ROOT / "tools"))
        from check_hovernet_reference import load_stats_utils
        su, stubs = load_stats_utils(a.hovernet)
        print(f"hover_net: {Path(a.hovernet) / 'stats_utils.py'} (stubbed imports: {', '.join(stubs) or 'none'})")
        contenders["hover_net"] = peer(su.get_fast_pq, su.get_fast_aji, su.get_fast_aji_plus)
    times = {k: [] for k in contenders}
    for r in range(rounds):
        results = {}
        for name, f in contenders.items():
            dt, results[name] = timed(f, pairs)
            times[name].append(dt)
        want = np.array(results["clinseg"])
        for name, got in results.items():
            d = float(np.abs(np.array(got) - want).max())
            assert d <= 1e-12, f"{name} differs from clinseg by {d:.3g}"
    print(f"values equal to 1e-12 (PQ, AJI, AJI+ of {n} images, every contender, every round)")
    base = times["clinseg"]
    for name, ts in times.items():
        line = f"{name:14s} median {statistics.median(ts):8.3f} s ({1e3 * statistics.median(ts) / n:7.2f} ms/image)"
        if name != "clinseg":
            ratios = [t / b for t, b in zip(ts, base)]
            line += (f"   {statistics.median(ratios):6.1f}x slower than clinseg "
                     f"(range {min(ratios):.1f}-{max(ratios):.1f})")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
