"""Load test of `clinseg serve`, the class leaderboard (issue 18), on loopback.

    python bench/bench_serve.py                  # 50 concurrent students, 3 uploads each
    python bench/bench_serve.py --quick          # 5 students, 1 upload each (CI; well under a minute)
    python bench/bench_serve.py --db postgresql+psycopg://user@127.0.0.1/board   # on PostgreSQL (an empty database)

1. writes a real-size DSB 2018 stage-1 test set with clinseg's DSB generator (`dsb_dataset`): 65 images in the 11
   sizes of the real stage-1 test set (256x256 x24, 512x640 x8, ...), its solution split half Public, half Private,
   and a submission of about 1.4 MB (every true nucleus moved one pixel to the right, written with `write_dsb`);
2. starts `serve_command` in a subprocess on a free port of 127.0.0.1 (`--port 0`; SQLite in a temporary folder
   unless --db), with the default scoring worker (one thread);
3. makes the accounts; each student's client checks its token once (GET /api/submissions, as a browser signs in
   once: the one argon2 verification of the token, timed apart), then all students upload at the same moment,
   each its uploads one after another (POST /api/submissions, timed from the first byte sent to the 202);
4. waits until the queue is empty and checks that every submission is scored exactly once (status `scored`,
   one scoring attempt, the same public score for every copy of the file);
5. prints the p50 / p95 / max of the upload latency, the sign-in latency, and the time to score everything.
"""
import argparse, re, shutil, signal, subprocess, sys, tempfile, threading, time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# the real 65 images
STAGE1_SIZES = ([(256, 256)] * 24 + [(512, 640)] * 8 + [(512, 680)] * 8 + [(519, 253)] * 4 + [(520, 348)] * 4
                + [(524, 348)] * 4 + [(260, 347)] * 4 + [(520, 696)] * 4 + [(519, 162)] * 2 + [(519, 161)] * 2
                + [(390, 239)])


def make_data(folder):
    "The DSB-generator test set in stage-1 sizes, its solution half Public / half Private, and a submission"
    from clinseg.competitions.dsb2018 import dsb_dataset, write_dsb
    ds = dsb_dataset(folder / "dsb", n_train=0, n_test=len(STAGE1_SIZES), shapes=STAGE1_SIZES, seed=18)
    lines = ds.solution.read_text().splitlines()
    public = {i for k, i in enumerate(ds.test_ids) if k % 2 == 0}
    sol = folder / "solution.csv"
    def usage(l): return "Public" if l.split(",")[0] in public else "Private"
    sol.write_text("\n".join([lines[0]] + [l.rsplit(",", 1)[0] + ("," + usage(l)) for l in lines[1:]]) + "\n")
    sub = folder / "submission.csv"
    write_dsb(sub, {i: np.roll(ds.truth[i], 1, axis=1) for i in ds.test_ids})
    return sol, sub


