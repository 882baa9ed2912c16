"""A class generating at once, end to end: the app started, then N clients calling /trace together, each its own prompt.

    .venv/bin/python scripts/class_bench.py --visitors 1,4,8,16 [--new-tokens 32]

First every prompt runs alone, one after another (the figure for one visitor, and each prompt's tokens alone); then each
N starts N clients at once (gradio_client, one thread each). Printed per N: the tokens per second of all together and
its ratio to one alone, each visitor's whole time (a /trace call returns at its end: first tokens are the in-process
benchmark's, `python -m pipeline bench --visitors`), how many traces have the same tokens as alone and the largest
difference of their candidates' probabilities, and the server's memory. Greedy; a generation stops at its end of
sequence, so the tokens counted are the ones the traces hold.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.trace import files as trace_io
from pipeline.bench.classroom import PROMPTS, p95  # noqa: E402
from scripts.browser_kit import app_server  # noqa: E402


def call(url: str, i: int, new_tokens: int):
    """One visitor's /trace: (its trace, seconds)."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    t0 = time.perf_counter()
    path = client.predict(prompt=PROMPTS[i % len(PROMPTS)], temperature=0, seed=i, max_new_tokens=new_tokens, api_name="/trace")
    return trace_io.loads(Path(path).read_bytes()), time.perf_counter() - t0


def wait_ready(url: str, timeout: float = 600) -> None:
    """Until a 1-token /trace succeeds (the model loaded)."""
    deadline = time.time() + timeout
    while True:
        try:
            call(url, 0, 1)
            return
        except Exception:  # noqa: BLE001  (the model still loading: /trace refuses, with the reason)
            if time.time() > deadline:
                raise
            time.sleep(2)


def together(url: str, n: int, new_tokens: int) -> dict:
    out, errors = {}, []

    def one(i):
        try:
            out[i] = call(url, i, new_tokens)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e)[:200])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {"wall_s": time.perf_counter() - t0, "runs": out, "errors": errors}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def compare(trace, alone) -> tuple[bool, float]:
    """(the same tokens as alone, the largest |difference| of the top candidates' probabilities over common steps)."""
    same = [s.token_id for s in trace.steps] == [s.token_id for s in alone.steps]
    diff = max((float(np.abs(a.top_probs - b.top_probs).max()) for a, b in zip(trace.steps, alone.steps)
                if np.array_equal(a.top_ids, b.top_ids)), default=0.0)
    return same, diff


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--visitors", default="1,4,8,16")
    ap.add_argument("--new-tokens", type=int, default=32)
    a = ap.parse_args(argv)
    visitors = [int(x) for x in a.visitors.split(",")]
    with app_server() as url:
        wait_ready(url)
        alone = {i: call(url, i, a.new_tokens) for i in range(max(visitors))}  # each prompt alone, one after another
        one_tps = sum(len(t.steps) for t, _ in alone.values()) / sum(s for _, s in alone.values())
        print(f"A class generating at once, end to end through /trace: up to {a.new_tokens} greedy tokens each, different prompts")
        print(f"one visitor alone (each prompt in turn): {one_tps:.1f} tokens/s, {statistics.median(s for _, s in alone.values()):.1f} s a call")
        print("visitors  tokens/s  vs one  whole (median / p95 / max)  same tokens as alone  max |dp|  errors  server MB")
        for n in visitors:
            r = together(url, n, a.new_tokens)
            runs = r["runs"]
            tps = sum(len(t.steps) for t, _ in runs.values()) / r["wall_s"]
            secs = [s for _, s in runs.values()] or [float("nan")]
            cmp = [compare(t, alone[i][0]) for i, (t, _) in runs.items()]
            print(f"{n:>8}  {tps:>8.1f}  {tps / one_tps:>5.2f}x  {statistics.median(secs):>6.1f} / {p95(secs):.1f} / {max(secs):.1f} s"
                  f"      {sum(c[0] for c in cmp):>4} of {n:<4}        {max((c[1] for c in cmp), default=0):.1e}  {len(r['errors']):>6}"
                  f"  {rss_mb(url.pid):>9.0f}")
            for e in r["errors"][:3]:
                print("   error:", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
