"""The model's thread: where the decode loop (pipeline.batching) runs every forward pass of the process. Other
threads hand it their work with the model (`run_on`: Draw many's passes, the logit lens's read-out, an ablation,
the machine's measurement, any other pass), so that the model's kernels run on one thread, one after another.

Why one thread: torch's CPU wheel runs its parallel kernels on OpenMP (libgomp), which keeps a pool of worker
threads for every thread that ever ran a parallel kernel; once the pools hold more threads than the machine has
cores, it lets idle workers spin 100 times instead of 300,000, and each of a pass's hundreds of kernels waits for
its workers to wake. Measured on the 2-core machine: the same decode pass for 8 rows takes 62 ms on a thread that
is the process's only OpenMP user and 78-96 ms beside one other thread that had run a kernel (docs/benchmarks.md,
"A class generating at once"). Giving every other thread one core (no pool at all) made the passes that much
faster, but the page's own work after a Stop then slowed the next run's first token to ~1 s: not done. `claim`
gives the loop's thread the cores torch chose for the machine; the rest stay as torch sets them.
"""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

import torch

T = TypeVar("T")
CORES = torch.get_num_threads()  # torch's own choice for this machine, read at import


def claim(threads: int = CORES):
    """(On the model's thread) this thread's kernels use `threads` cores. (torch sets a thread's count from its
    process-wide default at the thread's first use: that first, then ours.)"""
    torch.get_num_threads()
    torch.set_num_threads(max(1, threads))


def elsewhere(lm):
    """The model's decode loop when it has one and this thread is another (None: work here)."""
    d = getattr(lm, "__dict__", {}).get("_decoder")
    return None if d is None or threading.current_thread() is d.thread else d


def run_on(lm, fn: Callable[[], T]) -> T:
    """fn() on the model's thread when the model has a decode loop and this is another thread (its result or its
    exception comes back here); else here."""
    d = elsewhere(lm)
    return fn() if d is None else d.call(fn)


__all__ = ["CORES", "claim", "elsewhere", "run_on"]
