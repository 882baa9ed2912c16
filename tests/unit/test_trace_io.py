"""The trace file (pipeline.trace.files): /2 round trips (exact float32, attention within 5e-4),
/1 still read, gzip by name and by content, clear errors for damaged files, and a codec driven
by the dataclass fields (a new field travels with no codec change)."""
import base64
import dataclasses
import gzip
import json
import types
import typing
from pathlib import Path

import numpy as np
import pytest

from pipeline.inside import analyses as inside
from pipeline.sampling import rest
from pipeline.trace import arrays as trace_arrays
from pipeline.trace import files as trace_io
from pipeline.errors import TraceFormatError
from pipeline.generate import start
from pipeline.trace.records import SCHEMA, Settings, StepRecord, Trace
from tests import tiny
from scripts import trace_v1_writer as v1
from tests.helpers import records_equal

ROOT = Path(__file__).resolve().parents[2]
HALF_ATOL = 5e-4
ATOL = {"attention": HALF_ATOL, "attention_matrix": HALF_ATOL}


@pytest.fixture(scope="module")
def trace():
    """A real traced generation on a tiny llama, with the logit lens and the other extras."""
    lm = tiny.loaded("llama", ctx=128)
    gen = start(lm, "The quick brown fox", Settings(temperature=0.8, top_p=0.9, seed=1, max_new_tokens=5))
    list(gen)
    return inside.with_inside(lm, gen.trace())


def slim(t: Trace, *, summarised: bool = True) -> Trace:
    """What a trace written without `full` holds: no full-vocabulary logits, embeddings, hidden states; the rest of the
    vocabulary summarised from the logits instead (a generated step has none in memory: made as it is written; the /1
    writer never wrote it: `summarised` False)."""
    return dataclasses.replace(t, steps=tuple(dataclasses.replace(s, logits=None, embedding=None, hidden=None,
                                                                  rest=rest.of_step(s) if summarised else s.rest) for s in t.steps))


def test_full_round_trip_is_exact(trace):
    assert trace.steps[0].logits is not None and trace.steps[0].attention_matrix is not None
    assert records_equal(trace_io.loads(trace_io.dumps(trace, full=True)), trace)


def test_round_trip_is_exact_but_for_float16_attention(trace):
    assert all(s.rest is None and s.logits is not None for s in trace.steps)  # (a generation leaves the summary to the writer)
    back = trace_io.loads(trace_io.dumps(trace))
    assert all(rest.usable(s.rest, 1.0) for s in back.steps)
    assert records_equal(back, slim(trace), atol=ATOL)
    errs = [np.abs(b.attention - a.attention).max() for a, b in zip(trace.steps, back.steps)]
    errs.append(np.abs(back.steps[0].attention_matrix - trace.steps[0].attention_matrix).max())
    assert 0 < max(errs) < HALF_ATOL  # really float16, and close
    assert back.steps[0].attention.dtype == np.float32
    assert not records_equal(back, slim(trace))  # the tolerance above is what made it pass
    for a, b in zip(trace.steps, back.steps):  # everything that is not attention is exact
        assert np.array_equal(a.top_logits, b.top_logits) and np.array_equal(a.top_probs, b.top_probs)
        assert a.logsumexp == b.logsumexp and a.ms == b.ms and a.context_ids == b.context_ids


def test_arrays_are_documented_base64_objects(trace):
    """Read the JSON by hand, as another language would, following docs/TRACE_FORMAT.md."""
    d = json.loads(trace_io.dumps(trace))
    s0, s1 = d["steps"][0], d["steps"][1]
    att = s1["attention"]
    assert att["dtype"] == "float16" and att["shape"] == list(trace.steps[1].attention.shape)
    got = np.frombuffer(base64.b64decode(att["data"]), "<f2").reshape(att["shape"])
    np.testing.assert_allclose(got, trace.steps[1].attention, atol=HALF_ATOL, rtol=0)
    lg = s1["top_logits"]
    assert lg["dtype"] == "float32" and np.array_equal(np.frombuffer(base64.b64decode(lg["data"]), "<f4"), trace.steps[1].top_logits)
    m = s0["attention_matrix"]  # the causal prefill matrix: lower triangle only
    L, H, T, _ = m["shape"]
    assert m["layout"] == "tril" and len(base64.b64decode(m["data"])) == L * H * T * (T + 1) // 2 * 2
    rows = np.frombuffer(base64.b64decode(m["data"]), "<f2").reshape(L, H, -1)
    q, k = np.tril_indices(T)
    np.testing.assert_allclose(rows, trace.steps[0].attention_matrix[:, :, q, k], atol=HALF_ATOL, rtol=0)
    assert s1["attention_matrix"] is None  # a decode step's
    assert "context_ids" not in s1 and "logits" not in s1 and "forced" not in s1
    assert d["prompt"]["piece_bytes"][-1] == list(trace.prompt.piece_bytes[-1])


