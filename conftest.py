"""`pytest` runs every notebook under `nbs/` with nbdev's own notebook runner, one test item each.

- Each notebook runs in a fresh Python process through `nbdev.test.test_nb`, with the skip flags
  `nbdev_test` uses (`tst_flags` in settings.ini); `pytest --slow` also runs the `#| slow` cells.
- The notebooks' processes run CLINSEG_NB_JOBS at a time (default 2; 1: one after another), started in the order of
  their items as soon as the first one is asked for; each item reports its own notebook's result.
- Tests marked `@pytest.mark.slow` run only with `pytest --slow` (CI passes it); the plain `pytest` skips them.
- Each notebook must also be clean, exactly as `nbdev_clean` would write it.
- Nothing is written into the user's home: HOME, the XDG folders and Jupyter's, IPython's and matplotlib's
  configuration folders point into one temporary folder for the session, removed at its end.
"""
import json, os, shutil, subprocess, sys, tempfile, threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
NB_TIMEOUT = int(os.environ.get('CLINSEG_NB_TIMEOUT', '900'))  # seconds for one notebook, a safety net
NB_JOBS = max(1, int(os.environ.get('CLINSEG_NB_JOBS', '2')))    # notebooks run at once, each in its own process


HOME_VARS = {'HOME': '', 'XDG_CONFIG_HOME': '.config', 'XDG_CACHE_HOME': '.cache', 'XDG_DATA_HOME': '.local/share',
             'JUPYTER_CONFIG_DIR': '.jupyter', 'JUPYTER_RUNTIME_DIR': '.local/share/jupyter/runtime',
             'JUPYTERLAB_WORKSPACES_DIR': '.jupyter/lab/workspaces', 'IPYTHONDIR': '.ipython',
             'MPLCONFIGDIR': '.config/matplotlib'}


def pytest_configure(config):
    "A private home for the whole session (the notebooks' kernels, JupyterLab and the browser inherit it); the marker"
    config.addinivalue_line('markers', 'slow: a long test, run only with `pytest --slow`')
    home = Path(tempfile.mkdtemp(prefix='clinseg-pytest-home-'))
    config._clinseg_home = (home, {k: os.environ.get(k) for k in HOME_VARS})
    for var, sub in HOME_VARS.items():
        (home / sub).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(home / sub)


def pytest_collection_modifyitems(config, items):
    "Without --slow, tests marked slow are skipped (with the reason)"
    if config.getoption('--slow'): return
    skip = pytest.mark.skip(reason='slow: runs with `pytest --slow`')
    for item in items:
        if item.get_closest_marker('slow') is not None: item.add_marker(skip)


def pytest_sessionfinish(session):
    ahead = getattr(session, '_clinseg_ahead', None)
    if ahead is not None: ahead.stop()


def pytest_unconfigure(config):
    home, old = getattr(config, '_clinseg_home', (None, {}))
    for var, value in old.items():
        if value is None: os.environ.pop(var, None)
        else: os.environ[var] = value
    if home: shutil.rmtree(home, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption('--slow', action='store_true',
                     help='also run notebook cells marked `#| slow`, and tests marked slow')


def pytest_collect_file(parent, file_path):
    if file_path.suffix == '.ipynb' and '.ipynb_checkpoints' not in file_path.parts \
            and not file_path.name.startswith('_'):
        return NotebookFile.from_parent(parent, path=file_path)


class NotebookFile(pytest.File):
    def collect(self):
        yield NotebookRun.from_parent(self, name='run')
        yield NotebookClean.from_parent(self, name='clean')


class NotebookFailure(Exception): pass


class Ahead:
    "The notebooks' child processes, `jobs` at a time, started in the order of `items`, ahead of pytest asking for them"
    def __init__(self, items, jobs):
        from nbdev.config import get_config
        self.skip = get_config(path=ROOT).tst_flags.split()
        self.env = {**os.environ, 'MPLBACKEND': 'Agg', 'PYTHONHASHSEED': '0'}   # as the session's start left it
        self.stopped, self.running, self.lock = False, set(), threading.Lock()
        self.pool = ThreadPoolExecutor(jobs, thread_name_prefix='notebook')
        self.results = {item.nodeid: self.pool.submit(self.run, item) for item in items}

    def run(self, item):
        "(return code, stdout, stderr) of the notebook's process; None when it did not finish in NB_TIMEOUT s"
        force = ['slow'] if item.config.getoption('--slow') else []
        code = ('import sys; from pathlib import Path; from nbdev.test import test_nb\n'
                f'ok, secs = test_nb(Path({str(item.path)!r}), skip_flags={self.skip!r}, force_flags={force!r}, '
                f'basepath={str(ROOT)!r})\n'
                'print(f"{secs:.1f}s"); sys.exit(0 if ok else 1)')
        with self.lock:
            if self.stopped: return 1, '', 'not run: the session ended first'
            proc = subprocess.Popen([sys.executable, '-c', code], cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            self.running.add(proc)
        try:
            out, err = proc.communicate(timeout=NB_TIMEOUT)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return None
        finally:
            with self.lock: self.running.discard(proc)

    def stop(self):
        "At the session's end (after -x, or Ctrl-C): nothing more is started, what runs is ended"
        with self.lock:
            self.stopped = True
            for proc in self.running: proc.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)


class NotebookRun(pytest.Item):
    "Runs the notebook's cells as `nbdev_test` does, in a child process (isolated kernel state, a timeout)."
    def runtest(self):
        ahead = getattr(self.session, '_clinseg_ahead', None)
        if ahead is None or self.nodeid not in ahead.results:   # the first notebook asked for: start them all
            if ahead is not None: ahead.stop()
            later = self.session.items[self.session.items.index(self):]
            ahead = self.session._clinseg_ahead = Ahead([i for i in later if isinstance(i, NotebookRun)], NB_JOBS)
        res = ahead.results[self.nodeid].result()
        if res is None: raise NotebookFailure(f'{self.path.name} did not finish in {NB_TIMEOUT} s')
        code, out, err = res
        if code: raise NotebookFailure(err[-20000:] or out[-5000:])

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
        clean_nb(nb, cfg.clear_all, cfg.get('allowed_metadata_keys').split(),
                 cfg.get('allowed_cell_metadata_keys').split(), cfg.clean_ids)
        cleaned = nb2str(nb)
        if cleaned != text:
            raise NotebookFailure(f'{self.path.relative_to(ROOT)} was saved with outputs or metadata: run '
                                  '`nbdev_clean`, then pytest again (`nbdev_install_hooks`, once, makes JupyterLab '
                                  'save notebooks clean)')

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, NotebookFailure): return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self): return self.path, 0, f'clean {self.path.relative_to(ROOT)}'
