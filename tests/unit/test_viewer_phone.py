"""A figure's title on a narrow screen (assets/viewer_phone.js, WCAG 1.4.10: 320 px without loss): every line Python
writes in the title, the smaller-type lines in a span of their own size included, is wrapped by words to the figure's
width, nothing dropped, the top margin grown by the lines added. Run by node (tests/js_run.py)."""
from __future__ import annotations

from pathlib import Path

from pipeline import gallery
from tests.js_run import run_js
from viz.distribution import distribution_figure_dict

ROOT = Path(__file__).resolve().parents[2]
JOB = """function run(job) { const layout = {title: {text: job.title, font: {size: 17}}, margin: {t: 80}};
  LLMViewerPhone.wrappedTitle(layout, job.width); return [layout.title.text, layout.margin.t]; }"""


def test_each_line_of_the_distributions_title_fits_320_px():
    step = gallery.load("chat").steps[3]
    title = distribution_figure_dict(step, temperature=0.7, n=20, vocab_size=49152)["layout"]["title"]["text"]
    text, top = run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], JOB, {"title": title, "width": 240})
    lines = text.split("<br>")
    plain = [line.split(">", 1)[-1].split("<", 1)[0] if line.startswith("<") else line for line in lines]
    assert len(lines) > len(title.split("<br>")) and top > 80  # (the long lines wrapped, the margin grown)
    assert all(len(p) <= 34 for p in plain), plain  # (13 px type: about 30 characters in 220 px)
    words = lambda s: " ".join(x.split(">", 1)[-1].split("<", 1)[0] if x.startswith("<") else x for x in s.split("<br>")).split()  # noqa: E731
    assert words(text) == words(title)  # nothing dropped, nothing added
