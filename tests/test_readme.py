"""Every `clinseg ...` line of README.md runs as written, in order, from a fresh folder (a new user's first session)."""
import os, re, shlex, subprocess, sys
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
        r = subprocess.run([sys.executable, "-m", "clinseg.cli", *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
        assert "Traceback" not in r.stderr, r.stderr
