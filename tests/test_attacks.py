"""Attacks on `clinseg serve`, each performed against the site (a Starlette TestClient, or uvicorn on 127.0.0.1 in a
thread of the test) and answered safely.

- Forms over their cap or of another type, sign-ins guessed in a loop, a session cookie replayed after signing out,
  ids no database column holds, multipart bodies with odd names, boundaries or ends, bodies that trickle or stall,
  a deadline passing while a file arrives, a student on the teacher's pages.
- The database tests run on SQLite and, with `pytest --slow`, on PostgreSQL (the `db` fixture of test_serve.py).
- A live server here is uvicorn serving `create_app` on a socket bound to 127.0.0.1 before the server starts: a
  connection waits in the socket's queue until it is served, so nothing waits for the server to be ready. Timeouts
  are safety nets against a hang (a failure), never measures; a slow body is answered when the server's own timeout
  (set to about a second) fires, and the test waits for that answer.
"""
import contextlib, http.client, json, re, select, socket, threading, time
from datetime import datetime, timezone

import test_serve
from test_serve import SAFETY, _bearer, _client

data, db, postgres = test_serve.data, test_serve.db, test_serve.postgres   # its fixtures, here by the same names


# ---------------------------------------------------------------- helpers

def _board(db, data, tmp_path, **rules):
    from clinseg.accounts import add_user
    from clinseg.board import open_board
    board = open_board("dsb2018", data.solution, db, tmp_path / "uploads", **rules)
    tokens = {n: add_user(board.engine, n, r) for n, r in [("ada", "student"), ("bob", "student"),
                                                           ("turing", "teacher")]}
    return board, tokens


def _app(board, **options):
    from clinseg.pages import create_app
    return create_app(board, worker=False, **options)


