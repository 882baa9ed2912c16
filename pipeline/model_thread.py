"""The model's thread: where the decode loop (pipeline.batching) runs every forward pass of the process, with all
the machine's cores, while every other thread does its torch work on one core.

Why: torch's CPU wheel runs its parallel kernels on OpenMP (libgomp), and libgomp keeps a pool of worker threads
for every thread that ever ran a parallel kernel. When the pools hold more threads than the machine has cores,
libgomp stops letting its idle workers spin (100 spins instead of 300,000) and every one of the hundreds of
parallel kernels in a forward pass waits for its workers to wake. Measured on the 2-core machine: the same
decode pass for 8 rows takes 62 ms on a thread that is the process's only OpenMP user, and 78-96 ms on a
thread beside one other thread that had run a kernel (docs/benchmarks.md, "A class generating at once").

So: `claim()` on the loop's thread gives it the cores; threads that start torch work afterwards run it on one
core, and never make a pool; and the heavy work other threads would do with the model (Draw many's passes,
the logit lens's read-out, an ablation, the machine's measurement) is handed to the loop's thread by `run_on`.
A thread that ran torch before the loop started (the one that loaded the model, in a script) keeps its cores:
the app loads the model on a thread that then ends.
"""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

import torch

T = TypeVar("T")
CORES = torch.get_num_threads()  # torch's own choice for this machine, read before any claim() changes the default


def claim(threads: int = CORES):
    """(On the model's thread) this thread's kernels use `threads` cores; threads that start torch work after this
    use one. (torch.set_num_threads sets the calling thread's count and the default a new thread starts with: the
    default is set back to 1 from a helper thread, which then ends with its one-thread setting.)"""
    torch.get_num_threads()  # (torch sets a thread's count from the default at its first use: that first, then ours)
    torch.set_num_threads(max(1, threads))
    helper = threading.Thread(target=torch.set_num_threads, args=(1,), name="one-core-default")
    helper.start()
    helper.join()


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
