"""The trace file: write `llm-pipeline-trace/2`, read /2 and /1 (docs/TRACE_FORMAT.md).

The codec walks the records' dataclass fields (`dataclasses.fields` and their type
annotations), so a field added to a record, with a default, is written and read with no
change here. A record is a JSON object keyed by field name; a numpy array is an "array
object" {dtype, shape, data: base64 of the little-endian C-order bytes} (pipeline/trace/arrays.py);
bytes are a list of ints 0-255; a tuple is a list. Format decisions that depend on a field live
in the three tables below and nowhere else.

One JSON document, gzip-compressed when the file name ends in ".gz". It is written step by
step to the (gzip) stream, so a long trace never exists as one big string.
"""
from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import math
import os
import types
import typing
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

from pipeline.trace import bounds as trace_bounds
from pipeline.trace import check as trace_check
from pipeline.errors import TRACE_HINT, TraceFormatError
from pipeline.trace.arrays import DTYPES, array_from_object, array_object, damaged  # noqa: F401  (DTYPES: part of the format's API)
from pipeline.trace.records import SCHEMA, SCHEMA_V1, StepRecord, Trace

# Fields a reader rebuilds: a step's context is the prompt followed by the earlier steps'
# tokens. Written only when a step's context is not that (never, for this app's traces).
DERIVED = {StepRecord: ("context_ids", "context_pieces")}
# Large vectors written only by a full export.
FULL_ONLY = {StepRecord: ("logits", "embedding", "hidden")}
# Attention weights (in [0, 1]) are written as float16 (absolute error <= 2**-12) unless full.
HALF = {StepRecord: ("attention", "attention_matrix")}
# Causal matrices: only the lower triangle (key <= query) is written.
TRIL = {StepRecord: ("attention_matrix",)}

