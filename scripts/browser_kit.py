"""Start the real app on a free port and open it in Debian's headless Chromium: what the scripts
that drive the page (browser_bench, screenshots, viewer_bench) and the browser tests share.

Scripts import it as `scripts.browser_kit` (the repository root on sys.path); tests/browser/harness.py
re-exports it beside the helpers only tests use. No test module is imported from here.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerURL(str):
    """The app's address, and its process id (`pid`: for a benchmark that reads the server's CPU and memory)."""
    pid: int = 0


@contextmanager
def app_server(*args: str, log: Path | None = None, timeout: float = 300, env: dict | None = None):
    """`python app.py` in a subprocess; yields its URL once it answers HTTP. `env`: extra variables
    (e.g. LLM_VIZ_LOAD_GATE, to hold the model's loading until the test lets it go)."""
    port = free_port()
    rooms = tempfile.mkdtemp(prefix="llm-viz-rooms-")  # (each server its own class rooms' file: none kept from another run)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1",
           "LLM_VIZ_ROOMS_DB": str(Path(rooms) / "rooms.sqlite3"), **(env or {})}
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port), *args], cwd=ROOT, env=env,
                            stdout=out, stderr=subprocess.STDOUT)
    url = ServerURL(f"http://127.0.0.1:{port}")
    url.pid = proc.pid
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"app.py exited with code {proc.returncode}" + (f"; see {log}" if log else ""))
            try:
                urllib.request.urlopen(url, timeout=2).read(1)
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"app.py did not answer on {url} within {timeout} s") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()
        shutil.rmtree(rooms, ignore_errors=True)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def wait_model_loaded(page, timeout_ms: int = 300_000):
    """The model line reads 'Model: ...' once loading has finished (or says it failed)."""
    page.wait_for_function(
        "() => { const t = document.querySelector('#model-info')?.innerText || '';"
        " return t.startsWith('Model:') || t.includes('failed'); }", timeout=timeout_ms)
    text = page.inner_text("#model-info")
    if "failed" in text:
        raise RuntimeError(text)


# every error toast the page shows, recorded as it appears (toasts vanish): read by error_toasts()
RECORD_ERROR_TOASTS = """
window.__errorToasts = [];
new MutationObserver(() => {
  document.querySelectorAll('.toast-body.error').forEach(t => {
    if (!t.__seen) { t.__seen = true; window.__errorToasts.push(t.innerText); }
  });
}).observe(document, {subtree: true, childList: true});
"""


def thrown(error) -> str:
    """A script error as a failing test prints it: its message and the line that threw (its stack's first frame)."""
    frames = [ln.strip() for ln in (getattr(error, "stack", "") or "").splitlines() if ln.strip().startswith("at ")]
    return f"{error} ({frames[0]})" if frames else str(error)


def new_page(browser, *, width: int = 1400, height: int = 1000, record_toasts: bool = True, locale: str | None = None,
             phone: bool = False):
    """A page that records its script errors, dialogs and console errors in `page.errors`, and its
    error toasts (see error_toasts; record_toasts=False for timings: the record watches every node
    the page adds or removes, a few ms of each step move). `locale`: the browser's language (its
    navigator.languages and Accept-Language); `phone`: a touch screen."""
    extra = {"locale": locale} if locale else {}
    if phone:
        extra |= {"is_mobile": True, "has_touch": True, "device_scale_factor": 2}
    page = browser.new_page(viewport={"width": width, "height": height}, **extra)
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(thrown(e)))
    page.on("dialog", lambda d: (page.errors.append(f"dialog: {d.message}"), d.dismiss()))
    if record_toasts:
        page.add_init_script(RECORD_ERROR_TOASTS)
    return page


def open_page(browser, url: str, *, width: int = 1400, height: int = 1000, record_toasts: bool = True):
    page = new_page(browser, width=width, height=height, record_toasts=record_toasts)
    page.goto(url)
    page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=60_000)
    return page


# A step panel is drawn only once it comes near the screen (assets/app_viewer.js), as a person scrolls to it: a test
# or script that reads one scrolls to it first, and waits until every panel drawn shows the step (the server's plots, drawn
# while a run streams, show at once).
# The page learns that a panel came near from an IntersectionObserver, whose callback may come several frames after the
# scroll on a busy machine: wait for the page to count the panel as due, then for it to draw what is due.
# (a frame, or a second when the page's frames stall: a loop of frames must not wait forever on a page that paints nothing)
NEARED = """const frame = () => new Promise((ok) => { requestAnimationFrame(() => requestAnimationFrame(ok)); setTimeout(ok, 1000); });
  const mounted = () => window.LLMApp && LLMApp.mounted();
  const noticed = async (ids) => { for (const end = performance.now() + 10000; performance.now() < end; await frame())
    if (!mounted() || ids.every((id) => LLMApp.due(id))) return; };
  const drawn = () => (mounted() ? Promise.race([LLMApp.settled(), new Promise((ok) => setTimeout(ok, 30000))]) : null);
  const onScreen = () => (window.LLMAppPanels || []).filter((id) => { const r = document.getElementById(id)?.getBoundingClientRect();
    return r && r.bottom > 0 && r.top < innerHeight; });"""

INTO_VIEW = """async (id) => { const el = document.getElementById(id); if (!el) return;
  """ + NEARED + """
  el.scrollIntoView({block: 'nearest'}); await frame(); await noticed([id]); await drawn(); }"""


def into_view(page, elem_id: str) -> None:
    """Scroll the block `elem_id` into view as a person would, and wait for the page to draw what it shows there."""
    page.evaluate(INTO_VIEW, elem_id)


def scroll_through(page) -> None:
    """Scroll down the whole page a screen at a time, as a reader does, then back to its top: every step panel drawn.
    (Two minutes at most: a page whose panels never settle is left for the test's own checks to find, not waited on
    until the test's timeout.)"""
    page.evaluate("""async () => { """ + NEARED + """
      const end = () => scrollY + innerHeight >= document.documentElement.scrollHeight - 1, until = performance.now() + 120000;
      for (let y = 0; y < document.documentElement.scrollHeight && performance.now() < until; y += innerHeight) {
        scrollTo(0, y); await frame(); await noticed(onScreen()); await drawn();
        if (end()) break; }  // (the bottom read: a page that grows below it as panels draw is not followed for ever)
      scrollTo(0, 0); await frame(); }""")


def slider_max(page, elem_id: str = "step-slider") -> int:
    return int(page.get_attribute(f"#{elem_id} input[type=range]", "max"))


def drag_slider(page, elem_id: str, fractions, steps: int = 2) -> None:
    """Drag a slider's handle with the mouse through some positions (fractions of its width), fast, as a person would."""
    handle = page.locator(f"#{elem_id} input[type=range]")
    handle.scroll_into_view_if_needed()  # (the page may be scrolled to a panel below it)
    box = handle.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * fractions[0], y)
    page.mouse.down()
    for f in fractions[1:]:
        page.mouse.move(box["x"] + box["width"] * f, y, steps=steps)
    page.mouse.up()


def set_number(page, elem_id: str, value) -> None:
    """Type into a slider's or number box's number field and commit it, as a person would."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    box.blur()
