"""Scripts that run before Gradio's own (ui/early_head.py): the page's HTML gets them at the top of its <head>; every
other answer passes as it came. And the Gradio this project pins still does what assets/status_frames.js answers."""
import gzip
import re
from pathlib import Path

import gradio
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.testclient import TestClient

from ui import early_head

PAGE = "<!doctype html><html><head><script type='module' src='./assets/index.js'></script></head><body>é</body></html>"
EARLY = b"<script>window.early = 1;</script>"


def gradio_like() -> FastAPI:
    app = FastAPI()

    @app.get("/")
    async def page():
        return HTMLResponse(PAGE)

    @app.get("/other")
    async def other():
        return HTMLResponse(PAGE)

    @app.get("/json")
    async def json():
        return {"head": "<head>"}

    return app


def test_the_page_gets_the_scripts_first_in_its_head_and_nothing_else_changes():
    app = gradio_like()
    client = TestClient(app)
    early_head.serve_first(app, EARLY)
    early_head.serve_first(app, EARLY)  # (twice: one front)
    r = client.get("/", params={"__theme": "dark"})
    assert r.text == PAGE.replace("<head>", "<head>" + EARLY.decode())
    assert int(r.headers["content-length"]) == len(r.content) and r.text.index("window.early") < r.text.index("index.js")
    assert client.get("/other").text == PAGE
    assert client.get("/json").json() == {"head": "<head>"}
    assert client.post("/").status_code == 405  # (only a GET is the page)


def test_under_a_root_path_and_a_page_with_no_head():
    assert early_head.is_page({"type": "http", "method": "GET", "path": "/space/", "root_path": "/space"})
    assert early_head.is_page({"type": "http", "method": "GET", "path": "/space", "root_path": "/space"})
    assert not early_head.is_page({"type": "http", "method": "GET", "path": "/space/gradio_api/info", "root_path": "/space"})
    assert not early_head.is_page({"type": "websocket", "method": "GET", "path": "/"})
    assert early_head.with_early(b"<html><body>no head</body></html>", EARLY) == b"<html><body>no head</body></html>"


def test_a_compressed_page_passes_untouched():
    app = FastAPI()

    @app.get("/")
    async def zipped_page():
        return Response(gzip.compress(PAGE.encode()), media_type="text/html", headers={"content-encoding": "gzip"})

    early_head.serve_first(app, EARLY)
    r = TestClient(app).get("/")
    assert r.headers["content-encoding"] == "gzip" and r.text == PAGE  # (as it came: nothing inserted)


def test_the_real_scripts_are_inlined():
    html = early_head.early_html()
    assert html.startswith(b"<script>") and b"LLMStatusFrames" in html and b"</script" not in html[8:-9]


def test_gradios_status_tracker_keeps_its_own_frame_function_and_its_file_name():
    """assets/status_frames.js tells the trackers' requests for a frame by their file's name (statustracker-*.js), and
    must run before that file does, which takes window.requestAnimationFrame as it loads. A Gradio that changes either
    fails here: look again at the trackers' loop (a frame every 1/60 s while pending) and at the script."""
    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    trackers = sorted(assets.glob("statustracker-*.js"))
    assert trackers, "Gradio's status tracker is no longer in a file of its own"
    code = trackers[0].read_text(encoding="utf-8")
    assert re.search(r"=typeof window<`u`\?window\.requestAnimationFrame:", code), "the tracker no longer keeps its own rAF"
    assert "performance.now()" in code and "status===`pending`" in code
