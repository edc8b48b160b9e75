"""Run the organisers' BraTS 2023 script itself on generated cases and compare every number with clinseg's.

    python tools/check_brats_reference.py [--repeat N] [--shape X Y Z] [--repo GIT_DIR] [--python PYTHON] [--keep DIR]

- The script: `metrics.py` and `surface_distance/` of rachitsaluja/BraTS-2023-Metrics at commit 43c9052, read with
  `git show` from a clone (`--repo`, a bare repository or a checkout's .git; default $CLINSEG_BRATS_REPO, else
  /work/.mirror/rachitsaluja+BraTS-2023-Metrics/repo) into a temporary folder; nothing of it is copied into clinseg.
- Its environment: a virtual environment of its own, made once and cached in ~/.cache/clinseg/brats2023-ref (under
  $XDG_CACHE_HOME when set). With a Python 3.9 or 3.10 (`--python`, else python3.10 or python3.9 on PATH) it gets the
  script's own pins (requirements.txt: numpy 1.24.3, pandas 1.3.4, scipy 1.11.1, nibabel 5.1.0,
  connected-components-3d 3.12.1) and the script runs unchanged. pandas 1.3.4 has no wheels for Python 3.11 and
  later; there the environment gets "numpy<2" "pandas<2" nibabel scipy connected-components-3d, and only what the
  installed versions break is repaired, in memory, each repair listed in the report: on pandas >= 1.5,
  `metric_df.replace(np.inf, 374)` (metrics.py:355) fails on the column of matched-component arrays once a lesion
  has two matches, and is made to leave that column alone; on pandas 2, `DataFrame.append` (metrics.py:357) becomes
  `pandas.concat`; on numpy 2, `np.Inf` is put back.
- The cases: `clinseg.competitions.brats2023.write_brats_cases`, every kind (empty truth, empty prediction, both
  empty, split, merged, small lesion, anisotropic, random, ...) `--repeat` times, the sub-challenges in turn.
- The comparison: the script's per-case CSV (its `output=` file, as the challenge writes it): the column names and
  order must be clinseg's `COLUMNS`, and every number must agree to 1e-12 with `score_rows` on the same files read
  through clinseg's folder protocol. The report gives the cases, the environment, the repairs and the largest
  |difference| per column; the exit status is 1 on any disagreement.
"""
import argparse, csv, json, os, shutil, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing

COMMIT = "43c905242b2eecf421d4ab2da7af8ece9777d322"
DEFAULT_REPO = "/work/.mirror/rachitsaluja+BraTS-2023-Metrics/repo"
LOOSE = ["numpy<2", "pandas<2", "nibabel", "scipy", "connected-components-3d"]

DRIVER = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
repairs = []
import numpy as np, pandas as pd
if not hasattr(pd.DataFrame, "append"):          # pandas 2 removed it (metrics.py:357)
    pd.DataFrame.append = lambda self, other: pd.concat([self, other])
    repairs.append("DataFrame.append -> pandas.concat (pandas %s)" % pd.__version__)
if not hasattr(np, "Inf"):                        # numpy 2 removed it (surface_distance/metrics.py)
    np.Inf = np.inf
    repairs.append("np.Inf -> np.inf (numpy %s)" % np.__version__)
_replace = pd.DataFrame.replace
def replace(self, *args, **kwargs):
    "metrics.py:355: pandas >= 1.5 compares each array of the matched-components column with inf, and fails"
    try: return _replace(self, *args, **kwargs)
    except ValueError as e:
        if "truth value of an array" not in str(e): raise
        arrays = [c for c in self.columns if self[c].dtype == object
                  and self[c].map(lambda v: isinstance(v, np.ndarray)).any()]
        note = "DataFrame.replace(np.inf, 374) leaves the column of arrays alone (pandas %s)" % pd.__version__
        if note not in repairs:
            repairs.append(note)
            print(json.dumps({"repair": note}), flush=True)
        out = _replace(self.drop(columns=arrays), *args, **kwargs)
        for c in arrays: out[c] = self[c]
        return out[list(self.columns)]
