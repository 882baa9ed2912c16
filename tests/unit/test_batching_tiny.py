"""The decode loop (pipeline.batching) on tiny random models: rows of different lengths in one padded pass see only
their own positions; a closed generator frees its row; a pass that fails reaches every row and the loop goes on;
LLM_VIZ_BATCH=0 runs alone; a model with a sliding-window layer runs alone."""
import random
import threading
import time

import numpy as np
import pytest
import torch

from pipeline import batching
from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny

PROMPTS = ["a b", "hello there, this is a much longer prompt than the first one", "x y z w"]


@pytest.fixture()
def llama():
    return tiny.loaded("llama", seed=3)


def _together(lm, runs, batched: bool = True):
    """Each (prompt, settings) on a thread of its own, all in the batch from the loop's second pass on: {i: steps}.
    (Each prefill first, alone; then the model's lock is held until every row has joined, so the loop's first pass,
    which waits for the lock, cannot finish a short run before the others join.)"""
    gens = [iter(start(lm, p, s)) for p, s in runs]
    out = {i: [next(g)] for i, g in enumerate(gens)}  # the prefills, one after another
    errors = []
    d = batching._decoder(lm) if batched else None  # (batched: False for a model or a setting that runs alone)

    def rest(i):
        try:
            out[i] += list(gens[i])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=rest, args=(i,), daemon=True) for i in range(len(gens))]
    with lm.lock:
        for th in threads:
            th.start()
        if d is not None:
            going = sum(st[-1].stop_reason is None for st in out.values())
            with d.cond:
                assert d.cond.wait_for(lambda: len(d.slots) + len(d.joining) >= going, 10)
    _join_all(threads, 60)
    assert not errors, errors
    return out


def _join_all(threads, seconds: float):
    """Join every thread within `seconds` in all (not each): a row the loop lost fails here, it does not hang."""
    end = time.monotonic() + seconds
    for th in threads:
        th.join(max(0.0, end - time.monotonic()))
    stuck = [th.name for th in threads if th.is_alive()]
    assert not stuck, f"generations that never ended: {stuck}"


def test_many_rows_joining_and_leaving_at_once_all_end(llama):
    """Rows come and go at every tick (12 at once, 1 to 12 tokens each, many rounds): none is ever lost. (A row that
    joined while the loop swapped its list of newcomers was once dropped, and its page waited forever.)"""
    words = "the quick brown fox jumps over the lazy dog hello world".split()
    for rnd in range(25):
        out, errors = {}, []

        def run(i, r, out=out, errors=errors):
            try:
                prompt = " ".join(r.choice(words) for _ in range(r.randint(1, 6)))
                out[i] = list(start(llama, prompt, Settings(temperature=r.choice([0.0, 0.9]), seed=i, max_new_tokens=r.randint(1, 12),
                                                             chat=False)))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i, random.Random(rnd * 100 + i)), daemon=True) for i in range(12)]
        for th in threads:
            th.start()
        _join_all(threads, 30)
        assert not errors, errors
        assert all(st[-1].stop_reason is not None for st in out.values()), rnd
    assert batching.wait_idle(llama, 10)


def test_rows_of_different_lengths_match_their_runs_alone(llama):
    runs = [(p, Settings(temperature=0.0 if i % 2 == 0 else 0.9, seed=i, max_new_tokens=8 + 3 * i, chat=False))
            for i, p in enumerate(PROMPTS)]
    together = _together(llama, runs)
    assert batching.wait_idle(llama, 10)
    assert max(s.batch_rows for st in together.values() for s in st) == 3
    for i, (p, s) in enumerate(runs):
        alone = list(start(llama, p, s))
        assert [x.token_id for x in together[i]] == [x.token_id for x in alone]
        for a, b in zip(alone, together[i]):
            np.testing.assert_allclose(b.top_probs, a.top_probs, atol=1e-5)
            assert b.attention.shape == a.attention.shape
            np.testing.assert_allclose(b.attention, a.attention, atol=1e-5)
            assert b.kv_cache_bytes == a.kv_cache_bytes


def test_prompts_prefilled_in_one_pass_match_their_runs_alone(llama):
    """Three prompts of different lengths queued while the model is busy are prefilled in ONE left-padded pass; each
    prefill's record (its whole attention matrix, residual stream, distribution, cache) is what it is alone."""
    runs = [(p, Settings(temperature=0.0 if i != 1 else 0.8, seed=i, max_new_tokens=4, chat=False)) for i, p in enumerate(PROMPTS)]
    out = tiny.prefilled_together(llama, runs)
    for i, (p, s) in enumerate(runs):
        alone, together = list(start(llama, p, s)), out[i]
        assert together[0].phase == "prefill" and together[0].batch_rows == 3
        assert [x.token_id for x in together] == [x.token_id for x in alone]
        for a, b in zip(alone, together):
            np.testing.assert_allclose(b.top_probs, a.top_probs, atol=1e-5)
            np.testing.assert_allclose(b.attention, a.attention, atol=1e-5)
            np.testing.assert_allclose(b.hidden, a.hidden, atol=1e-4)
            assert b.kv_cache_bytes == a.kv_cache_bytes and b.context_ids == a.context_ids
        assert together[0].attention_matrix.shape == alone[0].attention_matrix.shape
        np.testing.assert_allclose(together[0].attention_matrix, alone[0].attention_matrix, atol=1e-5)


