"""Prompt-lookup drafts ("ngram"): proposals copied from earlier in the context, no model. Exactly
the target's output (greedy text token for token, sampled distribution by a chi-square test with
power against a wrong residual), a plain step when nothing matches, and acceptance counted only
over proposals whose tokens were emitted."""
import copy
from collections import Counter

import pytest

from pipeline.speculative.draft import DEFAULT_DRAFT, SpeculativeError, lookup, make_draft
from pipeline.generate import start
from pipeline.loading import prepare
from pipeline.trace.records import Settings, speculative_summary
from pipeline.speculative.decoding import start_speculative
from tests import tiny
from tests.unit.test_speculative_tiny import (  # noqa: F401  (one_thread: autouse fixture)
    buggy_residual, chi2_fit, exact_joint, one_thread, plain_ids, sample_joint, spec_run, target,
)

REPEATS = "The cat sat on the mat; the dog sat on the log. The cat sat on the"


# -- the lookup --------------------------------------------------------------------------------


def test_lookup_takes_the_longest_n_gram_and_its_most_recent_occurrence():
    ctx = [1, 2, 3, 9, 5, 2, 3, 7, 8, 1, 2, 3]
    got = lookup(ctx, 3, 2)  # [1, 2, 3] at 0 (and at the end): copy what followed it
    assert (got.tokens, got.sources, got.n, got.match_position) == ([9, 5], [3, 4], 3, 0)
    got = lookup(ctx[:-3] + [4, 2, 3], 3, 3)  # no earlier [4, 2, 3]; [2, 3] most recently at 5
    assert (got.tokens, got.sources, got.n) == ([7, 8, 4], [7, 8, 9], 2)
    got = lookup([5, 6, 7], 3, 4)
    assert got.tokens == [] and got.n == 0 and got.match_position == -1


def test_lookup_continues_a_repeating_pattern_past_the_end():
    got = lookup([1, 2, 1, 2, 1], 2, 5)  # [2, 1] at 1: 2 follows; then it copies its own proposals
    assert got.tokens == [2, 1, 2, 1, 2] and got.sources == [3, 4, 5, 6, 7]
    assert lookup([7, 7, 7], 3, 3).tokens == [7, 7, 7]


def test_the_shortest_n_gram_looked_up():
    assert lookup([4, 5, 6, 9, 5], 3, 4).n == 1  # only [5] matched
    assert lookup([4, 5, 6, 9, 5], 3, 4, min_ngram=2) == ([], [], 0, -1)  # too short: nothing to propose
    assert lookup([4, 5, 6, 9, 4, 5], 3, 4, min_ngram=2).tokens == [6, 9, 4, 5]


def test_one_default_draft_is_prompt_lookup(target):
    assert DEFAULT_DRAFT == "ngram"
    d = make_draft(target, None)
    assert d.info.kind == "ngram" and d.info.spec == "ngram" and (d.max_ngram, d.min_ngram) == (3, 2) and d.model is None
    assert d.info.n_params == 0 and d.info.id == "prompt lookup (n-grams of 3 down to 2 tokens)"
    for spec, n in (("ngram:5", (5, 2)), ("ngram:3:1", (3, 1)), ("ngram:1", (1, 1)), (" ngram : 4 : 4 ", (4, 4))):
        d = make_draft(target, spec)
        assert (d.max_ngram, d.min_ngram) == n
    assert start_speculative(target, REPEATS, Settings()).draft.info.kind == "ngram"


@pytest.mark.parametrize("spec,msg", [("ngram:0", "1 to 16"), ("ngram:x", "ngram:N"), ("ngram:99", "1 to 16"),
                                      ("ngram:2:3", "the shortest must be 1 to 2"), ("ngram:3:0", "the shortest must be 1 to 3")])
def test_bad_ngram_specs_are_refused(target, spec, msg):
    with pytest.raises(SpeculativeError, match=msg):
        start_speculative(target, REPEATS, Settings(), draft=spec)


