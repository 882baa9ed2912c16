"""Arrays in the trace file: a numpy array as an "array object" {dtype, shape, data: base64 of the
little-endian C-order bytes}, a causal matrix as its lower triangle only, float16 written fast;
read back within pipeline.trace.bounds. The rest of the format is pipeline/trace/files.py.
"""
from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

from pipeline.trace import bounds as trace_bounds
from pipeline.errors import TRACE_HINT, TraceFormatError

DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")


def damaged(where: str, what: str) -> TraceFormatError:
    """The error for a file whose content is not a trace: where (a field path) and what is wrong."""
    detail = f"{where or 'top level'}: {what}"  # (a field path and what is wrong: the page gives them as they are)
    return TraceFormatError(f"the trace file is damaged or incomplete ({detail}); {TRACE_HINT}", key="error.trace_damaged", detail=detail)


def array_object(a: np.ndarray, dtype: str | None = None, *, tril: bool = False) -> dict:
    """numpy array -> {"dtype", "shape", "data"}; `tril`: (..., T, T) with zeros above the
    diagonal, written as its lower triangle only ("layout": "tril")."""
    a = np.asarray(a)
    dt = np.dtype(dtype or a.dtype)
    assert dt.name in DTYPES, f"the trace format has no dtype {dt.name}"
    d: dict[str, Any] = {"dtype": dt.name, "shape": list(a.shape)}
    if tril and _is_tril(a):
        q, k = np.tril_indices(a.shape[-1])
        a = a[..., q, k]  # (..., T(T+1)/2) rows 0..T-1, keys 0..q each
        d["layout"] = "tril"
    a = _float16(a) if dt.name == "float16" else a
    data = np.ascontiguousarray(a, dtype=dt.newbyteorder("<")).tobytes()
    d["data"] = base64.b64encode(data).decode("ascii")
    return d


def _float16(a: np.ndarray) -> np.ndarray:
    """a.astype(float16), bit for bit, but fast when many values are float16 subnormals
    (below 2**-14, as many attention weights are: numpy's cast takes a slow path for each one).
    A subnormal's bits are its magnitude in units of 2**-24, rounded half to even."""
    a = np.asarray(a, np.float32)
    small = np.abs(a) < np.float32(2.0**-14)
    with np.errstate(over="ignore"):  # beyond 65504 becomes inf, as in astype
        h = np.where(small, np.float32(0), a).astype(np.float16)
    s = a[small]
    sign = np.where(np.signbit(s), np.uint16(0x8000), np.uint16(0))
    h.view(np.uint16)[small] = np.rint(np.abs(s) * np.float32(2.0**24)).astype(np.uint16) | sign
    return h


def _is_tril(a: np.ndarray) -> bool:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2:
        return False
    return not np.triu(a, 1).any()


def array_from_object(d: Any, where: str = "") -> np.ndarray:
    """The inverse of array_object; float16 widens to float32 (what the records hold)."""
    if not isinstance(d, dict) or not {"dtype", "shape", "data"} <= d.keys():
        raise damaged(where, "expected an array object {dtype, shape, data}")
    dt, shape, layout, n = _array_header(d, where)
    if not isinstance(d["data"], str):
        raise damaged(where, f"the data is a {type(d['data']).__name__}, not base64 text")
    try:
        raw = base64.b64decode(d["data"], validate=True)
    except (ValueError, TypeError) as e:
        raise damaged(where, f"the data is not base64 ({e})") from e
    if len(raw) != n * dt.itemsize:
        raise damaged(where, f"{len(raw)} bytes of data for {n} values of {dt.name}")
    flat = np.frombuffer(raw, dt).astype(np.float32 if dt.name == "float16" else dt.newbyteorder("="))
    if layout == "dense":
        return flat.reshape(shape)
    out = np.zeros(shape, flat.dtype)  # (..., T, T)
    rows = flat.reshape(*shape[:-2], -1) if out.size else flat  # (..., T(T+1)/2): row q holds keys 0..q
    for q in range(shape[-1] if out.size else 0):  # row by row: no T x T index arrays
        out[..., q, : q + 1] = rows[..., q * (q + 1) // 2: (q + 1) * (q + 2) // 2]
    return out


def _array_header(d: dict, where: str) -> tuple[np.dtype, tuple[int, ...], str, int]:
    """(dtype, shape, layout, values stored) of an array object, within pipeline.trace.bounds."""
    shape, layout = d["shape"], d.get("layout", "dense")
    if d["dtype"] not in DTYPES or not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise damaged(where, f"unknown dtype {d['dtype']!r:.20} or bad shape {shape!r:.60}")
    if len(shape) > trace_bounds.MAX_DIMS or math.prod(shape) > trace_bounds.MAX_ELEMENTS:
        raise damaged(where, f"an array of shape {shape!r:.60} is larger than any trace holds")
    n = math.prod(shape)
    if layout == "tril":
        if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] > trace_bounds.MAX_TRIL:
            raise damaged(where, f"a tril array needs a square last two axes of at most {trace_bounds.MAX_TRIL}, not {shape}")
        n = n // max(shape[-1], 1) * (shape[-1] + 1) // 2
    elif layout != "dense":
        raise damaged(where, f"unknown layout {layout!r:.20}")
    return np.dtype(d["dtype"]).newbyteorder("<"), tuple(shape), layout, n
