"""What the page opens with, before any event (issue 24's fast first screen): the example's light panels and step
slider as the components' first values, and the example's viewer bundle named in the page's head."""
from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

import app
from pipeline.trace import files as trace_io
from ui import viewer_wiring
from viz import page, panels
from viz.viewer import bundle as viewer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example():
    return trace_io.load(str(ROOT / "assets" / "example_trace.json.gz"))


def _values(demo) -> dict:
    """elem_id -> the component's first value, from the page's config (what the browser is sent)."""
    cfg = demo.get_config_file()
    return {c["props"].get("elem_id"): c["props"].get("value") for c in cfg["components"] if c.get("props", {}).get("elem_id")}


def test_the_page_opens_with_the_example_light_panels_and_its_last_step(example):
    values = _values(app.build(example))
    last = len(example.steps) - 1
    s = example.settings
    want = page.render(example, step=last, layer=0, head="all", temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
                       only=viewer_wiring.LIGHT)
    for key, html in want.items():
        assert values[panels.BY_KEY[key].elem_id] == html, key
    assert values["step-slider"] == last
    assert values["spec-summary"] == page.speculative_summary_html(example)


def test_an_empty_page_opens_empty():
    values = _values(app.build(None))
    assert not values["output"] and values["step-slider"] == 0


def test_the_head_names_the_example_bundle(example):
    head = viewer_wiring.head_html(example)
    # (an English page takes it; a page in another language asks for its own: ui/language.py)
    inbox = re.search(r"window\.LLMAppInbox = window\.LLMLanguage && window\.LLMLanguage\.lang !== 'en' \? \[\] : \[(.*?)\];", head)
    assert inbox, head[:300]
    message = json.loads(json.loads(inbox.group(1)))
    assert message["kind"] == "bundle" and message["key"] == f"{id(example)}:{len(example.steps)}"
    path = Path(message["url"].split("file=", 1)[1])
    bundle = json.loads(path.read_text(encoding="utf-8"))
    assert bundle == json.loads(viewer.bundle_json(viewer.viewer_bundle(example, layer=0, head=None, metric="entropy")))
    # the same file as the page's load event sends (the page fetches it once: assets/app_viewer.js)
    assert json.loads(viewer_wiring.bundle_message(example, 0, "all"))["url"] == message["url"]
    assert "LLMAppInbox" not in viewer_wiring.head_html(None)


def test_the_cost_curve_is_a_figure_the_page_draws(example):
    """Not a gr.Plot with a value (Gradio would load its own Plotly.js as the page opens): a static figure."""
    from ui import model

    curve = model.spec_cost()
    if curve is None:
        pytest.skip("no measured cost curve on this machine")
    html = _values(app.build(example))["spec-cost-plot"]
    fig = json.loads(unescape(re.search(r"data-figure='(.*?)'", html, re.S).group(1)))
    assert "static-figure" in html and len(fig["data"]) >= 2 and fig["layout"]["title"]["text"].startswith("When speculative decoding pays off")
