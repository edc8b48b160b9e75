"""`clinseg notebooks --student DIR`, as a teacher runs it: the student edition of every chapter and walkthrough holds
no exercise definition and no check of one, its outputs are gone, no answer key is copied, and the notebooks still run
from top to bottom without their hidden test cells (one walkthrough here, every walkthrough with --slow)."""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("Exercise(", ".verdict(", "right(", "fingerprint(")
RUN = r'''
import os, sys
from pathlib import Path
from execnb.nbio import read_nb
from execnb.shell import CaptureShell
path = Path(sys.argv[1]).resolve()
os.chdir(path.parent)
shell = CaptureShell(path)
for i, cell in enumerate(read_nb(path).cells):
    flags = cell.source.split("\n", 1)[0]
    if cell.cell_type != "code" or "slow" in flags or "notest" in flags: continue
    shell.run(cell.source)
    if shell.exc is not None: sys.exit(f"{path.name}, cell {i}: {shell.exc!r}")
'''


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout") / "handout"
    r = subprocess.run([sys.executable, "-m", "clinseg.cli", "notebooks", "--student", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_no_answer_key_and_no_definition(edition):
    notebooks = sorted(edition.rglob("*.ipynb"))
    walkthroughs = [p for p in notebooks if p.parent.name == "tutorials"]
    assert len(walkthroughs) >= 11 and not (edition / "exercises").exists()
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            assert not cell.get("outputs"), path
            source = "".join(cell["source"])
            if path.name != "00_teaching.ipynb":   # the chapter that teaches the check shows toy exercises of its own
                assert not any(m in source for m in MARKERS), (path.name, source[:200])


def test_a_second_run_refuses_the_folder(edition):
    r = subprocess.run([sys.executable, "-m", "clinseg.cli", "notebooks", "--student", str(edition)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and str(edition) in r.stderr, r.stderr


def student_notebooks(slow):
    names = sorted(p.relative_to(ROOT / "nbs").as_posix() for p in (ROOT / "nbs" / "tutorials").glob("*.ipynb"))
    return names if slow else ["tutorials/04_dsb2018.ipynb"]


def test_student_notebooks_run(edition, request):
    env = {k: v for k, v in os.environ.items() if k not in ("CLINSEG_DATA", "CI")}   # a student's machine
    env["MPLBACKEND"] = "Agg"
    def run(name): return subprocess.run([sys.executable, "-c", RUN, str(edition / name)], cwd=ROOT, env=env,
                                      capture_output=True, text=True, timeout=900)
    names = student_notebooks(request.config.getoption("--slow"))
    with ThreadPoolExecutor(2) as pool:   # two at a time, as the notebooks' own tests run
        for name, r in zip(names, pool.map(run, names)): assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"
