"""A title of several lines stands where one of one line does (viz/style.py CAP_SHIFT: Plotly lifts it by 0.7 em,
past the figure's top), in a figure made by Python and in one a phone wraps (assets/viewer_phone.js wrappedTitle).
What Plotly then draws: tests/browser/test_titles_drawn.py."""
from __future__ import annotations

from pathlib import Path

from tests.js_run import run_js
from viz.style import CAP_SHIFT, TITLE_FONT, TITLE_PAD, base_layout

ROOT = Path(__file__).resolve().parents[2]
SHIFT = round(CAP_SHIFT * TITLE_FONT["size"])
WRAP = """function run(job) { const layout = {title: {text: job.title, font: {size: 17}, pad: {t: job.pad}}, margin: {t: 80}};
  LLMViewerPhone.wrappedTitle(layout, job.width); return {text: layout.title.text, pad: layout.title.pad.t, top: layout.margin.t}; }"""


def test_a_title_of_several_lines_is_given_back_its_lift_and_the_plot_its_place():
    one = base_layout("One line", height=400, margin=dict(l=60, r=20, t=70, b=50))
    two = base_layout("One line<br><sup>and a second</sup>", height=400, margin=dict(l=60, r=20, t=70, b=50))
    assert one["title"]["pad"]["t"] == TITLE_PAD and one["margin"]["t"] == 70 and one["height"] == 400
    assert two["title"]["pad"]["t"] == TITLE_PAD + SHIFT == 24
    assert two["margin"]["t"] == 70 + SHIFT and two["height"] == 400 + SHIFT  # (the plot area as tall, as far below)
    assert base_layout("a<br>b")["margin"]["t"] == 60 + SHIFT  # (the default margin too)


def _wrap(title: str, pad: int, width: int = 240) -> dict:
    return run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], WRAP, {"title": title, "pad": pad, "width": width})


def test_a_phone_that_wraps_one_line_into_several_gives_the_lift_back_once():
    long = "The next token's probabilities at temperature 0.7, after top-k and top-p"
    got = _wrap(long, TITLE_PAD)
    assert "<br>" in got["text"] and got["pad"] == TITLE_PAD + SHIFT and got["top"] > 80 + SHIFT
    again = _wrap(long.replace("0.7,", "0.7,<br>"), TITLE_PAD + SHIFT)  # (several lines already: given back by Python)
    assert "<br>" in again["text"] and again["pad"] == TITLE_PAD + SHIFT
    short = _wrap("Short", TITLE_PAD, width=600)
    assert short == {"text": "Short", "pad": TITLE_PAD, "top": 80}


def test_the_page_lifts_by_pythons_measure():
    """One measure in two languages: the page's CAP_SHIFT is viz/style.py's."""
    import re

    js = (ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")
    assert [float(x) for x in re.findall(r"const CAP_SHIFT = ([\d.]+);", js)] == [CAP_SHIFT]