GZIP_MAGIC = b"\x1f\x8b"
GZIP_LEVEL = 1  # float16 bits barely compress: a higher level costs far more time for a few percent
_JSON = dict(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _names(table: dict, cls: type) -> tuple[str, ...]:
    return tuple(n for base, names in table.items() if issubclass(cls, base) for n in names)


# ---------------------------------------------------------------------------------------
# Writing: record -> JSON-ready value, by value (the annotations are only needed to read)


def _is_empty_default(f: dataclasses.Field, v: Any) -> bool:
    """A field left at a default of None, () or False is not written (readers fill it in)."""
    d = f.default
    return (d is None and v is None) or (d is False and v is False) or (d == () and isinstance(v, tuple) and not v)


def encode(v: Any, *, full: bool = False) -> Any:
    """Any record value -> plain JSON data (dicts, lists, str, numbers, bool, None)."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(v, np.generic):
        return encode(v.item(), full=full)
    if isinstance(v, np.ndarray):
        return array_object(v)
    if isinstance(v, bytes):
        return list(v)
    if dataclasses.is_dataclass(v):
        return encode_record(v, full=full)
    if isinstance(v, (tuple, list)):
        return [encode(x, full=full) for x in v]
    raise TypeError(f"the trace format cannot write a {type(v).__name__}; add it to pipeline.trace.files.encode")


def encode_record(rec: Any, *, full: bool = False, rebuilt: dict | None = None) -> dict:
    """A record -> {field: value}. `rebuilt`: values a reader will rebuild for derived fields."""
    cls, out = type(rec), {}
    derived, full_only = _names(DERIVED, cls), _names(FULL_ONLY, cls)
    half, tril = _names(HALF, cls), _names(TRIL, cls)
    for f in dataclasses.fields(rec):
        v = getattr(rec, f.name)
        if _is_empty_default(f, v) or (f.name in full_only and not full):
            continue
        if f.name in derived and rebuilt is not None and rebuilt.get(f.name) == v:
            continue
        if isinstance(v, np.ndarray) and (f.name in half or f.name in tril):
            lossy = f.name in half and v.dtype.kind == "f" and not full
            out[f.name] = array_object(v, "float16" if lossy else None, tril=f.name in tril)
        else:
            out[f.name] = encode(v, full=full)
    return out


def _encode_steps(trace: Trace, full: bool) -> Iterator[dict]:
    """Each step's record. A compact file (not `full`) holds no logits: a generated step's summary of the rest of its
    vocabulary is made here from them (pipeline.sampling.rest.of_step: a generation keeps the logits in memory and does
    not make it at every step). A full file holds the logits themselves."""
    from pipeline.sampling.rest import of_step

    ids, pieces = list(trace.prompt.token_ids), list(trace.prompt.pieces)
    for s in trace.steps:
        if not full and s.rest is None and s.logits is not None:
            s = dataclasses.replace(s, rest=of_step(s))
        yield encode_record(s, full=full, rebuilt={"context_ids": tuple(ids), "context_pieces": tuple(pieces)})
        ids.append(s.token_id)
        pieces.append(s.piece)


def _trace_items(trace: Trace, full: bool) -> Iterator[tuple[str, Any]]:
    """(key, value) of the top-level object in order; list-valued fields as iterators."""
    yield "schema", SCHEMA
    for f in dataclasses.fields(trace):
        v = getattr(trace, f.name)
        if f.name == "steps":
            yield "steps", _encode_steps(trace, full)
        elif _is_empty_default(f, v):
            continue
        elif isinstance(v, tuple):
            yield f.name, (encode(x, full=full) for x in v)
        else:
            yield f.name, encode(v, full=full)
    yield "stop_reason", trace.stop_reason  # convenience copies for readers; not read back
    yield "text", trace.text


def trace_to_json(trace: Trace, *, full: bool = False) -> dict:
    """The /2 JSON-ready dict of a trace (the whole thing in memory: prefer `save` for files)."""
    return {k: list(v) if isinstance(v, Iterator) else v for k, v in _trace_items(trace, full)}


def iter_json(trace: Trace, *, full: bool = False) -> Iterator[str]:
    """The /2 JSON text in pieces of about one step each."""
    sep = "{"
    for k, v in _trace_items(trace, full):
        yield sep + json.dumps(k) + ":"
        sep = ","
        if isinstance(v, Iterator):
            yield "["
            for i, x in enumerate(v):
                yield ("," if i else "") + json.dumps(x, **_JSON)
            yield "]"
        else:
            yield json.dumps(v, **_JSON)
    yield "}"


def dumps(trace: Trace, *, full: bool = False) -> str:
    """The /2 JSON text of a trace. `full` adds each step's full-vocabulary logits, input
    embedding and hidden states, and keeps attention in float32 (an exact copy)."""
    return "".join(iter_json(trace, full=full))


def save(trace: Trace, path: str | os.PathLike, *, full: bool = False) -> Path:
    """Write a trace as /2 JSON, gzip-compressed when the name ends in ".gz". The file appears
    complete or not at all (written beside it, then renamed)."""
    path = Path(path)
    part = path.with_name(path.name + ".part")
    try:
        with open(part, "wb") as raw:
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0) if path.suffix.lower() == ".gz" else None
            out = gz or raw
            for chunk in iter_json(trace, full=full):
                out.write(chunk.encode("utf-8"))
            if gz is not None:
                gz.close()
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return path


# ---------------------------------------------------------------------------------------
# Reading: JSON value -> record, by the field's annotation


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.lru_cache(maxsize=None)
def _parts(hint: Any) -> tuple[Any, tuple]:
    return typing.get_origin(hint), typing.get_args(hint)


def _plain_items(item: Any, v: list) -> bool:
    """Every item of `v` already is what `item` asks for (ints; short ASCII texts): the list needs
    no decoding item by item (token ids and pieces: most of a trace's values)."""
    if item is int:
        return all(type(x) is int for x in v)
    if item is str:
        return all(type(x) is str and x.isascii() and len(x) <= trace_bounds.MAX_STRING for x in v)
    return False


def decode(hint: Any, v: Any, where: str = "") -> Any:
    """A JSON value -> the Python value that the annotation `hint` describes."""
    origin, args = _parts(hint)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, f"the trace format reads X | None unions only, not {hint}"
        return decode(rest[0], v, where)
    if hint is np.ndarray:
        return array_from_object(v, where)
    if dataclasses.is_dataclass(hint):
        return decode_record(hint, v, where)
    if origin is dict or hint is dict:
        return _decode_scalar(dict, v, where)
    if origin in (tuple, list):
        if not isinstance(v, list):
            raise damaged(where, f"expected a list, found {type(v).__name__}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            args = args if len(args) == len(v) else ()  # fixed-length tuple
            if not args:
                raise damaged(where, f"expected {len(typing.get_args(hint))} items, found {len(v)}")
            return tuple(decode(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, v)))
        item = args[0] if args else Any
        items = v if _plain_items(item, v) else [decode(item, x, f"{where}[{i}]") for i, x in enumerate(v)]
        return tuple(items) if origin is tuple else list(items)
    return _decode_scalar(hint, v, where)


def _decode_scalar(hint: Any, v: Any, where: str) -> Any:
    if hint is float and isinstance(v, (int, float, str)) and not isinstance(v, bool):
        try:
            return float(v)  # a string: "NaN", "Infinity", "-Infinity"
        except ValueError:
            pass
    elif hint is bytes and isinstance(v, list) and all(isinstance(b, int) and 0 <= b < 256 for b in v):
        return bytes(v)
    elif hint is str and type(v) is str:
        if len(v) > trace_bounds.MAX_STRING:
            raise damaged(where, f"a text of {len(v)} characters, more than any trace holds")
        if not v.isascii():
            try:  # JSON's "\ud800" escapes make texts that are no Unicode and that no page can show
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise damaged(where, "a text with a lone surrogate, which is not Unicode text") from e
        return v
    elif hint in (int, bool) and type(v) is hint:
        return v
    elif hint is Any or hint is object or (hint is dict and isinstance(v, dict)):
        return v
    else:
        assert hint in (float, bytes, int, str, bool, dict), f"the trace format cannot read a {hint}; add it to pipeline.trace.files.decode"
    raise damaged(where, f"expected {getattr(hint, '__name__', hint)}, found {v!r:.40}")


def decode_record(cls: type, d: Any, where: str = "", given: dict | None = None) -> Any:
    """{field: value} -> cls(...); a missing key takes the field's default; unknown keys are
    ignored (a newer writer's fields). `given`: values already decoded (or rebuilt)."""
    if not isinstance(d, dict):
        raise damaged(where, f"expected an object for {cls.__name__}, found {type(d).__name__}")
    hints, kw = _hints(cls), dict(given or {})
    for f in dataclasses.fields(cls):
        if f.name in kw or not f.init:
            continue
        sub = f"{where}.{f.name}" if where else f.name
        if f.name in d:
            kw[f.name] = decode(hints[f.name], d[f.name], sub)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise damaged(sub, "missing")
    return cls(**kw)


def _decode_steps(hint: Any, items: Any, prompt: Any) -> tuple:
    """steps[] with each step's derived context rebuilt: the prompt, then earlier steps' tokens."""
    if not isinstance(items, list):
        raise damaged("steps", "expected a list")
    step_cls = typing.get_args(hint)[0]  # tuple[StepRecord, ...]
    ids, pieces, out = list(prompt.token_ids), list(prompt.pieces), []
    for i, d in enumerate(items):
        ctx = {"context_ids": tuple(ids), "context_pieces": tuple(pieces)}
        given = {k: v for k, v in ctx.items() if k in _names(DERIVED, step_cls) and not (isinstance(d, dict) and k in d)}
        s = decode_record(step_cls, d, f"steps[{i}]", given)
        out.append(s)
        ids.append(s.token_id)
        pieces.append(s.piece)
    return tuple(out)


def trace_from_json(d: Any, cls: type = Trace) -> Trace:
    """A trace from its parsed JSON (/2, or /1 via pipeline.trace.v1); TraceFormatError otherwise."""
    schema = d.get("schema") if isinstance(d, dict) else None
    if schema == SCHEMA_V1:
        from pipeline.trace.v1 import trace_from_json as v1

        try:  # /1's loosely typed values through /2's typed reader and its checks
            d, schema = trace_to_json(v1(d), full=True), SCHEMA
        except (TypeError, ValueError, AssertionError, OverflowError) as e:
            raise damaged("", f"{type(e).__name__}: {e}") from e
    if schema != SCHEMA:
        newer = isinstance(schema, str) and schema.startswith("llm-pipeline-trace/")
        why = "written by a newer version of this app: update it" if newer else "not a trace of this app"
        raise TraceFormatError(f"this file is {why} (schema: {schema!r}); {TRACE_HINT}", key="error.trace_newer" if newer else "error.trace_foreign",
                               schema=repr(schema))
    try:
        hints = _hints(cls)
        for key in ("prompt", "steps"):
            if key not in d:
                raise damaged(key, "missing")
        if isinstance(d["steps"], list) and len(d["steps"]) > trace_bounds.MAX_STEPS:
            raise damaged("steps", f"{len(d['steps'])} steps, more than the {trace_bounds.MAX_STEPS} this app reads")
        prompt = decode(hints["prompt"], d["prompt"], "prompt")
        steps = _decode_steps(hints["steps"], d["steps"], prompt)
        return decode_record(cls, d, "", {"prompt": prompt, "steps": steps})
    except TraceFormatError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as e:  # a record refusing its values
        raise damaged("", f"{type(e).__name__}: {e}") from e


def loads(data: str | bytes, *, check: bool = True) -> Trace:
    """A trace from JSON text or bytes, gzip-compressed or not (detected by its magic number), read
    within pipeline.trace.bounds: whatever the input, a Trace or a TraceFormatError. `check`: the
    trace must agree with itself (pipeline.trace.check), as every file from outside must."""
    trace_bounds.check_size(len(data))
    if isinstance(data, (bytes, bytearray)) and data[:2] == GZIP_MAGIC:
        data = trace_bounds.gunzip(data, trace_bounds.json_limit(len(data)))
    try:
        d = json.loads(data)
    except RecursionError as e:
        raise TraceFormatError(f"the file's JSON is nested too deeply to be a trace; {TRACE_HINT}", key="error.trace_nested") from e
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, or a number of over 4300 digits
        raise TraceFormatError(f"the file is not valid JSON ({str(e):.120}); {TRACE_HINT}", key="error.trace_not_json", detail=f"{str(e):.120}") from e
    trace = trace_from_json(d)
    return trace_check.check(trace) if check else trace


def load(path: str | os.PathLike) -> Trace:
    """Read a trace file (.json or .json.gz; the content decides, not the name); its size is
    checked before it is read."""
    path = Path(path)
    trace_bounds.check_size(path.stat().st_size)
    return loads(path.read_bytes())


__all__ = ["SCHEMA", "SCHEMA_V1", "TraceFormatError", "dumps", "loads", "save", "load", "trace_to_json", "trace_from_json"]
