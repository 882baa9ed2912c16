"""What the page does besides drawing, on tiny random models: the lens cache (ui/inside/lens_cache.py), the
download file (ui/downloads.py), the speed measurement (ui/speed.py), the swap demo's default (ui/inside/data.py),
the page's fields as Settings (ui/run_inputs.py), an error as a sentence (ui/messages.py), known weights (ui/model_match.py)."""
from dataclasses import replace

import numpy as np
import pytest

from pipeline.inside import analyses as inside
from pipeline.trace import files as trace_io
from pipeline.errors import SettingsError
from pipeline.generate import start
from pipeline.trace.records import Settings
from tests.helpers import records_equal
from pipeline.speculative.decoding import start_speculative
from ui import downloads, messages, model_match, run_inputs
from ui.inside import data as inside_data
from ui.inside import lens_cache
from ui.speed import speed_against_plain
from tests import tiny

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


@pytest.fixture(scope="module")
def trace(lm):
    gen = start(lm, PROMPT, Settings(temperature=0, max_new_tokens=4))
    for _ in gen:
        pass
    return gen.trace()


def other_model(trace):
    return replace(trace, model=replace(trace.model, id="another-model"))


# -- the lens cache ------------------------------------------------------------------------------
def test_the_lens_is_the_models_own_and_computed_once_per_step(lm, trace):
    cache = lens_cache.LensCache()
    st = trace.steps[2]
    rec = cache.get(lm, trace, st)
    assert records_equal(rec, inside.logit_lens(lm, st))
    assert cache.get(lm, trace, st) is rec and cache.computed == 1
    # another trace with the same step (same context and token) shares it
    assert cache.get(lm, replace(trace, steps=trace.steps[:3]), st) is rec and cache.computed == 1


def test_the_lens_of_a_trace_that_carries_it_is_read_not_computed(lm, trace):
    cache = lens_cache.LensCache()
    mark = replace(inside.logit_lens(lm, trace.steps[1]), top_pieces=(("MARK",),))
    t = replace(trace, lens=(mark,))
    assert cache.get(lm, t, trace.steps[1]) is mark and cache.computed == 0


def test_no_lens_without_the_model_that_made_the_trace_or_its_hidden_states(lm, trace):
    cache = lens_cache.LensCache()
    assert cache.get(lm, other_model(trace), trace.steps[0]) is None
    assert cache.get(None, trace, trace.steps[0]) is None
    assert cache.get(lm, trace, replace(trace.steps[0], hidden=None)) is None
    assert cache.computed == 0


def test_the_lens_cache_keeps_the_last_few(lm, trace):
    cache = lens_cache.LensCache(size=2)
    for st in trace.steps:
        cache.get(lm, trace, st)
    assert len(cache) == 2 and cache.computed == len(trace.steps)
    cache.get(lm, trace, trace.steps[-1])  # the newest is still there
    assert cache.computed == len(trace.steps)


# -- the download --------------------------------------------------------------------------------
def _read(path):
    assert path.read_bytes()[:2] == b"\x1f\x8b"  # gzip
    return trace_io.load(path)


def test_the_download_carries_the_lens_of_every_step_and_replaces_the_last_file(lm, trace, tmp_path):
    cache = lens_cache.LensCache()
    first = downloads.write_download(lm, trace, tmp_path, cache)
    assert first.name.startswith("trace-") and first.name.endswith(".json.gz")
    back = _read(first)
    assert [r.step for r in back.lens] == [s.index for s in trace.steps]
    assert back.params is not None and back.machine is not None and back.text == trace.text
    assert np.allclose(back.lens[-1].chosen_probs, inside.logit_lens(lm, trace.steps[-1]).chosen_probs)
    assert cache.computed == len(trace.steps)
    (tmp_path / "trace-old.json").write_text("{}")
    second = downloads.write_download(lm, trace, tmp_path, cache)
    assert list(tmp_path.iterdir()) == [second]  # one file per session folder
    assert cache.computed == len(trace.steps)  # the lens came from the cache the second time


def test_a_download_without_the_lens_has_everything_else(lm, trace, tmp_path):
    """/trace's lens=false: no lens computed, everything else kept; opened again, it has none to show (no hidden states)."""
    cache = lens_cache.LensCache()
    back = _read(downloads.write_download(lm, trace, tmp_path, cache, lens=False))
    assert back.lens == () and cache.computed == 0
    assert back.params is not None and back.machine is not None and back.text == trace.text
    assert back.steps[-1].hidden is None and lens_cache.LensCache().get(lm, back, back.steps[-1]) is None  # (ui/inside/tabs.py: its note)
    with_lens = _read(downloads.write_download(lm, trace, tmp_path, cache))
    assert len(with_lens.lens) == len(trace.steps) and [s.token_id for s in back.steps] == [s.token_id for s in with_lens.steps]


