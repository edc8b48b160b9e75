"""`clinseg serve`, the class leaderboard: the HTTP API on SQLite and on PostgreSQL, access rules, the daily limit under
concurrent uploads, a server killed while scoring, the upload cap, the checks' caps, one server per database, the
class's features (teams, baselines, final selection, feedback, uncertainty, the late window, the grades' presets),
50 students at once, and one real browser with JavaScript off and on. (The web layer's attacks: test_attacks.py.)

- The API tests run on SQLite (a file in the test's folder) and, with `pytest --slow`, on PostgreSQL too: the
  server named by the environment variable CLINSEG_TEST_POSTGRES (a SQLAlchemy URL of a database the tests may fill)
  or a throw-away cluster made with `initdb` in a temporary folder and started with `pg_ctl` on a free port of
  127.0.0.1 (as the `postgres` user when the tests run as root; initdb refuses root). When neither can be had the
  PostgreSQL tests are skipped with the reason, and fail when the environment variable CI is set.
- The browser test and the dask scheduler's run only with `pytest --slow`.
- Live servers are `serve_command` in a subprocess on 127.0.0.1, on a port the system chooses (`--port 0`); a test
  connects once the server has said where it listens (a line it prints after the port takes connections), never
  after a delay. Every process started is stopped. Timeouts are safety nets against a hang (a failure), never
  measures.
- The data is the DSB 2018 demo's (`clinseg.demo.run_demo`), its solution split half Public, half Private.
- The browser test uses Debian's Chromium through Playwright, with JavaScript switched off and on; skipped when either
  is missing (with CLINSEG_REQUIRE_BROWSER=1 or CI set, a failure). Screenshots go to artifacts/browser/serve_*.png.
"""
import contextlib, http.client, itertools, json, os, queue, re, shutil, signal, socket, subprocess, sys, tempfile
import threading, time, warnings
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = Path(os.environ.get("CLINSEG_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PG_BIN = Path(os.environ.get("CLINSEG_PG_BIN", "/usr/local/bin"))
SAFETY = 300   # seconds: how long a wait may last before it is a failure (a hang), never a measure of speed

SLOW_COMPETITION = '''"""DSB 2018 under another name, its scorer slowed by SLOW_SCORE seconds (a test of a server killed
while scoring)."""
import os, time
from dataclasses import replace
from clinseg.competitions.dsb2018 import COMPETITION as DSB
from clinseg.scoring import instance_items

def slow_items(comp, items, options):
    log = os.environ.get("SLOW_SCORE_LOG")
    if log:
        with open(log, "a") as f: f.write("start\\n")
    time.sleep(float(os.environ.get("SLOW_SCORE", "0")))
    return instance_items(comp, items, options)

COMPETITION = replace(DSB, name="slow_dsb", title="Slow DSB", score_items=slow_items)
'''


def _skip(reason):
    if os.environ.get("CI"): pytest.fail(f"not skipped in CI: {reason}")
    print(f"skipped: {reason}")
    pytest.skip(reason)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- data and databases

@pytest.fixture(scope="session")
def data(tmp_path_factory):
    ("The DSB demo: solution (half Public, half Private), a submission, a second submission (worse), the slow "
     "competition file")
    from clinseg.demo import run_demo
    tmp = tmp_path_factory.mktemp("serve-data")
    run = run_demo(tmp / "demo", ["dsb2018"], quiet=True).runs[0]
    lines = run.solution.read_text().splitlines()
    ids = list(dict.fromkeys(l.split(",")[0] for l in lines[1:]))
    sol = tmp / "solution.csv"
    def usage(l): return "Public" if ids.index(l.split(",")[0]) % 2 == 0 else "Private"
    sol.write_text("\n".join([lines[0]] + [l.rsplit(",", 1)[0] + "," + usage(l) for l in lines[1:]]) + "\n")
    sub = run.submission
    worse = tmp / "worse.csv"
    rows = sub.read_text().splitlines()
    worse.write_text("\n".join(rows[:1] + rows[1::2]) + "\n")   # every other nucleus dropped
    bad = tmp / "bad.csv"
    bad.write_text(rows[0] + "\n" + rows[1].replace(",", ".png,", 1) + "\n" + "\n".join(rows[2:]) + "\n")
    slow = tmp / "slow_dsb.py"
    slow.write_text(SLOW_COMPETITION)
    return Namespace(solution=sol, submission=sub, worse=worse, bad=bad, slow=slow, folder=tmp)


@pytest.fixture(scope="session")
def postgres(tmp_path_factory):
    "A function making a fresh PostgreSQL database URL: on CLINSEG_TEST_POSTGRES's server, or on a throw-away cluster"
    try: import psycopg
    except ImportError: psycopg = None
    url = os.environ.get("CLINSEG_TEST_POSTGRES")
    if url:
        yield _databases_on(url, psycopg)
        return
    if psycopg is None:
        yield "psycopg is not installed (pip install 'psycopg[binary]')"
        return
    if not (PG_BIN / "initdb").exists():
        yield f"no PostgreSQL server binaries in {PG_BIN} (set CLINSEG_PG_BIN or CLINSEG_TEST_POSTGRES)"
        return
    folder = Path(tempfile.mkdtemp(prefix="clinseg-pg-"))
    as_user = {}
    if os.geteuid() == 0:
        import pwd
        pw = pwd.getpwnam("postgres")
        os.chown(folder, pw.pw_uid, pw.pw_gid)
        as_user = dict(user=pw.pw_uid, group=pw.pw_gid)
    port, data = _free_port(), folder / "data"
    try:
        subprocess.run([str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "clinseg", "--no-sync", "-E",
                        "UTF8"],
                       check=True, capture_output=True, timeout=120, **as_user)
        subprocess.run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "60", "-o",
                        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
                        "start"],
                       check=True, capture_output=True, timeout=90, **as_user)
    except (subprocess.SubprocessError, OSError) as e:
        shutil.rmtree(folder, ignore_errors=True)
        yield f"a throw-away PostgreSQL did not start: {e}"
        return
    try: yield _databases_on(f"postgresql+psycopg://clinseg@127.0.0.1:{port}/postgres", psycopg)
    finally:
        subprocess.run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True,
                       timeout=60, **as_user)
        shutil.rmtree(folder, ignore_errors=True)


