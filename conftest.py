"""`pytest` runs every notebook under `nbs/` with nbdev's own notebook runner, one test item each.

- Each notebook runs in a fresh Python process through `nbdev.test.test_nb`, with the skip flags
  `nbdev_test` uses (`tst_flags` in settings.ini); `pytest --slow` also runs the `#| slow` cells.
- Each notebook must also be clean, exactly as `nbdev_clean` would write it.
"""
import json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
NB_TIMEOUT = int(os.environ.get('CLINSEG_NB_TIMEOUT', '900'))  # seconds for one notebook, a safety net


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
        if cleaned != text: raise NotebookFailure(f'{self.path.relative_to(ROOT)} is not clean: run `nbdev_clean` and commit it')

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, NotebookFailure): return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self): return self.path, 0, f'clean {self.path.relative_to(ROOT)}'
