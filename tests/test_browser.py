"""The chapters and walkthroughs work in a real JupyterLab in a real browser.

Starts JupyterLab on 127.0.0.1 (a token, `--allow-root`, `--LabApp.expose_app_in_browser=True`, a user-settings
folder that turns the news pop-up off) on a copy of `nbs/` in a temporary folder (beside a link to `../shared`, so the
notebooks find the real data as they do in the repository), opens a notebook in headless Chromium (Debian's
`/usr/bin/chromium`, driven by Playwright on a fresh profile folder) and runs all its cells: one chapter (Dice) and one
walkthrough (DSB 2018). In each it checks that no cell wrote an error or stderr output, that no API entry shows
Quarto's link markup as text, then moves a widget's slider and checks that its shown value and its figure change.
Screenshots go to `artifacts/browser/` (git-ignored; CI keeps them as artefacts). Every process it started is
stopped, with an outer timeout on each wait. JupyterLab's settings, workspaces and runtime files stay in the test's
temporary folder (conftest.py gives the whole session a private home).

Skipped, with the reason, when Chromium or Playwright is missing; with `CLINSEG_REQUIRE_BROWSER=1` (CI) that is a
failure instead. Set `CLINSEG_CHROMIUM` to use another Chromium-based browser.
"""
import contextlib, json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "04a_dice_sets.ipynb"                       # relative to nbs/
WALKTHROUGH = "tutorials/04_dsb2018.ipynb"
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = Path(os.environ.get("CLINSEG_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START = 60     # s for JupyterLab to answer
KERNEL_IDLE = 90      # s for the kernel to start and become idle
RUN_ALL = 180         # s for all cells to run
STARTED = 30          # s for the first cell to start after Run All
WIDGET = 30           # s for the figure to change after the slider moved
NO_NEWS = {"fetchNews": "false", "checkForUpdates": False}


def _missing():
    "Why the test cannot run here, or None"
    if not CHROMIUM.exists(): return f"{CHROMIUM} is missing (install Debian's chromium: apt-get install -y chromium)"
    try: import playwright.sync_api  # noqa: F401
    except ImportError: return "playwright is not installed (pip install -e '.[dev]')"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url, token, path, method="GET", timeout=5):
    req = urllib.request.Request(f"{url}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
        return json.loads(body) if body else None


def _our_kernels(runtime):
    "Pids of kernel processes whose command line names a connection file in our own runtime folder"
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit(): continue
        try: cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        except OSError: continue
        if str(runtime) in cmd and "kernel" in cmd: pids.append(int(p.name))
    return pids


def _stop(proc, url, token, runtime):
    "Shut the kernels and the server down through the API, then make sure every process we started is gone"
    try:
        for k in _api(url, token, "/api/kernels") or []: _api(url, token, f"/api/kernels/{k['id']}", "DELETE",
                                                              timeout=10)
    except Exception: pass
    try: _api(url, token, "/api/shutdown", "POST")
    except Exception: pass
    try: proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try: proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    for pid in _our_kernels(runtime):
        try: os.kill(pid, signal.SIGKILL)
        except ProcessLookupError: pass


def _copy_nbs(work):
    "nbs/ copied to work/main/nbs (Lab autosaves: never open the real notebooks), ../shared linked beside it"
    shutil.copytree(ROOT / "nbs", work / "main" / "nbs",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    shared = ROOT.parent / "shared"
    if shared.exists(): (work / "shared").symlink_to(shared, target_is_directory=True)
    return work / "main"


@pytest.fixture
def lab(tmp_path_factory):
    ("JupyterLab serving a temporary copy of nbs/, one server per test (no tab restored from another test): (url, "
     "token, root folder)")
    reason = _missing()
    if reason and os.environ.get("CLINSEG_REQUIRE_BROWSER"): pytest.fail(f"CLINSEG_REQUIRE_BROWSER is set but {reason}")
    if reason: pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("lab")
    work, settings, runtime = tmp / "work", tmp / "settings", tmp / "runtime"
    root = _copy_nbs(work)
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps(NO_NEWS))
    port, token = _free_port(), os.urandom(16).hex()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_RUNTIME_DIR": str(runtime),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces")}
    env.pop("MPLBACKEND", None)                          # the kernel must draw inline, not into Agg
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--allow-root",
           f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}"]
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START
        while True:
            if proc.poll() is not None:
                log_tail = (tmp / 'lab.log').read_text()[-3000:]
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log_tail}")
            try:
                _api(url, token, "/api/status", timeout=2)
                break
            except Exception:
                if time.monotonic() > deadline: raise RuntimeError(f"JupyterLab did not answer in {SERVER_START} s")
                time.sleep(0.3)
        yield url, token, root
    finally:
        _stop(proc, url, token, runtime)
        log.close()


# the outputs that are errors or stderr, as a CSS selector
_ERROR_OUTPUTS = ('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
                  '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]')

