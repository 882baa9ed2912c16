"""The one channel between the page's script and the server: a hidden gr.HTML component (`#bridge`).

    page -> server    LLMBridge.send(kind, data)        (assets/bridge.js)
                      a custom event named `kind` on the bridge, its data in gr.EventData; every message carries
                      the page's own address (`address`: the server cannot know it behind a proxy). A listener:
                      `listen(C.bridge, "branch")(fn, ...)`, the data read with `data(evt)`.
    server -> page    say(kind, **data) as the bridge's value, an output of any listener; the page's script
                      hands it to whoever called LLMBridge.on(kind, fn). The step viewer's messages (live, bundle,
                      panel: ui/viewer_wiring.py) go the same way.

TO_SERVER names every kind the page sends. Gradio makes a custom event of each name the bridge's script
quotes, so the script quotes them all.
"""
from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import gradio as gr

# the page's messages to the server: a candidate bar's branch, the step slider settled, a class started, the
# teacher's new trace, a class joined, a lesson's step picked, a teacher's page reloaded, "Copy link", a drawn continuation
# opened, Gradio's labels asked for in a language other than English (ui/language.py relabelling)
TO_SERVER = ("branch", "settled", "class_start", "class_sync", "join", "lesson", "resume", "copy", "sample_open", "words")
_COUNT = itertools.count()  # (a message's `n`: two alike are still two)
ASSETS = Path(__file__).resolve().parents[1] / "assets"
# inline in the page's head, before any other script of the page: Gradio adds the head's script files without waiting
# for them, so a script that uses the bridge or the values module finds them there
HEAD_SCRIPTS = ("bridge.js", "values.js")


def inline_scripts(names) -> str:
    """The scripts `names` (files of assets/), inline, in one <script>."""
    code = "\n".join((ASSETS / f).read_text(encoding="utf-8") for f in names)
    return f"<script>{code}</script>"


def head_html() -> str:
    """The bridge's and the values module's scripts, inline, for the page's <head> (first in it: app.py)."""
    return inline_scripts(HEAD_SCRIPTS)


def on_load_js() -> str:
    """The bridge component's own script (ui/layout.py makes the component: a gr.HTML with no markup, hidden by
    assets/style.css's .hidden-input): it hands Gradio's `trigger`, `props` and `watch` to assets/bridge.js."""
    kinds = ", ".join(f"'{k}'" for k in TO_SERVER)
    return f"window.LLMBridge.attach(trigger, props, watch, [{kinds}]);"


def listen(bridge: gr.HTML, kind: str):
    """The listener of the page's messages of `kind` (like a button's `.click`)."""
    if kind not in TO_SERVER:
        raise ValueError(f"{kind!r} is not a kind the page sends (ui/bridge.py TO_SERVER)")
    return getattr(bridge, kind)


def data(evt: gr.EventData | None) -> dict:
    """A page message's data (an empty dict when there is none)."""
    d = getattr(evt, "_data", None)
    return d if isinstance(d, dict) else {}


def say(kind: str, **fields) -> str:
    """A message to the page's script, as the bridge's value."""
    return json.dumps({"kind": kind, "t": time.time(), "n": next(_COUNT), **fields})
