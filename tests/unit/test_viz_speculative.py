import numpy as np

from pipeline.records import BonusRecord, DraftInfo, ProposalRecord, ResidualRecord, RoundRecord
from viz.speculative import round_html, rounds_html, summary_html


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


def test_bonus_round_and_the_step_on_screen():
    h = rounds_html(ROUNDS, step=3)
    assert "spec-bonus" in h
    shaded = [part for part in h.split("<div class='spec-round'")[1:] if "background:#fff7e0" in part]
    assert len(shaded) == 1 and "data-round='1'" in "<div class='spec-round'" + shaded[0][:40]


def test_summary_counts_and_an_honest_speed_up_below_one():
    h = summary_html(ROUNDS, DRAFT, 3, speed={"speculative_tok_s": 6.0, "plain_tok_s": 10.0})
    assert "3 of 5 proposals accepted (<b>60%</b>)" in h
    assert "<b>2.50</b> tokens per target forward pass" in h  # 5 tokens from 2 target passes
    assert "speed-up <b>0.60×</b>" in h and "Below 1 here" in h
    h2 = summary_html(ROUNDS, DRAFT, 3, speed={"speculative_tok_s": 12.0, "plain_tok_s": 10.0})
    assert "1.20×" in h2 and "Below 1" not in h2


def test_no_rounds_says_how_to_get_them():
    assert "Speculative decoding" in rounds_html(())
