"""The page's one channel to its scripts (ui/bridge.py): the only hidden component carrying messages, every kind the
page sends heard by a listener, and listeners that take their inputs by name."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import gradio as gr
import pytest

from ui import bridge

ROOT = Path(__file__).resolve().parents[2]
LISTENS = {"click", "input", "change", "submit", "upload", "select", "then", "success", "tick", "load", "release", "on", *bridge.TO_SERVER}


@pytest.fixture(scope="module")
def demo():
    import app

    return app.build(app.example_trace())


def test_two_hidden_components_the_bridge_and_the_download(demo):
    hidden = sorted(b.elem_id for b in demo.blocks.values() if "hidden-input" in (b.elem_classes or []))
    assert hidden == ["bridge", "download-file"]


def test_every_kind_the_page_sends_has_its_listener(demo):
    bridge_id = next(i for i, b in demo.blocks.items() if b.elem_id == "bridge")
    heard = {name for fn in demo.fns.values() for (target, name) in fn.targets if target == bridge_id}
    assert heard == set(bridge.TO_SERVER)
    # and the bridge's script quotes every kind (Gradio makes a custom event of each name it quotes)
    b = demo.blocks[bridge_id]
    assert all(f"'{k}'" in b.js_on_load for k in bridge.TO_SERVER)


def test_a_message_for_the_page_is_json_with_its_kind_and_unique():
    a, b = json.loads(bridge.say("tour", target="x")), json.loads(bridge.say("tour", target="x"))
    assert a["kind"] == "tour" and a["target"] == "x" and a["n"] != b["n"]
    assert bridge.data(gr.EventData(None, {"rank": 3})) == {"rank": 3}
    assert bridge.data(None) == {} and bridge.data(gr.EventData(None, "text")) == {}
    with pytest.raises(ValueError):
        bridge.listen(gr.HTML(), "no-such-kind")


def _positional(call: ast.Call) -> ast.AST | None:
    """The inputs of a listener call given by position or `inputs=` (None when by name, or when no function runs)."""
    args = call.args
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    fn = args[0] if args else kw.get("fn")
    if fn is None or (isinstance(fn, ast.Constant) and fn.value is None):
        return None  # (a script in the browser: Gradio hands it its inputs in order)
    return args[1] if len(args) > 1 else kw.get("inputs")


def test_no_listener_takes_two_or_more_inputs_by_position():
    bad = []
    for path in sorted((ROOT / "ui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LISTENS:
                given = _positional(node)
                if isinstance(given, (ast.List, ast.Tuple)) and (len(given.elts) >= 2 or any(isinstance(e, ast.Starred) for e in given.elts)):
                    bad.append(f"{path.name}:{node.lineno}")
    assert not bad, f"listeners taking inputs by position: {bad}"
