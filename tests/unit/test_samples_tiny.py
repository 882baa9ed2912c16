"""Many continuations at once (pipeline/samples.py, pipeline/forced_run.py, viz/samples.py) on a tiny random model:
determinism, greedy copies, one stream per continuation, the batch against one continuation at a time (an independent
loop: batch 1, no cache, pipeline.sampling's full path), end of sequence and the context's limit, the command line's
file and refusals, a continuation opened as a branch, and the tree's counts."""
import json
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from pipeline import samples as samples_mod
from pipeline.sampling import stages as sampling
from pipeline.__main__ import main
from pipeline.errors import SettingsError
from pipeline.forced_run import open_sample
from pipeline.generate import run_trace
from pipeline.trace.records import Settings
from pipeline.trace.samples import FORMAT, FirstDistribution, Sample, Samples, from_json, to_json
from pipeline.samples import draw_samples, sample_rng, samples_from_prompt, samples_from_trace
from pipeline.tokens import Detokenizer
from tests import tiny
from viz.samples import first_counts, prefix_tree, samples_html

PROMPT = "Hello world"
MIXED = Settings(temperature=0.9, top_k=200, top_p=0.95, min_p=0.02, repetition_penalty=1.3, seed=11)


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=96)


def _reference(lm, context, settings, seed, index, m, stop_ids):
    """One continuation alone: batch 1, a full forward pass over the whole sequence per token (no cache), and
    pipeline.sampling's recording path (apply_stages + greedy_or_draw) with the continuation's own stream."""
    rng, ctx, out, probs, t1 = sample_rng(seed, index), list(context), [], [], []
    with torch.inference_mode():
        while True:
            logits = lm.model(input_ids=torch.tensor([ctx])).logits[0, -1, : lm.info.vocab_size].double().numpy()
            stages = settings.stages(ctx)
            res = sampling.apply_stages(logits.astype(np.float32), stages)
            tok = sampling.greedy_or_draw(res, stages, rng)
            out.append(tok)
            probs.append(res.final_probs[tok])
            t1.append(np.exp(logits[tok] - np.logaddexp.reduce(logits)))
            if tok in stop_ids or len(out) == m or len(ctx) + 1 >= lm.info.context_length:  # the query at len(ctx) - 1
                return out, probs, t1
            ctx.append(tok)


def _context(lm, text=PROMPT):
    return list(lm.tokens.encode_prompt(text, chat=True, system_prompt=None).ids)


def test_same_seed_same_continuations_and_one_stream_each(lm):
    a = samples_from_prompt(lm, PROMPT, MIXED, n=6, max_new_tokens=7)
    b = samples_from_prompt(lm, PROMPT, MIXED, n=6, max_new_tokens=7)
    assert [x.token_ids for x in a.samples] == [x.token_ids for x in b.samples]
    assert [x.prob for x in a.samples] == [x.prob for x in b.samples]
    assert [x.seed for x in a.samples] == [(11, i) for i in range(6)]
    assert len({x.token_ids for x in a.samples}) >= 4  # one stream per continuation: they differ
    c = samples_from_prompt(lm, PROMPT, replace(MIXED, seed=12), n=6, max_new_tokens=7)
    assert [x.token_ids for x in c.samples] != [x.token_ids for x in a.samples]
    assert a.n == 6 and a.max_new_tokens == 7 and a.settings.max_new_tokens == 7 and a.forward_passes == 7
    assert a.seconds > 0 and 0 < a.prefill_seconds <= a.seconds


def test_temperature_zero_gives_n_copies_of_the_greedy_continuation(lm):
    s = samples_from_prompt(lm, PROMPT, Settings(temperature=0, seed=4), n=5, max_new_tokens=9)
    greedy = run_trace(lm, PROMPT, Settings(temperature=0, max_new_tokens=9))
    assert all(x.token_ids == tuple(st.token_id for st in greedy.steps) for x in s.samples)
    assert all(x.text == greedy.text for x in s.samples)
    assert all(p == 1.0 for x in s.samples for p in x.prob)
    np.testing.assert_allclose(s.samples[0].prob_t1, [st.chosen_prob for st in greedy.steps], atol=1e-5)
    np.testing.assert_allclose(s.samples[0].entropy_t1, [st.entropy for st in greedy.steps], atol=1e-4)


