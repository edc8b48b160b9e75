"""Every `clinseg ...` line of README.md runs as written, in order, in a shell, from a fresh folder (a new user's first
session). A `clinseg serve` line starts the class leaderboard, which stays up for the lines after it (the README's
"second terminal"), and Ctrl-C ends it cleanly at the end; then the teacher's grades carry the private ranks."""
import csv, io, os, re, signal, subprocess, sys, urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAFETY = 300   # seconds: a safety net against a hang, never a measure
README_URL = "http://127.0.0.1:8000"   # the address the README's lines use


def readme_commands():
    "The lines of README.md's shell blocks that start with `clinseg `, in order"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("clinseg ")]


def shell_env():
    "The README's shell: this environment's `clinseg` first on PATH, this checkout's package"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT)}


def start_server(line, cwd, env):
    """A README `clinseg serve` line in a shell, with `--port 0` added (a free port, named by the line it prints once it
    takes connections): a server already on 8000 (the reader's own, or another test run's) must not fail the test"""
    proc = subprocess.Popen(["bash", "-c", f"exec {line} --port 0"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    ready = proc.stderr.readline()      # "" if the server stopped
    while ready and not ready.startswith("clinseg serve:"): ready = proc.stderr.readline()   # a warning first
    m = re.match(r"clinseg serve: \S+ on (http://\S+?)/ ", ready)
    if not m:
        proc.kill()
        pytest.fail(f"{line}\n{ready}{proc.communicate()[1]}")
    with urllib.request.urlopen(f"{m.group(1)}/api/leaderboard", timeout=SAFETY) as r: assert r.status == 200
    return proc, m.group(1)


def stop_server(proc, line):
    "Ctrl-C: the server ends with exit code 0 and no traceback"
    proc.send_signal(signal.SIGINT)
    try: out, err = proc.communicate(timeout=SAFETY)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    assert proc.returncode == 0, f"{line}\n{err}"
    assert "Traceback" not in err, err


def teacher_grades(url, token):
    "The teacher's grades.csv, as rows"
    req = urllib.request.Request(f"{url}/teacher/grades.csv", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=SAFETY) as r: return list(csv.DictReader(io.StringIO(r.read().decode())))


@pytest.mark.slow
def test_readme_clinseg_lines_run_as_written(tmp_path):
    commands = readme_commands()
    assert len(commands) >= 3 and any(c.startswith("clinseg serve ") for c in commands), commands
    env = shell_env()
    server = url = serve_line = None
    try:
        for line in commands:
            if line.startswith("clinseg serve "):
                assert server is None, "one server at a time"
                server, url = start_server(line, tmp_path, env)
                serve_line = line
                continue
            run = line.replace(README_URL, url) if url else line
            r = subprocess.run(["bash", "-c", run], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=SAFETY)
            assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
            assert "Traceback" not in r.stderr, r.stderr
        teacher = tmp_path / "demo" / "turing.token"
        if server is not None and teacher.exists():   # the README's board: ada's submission has a private rank
            rows = teacher_grades(url, teacher.read_text().strip())
            ada = next(r for r in rows if r["user"] == "ada")
            assert ada["private_rank"] == "1" and ada["private_score"] not in ("", None), rows
    finally:
        if server is not None: stop_server(server, serve_line)
