"""The classroom load script's pure helpers (the run itself is measured by hand, never in tests)."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("classroom_load", ROOT / "scripts" / "classroom_load.py")
cl = importlib.util.module_from_spec(spec)
sys.modules["classroom_load"] = cl  # its dataclass looks itself up there
spec.loader.exec_module(cl)

# the shape of gradio_client's view_api(return_format="dict") parameters, as /generate shows them today
GENERATE_PARAMS = [
    {"label": "Prompt (Enter generates)", "parameter_name": "param_0", "parameter_has_default": True, "parameter_default": "Why?"},
    {"label": "System prompt (chat mode; empty: the template's own default)", "parameter_name": "param_1", "parameter_has_default": False},
    {"label": "Mode", "parameter_name": "param_2", "parameter_has_default": True, "parameter_default": "Chat",
     "type": {"enum": ["Chat", "Raw"], "type": "string"}},
    {"label": "Temperature (0 = greedy)", "parameter_name": "param_3", "parameter_has_default": True, "parameter_default": 0.7},
    {"label": "Top-k (0 = off)", "parameter_name": "param_4", "parameter_has_default": True, "parameter_default": 0},
    {"label": "Seed", "parameter_name": "param_6", "parameter_has_default": True, "parameter_default": 0},
    {"label": "Max new tokens", "parameter_name": "param_7", "parameter_has_default": True, "parameter_default": 64},
    {"label": "Layer", "parameter_name": "param_8", "parameter_has_default": True, "parameter_default": 0},
]


def test_fill_args_by_label_with_defaults_and_choices():
    args = cl.fill_args(GENERATE_PARAMS, dict(prompt="Hi", mode="raw", top_k=5, seed=3, max_new_tokens=32))
    assert args == ["Hi", None, "Raw", 0.7, 5, 3, 32, 0]


def test_fill_args_by_parameter_name_for_a_named_endpoint():
    params = [{"parameter_name": n, "label": n, "parameter_has_default": False}
              for n in ("prompt", "mode", "system_prompt", "temperature", "top_k", "top_p", "seed", "max_new_tokens")]
    values = dict(prompt="p", mode="chat", system_prompt="s", temperature=0.5, top_k=1, top_p=0.8, seed=9, max_new_tokens=4)
    assert cl.fill_args(params, values) == list(values.values())


def test_count_tokens_from_the_slider_or_a_trace_file(tmp_path):
    outputs = ("<div>", {"__type__": "update"}, {"minimum": 0, "maximum": 31, "value": 31, "__type__": "update"})
    assert cl.count_tokens(outputs) == 32
    with pytest.raises(ValueError):
        cl.count_tokens(("<div>", {"__type__": "update"}))
    f = tmp_path / "t.json.gz"
    f.write_bytes((ROOT / "assets" / "gallery" / "flat.json.gz").read_bytes())
    assert cl.count_tokens(str(f)) == 12


def test_page_events_are_the_pages_own():
    """The events a viewer calls are the page's: its load event and what is chained after it, with a
    fresh page's values, and the layer dropdown's input event (state, layer, head)."""
    import app
    from pipeline.trace import files as trace_io

    cfg = app.build(trace_io.load(str(ROOT / "assets" / "example_trace.json.gz"))).get_config_file()
    deps, comps = cfg["dependencies"], {c["id"]: c for c in cfg["components"]}
    ev = cl.page_events(cfg)
    first, data = ev["open"][0]
    assert [t[1] for t in deps[first]["targets"]] == ["load"] and data == []
    chained = [deps[i]["trigger_after"] for i, _ in ev["open"][1:]]
    assert len(chained) >= 2 and all(c is not None for c in chained)
    assert all(len(d) == len(deps[i]["inputs"]) for i, d in ev["open"])
    layer = deps[ev["layer"]]
    assert [comps[i]["type"] for i in layer["inputs"]] == ["state", "dropdown", "dropdown"]
    assert comps[layer["targets"][0][0]]["props"]["elem_id"] == "layer"


def test_rates_ratio_and_memory():
    assert cl.rates([(32, 8.0), (16, 0.0)]) == [4.0]
    assert "-50%" in cl.ratio_line([4.0], [2.0]) and "NOT within" in cl.ratio_line([4.0], [2.0])
    assert "within the 20%" in cl.ratio_line([4.0], [3.5]) and "NOT" not in cl.ratio_line([4.0], [3.5])
    assert cl.rss_mb(os.getpid()) > 10
    assert 0 < cl.free_port() < 65536


def test_fill_args_fits_the_apps_trace_endpoint():
    """The parameters /trace shows (app.build's API info), filled from the script's values."""
    import app

    params = app.build(None).get_api_info()["named_endpoints"][cl.GENERATE_API]["parameters"]
    assert cl.GENERATE_API == "/trace"
    args = cl.fill_args(params, dict(prompt="Hi", mode="RAW", seed=3, max_new_tokens=2))
    assert args == ["Hi", "raw", "", 0.7, 0, 0.9, 3, 2, 0.0, 1.0, True]


def test_fetch_named_gets_the_files_viewer_messages_name():
    class Http:
        def __init__(self):
            self.got = []

        def get(self, path):
            self.got.append(path)
            return type("R", (), {"content": b"1234", "raise_for_status": lambda self: None})()

    http = Http()
    msg = '{"kind": "panel", "t": 1, "key": "k", "id": "attn-plot", "url": "gradio_api/file=/tmp/x.json"}'
    assert cl.fetch_named(http, [msg, None, '{"kind": "live", "t": 2}', "<div>"]) == 4
    assert http.got == ["/gradio_api/file=/tmp/x.json"]