def _databases_on(url, psycopg):
    "new() -> the URL of a new, empty database on the server of `url`"
    import sqlalchemy as sa
    base = sa.engine.make_url(url)
    count = iter(range(10**6))
    def new():
        name = f"clinseg_test_{os.getpid()}_{next(count)}_{int(time.time() * 1000) % 10**8}"
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with engine.connect() as c: c.exec_driver_sql(f'CREATE DATABASE "{name}"')
        engine.dispose()
        return base.set(database=name).render_as_string(hide_password=False)
    return new


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def db(request, tmp_path):
    "A new empty database: SQLite in the test's folder; PostgreSQL (with --slow) on the session's server"
    if request.param == "sqlite": return f"sqlite:///{tmp_path / 'board.sqlite'}"
    new = request.getfixturevalue("postgres")
    if isinstance(new, str): _skip(new)
    return new()


# ---------------------------------------------------------------- helpers

def _client(app):
    # Starlette 1.x prefers httpx2 for TestClient; httpx works the same
    warnings.filterwarnings("ignore", message=".*httpx.*")
    from starlette.testclient import TestClient
    return TestClient(app)


def _bearer(token): return {"Authorization": f"Bearer {token}"}


def _wait_scored(get, sid, timeout=SAFETY):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s = get(sid)
        if s["status"] not in ("queued", "scoring"): return s
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not scored in {timeout} s: {s}")


_LOGS = itertools.count()


def _started(argv, log, env=None, cwd=None):
    """Start a `clinseg serve` command (with --port 0) in its own process group; (URL, process) once it has said where
    it listens. Its output goes on to the file `log`; `process.copier` is the thread copying it, done when it ends."""
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)
    lines = queue.Queue()
    def copy():
        with open(log, "w") as f:
            for line in proc.stdout:
                f.write(line)
                f.flush()
                lines.put(line)
        lines.put(None)
    proc.copier = threading.Thread(target=copy, daemon=True)
    proc.copier.start()
    while True:
        try: line = lines.get(timeout=SAFETY)
        except queue.Empty: line = None
        if line is None:
            _stop(proc)
            raise AssertionError(f"the server did not say where it listens:\n{Path(log).read_text()[-3000:]}")
        if m := re.match(r"clinseg serve: \S+ on (http://\S+?)/ ", line): return m.group(1), proc


def _stop(proc):
    "Ctrl-C to the server, then SIGKILL to its process group if it is still there after SAFETY s; its output copied"
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try: proc.wait(SAFETY)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(SAFETY)
    proc.copier.join(SAFETY)


@contextlib.contextmanager
def live_server(tmp, competition, solution, db, env=None, **options):
    ("`serve_command` in a subprocess on a free port; yields (URL, process), `process.log` its output; "
     "stopped at the end")
    args = dict(competition=str(competition), solution=str(solution), db=db, host="127.0.0.1", port=0, daily_limit=5,
                deadline=None, scheduler=None, max_upload_mb=20, uploads=str(tmp / "uploads"),
                secure_cookie=False) | options
    code = ("import sys; from argparse import Namespace; from clinseg.serve import serve_command; "
            f"sys.exit(serve_command(Namespace(**{args!r})))")
    log = tmp / f"server-{next(_LOGS)}.log"
    url, proc = _started([sys.executable, "-c", code], log, env, cwd=tmp)   # its own process group: with its scorer
    proc.log = log
    try: yield url, proc
    finally: _stop(proc)


def _closed_port():
    "A socket of 127.0.0.1 bound but not listening: a connection to its port is refused for as long as it is open"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


# ---------------------------------------------------------------- the API, in-process, on both databases

def test_api(db, data, tmp_path):
    from clinseg.accounts import add_user
    from clinseg.board import open_board, parse_deadline
    from clinseg.pages import create_app
    board = open_board("dsb2018", data.solution, db, tmp_path / "uploads", daily_limit=2)
    ada, bob = add_user(board.engine, "ada"), add_user(board.engine, "bob")
    teacher = add_user(board.engine, "turing", "teacher")
    with _client(create_app(board)) as c:
        def post(token, path, name="s.csv"): return c.post("/api/submissions",
                                                           files={"file": (name, Path(path).read_bytes())},
                                                           headers=_bearer(token))
        def get(token): return lambda sid: c.get(f"/api/submissions/{sid}", headers=_bearer(token)).json()
        r = post(ada, data.worse)
        assert r.status_code == 202 and set(r.json()) == {"id", "status"} and r.json()["status"] == "queued"
        first = r.json()["id"]
        s = _wait_scored(get(ada), first)
        assert s["status"] == "scored" and s["problems"] == [] and isinstance(s["public_score"], float)
        assert "private_score" not in s and "score" not in s                            # before the deadline: never
        bad = post(ada, data.bad, "bad.csv")
        assert bad.status_code == 422 and bad.json()["status"] == "invalid"
        p = bad.json()["problems"][0]
        assert (p["row"], p["field"]) == (2, "ImageId") and ".png" in p["message"]
        r = post(ada, data.submission)                                                  # the invalid file did not count
        assert r.status_code == 202
        better = _wait_scored(get(ada), r.json()["id"])
        assert better["public_score"] > s["public_score"]
        over = post(ada, data.submission)
        assert over.status_code == 429 and "2 of 2" in over.json()["error"]
        # another student's submission is not found; nobody signed in gets 401; a teacher sees the private score
        assert c.get(f"/api/submissions/{first}", headers=_bearer(bob)).status_code == 404
        assert c.get(f"/api/submissions/{first}").status_code == 401
        assert c.get(f"/api/submissions/{first}", headers=_bearer("0000abcd.nope")).status_code == 401
        assert c.get(f"/api/submissions/{first}", headers=_bearer(teacher)).json()["private_score"] is not None
        assert c.get("/api/submissions/9999", headers=_bearer(ada)).status_code == 404
        assert c.post("/api/submissions", files={"file": ("s.csv", b"x")}).status_code == 401
        # bob reaches the same best public score later: ada ranks first (ties by time)
        _wait_scored(get(bob), post(bob, data.submission).json()["id"])
        lb = c.get("/api/leaderboard").json()
        assert [(e["user"], e["submissions"]) for e in lb] == [("ada", 2), ("bob", 1)]
        assert all({"user", "public_score", "submissions"} <= set(e) and "private_score" not in e for e in lb)
        assert lb[0]["public_score"] == lb[1]["public_score"] == better["public_score"]
        assert c.get("/api/leaderboard/private").status_code == 404
        mine = c.get("/api/submissions", headers=_bearer(bob)).json()
        assert [m["user"] for m in mine] == ["bob"]
        # rescore and grades (teacher only)
        assert c.get("/teacher/grades.csv", headers=_bearer(ada)).status_code == 403
        grades = c.get("/teacher/grades.csv", headers=_bearer(teacher)).text.splitlines()
        assert (grades[0].startswith("user,display_name,team,private_rank,private_score")
                and [g.split(",")[0] for g in grades[1:]] == ["ada", "bob"])
    # after the deadline: the private board, private scores to the owner, uploads refused
    board.deadline = parse_deadline("2001-01-01T00:00:00+00:00")
    with _client(create_app(board)) as c:
        priv = c.get("/api/leaderboard/private").json()
        assert [e["user"] for e in priv] == ["ada", "bob"] and all(e["private_score"] is not None for e in priv)
        assert c.get(f"/api/submissions/{first}", headers=_bearer(ada)).json()["private_score"] is not None
        files = {"file": ("s.csv", data.submission.read_bytes())}
        assert c.post("/api/submissions", files=files, headers=_bearer(bob)).status_code == 403
    board.engine.dispose()


