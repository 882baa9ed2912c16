"""The offline page: one file, everything inlined, every piece escaped; `python -m viz html`."""
import gzip
import html
import json
import os
import re
import subprocess
import sys

import pytest

from pipeline.trace.files import dumps
from tests.synthetic import make_trace
from viz.viewer.page import PLOTLY_JS, SLOT, TEMPLATE, output_html, plotly_js, render_html

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def trace():
    return make_trace(n_steps=5, prompt_len=6)


@pytest.fixture(scope="module")
def page(trace):
    return render_html(trace, layer=1, head=3)


def test_the_page_is_one_file_with_nothing_to_fetch(page):
    assert page.startswith("<!doctype html>")
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)\s*=", page, re.I)  # nothing loaded from elsewhere
    assert plotly_js()[0] in page and "LLMViewer.mount(" in page  # (the page's own Plotly.js, whole)
    slots = set(SLOT.findall(TEMPLATE.read_text(encoding="utf-8")))
    assert {"PLOTLY_JS", "BUNDLE", "VIEWER_JS", "OUTPUT_HTML"} <= slots
    body = page[page.index("</head>"):page.index('<script type="application/json"')]
    assert not SLOT.search(body) and not SLOT.search(page[:page.index("<script>")])  # every slot filled


def test_the_bundle_reads_back_from_the_page(page):
    m = re.search(r'<script type="application/json" id="viewer-bundle">(.*?)</script>', page, re.S)
    bundle = json.loads(m.group(1))
    assert bundle["n_steps"] == 5 and bundle["attention"] == {"layer": 1, "head": 3, "metric": "entropy"}


def test_the_text_has_one_span_per_step_and_escapes_every_piece(trace):
    body = output_html(trace, len(trace.steps))
    assert body.count("data-step=") == len(trace.steps)
    for s in trace.steps:
        assert html.escape(s.text) in body
    assert "<script>" not in body and "<img" not in body


def cli(*args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "viz", *args], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)


def test_the_html_command_reads_json_and_gzip(trace, tmp_path):
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(dumps(trace).encode()))
    r = cli("html", str(tmp_path / "t.json.gz"), "--out", str(tmp_path / "t.html"), "--max-frames", "3")
    assert r.returncode == 0, r.stderr
    assert "[3 of 5 steps;" in r.stderr and (tmp_path / "t.html").stat().st_size > PLOTLY_JS.stat().st_size  # (it inlines Plotly.js)
    assert "the file holds the first 3" in (tmp_path / "t.html").read_text(encoding="utf-8")


def test_the_html_command_says_what_is_wrong(trace, tmp_path):
    (tmp_path / "t.json").write_text(dumps(trace), encoding="utf-8")
    r = cli("html", str(tmp_path / "t.json"), "--out", str(tmp_path / "t.html"), "--layer", "9")
    assert r.returncode == 2 and "--layer must be 0 to 1" in r.stderr and "Traceback" not in r.stderr
    r = cli("html", os.path.join(ROOT, "README.md"), "--out", str(tmp_path / "t.html"))
    assert r.returncode == 2 and "not valid JSON" in r.stderr


def test_the_settings_line_names_every_segments_settings_and_exactness(trace):
    import dataclasses

    from pipeline.trace.records import Segment, Settings
    from viz.viewer.page import settings_line

    later = dataclasses.replace(trace, segments=(Segment(2, Settings(temperature=1.3, top_k=5)),))
    line = html.unescape(settings_line(later))
    assert "temperature 0.8, top-k off, top-p 0.9 (seed 0); from step 2 on with temperature 1.3, top-k 5, top-p off" in line
    assert "exact: the trace holds every step's full-vocabulary logits" in line
    from pipeline.sampling import rest

    # a trace kept compact: each step's top candidates and the summary of the rest of its logits (as a file holds it)
    compact = dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, logits=None, rest=rest.summarise(s.logits, s.top_ids))
                                                     for s in trace.steps))
    assert "within 1e-3 of the model" in settings_line(compact) and "approximate" not in settings_line(compact)
    # a compact trace continued on the page: its new steps have their logits (and no summary until they are written)
    continued = dataclasses.replace(trace, steps=compact.steps[:2] + trace.steps[2:])
    assert all(s.rest is None for s in trace.steps[2:]) and "within 1e-3 of the model" in settings_line(continued)
    bare = dataclasses.replace(compact, steps=tuple(dataclasses.replace(s, rest=None) for s in compact.steps))
    assert "the range it must lie in" in html.unescape(settings_line(bare))
    penalised = dataclasses.replace(bare, settings=dataclasses.replace(bare.settings, repetition_penalty=1.3))
    assert "approximate" in settings_line(penalised)


