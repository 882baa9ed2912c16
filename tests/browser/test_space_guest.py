"""A good guest of a Hugging Face Space, in Chromium: "Copy link" inside a Space's frame points at the
Space's page on huggingface.co and puts the query in that page's address bar; a page that closes
takes its session's download folder with it.

The Space is staged on this machine: the app runs with SPACE_ID set, Chromium resolves
teacher-llm-viz.hf.space to it, and https://huggingface.co/spaces/teacher/llm-viz is a stand-in
page (served by the test) that frames the app and, like the real one, sets its own query when the
frame posts {queryString} to it (https://huggingface.co/docs/hub/spaces-handle-url-parameters).
"""
import time
from urllib.parse import parse_qsl, urlsplit

import pytest

from pipeline import gallery

from .harness import CHROMIUM_FLAGS, RECORD_ERROR_TOASTS, app_server, chromium_path, error_toasts, new_page

SPACE_ID = "teacher/llm-viz"
SPACE_PAGE = "https://huggingface.co/spaces/" + SPACE_ID
FRAME_HOST = "teacher-llm-viz.hf.space"
LINK_BOX = "#link-box input, #link-box textarea"
STAND_IN = """<!doctype html><html><body><script>
window.__messages = [];
window.addEventListener('message', (e) => {
  window.__messages.push({origin: e.origin, data: e.data});
  if (e.data && typeof e.data.queryString === 'string') history.replaceState(null, '', '?' + e.data.queryString);
});
</script><iframe id="space" src="SRC" style="width: 1400px; height: 1000px; border: 0"></iframe></body></html>"""


@pytest.fixture(scope="module")
def space_app(tmp_path_factory):
    """(URL, download folder) of the app as a Space runs it (SPACE_ID set), its model held back: what
    these tests do needs none, and the machine's CPU is spared."""
    tmp = tmp_path_factory.mktemp("space")
    downloads = tmp / "downloads"
    downloads.mkdir()
    env = {"SPACE_ID": SPACE_ID, "LLM_VIZ_LOAD_GATE": str(tmp / "never"), "LLM_VIZ_DOWNLOAD_DIR": str(downloads)}
    with app_server(log=tmp / "app.log", env=env) as url:
        yield url, downloads


@pytest.fixture(scope="module")
def space_port(space_app):
    return urlsplit(space_app[0]).port


@pytest.fixture(scope="module")
def space_browser(browser, space_port):
    """A second Chromium (from the same Playwright) that finds FRAME_HOST on this machine, and lets the
    https stand-in frame it over http (as if it were https: no mixed content, no local-network block)."""
    frame = f"http://{FRAME_HOST}:{space_port}"
    args = [*CHROMIUM_FLAGS, f"--host-resolver-rules=MAP {FRAME_HOST} 127.0.0.1", f"--unsafely-treat-insecure-origin-as-secure={frame}",
            "--disable-features=LocalNetworkAccessChecks"]
    b = browser.browser_type.launch(executable_path=chromium_path(), args=args)
    yield b
    b.close()


def _space_frame(space_browser, space_port, query: str):
    """The stand-in Space page with the app in its frame at `query` (as a Space passes its query on)."""
    page = space_browser.new_page(viewport={"width": 1500, "height": 1100})
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.add_init_script(RECORD_ERROR_TOASTS)
    src = f"http://{FRAME_HOST}:{space_port}/?{query}"
    page.route(SPACE_PAGE + "*", lambda r: r.fulfill(status=200, content_type="text/html", body=STAND_IN.replace("SRC", src)))
    page.goto(SPACE_PAGE + "?" + query)
    deadline = time.time() + 60
    while not [f for f in page.frames if urlsplit(f.url).hostname == FRAME_HOST]:
        assert time.time() < deadline, "the Space's frame did not open"
        time.sleep(0.1)
    return page, next(f for f in page.frames if urlsplit(f.url).hostname == FRAME_HOST)


def test_copy_link_inside_a_space_points_at_the_spaces_page(space_browser, space_port):
    e = gallery.entry("loop")
    page, frame = _space_frame(space_browser, space_port, "example=loop&__theme=dark&__sign=abc")
    frame.wait_for_function("(t) => document.querySelector('#example-traces input')?.value === t", arg=e.title, timeout=120_000)
    frame.click("#copy-link")  # as soon as the example is on screen, as a person would
    frame.wait_for_function("(s) => (document.querySelector('#link-box input, #link-box textarea')?.value || '').startsWith(s)",
                            arg=SPACE_PAGE + "?", timeout=30_000)
    link = frame.input_value(LINK_BOX)
    query = dict(parse_qsl(urlsplit(link).query))
    assert query["example"] == "loop" and query["step"] == str(e.step) and not any(k.startswith("__") for k in query)
    # the Space's page was asked, by the message Spaces document, to show the same query
    page.wait_for_function("() => window.__messages.some(m => m.data && m.data.queryString !== undefined)", timeout=10_000)
    sent = [m for m in page.evaluate("window.__messages") if isinstance(m["data"], dict) and "queryString" in m["data"]]
    assert len(sent) == 1 and urlsplit(sent[0]["origin"]).hostname == FRAME_HOST
    assert page.url == link  # the address bar of the Space's page is the link copied
    assert not error_toasts(frame) and not page.errors
    toasts = " ".join(frame.locator(".toast-body").all_inner_texts())
    assert "not all used" not in toasts  # __theme and __sign, the Space's own, are not the person's settings


def test_closing_a_page_removes_its_download_folder(browser, space_app):
    """Each session's trace files (up to ~50 MB each) go when its page closes, not when the app exits;
    another page's stay."""
    app_url, download_dir = space_app

    def folders() -> set:
        return {p.parent for p in download_dir.rglob("trace-*") if p.is_file()}

    pages, made = [], []
    for _ in range(2):
        before = folders()
        page = new_page(browser)
        page.goto(app_url + "/?example=confident")
        page.wait_for_selector("#download-trace:not([disabled])", timeout=120_000)
        with page.expect_download():
            page.click("#download-trace")
        new = folders() - before
        assert len(new) == 1, new
        pages.append(page)
        made.extend(new)
    pages[0].close()
    deadline = time.time() + 20
    while made[0].exists() and time.time() < deadline:
        time.sleep(0.2)
    assert not made[0].exists(), "the closed page's download folder is still there 20 s later"
    assert made[1].exists() and list(made[1].glob("trace-*"))  # the open page's file stays
    assert not pages[1].errors and not error_toasts(pages[1])
