"""Speculative decoding on tiny random models: exactly the target's output (greedy text token
for token, sampled distribution by a chi-square test), and KV caches rolled back to what a
fresh prefill of the accepted tokens gives."""
import copy
import json
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch

from pipeline.sampling import stages as sampling
from pipeline.capture import hooks_installed
from pipeline.speculative.draft import SpeculativeError, first_layers, make_draft
from pipeline.generate import start
from pipeline.loading import prepare
from pipeline.trace.records import Settings, speculative_summary
from pipeline.speculative.decoding import accept_prob, residual, start_speculative
from pipeline.trace.files import dumps, loads
from tests import tiny
from tests.helpers import records_equal

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run thousands of small passes: one torch thread is many times faster than two
    fighting over a busy machine's cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def target():
    return tiny.loaded("llama", layers=4, ctx=128)


def small_copy(lm, n_layers: int = 1):
    """A separate smaller model with the target's tokenizer: its first layers, own weights and cache."""
    small = tiny.model(lm.info.family, layers=n_layers, ctx=lm.info.context_length)
    missing, unexpected = small.load_state_dict(lm.model.state_dict(), strict=False)
    assert not missing and all(".layers." in k for k in unexpected)
    return small


def flat_copy(lm, scale: float):
    """The target with its LM head scaled: the same top tokens, other probabilities."""
    m = copy.deepcopy(lm.model)
    with torch.no_grad():
        m.get_output_embeddings().weight.mul_(scale)
    return prepare(m, tiny.tokenizer(), model_id=f"tiny-flat-{scale}", source="config")


