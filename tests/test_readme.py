"""Every `clinseg ...` line of README.md runs as written, in order, from a fresh folder (a new user's first session)."""
import os, re, shlex, signal, subprocess, sys, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    "The lines of README.md's shell blocks that start with `clinseg `, in order"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("clinseg ")]


def test_readme_clinseg_lines_run_as_written(tmp_path):
    commands = readme_commands()
    assert len(commands) >= 3, commands
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for line in commands:
        argv = shlex.split(line)
        if argv[1] == "serve":   # a server: it must start and answer, then stop at Ctrl-C with exit code 0
            serve_as_written(argv, tmp_path, env, line); continue
        r = subprocess.run([sys.executable, "-m", "clinseg.cli", *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
        assert "Traceback" not in r.stderr, r.stderr


def serve_as_written(argv, cwd, env, line, url="http://127.0.0.1:8000/api/leaderboard"):
    "Run a README `clinseg serve` line: it answers on its address within a minute, and Ctrl-C ends it cleanly"
    proc = subprocess.Popen([sys.executable, "-m", "clinseg.cli", *argv[1:]], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        end = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r: assert r.status == 200; break
            except OSError:
                assert proc.poll() is None, f"{line}\n{proc.communicate()[1]}"
                assert time.monotonic() < end, f"{line}: no answer on {url} within 60 s"
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        try: out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL); out, err = proc.communicate()
    assert proc.returncode == 0, f"{line}\n{err}"
    assert "Traceback" not in err, err