@pytest.mark.parametrize("settings", [MIXED, Settings(temperature=1.0, seed=3), Settings(temperature=0.5, top_p=0.5, seed=5)])
def test_the_batch_draws_what_each_continuation_draws_alone(lm, settings):
    ctx, m = _context(lm), 8
    s = draw_samples(lm, ctx, settings, n=5, max_new_tokens=m)
    stop = samples_mod.eos_ids(lm)
    for x in s.samples:
        toks, probs, t1 = _reference(lm, ctx, settings, settings.seed, x.index, m, stop)
        assert list(x.token_ids) == toks
        np.testing.assert_allclose(x.prob, probs, atol=1e-5)
        np.testing.assert_allclose(x.prob_t1, t1, atol=1e-5)


def test_end_of_sequence_stops_each_row_and_the_rest_go_on(lm, monkeypatch):
    """Rows that stop leave the batch (its cache shrinks) and the others still draw what they draw alone."""
    ctx, settings = _context(lm), Settings(temperature=1.0, seed=2)
    free = draw_samples(lm, ctx, settings, n=8, max_new_tokens=6, ignore_eos=True)
    stops = {free.samples[0].token_ids[1], free.samples[3].token_ids[0], free.samples[5].token_ids[2]}
    monkeypatch.setattr(samples_mod, "eos_ids", lambda _lm: stops)
    s = draw_samples(lm, ctx, settings, n=8, max_new_tokens=6)
    lengths = []
    for x in s.samples:
        toks, _, _ = _reference(lm, ctx, settings, 2, x.index, 6, stops)
        assert list(x.token_ids) == toks
        ends = x.token_ids[-1] in stops
        assert x.stop_reason == ("eos" if ends else "max_new_tokens")
        if ends:  # the end of sequence releases no text (bytes of an unfinished character stay held back, as in generation)
            d = Detokenizer(lm.tokens)
            assert x.text == "".join(d.add(t) for t in x.token_ids[:-1])
        lengths.append(len(x.token_ids))
    assert min(lengths) < 6 and max(lengths) == 6
    assert s.forward_passes == max(lengths)  # the prefill, then one pass per position while any row goes on


def test_the_context_limit_stops_every_row(lm):
    ctx = _context(lm, "The quick brown fox jumps over the lazy dog. " * 2)
    room = lm.info.context_length - len(ctx)
    s = draw_samples(lm, ctx, Settings(temperature=1.0, seed=1), n=3, max_new_tokens=200, ignore_eos=True)
    assert all(len(x.token_ids) == room and x.stop_reason == "context_limit" for x in s.samples)
    with pytest.raises(SettingsError, match="window"):
        draw_samples(lm, list(range(5, 5 + lm.info.context_length)), Settings(), n=2, max_new_tokens=3)


@pytest.mark.parametrize("n,m,what", [(0, 5, "number of continuations"), (33, 5, "number of continuations"), (2.5, 5, "number"),
                                      (4, 0, "new tokens"), (4, 257, "new tokens"), (True, 3, "number")])
def test_bad_counts_are_refused_in_one_sentence(lm, n, m, what):
    with pytest.raises(SettingsError, match=what):
        samples_from_prompt(lm, PROMPT, Settings(), n=n, max_new_tokens=m)


def test_the_first_distribution_is_the_one_every_first_token_came_from(lm):
    s = samples_from_prompt(lm, PROMPT, Settings(temperature=0.8, top_k=30, seed=9), n=32, max_new_tokens=1)
    f = s.first
    assert f.kept == 30 and len(f.ids) >= 20 and list(f.probs) == sorted(f.probs, reverse=True)
    assert {x.token_ids[0] for x in s.samples} <= set(f.ids)
    by_id = dict(zip(f.ids, f.probs))
    for x in s.samples:
        assert by_id[x.token_ids[0]] == pytest.approx(x.prob[0], abs=1e-12)
    assert sum(c for _, _, c, _ in first_counts(s)) == 32