def start_server(folder, solution, db):
    "`serve_command` in a subprocess on a free port (--port 0); (process, URL) once it says where it listens"
    args = dict(competition="dsb2018", solution=str(solution), db=db, host="127.0.0.1", port=0, daily_limit=5,
                deadline=None, scheduler=None, max_upload_mb=20, uploads=str(folder / "uploads"), secure_cookie=False)
    code = ("import sys; from argparse import Namespace; from clinseg.serve import serve_command; "
            f"sys.exit(serve_command(Namespace(**{args!r})))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=folder)
    ready = proc.stderr.readline()   # printed once the port takes connections; "" if the server stopped
    while ready and not ready.startswith("clinseg serve:"): ready = proc.stderr.readline()   # a warning first
    m = re.match(r"clinseg serve: \S+ on (http://\S+?)/ ", ready)
    if m is None:
        proc.kill()
        raise SystemExit(f"the server did not start:\n{ready}{proc.stderr.read()[-3000:]}")
    def drain():   # the rest of its messages, so that a full pipe never stops it
        with open(folder / "server.log", "w") as log:
            for line in proc.stderr: log.write(line)
    threading.Thread(target=drain, daemon=True).start()
    return proc, m.group(1)


def percentile(values, q): return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 students x 1 upload")
    ap.add_argument("--students", type=int, default=50)
    ap.add_argument("--uploads", type=int, default=3, help="uploads per student (at most the daily limit, 5)")
    ap.add_argument("--db", help="database URL of an empty database (default: SQLite in a temporary folder)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the queue to empty")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary folder (data, database, uploads, server log)")
    a = ap.parse_args(argv)
    if a.quick: a.students, a.uploads = 5, 1
    from clinseg.accounts import add_user
    from clinseg.database import SUBMISSIONS, connect
    from clinseg.serve import request
    import sqlalchemy as sa
    folder = Path(tempfile.mkdtemp(prefix="clinseg-bench-serve-"))
    t0 = time.perf_counter()
    sol, sub = make_data(folder)
    print(f"data: 65 images in stage-1 sizes, submission {sub.stat().st_size / 1e6:.2f} MB "
          f"({sum(1 for _ in open(sub)) - 1} rows), "
          f"{time.perf_counter() - t0:.1f} s")
    db = a.db or f"sqlite:///{folder / 'board.sqlite'}"
    engine = connect(db)
    tokens = [add_user(engine, f"student{k:02d}") for k in range(a.students)]
    proc, url = start_server(folder, sol, db)
    signin, latency, codes, lock = [], [], [], threading.Lock()
    barrier = threading.Barrier(a.students)
    def student(token):
        t = time.perf_counter()
        status, _ = request(url, "/api/submissions", token, timeout=300)
        with lock:
            signin.append(time.perf_counter() - t)
            codes.append(status)
        barrier.wait()
        for _ in range(a.uploads):
            t = time.perf_counter()
            status, body = request(url, "/api/submissions", token, file=sub, timeout=300)
            with lock:
                latency.append(time.perf_counter() - t)
                codes.append(status)
    try:
        t1 = time.perf_counter()
        threads = [threading.Thread(target=student, args=(tok,)) for tok in tokens]
        for t in threads: t.start()
        for t in threads: t.join(600)
        uploaded = time.perf_counter() - t1
        end = time.monotonic() + a.timeout
        while True:
            with engine.connect() as c:
                waiting = SUBMISSIONS.c.status.in_(("queued", "scoring"))
                left = c.scalar(sa.select(sa.func.count()).select_from(SUBMISSIONS).where(waiting))
            if left == 0 or time.monotonic() > end: break
            time.sleep(0.2)
        done = time.perf_counter() - t1
        with engine.connect() as c: rows = c.execute(sa.select(SUBMISSIONS)).all()
    finally:
        proc.send_signal(signal.SIGINT)
        try: proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        engine.dispose()
        if a.keep: print(f"files in {folder}")
        else: shutil.rmtree(folder, ignore_errors=True)
    n = a.students * a.uploads
    print(f"{a.students} students x {a.uploads} uploads = {n} submissions, all sent in {uploaded:.1f} s; queue empty "
          f"after {done:.1f} s")
    print(f"upload latency (POST to 202): p50 {percentile(latency, 50) * 1000:.0f} ms, p95 "
          f"{percentile(latency, 95) * 1000:.0f} ms, "
          f"max {max(latency) * 1000:.0f} ms")
    print(f"sign-in (first request of a token: one argon2 check): p50 {percentile(signin, 50) * 1000:.0f} ms, p95 "
          f"{percentile(signin, 95) * 1000:.0f} ms")
    problems = []
    if sorted(set(codes)) != [200, 202] or codes.count(202) != n:
        problems.append(f"HTTP statuses {sorted(set(codes))}, {codes.count(202)} of {n} uploads accepted")
    if len(rows) != n: problems.append(f"{len(rows)} submissions stored, expected {n}")
    if any(r.status != "scored" or r.attempts != 1 for r in rows):
        problems.append(f"not every submission scored exactly once: {sorted({(r.status, r.attempts) for r in rows})}")
    if len({r.public_score for r in rows}) != 1: problems.append("copies of one file got different scores: "
                                                                 f"{sorted({r.public_score for r in rows})[:5]}")
    if problems: raise SystemExit("bench_serve: " + "; ".join(problems))
    print(f"every submission scored once: public {rows[0].public_score:.6f}, private {rows[0].private_score:.6f}; "
          f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__": main()
