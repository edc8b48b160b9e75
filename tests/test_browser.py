"""The widgets work in a real JupyterLab in a real browser.

Starts JupyterLab on 127.0.0.1 (a token, `--allow-root`, `--LabApp.expose_app_in_browser=True`, a user-settings
folder that turns the news pop-up off) on a copy of the Dice chapter in a temporary folder, opens it in headless
Chromium (Debian's `/usr/bin/chromium`, driven by Playwright on a fresh profile folder), runs all cells, moves the
Dice explorer's `offset` slider and checks that the shown value and the figure change. Screenshots go to
`artifacts/browser/` (git-ignored; CI keeps them as artefacts). Every process it started is stopped, with an
outer timeout on each wait.

Skipped, with the reason, when Chromium or Playwright is missing; with `CLINSEG_REQUIRE_BROWSER=1` (CI) that is a
failure instead. Set `CLINSEG_CHROMIUM` to use another Chromium-based browser.
"""
import json, os, shutil, signal, socket, subprocess, sys, time, urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "nbs" / "04_dice.ipynb"
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = Path(os.environ.get("CLINSEG_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START = 60     # s for JupyterLab to answer
KERNEL_IDLE = 90      # s for the kernel to start and become idle
RUN_ALL = 180         # s for all cells to run
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
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


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
        for k in _api(url, token, "/api/kernels") or []: _api(url, token, f"/api/kernels/{k['id']}", "DELETE", timeout=10)
    except Exception: pass
    try: _api(url, token, "/api/shutdown", "POST")
    except Exception: pass
    try: proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try: proc.wait(10)
        except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL); proc.wait(10)
    for pid in _our_kernels(runtime):
        try: os.kill(pid, signal.SIGKILL)
        except ProcessLookupError: pass


@pytest.fixture
def lab(tmp_path):
    "JupyterLab serving a temporary folder that holds a copy of the Dice chapter: (url, token, notebook name)"
    reason = _missing()
    if reason and os.environ.get("CLINSEG_REQUIRE_BROWSER"): pytest.fail(f"CLINSEG_REQUIRE_BROWSER is set but {reason}")
    if reason: pytest.skip(reason)
    work, settings, runtime = tmp_path / "work", tmp_path / "settings", tmp_path / "runtime"
    work.mkdir()
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))  # a copy: Lab autosaves, never open the real chapter
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}  # clean notebooks have none: Lab would ask
    (work / CHAPTER.name).write_text(json.dumps(nb), encoding="utf-8")
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps(NO_NEWS))
    port, token = _free_port(), os.urandom(16).hex()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_RUNTIME_DIR": str(runtime)}
    env.pop("MPLBACKEND", None)                          # the kernel must draw inline, not into Agg
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--allow-root",
           f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={work}"]
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START
        while True:
            if proc.poll() is not None: raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try: _api(url, token, "/api/status", timeout=2); break
            except Exception:
                if time.monotonic() > deadline: raise RuntimeError(f"JupyterLab did not answer in {SERVER_START} s")
                time.sleep(0.3)
        yield url, token, CHAPTER.name
    finally:
        _stop(proc, url, token, runtime)
        log.close()


# JavaScript run in the page: the notebook's state as JupyterLab's own objects see it
_STATE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.sessionContext) return {ready: false};
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const errors = w.node.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]').length;
  return {ready: true, status: kernel ? kernel.status : 'none', cells: cells.length,
          run: cells.filter(c => c.model.executionCount !== null).length,
          pending: w.node.querySelectorAll('.jp-InputArea-prompt').length ? Array.from(w.node.querySelectorAll('.jp-InputArea-prompt')).filter(p => p.textContent.includes('*')).length : 0,
          errors: errors};
}"""


def _wait(page, what, ok, timeout):
    "Poll the notebook's state until `ok(state)`; fail with the last state after `timeout` s"
    deadline, state = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        state = page.evaluate(_STATE)
        if state.get("ready") and ok(state): return state
        time.sleep(0.25)
    raise AssertionError(f"{what}: not reached in {timeout} s (last state {state})")


def test_widget_slider_changes_value_and_figure(lab):
    from playwright.sync_api import sync_playwright
    url, token, name = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"clinseg-chromium-{os.getpid()}-{time.monotonic_ns()}"
    profile.mkdir()                                       # a fresh profile: no state from an earlier run
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                                                       viewport={"width": 1400, "height": 1000}, timeout=60_000)
            page = None
            try:
                page = ctx.pages[0] if ctx.pages else ctx.new_page()
                page.set_default_timeout(60_000)
                page.goto(f"{url}/lab/tree/{name}?token={token}", timeout=60_000)
                _wait(page, "kernel idle", lambda s: s["status"] == "idle", KERNEL_IDLE)
                page.screenshot(path=str(ARTIFACTS / "1_opened.png"))
                page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
                state = _wait(page, "all cells run", lambda s: s["errors"] or (s["run"] == s["cells"] and not s["pending"] and s["status"] == "idle"), RUN_ALL)
                page.screenshot(path=str(ARTIFACTS / "2_ran.png"))
                assert not state["errors"], f"a cell failed in JupyterLab (see {ARTIFACTS / '2_ran.png'})"

                slider = page.locator(".widget-slider:has(label:text-is('offset'))")
                assert slider.count() == 1, "the Dice explorer's offset slider is missing: is the ipywidgets extension installed in Lab?"
                explorer = slider.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][last()]")
                slider.scroll_into_view_if_needed()
                readout = slider.locator(".widget-readout")
                figure = explorer.locator(".jp-OutputArea-output img, .widget-output img").first
                figure.wait_for(state="visible", timeout=WIDGET * 1000)
                before_value, before_image = readout.inner_text().strip(), figure.get_attribute("src")
                explorer.screenshot(path=str(ARTIFACTS / "3_widget_before.png"))

                handle = slider.locator(".noUi-handle")
                box = handle.bounding_box()
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                page.mouse.down()
                page.mouse.move(box["x"] + box["width"] / 2 + 20, box["y"] + box["height"] / 2, steps=5)
                page.mouse.up()

                deadline = time.monotonic() + WIDGET
                while time.monotonic() < deadline:
                    src = figure.get_attribute("src") if figure.count() else None
                    if readout.inner_text().strip() != before_value and src and src != before_image: break
                    time.sleep(0.25)
                explorer.screenshot(path=str(ARTIFACTS / "4_widget_after.png"))
                after_value = readout.inner_text().strip()
                assert after_value != before_value, f"the slider's shown value did not change ({before_value})"
                assert int(after_value) > int(before_value), f"dragging right lowered the offset: {before_value} -> {after_value}"
                assert figure.get_attribute("src") != before_image, "the figure did not change when the slider moved"
            except BaseException:
                if page is not None: page.screenshot(path=str(ARTIFACTS / "failure.png"))
                raise
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
