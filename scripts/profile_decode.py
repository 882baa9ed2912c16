"""Where a traced decode step's time goes, beside plain `model.generate` (docs/decode_profile.md).

Loads the embedded model, decodes `--new-tokens` greedily with the traced generator under
cProfile, and prints per decode step: the wall time of plain `generate` and of the traced
generator (measured without the profiler, alternating), then from the profile the step's parts
(the forward pass, the sampling stages, the record's fields) and the functions outside the
model's modules with the most own time. The profiler slows Python work more than torch's, so
its figures overstate the Python parts. Run it in two checkouts
to compare before and after.

    .venv/bin/python scripts/profile_decode.py [--new-tokens 48] [--top 14]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.bench import alone as bench
from pipeline.generate import start  # noqa: E402
from pipeline.loading import load_model  # noqa: E402
from pipeline.trace.records import Settings  # noqa: E402


def _traced_steps(lm, prompt: str, n: int, prof: cProfile.Profile | None = None) -> tuple[float, list[float]]:
    """Seconds for the whole run, and each decode step's wall time from one record to the next
    (ms). With `prof`, the decode steps run under the profiler."""
    it = iter(start(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), ignore_eos=True))
    t0 = time.perf_counter()
    next(it)  # the prefill is not a decode step
    walls, t = [], time.perf_counter()
    if prof is not None:
        prof.enable()
    for _step in it:
        now = time.perf_counter()
        walls.append((now - t) * 1000.0)
        t = now
    if prof is not None:
        prof.disable()
    return time.perf_counter() - t0, walls


PARTS = {  # (file's end, function): what the line says
    ("capture.py", "run_with_cache"): "the forward pass with the capture on",
    ("capture.py", "capture"): "  installing and removing the capture",
    ("sampling.py", "build_stages"): "building the sampling stages",
    ("sampling.py", "apply_stages"): "the stages over the full vocabulary",
    ("sampling.py", "greedy_or_draw"): "choosing the token",
    ("generate.py", "record_fields"): "the step's record fields",
    ("generate.py", "top_n"): "  the 100 most likely tokens",
    ("generate.py", "_query_rows"): "  attention rows to numpy",
    ("capture.py", "residual_stream"): "  the residual stream",
    ("tokens.py", "pieces"): "  the candidates' pieces",
}


def _parts(stats: pstats.Stats, steps: int) -> list[tuple[float, str]]:
    out = []
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        for (end, fn), what in PARTS.items():
            if name == fn and file.endswith(end):
                out.append((ct * 1000.0 / steps, f"{what} ({end} {fn})"))
    order = list(PARTS.values())
    return sorted(out, key=lambda r: next(i for i, w in enumerate(order) if r[1].startswith(w)))


def _outside_forward(stats: pstats.Stats, steps: int, top: int) -> list[tuple[float, str]]:
    """(ms per step, function) of the `top` functions with most own time, torch's modules' own
    forward code left out (that is the model's time, which plain generate spends too)."""
    rows = []
    for (file, line, name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        if "/torch/nn/" in file or "/transformers/models/" in file:
            continue
        where = file.split("site-packages/")[-1] if "site-packages" in file else Path(file).name
        rows.append((tt * 1000.0 / steps, f"{name} ({where}:{line})"))
    return sorted(rows, reverse=True)[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--top", type=int, default=14)
    a = ap.parse_args(argv)
    lm = load_model(None)
    prompt = bench.DEFAULT_PROMPT
    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    bench._plain(lm, ids, 4)
    bench._traced(lm, prompt, 4)
    plain, traced, walls = [], [], []
    for i in range(a.repeats):
        for kind in (("plain", "traced") if i % 2 == 0 else ("traced", "plain")):
            if kind == "plain":
                dt, n = bench._plain(lm, ids, a.new_tokens)
                plain.append(dt * 1000.0 / n)
            else:
                dt, w = _traced_steps(lm, prompt, a.new_tokens)
                traced.append(dt * 1000.0 / a.new_tokens)
                walls += w
    p, t = statistics.median(plain), statistics.median(traced)
    w = statistics.median(walls)
    print(f"{a.new_tokens} tokens greedy, {a.repeats} alternating runs each (medians):")
    print(f"  plain model.generate, whole run  {p:6.2f} ms a token")
    print(f"  traced generator, whole run      {t:6.2f} ms a token   (traced/plain speed {p / t:.3f})")
    print(f"  traced decode step               {w:6.2f} ms   (wall, from one record to the next)")
    prof = cProfile.Profile()
    _traced_steps(lm, prompt, a.new_tokens, prof)
    stats = pstats.Stats(prof)
    print(f"\na decode step's parts, ms per step under cProfile (cumulative; {a.new_tokens - 1} steps):")
    for ms, name in _parts(stats, a.new_tokens - 1):
        print(f"  {ms:7.3f}  {name}")
    print(f"\nmost own time outside the model's modules, ms per step under cProfile ({a.new_tokens - 1} steps):")
    for ms, name in _outside_forward(stats, a.new_tokens - 1, a.top):
        print(f"  {ms:6.3f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