def test_samples_from_a_trace_step_continue_its_context(lm):
    tr = run_trace(lm, PROMPT, Settings(temperature=0, max_new_tokens=6))
    s = samples_from_trace(lm, tr, 3, Settings(temperature=0, seed=1), n=2, max_new_tokens=3)
    assert s.start_step == 3 and s.prefix == tuple(st.token_id for st in tr.steps[:3])
    assert s.samples[0].token_ids == tuple(st.token_id for st in tr.steps[3:6])
    assert s.samples[0].text == "".join(st.text for st in tr.steps[3:6])
    with pytest.raises(SettingsError, match="step"):
        samples_from_trace(lm, tr, 7, Settings(), n=2, max_new_tokens=3)
    with pytest.raises(SettingsError, match="Generate"):
        samples_from_trace(lm, None, 0, Settings(), n=2, max_new_tokens=3)


@pytest.mark.parametrize("start", [0, 2])
def test_a_continuation_opens_as_a_branch_with_its_steps_recomputed(lm, start):
    tr = run_trace(lm, PROMPT, Settings(temperature=0.7, seed=5, max_new_tokens=5))
    s = samples_from_trace(lm, tr, start, MIXED, n=4, max_new_tokens=5)
    x = s.samples[2]
    b = open_sample(lm, tr, s, 2)
    assert b.steps[:start] == tr.steps[:start]
    new = b.steps[start:]
    assert tuple(st.token_id for st in new) == x.token_ids and [st.index for st in new] == list(range(start, start + len(new)))
    np.testing.assert_allclose([st.chosen_final_prob for st in new], x.prob, atol=1e-5)
    np.testing.assert_allclose([st.chosen_prob for st in new], x.prob_t1, atol=1e-5)
    assert "".join(st.text for st in new) == x.text and new[-1].stop_reason == x.stop_reason
    assert new[0].phase == ("prefill" if start == 0 else "decode") and all(st.phase == "decode" for st in new[1:])
    assert (new[0].attention_matrix is not None) == (start == 0)
    rng = sample_rng(11, 2)
    rng.random(len(x.token_ids))  # the stream after the continuation's draws
    assert json.loads(new[-1].rng_state) == rng.bit_generator.state
    assert b.settings_at(start).top_k == 200 and b.settings_at(start).max_new_tokens == start + len(new)
    with pytest.raises(SettingsError, match="another text"):
        open_sample(lm, run_trace(lm, "Other words", Settings(max_new_tokens=3)), s, 0)


def test_the_file_round_trips(lm):
    s = samples_from_prompt(lm, PROMPT, MIXED, n=3, max_new_tokens=4)
    d = json.loads(json.dumps(to_json(s)))
    assert d["format"] == FORMAT and from_json(d) == s
    with pytest.raises(ValueError):
        from_json({"format": "something else"})


# -- the command line ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    tiny.model("llama", ctx=96).save_pretrained(d)
    tiny.tokenizer().save_pretrained(d)
    return d