def test_float16_is_numpys_cast_bit_for_bit():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        np.linspace(-1e-4, 1e-4, 20001, dtype=np.float32),  # float16 subnormals and their neighbours
        rng.random(10000, dtype=np.float32) ** 8,
        np.float32([2**-25, 3 * 2**-26, 1.5 * 2**-24, 2**-14 * (1 - 2**-12), 2**-14, 1, 65504, 7e4, -7e4, -0.0, np.inf, -np.inf, np.nan]),
    ])
    with np.errstate(over="ignore"):
        assert np.array_equal(trace_arrays._float16(x).view(np.uint16), x.astype(np.float16).view(np.uint16))


def test_every_step_field_is_written_or_derived(trace):
    derived = trace_io.DERIVED[StepRecord]
    assert set(derived) == {"context_ids", "context_pieces"}
    d = trace_io.trace_to_json(trace, full=True)
    for s, sd in zip(trace.steps, d["steps"]):
        for f in dataclasses.fields(StepRecord):
            v = getattr(s, f.name)  # left out: a field at its default of None, False or ()
            empty = any(f.default is e and v is e for e in (None, False)) or (f.default == () and isinstance(v, tuple) and not v)
            assert (f.name in sd) != (f.name in derived or empty), f.name


# -- the codec follows the dataclass fields ------------------------------------------------