# -- exactness: greedy ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("draft", ["ngram", "ngram:3:1"])
def test_greedy_equals_target_greedy_with_prompt_lookup(target, k, draft):
    s = Settings(temperature=0, max_new_tokens=40)
    gen, rounds = spec_run(target, s, prompt=REPEATS, k=k, draft=draft)
    assert [st.token_id for st in gen.steps] == plain_ids(target, s, prompt=REPEATS)
    assert gen.trace().text == "".join(st.text for st in start(target, REPEATS, s))
    assert sum(r.n_accepted for r in rounds) > 0 and len(rounds) < 40  # it did speculate
    for r in rounds:  # no model ran for the draft; every proposal says where it was copied from
        assert r.draft_passes == 0 and r.draft_tokens_fed == 0 and r.draft_rollback == 0
        assert all(p.source_position is not None and p.draft_prob == 1.0 for p in r.proposals)
        assert (r.match_length > 0) == (r.k > 0)


def test_proposals_copy_what_followed_the_match(target):
    gen, rounds = spec_run(target, Settings(temperature=0, max_new_tokens=30), prompt=REPEATS, k=4, draft="ngram")
    ctx = list(gen.prompt.token_ids) + [st.token_id for st in gen.steps]
    for r in rounds:
        if r.k == 0:
            continue
        c = r.position + 1  # the round's context: positions 0 .. r.position
        n, src = r.match_length, r.proposals[0].source_position
        assert ctx[src - n:src] == ctx[c - n:c] and src < c  # the n-gram before the source is the context's tail
        ext = ctx[:c]
        for p in r.proposals:  # copied: from the context, or (past its end) from this round's own proposals
            ext.append(p.token_id)
            assert p.token_id == ext[p.source_position]


# -- no match: a plain step ----------------------------------------------------------------------


def test_nothing_to_look_up_is_a_plain_step_with_no_verify_pass(target, monkeypatch):
    """Raw text with no repeated token: round 0 has nothing to propose, so it is the plain prefill
    (one pass); every round without a match is one target pass of one token, and no other pass runs."""
    import pipeline.speculative.decoding as spec

    passes = []
    real = spec.run_with_cache

    def counting(lm, ids, **kw):
        passes.append((lm is target, len(ids), kw.get("keep", 1)))
        return real(lm, ids, **kw)

    monkeypatch.setattr(spec, "run_with_cache", counting)
    s = Settings(temperature=0, max_new_tokens=12, chat=False)
    prompt = "Quick brown"
    ids = start(target, prompt, s).prompt.token_ids
    assert len(set(ids)) == len(ids) and lookup(ids, 3, 4).tokens == []  # nothing to copy
    gen, rounds = spec_run(target, s, prompt=prompt, k=4, draft="ngram")
    assert [st.token_id for st in gen.steps] == plain_ids(target, s, prompt=prompt)
    assert len(passes) == len(rounds) and all(is_target for is_target, _, _ in passes)  # one pass a round, all the target's
    plain = [r for r in rounds if r.k == 0]
    assert rounds[0].k == 0 and len(plain) >= 3
    for r in plain:
        assert r.proposals == () and len(r.token_ids) == 1 and r.bonus is not None and r.residual is None
        assert r.draft_passes == 0 and r.target_passes == 1 and r.target_rollback == 0
        fed, keep = passes[r.index][1:]
        assert keep == 1 and fed == r.target_tokens_fed == (len(ids) if r.index == 0 else 1)
    sm = speculative_summary(rounds)
    assert sm["rounds_without_proposals"] == len(plain) and sm["target_passes"] == len(rounds)


# -- exactness: sampling -------------------------------------------------------------------------

# Raw text where the lookup matches " hello world" (3 tokens) and proposes what followed it, tokens
# the tiny target gives about 0.4 and 0.35 at temperature 1, top-k 3: accepted and rejected often.
LOOKUP_PROMPT = "Hello world onk hello world"