def test_the_command_line_writes_the_documented_file(model_dir, tmp_path, capsys):
    out = tmp_path / "s.json"
    rc = main(["samples", "--prompt", PROMPT, "--n", "5", "--max-new-tokens", "6", "--temperature", "0.9", "--top-k", "40",
               "--top-p", "0.95", "--min-p", "0.01", "--repetition-penalty", "1.2", "--seed", "7", "--model", str(model_dir),
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["format"] == "llm-pipeline-samples/1" and d["n"] == 5 and len(d["samples"]) == 5
    assert d["prompt"]["token_ids"] and all(isinstance(i, int) for i in d["prompt"]["token_ids"])
    assert d["settings"]["top_k"] == 40 and d["settings"]["min_p"] == 0.01 and d["settings"]["seed"] == 7
    assert d["settings"]["max_new_tokens"] == 6 and d["settings"]["chat"] is True and d["seconds"] > 0
    for x in d["samples"]:
        assert {"token_ids", "text", "prob", "prob_t1", "seed"} <= set(x)
        assert 1 <= len(x["token_ids"]) <= 6 and len(x["prob"]) == len(x["prob_t1"]) == len(x["token_ids"])
        assert all(0 < p <= 1 for p in x["prob"] + x["prob_t1"])
    assert re.search(r"5 continuations", capsys.readouterr().err)


@pytest.mark.parametrize("args,what", [
    (["--n", "0"], "number of continuations"), (["--n", "40"], "number of continuations"), (["--max-new-tokens", "0"], "new tokens"),
    (["--temperature", "-1"], "temperature"), (["--min-p", "2"], "min-p"), (["--top-p", "0"], "top-p"), (["--prompt", "  "], "empty"),
])
def test_the_command_line_refuses_bad_arguments_in_one_line(tmp_path, capsys, args, what):
    argv = ["samples", "--prompt", PROMPT, "--out", str(tmp_path / "s.json"), "--model", str(tmp_path / "no-such-model"), *args]
    rc = main(argv)  # refused before any model loads (the last --prompt is the one read)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error:") and what in err and "\n" not in err
    assert not (tmp_path / "s.json").exists()


# -- the view ------------------------------------------------------------------------------------------------


def _synthetic(token_lists, *, stops=None) -> Samples:
    """Samples with given tokens (piece = 't<id>', probability 0.5 each) for the tree's arithmetic."""
    stops = stops or ["max_new_tokens"] * len(token_lists)
    ss = tuple(Sample(i, (0, i), tuple(t), tuple(f"t{k}" for k in t), " ".join(f"t{k}" for k in t), (0.5,) * len(t), (0.4,) * len(t),
                      (1.0,) * len(t), st) for i, (t, st) in enumerate(zip(token_lists, stops)))
    firsts = sorted({t[0] for t in token_lists})
    first = FirstDistribution(tuple(firsts), tuple(f"t{k}" for k in firsts), tuple(1 / len(firsts) for _ in firsts),
                              tuple(0.9 / len(firsts) for _ in firsts), len(firsts))
    return Samples("tiny", (1, 2), (), 0, Settings(max_new_tokens=6), ss, first, 1.5, 0.1, 0.0, 7)


def test_the_tree_counts_collapses_and_marks_the_most_common_path():
    s = _synthetic([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 6, 7], [8, 9, 9, 9], [1, 2, 3, 4]])
    root = prefix_tree(s)
    assert [c.count for c in root.children] == [4, 1]
    a = root.children[0]
    assert a.ids == [1, 2] and a.prob == 0.5 and a.run_prob == pytest.approx(0.25) and a.main  # 1 -> 2 shared by all four: one run
    assert [(c.ids, c.count) for c in a.children] == [([3], 3), ([6, 7], 1)]
    b = a.children[0]
    assert [(c.ids, c.count, c.main) for c in b.children] == [([4], 2, True), ([5], 1, False)]
    assert root.children[1].ids == [8, 9, 9, 9] and not root.children[1].main
    assert sum(c.count for c in root.children) == s.n


def test_the_tree_is_cut_at_its_depth_and_width_and_says_so():
    s = _synthetic([[k, 1, 2, 3, 4, 5] for k in range(10, 22)])
    h = samples_html(s, depth=3, width=5)
    assert h.count("class='samples-more'") == 1 and "+ 7 more branches (7 of 12)" in h
    assert "first 3 tokens" in h and "At most 5 branches" in h
    root = prefix_tree(s, depth=3)
    assert all(c.ids == [c.ids[0], 1, 2] and c.cut == 1 for c in root.children)


def test_the_view_has_every_text_an_open_button_each_and_the_cost():
    s = _synthetic([[1, 2], [1, 3], [4]], stops=["max_new_tokens", "max_new_tokens", "eos"])
    h = samples_html(s, alone_seconds=0.9)
    assert "data-n='3'" in h and h.count("class='sample-text'") == 3 and h.count("class='sample-open'") == 3
    for i in range(3):
        assert f"class='sample-text' data-i='{i}'" in h and f"class='sample-open' data-i='{i}'" in h
    assert "3 continuations took 1.5 s; one alone takes 0.90 s: a decode step reads every weight once for all 3." in h
    assert "one alone" not in samples_html(s)
    rows = first_counts(s)
    assert [(i, c) for i, _, c, _ in rows] == [(1, 2), (4, 1)]
    assert "data-count='2'" in h and "2 of 3" in h and "(end of text)" in h


def test_the_view_escapes_what_the_model_wrote():
    s = _synthetic([[1]])
    x = replace(s.samples[0], text="<script>alert(1)</script>", pieces=("<b>",))
    h = samples_html(replace(s, samples=(x,)))
    assert "<script>" not in h and "&lt;script&gt;" in h and "<b>" not in h
