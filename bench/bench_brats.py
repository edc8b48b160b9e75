"""Speed of clinseg's BraTS 2023 per-case rows against a re-expression of the organisers' script and, when its
environment is there, the script itself, in paired rounds.

    python bench/bench_brats.py [--quick] [--rounds N]

Input, made here: a 240x240x155 case of 1 mm voxels (with --quick, 64x64x48) with four tumours (oedema, an enhancing
rim, a necrotic centre, radii 9-24 voxels; 5-9 with --quick) and eight small enhancing lesions (metastasis-like, 5-7
voxels across), written as NIfTI; the prediction is the truth moved by one voxel, without three of the small lesions,
with four false-positive blobs.
Contenders, each given the two files and computing the three rows (WT, TC, ET) of the per-case CSV for BraTS-GLI
(dilation 3, threshold 50 mm³), lesion-wise and legacy numbers:
- clinseg: `read_case` (the folder protocol's reading) and `clinseg.competitions.brats2023.score_rows`;
- the re-expression: `tests/reference/brats2023_metrics.py`'s `lesion_wise_results_files`, which follows the
  script's passes (a full-volume pass per lesion) in this process;
- the script: rachitsaluja/BraTS-2023-Metrics metrics.py @ 43c9052, `get_LesionWiseResults`, run in the virtual
  environment that tools/check_brats_reference.py makes and caches (left out, with a note, when that environment or
  the clone is absent); its time is measured inside its own process, around the call.
Every contender's numbers are checked equal to clinseg's (to 1e-12) before timing. Each round times every contender
once, in alternating order; a ratio is the peer's time over clinseg's in the same round, reported as the median and the
range over rounds.
"""
import argparse, csv, importlib.util, json, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.competitions.brats2023 import COLUMNS, score_rows  # noqa: E402
from clinseg.folders import read_case  # noqa: E402
from tests.reference import brats2023_metrics as ref  # noqa: E402


def _ball(out, centre, radius, label):
    "Set `label` inside an ellipsoid of radii `radius` (voxels), touching only its bounding box"
    lo = [max(int(c - r) - 1, 0) for c, r in zip(centre, radius)]
    hi = [min(int(c + r) + 2, n) for c, r, n in zip(centre, radius, out.shape)]
    g = np.ogrid[tuple(slice(a, b) for a, b in zip(lo, hi))]
    inside = sum(((x - c) / r) ** 2 for x, c, r in zip(g, centre, radius)) <= 1
    out[tuple(slice(a, b) for a, b in zip(lo, hi))][inside] = label


def case(shape, quick, rng):
    "(pred, truth) label volumes"
    truth = np.zeros(shape, np.uint8)
    big = (5, 9) if quick else (9, 24)
    for _ in range(4):
        r = rng.uniform(*big, 3)
        c = [rng.uniform(r_ + 2, n - r_ - 2) for r_, n in zip(r, shape)]
        for label, f in ((2, 1.0), (3, 0.55), (1, 0.3)): _ball(truth, c, r * f, label)
    small = []
    for _ in range(8):
        c = [rng.uniform(4, n - 4) for n in shape]
        small.append(c)
        _ball(truth, c, rng.uniform(2.5, 3.5, 3), 3)
    pred = np.roll(truth, 1, axis=0)
    for c in small[:3]: _ball(pred, [c[0] + 1] + c[1:], (4.5, 4.5, 4.5), 0)
    for _ in range(4): _ball(pred, [rng.uniform(4, n - 4) for n in shape], (2, 2, 2), 3)
    return pred, truth


def write(data, path):
    import nibabel as nib
    affine = np.diag([-1.0, -1.0, 1.0, 1.0])
    img = nib.Nifti1Image(data, affine)
    img.set_sform(affine, code=1)
    img.set_qform(affine, code=1)
    nib.save(img, str(path))


def real_script():
    "(Script, note): the script in its cached environment, or (None, why not)"
    spec = importlib.util.spec_from_file_location("check_brats_reference", ROOT / "tools" / "check_brats_reference.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    marker = tool.cache_dir() / "clinseg-pins.json"
    if not marker.exists(): return None, f"no environment in {tool.cache_dir()}: run tools/check_brats_reference.py"
    repo = Path(tool.os.environ.get("CLINSEG_BRATS_REPO", tool.DEFAULT_REPO))
    if not repo.exists(): return None, f"no clone of the script at {repo} (CLINSEG_BRATS_REPO)"
    src = tool.script_source(repo, Path(tempfile.mkdtemp(prefix="clinseg-bench-brats-")))
    return tool.Script(tool.cache_dir() / "bin" / "python", src), ""


def main(quick, rounds):
    shape = (64, 64, 48) if quick else (240, 240, 155)
    work = Path(tempfile.mkdtemp(prefix="clinseg-bench-brats-"))
    pred, truth = case(shape, quick, np.random.default_rng(2023))
    t_path, p_path = work / "truth.nii.gz", work / "pred.nii.gz"
    write(truth, t_path)
    write(pred, p_path)
    out_csv = work / "script.csv"

    def ours(): return score_rows(*read_case(t_path, p_path), "GLI")
    def theirs(): return ref.lesion_wise_results_files(p_path, t_path, "BraTS-GLI")
    script, note = real_script()
    seconds = {}
    def official():
        answer = script.run(p_path, t_path, "BraTS-GLI", out_csv)
        if "error" in answer: raise RuntimeError(answer["error"])
        seconds["last"] = answer["seconds"]
        with open(out_csv, newline="") as f: return [{k: (v if k == "Labels" else float(v)) for k, v in r.items()}
                                                     for r in csv.DictReader(f)]
    want = ours()
    contenders = {"re-expression": theirs} | ({"script": official} if script else {})
    for name, f in contenders.items():
        for a, b in zip(want, f()):
            assert list(a) == list(b) == list(COLUMNS), (name, list(b))
            for c in COLUMNS[1:]: assert abs(a[c] - b[c]) <= 1e-12, (name, a["Labels"], c, a[c], b[c])
    times = {"clinseg": []} | {n: [] for n in contenders}
    order = list(times)
    for i in range(rounds):
        for name in (order if i % 2 == 0 else order[::-1]):
            f = ours if name == "clinseg" else contenders[name]
            t0 = time.perf_counter()
            f()
            times[name].append(seconds["last"] if name == "script" else time.perf_counter() - t0)
    if script: script.close()
    lesions = {r["Labels"]: int(r["Num_TP"] + r["Num_FN"]) for r in want}   # above the threshold
    print(f"{rounds} paired rounds; case {'x'.join(map(str, shape))}, true lesions above 50 mm³ per region {lesions}; "
          f"numpy {np.__version__}" + (" (quick)" if quick else ""))
    if not script: print(f"the script's row is left out: {note}", file=sys.stderr)
    print("| contender | median s | its time / clinseg's: median (range) |")
    print("|---|---|---|")
    for name, ts in times.items():
        r = [b / a for a, b in zip(times["clinseg"], ts)]
        print(f"| {name} | {statistics.median(ts):.3f} | {statistics.median(r):.1f} ({min(r):.1f}–{max(r):.1f}) |")
    print("numbers: " + json.dumps({r["Labels"]: {k: round(r[k], 4) for k in ("LesionWise_Score_Dice",
                                                                               "LesionWise_Score_HD95", "Legacy_Dice")}
                                    for r in want}))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 64x64x48 case and 2 rounds: seconds")
    ap.add_argument("--rounds", type=int, default=None, help="paired rounds (default 5, 2 with --quick)")
    args = ap.parse_args()
    main(args.quick, args.rounds or (2 if args.quick else 5))
