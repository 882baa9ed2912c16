"""How much a trace file may ask of the server: every bound the trace reader enforces, in one place.

A public Space shares one process's memory between every visitor, so a file someone loads must
not be able to ask for more than a bounded multiple of its own size: a 3 MB gzip of zeros would
otherwise inflate to 3 GB. Each refusal is a TraceFormatError whose one sentence says what to do.

Environment: LLM_VIZ_MAX_TRACE_MB (default 100) is the largest trace file the page, the API and
`python -m pipeline` accept, compressed or not.
"""
from __future__ import annotations

import os
import zlib

from pipeline.errors import TRACE_HINT, TraceFormatError

MB = 1 << 20


def _max_mb() -> float:
    try:
        v = float(os.environ.get("LLM_VIZ_MAX_TRACE_MB", "100"))
    except ValueError:
        return 100.0
    return v if v > 0 else 100.0


MAX_FILE_BYTES = int(_max_mb() * MB)  # a trace file (as stored: gzip or JSON)
# A real trace's JSON is 1.4-1.9x its gzip (float16 weights in base64 barely compress); a bomb's
# is ~1000x. Past max(floor, ratio x compressed) the reader stops inflating and refuses.
GZIP_MAX_RATIO = 10
GZIP_FLOOR_BYTES = 16 * MB
MAX_JSON_BYTES = 3 * MAX_FILE_BYTES  # however small the gzip ratio, never more JSON than this
MAX_STEPS = 8192  # steps in one trace (the page makes at most a few hundred)
MAX_STRING = 1 * MB  # characters in one string of the trace (a prompt, a piece); array data excepted
MAX_DIMS = 6  # axes of one array (the largest record array has 4)
MAX_ELEMENTS = 1 << 28  # values in one array, after a lower triangle is expanded
MAX_TRIL = 1 << 14  # side of a lower-triangular matrix


def size_words(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB / 10 else f"{n} bytes"


def check_size(n: int) -> None:
    """Refuse a file (or text) of n bytes before anything reads it."""
    if n > MAX_FILE_BYTES:
        raise TraceFormatError(
            f"this file is {size_words(n)}, more than the {size_words(MAX_FILE_BYTES)} this app reads "
            "(set LLM_VIZ_MAX_TRACE_MB to allow more); save a shorter generation", key="error.trace_too_big", size=n, limit=MAX_FILE_BYTES)


def json_limit(compressed: int) -> int:
    """The most JSON a gzip file of `compressed` bytes may inflate to."""
    return min(MAX_JSON_BYTES, max(GZIP_FLOOR_BYTES, GZIP_MAX_RATIO * compressed))


def gunzip(data: bytes | bytearray, limit: int) -> bytearray:
    """gzip member(s) -> their bytes, inflated as a stream that stops past `limit` bytes of output
    (gzip.decompress would first build all of it). TraceFormatError for a damaged or cut file."""
    out, rest = bytearray(), memoryview(data)
    while rest:
        if bytes(rest[:2]) != b"\x1f\x8b":
            raise TraceFormatError(f"the gzip file is damaged or cut short (data after its end is not gzip); {TRACE_HINT}",
                                   key="error.trace_gzip_trailing")
        d, buf = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS), rest
        try:
            while not d.eof:
                # at most a MB at a time, so the output is never held twice; max_length >= 1 (0: no limit)
                out += d.decompress(buf, min(MB, limit + 1 - len(out)))
                if len(out) > limit:
                    raise TraceFormatError(
                        f"this gzip file inflates to more than {size_words(limit)}, far more than any trace of "
                        f"its size ({size_words(len(data))}); {TRACE_HINT}", key="error.trace_inflates", limit=limit, size=len(data))
                buf = d.unconsumed_tail
                if not buf and not d.eof:
                    raise TraceFormatError(f"the gzip file is damaged or cut short (it ends early); {TRACE_HINT}", key="error.trace_gzip_short")
        except zlib.error as e:
            raise TraceFormatError(f"the gzip file is damaged or cut short ({e}); {TRACE_HINT}", key="error.trace_gzip", detail=str(e)) from e
        rest = memoryview(d.unused_data)
    return out
