"""A figure in words (assets/figure_text.js), on the figures Python draws for a real step of a tiny model: the
distribution's bars read as each candidate and its number as drawn, in order, the rest of the vocabulary last, in the
page's language; a heatmap's rows read as the column each is largest in; no axis tick is read as a word."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import plotly.io as pio
import pytest

from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny
from tests.js_run import run_js
from viz import distribution
from viz.style import visible
from viz.text import catalogue_js, speaking

ROOT = Path(__file__).resolve().parents[2]
JOB = "function run(job) { return job.figs.map((f) => window.LLMFigureText.describe(f)); }"


def _words(figs: list[dict], locale: str = "en") -> list[str]:
    scripts = [catalogue_js(locale), *((ROOT / "assets" / f).read_text(encoding="utf-8") for f in ("text.js", "figure_text.js"))]
    return run_js(scripts, JOB, {"figs": [json.loads(pio.to_json(f, validate=False)) for f in figs]})


@pytest.fixture(scope="module")
def step():
    lm = tiny.loaded("llama", seed=3)
    return list(start(lm, "the quick brown", Settings(temperature=0.0, max_new_tokens=2, chat=False)))[1]


@pytest.mark.parametrize("locale", ["en", "fr"])
def test_the_distribution_reads_as_its_candidates_and_their_numbers(step, locale):
    with speaking(locale):
        fig = distribution.distribution_figure_dict(step, temperature=0.7, n=8, vocab_size=384)
    said = _words([fig], locale)[0]
    finals = fig["data"][1]
    assert finals["text"][0] and finals["text"][0] in said  # the top candidate's number, as its bar writes it
    top = visible(step.top_pieces[0])
    at = said.index(top)
    assert said.index(finals["text"][0], at) > at  # ... after its name
    for k in range(1, 8):  # the candidates in their order
        assert said.index(visible(step.top_pieces[k])[:10], at) > at
    rest = finals["y"][-1].removeprefix("<i>").removesuffix("</i>")  # the rest of the vocabulary, last
    assert rest.startswith("reste du vocabulaire" if locale == "fr" else "rest of vocabulary")
    assert said.index(rest) > said.index(visible(step.top_pieces[7])[:10], at) and said.endswith(finals["text"][-1])
    assert ": ;" not in said and " : ;" not in said and not said.rstrip().endswith(":")  # every bar its number
    assert not any(tag in said for tag in ("<i>", "<b>", "<span", "<br", "&amp;", "&lt;"))  # no markup read aloud
    assert " 0%" not in said and "100%" not in said.replace(finals["text"][0], "")  # no axis tick read as a word


def test_a_heatmap_reads_as_each_rows_largest_column():
    z = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    fig = {"data": [{"type": "heatmap", "z": z, "x": ["a", "<b>bee</b>", "c"], "y": ["head 1", "head 2"]}], "layout": {"title": {"text": "Attention"}}}
    said = _words([fig])[0]
    assert said.startswith("Attention. ")
    assert "head 1: most bee (70%)" in said and "head 2: most a (50%)" in said
