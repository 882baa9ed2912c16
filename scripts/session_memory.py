"""Server memory of a class's sessions, each holding a long generation (issue 11, item 7).

    .venv/bin/python scripts/session_memory.py                     # 30 sessions of 512 tokens
    .venv/bin/python scripts/session_memory.py --sessions 5 --new-tokens 128

Loads the embedded model as the app does, makes one traced generation of --new-tokens tokens
(end of sequence ignored, so it is that long), and does to it what the app does when a run ends:
the viewer bundle (viz.viewer, every head) is built and written to a file, and the large arrays are
moved off the heap (pipeline.offheap). The other sessions hold copies of that trace, each moved off
the heap the same way: the same records, arrays and sizes as many generations of that length,
without the minutes of model time. It prints this process's memory after each stage, split as
Linux counts it: anonymous (the heap: only freed when the session's trace goes) and file-backed
(the mapped arrays: pages the system writes out and drops under pressure); then it drops every
session and prints what is left. Before that it pages the sessions' mapped arrays out, as memory
pressure would (Linux's MADV_PAGEOUT), to show how much of the resident memory the system can
take back.
"""
from __future__ import annotations

import argparse
import copy
import gc
import mmap
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT = "Once upon a time, in a small village by the sea, there lived"


def memory_mb() -> dict[str, float]:
    """Resident memory of this process by kind, MB (Linux /proc/self/status)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(rest.split()[0]) / 1024
    return out


def line(label: str, base: dict | None = None) -> dict:
    m = memory_mb()
    gained = "" if base is None else f"  (anonymous {m['RssAnon'] - base['RssAnon']:+.0f}, file-backed {m['RssFile'] - base['RssFile']:+.0f})"
    print(f"{label:<44} resident {m['VmRSS']:7.0f} MB: anonymous {m['RssAnon']:6.0f}, file-backed {m['RssFile']:6.0f}{gained}")
    return m


def one_generation(lm, n: int):
    from pipeline.generate import start
    from pipeline.trace.records import Settings

    t0 = time.perf_counter()
    gen = start(lm, PROMPT, Settings(temperature=0.8, top_p=0.95, seed=0, max_new_tokens=n, chat=False), ignore_eos=True)
    for _ in gen:
        pass
    trace = gen.trace()
    print(f"generated {len(trace.steps)} steps ({trace.steps[-1].position + 1} positions) in {time.perf_counter() - t0:.0f} s")
    return trace


def as_the_app_finishes(trace, folder: Path) -> None:
    """What the app does at a run's end that costs memory: the viewer bundle, then the arrays moved."""
    from pipeline import offheap
    from viz.viewer.bundle import bundle_json, viewer_bundle

    t0 = time.perf_counter()
    text = bundle_json(viewer_bundle(trace, layer=0, head=None))
    (folder / f"bundle-{id(trace)}.json").write_text(text, encoding="utf-8")
    t1 = time.perf_counter()
    moved = offheap.move_off_heap(trace)
    print(f"  viewer bundle {len(text) / 1e6:.1f} MB in {t1 - t0:.1f} s; {moved / 1e6:.0f} MB of arrays moved off the heap "
          f"in {time.perf_counter() - t1:.1f} s")


MADV_PAGEOUT = getattr(mmap, "MADV_PAGEOUT", 21)  # Linux 5.4+: write out and drop these pages now


def page_out(traces) -> int:
    """What memory pressure would do to the sessions' mapped arrays, done at once: each trace's
    mapping written out to its (unlinked) file and dropped. Returns how many maps were paged out."""
    n = 0
    for trace in traces:
        a = trace.steps[-1].attention
        while isinstance(a, np.ndarray):
            a = a.base.obj if isinstance(a.base, memoryview) else a.base
        if isinstance(a, mmap.mmap):
            try:
                a.madvise(MADV_PAGEOUT)
                n += 1
            except OSError as e:  # an older kernel
                print(f"  (pages not written out: {e})")
                return 0
    return n


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--new-tokens", type=int, default=512)
    a = ap.parse_args(argv)
    from pipeline import offheap
    from pipeline.loading import load_model

    lm = load_model(None)
    one_generation(lm, 16)  # warm-up: the first run's own allocations are not a session's
    gc.collect()
    offheap._trim()
    base = line("model loaded, one short run made and dropped")
    trace = one_generation(lm, a.new_tokens)
    line("one session's trace, as generated", base)
    folder = Path(tempfile.mkdtemp(prefix="session-memory-"))
    as_the_app_finishes(trace, folder)
    one = line("after the app's finish (bundle, arrays moved)", base)
    sessions = [trace]
    for _ in range(1, a.sessions):
        twin = copy.deepcopy(trace)  # its arrays copied onto the heap, as a fresh generation holds them
        offheap.move_off_heap(twin)
        sessions.append(twin)
        gc.collect()
    every = line(f"{a.sessions} sessions held", base)
    per_anon = (every["RssAnon"] - base["RssAnon"]) / a.sessions
    per_file = (every["RssFile"] - base["RssFile"]) / a.sessions
    print(f"per session: anonymous {per_anon:.0f} MB, file-backed {per_file:.0f} MB "
          f"(the first alone: anonymous {one['RssAnon'] - base['RssAnon']:.0f} MB)")
    print(f"{a.sessions} sessions: {every['RssAnon'] - base['RssAnon']:.0f} MB anonymous on top of the model, "
          f"{every['RssFile'] - base['RssFile']:.0f} MB file-backed (reclaimable)")
    paged = page_out(sessions)
    if paged:
        line(f"the same, their mapped pages written out ({paged} maps)", base)
    del sessions, trace, twin
    gc.collect()
    offheap._trim()
    line("every session gone", base)


if __name__ == "__main__":
    main()
