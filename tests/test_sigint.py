"""Ctrl-C during `clinseg score --jobs 2` on a large file, as a terminal sends it (SIGINT to the whole process group),
repeatedly at random moments: one line, exit code 130, within seconds, no worker left (not even a defunct one), no partial
--per-image file."""
import os, random, signal, subprocess, sys, time
from pathlib import Path

import numpy as np
import pytest

from clinseg.competitions.dsb2018 import write_dsb, write_dsb_solution
from clinseg.dsb_metric import synthetic_nuclei

TRIALS = int(os.environ.get("CLINSEG_SIGINT_TRIALS", "10"))


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    "A DSB-style solution and submission of 6,400 256x256 images (16 generated images, repeated under new ids)"
    tmp = tmp_path_factory.mktemp("sigint")
    labels = {f"{k:064x}": synthetic_nuclei((256, 256), 50, seed=k)[1] for k in range(16)}   # the chapter's generator
    write_dsb_solution(tmp / "t_sol.csv", labels)
    write_dsb(tmp / "t_sub.csv", {i: np.roll(l, 1, axis=1) for i, l in labels.items()})
    for name in ("sol", "sub"):
        head, *rows = (tmp / f"t_{name}.csv").read_text().splitlines(keepends=True)
        with open(tmp / f"{name}.csv", "w") as f:
            f.write(head)
            for copy in range(400):   # 6,400 images: several seconds of scoring on two processes, warm or not
                f.writelines(f"{copy:032x}{r[32:]}" for r in rows)
    return tmp


def group_members(pgid):
    "pids (with their state) of the live or defunct processes in process group `pgid`, from /proc"
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit(): continue
        try: stat = (d / "stat").read_text()
        except OSError: continue
        fields = stat[stat.rindex(")") + 2:].split()   # state, ppid, pgrp, ...
        if int(fields[2]) == pgid: found.append((int(d.name), fields[0]))
    return found


def children(pid):
    try: return (Path(f"/proc/{pid}/task/{pid}/children")).read_text().split()
    except OSError: return []


@pytest.mark.skipif(not Path("/proc").is_dir() or sys.platform != "linux", reason="needs Linux's /proc")
def test_ctrl_c_during_parallel_score(large):
    rng = random.Random(17)
    out, finished = large / "table.csv", 0
    for trial in range(TRIALS):
        p = subprocess.Popen([sys.executable, "-m", "clinseg.cli", "score", "-c", "dsb2018", large / "sol.csv", large / "sub.csv",
                              "--jobs", "2", "--quiet", "--per-image", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)   # its own process group, as a shell job
        t0 = time.monotonic()
        while not children(p.pid) and p.poll() is None and time.monotonic() - t0 < 30: time.sleep(0.02)   # the workers are up
        time.sleep(rng.uniform(0, 1.2))
        os.killpg(p.pid, signal.SIGINT)   # what Ctrl-C does: every process of the foreground group
        try: stdout, stderr = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL); p.communicate()
            pytest.fail(f"trial {trial}: still running 15 s after Ctrl-C")
        if stdout:   # the score was done before the signal came: a whole table, then the process ended (or was ended by the signal at exit)
            assert p.returncode in (0, 130, -signal.SIGINT) and stdout.startswith("score "), (trial, p.returncode, stderr[-2000:])
            finished += 1
        else:
            assert (p.returncode, stderr) == (130, "clinseg: interrupted\n"), (trial, p.returncode, stderr[-2000:])
        t1 = time.monotonic()
        while group_members(p.pid) and time.monotonic() - t1 < 2: time.sleep(0.05)
        assert group_members(p.pid) == [], (trial, group_members(p.pid))   # no worker left, not even a defunct one
        assert not [x for x in large.iterdir() if x.name.startswith(".part-")], trial   # no part of a table
        if out.exists():
            assert len(out.read_text().splitlines()) == 1 + 6400, trial            # a table is whole
            out.unlink()
    assert finished <= TRIALS // 3, f"{finished} of {TRIALS} runs ended before Ctrl-C: make the file larger"
