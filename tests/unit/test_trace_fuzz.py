"""The trace reader against hostile and damaged files (pipeline.trace.files, trace_bounds, trace_check).

A file anyone can load on a public Space must end as a Trace or a TraceFormatError, never another
exception, and never ask for more memory than a bounded multiple of its size. Thousands of mutated
real traces (a tiny model's, a speculative one, a /1 file and a saved gallery trace from the real
model): bytes flipped, cut short, fields removed, types swapped, numbers extreme or NaN, array shapes
lying (with data that matches the lie). Every mutant the reader accepts is then drawn as the page
draws a loaded trace, so an accepted file cannot break a panel either. Seeded: a failure names the
seed and mutation, and replays.
"""
from __future__ import annotations

import base64
import gzip
import json
import random
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from pipeline.inside import analyses as inside
from pipeline.trace import bounds as trace_bounds
from pipeline.trace import files as trace_io
from pipeline.errors import TraceFormatError
from pipeline.generate import start
from pipeline.trace.records import Settings, Trace
from pipeline.speculative.decoding import start_speculative
from tests import tiny
from scripts import trace_v1_writer as v1
from viz import page
from viz.viewer.bundle import viewer_bundle

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20
EXTREMES = [None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 10**40, 1e308, -1e308, 5e-324, -0.0, 0.5, "NaN", "Infinity",
            "-Infinity", "", "x" * 60, "\ud800", "<img src=x onerror=alert(1)>", [], {}, [[]], [None], {"a": 1}, [0, 0, 0]]


@pytest.fixture(scope="module")
def originals() -> dict[str, dict]:
    """Parsed JSON of real traces of several kinds: each mutation starts from one of them."""
    lm = tiny.loaded("llama", ctx=128)
    gen = start(lm, "The quick brown fox", Settings(temperature=0.8, top_p=0.9, seed=1, max_new_tokens=5))
    list(gen)
    plain = inside.with_inside(lm, gen.trace())
    spec = start_speculative(lm, "a b a b a b a", Settings(temperature=0, max_new_tokens=6), k=3, draft="ngram")
    list(spec)
    gallery = json.loads(gzip.decompress((ROOT / "assets/gallery/flat.json.gz").read_bytes()))
    return {"tiny-full": trace_io.trace_to_json(plain, full=True), "tiny": trace_io.trace_to_json(plain),
            "speculative": trace_io.trace_to_json(spec.trace()), "v1": json.loads(v1.dumps(plain)), "gallery": gallery}


def read(data: bytes | str, what: str) -> Trace | None:
    """The reader's answer: a Trace, or None for a TraceFormatError; anything else fails the test."""
    try:
        return trace_io.loads(data)
    except TraceFormatError as e:
        assert str(e) and "\n" not in str(e), (what, str(e))
        return None
    except Exception as e:  # noqa: BLE001  (the point of the test: no other exception escapes)
        pytest.fail(f"{what}: {type(e).__name__}: {e}")


def draw(trace: Trace, what: str) -> None:
    """What the page does with a loaded trace: every panel of its last and first step, and the viewer bundle."""
    if not trace.steps:
        return
    s = trace.settings
    try:
        for step in (len(trace.steps) - 1, 0):
            page.render(trace, step=step, layer=0, head="all", temperature=s.temperature, top_k=s.top_k, top_p=s.top_p)
        viewer_bundle(trace, layer=0, head=None, max_frames=8)
        page.speculative_summary_html(trace)
        page.model_markdown(trace.model, loaded_from_file=True)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"{what}: accepted by the reader, but drawing it raised {type(e).__name__}: {e}")


# -- JSON-level mutations -------------------------------------------------------------------


def paths(node, path=()):
    """Every (path) into a parsed trace, an array object's base64 text left whole."""
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "data":
                yield from paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:12]):  # (the first items of a long list stand for the rest)
            yield from paths(v, path + (i,))


def at(node, path):
    for k in path:
        node = node[k]
    return node


