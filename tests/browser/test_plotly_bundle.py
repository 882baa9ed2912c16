"""Every trace type a figure of the page uses is one the page's Plotly.js draws: its bundle (assets/vendor/, built by
scripts/plotly_bundle/) registers a few of plotly's trace types, not all."""
import re

import pytest

from tests.synthetic import make_trace
from viz.viewer.bundle import viewer_bundle
from viz.viewer.page import PLOTLY_JS

from .harness import ROOT

pytestmark = pytest.mark.browser


def _trace_types(x, out: set, in_template: bool = False) -> set:
    """The `type` of every trace in a figure's data or frames anywhere in `x` (not its template's examples)."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "data" and isinstance(v, list) and not in_template:
                out |= {t.get("type", "scatter") for t in v if isinstance(t, dict)}
            _trace_types(v, out, in_template or k == "template")
    elif isinstance(x, list):
        for v in x:
            _trace_types(v, out, in_template)
    return out


def _used() -> set:
    used = set()
    for head in (0, None):  # one head, every head
        _trace_types(viewer_bundle(make_trace(n_steps=4, prompt_len=5), layer=0, head=head), used)
    for p in (ROOT / "viz").rglob("*.py"):  # figures made whole in Python (go.Bar -> "bar")
        used |= {m.lower() for m in re.findall(r"\bgo\.([A-Z][A-Za-z0-9]+)\(", p.read_text(encoding="utf-8")) if m != "Figure"}
    for p in (ROOT / "assets").glob("*.js"):  # and in the page's scripts
        used |= set(re.findall(r"\btype: '([a-z0-9]+)'", p.read_text(encoding="utf-8")))
    return used


def test_every_trace_type_the_figures_use_is_in_the_pages_plotly_js(browser):
    page = browser.new_page()
    page.set_content("<!doctype html><meta charset='utf-8'><body></body>")
    page.add_script_tag(path=str(PLOTLY_JS))
    have = set(page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)"))
    used = _used()
    assert {"bar", "scatter", "heatmap"} <= used, used  # (the collection finds the figures' traces)
    assert used <= have, f"the page's Plotly.js ({PLOTLY_JS.name}) does not draw {sorted(used - have)}"
    assert "scatter3d" not in have  # (the small bundle)
