"""Continuations ("+1 token", re-sample, branch) write what one longer run writes."""
import numpy as np
import pytest

from pipeline.continuation import continue_generation
from pipeline.errors import SettingsError
from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def llama():
    return tiny.loaded("llama", ctx=128)


def _run(lm, settings):
    gen = start(lm, PROMPT, settings)
    list(gen)
    return gen.trace()


def _one_at_a_time(lm, settings, n):
    trace = _run(lm, Settings(**{**settings.__dict__, "max_new_tokens": 1}))
    while len(trace.steps) < n and trace.steps[-1].stop_reason != "eos":
        gen = continue_generation(lm, trace, settings, n_new=1)
        list(gen)
        trace = gen.trace()
    return trace


def _split_characters(lm, trace) -> int:
    """Steps that released no text though they were not the end: a character split across tokens."""
    return sum(1 for s in trace.steps if s.text == "" and s.stop_reason is None)


@pytest.mark.parametrize("temperature,seed", [(0.0, 0), (1.0, 3), (1.3, 11)])
def test_plus_one_token_n_times_writes_what_generate_n_writes(llama, temperature, seed):
    n = 14
    settings = Settings(temperature=temperature, seed=seed, max_new_tokens=n, chat=False)
    whole = _run(llama, settings)
    stepped = _one_at_a_time(llama, settings, n)
    assert [s.token_id for s in stepped.steps] == [s.token_id for s in whole.steps]
    assert stepped.text == whole.text
    assert [s.text for s in stepped.steps] == [s.text for s in whole.steps]
    # only the last step says why generation stopped
    assert [s.stop_reason for s in stepped.steps[:-1]] == [None] * (len(stepped.steps) - 1)
    assert stepped.steps[-1].stop_reason == whole.steps[-1].stop_reason
    assert [s.rng_state for s in stepped.steps] == [s.rng_state for s in whole.steps]
    assert stepped.segments == () and stepped.settings == whole.settings


def test_a_split_character_is_not_shown_as_a_replacement_and_repeated(llama):
    # random byte-level weights: sampling at a high temperature emits partial UTF-8 sequences
    for seed in range(40):
        settings = Settings(temperature=2.0, seed=seed, max_new_tokens=12, chat=False)
        whole = _run(llama, settings)
        if _split_characters(llama, whole):
            break
    else:
        pytest.fail("no seed split a character: the test lost its power")
    stepped = _one_at_a_time(llama, settings, 12)
    assert stepped.text == whole.text == llama.tokens.decode([s.token_id for s in whole.steps if s.stop_reason != "eos"])


def test_other_settings_are_a_segment_not_the_traces_settings(llama):
    first = _run(llama, Settings(temperature=0.0, max_new_tokens=3, chat=False))
    hot = Settings(temperature=1.5, top_k=20, seed=7, max_new_tokens=64, chat=True)
    gen = continue_generation(llama, first, hot, n_new=2)
    list(gen)
    trace = gen.trace()
    assert trace.settings == first.settings  # what steps 0-2 were made with
    assert [(sg.first_step, sg.settings.temperature, sg.settings.top_k) for sg in trace.segments] == [(3, 1.5, 20)]
    assert trace.settings_at(2).temperature == 0.0 and trace.settings_at(3).temperature == 1.5
    assert trace.segments[0].settings.chat is False  # the prompt's own mode, not the slider's
    temps = [{sr.name: sr.param for sr in st.stages}["temperature"] for st in trace.steps]
    assert temps == [0.0] * 3 + [1.5] * 2  # the stages each step really ran
    # re-sampling from before the segment with the first settings drops it
    again = continue_generation(llama, trace, first.settings, n_new=4, start_step=2)
    list(again)
    assert again.trace().segments == ()


def test_resample_with_the_same_seed_repeats_and_with_another_differs(llama):
    settings = Settings(temperature=1.5, seed=5, max_new_tokens=10, chat=False)
    whole = _run(llama, settings)
    same = continue_generation(llama, whole, settings, n_new=6, start_step=4)
    assert [s.token_id for s in same] == [s.token_id for s in whole.steps[4:10]]
    tokens = {tuple(s.token_id for s in continue_generation(llama, whole, Settings(temperature=1.5, seed=sd, chat=False), n_new=6,
                                                          start_step=4)) for sd in range(6, 12)}
    assert len(tokens) > 1


def test_branch_forces_the_candidate_and_refuses_what_it_cannot_do(llama):
    whole = _run(llama, Settings(temperature=0.0, max_new_tokens=6, chat=False))
    gen = continue_generation(llama, whole, whole.settings, n_new=3, start_step=2, force_rank=1)
    new = list(gen)
    trace = gen.trace()
    assert trace.steps[2].forced and trace.steps[2].token_id == int(whole.steps[2].top_ids[1])
    assert trace.steps[:2] == whole.steps[:2]
    assert [s.index for s in new] == [3, 4, 5] and trace.steps[-1].stop_reason is not None
    with pytest.raises(SettingsError, match="already chose"):
        continue_generation(llama, whole, whole.settings, n_new=1, start_step=2, force_rank=0)
    with pytest.raises(SettingsError, match="candidate bars"):
        continue_generation(llama, whole, whole.settings, n_new=1, start_step=2, force_rank=10_000)
    other = tiny.loaded("qwen2", ctx=128)
    with pytest.raises(SettingsError, match="not by the loaded model"):
        continue_generation(other, whole, whole.settings, n_new=1)
    with pytest.raises(SettingsError, match="Generate first"):
        continue_generation(llama, None, whole.settings, n_new=1)


def test_nothing_follows_an_end_of_sequence(llama):
    whole = _run(llama, Settings(temperature=0.0, max_new_tokens=8, chat=False))
    eos = llama.tokenizer.convert_tokens_to_ids("<|im_end|>")
    where = [(s.index, np.flatnonzero(np.asarray(s.top_ids) == eos)) for s in whole.steps]
    step, ranks = next((i, r) for i, r in where if r.size)  # the end token among a step's top 100 of 384 ids
    gen = continue_generation(llama, whole, whole.settings, n_new=3, start_step=step, force_rank=int(ranks[0]))
    assert list(gen) == [] and gen.trace().steps[-1].stop_reason == "eos"
    with pytest.raises(SettingsError, match="end of sequence"):
        continue_generation(llama, gen.trace(), whole.settings, n_new=1)


def test_a_saved_trace_can_be_continued_as_if_never_saved(llama, tmp_path):
    from pipeline.trace import files as trace_io

    settings = Settings(temperature=1.2, seed=9, max_new_tokens=10, chat=False)
    whole = _run(llama, settings)
    first = _run(llama, Settings(**{**settings.__dict__, "max_new_tokens": 4}))
    hot = continue_generation(llama, first, Settings(**{**settings.__dict__, "top_k": 50}), n_new=2)
    list(hot)
    path = tmp_path / "t.json.gz"
    trace_io.save(hot.trace(), path)
    back = trace_io.load(path)
    assert back.segments == hot.trace().segments and back.segments[0].settings.top_k == 50
    assert [s.rng_state for s in back.steps] == [s.rng_state for s in hot.trace().steps]
    saved = trace_io.load(_save(trace_io, first, tmp_path / "first.json.gz"))
    gen = continue_generation(llama, saved, settings, n_new=6)
    list(gen)
    assert [s.token_id for s in gen.trace().steps] == [s.token_id for s in whole.steps]


def _save(trace_io, trace, path):
    trace_io.save(trace, path)
    return path
