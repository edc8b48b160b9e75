"""`pytest` runs every notebook under `nbs/` with nbdev's own notebook runner, one test item each.

- Each notebook runs through `nbdev.test.test_nb` in a child process, with the skip flags `nbdev_test` uses
  (`tst_flags` in settings.ini); `pytest --slow` also runs the `#| slow` cells.
- As `nbdev_test` does, a child process runs notebooks one after another (each in a fresh kernel, with the
  environment, working directory, `sys.path` and signal handlers put back after it): the imports are paid once, not
  once a notebook. A notebook that leaves a thread or a child process running, or that does not finish, ends its
  process, and the next notebook gets a fresh one.
- CLINSEG_NB_JOBS such processes run at once (default 2; 1: one after another), fed in the order of the items from
  the session's start; the tests of `tests/` run first, in this process, while the notebooks run beside them, and
  each notebook's item then reports its own notebook's result.
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
    "The notebooks' items last (they run in their workers meanwhile); without --slow, tests marked slow are skipped"
    items[:] = [i for i in items if not isinstance(i, NotebookRun)] + [i for i in items if isinstance(i, NotebookRun)]
    if config.getoption('--slow'): return
    skip = pytest.mark.skip(reason='slow: runs with `pytest --slow`')
    for item in items:
        if item.get_closest_marker('slow') is not None: item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    "The notebooks start in their worker processes at once, so they run while this process runs the other tests"
    notebooks = [i for i in session.items if isinstance(i, NotebookRun)]
    if notebooks and not session.config.option.collectonly:
        session._clinseg_ahead = Ahead(notebooks, NB_JOBS)
    yield


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


WORKER = r'''
import builtins, contextlib, io, json, os, signal, sys, threading, traceback
from pathlib import Path
from nbdev.test import test_nb
answers = os.fdopen(os.dup(1), "w")           # the answers go to the parent; what a notebook's own child processes
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # print to the inherited descriptors goes nowhere
def children():
    try: return Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    except OSError: return []
for line in sys.stdin:
    job = json.loads(line)
    env, cwd, path, imp = dict(os.environ), os.getcwd(), list(sys.path), builtins.__import__
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    threads = set(threading.enumerate())
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try: ok = test_nb(Path(job["path"]), skip_flags=job["skip"], force_flags=job["force"], basepath=job["root"])[0]
        except BaseException:
            ok = False
            traceback.print_exc()
        with contextlib.suppress(ImportError):
            import matplotlib.pyplot as plt
            plt.close("all")
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:] = path
    builtins.__import__ = imp
    for s, h in handlers.items(): signal.signal(s, h)
    left = [t for t in threading.enumerate() if t not in threads and t.is_alive()
            and t.name != "IPythonHistorySavingThread"]   # each kernel's own, idle once it has run
    retire = bool(left or children())
    answers.write(json.dumps({"ok": bool(ok), "report": log.getvalue(), "retire": retire}) + "\n")
    answers.flush()
    if retire: break
for pid in children():       # what a notebook left running (a server) ends with its worker
    with contextlib.suppress(OSError): os.kill(int(pid), signal.SIGKILL)
os._exit(0)                  # at once: no kernel's exit handlers, no wait for threads a notebook left
'''


class Ahead:
    "The notebooks, run by `jobs` worker processes in the order of `items`, ahead of pytest asking for them"
    def __init__(self, items, jobs):
        from nbdev.config import get_config
        self.skip = get_config(path=ROOT).tst_flags.split()
        self.env = {**os.environ, 'MPLBACKEND': 'Agg', 'PYTHONHASHSEED': '0'}   # as the session's start left it
        self.stopped, self.running, self.idle, self.lock = False, set(), [], threading.Lock()
        self.pool = ThreadPoolExecutor(jobs, thread_name_prefix='notebook')
        self.results = {item.nodeid: self.pool.submit(self.run, item) for item in items}

    def run(self, item):
        "(ok, report) of the notebook, run by a free worker; ok is None when it did not finish in NB_TIMEOUT s"
        force = ['slow'] if item.config.getoption('--slow') else []
        job = json.dumps({'path': str(item.path), 'skip': self.skip, 'force': force, 'root': str(ROOT)})
        with self.lock:
            if self.stopped: return False, 'not run: the session ended first'
            worker = self.idle.pop() if self.idle else None
        if worker is None or worker.poll() is not None:
            worker = subprocess.Popen([sys.executable, '-c', WORKER], cwd=ROOT, env=self.env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with self.lock: self.running.add(worker)
        answer = []
        reader = threading.Thread(target=lambda: answer.append(worker.stdout.readline()), daemon=True)
        try:
            worker.stdin.write(job + '\n')
            worker.stdin.flush()
            reader.start()
            reader.join(NB_TIMEOUT)
        except OSError: pass
        with self.lock: self.running.discard(worker)
        if not answer or not answer[0]:   # no answer: too long (it is ended), or the process died
            finished = not reader.is_alive()
            worker.kill()
            worker.wait()
            return (False, f'its process ended (exit {worker.returncode}) while running it') if finished else None
        res = json.loads(answer[0])
        if res['retire']: worker.stdin.close()   # it left threads or processes running: a fresh one for the next
        else:
            with self.lock: self.idle.append(worker)
        return res['ok'], res['report']

    def stop(self):
        "At the session's end (after -x, or Ctrl-C): nothing more is started, what runs is ended"
        with self.lock:
            self.stopped = True
            for proc in self.running: proc.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for proc in self.idle:
            proc.stdin.close()   # an idle worker ends when its input does
            proc.wait()


class NotebookRun(pytest.Item):
    "Runs the notebook's cells as `nbdev_test` does, in a worker process (a fresh kernel, a timeout)."
    def runtest(self):
        ahead = getattr(self.session, '_clinseg_ahead', None)
        if ahead is None or self.nodeid not in ahead.results:   # the first notebook asked for: start them all
            if ahead is not None: ahead.stop()
            later = self.session.items[self.session.items.index(self):]
            ahead = self.session._clinseg_ahead = Ahead([i for i in later if isinstance(i, NotebookRun)], NB_JOBS)
        res = ahead.results[self.nodeid].result()
        if res is None: raise NotebookFailure(f'{self.path.name} did not finish in {NB_TIMEOUT} s')
        ok, report = res
        if not ok: raise NotebookFailure(report[-20000:])

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
