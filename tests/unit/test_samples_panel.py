"""Draw many on the page (ui/samples.py), on a tiny random model: what Draw shows and keeps, a continuation opened as a
branch with every panel, and the sentences it says without a model, without a trace or for a trace of another model."""
from dataclasses import replace
from types import SimpleNamespace

import gradio as gr
import pytest

from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny
from ui import layout, model
from ui.samples import SamplesPanel
from viz.text import t

PROMPT = "The quick brown fox"
DRAWN = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


@pytest.fixture(scope="module")
def page():
    with gr.Blocks():
        return layout.layout(None, "status", None)


@pytest.fixture(scope="module")
def trace(lm):
    gen = start(lm, PROMPT, Settings(temperature=0, max_new_tokens=5))
    for _ in gen:
        pass
    return gen.trace()


@pytest.fixture()
def holder(lm, monkeypatch):
    monkeypatch.setattr(model, "HOLDER", SimpleNamespace(get=lambda shown=None: lm))


def _event(**data):
    return SimpleNamespace(_data=data)


def _drawn(panel, *args, **kw) -> dict:
    """What Draw shows in the end (its first answer, then the same with one continuation alone measured)."""
    outs = list(panel.draw(*args, **kw))
    return {k: v for out in outs for k, v in out.items()}


def test_draw_shows_n_continuations_from_the_step_on_screen_and_keeps_them(page, trace, holder):
    panel, C = SamplesPanel(page), page.C
    first = next(panel.draw(trace, 2, seed=5, n=4, m=3, shown="", **DRAWN))
    assert "one alone takes" not in first[C.samples_result] and first[C.samples_state].n == 4  # (the texts at once)
    out = _drawn(panel, trace, 2, seed=5, n=4, m=3, shown="", **DRAWN)
    got = out[C.samples_state]
    assert got.n == 4 and got.start_step == 2 and got.prefix == tuple(s.token_id for s in trace.steps[:2])
    assert got.settings.seed == 5 and all(1 <= len(x.token_ids) <= 3 for x in got.samples)
    view = out[C.samples_result]
    assert "data-n='4'" in view and view.count("class='sample-text'") == 4 and view.count("class='sample-open'") == 4
    assert "one alone takes" in view  # (the cost sentence, with the one measured alone)
    eos = sum(x.stop_reason == "eos" for x in got.samples)  # "(end of text)" marks only what the model ended, not M reached
    assert view.count("class='samples-end'") <= 2 * eos and (eos or "samples-cont" in view)


def test_a_continuation_opens_as_a_branch_with_every_panel(page, trace, holder):
    C, panel = page.C, SamplesPanel(page)
    got = _drawn(panel, trace, 2, seed=5, n=3, m=3, shown="", **DRAWN)[C.samples_state]
    out = panel.open(got, trace, [], 0, "all", shown="", evt=_event(i=1), **DRAWN)
    opened = out[page.state]
    assert out[C.ran] is True
    assert [s.token_id for s in opened.steps] == [s.token_id for s in trace.steps[:2]] + list(got.samples[1].token_ids)
    assert opened.steps[2].attention is not None  # recomputed with capture: every panel works on it
    branches = out[page.branches]
    assert [b.trace for b in branches] == [trace, opened] and branches[1].fork_step == 2
    assert C.dist in out and C.output in out


def test_without_a_model_a_trace_or_samples_it_says_why(page, trace, lm, monkeypatch):
    C, panel = page.C, SamplesPanel(page)
    monkeypatch.setattr(model, "HOLDER", None)
    out = _drawn(panel, trace, 2, seed=0, n=4, m=3, shown="", **DRAWN)
    assert out[C.samples_state] is None and "data-n='0'" in out[C.samples_result]
    assert t("samples.no_model")[1:40] in out[C.samples_result]
    def loading(shown=None):
        raise model.ModelNotReady("the model is still loading: try Generate again in a moment")

    monkeypatch.setattr(model, "HOLDER", SimpleNamespace(get=loading))  # (Draw says what Draw needs, not Generate's words)
    said = _drawn(panel, trace, 2, seed=0, n=4, m=3, shown="", **DRAWN)[C.samples_result]
    assert t("samples.no_model")[1:40] in said and "Generate" not in said
    monkeypatch.setattr(model, "HOLDER", SimpleNamespace(get=lambda shown=None: lm))
    assert t("samples.no_trace")[1:30] in _drawn(panel, None, 0, seed=0, n=4, m=3, shown="", **DRAWN)[C.samples_result]
    other = replace(trace, model=replace(trace.model, id="another-model"))
    assert "another-model" in _drawn(panel, other, 1, seed=0, n=4, m=3, shown="", **DRAWN)[C.samples_result]
    assert "32" in _drawn(panel, trace, 1, seed=0, n=99, m=3, shown="", **DRAWN)[C.samples_result]  # (N's range, said)
    warned = []
    monkeypatch.setattr(gr, "Warning", warned.append)
    assert panel.open(None, trace, [], 0, "all", shown="", evt=_event(i=0), **DRAWN) == {C.ran: False} and warned
