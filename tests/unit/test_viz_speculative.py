import re
from dataclasses import replace

import numpy as np
import pytest

from pipeline.trace.records import (
    BonusRecord, DraftInfo, ProposalRecord, ResidualRecord, RoundRecord, expected_tokens_per_pass, speculative_summary,
)
from viz.speculative import round_html, round_of_step, rounds_html, summary_html


def _prop(tid, piece, q, p, u, status):
    a = min(1.0, p / q)
    ids = np.array([tid], np.int64)
    return ProposalRecord(tid, piece, q, p, a, u, status, ids, (piece,), np.array([q], np.float32), np.array([p], np.float32))


def _round(index, first_step, proposals, residual=None, bonus=None, rollback=0):
    acc = sum(p.status == "accepted" for p in proposals)
    ids = tuple(p.token_id for p in proposals if p.status == "accepted") + ((residual or bonus).token_id,)
    return RoundRecord(index=index, position=10 + first_step, proposals=tuple(proposals), n_accepted=acc, residual=residual,
                       bonus=bonus, token_ids=ids, first_step=first_step, draft_passes=len(proposals), target_passes=1,
                       draft_tokens_fed=len(proposals), target_tokens_fed=len(proposals) + 1, draft_rollback=rollback,
                       target_rollback=rollback, draft_ms=12.0, target_ms=80.0, ms=100.0)


ROUNDS = (
    _round(0, 0, [_prop(5, " the", 0.5, 0.6, 0.2, "accepted"), _prop(6, " cat", 0.4, 0.1, 0.9, "rejected"),
                  _prop(7, "<script>", 0.3, 0.3, None, "discarded")],
           residual=ResidualRecord(8, " dog", 0.7, 0.3, np.array([8], np.int64), (" dog",), np.array([0.7], np.float32)), rollback=2),
    _round(1, 2, [_prop(9, " sat", 0.5, 0.9, 0.1, "accepted"), _prop(10, " on", 0.6, 0.8, 0.5, "accepted")],
           bonus=BonusRecord(11, " the", 0.55)),
)
DRAFT = DraftInfo(spec="layers:10", kind="layers", id="first 10 layers", n_layers=10, n_params=60_000_000, shares_weights=True)


def test_a_round_shows_each_outcome_with_its_test_on_hover():
    h = round_html(ROUNDS[0])
    assert h.count("spec-accepted") == 1 and h.count("spec-rejected") == 1 and h.count("spec-discarded") == 1
    assert "spec-resampled" in h and "spec-bonus" not in h
    assert "u = 0.900 ≥ 0.250 → rejected" in h  # min(1, 0.1/0.4) = 0.25
    assert "u = 0.200 &lt; 1.000 → accepted" in h
    assert "&lt;script&gt;" in h and "<script>" not in h
    assert "target −2, draft −2" in h
    lookup = replace(ROUNDS[0], draft_passes=0, draft_rollback=0)
    assert "KV roll-back: target −2 positions" in round_html(lookup) and "draft −0" not in round_html(lookup)


def test_bonus_round_and_the_step_on_screen():
    h = rounds_html(ROUNDS, step=3)
    assert "spec-bonus" in h
    rows = re.findall(r"<div class='spec-round( on-screen)?' data-round='(\d+)' data-first='(\d+)' data-steps='(\d+)'", h)
    assert [r[1] for r in rows if r[0]] == ["1"]  # the one round holding step 3 is marked
    first, n = int(rows[1][2]), int(rows[1][3])
    assert first <= 3 < first + n  # and its data says so, for the page's step viewer


def test_summary_counts_and_an_honest_speed_up_below_one():
    h = summary_html(ROUNDS, DRAFT, 3, speed={"speculative_tok_s": 6.0, "plain_tok_s": 10.0})
    # alpha as Leviathan et al. count it: 3 accepted of 4 tested (the discarded one was never tested)
    assert "α = <b>75%</b> (3 accepted of 4 tested proposals" in h and "60% of all 5 proposals" in h
    assert "<b>2.50</b> tokens per target forward pass" in h  # 5 tokens from 2 target passes
    # the paper's (1 - a^(k+1)) / (1 - a) at a = 0.75, for each round's k (3 and 2), averaged
    exp = ((1 - 0.75 ** 4) / 0.25 + (1 - 0.75 ** 3) / 0.25) / 2
    assert f"expects <b>{exp:.2f}</b>" in h
    assert "draft 24 ms + verify 160 ms" in h
    assert "speed-up <b>0.60×</b>" in h and "Below 1 here" in h
    h2 = summary_html(ROUNDS, DRAFT, 3, speed={"speculative_tok_s": 12.0, "plain_tok_s": 10.0})
    assert "1.20×" in h2 and "Below 1" not in h2


def test_a_lookup_that_mostly_found_nothing_says_why_it_runs_at_plain_speed():
    lookup = replace(DRAFT, spec="ngram", kind="ngram", id="prompt lookup", n_layers=0, n_params=0)
    plain = _round(2, 5, [], bonus=BonusRecord(12, " mat", 0.4))
    mostly_plain = ROUNDS[:1] + tuple(replace(plain, index=i, first_step=4 + i) for i in range(2, 4))
    assert "2 of 3 rounds found no earlier occurrence" in summary_html(mostly_plain, lookup, 3)
    assert "found no earlier occurrence" not in summary_html(ROUNDS + (plain,), lookup, 3)  # 1 of 3: mostly copied
    assert "found no earlier occurrence" not in summary_html(mostly_plain, DRAFT, 3)  # a layer draft always proposes


