"""The step viewer inside the app: what the browser does on its own, and the few server calls left.

Once a trace is on screen (a generation ended or was stopped, a trace was loaded, the example,
a branch shown) the server sends the browser viz.viewer's bundle: each panel that follows the
step as one Plotly figure with a frame per step, the exact sampling tables, and per step the token
counts and KV summary. The text, token chips and speculative rounds on the page hold every step,
marked (viz.output, viz.tokens, viz.speculative). assets/app_viewer.js then scrubs the step slider,
plays, and reshapes the distribution for temperature, top-k and top-p with no request: it draws the
five figures and shows the text, chips and rounds of the step. The server is asked only:

- once per change of layer, head or overview metric (that panel's frames, made anew);
- once after the step slider settles (debounced in the page), and only while the "Inside the model"
  panel is on screen: its open tab, which the model computes for the step. (A step past the bundle's
  frames, in a trace longer than viz.viewer.MAX_FRAMES, also gets its five figures this way.)

Messages go through the page's one channel, the bridge (ui/bridge.py: `say` as an output, `LLMBridge.on` in
assets/app_viewer.js): {"kind": "live"} when a generation starts (the page shows the server's streamed figures until the next bundle), {"kind": "bundle"},
{"kind": "panel"} (one panel's frames replaced). Each carries the server time `t` it was made at,
so a bundle made before the latest generation started is ignored. A bundle or panel is not in the
message itself: it is written once, as a JSON file, and the message gives its `url`, which the page
fetches. The server then sends a class's 30 copies of one gallery trace's bundle as files, never
holding them as event outputs.
"""
from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from pathlib import Path

import gradio as gr

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from pipeline.trace.records import Trace
from viz import page, panels
from viz.viewer.bundle import MAX_FRAMES, frame_steps, bundle_json, viewer_bundle
from viz.viewer.page import PLOTLY_JS, VIEWER_SCRIPTS
from viz.text import language
from ui.views import Components

ASSETS = Path(__file__).resolve().parents[1] / "assets"
# In this order, each after Plotly.js (Gradio runs them in turn, but the page's DOM is built meanwhile: a script's
# observer may fire before the next script has run). The viewer's scripts first, text.js first of all: every
# script that writes a word calls its LLMText (tests/unit/test_script_order.py).
SCRIPTS = (PLOTLY_JS, *(ASSETS / f for f in VIEWER_SCRIPTS), ASSETS / "link_actions.js", ASSETS / "branch_ask.js", ASSETS / "page_view.js",
           ASSETS / "step_text.js", ASSETS / "app_viewer.js", ASSETS / "guess.js", ASSETS / "room_tools.js", ASSETS / "room_teacher.js", ASSETS / "room.js")
# drawn by the server for a whole trace, the page showing their steps; the panels the page draws from the
# bundle (viz.panels: FIVE is an older name, from when there were five)
LIGHT = panels.LIGHT_KEYS
FIVE = panels.STEP_KEYS
CACHE_BYTES = 1 << 30  # of bundle and panel files kept on disk (a few MB each for a short trace)


def static_paths() -> list[str]:
    """The files the page loads by URL (gr.set_static_paths: served as they are, never copied): its
    scripts, and the folder of bundle and panel files."""
    return [str(p) for p in SCRIPTS] + [str(FILES)]


def head_html(example: Trace | None = None) -> str:
    """Script tags for the page's <head>: the page's own Plotly.js (viz/viewer/page.py PLOTLY_JS; Gradio's own copy is
    private to its bundle), the viewer and its wiring; `?v=` makes a changed file load anew. With the
    example trace, its bundle's message is in the head too: the page fetches it while Gradio builds the
    page, not after the page-load event's round trip (the page opens with the example: ui/layout.py)."""
    ids = json.dumps(list(panels.STEP_IDS))  # the step panels' element ids, for app_viewer.js (viz.panels)
    first = bundle_message(example, 0, "all") if example is not None and example.steps else None
    # (made in English: a page in another language asks for its own, ui/language.py)
    inbox = f"window.LLMAppInbox = window.LLMLanguage && window.LLMLanguage.lang !== 'en' ? [] : [{json.dumps(first)}];" if first else ""
    return "\n".join([f"<script>window.LLMAppPanels = {ids};{inbox}</script>",
                      *(f'<script src="gradio_api/file={p}?v={int(p.stat().st_mtime)}"></script>' for p in SCRIPTS)])


def _layer(trace: Trace, layer) -> int:
    return clamp_index(layer, trace.model.n_layers, default=0)


def _head(trace: Trace, head) -> int | None:
    if head in (None, "", "all"):
        return None
    try:
        return clamp_index(head, trace.model.n_heads)
    except (TypeError, ValueError):
        return None


def _key(trace: Trace) -> str:
    return f"{id(trace)}:{len(trace.steps)}"