def test_sampled_tokens_follow_the_target_with_prompt_lookup(target, monkeypatch):
    """Chi-square over the first three tokens, temperature 1, top-k 3, k = 2. Token 1 is the first
    lookup proposal, tested (kept with probability p(d)) or the residual (p without d); token 2 the
    second proposal tested after an acceptance, or, after a rejection, the next round's token;
    token 3 often the bonus. The draws must fit the plain target's joint distribution, and the
    same test must reject a residual drawn from p."""
    s = Settings(temperature=1.0, top_k=3, max_new_tokens=3, chat=False)
    ids = start(target, LOOKUP_PROMPT, s).prompt.token_ids
    expected = exact_joint(target, ids, s, 3)
    n = 800
    seqs, rounds = sample_joint(target, LOOKUP_PROMPT, s, n, k=2, draft="ngram")
    first = [r[0] for r in rounds]
    assert all(r.k == 2 and r.match_length == 3 for r in first)
    paths = Counter(tuple(p.status for p in r.proposals) for r in first)
    assert paths[("rejected", "discarded")] > 0.3 * n  # token 1 from the residual, token 2 from the next round
    assert paths[("accepted", "rejected")] > 0.15 * n and paths[("accepted", "accepted")] > 0.05 * n
    chi, dof, pv = chi2_fit(seqs, expected)
    assert pv > 1e-3, f"the draws do not follow the target: chi2 {chi:.1f} on {dof} degrees of freedom"
    import pipeline.speculative.decoding as spec

    monkeypatch.setattr(spec, "residual", buggy_residual)
    bad, _ = sample_joint(target, LOOKUP_PROMPT, s, n // 2, k=2, draft="ngram")
    chi_b, dof_b, pv_b = chi2_fit(bad, expected)
    assert pv_b < 1e-6, f"the test cannot tell a residual drawn from p: chi2 {chi_b:.1f} on {dof_b} degrees of freedom"


# -- counting ------------------------------------------------------------------------------------


def test_proposals_after_an_accepted_end_of_sequence_do_not_count(target):
    """A draft that always agrees (a copy of the target): round 0 proposes 4 tokens, the 3rd of them
    the end of sequence. The round ends there: 3 accepted and emitted, the 4th never tested."""
    lm = tiny.loaded("llama", layers=4, ctx=128)
    s = Settings(temperature=0, max_new_tokens=10)
    ids = plain_ids(lm, s)
    lm.model.generation_config.eos_token_id = ids[2]
    twin = prepare(copy.deepcopy(lm.model), tiny.tokenizer(), model_id="twin", source="config")
    gen, rounds = spec_run(lm, s, k=4, draft=twin)
    r = rounds[0]
    assert [p.status for p in r.proposals] == ["accepted"] * 3 + ["discarded"] and r.proposals[3].u is None
    assert r.n_accepted == 3 and r.token_ids == tuple(ids[:3]) and r.residual is None and r.bonus is None
    assert len(rounds) == 1 and gen.steps[-1].stop_reason == "eos"
    sm = speculative_summary(rounds)
    assert (sm["accepted"], sm["tested"], sm["proposed"], sm["tokens"]) == (3, 3, 4, 3)
    assert sm["acceptance_rate"] == 1.0 and sm["share_accepted"] == 0.75


def test_summary_alpha_counts_tested_proposals_and_the_papers_expectation(target):
    for seed in range(20):  # a run with acceptances and rejections (the first one, deterministic)
        gen, rounds = spec_run(target, Settings(temperature=1.0, top_k=3, max_new_tokens=40, seed=seed, chat=False),
                               prompt=LOOKUP_PROMPT, k=4, draft="ngram")
        sm = gen.summary()
        if 0 < sm["accepted"] < sm["tested"]:
            break
    tested = [p for r in rounds for p in r.proposals if p.u is not None]
    assert sm["tested"] == len(tested) < sm["proposed"]  # proposals after a rejection are never tested
    a = sm["acceptance_rate"]
    assert a == sum(p.status == "accepted" for p in tested) / len(tested)
    assert 0 < sm["share_accepted"] == sm["accepted"] / sm["proposed"] < a
    exp = sum((1 - a ** (r.k + 1)) / (1 - a) for r in rounds) / len(rounds)
    assert sm["expected_tokens_per_target_pass"] == pytest.approx(exp)


def test_a_lookup_trace_keeps_where_proposals_came_from_through_the_file(target):
    from pipeline.trace.files import dumps, loads
    from tests.helpers import records_equal

    gen, rounds = spec_run(target, Settings(temperature=0, max_new_tokens=12, chat=False), prompt=LOOKUP_PROMPT, k=2, draft="ngram")
    assert rounds[0].match_length == 3 and [p.source_position for p in rounds[0].proposals] == [4, 5]
    back = loads(dumps(gen.trace()))
    assert records_equal(gen.trace().rounds, back.rounds) and back.rounds[0].match_length == 3
    assert [p.source_position for p in back.rounds[0].proposals] == [4, 5] and back.speculative.draft.kind == "ngram"