# JavaScript run in the page: the notebook's state as JupyterLab's own objects see it
_STATE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.sessionContext) return {ready: false};
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const errors = w.node.querySelectorAll('ERROR_OUTPUTS').length;
  return {ready: true, status: kernel ? kernel.status : 'none', cells: cells.length,
          run: cells.filter(c => c.model.executionCount !== null).length,
          pending: w.node.querySelectorAll('.jp-InputArea-prompt').length ?
            Array.from(w.node.querySelectorAll('.jp-InputArea-prompt'))
              .filter(p => p.textContent.includes('*')).length : 0,
          errors: errors};
}""".replace("ERROR_OUTPUTS", _ERROR_OUTPUTS)


_ERROR_TEXTS = f"() => Array.from(document.querySelectorAll('{_ERROR_OUTPUTS}')).map(e => e.innerText.slice(0, 300))"


def _wait(page, what, ok, timeout):
    "Poll the notebook's state until `ok(state)`; fail with the last state after `timeout` s"
    deadline, state = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        state = page.evaluate(_STATE)
        if state.get("ready") and ok(state): return state
        time.sleep(0.25)
    raise AssertionError(f"{what}: not reached in {timeout} s (last state {state})")


@contextlib.contextmanager
def _page(prefix):
    "A Chromium page on a fresh profile; a screenshot `<prefix>_failure.png` if the block fails"
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="clinseg-chromium-"))    # a fresh profile: no state from an earlier run
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True,
                                                       args=CHROMIUM_ARGS,
                                                       viewport={"width": 1400, "height": 1000}, timeout=60_000)
            page = None
            try:
                page = ctx.pages[0] if ctx.pages else ctx.new_page()
                page.set_default_timeout(60_000)
                yield page
            except BaseException:
                if page is not None: page.screenshot(path=str(ARTIFACTS / f"{prefix}_failure.png"))
                raise
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _run_all(page, url, token, name, prefix):
    "Open nbs/<name>, run all its cells; no error or stderr output, no Quarto link markup shown as text"
    page.goto(f"{url}/lab/tree/nbs/{name}?token={token}", timeout=60_000)
    _wait(page, "kernel idle", lambda s: s["status"] == "idle", KERNEL_IDLE)
    page.screenshot(path=str(ARTIFACTS / f"{prefix}_1_opened.png"))
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    try: _wait(page, "cells started", lambda s: s["run"] or s["pending"] or s["errors"], STARTED)
    except AssertionError:    # the kernel said idle before it took requests: ask once more
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    state = _wait(page, "all cells run",
                  lambda s: s["errors"] or (s["run"] == s["cells"] and not s["pending"] and s["status"] == "idle"),
                  RUN_ALL)
    page.screenshot(path=str(ARTIFACTS / f"{prefix}_2_ran.png"), full_page=True)
    if state["errors"]:
        texts = page.evaluate(_ERROR_TEXTS)
        raise AssertionError(f"{name}: {state['errors']} error or stderr output(s) in JupyterLab, the first: "
                             f"{texts[:1]}")
    leaked = page.evaluate("() => document.querySelector('.jp-Notebook').innerText.includes('source{target=')")
    assert not leaked, f"{name}: an API entry shows Quarto's link markup (source{{target=...}}) as text"


def _drag(page, slider, dx=20):
    handle = slider.locator(".noUi-handle")
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + dx, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()


def _slider_moves_figure(page, slider, prefix):
    "Drag `slider` right: its readout and its widget's figure change; (before, after) readouts"
    explorer = slider.locator("xpath=ancestor::div[contains(@class, 'widget-vbox') or contains(@class, "
                              "'widget-box')][last()]")
    slider.scroll_into_view_if_needed()
    readout = slider.locator(".widget-readout")
    figure = explorer.locator(".jp-OutputArea-output img, .widget-output img").first
    figure.wait_for(state="visible", timeout=WIDGET * 1000)
    before_value, before_image = (readout.text_content() or "").strip(), figure.get_attribute("src")
    explorer.screenshot(path=str(ARTIFACTS / f"{prefix}_3_widget_before.png"))
    _drag(page, slider)
    deadline = time.monotonic() + WIDGET
    while time.monotonic() < deadline:
        src = figure.get_attribute("src") if figure.count() else None
        if (readout.text_content() or "").strip() != before_value and src and src != before_image: break
        time.sleep(0.25)
    explorer.screenshot(path=str(ARTIFACTS / f"{prefix}_4_widget_after.png"))
    after_value = (readout.text_content() or "").strip()
    assert after_value != before_value, f"the slider's shown value did not change ({before_value})"
    assert figure.get_attribute("src") != before_image, "the figure did not change when the slider moved"
    return before_value, after_value


@pytest.mark.slow
def test_chapter_runs_and_its_widget_answers(lab):
    url, token, root = lab
    with _page("chapter") as page:
        _run_all(page, url, token, CHAPTER, "chapter")
        slider = page.locator(".widget-slider:has(label:text-is('offset'))")
        assert slider.count() == 1, ("the Dice explorer's offset slider is missing: is the ipywidgets extension "
                                     "installed in Lab?")
        before, after = _slider_moves_figure(page, slider, "chapter")
        assert int(after) > int(before), f"dragging right lowered the offset: {before} -> {after}"


@pytest.mark.slow
def test_walkthrough_runs_and_its_widget_answers(lab):
    url, token, root = lab
    with _page("walkthrough") as page:
        _run_all(page, url, token, WALKTHROUGH, "walkthrough")
        sliders = page.locator(".jp-Notebook .widget-slider")
        assert sliders.count() >= 1, f"{WALKTHROUGH} shows no widget slider after Run All"
        _slider_moves_figure(page, sliders.first, "walkthrough")
    workspaces = Path(os.environ["JUPYTERLAB_WORKSPACES_DIR"])
    assert Path(tempfile.gettempdir()) in workspaces.resolve().parents, (f"Lab's workspaces would go to {workspaces}, "
                                                                         "outside the temp folder")