def test_a_padded_pass_puts_no_weight_on_another_row_or_a_pad(llama):
    """The loop's own batch: two rows of different lengths, left-padded; the captured weights on the short row's pads
    are exactly 0, and its row view holds its own positions only."""
    from transformers import DynamicCache

    from pipeline.capture import run_with_cache

    short, long_ = [5, 6, 7], [9, 10, 11, 12, 13, 14, 15]
    caches = []
    for ids in (short, long_):
        c = DynamicCache(config=llama.model.config)
        run_with_cache(llama, ids, cache=c, hooks=False)
        caches.append(c)
    d = batching.Decoder.__new__(batching.Decoder)  # its merge and inputs, without its thread
    d.cache, d.valid, d.slots = None, None, []
    for c, ids in zip(caches, (short, long_)):
        d._merge(batching._Slot(len(ids), 1, None, c))
    ids, mask, pos = d._prepare()
    assert mask.tolist()[0] == [0] * 4 + [1] * 4 and pos.tolist() == [[3], [7]]
    cap = run_with_cache(llama, ids, cache=d.cache, attention_mask=mask, position_ids=pos)
    pat = cap["blocks.0.attn.pattern"]  # (2, heads, 1, 8)
    assert torch.all(pat[0, :, 0, :4] == 0)
    view = batching.row_view(cap, 0, int(torch.nonzero(mask[0])[0]), 0.0)
    assert view["blocks.0.attn.pattern"].shape[-1] == 4
    alone = DynamicCache(config=llama.model.config)
    run_with_cache(llama, short, cache=alone, hooks=False)
    ref = run_with_cache(llama, [1], cache=alone)
    torch.testing.assert_close(view["blocks.0.attn.pattern"], ref["blocks.0.attn.pattern"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(view["logits"], ref["logits"], atol=1e-5, rtol=1e-5)


def test_a_closed_generator_frees_its_row(llama):
    gen = iter(start(llama, PROMPTS[1], Settings(temperature=0.0, max_new_tokens=40, chat=False)))
    next(gen)
    next(gen)
    gen.close()  # (a page closed mid-generation: Gradio drops its generator)
    assert batching.wait_idle(llama, 10)
    assert batching.status(llama) == {"rows": 0, "joining": 0}


def test_a_failing_pass_reaches_every_row_and_the_loop_goes_on(llama, monkeypatch):
    real = batching.run_with_cache
    calls = {"n": 0}

    def flaky(lm, ids, **kw):
        if kw.get("attention_mask") is not None or (len(ids) == 1 and isinstance(ids[0], list)):  # the loop's passes
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("out of memory (simulated)")
        return real(lm, ids, **kw)

    monkeypatch.setattr(batching, "run_with_cache", flaky)
    with pytest.raises(RuntimeError, match="simulated"):
        list(start(llama, PROMPTS[0], Settings(temperature=0.0, max_new_tokens=10, chat=False)))
    assert batching.wait_idle(llama, 10)
    assert len(list(start(llama, PROMPTS[0], Settings(temperature=0.0, max_new_tokens=5, chat=False)))) == 5


def test_batching_off_runs_alone(llama, monkeypatch):
    monkeypatch.setenv("LLM_VIZ_BATCH", "0")
    out = _together(llama, [(p, Settings(temperature=0.0, max_new_tokens=6, chat=False)) for p in PROMPTS], batched=False)
    assert all(s.batch_rows == 1 for st in out.values() for s in st)
    assert "_decoder" not in llama.__dict__


def test_a_sliding_window_model_runs_alone():
    cfg = tiny.config("mistral", ctx=128)
    cfg.sliding_window = 4
    from transformers import AutoModelForCausalLM

    from pipeline.loading import prepare

    torch.manual_seed(0)
    lm = prepare(AutoModelForCausalLM.from_config(cfg, attn_implementation="eager"), tiny.tokenizer(), model_id="tiny-sw", source="config")
    out = _together(lm, [(p, Settings(temperature=0.0, max_new_tokens=6, chat=False)) for p in PROMPTS], batched=False)
    assert all(s.batch_rows == 1 for st in out.values() for s in st)
    assert "_decoder" not in lm.__dict__ or batching.status(lm)["rows"] == 0


def test_a_row_whose_page_stops_reading_is_parked_then_goes_on_exactly(llama):
    """Stop, or a tab closed but not yet collected: its generator is not read. After AHEAD unread records its row
    leaves the batch (no passes for nobody); read again, it comes back and writes what an unbroken run writes."""
    s = Settings(temperature=0.0, max_new_tokens=30, chat=False)
    whole = [x.token_id for x in start(llama, PROMPTS[0], s)]
    gen = iter(start(llama, PROMPTS[0], s))
    first = [next(gen).token_id, next(gen).token_id]
    assert batching.wait_idle(llama, 10), "a row nobody reads stays in the batch"
    rest = [x.token_id for x in gen]
    assert first + rest == whole and len(whole) == 30


def test_the_compute_panel_says_a_step_ran_with_others(llama):
    import dataclasses

    from pipeline.inside.accounting import accounting, param_counts
    from pipeline.trace.inside import MachineInfo
    from viz.inside.compute import accounting_html

    params, machine = param_counts(llama), MachineInfo(memory_gb_s=10.0, matmul_gflop_s=50.0, threads=2)
    alone = list(start(llama, PROMPTS[0], Settings(temperature=0.0, max_new_tokens=2, chat=False)))[1]
    assert alone.batch_rows == 1
    assert "visitors at once" not in accounting_html(accounting(llama.info, params, alone, machine), machine, params)
    three = dataclasses.replace(alone, batch_rows=3)  # (the loop records it: test_rows_of_different_lengths_...)
    three_acc = accounting(llama.info, params, three, machine)
    html = accounting_html(three_acc, machine, params)
    assert "3 visitors at once" in html and "2 others" in html
    floor = max(three_acc.memory_bound_ms, three_acc.compute_bound_ms)
    assert f"{three.ms / 3 / floor:.1f}× that floor" in html  # (each visitor's share of the pass, against one token's floor)
