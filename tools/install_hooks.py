"""Install the notebook hooks into this checkout and its environment only: `python tools/install_hooks.py`.

- JupyterLab run from this environment (the venv of the README's set-up) saves notebooks clean, without outputs, as
  the tests want them: nbdev's save hook goes into `<venv>/etc/jupyter/jupyter_server_config.json`, not the user's
  `~/.jupyter` (which `nbdev_install_hooks` would change for every Jupyter the user runs).
- git merges notebooks cell by cell (nbdev's merge driver), set in this repository's `.git/config` only.

Run it again at any time: it writes the same two settings.
"""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOOK = "nbdev.clean.clean_jupyter"   # nbdev's own save hook: cleans a notebook whose folder has jupyter_hooks = True


def main():
    if sys.prefix == sys.base_prefix:
        sys.exit("install_hooks: run it inside the project's venv (. .venv/bin/activate), so only that environment changes")
    conf = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.json"
    settings = json.loads(conf.read_text(encoding="utf-8")) if conf.exists() else {}
    settings.setdefault("ContentsManager", {})["pre_save_hook"] = HOOK
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    git = ["git", "-C", str(ROOT), "config", "--local"]
    subprocess.run([*git, "merge.nbdev-merge.name", "resolve conflicts with nbdev_fix"], check=True)
    subprocess.run([*git, "merge.nbdev-merge.driver", "nbdev_merge %O %A %B %P"], check=True)
    print(f"notebook save hook: {conf}\ngit merge driver for notebooks: {ROOT / '.git' / 'config'}")


if __name__ == "__main__":
    main()