def test_the_app_saves_the_trace_on_screen_as_one_page_from_its_own_bundle(trace, tmp_path):
    """"Download as web page": the bundle the app's page holds (every head, here), in one file, the
    previous one replaced."""
    from ui import viewer_wiring

    first = viewer_wiring.web_page(trace, 1, "all", "newest", tmp_path)
    path = viewer_wiring.web_page(trace, 1, "all", "newest", tmp_path)
    assert list(tmp_path.iterdir()) == [path] and path.suffix == ".html"
    page = path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="viewer-bundle">(.*?)</script>', page, re.S)
    bundle = json.loads(m.group(1))
    assert bundle["attention"] == {"layer": 1, "head": None, "metric": "newest"} and bundle["n_steps"] == 5
    assert "every head; the overview" in page
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)\s*=", page, re.I)
    with pytest.raises(Exception, match="press Generate"):
        viewer_wiring.web_page(make_trace(n_steps=0), 0, 0, None, tmp_path)
    assert first.name.startswith("page-")


def test_viewer_files_of_a_trace_that_is_gone_are_removed():
    """A session's trace goes (its session ended): the bundle and panel files made for it go too."""
    import gc

    from ui import viewer_wiring

    old = make_trace(n_steps=3, prompt_len=5)
    path = viewer_wiring._cached(old, ("test",), lambda: "{}")
    assert path.exists() and path.parent == viewer_wiring.FILES
    del old
    gc.collect()
    viewer_wiring._cached(make_trace(n_steps=2), ("test",), lambda: "{}")
    assert not path.exists()


def _static_words(page: str) -> str:
    """The page's own words as a person reads them: its markup outside the data, the scripts and the step panels'
    figures (the model's text and the prompt are the trace's, not the page's), tags stripped, plus its CSS strings."""
    head, body = page[:page.index("</head>")], page[page.index("</head>"):page.index('<script type="application/json"')]
    body = re.sub(r'<div id="(prompt|output)">.*?</div>', "", body, flags=re.S)
    css = " ".join(json.loads(f'"{m}"') for m in re.findall(r'--hidden-\w+: "((?:[^"\\]|\\.)*)"', head))
    return html.unescape(re.sub(r"<[^>]+>", " ", body)) + " " + css


@pytest.mark.parametrize("lang", ["de", "es", "fr", "pt-BR", "zh-CN"])
def test_the_offline_page_speaks_its_language_with_no_english_left(trace, lang):
    """`python -m pipeline html --lang de`: the title, the intro, the step bar, Guess first, the prompt and the reply,
    the guess box, the footer and the sentences CSS draws over a hidden plot all in German; none of it in English."""
    from viz.text import catalogue, speaking

    with speaking(lang):
        page = render_html(trace, layer=1, head=3)
    words, en, own = _static_words(page), catalogue("en"), catalogue(lang)
    keys = [k for k in en if k.startswith("offline.")] + ["label.slider", "button.play", "label.guess_on", "placeholder.guess", "button.guess"]
    english = [k for k in keys if en[k] != own[k] and re.sub(r"\{\w+\}.*", "", en[k]).strip() in words]
    assert english == [] and f'lang="{lang}"' in page
    for k in ("offline.heading", "offline.guess_ask", "offline.prompt", "offline.hidden_dist", "button.guess"):
        assert own[k] in words, k
    assert "Hidden until" not in page and "What comes next?" not in page and "The reply" not in page


@pytest.mark.parametrize("name", ["viewer.css", "style.css"])
def test_no_sentence_is_drawn_by_css(name):
    """A sentence in CSS (`content: "Hidden until ..."`) is English on every page: the words come from the catalogue."""
    with open(os.path.join(ROOT, "assets", name), encoding="utf-8") as f:
        assert re.findall(r"content:\s*[\"'][^\"']*[A-Za-z]", f.read()) == []
