"""The offline page's Guess first data (viz/viewer/guess.py): the trace's very numbers, pieces and rules, in a
<script> of its own that nothing can end early, apart from the bundle the app shares."""
import dataclasses
import json
import re

import numpy as np
import pytest

from pipeline.guess import variants
from tests.synthetic import make_trace
from viz.viewer.bundle import viewer_bundle
from viz.viewer.guess import SCHEMA, guess_data, guess_json
from viz.viewer.page import GUESS_SCRIPT, VIEWER_SCRIPTS, render_html
from viz.viewer.sampling import unpacked


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


def _with_pieces(trace, pieces: dict):
    """Step 0 of `trace` with some of its kept candidates' pieces replaced ({k: piece}), its context ending in a word."""
    st = trace.steps[0]
    top = [str(x) for x in st.top_pieces]
    for k, piece in pieces.items():
        top[k] = piece
    return dataclasses.replace(st, top_pieces=tuple(top), context_pieces=(*st.context_pieces[:-1], " is"), logits=None)


def test_without_a_tokenizer_a_guess_that_merely_starts_with_a_candidate_gets_the_bound(trace):
    """The offline page's rule (pipeline.guess._rate_candidates, mirrored by assets/viewer_guess.js): a guess is rated
    by a kept candidate it is, or starts with before another word or sign; one it merely starts with names nothing
    ("banana" is not "·b": the model may write " banana" whole, far less likely), and gets the bound."""
    from pipeline.guess import _best_candidate

    step = _with_pieces(trace, {3: " b", 5: " Paris", 7: " <0xF0><0x9F>", 9: "8"})
    last = float(step.top_probs[-1])
    for guess in ("banana", " banana", "Parisian", "🌪", " 🌪", "8849"):
        r = _best_candidate(step, guess)
        assert (r.token_id, r.prob, r.below) == (None, None, last), guess
    for guess, k in (("b", 3), (" b", 3), ("Paris", 5), ("Paris is", 5), (" Paris.", 5), ("Paris!", 5), ("8", 9), ("8 m", 9), ("b4", 3)):
        r = _best_candidate(step, guess)
        assert (r.token_id, r.prob, r.pieces) == (int(step.top_ids[k]), float(step.top_probs[k]), (step.top_pieces[k],)), guess


def test_every_kind_of_text_is_tried_in_both_spellings(trace):
    inside = _with_pieces(trace, {})  # the context ends inside a line of words: " is"
    after = dataclasses.replace(inside, context_pieces=(*inside.context_pieces[:-1], "\n"))
    for text in ("mat", "🌪", ".", "7", "日本"):
        assert variants(inside, text) == [text, " " + text] and variants(after, text) == [text]
    for st in (inside, after):  # typed with a space before it: also without
        assert variants(st, " mat") == [" mat", "mat"] and variants(st, " 🌪") == [" 🌪", "🌪"]
    assert variants(inside, "  ") == ["  "] and variants(inside, "\tx") == ["\tx"]


def test_a_word_the_model_wrote_over_several_tokens_typed_whole_is_its_first_steps_token():
    """The French gallery trace begins "C" + "iel": "Ciel" typed at step 0 is the model's own word (its first token the
    step's), on the offline page as on the live one, not "not among the 100 likeliest"; "Cielx" and "Cie" are not."""
    from pipeline import gallery
    from pipeline.guess import rate, written_ahead
    from viz.guess import rating_html

    tr = gallery.load("french")
    step = tr.steps[0]
    assert (str(step.piece), str(tr.steps[1].piece)) == ("C", "iel") and written_ahead(tr, 0)[:1] == ("iel",)
    r = rate(None, tr, 0, "Ciel")
    assert r.chosen and r.token_id == step.token_id and r.pieces == ("C", "iel") and r.rank >= 1
    assert "“C” + “iel”" in re.sub(r"<[^>]+>", "", rating_html(r, 0, step)) and "guess-match" in rating_html(r, 0, step)
    assert not rate(None, tr, 0, "Cielx").chosen and rate(None, tr, 0, "Cie").pieces != ("C", "iel")
    d = guess_data(tr, viewer_bundle(tr))
    ahead = d["steps"][0]["ahead"]
    assert ahead == list(written_ahead(tr, 0)) and len("".join([str(step.piece), *ahead[:-1]])) <= 40  # (as long as a guess, no more)