def test_summary_numbers_are_the_pipelines():
    s = speculative_summary(ROUNDS)
    assert (s["proposed"], s["tested"], s["accepted"], s["tokens"]) == (5, 4, 3, 5)
    assert s["acceptance_rate"] == 0.75 and s["share_accepted"] == 0.6
    assert s["expected_tokens_per_target_pass"] == pytest.approx(((1 - 0.75 ** 4) + (1 - 0.75 ** 3)) / 0.25 / 2)
    assert expected_tokens_per_pass(1.0, 4) == 5 and expected_tokens_per_pass(0.0, 4) == 1
    assert expected_tokens_per_pass(0.5, 2) == pytest.approx(1.75)


NGRAM = DraftInfo(spec="ngram", kind="ngram", id="prompt lookup (n-grams of up to 3 tokens)", n_layers=0, n_params=0, shares_weights=True)
# positions 0..9 of a context; the round's context ends at position 9 (" the"), which also stood at 4
PIECES = ["<s>", "The", " cat", " sat", " on", " the", " mat", ".", " The", " cat", " sat", " on", " the"]


def _lookup_round():
    props = [_prop(6, " mat", 1.0, 0.7, 0.3, "accepted"), _prop(7, ".", 1.0, 0.2, 0.5, "rejected"),
             _prop(2, "<b>", 1.0, 0.1, None, "discarded")]
    props = [replace(p, source_position=6 + i) for i, p in enumerate(props)]
    r = _round(3, 0, props, residual=ResidualRecord(9, "!", 0.5, 0.8, np.array([9], np.int64), ("!",), np.array([0.5], np.float32)))
    return replace(r, position=12, match_length=3, draft_passes=0, draft_tokens_fed=0, draft_ms=0.04, target_ms=95.0)


def test_a_lookup_round_says_where_each_proposal_was_copied_from():
    h = round_html(_lookup_round(), pieces=PIECES)
    assert "copied from position 6 (&#x27;·mat&#x27;)" in h  # escaped quotes inside the title attribute
    assert "kept with probability p = 0.7000" in h
    assert "the last 3 tokens &#x27;·sat·on·the&#x27; also stand at positions 3–5; copied from position 6 on" in h
    assert "draft 0.0 ms + verify 95 ms" in h and "(0 passes)" not in h
    assert "&lt;b&gt;" in h  # a piece is never markup


def test_a_round_with_nothing_to_propose_is_shown_as_a_plain_step():
    r = replace(_round(4, 7, [], bonus=BonusRecord(11, " the", 0.55)), draft_passes=0, target_tokens_fed=1, draft_ms=0.02)
    h = round_html(r)
    assert "spec-plain" in h and "spec-bonus" not in h and "nothing proposed → a plain step" in h
    assert "1 target pass of 1 token fed" in h


def test_the_round_of_a_step():
    assert round_of_step(ROUNDS, 3) is ROUNDS[1] and round_of_step(ROUNDS, 9) is None


def test_no_rounds_says_how_to_get_them():
    assert "Speculative decoding" in rounds_html(())


def _spec_trace():
    from pipeline.trace.records import SpeculativeInfo
    from tests.synthetic import make_trace

    t = make_trace(n_steps=5)  # ROUNDS made steps 0-1 and 2-4
    return replace(t, rounds=ROUNDS, speculative=SpeculativeInfo(3, DRAFT))


def test_the_timing_panel_shows_rounds_split_into_draft_and_verify_not_prefill_and_decode():
    from viz import page

    t = _spec_trace()
    fig = page.render(t, step=3, layer=0, head="all", temperature=1.0, top_k=0, top_p=1.0, only=("kv",))["kv"]
    bars = [d for d in fig.data if d.type == "bar"]
    assert [b.name for b in bars] == ["draft", "verify (one target pass)"]
    assert list(bars[0].x) == [0, 1] and list(bars[0].y) == [12.0, 12.0] and list(bars[1].y) == [80.0, 80.0]
    assert [w > 0 for w in bars[1].marker.line.width] == [False, True]  # step 3 came from round 1
    assert bars[1].customdata[1] == "round 1: draft 12.0 ms + verify 80.0 ms (3 tokens fed), 3 tokens (steps 2–4)"
    text = " ".join(a.text for a in fig.layout.annotations) + " ".join(str(d.customdata) for d in fig.data)
    assert "prefill:" not in text and "decode:" not in text and "token(s) fed" not in text
    assert "Time per round: draft + verify" in text and fig.layout.xaxis2.title.text == "round"


def test_the_tour_tells_a_speculative_step_by_its_round():
    from viz import tour

    t = _spec_trace()
    stages = tour.tour_stages(t, 3)
    words = " ".join(s.html for s in stages)
    assert "speculative round 1" in words and "decode step" not in words and "This step took" not in words
    assert "Round 1 took draft 12.0 ms + verify 80.0 ms on the machine that made this trace, for 3 tokens." in words
    assert "first step (prefill)" not in " ".join(s.html for s in tour.tour_stages(t, 0))
