"""Ctrl-C during `clinseg score --jobs 2`, as a terminal sends it (SIGINT to the whole process group), at several
moments of the scoring: one line, exit code 130, no worker left (not even a defunct one), no partial --per-image file.

The moment is an event, not a duration: the competition is DSB 2018 under another name whose scorer writes a line to
a log file as each batch of images starts, and the signal goes once `k` batches have started (`k` varies between
trials). Each batch also waits PACE seconds, so the batches still to come take seconds however fast the machine is; a
run that ends before the signal all the same (a machine stalled at that moment) is a valid run, checked as one, and
never a failure."""
import os, random, signal, subprocess, sys, time
from pathlib import Path

import numpy as np
import pytest

from clinseg.competitions.dsb2018 import write_dsb, write_dsb_solution
from clinseg.iou_sweep import synthetic_nuclei

IMAGES = 800            # 100 batches of 8 images (the batch size of `clinseg.scoring._run_items`)
PACE = 0.05             # seconds each batch waits: 100 batches on 2 processes take at least 2.5 s on any machine
SAFETY = 300            # seconds: a safety net for a run that hangs (a failure), never a measure

PACED_COMPETITION = '''"""DSB 2018 renamed: each batch logs its start (to PACED_LOG), then waits PACED_PACE s."""
import os, time
from dataclasses import replace
from clinseg.competitions.dsb2018 import COMPETITION as DSB
from clinseg.scoring import instance_items

def paced_items(comp, items, options):
    with open(os.environ["PACED_LOG"], "a") as f: f.write("start\\n")
    time.sleep(float(os.environ["PACED_PACE"]))
    return instance_items(comp, items, options)

COMPETITION = replace(DSB, name="paced_dsb", title="Paced DSB", score_items=paced_items)
'''


def trials(config):
    "3 in the plain run, 8 with --slow; CLINSEG_SIGINT_TRIALS overrides both"
    return int(os.environ.get("CLINSEG_SIGINT_TRIALS", 8 if config.getoption("--slow") else 3))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    "A DSB-style solution and submission of 800 256x256 images (16 generated images, repeated under new ids)"
    tmp = tmp_path_factory.mktemp("sigint")
    labels = {f"{k:064x}": synthetic_nuclei((256, 256), 50, seed=k)[1] for k in range(16)}   # the chapter's generator
    write_dsb_solution(tmp / "t_sol.csv", labels)
    write_dsb(tmp / "t_sub.csv", {i: np.roll(l, 1, axis=1) for i, l in labels.items()})
    for name in ("sol", "sub"):
        head, *rows = (tmp / f"t_{name}.csv").read_text().splitlines(keepends=True)
        with open(tmp / f"{name}.csv", "w") as f:
            f.write(head)
            for copy in range(IMAGES // 16):
                f.writelines(f"{copy:032x}{r[32:]}" for r in rows)
    (tmp / "paced_dsb.py").write_text(PACED_COMPETITION)
    return tmp


def terminal_signals():
    """In the child, before `clinseg` starts: Ctrl-C's default action, as a terminal's shell gives its jobs (a job
    started in the background of a script inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


def started(log):
    "Batches started so far, from the scorer's log"
    try: return log.read_text().count("start")
    except FileNotFoundError: return 0


def wait_for_batches(p, log, k):
    "Wait (polling) until `k` batches have started or the run has ended; False when it ended first"
    end = time.monotonic() + SAFETY
    while started(log) < k:
        if p.poll() is not None: return False
        if time.monotonic() > end:
            os.killpg(p.pid, signal.SIGKILL)
            pytest.fail(f"fewer than {k} batches in {SAFETY} s")
        time.sleep(0.01)
    return True


@pytest.mark.skipif(not Path("/proc").is_dir() or sys.platform != "linux", reason="needs Linux's /proc")
def test_ctrl_c_during_parallel_score(files, request):
    rng = random.Random(17)
    out, log = files / "table.csv", files / "batches.log"
    env = {**os.environ, "PACED_LOG": str(log), "PACED_PACE": str(PACE)}
    interrupted, finished = 0, 0
    for trial in range(trials(request.config)):
        k = rng.choice([1, 2, 3, 5, 8, 13, 21])   # batches started before Ctrl-C: the first one, or a few into the run
        log.unlink(missing_ok=True)
        command = ["score", "-c", files / "paced_dsb.py", files / "sol.csv", files / "sub.csv", "--jobs", "2",
                   "--quiet", "--per-image", out]
        p = subprocess.Popen([sys.executable, "-m", "clinseg.cli", *command], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True,   # its own process group, as a shell job
                             preexec_fn=terminal_signals)
        if wait_for_batches(p, log, k): os.killpg(p.pid, signal.SIGINT)   # as Ctrl-C: every process of the group
        try: stdout, stderr = p.communicate(timeout=SAFETY)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            pytest.fail(f"trial {trial}: still running {SAFETY} s after Ctrl-C")
        if stdout:   # the scoring was done before the signal came: a whole table (valid, and not what is tested here)
            assert p.returncode in (0, 130, -signal.SIGINT), (trial, p.returncode, stderr[-2000:])
            assert stdout.startswith("score "), (trial, stdout[-2000:])
            finished += 1
        else:
            assert (p.returncode, stderr) == (130, "clinseg: interrupted\n"), (trial, k, p.returncode, stderr[-2000:])
            interrupted += 1
        p.wait()
        end = time.monotonic() + 30
        while group_members(p.pid) and time.monotonic() < end: time.sleep(0.05)   # a worker's exit, seen by /proc
        assert group_members(p.pid) == [], (trial, group_members(p.pid))   # no worker left, not even a defunct one
        assert not [x for x in files.iterdir() if x.name.startswith(".part-")], trial    # no part of a table
        if out.exists():
            assert stdout and len(out.read_text().splitlines()) == 1 + IMAGES, trial   # a table only when whole
            out.unlink()
    print(f"{interrupted} runs interrupted, {finished} ended before Ctrl-C")
    if finished and not interrupted: pytest.skip(f"all {finished} runs ended before Ctrl-C came: the machine stalled")
