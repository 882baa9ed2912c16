"""Download trace: the trace file with what the inside-the-model views need, written into one browser session's
folder (removed when its page closes).

    path = write_download(lm, trace, folder)       # the trace file, lens of every step included (lens=False: left out)
    folder = download_folder(root, session_hash)   # one browser session's downloads
    remove_download_folder(root, session_hash)     # its page has closed
"""
from __future__ import annotations

import hashlib
import re
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

from pipeline.errors import SettingsError
from pipeline.trace.records import Trace
from ui.inside.lens_cache import LENS, LensCache
from ui.model_match import same_model
from viz.text import t

DOWNLOAD_SUFFIX = ".json.gz"  # the trace format /2, gzip-compressed (pipeline/trace/files.py)
# One file made at a time, in the whole process: a 32-step file is ~80-120 ms of one core (each step's rest summary, the
# JSON, gzip), and when a class's runs end at one tick, 13 threads making theirs at once took the cores from the decode
# loop (its last one-row pass took 1.8 s, not 0.1) and every file came at the end of all of them. One at a time, the
# first is served first (16 visitors through /trace: median call 9.7 -> 8.5 s, the last unchanged; docs/benchmarks.md).
WRITING = threading.Lock()


def trace_for_download(lm, trace: Trace, cache: LensCache = LENS, *, lens: bool = True) -> Trace:
    """The trace with what the inside-the-model views need from the model (the logit lens of every
    step, parameter counts, position scheme, this machine's limits), when `lm` made it; else as is.
    `lens=False`: without the lens (a third of a 32-token /trace call's work, docs/benchmarks.md). A file keeps
    no hidden states to compute it again from: opened on the page, its Inside tab says the lens is not there."""
    from pipeline.inside import analyses as inside

    lm = same_model(lm, trace)
    if lm is None:
        return trace
    records = tuple(r for r in cache.get_many(lm, trace, list(trace.steps)) if r is not None) if lens else ()
    return inside.with_inside(lm, replace(trace, lens=records), steps=())


def write_download(lm, trace: Trace, folder: Path, cache: LensCache = LENS, *, lens: bool = True) -> Path:
    """Write `trace` (with its inside-the-model data, see trace_for_download) as the one trace file
    in `folder`, replacing the one before; return its path. Called when someone downloads, never
    after every run: the lens of every step costs one pass of the norm and LM head per layer."""
    if not trace.steps:
        raise SettingsError(t("warn.no_download"))
    from pipeline.trace import files as trace_io

    full = trace_for_download(lm, trace, cache, lens=lens)  # (the lens runs on the model's thread: outside the lock)
    with WRITING:  # (see WRITING)
        folder.mkdir(parents=True, exist_ok=True)
        for old in list(folder.glob("trace-*")):
            old.unlink(missing_ok=True)
        return trace_io.save(full, folder / f"trace-{time.strftime('%Y%m%d-%H%M%S')}{DOWNLOAD_SUFFIX}")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def download_folder(root: Path, session_hash: str | None) -> Path:
    """The folder under `root` for one browser session's downloads ("shared" without a session). The
    hash is the browser's to choose, so only a plain name is used as it is; any other (".." or "a/b")
    by its digest: always a folder inside `root`, and never "shared" or another one of ours."""
    if not session_hash:
        return root / "shared"
    h = str(session_hash)
    name = h if _PLAIN_NAME.fullmatch(h) else hashlib.sha256(h.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return root / f"session-{name}"


def remove_download_folder(root: Path, session_hash: str | None) -> bool:
    """Remove a session's download folder once its page has closed (a trace file is up to ~50 MB, and a
    class opens many sessions); True if there was one. The shared folder stays: it has no session."""
    if not session_hash:
        return False
    folder = download_folder(root, session_hash)
    existed = folder.is_dir()
    shutil.rmtree(folder, ignore_errors=True)
    return existed
