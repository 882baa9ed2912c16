"""A class generating at once, in-process: N captured generations started together, as the page's Generate
runs them (each on a thread of its own, through pipeline.batching's decode loop), against one alone.

    python -m pipeline bench --visitors 1,4,8,16 [--new-tokens 32]

Each visitor has its own prompt (different lengths), greedy, and runs to the end (end of sequence ignored). Printed per
N: the tokens per second of all visitors together and its ratio to one alone, each visitor's first token (from its
start) and its whole time, the passes the loop ran, their mean rows, their time and the time of the rows' records after
each, and the process's peak memory. The end-to-end version (the app, /trace from N clients) is scripts/class_bench.py.
"""
from __future__ import annotations

import resource
import statistics
import threading
import time

from pipeline.generate import start
from pipeline.loading import LoadedModel
from pipeline.trace.records import Settings

PROMPTS = (
    "Why is the sky blue?", "Write a short poem about the sea.", "What is the capital of Peru, and what is it known for?",
    "Name three fruits that are red.", "Tell me a story about a dragon who learns to read.", "How do plants make food?",
    "Explain gravity to a child in two sentences.", "What is 12 times 12?", "Give me a tip for learning a new language.",
    "Why do cats purr?", "Describe a rainy day in a city.", "What does a computer's memory do?",
    "List four planets of the solar system.", "How does a rainbow form?", "What is a verb? Give an example.",
    "Write the first line of a mystery novel.",
)


def _visitor(lm: LoadedModel, i: int, new_tokens: int, t0: float, out: dict):
    gen = start(lm, PROMPTS[i % len(PROMPTS)], Settings(temperature=0.0, max_new_tokens=new_tokens, seed=i), ignore_eos=True)
    first = None
    rows = []
    for st in gen:
        first = first or time.perf_counter() - t0
        rows.append(st.batch_rows)
    out[i] = dict(first_s=first, total_s=time.perf_counter() - t0, tokens=len(gen.steps), rows=max(rows))


def run_class(lm: LoadedModel, n: int, new_tokens: int = 32) -> dict:
    """N visitors started together; their times and the loop's passes."""
    from pipeline import batching

    d = batching._decoder(lm) if batching.enabled() else None
    ticks0, rows0, pass0, work0 = (d.ticks, d.rows_run, d.pass_s, d.work_s) if d else (0, 0, 0.0, 0.0)
    pre0 = (d.prefill_passes, d.prefill_rows, d.prefill_s) if d else (0, 0, 0.0)
    out: dict = {}
    t0 = time.perf_counter()
    threads = [threading.Thread(target=_visitor, args=(lm, i, new_tokens, t0, out)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    v = [out[i] for i in range(n)]
    ticks = (d.ticks - ticks0) if d else 0
    return {"visitors": n, "wall_s": wall, "tokens": sum(x["tokens"] for x in v), "tokens_per_s": sum(x["tokens"] for x in v) / wall,
            "first_s": sorted(x["first_s"] for x in v), "total_s": sorted(x["total_s"] for x in v), "passes": ticks,
            "rows_per_pass": ((d.rows_run - rows0) / ticks) if ticks else 1.0,
            "pass_ms": ((d.pass_s - pass0) / ticks * 1000.0) if ticks else None,
            "records_ms": ((d.work_s - work0) / ticks * 1000.0) if ticks else None,
            "prefills": (d.prefill_passes - pre0[0], d.prefill_rows - pre0[1], (d.prefill_s - pre0[2]) * 1000.0) if d else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def load_as_the_app_does(spec: str | None) -> LoadedModel:
    """The model loaded on a thread that then ends, and its loop started there, as ui/model.py does: no thread but the
    loop's keeps the pool of OpenMP workers the loading made (pipeline.model_thread)."""
    from pipeline import batching
    from pipeline.loading import load_model

    box: dict = {}

    def load():
        box["lm"] = load_model(spec)
        batching.start(box["lm"])

    th = threading.Thread(target=load)
    th.start()
    th.join()
    return box["lm"]


def run(lm: LoadedModel, visitors: list[int], new_tokens: int = 32, repeats: int = 1) -> list[dict]:
    """Each N `repeats` times, the Ns taking turns (1, 4, 8, 1, 4, 8, ...: a slow stretch of the machine hits them alike);
    the run of median tokens/s kept for each."""
    run_class(lm, 2, 4)  # warm-up: the loop's thread, the first passes
    runs: dict[int, list[dict]] = {n: [] for n in visitors}
    for _ in range(repeats):
        for n in visitors:
            runs[n].append(run_class(lm, n, new_tokens))
    results = [sorted(runs[n], key=lambda r: r["tokens_per_s"])[(repeats - 1) // 2] for n in visitors]
    one = next((r["tokens_per_s"] for r in results if r["visitors"] == 1), None)
    for r in results:
        r["vs_one"] = r["tokens_per_s"] / one if one else None
    return results


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(0.95 * len(xs)) - 1))]


def _prefills(p) -> str:
    return "-" if not p else f"{p[0]} ({p[1]}, {p[2]:.0f} ms)"


def report(results: list[dict], new_tokens: int) -> str:
    lines = [f"A class generating at once, in-process: {new_tokens} greedy tokens each, different prompts, started together",
             "visitors  tokens/s  vs one  first token (median / p95 / max)  whole (min-max)  passes  rows/pass  ms/pass  records ms/pass  peak MB"
             "  prefill passes (prompts, ms)"]
    for r in results:
        vs = f"{r['vs_one']:.2f}x" if r["vs_one"] else "-"
        f = r["first_s"]
        lines.append(f"{r['visitors']:>8}  {r['tokens_per_s']:>8.1f}  {vs:>6}  {statistics.median(f):>6.2f} / {p95(f):.2f} / {max(f):.2f} s"
                     f"          {min(r['total_s']):.1f}-{max(r['total_s']):.1f} s  {r['passes']:>6}  {r['rows_per_pass']:>9.1f}  {r['pass_ms'] or 0:>7.0f}  {r['records_ms'] or 0:>15.0f}  {r['peak_rss_mb']:>7.0f}"
                     f"  {_prefills(r['prefills'])}")
    return "\n".join(lines)


__all__ = ["load_as_the_app_does", "PROMPTS", "p95", "report", "run", "run_class"]