def lie_about_shape(a: dict, rng: random.Random) -> dict:
    """An array object whose shape is changed, its data often made to match the new shape."""
    shape = list(a["shape"])
    how = rng.choice(["grow", "shrink", "drop", "add", "swap", "zero", "huge", "tril", "dtype"])
    if how in ("grow", "shrink") and shape:
        i = rng.randrange(len(shape))
        shape[i] = max(0, shape[i] + (1 if how == "grow" else -1))
    elif how == "drop" and shape:
        shape.pop(rng.randrange(len(shape)))
    elif how == "add":
        shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2, 3]))
    elif how == "swap" and len(shape) > 1:
        shape.reverse()
    elif how == "zero":
        shape = [0] + [100_000] * rng.choice([1, 2, 3])
    elif how == "huge":
        shape = [2**40] * rng.choice([1, 2])
    out = {**a, "shape": shape}
    if how == "tril":
        out["layout"] = "tril"
    if how == "dtype":
        out["dtype"] = rng.choice(["int64", "float64", "uint8", "bool", "complex64", "object"])
    if rng.random() < 0.6 and how not in ("zero", "huge"):  # data matching the lie, so only the checks can tell
        dt = np.dtype(out["dtype"] if out["dtype"] in trace_io.DTYPES else "float32")
        n = int(np.prod(shape)) if out.get("layout") != "tril" or len(shape) < 2 else int(np.prod(shape[:-2])) * shape[-1] * (shape[-1] + 1) // 2
        vals = np.array([rng.choice([0, 1, -1, np.nan, np.inf, 3e38, 7]) for _ in range(min(n, 64))] * (n // 64 + 1))[:n]
        out["data"] = base64.b64encode(vals.astype(dt).astype(dt.newbyteorder("<")).tobytes()).decode()
    return out


def mutate(d: dict, path: tuple, rng: random.Random) -> tuple[str, object]:
    """One mutation of `d` at `path`, in place: its description, and the value to put back."""
    parent, key = at(d, path[:-1]), path[-1]
    v = parent[key]
    r = rng.random()
    if isinstance(v, dict) and {"dtype", "shape", "data"} <= v.keys() and r < 0.7:
        parent[key] = lie_about_shape(v, rng)
        return f"shape lie at {path}: {parent[key]['shape']} {parent[key].get('layout', '')} {parent[key]['dtype']}", v
    if r < 0.2 and isinstance(parent, dict):
        del parent[key]
        return f"removed {path}", v
    if r < 0.3 and isinstance(v, list) and v:
        parent[key] = rng.choice([v[:-1], v + v[-1:], v[::-1], v[: len(v) // 2]])
        return f"list edited at {path}", v
    if r < 0.5 and isinstance(v, (int, float)) and not isinstance(v, bool):
        parent[key] = rng.choice([-v, v + 1, v - 1, v * 1e6, v * 10**30, float("nan"), 2**31])
        return f"number {v!r} changed at {path}", v
    parent[key] = rng.choice(EXTREMES)
    return f"{path} set to {parent[key]!r:.40}", v


def json_mutants(originals: dict, n: int, seed: int):
    """(description, JSON text) of n mutants, each one mutation of one original (put back after)."""
    rng = random.Random(seed)
    names = sorted(originals)
    where = {k: list(paths(d))[1:] for k, d in originals.items()}
    for i in range(n):
        name = names[i % len(names)]
        d, path = originals[name], rng.choice(where[name])
        how, old = mutate(d, path, rng)
        text = json.dumps(d, allow_nan=True)
        at(d, path[:-1])[path[-1]] = old
        yield f"seed {seed}, mutant {i} of {name}: {how}", text


def test_thousands_of_mutated_traces_load_or_say_why(originals):
    accepted, refused, drawn = 0, 0, 0
    for what, text in json_mutants(originals, 2000, seed=23):
        t = read(text.encode(), what)
        if t is None:
            refused += 1
            continue
        accepted += 1
        if drawn < 40 and "gallery" not in what:  # drawing is the slow part: the first 40 small ones
            draw(t, what)
            drawn += 1
    # the mutations really reach both outcomes (a reader that refused or accepted everything fails)
    assert refused > 800 and accepted > 250 and drawn == 40, (accepted, refused, drawn)


def test_bytes_flipped_cut_or_added_load_or_say_why(originals):
    rng = random.Random(2323)
    text = json.dumps(originals["tiny"]).encode()
    gz = gzip.compress(text, mtime=0)
    for i in range(1500):
        base = gz if i % 2 else text
        b = bytearray(base)
        how = rng.choice(["flip", "cut", "insert", "append"])
        if how == "flip":
            for _ in range(rng.choice([1, 2, 8])):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif how == "cut":
            del b[rng.randrange(len(b)):]
        elif how == "insert":
            p = rng.randrange(len(b))
            b[p:p] = rng.choice([b"[[[[", b'"', b"\x00\xff", b"}", b"\\u0000", b"1e999"])
        else:
            b += rng.choice([b"garbage", gz[:20], gz])
        what = f"seed 2323, mutant {i}: {how} in the {'gzip' if base is gz else 'JSON'} file"
        t = read(bytes(b), what)
        if t is not None and rng.random() < 0.05:
            draw(t, what)


# -- files that ask for too much ------------------------------------------------------------


def gzip_bomb(gigabytes: int) -> bytes:
    """A few MB of gzip members, each 100 MB of zeros once inflated."""
    member = gzip.compress(b"\0" * (100 * MB), compresslevel=9, mtime=0)
    return member * (10 * gigabytes)


def peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_is_refused_within_a_bounded_memory():
    bomb = gzip_bomb(3)  # ~3 MB asking for 3 GB
    assert len(bomb) < 4 * MB
    with pytest.raises(TraceFormatError, match="inflates to more than"):
        trace_io.loads(bomb)
    peak = peak_mb(lambda: pytest.raises(TraceFormatError, trace_io.loads, bomb))
    limit = trace_bounds.json_limit(len(bomb))
    assert limit <= 40 * MB and peak < (limit + 4 * len(bomb)) / MB, peak


def test_a_real_trace_is_far_below_the_gzip_bound():
    for f in sorted((ROOT / "assets/gallery").glob("*.json.gz")) + [ROOT / "assets/example_trace.json.gz"]:
        data = f.read_bytes()
        assert len(gzip.decompress(data)) < trace_bounds.GZIP_MAX_RATIO / 4 * len(data), f


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 5000)
    monkeypatch.setattr(trace_bounds, "MAX_FILE_BYTES", 4096)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read before the size was checked"))
    with pytest.raises(TraceFormatError, match="more than the 4096 bytes this app reads.*LLM_VIZ_MAX_TRACE_MB"):
        trace_io.load(f)


@pytest.mark.parametrize("text, words", [
    ('{"schema": "llm-pipeline-trace/2", "prompt": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    ('{"schema": "llm-pipeline-trace/2", "prompt": 1' + "0" * 5000 + "}", "not valid JSON"),
    ('{"schema": "llm-pipeline-trace/2", "prompt": {}, "steps": [' + "{}," * 9000 + "{}]}", "more than the 8192"),
    ("\ud800", "not valid JSON"),
])
def test_json_that_would_break_the_parser_is_refused(text, words):
    with pytest.raises(TraceFormatError, match=words):
        trace_io.loads(text.encode("utf-8", "surrogatepass"))


def test_an_empty_array_of_huge_triangles_costs_nothing(originals):
    d = json.loads(json.dumps(originals["tiny"]))
    d["steps"][0]["attention_matrix"] = {"dtype": "float16", "shape": [0, 16384, 16384], "layout": "tril", "data": ""}
    assert peak_mb(lambda: read(json.dumps(d), "empty tril")) < 64
    d["steps"][0]["attention_matrix"]["shape"] = [0, 10**9, 10**9]
    assert read(json.dumps(d), "tril beyond the bound") is None


def test_gunzip_reads_several_members_and_stops_at_its_limit():
    data = gzip.compress(b"ab", mtime=0) + gzip.compress(b"cd", mtime=0)
    assert bytes(trace_bounds.gunzip(data, 4)) == b"abcd"
    with pytest.raises(TraceFormatError, match="inflates to more than"):
        trace_bounds.gunzip(data, 3)
    with pytest.raises(TraceFormatError, match="cut short"):
        trace_bounds.gunzip(data[:-3], 100)
    with pytest.raises(TraceFormatError, match="cut short"):
        trace_bounds.gunzip(zlib.compress(b"x"), 100)