# bundles and panels as JSON files, by trace and view options; the trace is held weakly (a session's
# trace is big). A gallery trace is one object shared by every session: a class asking for the same
# layer of it is served the same file.
FILES = Path(tempfile.mkdtemp(prefix="llm-viz-viewer-"))
atexit.register(shutil.rmtree, FILES, ignore_errors=True)
_CACHE: OrderedDict = OrderedDict()  # key -> (weak trace, path, bytes)
_BUILDING = threading.Lock()  # one build at a time: a second ask for the same one waits, then finds it made


def _cached(trace: Trace, key: tuple, make) -> Path:
    """The file holding `make()`'s JSON text for `trace` and `key` (made once while it is kept)."""
    key = (id(trace), len(trace.steps), language(), *key)  # (a figure's titles are in the language asking)
    with _BUILDING:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is trace and hit[1].exists():
            _CACHE.move_to_end(key)
            return hit[1]
        text = make()
        path = FILES / f"{uuid.uuid4().hex}.json"
        path.write_text(text, encoding="utf-8")
        _CACHE[key] = (weakref.ref(trace), path, len(text))
        for k in [k for k, (ref, _, _) in _CACHE.items() if ref() is None]:  # a session's trace that is gone
            _CACHE.pop(k)[1].unlink(missing_ok=True)
        while len(_CACHE) > 1 and sum(n for _, _, n in _CACHE.values()) > CACHE_BYTES:
            _CACHE.popitem(last=False)[1][1].unlink(missing_ok=True)
        return path


def _url(path: Path) -> str:
    return f"gradio_api/file={path}"


def _bundle_file(trace: Trace, layer: int, head: int | None, metric: str) -> Path:
    return _cached(trace, ("bundle", layer, head, metric), lambda: bundle_json(viewer_bundle(trace, layer=layer, head=head, metric=metric)))


def live_message() -> str:
    """A generation starts: the page shows the server's streamed figures until the next bundle."""
    return json.dumps({"kind": "live", "t": time.time()})


def bundle_message(trace: Trace | None, layer, head, metric="entropy"):
    """The viewer bundle of the trace on screen, for the page (gr.skip() when there is none)."""
    if trace is None or not trace.steps:
        return gr.skip()
    t = time.time()
    path = _bundle_file(trace, _layer(trace, layer), _head(trace, head), metric or "entropy")
    return json.dumps({"kind": "bundle", "t": t, "key": _key(trace), "url": _url(path)})


def _panel_message(trace: Trace, elem_id: str, key: tuple, make) -> str:
    """One panel's frames replaced, as the page's message (the panel's JSON made once per trace and key)."""
    path = _cached(trace, (elem_id, *key), lambda: bundle_json(make()))
    return json.dumps({"kind": "panel", "t": time.time(), "key": _key(trace), "id": elem_id, "url": _url(path)})


def attention_message(trace: Trace | None, layer, head):
    """Layer or head changed: the attention panel's frames for the trace on screen."""
    if trace is None or not trace.steps:
        return gr.skip()
    L, H = _layer(trace, layer), _head(trace, head)
    frames = panels.BY_KEY["attn"].frames
    return _panel_message(trace, "attn-plot", (L, H), lambda: frames(trace, frame_steps(trace, MAX_FRAMES), layer=L, head=H))


def overview_message(trace: Trace | None, metric):
    if trace is None or not trace.steps:
        return gr.skip()
    m = metric or "entropy"
    frames = panels.BY_KEY["overview"].frames
    return _panel_message(trace, "attn-overview", (m,), lambda: frames(trace, frame_steps(trace, MAX_FRAMES), metric=m))


def web_page(trace: Trace, layer, head, metric, folder: Path) -> Path:
    """The trace on screen as one self-contained web page (viz.viewer.page: the same viewer, Plotly.js
    inlined, no request of any kind), from the bundle the page holds; the one such file in `folder`."""
    from viz.viewer.page import render_html

    if not trace.steps:
        raise SettingsError("there is no generation on screen to save: press Generate first")
    bundle = json.loads(_bundle_file(trace, _layer(trace, layer), _head(trace, head), metric or "entropy").read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("page-*.html"):
        old.unlink(missing_ok=True)
    path = folder / f"page-{time.strftime('%Y%m%d-%H%M%S')}.html"
    path.write_text(render_html(trace, bundle=bundle), encoding="utf-8")
    return path


def settled_view(C: Components, trace: Trace | None, step, layer, head, temperature, top_k, top_p, min_p, repetition_penalty,
                 metric) -> dict:
    """After the step slider settles: nothing for a step the bundle holds (the page drew it); the five
    figures for a step past the bundle's frames (a trace longer than viz.viewer.MAX_FRAMES)."""
    try:
        s = int(step)
    except (TypeError, ValueError):
        return {C.dist: gr.skip()}
    if trace is None or not trace.steps or s < MAX_FRAMES:
        return {C.dist: gr.skip()}
    try:
        out = page.render(trace, step=s, layer=layer, head=head, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                          repetition_penalty=repetition_penalty,
                          metric=metric or "entropy", only=FIVE)
    except SettingsError as e:
        gr.Warning(str(e))
        return {C.dist: gr.skip()}
    return {C[k]: v for k, v in out.items()}