@pytest.fixture(scope="module")
def small_dir(target, tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama-draft")
    small_copy(target).save_pretrained(d)
    tiny.tokenizer().save_pretrained(d)
    return d


def plain_ids(lm, settings, prompt=PROMPT, **kw):
    return [s.token_id for s in start(lm, prompt, settings, **kw)]


def spec_run(lm, settings, prompt=PROMPT, **kw):
    """The generation, run to the end, and its RoundRecords."""
    gen = start_speculative(lm, prompt, settings, **kw)
    for _ in gen:
        pass
    return gen, gen.rounds


# -- exactness: greedy -----------------------------------------------------------------------


@pytest.mark.parametrize("family", tiny.FAMILIES)
def test_greedy_equals_target_greedy_with_a_layer_draft(family):
    lm = tiny.loaded(family, layers=3, ctx=128)
    s = Settings(temperature=0, max_new_tokens=24)
    gen, rounds = spec_run(lm, s, k=3, draft="layers:1")
    assert [st.token_id for st in gen.steps] == plain_ids(lm, s)
    assert gen.trace().text == "".join(st.text for st in start(lm, PROMPT, s))
    assert sum(r.n_accepted for r in rounds) > 0 and len(rounds) < 24  # it did speculate


@pytest.mark.parametrize("k,n", [(1, 2), (2, 3), (4, 1), (16, 2)])
def test_greedy_equals_target_greedy_for_any_k_and_depth(target, k, n):
    s = Settings(temperature=0, max_new_tokens=30)
    gen, _ = spec_run(target, s, k=k, draft=f"layers:{n}")
    assert [st.token_id for st in gen.steps] == plain_ids(target, s)


def test_greedy_equals_target_greedy_with_a_smaller_model_from_a_directory(target, small_dir):
    s = Settings(temperature=0, max_new_tokens=30)
    gen, rounds = spec_run(target, s, k=4, draft=str(small_dir))
    assert gen.draft.info.kind == "model" and not gen.draft.info.shares_weights and gen.draft.info.n_layers == 1
    assert [st.token_id for st in gen.steps] == plain_ids(target, s)
    assert any(r.residual is not None for r in rounds) and any(r.n_accepted for r in rounds)


def test_greedy_equals_target_greedy_even_when_the_draft_is_always_wrong(target):
    """A random unrelated draft: every proposal is rejected, every token is the residual's."""
    other = tiny.loaded("llama", seed=1, layers=1, ctx=128)
    s = Settings(temperature=0, max_new_tokens=20)
    gen, rounds = spec_run(target, s, k=3, draft=other)
    assert [st.token_id for st in gen.steps] == plain_ids(target, s)
    assert all(r.residual is not None or r.k == 0 for r in rounds)


def test_continuing_from_a_prefix_matches_the_plain_continuation(target):
    s = Settings(temperature=0, max_new_tokens=12)
    ids = plain_ids(target, s)
    gen, _ = spec_run(target, s, k=3, draft="layers:2", prefix=ids[:4])
    assert [st.token_id for st in gen.steps] == ids[4:] and gen.steps[0].index == 4 and gen.steps[0].phase == "prefill"


def test_continuing_after_half_a_character_neither_repeats_nor_loses_text(target):
    ids = target.tokenizer("😀", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1  # byte tokens: a prefix can end inside the character
    for cut in range(1, len(ids)):
        gen, _ = spec_run(target, Settings(temperature=0, max_new_tokens=6), k=2, draft="layers:2", prefix=ids[:cut])
        shown = "".join(st.text for st in gen.steps)  # the steps kept released nothing yet: half a character
        assert shown == target.tokens.decode(ids[:cut] + [st.token_id for st in gen.steps if st.stop_reason != "eos"])


def test_stops_like_the_plain_generator(target):
    s = Settings(temperature=0, max_new_tokens=7)
    gen, rounds = spec_run(target, s, k=4, draft="layers:2")
    assert [st.stop_reason for st in gen.steps] == [None] * 6 + ["max_new_tokens"]
    # end of sequence: make the 5th greedy token the model's EOS; both stop there, text ""
    lm = tiny.loaded("llama", layers=4, ctx=128)
    ids = plain_ids(lm, Settings(temperature=0, max_new_tokens=10))
    lm.model.generation_config.eos_token_id = ids[4]
    s = Settings(temperature=0, max_new_tokens=10)
    plain = list(start(lm, PROMPT, s))
    gen, _ = spec_run(lm, s, k=4, draft="layers:3")
    assert [st.token_id for st in gen.steps] == [st.token_id for st in plain]
    assert gen.steps[-1].stop_reason == plain[-1].stop_reason == "eos" and gen.steps[-1].text == ""
    # the context window
    small = tiny.loaded("llama", layers=2, ctx=64)
    gen, _ = spec_run(small, Settings(temperature=0, max_new_tokens=100), k=5, draft="layers:1")
    assert gen.steps[-1].stop_reason == "context_limit" and len(gen.prompt.token_ids) + len(gen.steps) == 64
    assert [st.token_id for st in gen.steps] == plain_ids(small, Settings(temperature=0, max_new_tokens=100))


# -- exactness: sampling ---------------------------------------------------------------------


def test_accept_and_residual_rule_give_exactly_the_target_distribution():
    """P(token x) = sum over proposals d ~ q of [accept d] + [reject d] * residual(x) = p(x)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, q = rng.random(12) ** 3, rng.random(12) ** 3
        p[rng.random(12) < 0.3] = 0  # tokens each side filters out (top-k / top-p)
        q[rng.random(12) < 0.3] = 0
        p, q = p / p.sum(), q / q.sum()
        r, mass = residual(p, q)
        out = np.zeros(12)
        for d in np.flatnonzero(q):
            a = accept_prob(p[d], q[d])
            out[d] += q[d] * a
            out += q[d] * (1 - a) * r
        np.testing.assert_allclose(out, p, atol=1e-12)
        assert mass == pytest.approx(0.5 * np.abs(p - q).sum())  # rejection chance = total variation


def chi2_sf(x: float, dof: int) -> float:
    """P(chi-square with dof degrees of freedom > x), from the series of the lower incomplete gamma."""
    a, h = dof / 2.0, x / 2.0
    term = total = 1.0 / a
    n = 0
    while term > 1e-15 * total:
        n += 1
        term *= h / (a + n)
        total += term
    return max(0.0, 1.0 - math.exp(a * math.log(h) - h - math.lgamma(a)) * total)


def test_chi2_sf_matches_known_critical_values():
    assert chi2_sf(20.515, 5) == pytest.approx(0.001, rel=1e-3)
    assert chi2_sf(11.070, 5) == pytest.approx(0.05, rel=1e-3)
    assert chi2_sf(3.841, 1) == pytest.approx(0.05, rel=1e-3)


def exact_joint(lm, ids, settings, length) -> dict:
    """P(first `length` new tokens = t) under plain sampling from the target, for every sequence t
    with non-zero probability: the chain of the target's final distributions, each from an
    independent uncached forward pass."""
    out = {(): 1.0}
    for _ in range(length):
        nxt = {}
        for seq, pr in out.items():
            ctx = list(ids) + list(seq)
            with torch.inference_mode():
                logits = lm.model(torch.tensor([ctx]), use_cache=False).logits[0, -1].numpy()
            stages = sampling.build_stages(temperature=settings.temperature, top_k=settings.top_k, top_p=settings.top_p,
                                           repetition_penalty=settings.repetition_penalty, context_ids=ctx)
            p = sampling.apply_stages(logits, stages).final_probs
            for t in np.flatnonzero(p):
                nxt[seq + (int(t),)] = pr * float(p[t])
        out = nxt
    return out


def sample_joint(lm, text, settings, n, **kw):
    """The first settings.max_new_tokens tokens of n speculative runs (seeds 0..n-1), and their rounds."""
    gen0 = start_speculative(lm, text, settings, ignore_eos=True, **kw)  # tokenised and the draft made once
    seqs, rounds = [], []
    for seed in range(n):
        gen = replace(gen0, settings=replace(settings, seed=seed), steps=[], rounds=[])
        for _ in gen:
            pass
        seqs.append(tuple(st.token_id for st in gen.steps))
        rounds.append(gen.rounds)
    return seqs, rounds


def chi2_fit(seqs, expected: dict) -> tuple[float, int, float]:
    """Pearson's chi-square of observed sequences against expected probabilities (cells expected
    fewer than 5 times pooled into one): (statistic, degrees of freedom, p-value)."""
    n = len(seqs)
    seen = Counter(seqs)
    assert set(seen) <= set(expected), f"a sequence the target could not have produced: {set(seen) - set(expected)}"
    cells, pool_e, pool_o = [], 0.0, 0
    for seq, pr in expected.items():
        if n * pr >= 5:
            cells.append((seen.get(seq, 0), n * pr))
        else:
            pool_e, pool_o = pool_e + n * pr, pool_o + seen.get(seq, 0)
    if pool_e > 0:
        cells.append((pool_o, pool_e))
    chi = sum((o - e) ** 2 / e for o, e in cells)
    dof = len(cells) - 1
    return chi, dof, chi2_sf(chi, dof)


def buggy_residual(p, q):
    """The bug the tests must catch: after a rejection, draw from p instead of max(0, p - q)."""
    return np.array(p, dtype=np.float64), float(np.maximum(p - q, 0).sum())


def test_sampled_tokens_follow_the_target_at_every_position_of_a_round(target, monkeypatch):
    """Chi-square over the first three tokens together, temperature 1, top-k 3 on both models, k = 2:
    token 1 is a tested proposal or the residual after a rejection, token 2 a proposal tested after
    an acceptance or the residual there (or the next round's), token 3 often the bonus. The draft
    is the target with a sharper LM head (same top 3, other probabilities), so every path is taken
    often (about a third each). The draws must fit the plain target's joint distribution; the same test must reject a
    residual drawn from p instead of max(0, p - q), and the draft's own distribution."""
    draft = make_draft(target, flat_copy(target, 8.0))
    s = Settings(temperature=1.0, top_k=3, max_new_tokens=3)
    ids = start(target, PROMPT, s).prompt.token_ids
    expected = exact_joint(target, ids, s, 3)
    n = 800
    seqs, rounds = sample_joint(target, PROMPT, s, n, k=2, draft=draft)
    first = [r[0] for r in rounds]
    paths = Counter((r.proposals[0].status, r.proposals[1].status) for r in first)
    assert paths[("accepted", "accepted")] > 0.2 * n and paths[("accepted", "rejected")] > 0.2 * n
    assert paths[("rejected", "discarded")] > 0.2 * n  # after a rejection: the residual, then a new round
    assert sum(r.bonus is not None for r in first) > 0.2 * n  # the third token is then the bonus
    chi, dof, pv = chi2_fit(seqs, expected)
    assert pv > 1e-3, f"the draws do not follow the target: chi2 {chi:.1f} on {dof} degrees of freedom"
    # power: the same test, the same draws, against the draft's own joint distribution ...
    assert chi2_fit(seqs, {**expected, **exact_joint(draft, ids, s, 3)})[2] < 1e-6
    # ... and the bug of a residual drawn from p
    import pipeline.speculative.decoding as spec

    monkeypatch.setattr(spec, "residual", buggy_residual)
    bad, _ = sample_joint(target, PROMPT, s, n // 2, k=2, draft=draft)
    chi_b, dof_b, pv_b = chi2_fit(bad, expected)
    assert pv_b < 1e-6, f"the test cannot tell a residual drawn from p: chi2 {chi_b:.1f} on {dof_b} degrees of freedom"


def test_same_seed_same_run_other_seed_other_run(target):
    def run(seed):
        gen, rounds = spec_run(target, Settings(temperature=1.2, max_new_tokens=16, seed=seed), k=3, draft="layers:1")
        return [st.token_id for st in gen.steps], [(p.token_id, p.u, p.status) for r in rounds for p in r.proposals]

    assert run(5) == run(5) and run(5) != run(6)


# -- KV caches ---------------------------------------------------------------------------------


def fresh_prefill(model, ids):
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
    return cache


def assert_caches_equal(a, b):
    assert len(a.layers) == len(b.layers)
    for la, lb in zip(a.layers, b.layers):
        for x, y in ((la.keys, lb.keys), (la.values, lb.values)):
            assert x.shape == y.shape
            torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("draft", ["layers:2", "small"])
def test_rollback_leaves_each_cache_equal_to_a_fresh_prefill_of_the_accepted_tokens(target, draft):
    d = make_draft(target, prepare(small_copy(target, 2), tiny.tokenizer(), model_id="small", source="config") if draft == "small" else draft)
    gen = start_speculative(target, PROMPT, Settings(temperature=1.0, max_new_tokens=40, seed=2), k=4, draft=d)
    rolled = [0, 0]
    for rnd, steps in gen:
        context = list(gen.prompt.token_ids) + [st.token_id for st in gen.steps]
        if steps[-1].stop_reason is not None:
            break
        # the target holds the accepted context but its newest token, which the next round feeds
        assert gen.target_cache.get_seq_length() == len(context) - 1
        assert_caches_equal(gen.target_cache, fresh_prefill(target.model, context[:-1]))
        n = gen.draft_cache.get_seq_length()
        assert len(context) - 2 <= n <= len(context) - 1
        assert_caches_equal(gen.draft_cache, fresh_prefill(d.model, context[:n]))
        rolled[0] += rnd.target_rollback
        rolled[1] += rnd.draft_rollback
        assert rnd.target_rollback == rnd.k - rnd.n_accepted
    assert rolled[0] > 0 and rolled[1] > 0  # there were rejections to roll back


def test_a_layer_draft_is_a_view_of_the_target(target):
    d = make_draft(target, "layers:2")
    assert d.info.kind == "layers" and d.info.shares_weights and d.info.n_layers == 2
    assert d.info.n_params < target.info.n_params
    view_params = {p.data_ptr() for p in d.model.parameters()}
    assert view_params <= {p.data_ptr() for p in target.model.parameters()}
    assert target.model.config.num_hidden_layers == 4 and len(target.arch.layers) == 4  # the target is untouched
    # its logits: the target's residual stream after block 2, through the final norm and LM head
    x = torch.tensor([[5, 6, 7, 8]])
    with torch.inference_mode():
        hs = target.model(x, output_hidden_states=True).hidden_states[2]
        ref = target.arch.lm_head(target.arch.norm(hs))
        got = d.model(x).logits
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_first_layers_works_for_every_family():
    for family in tiny.FAMILIES:
        m = tiny.model(family, layers=3)
        v = first_layers(m, 1)
        with torch.inference_mode():
            assert v(torch.tensor([[5, 6]])).logits.shape == (1, 2, m.config.vocab_size)
        assert v.config.num_hidden_layers == 1 and m.config.num_hidden_layers == 3


# -- records -----------------------------------------------------------------------------------


def test_round_and_step_records_tell_one_consistent_story(target):
    s = Settings(temperature=1.0, top_p=0.95, repetition_penalty=1.1, max_new_tokens=30, seed=11)
    d = make_draft(target, flat_copy(target, 0.5))
    gen = start_speculative(target, PROMPT, s, k=3, draft=d)
    rounds = list(gen)  # (RoundRecord, its StepRecords) per round
    steps = gen.steps
    assert [st.token_id for st in steps] == [t for r, _ in rounds for t in r.token_ids]
    assert [st.index for st in steps] == list(range(len(steps)))
    for (rnd, rsteps), nxt in zip(rounds, [r for r, _ in rounds[1:]] + [None]):
        statuses = [p.status for p in rnd.proposals]
        n = rnd.n_accepted
        assert statuses[:n] == ["accepted"] * n and all(st == "discarded" for st in statuses[n + 1:])
        if rnd.residual is None and rnd.bonus is None:  # an accepted end of sequence ended the round
            assert rsteps[-1].stop_reason == "eos" and rsteps[-1].token_id == rnd.proposals[n - 1].token_id
        else:
            assert (rnd.residual is None) == (rnd.bonus is not None) == (n == rnd.k)
        for p in rnd.proposals:
            if p.status != "discarded":
                assert (p.u < p.accept_prob) == (p.status == "accepted")
                assert p.accept_prob == pytest.approx(min(1.0, p.target_prob / p.draft_prob))
                assert p.draft_prob > 0
        assert [st.token_id for st in rsteps] == list(rnd.token_ids) and rsteps[0].index == rnd.first_step
        assert rsteps[0].position == rnd.position
        for p, st in zip(rnd.proposals[:n], rsteps):
            assert st.token_id == p.token_id and st.chosen_final_prob == p.target_prob
        if rnd.residual is not None and len(rsteps) == n + 1:
            assert rsteps[-1].token_id == rnd.residual.token_id and rnd.residual.prob > 0
        if nxt is not None:
            assert nxt.first_step == rnd.first_step + len(rnd.token_ids) and nxt.position == rnd.position + len(rnd.token_ids)
        assert rnd.target_passes == 1 and rnd.draft_passes == rnd.k
    assert speculative_summary([r for r, _ in rounds])["tokens"] == len(steps)


def test_step_records_are_the_targets_computation(target):
    """Each step's logits and attention, read from its row of a verification pass, equal an
    independent uncached forward pass of the whole text."""
    gen, _ = spec_run(target, Settings(temperature=0.9, max_new_tokens=14, seed=4), k=3, draft="layers:1")
    steps = gen.steps
    with torch.inference_mode():
        out = target.model(torch.tensor([list(steps[-1].context_ids)]), output_attentions=True, use_cache=False)
    for st in steps:
        ref = out.logits[0, st.position].numpy()
        assert np.abs(st.logits - ref).max() <= 1e-4 * np.abs(ref).max() + 1e-6
        for layer, att in enumerate(out.attentions):
            np.testing.assert_allclose(st.attention[layer], att[0, :, st.position, : st.position + 1].numpy(), atol=1e-4)
        res = sampling.apply_stages(st.logits, sampling.build_stages(temperature=0.9, context_ids=st.context_ids))
        np.testing.assert_allclose(st.top_final_probs, res.final_probs[st.top_ids], rtol=1e-6, atol=1e-9)
        i = target.info
        assert st.kv_cache_bytes == st.kv_cache_bytes_formula == 2 * i.n_layers * i.n_kv_heads * i.head_dim * (st.position + 1) * 4
    T = len(gen.prompt.token_ids)
    assert steps[0].phase == "prefill" and steps[0].attention_matrix.shape == (4, 4, T, T)
    np.testing.assert_allclose(steps[0].attention_matrix[2], out.attentions[2][0, :, :T, :T].numpy(), atol=1e-4)
    assert all(st.attention_matrix is None for st in steps[1:])


def test_trace_round_trip_is_exact_and_documents_rounds(target):
    gen, _ = spec_run(target, Settings(temperature=0.8, top_k=20, max_new_tokens=12, seed=1), k=3, draft="layers:2")
    tr = gen.trace()
    assert records_equal(tr, loads(dumps(tr, full=True)))
    assert records_equal(tr.rounds, loads(dumps(tr)).rounds)
    d = json.loads(dumps(tr))
    assert d["speculative"]["k"] == 3 and d["speculative"]["draft"]["spec"] == "layers:2"
    r = d["rounds"][0]
    assert set(r) == {"index", "position", "proposals", "n_accepted", "residual", "bonus", "token_ids", "first_step", "draft_passes",
                      "target_passes", "draft_tokens_fed", "target_tokens_fed", "draft_rollback", "target_rollback", "draft_ms", "target_ms", "ms",
                      "match_length"}  # a model draft's proposals have no source_position (null: not written)
    assert set(r["proposals"][0]) == {"token_id", "piece", "draft_prob", "target_prob", "accept_prob", "u", "status", "top_ids", "top_pieces",
                                      "top_draft_probs", "top_target_probs"}
    assert r["proposals"][0]["top_target_probs"]["dtype"] == "float32"
    # a plain trace has neither key and reads back with no rounds
    plain = start(target, PROMPT, Settings(max_new_tokens=2))
    list(plain)
    pd = json.loads(dumps(plain.trace()))
    assert "rounds" not in pd and "speculative" not in pd
    back = loads(dumps(plain.trace()))
    assert back.rounds == () and back.speculative is None


def test_abandoned_speculative_generator_leaves_no_hooks():
    lm = tiny.loaded("llama", layers=4, ctx=128)  # fresh: transformers adds hooks of its own for output_attentions
    gen = start_speculative(lm, PROMPT, Settings(max_new_tokens=20), k=3, draft="layers:1")
    it = iter(gen)
    next(it)
    del it
    assert hooks_installed(lm.arch) == 0


# -- refusals ----------------------------------------------------------------------------------


def other_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=tiny.VOCAB, special_tokens=tiny.SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator(["Completely different text, other merges: zzz yyy xxx www. " * 3, "abcabc defdef ghighi " * 5], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", bos_token="<|im_start|>", pad_token="<|endoftext|>")


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"k": 0}, "from 1 to 16"),
        ({"k": 17}, "from 1 to 16"),
        ({"k": 2.5}, "from 1 to 16"),
        ({"k": True}, "from 1 to 16"),
        ({"k": float("nan")}, "from 1 to 16"),
        ({"k": "3"}, "from 1 to 16"),
        ({"draft": "layers:0"}, "1 to 3 of the target's 4 layers"),
        ({"draft": "layers:4"}, "1 to 3 of the target's 4 layers"),
        ({"draft": "layers:ten"}, "layers:N"),
    ],
)
def test_bad_speculative_settings_are_refused(target, kw, msg):
    with pytest.raises(SpeculativeError, match=msg):
        start_speculative(target, PROMPT, Settings(), **{"k": 2, "draft": "layers:1", **kw})


