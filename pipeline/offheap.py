"""A finished trace's large arrays moved off the Python heap, bit for bit.

A traced generation holds, per step, the attention of every layer and head, the full-vocabulary
logits and the residual stream: about 300 MB for 512 tokens of SmolLM2-135M, as anonymous memory
the server cannot give back while the session lives. `move_off_heap` copies those arrays into one
memory-mapped temporary file, unlinked at once, and points the records at read-only views of it.
The values are the same bytes; the pages are the file's, which the operating system writes out
and drops under memory pressure and frees when the last view goes (the session's trace is
garbage-collected). A class of 30 on one small server then holds its traces in the page cache
and on disk, not in RAM each.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import os
import tempfile
import threading

import numpy as np

from pipeline.trace.records import StepRecord, Trace

FIELDS = ("attention", "attention_matrix", "logits", "hidden")  # the per-step arrays that grow with the run
MIN_BYTES = 1 << 12  # smaller arrays stay where they are
ALIGN = 64
_MOVING = threading.Lock()  # one move at a time: a trace is never copied twice


def _movable(trace: Trace, min_bytes: int) -> list[tuple[StepRecord, str, np.ndarray]]:
    out = []
    for st in trace.steps:
        for name in FIELDS:
            a = getattr(st, name, None)
            if isinstance(a, np.ndarray) and a.nbytes >= max(min_bytes, 1) and not is_off_heap(a):
                out.append((st, name, a))
    return out


def is_off_heap(a: np.ndarray) -> bool:
    """Whether `a` is a view of a mapped file (made by move_off_heap)."""
    while isinstance(a, np.ndarray):
        a = a.base
        if isinstance(a, memoryview):
            a = a.obj
        if isinstance(a, mmap.mmap):
            return True
    return False


def move_off_heap(trace: Trace, folder: str | None = None, *, min_bytes: int = MIN_BYTES) -> int:
    """Move the large per-step arrays of `trace` into one unlinked memory-mapped file (in `folder`,
    default the system's temporary folder); returns the bytes moved (0 when nothing was left to move).

    The records are frozen dataclasses: each field is re-pointed in place at an equal, read-only
    array, so every holder of the trace (the page's state, a branch list, a bundle cache) sees it."""
    with _MOVING:
        items = _movable(trace, min_bytes)
        sizes = [-(-a.nbytes // ALIGN) * ALIGN for _, _, a in items]
        total = sum(sizes)
        if total == 0:
            return 0
        _copy(items, sizes, total, folder)
    del items
    _trim()
    return total


def _copy(items: list, sizes: list[int], total: int, folder: str | None) -> None:
    fd, path = tempfile.mkstemp(prefix="llm-viz-trace-", dir=folder)
    try:
        os.unlink(path)  # the mapping keeps the data; the name goes at once, the space when the views go
        os.ftruncate(fd, total)
        buf = mmap.mmap(fd, total)
    finally:
        os.close(fd)
    offset = 0
    for (st, name, a), size in zip(items, sizes):
        view = np.frombuffer(buf, dtype=a.dtype, count=a.size, offset=offset).reshape(a.shape)
        view[...] = a
        view.flags.writeable = False
        object.__setattr__(st, name, view)
        offset += size


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's malloc_trim, or None (found once: find_library may run a subprocess)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc: nothing to do
        return None


def _trim() -> None:
    """Give the freed heap back to the system: glibc keeps freed memory in the process otherwise, so
    a long trace's arrays would stay in the server's memory after nothing holds them."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