if tuple(int(v) for v in pd.__version__.split(".")[:2]) >= (1, 5): pd.DataFrame.replace = replace
import metrics, scipy, nibabel, cc3d
versions = {"python": sys.version.split()[0], "numpy": np.__version__, "pandas": pd.__version__,
            "scipy": scipy.__version__, "nibabel": nibabel.__version__}
print(json.dumps({"versions": versions, "repairs": repairs}), flush=True)
for line in sys.stdin:                            # one job a line: pred, truth, challenge, output CSV
    job = json.loads(line)
    t0 = time.perf_counter()
    try:
        metrics.get_LesionWiseResults(job["pred"], job["truth"], job["challenge"], output=job["output"])
        answer = {"seconds": time.perf_counter() - t0}
    except Exception as e:
        import traceback
        answer = {"error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()}
    print(json.dumps(answer), flush=True)
'''


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "clinseg" / "brats2023-ref"


def script_source(repo, dest) -> Path:
    "metrics.py, requirements.txt and surface_distance/ of the script at COMMIT, into `dest`"
    repo = Path(repo)
    if not repo.exists(): raise SystemExit(f"{repo}: no clone of rachitsaluja/BraTS-2023-Metrics here (--repo)")
    files = subprocess.run(["git", f"--git-dir={repo}", "ls-tree", "-r", "--name-only", COMMIT], check=True,
                           capture_output=True, text=True).stdout.split()
    for f in files:
        if f in ("metrics.py", "requirements.txt") or f.startswith("surface_distance/"):
            out = Path(dest) / f
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(subprocess.run(["git", f"--git-dir={repo}", "show", f"{COMMIT}:{f}"], check=True,
                                           capture_output=True).stdout)
    return Path(dest)


def _minor(python) -> tuple:
    out = subprocess.run([python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                         capture_output=True, text=True)
    return tuple(int(v) for v in out.stdout.split()) if out.returncode == 0 else (0, 0)


def _candidates():
    "python3.10 and python3.9 on PATH, then pyenv's installed 3.10 and 3.9 (its shims answer only when selected)"
    for name in ("python3.10", "python3.9"):
        if shutil.which(name): yield shutil.which(name)
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    for minor in ("3.10", "3.9"):
        yield from (str(p) for p in sorted(root.glob(f"{minor}.*/bin/python{minor}"), reverse=True))

def choose_python(given=None) -> tuple:
    "(interpreter, exact pins?): a Python 3.9/3.10 runs the script's own pins; a later one the loose set"
    if given: return given, _minor(given) in ((3, 9), (3, 10))
    for found in _candidates():
        if _minor(found) in ((3, 9), (3, 10)): return found, True
    return sys.executable, False


def reference_env(src, python=None, log=print) -> Path:
    "The cached virtual environment's interpreter, made when missing or made for other pins"
    python, exact = choose_python(python)
    pins = ([l.strip() for l in (Path(src) / "requirements.txt").read_text().splitlines() if l.strip()]
            if exact else LOOSE)
    venv = cache_dir()
    marker, exe = venv / "clinseg-pins.json", venv / "bin" / "python"
    want = {"python": str(python), "pins": pins}
    if exe.exists() and marker.exists() and json.loads(marker.read_text()) == want: return exe
    log(f"making {venv} with {python}: {' '.join(pins)}")
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(exe), "-m", "pip", "install", "-q", *pins], check=True)
    marker.write_text(json.dumps(want))
    return exe


class Script:
    "The real script in its environment, one process taking jobs"
    def __init__(self, exe, src):
        self.proc = subprocess.Popen([str(exe), "-c", DRIVER], cwd=src, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.info = json.loads(self.proc.stdout.readline())

    def run(self, pred, truth, challenge, output) -> dict:
        self.proc.stdin.write(json.dumps({"pred": str(pred), "truth": str(truth), "challenge": challenge,
                                          "output": str(output)}) + "\n")
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if "repair" not in answer: return answer
            self.info["repairs"].append(answer["repair"])   # a repair made the first time it was needed

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def compare(repeat, shape, repo, python, keep=None) -> int:
    from clinseg.competitions.brats2023 import CASE_KINDS, COLUMNS, SUB_CHALLENGES, score_rows, write_brats_cases
    from clinseg.folders import read_case
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="clinseg-brats-ref-"))
    src = script_source(repo, work / "script")
    exe = reference_env(src, python)
    kinds = [k for k in CASE_KINDS if k != "bad_label"]
    cases = write_brats_cases(work / "cases", kinds, repeat=repeat, seed=2023, shape=shape)
    script, subs = Script(exe, src), list(SUB_CHALLENGES)
    worst = {c: 0.0 for c in COLUMNS[1:]}
    bad, seconds = [], []
    try:
        for i, (case, kind) in enumerate(cases.items()):
            sub = subs[i % len(subs)]
            t, p = work / "cases" / "truth" / f"{case}.nii.gz", work / "cases" / "pred" / f"{case}.nii.gz"
            out = work / "csv" / f"{case}.csv"
            out.parent.mkdir(exist_ok=True)
            answer = script.run(p, t, f"BraTS-{sub}", out)
            if "error" in answer:
                bad.append(f"{case} ({kind}, {sub}): the script failed: {answer['error']}")
                continue
            seconds.append(answer["seconds"])
            with open(out, newline="") as f: theirs = list(csv.DictReader(f))
            with open(out, newline="") as f: header = next(csv.reader(f))
            if header != list(COLUMNS): bad.append(f"{case}: the script's columns are {header}")
            ours = score_rows(*read_case(t, p), sub)
            for o, r in zip(ours, theirs):
                if o["Labels"] != r["Labels"]: bad.append(f"{case}: regions {o['Labels']} vs {r['Labels']}")
                for c in COLUMNS[1:]:
                    d = abs(o[c] - float(r[c]))
                    worst[c] = max(worst[c], d)
                    if not d <= 1e-12: bad.append(f"{case} ({kind}, {sub}) {o['Labels']} {c}: {o[c]!r} vs {r[c]}")
    finally: script.close()
    v = script.info["versions"]
    print(f"real script {COMMIT[:7]} in {exe.parent.parent} (Python {v['python']}, numpy {v['numpy']}, "
          f"pandas {v['pandas']}, scipy {v['scipy']}, nibabel {v['nibabel']})")
    print("repairs: " + ("; ".join(script.info["repairs"]) or "none (the script runs unchanged)"))
    print(f"{len(cases)} cases of {len(kinds)} kinds, shape {'x'.join(map(str, shape))}, sub-challenges in turn; "
          f"{len(cases) * 3} rows; the script took {sum(seconds):.1f} s")
    print("| column | max |clinseg - script| |")
    print("|---|---|")
    for c, d in worst.items(): print(f"| {c} | {d:.3g} |")
    if bad:
        print(f"{len(bad)} disagreements:", *bad[:20], sep="\n  ")
        return 1
    print("every number agrees to 1e-12")
    if not keep: shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=4, help="cases per kind (default 4: 40 cases)")
    ap.add_argument("--shape", type=int, nargs=3, default=(40, 44, 36), help="voxels per case")
    ap.add_argument("--repo", default=os.environ.get("CLINSEG_BRATS_REPO", DEFAULT_REPO),
                    help="git directory of a clone of rachitsaluja/BraTS-2023-Metrics")
    ap.add_argument("--python", default=None, help="the interpreter for the script's environment")
    ap.add_argument("--keep", default=None, help="keep the cases, the script and its CSVs in this folder")
    a = ap.parse_args()
    sys.exit(compare(a.repeat, tuple(a.shape), a.repo, a.python, a.keep))
