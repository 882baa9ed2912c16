"""The live visualizer: a Gradio page over a real model, traced through forward hooks.

The entry point: arguments, the model started, the page built and launched. The page itself is in
ui/: layout.py (every component), wiring.py (the events), generation.py, inside.py and listeners.py
(what runs when something happens), model.py (the model). Each person's trace lives in gr.State; what the
process holds beyond it (the model, the class rooms, caches) is listed in docs/state.md. Data flows pipeline -> records -> viz -> ui.

    python app.py [--model HUB_ID_OR_DIR] [--port 7860] [--host 127.0.0.1] [--share]

Environment: LLM_VIZ_DOWNLOAD_DIR=DIR holds the folder of trace files made for download (default:
the system's temporary folder); that folder is removed at exit. LLM_VIZ_ROOMS_DB=PATH: the SQLite file that keeps
the class rooms across a restart ("off": memory only; default: ui/rooms/store.py's default_path).
For tests: LLM_VIZ_LOAD_GATE=PATH holds the model's loading
until that file exists, so a test can act while the model is still loading (as the first visitor
of a waking Space does).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import gradio as gr

from pipeline import gallery
from pipeline.trace import bounds as trace_bounds
from pipeline.trace import files as trace_io
from pipeline.errors import TraceFormatError
from pipeline.trace.records import Trace
from ui import api, bridge, early_head, language, layout, links, listeners, model, network, wiring
from ui.rooms import passages as passages_api
from ui.rooms import store as room_store
from ui.rooms import rooms
from ui.rooms import api as rooms_api
from ui.rooms import profanity as room_filter
from ui.rooms import asgi as rooms_asgi
from ui import viewer_wiring as viewer

ROOT = Path(__file__).resolve().parent
EXAMPLE = ROOT / "assets" / "example_trace.json.gz"
CSS = (ROOT / "assets" / "style.css").read_text(encoding="utf-8")


def theme() -> gr.themes.Base:
    """Gradio's Soft theme, its greys dark enough to read (WCAG AA, 4.5:1): its own subdued text (the controls' info
    lines) read 2.5:1 on white and 4.05:1 on the dark theme's blocks; its placeholders 2.5:1 (docs/accessibility.md)."""
    return gr.themes.Soft().set(body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_300",
                                input_placeholder_color="*neutral_500", input_placeholder_color_dark="*neutral_400")
PAGE_JS = (ROOT / "assets" / "page.js").read_text(encoding="utf-8")


def example_trace() -> Trace | None:
    try:
        return trace_io.load(EXAMPLE)
    except (OSError, TraceFormatError) as e:
        print(f"example trace unavailable: {e}", flush=True)
        return None


def build(example: Trace | None) -> gr.Blocks:
    """The page, with `example` shown when it opens (None: an empty page)."""
    spec_cost = model.spec_cost()
    # Gradio keeps a copy of every file it serves: clear those older than an hour, hourly
    with gr.Blocks(title="LLM pipeline visualizer", delete_cache=(3600, 3600)) as demo:
        page = layout.layout(example, model.status(), spec_cost)
        wiring.wire(demo, page, example)
    api.publish(demo, model.start_run, listeners.DOWNLOADS, model.MAX_NEW_TOKENS)  # /trace; the page's events hidden from the API
    return language.speak_all(demo)  # every listener in its caller's language; /trace in English


def queue(demo: gr.Blocks) -> gr.Blocks:
    """`demo` with its event queue. Gradio summarises every event's timing in a pandas table after each event ends
    (its /monitoring dashboard's numbers): 11-25 ms of CPU an event on the 2-core machine, ~0.4 s of a 24-token
    Generate's server time, and more the more events a class has made. The app has no dashboard: the summary is
    never made, and `main` launches with monitoring off (to have both back: GRADIO_ANALYTICS_CACHE_FREQUENCY=1 in the
    environment, and enable_monitoring=None in `main`'s launch)."""
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", str(2**62))  # (read by the queue made here)
    return demo.queue(default_concurrency_limit=8)


def main(argv=None):
    ap = argparse.ArgumentParser(description="LLM pipeline visualizer")
    ap.add_argument("--model", default=os.environ.get("LLM_VIZ_MODEL"), help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="0.0.0.0 to serve other machines (a Space sets GRADIO_SERVER_NAME)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", os.environ.get("GRADIO_SERVER_PORT", 7860))))
    ap.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a clean exit on SIGTERM, so atexit clean-ups run
    model.start(a.model)
    rooms.ROOMS.attach(room_store.open_store())  # the class rooms kept before a restart, back (ui/rooms/store.py)
    room_filter.warm("ready")  # the answers' word lists built now (0.3 s), not at a class's first reveal
    network.SERVED_ON["host"] = a.host  # a class's join link: the network's address of this machine when it serves one
    example = example_trace()
    demo = queue(build(example))
    gr.set_static_paths(viewer.static_paths() + [str(gallery.GALLERY_DIR)])  # the page's scripts; the saved traces
    demo.launch(server_name=a.host, server_port=a.port, share=a.share, css=CSS, js=PAGE_JS, head=language.head_html() + bridge.head_html() + links.early_head() + viewer.head_html(example), theme=theme(),
                show_error=True, enable_monitoring=False, max_file_size=trace_bounds.MAX_FILE_BYTES,  # a larger upload is refused as it streams in
                max_threads=64,  # Gradio's 40 would be taken by the 32 generation slots (ui/api.py) and 8 other listeners
                prevent_thread_lock=True)
    early_head.serve_first(demo.app)  # scripts that run before Gradio's own, at the top of the page (ui/early_head.py)
    demo.app.include_router(rooms_api.router)  # the class rooms' JSON API, beside the page (ui/rooms/api.py)
    rooms_asgi.serve_first(demo.app, rooms_api.router, rooms_api.state_answer)  # ... before Gradio's middleware and routes
    demo.app.include_router(passages_api.router)  # the real-text passages a room can play (ui/rooms/passages.py)
    demo.app.include_router(language.router)  # each language's catalogue, for the page's script (ui/language.py)
    model.settle_heap_once_loaded()  # what lives as long as the process, out of the garbage collector's walks
    demo.block_thread()


if __name__ == "__main__":
    main()
