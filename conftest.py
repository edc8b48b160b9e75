"""`pytest` runs every notebook under `nbs/` with nbdev's own notebook runner, one test item each.

- Each notebook runs in a fresh Python process through `nbdev.test.test_nb`, with the skip flags
  `nbdev_test` uses (`tst_flags` in settings.ini); `pytest --slow` also runs the `#| slow` cells.
- Each notebook must also be clean, exactly as `nbdev_clean` would write it.
- Nothing is written into the user's home: HOME, the XDG folders and Jupyter's, IPython's and matplotlib's
  configuration folders point into one temporary folder for the session, removed at its end.
"""
import json, os, shutil, subprocess, sys, tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
NB_TIMEOUT = int(os.environ.get('CLINSEG_NB_TIMEOUT', '900'))  # seconds for one notebook, a safety net


HOME_VARS = {'HOME': '', 'XDG_CONFIG_HOME': '.config', 'XDG_CACHE_HOME': '.cache', 'XDG_DATA_HOME': '.local/share',
             'JUPYTER_CONFIG_DIR': '.jupyter', 'JUPYTER_RUNTIME_DIR': '.local/share/jupyter/runtime',
             'JUPYTERLAB_WORKSPACES_DIR': '.jupyter/lab/workspaces', 'IPYTHONDIR': '.ipython', 'MPLCONFIGDIR': '.config/matplotlib'}


def pytest_configure(config):
    "A private home for the whole session (the notebooks' kernels, JupyterLab and the browser inherit it)"
    home = Path(tempfile.mkdtemp(prefix='clinseg-pytest-home-'))
    config._clinseg_home = (home, {k: os.environ.get(k) for k in HOME_VARS})
    for var, sub in HOME_VARS.items():
        (home / sub).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(home / sub)


def pytest_unconfigure(config):
    home, old = getattr(config, '_clinseg_home', (None, {}))
    for var, value in old.items():
        if value is None: os.environ.pop(var, None)
        else: os.environ[var] = value
    if home: shutil.rmtree(home, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption('--slow', action='store_true', help='also run notebook cells marked `#| slow`')


def pytest_collect_file(parent, file_path):
    if file_path.suffix == '.ipynb' and '.ipynb_checkpoints' not in file_path.parts and not file_path.name.startswith('_'):
        return NotebookFile.from_parent(parent, path=file_path)


class NotebookFile(pytest.File):
    def collect(self):
        yield NotebookRun.from_parent(self, name='run')
        yield NotebookClean.from_parent(self, name='clean')


class NotebookFailure(Exception): pass


class NotebookRun(pytest.Item):
    "Runs the notebook's cells as `nbdev_test` does, in a child process (isolated kernel state, a timeout)."
    def runtest(self):
        from nbdev.config import get_config
        skip = get_config(path=ROOT).tst_flags.split()
        force = ['slow'] if self.config.getoption('--slow') else []
        code = ('import sys; from pathlib import Path; from nbdev.test import test_nb\n'
                f'ok, secs = test_nb(Path({str(self.path)!r}), skip_flags={skip!r}, force_flags={force!r}, basepath={str(ROOT)!r})\n'
                'print(f"{secs:.1f}s"); sys.exit(0 if ok else 1)')
        env = {**os.environ, 'MPLBACKEND': 'Agg', 'PYTHONHASHSEED': '0'}
        try: res = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=NB_TIMEOUT)
        except subprocess.TimeoutExpired: raise NotebookFailure(f'{self.path.name} did not finish in {NB_TIMEOUT} s')
        if res.returncode: raise NotebookFailure(res.stderr[-20000:] or res.stdout[-5000:])

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, NotebookFailure): return f'{self.path.name} failed:\n{excinfo.value}'
        return super().repr_failure(excinfo)

    def reportinfo(self): return self.path, 0, f'notebook {self.path.relative_to(ROOT)}'


class NotebookClean(pytest.Item):
    "The committed notebook equals what `nbdev_clean` would write (no outputs, no stray metadata)."
    def runtest(self):
        from execnb.nbio import nb2str
        from nbdev.clean import clean_nb
        from nbdev.config import get_config
        cfg = get_config(path=ROOT)
        text = self.path.read_text(encoding='utf-8')
        nb = json.loads(text)
        clean_nb(nb, cfg.clear_all, cfg.get('allowed_metadata_keys').split(), cfg.get('allowed_cell_metadata_keys').split(), cfg.clean_ids)
        cleaned = nb2str(nb)
        if cleaned != text: raise NotebookFailure(f'{self.path.relative_to(ROOT)} was saved with outputs or metadata: run `nbdev_clean`, '
                                                    'then pytest again (`nbdev_install_hooks`, once, makes JupyterLab save notebooks clean)')

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, NotebookFailure): return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self): return self.path, 0, f'clean {self.path.relative_to(ROOT)}'