def filled(hint, k=0):
    """A value of every field, none of them a default, built from the annotations alone."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return filled(next(a for a in args if a is not type(None)), k)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: filled(hints[f.name], k + 3 * i) for i, f in enumerate(dataclasses.fields(hint)) if f.init})
    if origin is tuple:
        n = 2 if args[-1] is Ellipsis else len(args)
        return tuple(filled(args[0] if args[-1] is Ellipsis else args[j], k + j) for j in range(n))
    if hint is np.ndarray:
        rng = np.random.default_rng(k)
        return rng.random((2, 3), dtype=np.float32) if k % 2 else rng.integers(-9, 2**40, (3,), dtype=np.int64)
    samples = {int: 7 + k, float: 0.1 + k, str: f"é😀<{k}>\n", bool: True, bytes: bytes([k % 256, 0, 255])}
    return samples[hint]


def test_every_field_of_every_record_round_trips():
    t = filled(Trace)
    assert t.speculative is not None and t.rounds[0].residual is not None and t.lens and t.steps[1].forced
    # (the filled values are the codec's test, not a generation: they disagree with each other)
    back = trace_io.loads(trace_io.dumps(t, full=True), check=False)
    assert records_equal(back, t)
    assert records_equal(trace_io.loads(trace_io.dumps(t), check=False), slim(t), atol=ATOL)
    # the filled steps' contexts are not the prompt + earlier tokens: so they are written
    assert "context_ids" in json.loads(trace_io.dumps(t))["steps"][0]


def test_a_new_field_needs_no_codec_change(trace):
    NewStep = dataclasses.make_dataclass(
        "NewStep", [("novel", np.ndarray | None, dataclasses.field(default=None)), ("note", str, dataclasses.field(default=""))],
        bases=(StepRecord,), frozen=True,
    )
    NewTrace = dataclasses.make_dataclass("NewTrace", [("steps", tuple[NewStep, ...])], bases=(Trace,), frozen=True)
    steps = tuple(NewStep(**{f.name: getattr(s, f.name) for f in dataclasses.fields(s)}, novel=np.arange(i + 2, dtype=np.float32), note=f"n{i}")
                  for i, s in enumerate(trace.steps))
    t = NewTrace(**{**{f.name: getattr(trace, f.name) for f in dataclasses.fields(trace)}, "steps": steps})
    d = json.loads(trace_io.dumps(t, full=True))
    assert d["steps"][1]["note"] == "n1" and d["steps"][1]["novel"]["shape"] == [3]
    assert records_equal(trace_io.trace_from_json(d, NewTrace), t)
    for s in d["steps"]:  # a file written before the field existed reads back with the default
        del s["novel"], s["note"]
    old = trace_io.trace_from_json(d, NewTrace)
    assert [s.note for s in old.steps] == [""] * len(steps) and old.steps[0].novel is None


def test_keys_from_a_newer_writer_are_ignored(trace):
    d = trace_io.trace_to_json(trace)
    d["steps"][0]["from_the_future"] = [1, 2]
    d["future_panel"] = {"x": 1}
    assert records_equal(trace_io.trace_from_json(d), trace_io.loads(trace_io.dumps(trace)))


def test_non_finite_scalars_are_strict_json(trace):
    s = dataclasses.replace(trace.steps[1], entropy=float("nan"), logsumexp=float("inf"), ms=-float("inf"))
    t = dataclasses.replace(trace, steps=(trace.steps[0], s), lens=tuple(r for r in trace.lens if r.step < 2))
    text = trace_io.dumps(t)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    b = trace_io.loads(text).steps[1]
    assert np.isnan(b.entropy) and b.logsumexp == float("inf") and b.ms == -float("inf")


# -- files: gzip, /1, errors ---------------------------------------------------------------


def test_gzip_by_name_and_by_content(trace, tmp_path):
    gz, plain = trace_io.save(trace, tmp_path / "t.json.gz"), trace_io.save(trace, tmp_path / "t.json")
    assert gz.read_bytes()[:2] == b"\x1f\x8b" and plain.read_bytes()[:1] == b"{"
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
    assert gz.stat().st_size < plain.stat().st_size
    want = trace_io.load(plain)
    assert records_equal(trace_io.load(gz), want) and records_equal(want, slim(trace), atol=ATOL)
    odd = tmp_path / "named-plain.json"  # a gzip file with a plain name: the content decides
    odd.write_bytes(gz.read_bytes())
    assert records_equal(trace_io.load(odd), want)
    assert records_equal(trace_io.loads(gz.read_bytes()), want) and trace_io.dumps(trace) == plain.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["named-plain.json", "t.json", "t.json.gz"]  # no .part left


def test_v1_traces_still_load(trace):
    assert json.loads(v1.dumps(trace))["schema"] == "llm-pipeline-trace/1" != SCHEMA
    # /1's hand-written field lists never wrote wait_ms, rng_state and rest (added later): they read back empty
    assert any(s.wait_ms for s in trace.steps) and all(s.rng_state for s in trace.steps)
    v1_kept = dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, wait_ms=0.0, rng_state="", rest=None) for s in trace.steps))
    assert records_equal(trace_io.loads(v1.dumps(trace, full=True)), v1_kept)
    assert records_equal(trace_io.loads(gzip.compress(v1.dumps(trace).encode())), slim(v1_kept, summarised=False))


def test_the_shipped_example_trace_loads():
    t = trace_io.load(ROOT / "assets" / "example_trace.json.gz")
    assert t.steps and t.text and t.steps[0].attention_matrix is not None
    assert all(s.context_ids[-1] == p.token_id for s, p in zip(t.steps[1:], t.steps))


def damaged(trace):
    """(what was done to the file, its bytes, words the error must contain)."""
    text = trace_io.dumps(trace)
    gz = gzip.compress(text.encode())

    def edit(fn):
        d = json.loads(text)
        fn(d)
        return json.dumps(d).encode()

    def bad_data(d):
        d["steps"][1]["attention"]["data"] = "not base64!"

    def short_data(d):
        d["steps"][1]["attention"]["data"] = d["steps"][1]["attention"]["data"][:-8]

    return [
        ("cut gzip", gz[: len(gz) // 2], "gzip file is damaged or cut short"),
        ("cut json", text[: len(text) // 2].encode(), "not valid JSON"),
        ("not json", b"\x89PNG\r\n", "not valid JSON"),
        ("other json", b'{"hello": 1}', "not a trace of this app"),
        ("newer", edit(lambda d: d.update(schema="llm-pipeline-trace/9")), "newer version"),
        ("base64", edit(bad_data), "steps[1].attention"),
        ("length", edit(short_data), "steps[1].attention"),
        ("missing", edit(lambda d: d["steps"][2].pop("token_id")), "steps[2].token_id: missing"),
        ("type", edit(lambda d: d["steps"][0].update(position="three")), "steps[0].position: expected int"),
        ("no prompt", edit(lambda d: d.pop("prompt")), "prompt: missing"),
        ("v1 cut", json.dumps({**json.loads(v1.dumps(trace)), "steps": [{}]}).encode(), "damaged or incomplete"),
    ]


def test_a_damaged_file_says_what_to_do(trace):
    for what, data, words in damaged(trace):
        with pytest.raises(TraceFormatError) as e:
            trace_io.loads(data)
        msg = str(e.value)
        assert words in msg and "pick a .json or .json.gz trace" in msg, (what, msg)
