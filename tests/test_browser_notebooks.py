"""The notebooks as a person sees them: JupyterLab in headless Chromium, Run All, images.

Starts JupyterLab (127.0.0.1, a free port, no token) on a temporary folder holding copies of
the notebooks (each with a cell pointing it at tiny synthetic data, as in
:mod:`tests.test_notebooks`), opens each in Chromium driven by Playwright, runs all cells and
checks that the output areas hold loaded ``<img>`` elements (inside the explorer's widget
too), no error output and no ``<Figure ...>`` text. Screenshots are saved under
``test-artifacts/browser/`` (or ``$HIPPO_TEST_ARTIFACTS``).

Needs Debian's ``chromium`` package and Playwright from PyPI (no ``playwright install``: the
system browser is used). Without them the test is skipped, except in CI (``CI`` set), where it
fails.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.test_notebooks import NAMES, read, tiny  # noqa: F401  (tiny: a fixture)

pytestmark = pytest.mark.slow  # end to end (see pyproject's markers)

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
#: Chromium executables tried, in order (Debian's package; its wrapper script last).
CHROMIUM = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "/usr/bin/chromium")
#: Seconds JupyterLab may take to start; one notebook may take to run all cells.
SERVER_TIMEOUT = 60
RUN_TIMEOUT = 90
#: The notebook shown (a restored workspace may hold hidden ones).
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
#: Browser viewport, CSS pixels.
VIEWPORT = {"width": 1400, "height": 1000}
#: Images each notebook must show at least (01: the explorer's panel and the returned figure;
#: 02: class fractions, scores, place fields, remapping; 03: the seven figures it writes).
MIN_IMAGES = {"01_explore_rate_maps": 2, "02_grid_and_place_statistics": 4,
              "03_publication_figures": 7, "04_your_own_data": 2}


def _chromium() -> str | None:
    for name in CHROMIUM:
        path = shutil.which(name) or (name if Path(name).is_file() else None)
        if path:
            return path
    return None


def _need_browser():
    """(sync_playwright, chromium path), or skip (outside CI) / fail (in CI)."""
    why = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright, why = None, "playwright is not installed (pip install playwright)"
    chromium = _chromium()
    if chromium is None:
        why = why or "no chromium executable (apt-get install chromium)"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {why}")
        pytest.skip(why)
    return sync_playwright, chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _params(name: str, data: Path, work: Path) -> dict:
    return {
        "01_explore_rate_maps": {"analysis_path": str(data / "analysis.nc")},
        "02_grid_and_place_statistics": {"recording_path": str(data / "recording.nc"),
                                         "n_shuffles": 2},
        "03_publication_figures": {
            "analysis_path": str(data / "analysis.nc"),
            "recording_path": str(data / "recording.nc"),
            "eval_paths": [str(data / "eval.json"), str(data / "eval_baseline.json")],
            "passkey_path": str(data / "passkey"), "out_dir": str(work / "figures"),
            "delay_path": str(work / "delay.nc"), "formats": ["png"]},
        "04_your_own_data": {"minutes": 2, "n_shuffles": 4, "work_dir": str(work / "own")},
    }[name]


@pytest.fixture(scope="module")
def lab(tiny, tmp_path_factory):  # noqa: F811
    """A JupyterLab server on copies of the notebooks: (base URL, notebook folder)."""
    import xarray as xr

    from hippo_rep.tasks.delay import write_delay

    data, _ = tiny
    work = tmp_path_factory.mktemp("lab")
    delay = xr.Dataset({"accuracy": (("variant", "delay"), [[1.0, 0.9], [0.6, 0.05]]),
                        "chance": 1 / 45, "node_agent": 1.0},
                       coords={"variant": ["full", "window"], "delay": [0, 64]},
                       attrs={"memory_block": 16, "memory_blocks": 4, "fam_slots": 8,
                              "window_steps": "64-80"})
    write_delay(delay, work / "delay.nc")
    for name in NAMES:
        nb = read(name)
        src = "# injected by tests/test_browser_notebooks.py\n" + "\n".join(
            f"{k} = {v!r}" for k, v in _params(name, data, work).items())
        nb.cells.insert(1, nbformat.v4.new_code_cell(
            src, metadata={"tags": ["injected-parameters"]}))
        nbformat.write(nb, work / f"{name}.ipynb")
    # every cell rendered (no windowing), so every output is in the page
    settings = work / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = work / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)  # no "get notified about Jupyter news?" toast over the outputs
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        JUPYTERLAB_SETTINGS_DIR=str(work / "lab-settings"),
        JUPYTER_RUNTIME_DIR=str(work / "runtime"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    log = open(work / "jupyterlab.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root",
         "--ServerApp.port_retries=0", f"--ServerApp.root_dir={work}",
         f"--LabApp.workspaces_dir={work / 'workspaces'}", "--LabApp.expose_app_in_browser=True",
         "--ServerApp.disable_check_xsrf=True"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError("JupyterLab did not start: "
                                       + (work / "jupyterlab.log").read_text()[-2000:]) from None
                time.sleep(0.5)
        yield url, work
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(lab):
    sync_playwright, chromium = _need_browser()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def _artifacts() -> Path:
    out = Path(os.environ.get("HIPPO_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _run_all(page, name: str) -> None:
    """Run every cell and wait until none is queued or running."""
    page.wait_for_selector(f"{NOTEBOOK} .jp-Cell", state="attached",
                           timeout=SERVER_TIMEOUT * 1000)
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        f" return w && w.context && w.context.path === '{name}.ipynb'"
        " && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel"
        " && w.sessionContext.session.kernel.status === 'idle'; }",
        timeout=SERVER_TIMEOUT * 1000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    # every code cell numbered, none queued or running ("[*]")
    prompts = ("() => [...window.jupyterapp.shell.currentWidget.node"
               ".querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent.trim())")
    try:
        page.wait_for_function(
            f"() => {{ const p = ({prompts})();"
            " return p.length > 0 && p.every(t => /^\\[\\d+\\]:$/.test(t)); }",
            timeout=RUN_TIMEOUT * 1000)
    except Exception as err:
        page.screenshot(path=str(_artifacts() / f"{name}-timeout.png"))
        raise AssertionError(f"{name}: cells did not all run in {RUN_TIMEOUT} s; prompts "
                             f"{page.evaluate(prompts)}") from err
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_shows_images_in_jupyterlab(name, lab, browser):
    url, _ = lab
    out = _artifacts()
    page = browser.new_page(viewport=VIEWPORT)
    try:
        # ?reset: a fresh workspace, this notebook only
        page.goto(f"{url}/lab/tree/{name}.ipynb?reset", wait_until="domcontentloaded")
        _run_all(page, name)
        errors = page.locator(".jp-OutputArea-output[data-mime-type="
                              "'application/vnd.jupyter.stderr'], "
                              "[data-mime-type='application/vnd.jupyter.error']")
        error_text = errors.all_inner_texts()
        # stderr warnings are allowed; tracebacks are not
        assert not [t for t in error_text if "Traceback" in t or "Error" in t], error_text
        outputs = page.locator(f"{NOTEBOOK} .jp-OutputArea")
        assert "<Figure size" not in "\n".join(outputs.all_inner_texts())
        images = page.locator(f"{NOTEBOOK} .jp-OutputArea-output img")
        n = images.count()
        assert n >= MIN_IMAGES[name], f"{name}: {n} images"
        for i in range(n):
            img = images.nth(i)
            img.scroll_into_view_if_needed()  # loaded and laid out, not just present
            loaded = img.evaluate("e => e.complete && e.naturalWidth > 0 && e.clientWidth > 0")
            assert loaded, f"{name}: image {i} not rendered"
        if name == "01_explore_rate_maps":  # the explorer's panel (an ipywidgets Output)
            panel = page.locator(f"{NOTEBOOK} .widget-output img")
            assert panel.count() >= 1
            box = page.locator(f"{NOTEBOOK} .widget-vbox").first
            box.screenshot(path=str(out / f"{name}-explorer.png"))  # controls and panel
            # a click reaches the kernel and comes back as a new image in the panel
            before = panel.first.get_attribute("src")
            box.get_by_role("button", name="compare environments").click()
            page.wait_for_function(
                "([sel, old]) => { const i = document.querySelector(sel);"
                " return i && i.getAttribute('src') !== old && i.complete"
                " && i.naturalWidth > 0; }",
                arg=[f"{NOTEBOOK} .widget-output img", before], timeout=30_000)
            box.screenshot(path=str(out / f"{name}-explorer-compare.png"))
        page.screenshot(path=str(out / f"{name}.png"))
        for i in range(n):
            images.nth(i).screenshot(path=str(out / f"{name}-image{i + 1}.png"))
    finally:
        page.close()
