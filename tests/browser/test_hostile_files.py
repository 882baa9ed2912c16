"""Hostile trace files loaded through the page, while another visitor generates (issue: hard to break).

On a public Space one visitor's file must not take the page from everyone else: a gzip bomb and a
few damaged files each get a clear message, the other session's Generate keeps streaming, and the
server's memory stays within +200 MB of what it was.
"""
from __future__ import annotations

import gzip
import json
import threading
import time
from pathlib import Path
from urllib.parse import urlparse


from .harness import ROOT, error_toasts, n_generated_chips, new_page, open_page
from .test_app import _generate, wait_stopped

MB = 1 << 20


def server_pid(url: str) -> int:
    """The app serving `url` (started by tests/browser/harness.py with --port PORT)."""
    port = str(urlparse(url).port)
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"app.py") for a in args) and port.encode() in args:
            return int(proc.name)
    raise AssertionError(f"no app.py process serves {url}")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class PeakMemory:
    """The highest resident memory of a process, sampled every 50 ms while in the `with` block."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.05)

    def __enter__(self):
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def hostile_files(tmp: Path) -> dict[str, Path]:
    """A 3 MB gzip asking for 3 GB, and damaged copies of a real saved trace."""
    member = gzip.compress(b"\0" * (100 * MB), compresslevel=9, mtime=0)
    real = json.loads(gzip.decompress((ROOT / "assets/gallery/flat.json.gz").read_bytes()))
    lying = json.loads(json.dumps(real))
    lying["steps"][3]["token_id"] = 10**6  # outside the model's vocabulary
    deep = '{"schema": "llm-pipeline-trace/2", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}"
    files = {
        "bomb.json.gz": member * 30,
        "cut.json.gz": (ROOT / "assets/gallery/flat.json.gz").read_bytes()[:50_000],
        "lying.json": json.dumps(lying).encode(),
        "deep.json": deep.encode(),
    }
    out = {}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
        out[name] = tmp / name
    return out


RECORD_TOASTS = """
window.__toasts = [];
new MutationObserver(() => {
  document.querySelectorAll('.toast-body').forEach(t => {  // (a toast's element may be reused for the next one)
    if (t.__seen !== t.innerText) { t.__seen = t.innerText; window.__toasts.push(t.innerText); }
  });
}).observe(document, {subtree: true, childList: true});
"""


def load_file(page, path: Path) -> str:
    """Load `path` through the page's Load trace button; the warning the page gives."""
    n = page.evaluate("() => window.__toasts.length")
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(path))
    page.wait_for_function("(n) => window.__toasts.slice(n).some(t => t.includes('Could not read that trace'))", arg=n, timeout=60_000)
    return next(t for t in page.evaluate("(n) => window.__toasts.slice(n)", n) if "Could not read that trace" in t)


def test_hostile_files_get_a_message_while_another_session_streams(browser, app_url, tmp_path):
    files = hostile_files(tmp_path)
    assert files["bomb.json.gz"].stat().st_size < 4 * MB
    pid = server_pid(app_url)
    student = open_page(browser, app_url)
    visitor = new_page(browser)
    visitor.add_init_script(RECORD_TOASTS)
    visitor.goto(app_url)
    visitor.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=60_000)
    shown = visitor.inner_text("#output .gen-text")
    _generate(student, "Write a long story about a lighthouse keeper.", max_new=60, temperature=0, wait_done=False)
    student.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length >= 1", timeout=120_000)
    base = rss_mb(pid)
    said = {}
    with PeakMemory(pid) as mem:
        for name, path in files.items():
            said[name] = load_file(visitor, path)
            chips = n_generated_chips(student)
    assert "inflates to more than" in said["bomb.json.gz"], said
    assert "cut short" in said["cut.json.gz"] and "contradicts itself" in said["lying.json"], said
    assert "nested too deeply" in said["deep.json"], said
    assert mem.peak - base < 200, (base, mem.peak)
    assert visitor.inner_text("#output .gen-text") == shown  # what the visitor had on screen stays
    # the other session kept streaming through all of it, and ends its run
    assert chips >= 1
    wait_stopped(student)
    assert n_generated_chips(student) > chips or chips == 60
    assert not student.errors and not visitor.errors and not error_toasts(student)