def test_k_from_a_slider_may_be_a_whole_float(target):
    assert start_speculative(target, PROMPT, Settings(), k=4.0, draft="layers:1").k == 4


def test_a_draft_with_another_vocabulary_is_refused(target):
    bigger = prepare(tiny.model("llama", layers=1, vocab=400), tiny.tokenizer(), model_id="tiny-400", source="config")
    with pytest.raises(SpeculativeError, match="400 output tokens but the target .* has 384.*tokenizer"):
        start_speculative(target, PROMPT, Settings(), draft=bigger)
    alien = prepare(tiny.model("llama", layers=1), other_tokenizer(), model_id="tiny-alien", source="config")
    assert alien.info.vocab_size == target.info.vocab_size
    with pytest.raises(SpeculativeError, match="different vocabulary.*tokenizer"):
        start_speculative(target, PROMPT, Settings(), draft=alien)
    with pytest.raises(SpeculativeError, match="the target itself"):
        start_speculative(target, PROMPT, Settings(), draft=target)


def test_other_settings_are_still_checked_first(target):
    with pytest.raises(sampling.SettingsError, match="temperature"):
        start_speculative(target, PROMPT, Settings(temperature=-1), k=2, draft="layers:1")
    with pytest.raises(sampling.SettingsError, match="empty"):
        start_speculative(target, " ", Settings(), k=2, draft="layers:1")


def test_a_soft_capped_model_is_verified_on_its_own_capped_logits():
    from tests.unit.test_inside_tiny import gemma2

    lm = gemma2(softcap=2.0)
    s = Settings(temperature=0.8, max_new_tokens=6, seed=3)
    gen, _ = spec_run(lm, s, k=2, draft="layers:1")
    for st in gen.steps:  # each step's distribution is the model's output, cap included, by an independent pass
        with torch.inference_mode():
            ref = lm.model(torch.tensor([list(st.context_ids)]), use_cache=False).logits[0, st.position].numpy()
        assert np.abs(ref).max() < 2.0
        np.testing.assert_allclose(st.logits, ref, atol=1e-5)