def test_sessions_and_csrf(db, data, tmp_path):
    ("The browser's way: sign in with the form, a signed HttpOnly cookie; every POST with a cookie needs the "
     "form's CSRF token")
    from clinseg.accounts import add_user
    from clinseg.board import open_board
    from clinseg.pages import create_app
    board = open_board("dsb2018", data.solution, db, tmp_path / "uploads")
    ada, teacher = add_user(board.engine, "ada"), add_user(board.engine, "turing", "teacher")
    def csrf_of(html): return re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    with _client(create_app(board)) as c:
        login = c.get("/login").text
        # no CSRF token
        assert c.post("/login", data={"token": ada}, follow_redirects=False).status_code == 403
        assert c.post("/login", data={"token": "x", "csrf": csrf_of(login)}, follow_redirects=False).status_code == 401
        r = c.post("/login", data={"token": ada, "csrf": csrf_of(login)}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/submissions"
        cookie = r.headers["set-cookie"].lower()
        assert ("httponly" in cookie and "samesite=lax" in cookie and "; secure" not in cookie
                and ada.lower() not in cookie)
        page = c.get("/submissions")
        assert (page.status_code == 200 and "script-src" not in page.headers["content-security-policy"]
                and "<script" not in page.text)
        csrf = csrf_of(page.text)
        f = {"file": ("<img src=x onerror=alert(1)>.csv", data.submission.read_bytes())}
        assert c.post("/submissions", files=f, follow_redirects=False).status_code == 403
        assert c.post("/submissions", files=f, data={"csrf": "forged"}, follow_redirects=False).status_code == 403
        assert c.post("/api/submissions", files=f).status_code == 403
        assert c.post("/api/submissions", files=f, headers={"X-CSRF-Token": csrf}).status_code == 202
        r = c.post("/submissions", files=f, data={"csrf": csrf}, follow_redirects=False)
        assert r.status_code == 303
        text = c.get(r.headers["location"]).text
        # escaped
        assert "&lt;img src=x onerror=alert(1)&gt;.csv" in text and "<img" not in text
        # not a teacher
        student = c.get("/teacher", follow_redirects=False)
        assert student.status_code == 403 and "signed in as a student; this page is the teacher&#39;s" in student.text
        # no sign-in form
        assert 'action="/login"' not in student.text
        assert c.post("/teacher/rescore", data={"id": "all", "csrf": csrf}).status_code == 403
        c.post("/logout", data={"csrf": csrf})
        assert c.get("/submissions", follow_redirects=False).status_code == 303
        # a teacher's cookie session: rescore needs the token too
        login = c.get("/login").text
        c.post("/login", data={"token": teacher, "csrf": csrf_of(login)})
        page = c.get("/teacher").text
        assert "download" in page and "Grades (CSV)" in page
        assert c.post("/teacher/rescore", data={"id": "all"}).status_code == 403
        r = c.post("/teacher/rescore", data={"id": "all", "csrf": csrf_of(page)}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/teacher"
        assert "submissions queued again" in c.get("/teacher").text               # said once, from the session
        assert "submissions queued again" not in c.get("/teacher").text
    # a cookie signed with another secret is not a session
    from itsdangerous import TimestampSigner
    import base64
    forged = TimestampSigner("guess").sign(base64.b64encode(json.dumps({"uid": 1}).encode())).decode()
    with _client(create_app(board)) as c:
        c.cookies.set("clinseg_session", forged)
        assert c.get("/api/submissions").status_code == 401
    board.engine.dispose()


def test_migrations_match_schema(db):
    "Alembic's `upgrade head` makes exactly the schema of `clinseg.board.METADATA`, on both databases"
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from clinseg.database import METADATA, connect
    engine = connect(db)
    with engine.connect() as c: assert compare_metadata(MigrationContext.configure(c), METADATA) == []
    connect(db).dispose()     # a second start: nothing to do
    engine.dispose()


# ---------------------------------------------------------------- live servers

def _add(db, name, role="student"):
    from clinseg.accounts import add_user
    from clinseg.database import connect
    engine = connect(db)
    try: return add_user(engine, name, role)
    finally: engine.dispose()


def _rows(db):
    import sqlalchemy as sa
    from clinseg.database import SUBMISSIONS, connect
    engine = connect(db)
    try:
        with engine.connect() as c: return c.execute(sa.select(SUBMISSIONS).order_by(SUBMISSIONS.c.id)).all()
    finally: engine.dispose()


def test_daily_limit_concurrent(db, data, tmp_path):
    "12 uploads of one student at once against a live server allowing 5 a day: exactly 5 get through"
    from clinseg.serve import request
    token = _add(db, "ada")
    with live_server(tmp_path, "dsb2018", data.solution, db, daily_limit=5) as (url, proc):
        barrier, out = threading.Barrier(12), []
        def one():
            barrier.wait()
            out.append(request(url, "/api/submissions", token, file=data.submission, timeout=120)[0])
        threads = [threading.Thread(target=one) for _ in range(12)]
        for t in threads: t.start()
        for t in threads: t.join(180)
        assert sorted(out) == [202] * 5 + [429] * 7, out
        # at the limit the early check answers first
        assert request(url, "/api/submissions", token, file=data.bad)[0] == 429
    rows = _rows(db)
    assert len(rows) == 5 and all(r.status != "invalid" for r in rows)
    assert len(list((tmp_path / "uploads").iterdir())) == 5                        # refused files are not kept


def test_killed_while_scoring(db, data, tmp_path):
    ("SIGKILL (the server's whole process group) while a submission is being scored; at the restart it is queued again "
     "and scored once, nothing half-written")
    from clinseg.serve import request
    token = _add(db, "ada")
    log = tmp_path / "scoring.log"
    env = {"SLOW_SCORE": "30", "SLOW_SCORE_LOG": str(log)}
    with live_server(tmp_path, data.slow, data.solution, db, env=env) as (url, proc):
        status, body = request(url, "/api/submissions", token, file=data.submission)
        assert status == 202
        sid = body["id"]
        end = time.monotonic() + SAFETY
        while request(url, f"/api/submissions/{sid}", token)[1]["status"] != "scoring":
            assert time.monotonic() < end, "never started scoring"
            time.sleep(0.05)
        while not log.exists(): time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)                         # the server and its scoring process, mid-score
        proc.wait(SAFETY)
    [row] = _rows(db)
    assert (row.status, row.attempts, row.public_score, row.scored) == ("scoring", 1, None, None)
    with live_server(tmp_path, data.slow, data.solution, db, env={**env, "SLOW_SCORE": "0"}) as (url, proc):
        s = _wait_scored(lambda i: request(url, f"/api/submissions/{i}", token)[1], sid)
    [row] = _rows(db)
    assert ((row.status, row.attempts) == ("scored", 2) and row.public_score == s["public_score"]
            and row.private_score is not None)
    # the killed attempt and the one that finished: nothing scored a third time
    assert log.read_text().count("start") == 2


def _vm_hwm(pid):
    "Peak resident memory of a process, in bytes (Linux)"
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"): return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_upload_cap_streams(data, tmp_path):
    ("A body over the cap is refused (413) while it streams, without being held in memory; a declared length is "
     "refused at once")
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = _add(db, "ada")
    if not Path("/proc/self/status").exists(): _skip("no /proc (peak memory of the server cannot be read)")
    with live_server(tmp_path, "dsb2018", data.solution, db, max_upload_mb=1) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        from clinseg.serve import request
        # the token's argon2 check (64 MiB, once) before measuring
        assert request(url, "/api/submissions", token)[0] == 200
        before = _vm_hwm(proc.pid)
        boundary = "b0undary"
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                'filename="big.csv"\r\n\r\nImageId,EncodedPixels\n').encode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.putrequest("POST", "/api/submissions")
        conn.putheader("Authorization", f"Bearer {token}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        block, sent = b"x" * (1 << 20), 0
        try:
            conn.send(b"%x\r\n%s\r\n" % (len(head), head))
            while sent < 256 << 20:                              # 256 MB, unless the server stops reading first
                conn.send(b"%x\r\n%s\r\n" % (len(block), block))
                sent += len(block)
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError): pass
        resp = conn.getresponse()
        assert resp.status == 413 and "1 MB" in json.loads(resp.read())["error"]
        conn.close()
        assert _vm_hwm(proc.pid) - before < 40 << 20, (before, _vm_hwm(proc.pid))   # far below the 256 MB offered
        assert list((tmp_path / "uploads").iterdir()) == []                          # the partial file is gone
        # a declared length over the cap: refused unread
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.putrequest("POST", "/api/submissions")
        conn.putheader("Authorization", f"Bearer {token}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(50 << 20))
        conn.endheaders()
        conn.send(head)
        resp = conn.getresponse()
        assert resp.status == 413
        conn.close()


def test_light_import():
    ("`import clinseg` and `clinseg.serve` (the submit client, the commands' arguments) do not import the "
     "server's packages")
    code = ("import sys, clinseg, clinseg.serve; heavy = [m for m in ('starlette', 'sqlalchemy', 'uvicorn', 'alembic', "
            "'argon2') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_arguments_parse():
    "SERVE_ARGUMENTS build argparse parsers whose Namespaces the commands take"
    import argparse
    from clinseg.serve import SERVE_ARGUMENTS, SERVE_HELP
    assert set(SERVE_ARGUMENTS) == set(SERVE_HELP) == {"serve", "serve-admin", "submit"}
    parsers = {}
    for name, arguments in SERVE_ARGUMENTS.items():
        p = parsers[name] = argparse.ArgumentParser(prog=name)
        for names, kwargs in arguments: p.add_argument(*names, **kwargs)
    a = parsers["serve"].parse_args(["--competition", "dsb2018", "--solution", "s.csv"])
    assert ((a.host, a.port, a.daily_limit, a.db, a.deadline, a.scheduler, a.max_upload_mb)
            == ("127.0.0.1", 8000, None, None, None, None, 20))   # no --daily-limit: the board's DAILY_LIMIT
    a = parsers["serve-admin"].parse_args(["add-teacher", "turing", "--db", "sqlite:///x.sqlite"])
    assert (a.action, a.name, a.db) == ("add-teacher", "turing", "sqlite:///x.sqlite")
    a = parsers["submit"].parse_args(["--server", "http://h:1", "--token", "t", "f.csv", "--wait"])
    assert (a.server, a.token, a.file, a.wait) == ("http://h:1", "t", "f.csv", True)


# ---------------------------------------------------------------- a real browser, without JavaScript

def _browser_missing():
    if not CHROMIUM.exists(): return f"{CHROMIUM} is missing (install Debian's chromium: apt-get install -y chromium)"
    try: import playwright.sync_api  # noqa: F401
    except ImportError: return "playwright is not installed (pip install -e '.[dev]')"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
def test_browser(db, data, tmp_path, javascript):
    ("In Chromium, with JavaScript off and on, on both databases: sign in, upload, see the score (the page reloads "
     "itself) and the feedback per image, mark it for the private board, make a team, choose a name, the "
     "leaderboard, and the teacher's page answered 403")
    why = _browser_missing()
    if why:
        if os.environ.get("CLINSEG_REQUIRE_BROWSER"): pytest.fail(why)
        _skip(why)
    from playwright.sync_api import sync_playwright
    token = _add(db, "ada")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = f"serve_{'js' if javascript else 'nojs'}_{db.split(':')[0].split('+')[0]}"
    profile = Path(tempfile.mkdtemp(prefix="clinseg-chromium-"))
    try:
        with live_server(tmp_path, "dsb2018", data.solution, db, team_size=2) as (url, proc), \
                sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True,
                                                       args=CHROMIUM_ARGS, java_script_enabled=javascript,
                                                       viewport={"width": 1200, "height": 900}, timeout=60_000)
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            page.set_default_timeout(60_000)
            try:
                page.goto(f"{url}/submissions")
                assert page.url.endswith("/login")                                    # signed out: to the sign-in page
                page.fill("input[name=token]", token)
                page.click("text=Sign in >> nth=-1")
                page.wait_for_url(f"{url}/submissions")
                page.screenshot(path=str(ARTIFACTS / f"{shot}_1_signed_in.png"))
                page.set_input_files("input[name=file]", str(data.submission))
                page.click("button:has-text('Upload')")
                page.wait_for_url(re.compile(r".*/submissions/\d+$"))
                # the meta refresh, not a script, brings it
                page.wait_for_selector("#public", timeout=60_000)
                assert page.inner_text("#status") == "scored"
                score = float(page.inner_text("#public"))
                assert page.locator("#feedback tr").count() >= 2                    # a row per public image
                page.screenshot(path=str(ARTIFACTS / f"{shot}_2_scored.png"))
                page.click("button.select")
                page.wait_for_url(f"{url}/submissions")
                assert "marked for the private board" in page.inner_text("#message")
                assert page.locator("#submissions .final").count() == 1
                page.fill("#team input[name=name] >> nth=0", "Otsu's heirs")
                page.click("button:has-text('Make it')")
                page.wait_for_selector("#team b")
                assert "team made" in page.inner_text("#message") and page.inner_text("#team b") == "Otsu's heirs"
                page.fill("input[name=name]", "Ada L.")
                page.click("button:has-text('Save')")
                page.wait_for_selector("#message")
                assert "saved" in page.inner_text("#message")
                page.screenshot(path=str(ARTIFACTS / f"{shot}_3_choices.png"))
                page.click("text=Leaderboard")
                row = page.inner_text("#leaderboard tr:nth-child(2)")
                assert "Otsu's heirs" in row and f"{score:.5f}" in row
                page.screenshot(path=str(ARTIFACTS / f"{shot}_4_leaderboard.png"))
                answer = page.goto(f"{url}/teacher")
                assert answer.status == 403 and "Teachers only" in page.content()
            except BaseException:
                page.screenshot(path=str(ARTIFACTS / f"{shot}_failure.png"))
                raise
            finally: ctx.close()
    finally: shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow
def test_scheduler(data, tmp_path):
    "`--scheduler ADDRESS`: the server scores on a running dask.distributed cluster (a local one here, on 127.0.0.1)"
    try: from distributed import LocalCluster
    except ImportError: _skip("dask.distributed is not installed (pip install 'dask[distributed]')")
    from clinseg.serve import request
    from clinseg.submissions import score
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = _add(db, "ada")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        with live_server(tmp_path, "dsb2018", data.solution, db, scheduler=cluster.scheduler_address) as (url, proc):
            status, body = request(url, "/api/submissions", token, file=data.submission)
            assert status == 202
            s = _wait_scored(lambda i: request(url, f"/api/submissions/{i}", token)[1], body["id"])
        assert "on the dask cluster" in proc.log.read_text()
    assert s["status"] == "scored" and s["public_score"] == score(data.solution, data.submission, "dsb2018").public


# ---------------------------------------------------------------- the command line, as the README and the walkthrough
# type it

def test_command_line(data, tmp_path):
    ("`clinseg serve-admin` prints a token, `clinseg serve` starts the site, `clinseg submit --wait` prints the score; "
     "errors are one line")
    exe = shutil.which("clinseg")
    assert exe, "the clinseg command is not installed (pip install -e .)"
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    def run(*a): return subprocess.run([exe, *map(str, a)], capture_output=True, text=True, timeout=SAFETY,
                                       cwd=tmp_path)
    made = run("serve-admin", "add-user", "ada", "--db", db)
    assert made.returncode == 0 and made.stdout.count("\n") == 1 and "shown this once" in made.stderr, made.stderr
    token = made.stdout.strip()
    log = tmp_path / "serve.log"
    url, proc = _started([exe, "serve", "-c", "dsb2018", "--solution", data.solution, "--db", db, "--port", "0",
                          "--uploads", tmp_path / "uploads"], log, cwd=tmp_path)
    try:
        sub = run("submit", data.submission, "--server", url, "--token", token, "--wait", "--timeout", SAFETY)
        assert sub.returncode == 0 and "scored: public score 0." in sub.stdout, (sub.stdout, sub.stderr)
        bad = run("submit", data.bad, "--server", url, "--token", token)
        assert bad.returncode == 1 and "invalid" in bad.stdout and "row 2: field ImageId" in bad.stderr
        nobody = run("submit", _big_file(tmp_path), "--server", url, "--token", "0000abcd.nope")
        assert (nobody.returncode == 1
                and nobody.stderr == f"clinseg: error: {url}: 401: that token is not known here\n"), nobody.stderr
    finally: _stop(proc)
    assert "Traceback" not in log.read_text()
    with _closed_port() as closed:
        gone = run("submit", data.submission, "--server", f"http://127.0.0.1:{closed.getsockname()[1]}", "--token",
                   token)
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1 and "no answer" in gone.stderr, gone.stderr


def _big_file(folder, size=1_500_000):
    "A submission-like file of `size` bytes (its rows are never read: the token is refused first)"
    path = folder / "big.csv"
    if not path.exists():
        row = "0" * 64 + "," + " ".join(f"{k} 1" for k in range(1, 400, 2)) + "\n"
        path.write_text("ImageId,EncodedPixels\n" + row * (size // len(row)))
    return path


def test_wrong_token_answered(data, tmp_path):
    ("50 uploads of 1.5 MB with a wrong token, through `submit_command`: each one line saying so (401, then the rate "
     "limit's 429), never a broken pipe")
    from clinseg.serve import ServeError, submit_command
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    _add(db, "ada")
    args = Namespace(file=_big_file(tmp_path), token="0000abcd.nope", wait=False, timeout=SAFETY)
    with live_server(tmp_path, "dsb2018", data.solution, db) as (url, proc):
        for k in range(50):   # from the 11th on, the sign-in rate limit answers (10 failures a minute)
            with pytest.raises(ServeError) as e: submit_command(Namespace(server=url, **vars(args)))
            said = "401: that token is not known here" if k < 10 else "429: too many failed sign-ins"
            assert str(e.value).startswith(f"{url}: {said}") and "\n" not in str(e.value), (k, str(e.value))
    assert list((tmp_path / "uploads").iterdir()) == []


def test_answer_read_after_broken_pipe(tmp_path):
    """A server that answers before it has read the file, then closes (the file unread: a reset): `request` reads the
    answer that came before the broken pipe. The server here is a plain socket with a small receive buffer."""
    from clinseg.serve import request
    answer = json.dumps({"error": "that token is not known here"}).encode()
    head = (f"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {len(answer)}\r\n"
            "Connection: close\r\n\r\n").encode()
    big, n = _big_file(tmp_path), 10
    with socket.socket() as srv:
        # the client cannot hand the whole file to the system
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        srv.bind(("127.0.0.1", 0))
        srv.listen(n)
        def serve():
            for _ in range(n):
                conn, _ = srv.accept()
                with conn:
                    conn.recv(4096)            # the request's head, perhaps the file's first bytes
                    conn.sendall(head + answer)
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        for k in range(n):
            assert request(url, "/api/submissions", "wrong", file=big, timeout=SAFETY) == (401, json.loads(answer)), k
        t.join(SAFETY)


def test_no_user_path_reaches_the_disk(data, tmp_path):
    ("An upload named like a path (`../../x.csv`, an absolute path) is stored under a server-chosen name inside the "
     "uploads folder only")
    from clinseg.accounts import add_user
    from clinseg.board import open_board
    from clinseg.pages import create_app
    board = open_board("dsb2018", data.solution, f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path / "uploads")
    token = add_user(board.engine, "ada")
    with _client(create_app(board)) as c:
        for name in ["../../escaped.csv", "/tmp/escaped-abs.csv", "..\\..\\escaped-win.csv"]:
            r = c.post("/api/submissions", files={"file": (name, data.submission.read_bytes())}, headers=_bearer(token))
            assert r.status_code == 202, r.text
    stored = sorted(p.name for p in (tmp_path / "uploads").rglob("*") if p.is_file())
    assert len(stored) == 3 and all(re.fullmatch(r"[0-9a-f]{32}\.csv", n) for n in stored), stored
    assert not list(tmp_path.parent.glob("escaped*")) and not Path("/tmp/escaped-abs.csv").exists()
    board.engine.dispose()


# ---------------------------------------------------------------- the board's defences (issue-found attacks, kept)

HUNGRY_COMPETITION = '''"""DSB 2018 with a validator that costs what a file asks: 8 GB for a file naming HUNGRY, an
exponential regular expression for one naming SPIN (a test of the checking process's memory and CPU-time caps)."""
import re
import clinseg.board
from clinseg.competitions.dsb2018 import COMPETITION as DSB
from dataclasses import replace

_validate = clinseg.board.validate

def costly(path, comp, sol):
    head = open(path, "rb").read(4096)
    if b"HUNGRY" in head: bytearray(8 << 30)
    if b"SPIN" in head: re.fullmatch(r"(a+)+b", "a" * 64)
    return _validate(path, comp, sol)

clinseg.board.validate = costly   # what the checking process calls
COMPETITION = replace(DSB, name="costly_dsb", title="Costly DSB")
'''


def _vm_rss(pid):
    "Resident memory of a process now, in bytes (Linux)"
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_validation_is_capped(data, tmp_path):
    ("Attack 1: a file whose check costs 8 GB, one whose check never ends, and 16,000 copies of one DSB row: each "
     "answered 422 with one line, in a checking process; the server's own memory stays put; a good file still passes")
    from clinseg.serve import request
    comp = tmp_path / "costly_dsb.py"
    comp.write_text(HUNGRY_COMPETITION)
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    token = _add(db, "ada")
    rows = data.submission.read_text().splitlines()
    files = {}
    for name, text in (("hungry", rows[0] + "\nHUNGRY,1 1\n"), ("spin", rows[0] + "\nSPIN,1 1\n"),
                       ("copies", rows[0] + "\n" + "\n".join([rows[1]] * 16000) + "\n")):
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text(text)
    with live_server(tmp_path, comp, data.solution, db, check_memory_mb=512, check_seconds=2,
                     daily_limit=10) as (url, proc):
        before = _vm_rss(proc.pid)
        hungry = request(url, "/api/submissions", token, file=files["hungry"])
        spin = request(url, "/api/submissions", token, file=files["spin"])
        copies = request(url, "/api/submissions", token, file=files["copies"])
        good = request(url, "/api/submissions", token, file=data.submission)
        after = _vm_rss(proc.pid)
    assert hungry[0] == 422 and [p["message"] for p in hungry[1]["problems"]] == [
        "the file needs more than 512 MB of memory to check"], hungry
    assert spin[0] == 422 and "stopped: it took more than 2 s of CPU time" in spin[1]["problems"][0]["message"], spin
    assert copies[0] == 422 and copies[1]["problems"][0]["row"] == 3, copies
    assert good[0] == 202, good
    assert after - before < 100 * 2**20, (before, after)   # the checks' memory was another process's
    assert "Traceback" not in proc.log.read_text()


def test_invalid_uploads_limited(db, data, tmp_path):
    "Attack 3: invalid uploads have a limit of their own (4 times the daily one), answered 429; only their reports kept"
    from clinseg.serve import request
    token = _add(db, "ada")
    with live_server(tmp_path, "dsb2018", data.solution, db, daily_limit=1) as (url, proc):
        answers = [request(url, "/api/submissions", token, file=data.bad)[0] for _ in range(5)]
        assert request(url, "/api/submissions", token, file=data.submission)[0] == 202   # valid ones still count apart
    assert answers == [422] * 4 + [429], answers
    assert len(list((tmp_path / "uploads").iterdir())) == 1                          # the valid file only
    assert [r.status for r in _rows(db)].count("invalid") == 4


def test_one_server_per_database(data, tmp_path):
    ("Attack 6: a second server on the same database refuses to start, in one line; it starts once the first stops "
     "(and says which rules changed since)")
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    code = ("import sys; from argparse import Namespace; from clinseg.serve import main; "
            f"sys.exit(main(['serve', '-c', 'dsb2018', '-s', {str(data.solution)!r}, '--db', {db!r}, '--port', '0']))")
    with live_server(tmp_path, "dsb2018", data.solution, db):
        second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SAFETY)
    assert second.returncode != 0 and "another server" in second.stderr and "Traceback" not in second.stderr, second
    assert second.stderr.strip().count("\n") == 0, second.stderr
    with live_server(tmp_path, "dsb2018", data.solution, db, daily_limit=3) as (url, proc): pass
    assert "the rules changed since the last start" in proc.log.read_text() and "daily_limit 5 -> 3" in \
        proc.log.read_text()                                      # and a restart with other rules says so


def test_tokens_reset_and_disabled(data, tmp_path):
    ("Attack 5: `serve-admin reset-token` and `disable` stop a token at once, on a running server (no cache outlives "
     "them); `enable` brings the account back")
    from clinseg.serve import request
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    old = _add(db, "ada")
    def admin(*a):
        r = subprocess.run([sys.executable, "-m", "clinseg.serve", "serve-admin", *a, "--db", db], capture_output=True,
                           text=True, timeout=SAFETY)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
    with live_server(tmp_path, "dsb2018", data.solution, db) as (url, proc):
        assert request(url, "/api/submissions", old)[0] == 200
        new = admin("reset-token", "ada")
        assert request(url, "/api/submissions", old)[0] == 401
        assert request(url, "/api/submissions", new)[0] == 200
        admin("disable", "ada")
        assert request(url, "/api/submissions", new)[0] == 401
        admin("enable", "ada")
        assert request(url, "/api/submissions", new)[0] == 200


def _open_fds(pid): return len(os.listdir(f"/proc/{pid}/fd"))


def _fd_kinds(pid):
    "What a process's open files are, counted by kind (for a failure's message)"
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try: k = re.sub(r"\[\d+\]|-\d+", "", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError: continue
        kinds[k] = kinds.get(k, 0) + 1
    return kinds


@pytest.mark.slow
def test_load_50_students(data, tmp_path):
    ("50 students at once, 3 uploads each (one invalid among them), three times: every answer right, every valid file "
     "scored once; after the first rounds the server's open files stay where they were")
    from clinseg.serve import request
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    tokens = [_add(db, f"s{k:02d}") for k in range(50)]
    with live_server(tmp_path, "dsb2018", data.solution, db, daily_limit=10) as (url, proc):
        def round_of(files):
            barrier, out, lock = threading.Barrier(50), [], threading.Lock()
            def student(token, k):
                barrier.wait()
                for f in files(k):
                    status = request(url, "/api/submissions", token, file=f, timeout=SAFETY)[0]
                    with lock: out.append(status)
            threads = [threading.Thread(target=student, args=(t, k)) for k, t in enumerate(tokens)]
            for t in threads: t.start()
            for t in threads: t.join(SAFETY)
            _wait_queue_empty(db)
            return sorted(out)
        load = lambda k: (data.submission, data.bad if k % 5 == 0 else data.worse, data.worse)  # noqa: E731
        for n in range(3):
            assert round_of(load) == sorted([202] * 140 + [422] * 10), n
            if n == 1: fds = _open_fds(proc.pid)                # after a first round: pools and connections made
        assert _open_fds(proc.pid) <= fds + 2, (fds, _open_fds(proc.pid), _fd_kinds(proc.pid))
    rows = _rows(db)
    assert len(rows) == 450 and all(r.status == "scored" and r.attempts == 1 for r in rows if r.status != "invalid")


def _wait_queue_empty(db):
    import sqlalchemy as sa
    engine, end = sa.create_engine(db), time.monotonic() + SAFETY
    try:
        while time.monotonic() < end:
            with engine.connect() as c:
                if not c.scalar(sa.text("SELECT count(*) FROM submissions WHERE status IN ('queued', 'scoring')")):
                    return
            time.sleep(0.2)
        raise AssertionError("the queue did not empty")
    finally: engine.dispose()


# ---------------------------------------------------------------- the class's features, through the API

def test_class_features(db, data, tmp_path):
    ("Teams, a baseline, final selection, per-image feedback (public only), the shake-up, the private board's "
     "uncertainty, anonymous boards and the grades' presets, through the API on both databases")
    from clinseg.accounts import add_team, add_user
    from clinseg.board import open_board, parse_deadline
    from clinseg.pages import create_app
    from clinseg.standings import add_baseline
    board = open_board("dsb2018", data.solution, db, tmp_path / "uploads", select=1)
    ada, bob, cy = (add_user(board.engine, n) for n in ("ada", "bob", "cy"))
    teacher = add_user(board.engine, "turing", "teacher")
    add_team(board.engine, "pair", ["bob", "cy"])
    empty = tmp_path / "empty.csv"
    empty.write_text(data.submission.read_text().splitlines()[0] + "\n")
    add_baseline(board, "empty", empty, "Predict nothing")
    with _client(create_app(board)) as c:
        def post(token, path): return c.post("/api/submissions", files={"file": ("s.csv", Path(path).read_bytes())},
                                             headers=_bearer(token)).json()["id"]
        def get(token): return lambda sid: c.get(f"/api/submissions/{sid}", headers=_bearer(token)).json()
        a1, b1, c1 = post(ada, data.submission), post(bob, data.worse), post(cy, data.submission)
        for t, sid in ((ada, a1), (bob, b1), (cy, c1)): _wait_scored(get(t), sid)
        end, lb = time.monotonic() + SAFETY, c.get("/api/leaderboard").json()
        while not any(e["baseline"] for e in lb):                       # the baseline is scored by the worker too
            assert time.monotonic() < end, "the baseline was never scored"
            time.sleep(0.05)
            lb = c.get("/api/leaderboard").json()
        assert [(e["user"], e["team"], e["baseline"]) for e in lb if not e["baseline"]] == [
            ("ada", None, False), ("pair", "pair", False)], lb
        assert [e["rank"] for e in lb if not e["baseline"]] == [1, 2]
        [base] = [e for e in lb if e["baseline"]]
        assert base["rank"] is None and base["display_name"] == "Predict nothing"
        # a team sees its submissions, another student does not
        assert c.get(f"/api/submissions/{c1}", headers=_bearer(bob)).status_code == 200
        assert c.get(f"/api/submissions/{c1}", headers=_bearer(ada)).status_code == 404
        # final selection: bob marks his worse try; a second mark is over the team's limit of 1
        r = c.post(f"/api/submissions/{b1}/select", headers=_bearer(bob))
        assert r.status_code == 200 and r.json() == {"selected": [b1], "limit": 1}, r.text
        over = c.post(f"/api/submissions/{c1}/select", headers=_bearer(cy))
        assert over.status_code == 409 and "unmark one first" in over.json()["error"]
        assert c.post(f"/api/submissions/{b1}/select", headers=_bearer(ada)).status_code == 404
        assert c.post(f"/api/submissions/{b1}/select").status_code == 401
        # per-image feedback: the public part only, for the student; everything for the teacher
        mine = c.get(f"/api/submissions/{b1}", headers=_bearer(bob)).json()
        assert mine["selected"] and {f["usage"] for f in mine["feedback"]} == {"Public"}
        assert all(f["failure"] for f in mine["feedback"])
        seen = c.get(f"/api/submissions/{b1}", headers=_bearer(teacher)).json()["feedback"]
        assert {f["usage"] for f in seen} == {"Public", "Private"}
        # a page's note comes from the signed session, never from the address (no text injected by a link)
        assert "EVIL" not in c.get("/submissions?note=EVIL&bad=1", headers=_bearer(ada)).text
        # the shake-up simulator: the teacher's, before the deadline
        assert c.get("/api/shakeup", headers=_bearer(ada)).status_code == 403
        sh = c.get("/api/shakeup?rounds=200", headers=_bearer(teacher)).json()
        assert sh["entries"] == 2 and sh["private_fraction"] == 0.5 and sh["rounds"] == 200
        assert c.get("/api/shakeup?rounds=²", headers=_bearer(teacher)).status_code == 400
        # the grades, in the LMS presets
        canvas = c.get("/teacher/grades.csv?preset=canvas", headers=_bearer(teacher)).text.splitlines()
        assert canvas[0].startswith("Student,ID,SIS User ID,SIS Login ID,Section,2018 Data Science Bowl private")
        assert [r.split(",")[3] for r in canvas[1:]] == ["ada", "bob", "cy"]
        moodle = c.get("/teacher/grades.csv?preset=moodle", headers=_bearer(teacher)).text.splitlines()
        assert moodle[0].startswith("Username,") and moodle[0].endswith(",Team") and moodle[2].endswith(",pair")
        assert c.get("/teacher/grades.csv?preset=excel", headers=_bearer(teacher)).status_code == 400
    # after the deadline: the team's private score is its marked submission's; intervals; no more marks
    board.deadline = parse_deadline("2001-01-01T00:00:00+00:00")
    board.anonymous = True
    with _client(create_app(board)) as c:
        priv = c.get("/api/leaderboard/private").json()
        pair = next(e for e in priv if e["team"] == "pair")
        assert pair["private_score"] == get(bob)(b1)["private_score"] < get(cy)(c1)["private_score"]
        assert all(len(e["interval"]) == 2 and e["interval"][0] <= e["private_score"] <= e["interval"][1]
                   for e in priv)
        assert {e["user"] for e in priv if not e["baseline"] and not e["team"]} == {"Student 1"}   # anonymous
        named = c.get("/api/leaderboard/private", headers=_bearer(teacher)).json()
        assert "ada" in {e["user"] for e in named}
        late = c.post(f"/api/submissions/{c1}/select", headers=_bearer(cy))
        assert late.status_code == 409 and "closed" in late.json()["error"]
    board.engine.dispose()


def test_late_window(db, data, tmp_path):
    ("A late window of 2 days with 10 % off a day: an upload 1.5 days after the deadline is taken, 2 days late, its "
     "private score ×0.8 on the board and in the grades; an extension moves a student's window; after it, 403")
    import csv, io
    from datetime import datetime, timedelta, timezone
    from clinseg.accounts import add_user
    from clinseg.board import extend, open_board
    from clinseg.pages import create_app
    deadline = (datetime.now(timezone.utc) - timedelta(days=1.5)).isoformat()
    board = open_board("dsb2018", data.solution, db, tmp_path / "uploads", deadline=deadline, late_days=2,
                       late_penalty=0.1)
    ada, teacher = add_user(board.engine, "ada"), add_user(board.engine, "turing", "teacher")
    with _client(create_app(board)) as c:
        r = c.post("/api/submissions", files={"file": ("s.csv", data.submission.read_bytes())}, headers=_bearer(ada))
        assert r.status_code == 202, r.text
        s = _wait_scored(lambda i: c.get(f"/api/submissions/{i}", headers=_bearer(ada)).json(), r.json()["id"])
        assert s["late_days"] == 2 and "private_score" not in s        # the late window is open: not yet
        full = c.get(f"/api/submissions/{s['id']}", headers=_bearer(teacher)).json()
        g = next(csv.DictReader(io.StringIO(c.get("/teacher/grades.csv", headers=_bearer(teacher)).text)))
        assert g["late_days"] == "2" and abs(float(g["private_score"]) - 0.8 * full["private_score"]) < 1e-12
    board.late_days = 1                                            # the window now ended half a day ago ...
    with _client(create_app(board)) as c:
        files = {"file": ("s.csv", data.submission.read_bytes())}
        assert c.post("/api/submissions", files=files, headers=_bearer(ada)).status_code == 403
        extend(board.engine, "ada", 1)                             # ... but not for ada, with a day more
        assert c.post("/api/submissions", files=files, headers=_bearer(ada)).status_code == 202
    board.engine.dispose()
