"""When does speculative decoding pay off? Two measured curves and the paper's arithmetic.

    curve = measure(lm, context=256)             # one target pass fed 1..9 tokens; each draft's cost per proposal
    break_even_alpha(curve, "layers:20", k=4)     # the acceptance rate a draft needs to beat plain decoding

A round with k proposals costs k draft proposals plus one target pass fed k + 1 tokens:

    round_ms(k) = k * d + T(k + 1)

and yields, on average, (1 - alpha^(k+1)) / (1 - alpha) tokens (Leviathan et al. 2023, eq. 1,
alpha the chance that a tested proposal is accepted). Plain decoding pays T(1) per token. So
the speed-up is

    S(alpha, k) = E[tokens](alpha, k) * T(1) / round_ms(k)

and the break-even alpha solves S = 1. Decoding one token is memory-bound: the pass reads every
weight once whether it is fed 1 token or 9, so T(k + 1) grows slowly. A draft that costs
(almost) nothing per proposal (prompt lookup) then pays off at a low alpha; a layer draft pays
for most of the model and its LM head on every proposal, so it needs an alpha a 135M model's
early layers never reach.

Only `measure` touches torch (imported inside it): viz/ reads CostCurve and the arithmetic.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Sequence

from pipeline.trace.records import expected_tokens_per_pass

CURVE_TOKENS = 9  # target passes fed 1 .. 9 tokens: k = 0 .. 8 proposals
DEFAULT_CONTEXT = 256
DEFAULT_DRAFTS = ("ngram", "layers:10", "layers:20", "layers:28")


@dataclass(frozen=True)
class DraftCost:
    spec: str
    kind: str  # "ngram" | "layers" | "model"
    ms_per_proposal: float  # median: one draft forward pass fed 1 token (its lock held for the pass only), or one lookup
    n_params: int  # parameters one proposal reads (0 for a lookup)


@dataclass(frozen=True)
class CostCurve:
    """Measured on one machine: the target's pass by tokens fed, and each draft's cost per proposal."""

    model: str
    context: int  # positions already in the KV cache when each measured pass runs
    tokens: tuple[int, ...]  # tokens fed to the target's pass: 1, 2, ...
    target_ms: tuple[float, ...]  # median ms of one target pass fed that many tokens (capture hooks on, as generation runs it)
    drafts: tuple[DraftCost, ...]
    repeats: int
    threads: int  # torch threads
    machine: str  # CPU and core count, in words
    date: str

    def pass_ms(self, n_tokens: int) -> float:
        """T(n): one target pass fed n tokens (measured for 1 .. len(tokens))."""
        return self.target_ms[self.tokens.index(n_tokens)]

    def draft(self, spec: str) -> DraftCost:
        return next(d for d in self.drafts if d.spec == spec)

    @property
    def max_k(self) -> int:
        return max(self.tokens) - 1


def round_ms(curve: CostCurve, draft_ms: float, k: int) -> float:
    """k proposals and one target pass fed k + 1 tokens (the context's newest token and the proposals)."""
    return k * draft_ms + curve.pass_ms(k + 1)


def speedup(curve: CostCurve, draft_ms: float, k: int, alpha: float) -> float:
    """Expected tokens per round over the round's cost, against plain decoding's T(1) per token."""
    return expected_tokens_per_pass(alpha, k) * curve.pass_ms(1) / round_ms(curve, draft_ms, k)


def break_even_alpha(curve: CostCurve, draft: str | float, k: int) -> float | None:
    """The acceptance rate at which k proposals a round cost what they save (speed-up 1); None
    when even alpha = 1 (every proposal accepted) is slower than plain decoding."""
    d = curve.draft(draft).ms_per_proposal if isinstance(draft, str) else float(draft)
    if speedup(curve, d, k, 1.0) < 1.0:
        return None
    if speedup(curve, d, k, 0.0) >= 1.0:
        return 0.0
    lo, hi = 0.0, 1.0  # the speed-up grows with alpha: bisect
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if speedup(curve, d, k, mid) < 1.0 else (lo, mid)
    return hi


def to_json(curve: CostCurve) -> str:
    return json.dumps(dataclasses.asdict(curve), indent=1)


def from_json(text: str) -> CostCurve:
    d = json.loads(text)
    d["tokens"], d["target_ms"] = tuple(d["tokens"]), tuple(d["target_ms"])
    d["drafts"] = tuple(DraftCost(**x) for x in d["drafts"])
    return CostCurve(**d)


def machine_words() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def measure(lm, *, context: int = DEFAULT_CONTEXT, max_tokens: int = CURVE_TOKENS, drafts: Sequence[str] = DEFAULT_DRAFTS,
            repeats: int = 7, seed: int = 0) -> CostCurve:
    """Time one target pass fed 1 .. max_tokens tokens after `context` cached positions, and each
    draft's cost per proposal at the same context. Every repeat runs every measurement once, in
    turn (drift on a shared machine hits all alike); medians. Times are the captures' own `.ms`:
    the model's lock held for the pass only, never the wait for it."""
    import numpy as np
    import torch
    from transformers import DynamicCache

    from pipeline.capture import run_with_cache
    from pipeline.speculative.draft import lookup, make_draft
    from pipeline.errors import SettingsError

    if not 1 <= context <= lm.info.context_length - max_tokens:
        raise SettingsError(f"the context for the cost curve must be 1 to {lm.info.context_length - max_tokens} tokens, not {context}")
    rng = np.random.default_rng(seed)
    ids = [int(i) for i in rng.integers(0, lm.info.vocab_size, size=context + max_tokens)]  # no repeats to look up: the lookup's worst case
    made = [make_draft(lm, spec) for spec in drafts]
    with torch.inference_mode():
        tcache = DynamicCache(config=lm.model.config)
        run_with_cache(lm, ids[:context], cache=tcache, hooks=False)  # prefill, untimed
        dcaches = []
        for d in made:
            c = d.new_cache()
            if c is not None:
                run_with_cache(d, ids[:context], cache=c, hooks=False)
            dcaches.append(c)
        target = {n: [] for n in range(1, max_tokens + 1)}
        per_draft = {d.info.spec: [] for d in made}
        for _ in range(repeats + 1):  # the first round warms up, and is dropped
            for n in range(1, max_tokens + 1):
                cap = run_with_cache(lm, ids[context:context + n], cache=tcache, keep=n)  # as a verification pass runs
                tcache.crop(-n)
                target[n].append(cap.ms)
            for d, c in zip(made, dcaches):
                if c is None:
                    t0 = time.perf_counter()
                    lookup(ids[:context], d.max_ngram, max_tokens - 1, d.min_ngram)
                    per_draft[d.info.spec].append((time.perf_counter() - t0) * 1000.0)
                else:
                    cap = run_with_cache(d, ids[context:context + 1], cache=c, hooks=False)
                    c.crop(-1)
                    per_draft[d.info.spec].append(cap.ms)
    med = lambda xs: statistics.median(xs[1:])  # noqa: E731
    return CostCurve(
        model=lm.info.id,
        context=context,
        tokens=tuple(range(1, max_tokens + 1)),
        target_ms=tuple(med(target[n]) for n in range(1, max_tokens + 1)),
        drafts=tuple(DraftCost(d.info.spec, d.info.kind, med(per_draft[d.info.spec]), d.info.n_params) for d in made),
        repeats=repeats,
        threads=torch.get_num_threads(),
        machine=machine_words(),
        date=time.strftime("%Y-%m-%d"),
    )


def report(curve: CostCurve, ks: Sequence[int] = (1, 2, 4, 8)) -> str:
    """The two curves and the break-even acceptance rate of each draft at each k, as text."""
    t1 = curve.pass_ms(1)
    lines = [
        f"model {curve.model}, {curve.context} positions cached, median of {curve.repeats} alternating repeats, "
        f"{curve.threads} torch threads, {curve.machine}",
        "one target pass (capture on, lock held for the pass only), by tokens fed:",
        "  tokens fed   " + "".join(f"{n:>8d}" for n in curve.tokens),
        "  ms           " + "".join(f"{m:8.1f}" for m in curve.target_ms),
        "  × 1 token    " + "".join(f"{m / t1:8.2f}" for m in curve.target_ms),
        "draft cost per proposal:",
    ]
    for d in curve.drafts:
        lines.append(f"  {d.spec:<12s} {d.ms_per_proposal:8.3f} ms = {d.ms_per_proposal / t1:5.2f} of a 1-token target pass"
                     f" ({d.n_params / 1e6:.1f}M parameters)")
    ks = [k for k in ks if k <= curve.max_k]
    lines.append("break-even acceptance rate alpha (speed-up 1; '-' = slower even if every proposal is accepted), "
                 "and the speed-up at alpha = 0.5 / 0.8:")
    lines.append("  draft        " + "".join(f"{'k=' + str(k):>22s}" for k in ks))
    for d in curve.drafts:
        cells = []
        for k in ks:
            a = break_even_alpha(curve, d.spec, k)
            s5, s8 = speedup(curve, d.ms_per_proposal, k, 0.5), speedup(curve, d.ms_per_proposal, k, 0.8)
            cells.append(f"{'-' if a is None else f'{a:.2f}':>6s} ({s5:4.2f}×/{s8:4.2f}×)")
        lines.append(f"  {d.spec:<12s}" + "".join(f"{c:>22s}" for c in cells))
    return "\n".join(lines)