def test_files_written_at_once_are_made_one_at_a_time(lm, trace, tmp_path, monkeypatch):
    """A class's runs end at one tick: their files are made one after another (downloads.WRITING), not all at once
    (which took the cores from the decode loop); each still lands in its own folder."""
    import threading
    import time

    inside_now, most = [0], [0]
    save = trace_io.save

    def counted(*a, **k):
        inside_now[0] += 1
        most[0] = max(most[0], inside_now[0])
        time.sleep(0.05)  # (long enough for the other threads to arrive while this one writes)
        try:
            return save(*a, **k)
        finally:
            inside_now[0] -= 1

    monkeypatch.setattr(trace_io, "save", counted)
    paths = {}
    threads = [threading.Thread(target=lambda i=i: paths.update({i: downloads.write_download(lm, trace, tmp_path / f"s{i}", lens=False)}))
               for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert most[0] == 1 and sorted(paths) == [0, 1, 2, 3]
    assert all(_read(p).text == trace.text and p.parent == tmp_path / f"s{i}" for i, p in paths.items())


def test_a_trace_of_another_model_downloads_as_it_is(lm, trace, tmp_path):
    other = other_model(trace)
    back = _read(downloads.write_download(lm, other, tmp_path))
    assert back.lens == () and back.model.id == "another-model" and back.text == trace.text


def test_nothing_to_download_is_a_settings_error(lm, trace, tmp_path):
    with pytest.raises(SettingsError, match="Generate first"):
        downloads.write_download(lm, replace(trace, steps=()), tmp_path)


# -- the other views -----------------------------------------------------------------------------
def test_accounting_and_position_come_from_the_trace_or_the_model_that_made_it(lm, trace):
    recs, machine, params = inside_data.accounting_for(lm, trace)
    assert len(recs) == len(trace.steps) and params == trace.params
    bare = replace(other_model(trace), params=None, position=None)
    assert inside_data.accounting_for(lm, bare) is None and inside_data.position_for(lm, bare) is None
    assert records_equal(inside_data.position_for(lm, replace(trace, position=None)), inside.position_info(lm))


def test_the_default_swap_is_the_first_and_last_word_the_person_typed(lm, trace):
    i, j = inside_data.default_swap(trace)
    p = trace.prompt
    typed = [piece.strip() for piece in p.text_pieces if piece.strip().isalpha()]  # the typed text's word tokens
    assert p.pieces[i].strip() == typed[0] == "The" and p.pieces[j].strip() == typed[-1] and i < j
    assert list(p.token_ids[i:j + 1]) == list(p.text_ids)  # within what was typed, not the chat template
    gen = start(lm, "42", Settings(temperature=0, max_new_tokens=1))
    one = replace(trace, prompt=gen.prompt)
    with pytest.raises(SettingsError, match="two word tokens"):
        inside_data.default_swap(one)


def test_speed_against_plain_times_both_runs_alike(lm):
    gen = start_speculative(lm, PROMPT, Settings(temperature=0, max_new_tokens=6), k=2, draft="layers:1")
    for _ in gen:
        pass
    t = gen.trace()
    speed = speed_against_plain(lm, t)
    assert speed["speculative_tok_s"] == pytest.approx(len(t.steps) / (sum(r.ms for r in t.rounds) / 1000))
    assert speed["plain_tok_s"] > 0


def test_the_pages_fields_become_settings_or_a_clear_error():
    s = run_inputs.settings_from_inputs("Raw text", "be brief", 0.7, 40.0, 0.9, 3.0, 16)
    assert s == Settings(temperature=0.7, top_k=40, top_p=0.9, seed=3, max_new_tokens=16, chat=False, system_prompt=None)
    assert run_inputs.settings_from_inputs("Chat", "  ", 1, 0, 1, 0, 8).system_prompt is None
    assert run_inputs.settings_from_inputs("Chat", "be brief", 1, 0, 1, 0, 8).system_prompt == "be brief"
    with pytest.raises(SettingsError, match="not a number"):
        run_inputs.settings_from_inputs("Chat", "", 1, 0, 1, None, 8)


def test_sentence():
    assert messages.sentence(ValueError("the seed is odd")) == "The seed is odd."
    assert messages.sentence(ValueError("really?")) == "Really?"


def test_an_old_trace_of_the_embedded_model_is_named_with_the_loaded_files_precision(lm):
    q4 = "GGUF: matrix weights Q4_1, embedding Q8_0, norms F32; computed in float32 (dequantised at load)"
    emb = replace(lm, info=replace(lm.info, id="SmolLM2-135M-Instruct", source="embedded", weights=q4))
    old = replace(emb.info, weights="")  # a trace written before the weights were recorded
    assert model_match.known_weights(old, emb).weights == q4
    # never a guess: another model, another source, no model loaded, or a trace that says it itself
    assert model_match.known_weights(replace(old, id="other"), emb).weights == ""
    assert model_match.known_weights(old, replace(emb, info=replace(emb.info, source="hub"))).weights == ""
    assert model_match.known_weights(replace(old, source="hub"), emb).weights == ""
    assert model_match.known_weights(old, None).weights == ""
    assert model_match.known_weights(replace(old, weights="float32 safetensors"), emb).weights == "float32 safetensors"


def test_a_resample_or_branch_fills_the_answer_up_to_max_new_tokens(trace):
    n = len(trace.steps)  # 4
    assert run_inputs.tokens_to_make(trace, None, 10) == 10  # Generate
    assert run_inputs.tokens_to_make(trace, {"start_step": None}, 10) == 10  # +1 token passes its own count
    assert run_inputs.tokens_to_make(trace, {"start_step": 2}, 10) == 8  # re-sample from step 2: steps 0, 1 kept
    assert run_inputs.tokens_to_make(trace, {"start_step": 99}, 10) == 10 - n  # (a step past the end: all kept)
    assert run_inputs.tokens_to_make(trace, {"start_step": 2, "force_rank": 1}, 10) == 7  # steps 0, 1 and the forced 2
    assert run_inputs.tokens_to_make(trace, {"start_step": 3}, 2) == 1  # at least one after the fork
    with pytest.raises(SettingsError, match="pick a step"):
        run_inputs.tokens_to_make(trace, {"start_step": "x"}, 10)
