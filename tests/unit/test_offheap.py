"""A finished trace's big arrays move off the heap: the same bytes, read-only, in one mapped file."""
import numpy as np
import pytest

from pipeline.offheap import FIELDS, is_off_heap, move_off_heap
from tests.helpers import records_equal
from tests.synthetic import make_trace


def _copy_arrays(trace):
    return [{f: np.array(getattr(s, f)) for f in FIELDS if getattr(s, f) is not None} for s in trace.steps]


def test_the_arrays_move_bit_for_bit_and_only_once(tmp_path):
    trace = make_trace(n_steps=6, prompt_len=20, vocab=3000)
    before = _copy_arrays(trace)
    moved = move_off_heap(trace, folder=str(tmp_path))
    assert moved >= sum(a.nbytes for d in before for a in d.values() if a.nbytes >= 4096) > 0
    assert list(tmp_path.iterdir()) == []  # the file has no name: it goes with the last view
    for s, d in zip(trace.steps, before):
        for f, a in d.items():
            got = getattr(s, f)
            assert got.dtype == a.dtype and got.shape == a.shape and np.array_equal(got, a)
            if a.nbytes >= 4096:
                assert is_off_heap(got) and not got.flags.writeable
    assert move_off_heap(trace, folder=str(tmp_path)) == 0  # nothing left to move


def test_a_moved_trace_saves_and_reads_back_the_same(tmp_path):
    from pipeline.trace import files as trace_io

    trace = make_trace(n_steps=4, prompt_len=12, vocab=2000)
    path = trace_io.save(trace, tmp_path / "before.json.gz")
    move_off_heap(trace)
    again = trace_io.save(trace, tmp_path / "after.json.gz")
    assert records_equal(trace_io.load(path), trace_io.load(again))
    with pytest.raises(ValueError):
        trace.steps[0].logits[0] = 1.0  # read-only: nothing can change a moved number


def test_a_moved_trace_goes_on_as_the_page_does_after_a_run():
    """The app moves a trace once its run ends; +1 token, re-sample and a branch then go on from it
    and write what they write from a trace never moved."""
    from pipeline.continuation import continue_generation
    from pipeline.generate import start
    from pipeline.trace.records import Settings
    from tests import tiny

    lm = tiny.loaded("llama", ctx=128)
    settings = Settings(temperature=1.0, seed=5, max_new_tokens=6, chat=False)

    def run():
        gen = start(lm, "The quick brown fox", settings)
        list(gen)
        return gen.trace()

    def go_on(trace, **kw):
        gen = continue_generation(lm, trace, settings, n_new=3, **kw)
        list(gen)
        return [s.token_id for s in gen.trace().steps]

    plain, moved = run(), run()
    assert move_off_heap(moved, min_bytes=0) > 0
    for kw in ({"start_step": None}, {"start_step": 2}, {"start_step": 1, "force_rank": 2}):
        assert go_on(moved, **kw) == go_on(plain, **kw), kw
