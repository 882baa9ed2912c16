"""A figure's title on a narrow screen (assets/viewer_phone.js, WCAG 1.4.10: 320 px without loss): every line Python
writes in the title, the smaller-type lines in a span of their own size included, is wrapped by words to the figure's
width, nothing dropped, the top margin grown by the lines added. Run by node (tests/js_run.py)."""
from __future__ import annotations

from pathlib import Path

from pipeline import gallery
from tests.js_run import run_js
from viz.distribution import distribution_figure_dict
from viz.style import CLOSING_MARKS as CLOSING  # (as assets/viewer_phone.js: they hang at a line's end)

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


LEGEND = """function run(job) { return LLMViewerPhone.wrappedLegend(job.names.map((name) => ({name})), {legend: {font: {size: 12}}}, job.width)
  .map((t) => t.name); }"""


def test_a_legend_entry_the_server_broke_in_two_has_each_line_fitted():
    """The speculative cost curve's entry "one target pass fed n tokens (measured)<br>= a round with ngram": its first
    line ran past a 320 px window (test_accessibility's 320 px test, once that figure was drawn)."""
    names = ["one target pass fed n tokens (measured)<br>= a round with ngram", "short<br>names", "<b>bold</b> kept as it is"]
    got = run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], LEGEND, {"names": names, "width": 216})
    per = (216 - 60) // (12 * 0.56)  # (the characters of 12 px type in the figure's width, less the legend's symbol)
    assert all(len(line) <= per for line in got[0].split("<br>")) and got[0].count("<br>") >= 2, got[0]
    assert got[0].replace("<br>", " ") == names[0].replace("<br>", " ")  # (nothing dropped)
    assert got[1:] == names[1:]  # (lines that fit, and markup, as they were)


# -- a figure of two panels on a phone (stacked, rowsStacked, cellsFitted, notesFitted) -------------------------------
FIT = """function run(job) { const fig = JSON.parse(job.fig), P = LLMViewerPhone;
  const data = P.cellsFitted(P.stacked(fig.data, fig.layout), fig.layout, job.width); P.notesFitted(fig.layout, job.width);
  return {data, layout: fig.layout, same: data.map((t, i) => t === fig.data[i])}; }"""


def _fit(fig, width=310):
    return run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], FIT, {"fig": fig.to_json(), "width": width})


def test_the_logit_lens_on_a_phone_puts_its_probability_below_the_table_on_rows_of_its_own():
    from tests.unit.test_viz_inside_model import make_lens
    from viz.inside.lens import logit_lens_figure

    fig = logit_lens_figure(make_lens(piece=" a long word here"), 5)
    got = _fit(fig)
    lay, (heat, line) = got["layout"], got["data"]
    assert lay["xaxis"]["domain"] == lay["xaxis2"]["domain"] == [0, 1]  # (each panel the whole width)
    assert lay["yaxis2"]["domain"][1] < lay["yaxis"]["domain"][0] and lay["xaxis2"]["anchor"] == "y2"
    assert lay["yaxis2"]["type"] == "category" and lay["yaxis2"]["autorange"] == "reversed"  # (the same rows, in order)
    assert line["yaxis"] == "y2" and list(line["y"]) == list(fig.data[1].y) and heat.get("yaxis", "y") == "y"
    forms = [s for s in lay["shapes"] if s.get("name") == "forms"]
    assert sorted((s["xref"], s["yref"]) for s in forms) == [("x domain", "y"), ("x2 domain", "y2")]  # (across both panels)
    note = next(a for a in lay["annotations"] if a.get("name") == "forms")
    assert note["yref"] == "y2"
    title = next(a for a in lay["annotations"] if a["text"].startswith("p("))
    assert title["y"] == lay["yaxis2"]["domain"][1]  # (the lower panel's title on its top)
    assert lay["height"] > fig.layout.height


