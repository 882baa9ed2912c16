"""The offline page's Guess first data (viz/viewer_guess.py): the trace's very numbers, pieces and rules, in a
<script> of its own that nothing can end early, apart from the bundle the app shares."""
import dataclasses
import json
import re

import numpy as np
import pytest

from pipeline.guess import variants
from tests.synthetic import make_trace
from viz.viewer import viewer_bundle
from viz.viewer_guess import SCHEMA, guess_data, guess_json
from viz.viewer_page import GUESS_SCRIPT, VIEWER_SCRIPTS, render_html
from viz.viewer_sampling import unpacked


@pytest.fixture(scope="module")
def trace():
    return make_trace(n_steps=6, prompt_len=7, vocab=120, top_n=25, seed=3)


def _arrays(d: dict, step: dict, key: str) -> np.ndarray:
    return unpacked({"dtype": d["dtypes"][key], "bdata": step[key]})


def test_every_step_holds_the_traces_own_numbers_and_pieces(trace):
    bundle = viewer_bundle(trace, max_frames=4)
    d = json.loads(guess_json(trace, bundle))
    assert d["schema"] == SCHEMA and len(d["steps"]) == bundle["n_steps"] == 4
    assert d["dtypes"] == {"ids": "i4", "p": "f4", "f": "f4"}
    for st, g in zip(trace.steps, d["steps"]):
        assert g["pieces"] == [str(x) for x in st.top_pieces]
        assert np.array_equal(_arrays(d, g, "ids"), st.top_ids)
        assert np.array_equal(_arrays(d, g, "p"), st.top_probs) and np.array_equal(_arrays(d, g, "f"), st.top_final_probs)
        assert (g["id"], g["piece"], g["chosen"]) == (st.token_id, st.piece, st.chosen_prob)
        assert g["space"] == int(len(variants(st, "a")) == 2)


def test_probabilities_held_wider_than_float32_stay_exact(trace):
    wide = dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, top_probs=s.top_probs.astype(np.float64) / 3) for s in trace.steps))
    d = guess_data(wide, viewer_bundle(wide, max_frames=2))
    assert d["dtypes"]["p"] == "f8"
    assert np.array_equal(_arrays(d, d["steps"][1], "p"), wide.steps[1].top_probs)


def test_the_space_rule_follows_the_contexts_last_piece(trace):
    for last, want in (("cat", 1), (" ", 0), ("\n", 0), ("a\u3000", 0), ("é", 1)):
        step = dataclasses.replace(trace.steps[0], context_pieces=(*trace.steps[0].context_pieces[:-1], last))
        t = dataclasses.replace(trace, steps=(step,))
        assert guess_data(t, {"n_steps": 1, "panels": {}})["steps"][0]["space"] == want == int(len(variants(step, "a")) == 2)


def test_the_data_is_its_own_script_and_nothing_in_it_ends_one_early(trace):
    hostile = dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, piece="</script><b>", top_pieces=("</script>x",) + tuple(s.top_pieces[1:]))
                                                     for s in trace.steps))
    page = render_html(hostile)
    m = re.search(r'<script type="application/json" id="guess-data">(.*?)</script>', page, re.S)
    assert "<" not in m.group(1)
    d = json.loads(m.group(1))
    assert d["steps"][0]["piece"] == "</script><b>" and d["steps"][0]["pieces"][0] == "</script>x"
    bundle = re.search(r'<script type="application/json" id="viewer-bundle">(.*?)</script>', page, re.S).group(1)
    assert "guess" not in json.loads(bundle)  # the app's bundle is not the page's guess data
    assert GUESS_SCRIPT not in VIEWER_SCRIPTS and page.index('id="guess-data"') > page.index('id="viewer-bundle"')
    assert page.index("root.LLMViewer = Object.assign(root.LLMViewer || {}, { guess:") < page.index("LLMViewer.mount(")
    assert 'id="guess-toggle"' in page and 'id="guess-input" type="text" maxlength="40"' in page


def test_the_data_is_small(trace):
    d = guess_json(trace, viewer_bundle(trace))
    assert len(d.encode()) < len(trace.steps) * (25 * 30 + 400)  # (25 candidates a step: pieces, 3 arrays of 4 bytes)