def _csrf(html): return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _sign_in(c, token):
    r = c.post("/login", data={"token": token, "csrf": _csrf(c.get("/login").text)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return r


def _one_line(r):
    "The body of an answer is one line (JSON or text), with no traceback"
    text = r.text if hasattr(r, "text") else r
    assert text.strip() and "\n" not in text.strip() and "Traceback" not in text, text
    return text


def _uploads(tmp_path): return sorted(p.name for p in (tmp_path / "uploads").iterdir())


@contextlib.contextmanager
def _served(app):
    "uvicorn serving `app` on 127.0.0.1 in a thread; yields the port; stopped at the end"
    import uvicorn
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    t = threading.Thread(target=server.run, kwargs=dict(sockets=[sock]), daemon=True)
    t.start()
    try: yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        t.join(SAFETY)
        sock.close()
        assert not t.is_alive(), "the server did not stop"


def _raw(port, head, body=b""):
    "A connection that has sent the request's head and the start of its body (nothing more)"
    s = socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
    s.sendall(head.replace(b"\n", b"\r\n") + b"\r\n" + body)
    return s


def _answer(s):
    "(status, headers in lower case, body) of the answer read on a raw connection (its Content-Length, or to the close)"
    data = b""
    while b"\r\n\r\n" not in data and (chunk := s.recv(65536)): data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    head = head.decode("latin-1").lower()
    m = re.search(r"^content-length: *(\d+)", head, re.M)
    while (m is None or len(body) < int(m.group(1))) and (chunk := s.recv(65536)): body += chunk
    return int(head.split()[1]), head, body.decode("utf-8", "replace")


def _closed(s):
    "Whether the server closes the connection after its answer (it sends nothing more; a wait for the event)"
    try: return s.recv(1) == b""
    except ConnectionResetError: return True


def _multipart(boundary, name=b"m.csv", data=b"ImageId,EncodedPixels\n", closed=True):
    b = boundary.encode() if isinstance(boundary, str) else boundary
    head = b"--" + b + b'\r\nContent-Disposition: form-data; name="file"; filename="' + name + b'"\r\n\r\n'
    return head + data + (b"\r\n--" + b + b"--\r\n" if closed else b"")


# ---------------------------------------------------------------- A. every form capped

def test_forms_capped(data, tmp_path):
    "Sign-in, sign-out and rescore forms: over 16 KB a 413, multipart or another type a 415, one line each"
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    big = {"token": "x" * 20000, "csrf": "y"}
    with _client(_app(board)) as c:
        for path, headers in [("/login", {}), ("/logout", {}), ("/teacher/rescore", _bearer(tok["turing"]))]:
            r = c.post(path, data=big, headers=headers, follow_redirects=False)
            assert r.status_code == 413 and _one_line(r) == "a form over 16 KB\n", (path, r.status_code, r.text)
            r = c.post(path, files={"token": ("t", b"x")}, headers=headers, follow_redirects=False)
            assert r.status_code == 415 and "x-www-form-urlencoded" in _one_line(r), (path, r.status_code)
            r = c.post(path, content=b"{}", headers={**headers, "Content-Type": "application/json"})
            assert r.status_code == 415, path
    # a Content-Length over the cap is refused before the body is read
    with _served(_app(board)) as port:
        s = _raw(port, b"POST /login HTTP/1.1\nHost: x\nContent-Type: application/x-www-form-urlencoded\n"
                       b"Content-Length: 1000000000\nConnection: close\n", b"token=")
        with s: status, _, body = _answer(s)
        assert status == 413 and _one_line(body) == "a form over 16 KB\n"
    board.engine.dispose()


# ---------------------------------------------------------------- B. sign-ins guessed in a loop

def test_sign_in_rate_limit(data, tmp_path):
    ("10 failed sign-ins a minute per account prefix and per address, then 429 with Retry-After, on the form and on "
     "the API; the window slides (a clock the test moves on)")
    from clinseg.web import RateLimit
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    now = [1000.0]
    app = _app(board)
    app.state.tokens.limits = RateLimit(10, 60, clock=lambda: now[0])
    ada_prefix = tok["ada"].split(".")[0]
    with _client(app) as c:
        def login(token):
            csrf = _csrf(c.get("/login").text)
            return c.post("/login", data={"token": token, "csrf": csrf}, follow_redirects=False)
        for k in range(10): assert login(f"{ada_prefix}.guess{k}").status_code == 401, k
        r = login(f"{ada_prefix}.guess10")
        assert r.status_code == 429 and int(r.headers["retry-after"]) == 60, r.status_code
        assert _one_line(r) == "too many failed sign-ins: try again in 60 s\n"
        assert login(tok["ada"]).status_code == 429              # ada's account: no verification for a minute
        now[0] += 30
        assert login(tok["ada"]).headers["retry-after"] == "30"  # a sliding window
        now[0] += 31
        assert login(tok["ada"]).status_code == 303              # a minute after: the right token signs in
        # from one address, with made-up prefixes: the address's limit
        now[0] += 61
        for k in range(10): assert login(f"{k:08x}.guess").status_code == 401, k
        assert login("ffffffff.guess").status_code == 429
        # the API's Bearer tokens count too, answered in JSON
        now[0] += 61
        for k in range(10):
            assert c.get("/api/submissions", headers=_bearer(f"{k:08x}.guess")).status_code == 401, k
        r = c.get("/api/submissions", headers=_bearer("eeeeeeee.guess"))
        assert r.status_code == 429 and r.headers["retry-after"] == "60" and set(r.json()) == {"error"}
        r = c.post("/api/submissions", files={"file": ("m.csv", data.submission.read_bytes())},
                   headers=_bearer("dddddddd.guess"))
        assert r.status_code == 429 and "too many failed sign-ins" in r.json()["error"]
        assert c.get("/api/submissions", headers=_bearer(tok["bob"])).status_code == 429   # the address, limited
        now[0] += 61
        assert c.get("/api/submissions", headers=_bearer(tok["bob"])).status_code == 200
    # the memory is bounded: made-up prefixes beyond the limiter's size push the oldest out
    limits = RateLimit(10, 60, size=100, clock=lambda: now[0])
    for k in range(1000): limits.add(("account", f"{k:08x}"))
    assert len(limits.seen) == 100
    board.engine.dispose()


# ---------------------------------------------------------------- C. sessions end at sign-out, reset, disable

def test_logout_ends_sessions(db, data, tmp_path):
    ("A cookie copied before signing out, replayed after: signed out. A new token or a disabled account: the old "
     "token and the sessions stop at once, not when the token cache's 300 s run out")
    from clinseg.accounts import disable, reset_token
    board, tok = _board(db, data, tmp_path)
    with _client(_app(board)) as c:
        _sign_in(c, tok["ada"])
        copied = dict(c.cookies)
        assert c.get("/api/submissions").status_code == 200
        csrf = _csrf(c.get("/submissions").text)
        assert c.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
        c.cookies.clear()
        c.cookies.update(copied)                                          # the attacker's copy
        assert c.get("/submissions", follow_redirects=False).headers["location"] == "/login"
        assert c.get("/api/submissions").status_code == 401
        # a new token: the old one (remembered by the cache) and the sessions stop at once
        c.cookies.clear()
        _sign_in(c, tok["bob"])
        assert c.get("/api/submissions", headers=_bearer(tok["bob"])).status_code == 200   # now in the cache
        new = reset_token(board.engine, "bob")
        assert c.get("/api/submissions", headers=_bearer(tok["bob"])).status_code == 401
        assert c.get("/submissions", follow_redirects=False).headers["location"] == "/login"
        assert c.get("/api/submissions", headers=_bearer(new)).status_code == 200
        # a disabled account: its token and its sessions
        c.cookies.clear()
        _sign_in(c, new)
        disable(board.engine, "bob")
        assert c.get("/api/submissions", headers=_bearer(new)).status_code == 401
        assert c.get("/submissions", follow_redirects=False).headers["location"] == "/login"
    board.engine.dispose()


# ---------------------------------------------------------------- D. ids no column holds

ODD_IDS = ["²", "١", "+1", "-1", "0", "1.0", "1e3", str(2**31), str(2**63), str(2**64), "9" * 5000, "0x1", " 1"]


def test_odd_ids(db, data, tmp_path):
    "Ids above 2**31 - 1 or 2**63 - 1, non-ASCII digits, signs, 5,000 digits: 404 (or 400) in one line, never a 500"
    board, tok = _board(db, data, tmp_path)
    with _client(_app(board)) as c:
        teacher = _bearer(tok["turing"])
        r = c.post("/api/submissions", files={"file": ("m.csv", data.submission.read_bytes())},
                   headers=_bearer(tok["ada"]))
        assert r.status_code == 202
        sid = r.json()["id"]
        for odd in ODD_IDS:
            r = c.get(f"/api/submissions/{odd}", headers=teacher)
            assert r.status_code == 404 and r.json() == {"error": "no such submission"}, (odd[:20], r.status_code)
            r = c.get(f"/submissions/{odd}/file", headers=teacher)
            assert r.status_code == 404 and _one_line(r) == "no such submission", odd[:20]
            r = c.get(f"/submissions/{odd}", headers=teacher)
            assert r.status_code == 404 and "No such submission" in r.text, odd[:20]
        assert c.get(f"/api/submissions/{sid}", headers=teacher).status_code == 200
        # the rescore form's id: a number by the same rule, or `all`; anything else a 400 in one line
        _sign_in(c, tok["turing"])
        csrf = _csrf(c.get("/teacher").text)
        for odd in ODD_IDS + ["", "ALL", "1,2"]:
            r = c.post("/teacher/rescore", data={"csrf": csrf, "id": odd}, follow_redirects=False)
            assert r.status_code == 400 and _one_line(r) == "id: a submission's number, or 'all'\n", (odd[:20], r.text)
        for ok in [str(sid), "all", str(2**31 - 1)]:
            assert c.post("/teacher/rescore", data={"csrf": csrf, "id": ok}, follow_redirects=False).status_code == 303
    board.engine.dispose()


# ---------------------------------------------------------------- E. multipart edge cases

def test_multipart_edge_cases(data, tmp_path):
    ("A NUL or another control character in the file's name, a name over 255 characters, a boundary missing, empty, "
     "over 70 characters or with characters RFC 2046 does not allow, a body cut before its closing boundary: 400 in "
     "one line, nothing left in the uploads folder")
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    rows = data.submission.read_bytes()
    def post(c, body, kind): return c.post("/api/submissions", content=body, headers={**_bearer(tok["ada"]),
                                                                                    "Content-Type": kind})
    with _client(_app(board)) as c:
        mp = "multipart/form-data; boundary="
        cases = [(_multipart("b0und", b"a\x00b.csv", rows), mp + "b0und", "control character"),
                 (_multipart("b0und", b"a\x01b.csv", rows), mp + "b0und", "control character"),
                 (_multipart("b0und", b"a\x1b[31m.csv", rows), mp + "b0und", "control character"),
                 (_multipart("b0und", b"x" * 300 + b".csv", rows), mp + "b0und", "over 255"),
                 (_multipart("b0und", data=rows), "multipart/form-data", "boundary"),
                 (_multipart("b0und", data=rows), mp, "boundary"),
                 (_multipart("x" * 71, data=rows), mp + "x" * 71, "boundary"),
                 (_multipart("a<b>", data=rows), mp + "a<b>", "boundary"),
                 (_multipart("a\x00b", data=rows), mp + '"a\x00b"', "boundary"),
                 (_multipart("b0und", data=rows, closed=False), mp + "b0und", "closing boundary"),
                 (_multipart("b0und", data=rows)[:-40], mp + "b0und", "closing boundary")]
        for k, (body, kind, said) in enumerate(cases):
            r = post(c, body, kind)
            assert r.status_code == 400 and said in r.json()["error"], (k, r.status_code, r.text)
            _one_line(r)
            assert _uploads(tmp_path) == [], k
        assert post(c, _multipart("x" * 70, data=rows), mp + "x" * 70).status_code == 202   # 70: allowed
    # on a live server: a chunked body that ends (its last chunk sent) before the closing boundary
    with _served(_app(board)) as port:
        body = _multipart("b0und", data=rows, closed=False)
        s = _raw(port, f"POST /api/submissions HTTP/1.1\nHost: x\nAuthorization: Bearer {tok['ada']}\n"
                       "Content-Type: multipart/form-data; boundary=b0und\nTransfer-Encoding: chunked\n"
                       "Connection: close\n".encode(), b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        with s: status, _, text = _answer(s)
        assert status == 400 and "closing boundary" in json.loads(text)["error"]
    assert len(_uploads(tmp_path)) == 1                                     # the one accepted above
    board.engine.dispose()


# ---------------------------------------------------------------- F. bodies that trickle or stall

def test_slow_bodies(data, tmp_path):
    ("Headers, then a body that stalls or trickles: cut off by the idle timeout or the total body time (set to about "
     "a second here), answered 408 in one line, the partial file removed; a stalled form too")
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    app = _app(board, idle_timeout=1, upload_timeout=2, form_timeout=2)
    head = (f"POST /api/submissions HTTP/1.1\nHost: x\nAuthorization: Bearer {tok['ada']}\n"
            "Content-Type: multipart/form-data; boundary=b0und\nContent-Length: 100000\n").encode()
    with _served(app) as port:
        # stalls: the start of the file, then nothing
        s = _raw(port, head, _multipart("b0und", data=b"ImageId,EncodedPixels\n", closed=False))
        with s:
            status, headers, body = _answer(s)
            assert status == 408 and "no byte of the request's body for 1 s" in _one_line(body)
            assert "connection: close" in headers and _closed(s)
        assert _uploads(tmp_path) == []
        # trickles: a byte whenever the server has said nothing for a fifth of a second, until it answers
        s = _raw(port, head, _multipart("b0und", data=b"ImageId,EncodedPixels\n", closed=False))
        with s:
            end = time.monotonic() + SAFETY
            while not select.select([s], [], [], 0.2)[0]:
                assert time.monotonic() < end, "the trickle was never cut off"
                s.sendall(b"0")
            status, _, body = _answer(s)
            assert _closed(s)
        assert status == 408 and "request's body" in _one_line(body)
        assert _uploads(tmp_path) == []
        # a sign-in form that stalls
        s = _raw(port, b"POST /login HTTP/1.1\nHost: x\nContent-Type: application/x-www-form-urlencoded\n"
                       b"Content-Length: 100\n", b"token=ab")
        with s:
            status, headers, body = _answer(s)
            assert status == 408 and _one_line(body) == "no byte of the request's body for 1 s: send it again\n"
            assert "connection: close" in headers and _closed(s)
        # the server still serves
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SAFETY)
        conn.request("GET", "/api/leaderboard")
        assert conn.getresponse().status == 200
        conn.close()
    board.engine.dispose()


# ---------------------------------------------------------------- G. the deadline, at the request's arrival

def test_deadline_at_receipt(data, tmp_path, monkeypatch):
    ("A file whose request arrived before the deadline and whose last byte came after it is on time, recorded at its "
     "arrival; a request that arrives after the deadline is refused. The clock is the test's: it moves on while "
     "the body is read")
    import sqlalchemy as sa
    from clinseg.database import SUBMISSIONS
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    t0 = time.time()
    board.deadline = datetime.fromtimestamp(t0 + 60, timezone.utc)
    clock = [t0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    rows = data.submission.read_bytes()
    body = _multipart("b0und", data=rows)
    def arriving():
        yield body[:100]
        clock[0] = t0 + 120                                  # the deadline passes while the file arrives
        yield body[100:]
    headers = {**_bearer(tok["ada"]), "Content-Type": "multipart/form-data; boundary=b0und"}
    with _client(_app(board)) as c:
        r = c.post("/api/submissions", content=arriving(), headers=headers)
        assert r.status_code == 202, r.text
        assert clock[0] == t0 + 120                          # the body was read after the deadline
        with board.engine.connect() as conn:
            created = conn.scalar(sa.select(SUBMISSIONS.c.created).where(SUBMISSIONS.c.id == r.json()["id"]))
        assert created == t0                                 # judged, and recorded, at the request's arrival
        late = c.post("/api/submissions", content=body, headers=headers)
        assert late.status_code == 403 and "closed" in late.json()["error"]
    board.engine.dispose()


# ---------------------------------------------------------------- H. a student on the teacher's pages

def test_teacher_pages_for_students(data, tmp_path):
    "A signed-in student on /teacher, its grades or its rescore: a 403 page saying so; a visitor: sent to sign in"
    board, tok = _board(f"sqlite:///{tmp_path / 'b.sqlite'}", data, tmp_path)
    with _client(_app(board)) as c:
        for method, path in [("GET", "/teacher"), ("GET", "/teacher/grades.csv"), ("POST", "/teacher/rescore")]:
            r = c.request(method, path, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/login", (method, path)
        _sign_in(c, tok["ada"])
        csrf = _csrf(c.get("/submissions").text)
        for method, path in [("GET", "/teacher"), ("GET", "/teacher/grades.csv"), ("POST", "/teacher/rescore")]:
            r = c.request(method, path, data={"csrf": csrf, "id": "all"} if method == "POST" else None,
                          follow_redirects=False)
            assert r.status_code == 403 and r.headers["content-type"].startswith("text/html"), (path, r.status_code)
            assert "<h1>Teachers only</h1>" in r.text and "signed in as a student" in r.text, path
            assert 'action="/login"' not in r.text, path
        r = c.get("/teacher/grades.csv", headers=_bearer(tok["bob"]))
        assert r.status_code == 403 and "Teachers only" in r.text
        assert c.get("/teacher/grades.csv", headers=_bearer(tok["turing"])).status_code == 200
    board.engine.dispose()