def test_a_tables_words_are_cut_to_their_cell_and_a_note_wrapped_to_its_panel():
    import plotly.graph_objects as go

    words = [["<b>·different</b>", "&lt;|im_end|&gt;", "ab"], ["·été", "日本語の文章", "x"]]
    fig = go.Figure([go.Heatmap(z=[[0, 1, 0], [1, 0, 1]], x=["#1", "#2", "#3"], text=words, texttemplate="%{text}", textfont=dict(size=11))],
                    layout=dict(margin=dict(l=40, r=20), xaxis=dict(domain=[0, 0.5]), xaxis2=dict(domain=[0.6, 1]), annotations=[
                        dict(xref="x2 domain", yref="paper", x=1, y=1, text="Decode: Median 420,9 ms/Token = 2,4 Tokens/s", font=dict(size=11))]))
    got = _fit(fig, width=250)  # (each cell 31 px: four characters of 11 px type)
    assert got["data"][0]["text"] == [["<b>·di…</b>", "&lt;|i…", "ab"], ["·été", "日…", "x"]]  # (a Chinese character: two wide)
    note = got["layout"]["annotations"][0]["text"]
    assert note.count("<br>") >= 2 and note.replace("<br>", " ") == "Decode: Median 420,9 ms/Token = 2,4 Tokens/s"
    wide = _fit(fig, width=2000)  # (a wide figure: nothing cut, the same trace, the note on one line)
    assert wide["same"] == [True] and "<br>" not in wide["layout"]["annotations"][0]["text"]


# -- a language written without spaces ---------------------------------------------------------------------------
WIDE = """function run(job) { return job.texts.map((t) => LLMViewerPhone.fitLine(t, job.per)); }"""


def test_chinese_lines_fit_begin_with_no_closing_mark_and_keep_latin_words_whole():
    """Every long string of the Chinese page, wrapped to 30 half-widths (a phone's title): no line wider (a closing
    mark may hang at a line's end), none begun by "：" or "，", no Latin word cut, nothing dropped."""
    import json
    import re

    texts = [v for v in _strings(json.loads((ROOT / "locales" / "zh-CN.json").read_text(encoding="utf-8")))
             if len(v) > 40 and "<" not in v]
    assert len(texts) > 100
    out = run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], WIDE, {"texts": texts, "per": 30})
    wide = lambda s: sum(2 if re.match(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]", c) else 1 for c in s)  # noqa: E731
    for text, lines in zip(texts, out):
        assert "".join(lines).replace(" ", "") == text.replace(" ", ""), (text, lines)  # nothing dropped
        for line in lines:
            assert line and line[0] not in CLOSING and wide(line.rstrip(CLOSING + " ")) <= 30, (line, lines)
        words = re.findall(r"[A-Za-z]{2,}", text)
        assert all(w in "\n".join(lines) for w in words if len(w) <= 30), (words, lines)  # (no word cut at a break)


def test_python_wraps_a_chinese_title_as_the_page_does():
    """viz.style.wide_lines (the titles Python writes) and the page's fitLine (what a phone draws narrower): one rule."""
    import json

    from viz.style import wide_lines

    texts = [v for v in _strings(json.loads((ROOT / "locales" / "zh-CN.json").read_text(encoding="utf-8"))) if len(v) > 20]
    for per in (20, 34, 48):
        page = run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], WIDE, {"texts": texts, "per": per})
        assert [wide_lines(x, per) for x in texts] == page


def _strings(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _strings(v)
    elif isinstance(tree, str):
        yield tree


def test_chinese_lines_joined_on_a_phone_keep_the_space_between_a_word_and_a_character():
    """Two Chinese lines too wide for a phone are joined and wrapped anew: where a Latin word meets a character the
    space Python writes stays ("比特 top-p"), between two characters none comes."""
    from viz.text import speaking

    step = gallery.load("chat").steps[3]
    with speaking("zh-CN"):
        title = distribution_figure_dict(step, temperature=0.7, top_p=0.9, n=20, vocab_size=49152)["layout"]["title"]["text"]
    assert "比特</span><br><span style='font-size:13px'>top-p" in title  # (the two lines this is about)
    text, _ = run_js([(ROOT / "assets" / "viewer_phone.js").read_text(encoding="utf-8")], JOB, {"title": title, "width": 240})
    flat = "\n".join(line.split(">", 1)[-1].split("<", 1)[0] if line.startswith("<") else line for line in text.split("<br>"))
    assert ("比特 top-p" in flat or "比特\ntop-p" in flat) and "比特top-p" not in flat, text
