"""Install the notebook hooks into this checkout and its environment only: `python tools/install_hooks.py`.

- JupyterLab run from this environment (the venv of the README's set-up) saves notebooks clean, without outputs, as
  the tests want them: nbdev's clean-on-save goes into `<venv>/etc/jupyter/jupyter_server_config.py`, not the user's
  `~/.jupyter` (which `nbdev_install_hooks` would change for every Jupyter the user runs). The hook gives nbdev the
  notebook's full path, so it also works when Lab is started in `nbs/` and for a notebook saved for the first time.
- git merges notebooks cell by cell (nbdev's merge driver), set in this repository's `.git/config` only.

Run it again at any time: it writes the same settings.
"""
import subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "# clinseg: clean notebooks on save (tools/install_hooks.py)"
HOOK = f'''{MARK}
def clinseg_clean_on_save(model, path, contents_manager, **kwargs):
    "nbdev's clean-on-save, given the notebook's full path (a notebook saved the first time is not on disk yet)"
    import os
    try: from nbdev.clean import clean_jupyter
    except ModuleNotFoundError: return
    try: clean_jupyter(path=os.path.join(contents_manager.root_dir, path), model=model, **kwargs)
    except FileNotFoundError: pass   # cleaned; only nbdev's "trust" step needs the file, and it is not written yet

import warnings   # traitlets sets the same hook twice at start; that is not an override worth a warning
warnings.filterwarnings("ignore", r"Overriding existing pre_save_hook \\(clinseg_clean_on_save\\) with a new one "
                        r"\\(clinseg_clean_on_save\\)")
c.ContentsManager.pre_save_hook = clinseg_clean_on_save
'''


def main():
    if sys.prefix == sys.base_prefix:
        sys.exit("install_hooks: run it inside the project's venv (. .venv/bin/activate), so only that environment "
                 "changes")
    conf = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.py"
    text = conf.read_text(encoding="utf-8") if conf.exists() else ""
    if MARK in text: text = text[:text.index(MARK)].rstrip()
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text((text + "\n\n" if text else "") + HOOK, encoding="utf-8")
    git = ["git", "-C", str(ROOT), "config", "--local"]
    subprocess.run([*git, "merge.nbdev-merge.name", "resolve conflicts with nbdev_fix"], check=True)
    subprocess.run([*git, "merge.nbdev-merge.driver", "nbdev_merge %O %A %B %P"], check=True)
    print(f"notebook save hook: {conf}\ngit merge driver for notebooks: {ROOT / '.git' / 'config'}")


if __name__ == "__main__":
    main()
