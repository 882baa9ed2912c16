"""What Plotly draws of a figure's title: its top stands as far below the figure's top with one line, two or three,
as Python made them and as a phone wraps them (viz/style.py CAP_SHIFT), and never past the figure's top (a title of
two lines stood 3 px above it, its Chinese glyphs cut)."""
import json

import pytest
from viz.style import base_layout
from viz.viewer.page import PLOTLY_JS

from .harness import ROOT

pytestmark = pytest.mark.browser
DRAW = """async ([layouts, width, wrap]) => { const out = [];
  for (const layout of layouts) {
    const d = document.createElement('div'); d.style.width = width + 'px'; document.body.appendChild(d);
    if (wrap) LLMViewerPhone.wrappedTitle(layout, width);
    await Plotly.newPlot(d, [{type: 'bar', x: [1, 2], y: [1, 2]}], layout);
    const svg = d.querySelector('.main-svg').getBoundingClientRect(), box = d.querySelector('.gtitle').getBoundingClientRect();
    out.push({lines: d.querySelectorAll('.gtitle .line').length || 1, top: Math.round(box.top - svg.top),
              gap: Math.round(svg.top + d._fullLayout._size.t - box.bottom)});
    Plotly.purge(d); d.remove();
  }
  return out; }"""
LINES = ["注意力：第 3 层第 2 个头", "The attention of layer 3, head 2", "<sup>what each query position reads</sup>"]


@pytest.fixture
def page(browser):  # (one a test: the suite closes every page after each)
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    page.set_content("<!doctype html><meta charset='utf-8'><body></body>")
    page.add_script_tag(path=str(PLOTLY_JS))  # (the page's own Plotly.js)
    page.add_script_tag(path=str(ROOT / "assets" / "viewer_phone.js"))
    yield page
    page.close()


def test_one_two_or_three_lines_stand_at_one_place(page):
    layouts = [base_layout("<br>".join(LINES[:n]), height=400, margin=dict(l=60, r=20, t=60 + 22 * n, b=50)) for n in (1, 2, 3)]
    drawn = page.evaluate(DRAW, [json.loads(json.dumps(layouts)), 700, False])
    assert [d["lines"] for d in drawn] == [1, 2, 3]
    assert len({d["top"] for d in drawn}) == 1 and drawn[0]["top"] >= 6, drawn


def test_a_title_a_phone_wraps_stands_where_one_line_does(page):
    one = base_layout(LINES[1], height=400)
    wrapped = base_layout(LINES[1] + " and what each of its query positions reads, a long title", height=400)
    drawn = page.evaluate(DRAW, [[one, wrapped], 300, True])
    assert drawn[1]["lines"] > 1 and drawn[1]["top"] == drawn[0]["top"] >= 6, drawn
    assert drawn[1]["gap"] > 0, drawn  # (the margin grown with it: the plot below its last line)
