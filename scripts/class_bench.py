"""A class generating at once, end to end: the app started, then N clients calling /trace together, each its own prompt.

    .venv/bin/python scripts/class_bench.py --visitors 1,4,8,16 [--new-tokens 32] [--no-lens]

First every prompt runs alone, one after another (the figure for one visitor, and each prompt's tokens alone); then each
N starts N clients at once (gradio_client, one thread each; each client and its session on the server are made first, with
a 1-token call, as a student's page is open before the class clicks Generate). Printed per N: the tokens per second of all together and
its ratio to one alone, each visitor's whole time (a /trace call returns at its end: first tokens are the in-process
benchmark's, `python -m pipeline bench --visitors`), how many traces have the same tokens as alone and the largest
difference of their candidates' probabilities, the server's memory, and the decode steps' median time with the rows
their passes ran for (from the traces). Greedy; a generation stops at its end of
sequence, so the tokens counted are the ones the traces hold. `--no-lens`: every call asks for its file without the logit
lens (/trace's lens=false), the per-call work that batching cannot share.
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


def call(url: str, i: int, new_tokens: int, lens: bool = True, client=None, start: threading.Barrier | None = None):
    """One visitor's /trace: (its file's path, seconds). With `start`, the client (made before) waits for the others there
    first: the visitors' pages are open (their sessions made), and they click at once."""
    from gradio_client import Client

    client = client or Client(url, verbose=False)
    if start is not None:  # (a first call makes the client's session on the server, as a page's opening does)
        client.predict(prompt=PROMPTS[i % len(PROMPTS)], temperature=0, max_new_tokens=1, lens=False, api_name="/trace")
        start.wait()
    t0 = time.perf_counter()
    path = client.predict(prompt=PROMPTS[i % len(PROMPTS)], temperature=0, seed=i, max_new_tokens=new_tokens, lens=lens, api_name="/trace")
    return path, time.perf_counter() - t0


def read(runs: dict) -> dict:
    """{visitor: (trace, seconds)} of {visitor: (path, seconds)}: the files read once every call has ended (the bench
    shares the server's cores, and reading a trace is the client's work, not the server's)."""
    return {i: (trace_io.loads(Path(path).read_bytes()), s) for i, (path, s) in runs.items()}


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


def together(url: str, n: int, new_tokens: int, lens: bool) -> dict:
    """N visitors at once: each one's client and session are made first (its page open), then all call /trace together.
    The wall time runs from the start to the last answer; the files are read after it."""
    from gradio_client import Client

    clients = [Client(url, verbose=False) for _ in range(n)]
    out, errors = {}, []
    start = threading.Barrier(n + 1)

    def one(i):
        try:
            out[i] = call(url, i, new_tokens, lens, clients[i], start)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e)[:200])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    t0 = time.perf_counter()
    start.wait()
    for th in threads:
        th.join()
    wall = max((s for _, s in out.values()), default=time.perf_counter() - t0)  # (the clock stops at the last answer)
    return {"wall_s": wall, "runs": read(out), "errors": errors}


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


def _steps(runs: dict) -> str:
    """The decode steps' median time (a step's time is its batch's pass and its own record) and their mean rows a pass."""
    steps = [st for t, _ in runs.values() for st in t.steps if st.phase == "decode"]
    if not steps:
        return "-"
    return f"{statistics.median(st.ms for st in steps):.0f} ({statistics.mean(st.batch_rows for st in steps):.1f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--visitors", default="1,4,8,16")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--no-lens", dest="lens", action="store_false", help="each call's file without the logit lens")
    a = ap.parse_args(argv)
    visitors = [int(x) for x in a.visitors.split(",")]
    with app_server() as url:
        wait_ready(url)
        alone = read({i: call(url, i, a.new_tokens, a.lens) for i in range(max(visitors))})  # each prompt alone, one after another
        one_tps = sum(len(t.steps) for t, _ in alone.values()) / sum(s for _, s in alone.values())
        print(f"A class generating at once, end to end through /trace: up to {a.new_tokens} greedy tokens each, different prompts, "
              + ("the logit lens in every file" if a.lens else "no logit lens (lens=false)"))
        print(f"one visitor alone (each prompt in turn): {one_tps:.1f} tokens/s, {statistics.median(s for _, s in alone.values()):.1f} s a call")
        print("visitors  tokens/s  vs one  whole (median / p95 / max)  same tokens as alone  max |dp|  errors  server MB  step ms (rows)")
        for n in visitors:
            r = together(url, n, a.new_tokens, a.lens)
            runs = r["runs"]
            tps = sum(len(t.steps) for t, _ in runs.values()) / r["wall_s"]
            secs = [s for _, s in runs.values()] or [float("nan")]
            cmp = [compare(t, alone[i][0]) for i, (t, _) in runs.items()]
            print(f"{n:>8}  {tps:>8.1f}  {tps / one_tps:>5.2f}x  {statistics.median(secs):>6.1f} / {p95(secs):.1f} / {max(secs):.1f} s"
                  f"      {sum(c[0] for c in cmp):>4} of {n:<4}        {max((c[1] for c in cmp), default=0):.1e}  {len(r['errors']):>6}"
                  f"  {rss_mb(url.pid):>9.0f}  {_steps(runs)}")
            for e in r["errors"][:3]:
                print("   error:", e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
