"""Side-by-side benchmark: plain `model.generate` against the traced generator, one run, one machine.

Both decode greedily the same number of new tokens from the same prompt with the same model
object; runs alternate in pairs (plain then traced, traced then plain, ...) so drift on a noisy
machine hits both alike, and the ratio is the median of the pairs' ratios (their range printed). `run_speculative` does the same for the
traced generator against the speculative one (pipeline/speculative/decoding.py).
"""
from __future__ import annotations

import statistics
import time

import torch

from pipeline.generate import start
from pipeline.loading import LoadedModel
from pipeline.model_thread import run_on
from pipeline.trace.records import Settings

DEFAULT_PROMPT = "Explain in two sentences why the sky is blue."


def _plain(lm: LoadedModel, ids: list[int], n: int) -> tuple[float, int]:
    """Plain `generate`, timed where the model's passes run (pipeline.model_thread: the loop's thread)."""
    x = torch.as_tensor([ids], dtype=torch.long)

    def plain():
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = lm.model.generate(
                x, attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                pad_token_id=lm.tokenizer.eos_token_id,
            )
        return time.perf_counter() - t0, out.shape[1] - x.shape[1]

    return run_on(lm, plain)


def _traced(lm: LoadedModel, prompt: str, n: int) -> tuple[float, int, float, list[float]]:
    # greedy, but never stopping at end-of-sequence, to match `min_new_tokens=n` above
    gen = start(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), ignore_eos=True)
    t0 = time.perf_counter()
    steps = list(gen)
    dt = time.perf_counter() - t0
    return dt, len(steps), steps[0].ms, [s.ms for s in steps[1:]]


def run(lm: LoadedModel, *, prompt: str = DEFAULT_PROMPT, new_tokens: int = 48, repeats: int = 3) -> dict:
    """`repeats` pairs of runs, plain and traced side by side, the order swapped every pair
    (plain-traced, traced-plain, ...) so that neither always runs on the other's warm caches or
    into the other's noise. The ratio is the median over the pairs of traced/plain tokens/s: a
    slow stretch of a shared machine hits both runs of a pair, and the median drops a pair it split."""
    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    _plain(lm, ids, 4)  # warm-up of both paths
    _traced(lm, prompt, 4)
    plain, traced, prefill, decode = [], [], [], []
    for i in range(repeats):
        for kind in (("plain", "traced") if i % 2 == 0 else ("traced", "plain")):
            if kind == "plain":
                dt, n = _plain(lm, ids, new_tokens)
                plain.append(n / dt)
            else:
                dt, n, pre_ms, dec_ms = _traced(lm, prompt, new_tokens)
                traced.append(n / dt)
                prefill.append(pre_ms)
                decode.append(statistics.median(dec_ms))
    ratios = [t / p for p, t in zip(plain, traced)]
    p, t = statistics.median(plain), statistics.median(traced)
    return {
        "model": lm.info.id,
        "prompt_tokens": len(ids),
        "new_tokens": new_tokens,
        "repeats": repeats,
        "plain_tokens_per_s": p,
        "traced_tokens_per_s": t,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "ratio_of_medians": t / p,
        "plain_runs": plain,
        "traced_runs": traced,
        "prefill_ms": statistics.median(prefill),
        "decode_ms_per_token": statistics.median(decode),
        "torch_threads": torch.get_num_threads(),
    }


def report(r: dict) -> str:
    rs = r["ratios"]
    return "\n".join(
        [
            f"model {r['model']}, prompt {r['prompt_tokens']} tokens, {r['new_tokens']} new tokens, {r['repeats']} alternating pairs "
            f"(order swapped every pair), {r['torch_threads']} torch threads",
            f"plain model.generate : {r['plain_tokens_per_s']:7.2f} tokens/s  (median; runs {min(r['plain_runs']):.2f} to {max(r['plain_runs']):.2f})",
            f"traced generator     : {r['traced_tokens_per_s']:7.2f} tokens/s  (median; runs {min(r['traced_runs']):.2f} to {max(r['traced_runs']):.2f})",
            f"ratio traced/plain   : {r['ratio']:7.3f}  (median of the pairs; range {min(rs):.3f} to {max(rs):.3f}: {', '.join(f'{x:.3f}' for x in rs)})",
            f"prefill              : {r['prefill_ms']:7.1f} ms",
            f"decode               : {r['decode_ms_per_token']:7.1f} ms/token (traced, the records' own times)",
        ]
    )


# ---------------------------------------------------------------------------------------
# Speculative decoding against the plain traced generator

# Tasks whose reply copies or edits its input (prompt lookup finds most of it), and one that does not.
COPY_TASKS = (
    ("repeat a list", "Repeat this list exactly as it is, one item per line:\n"
     "- 2 cups of flour\n- 1 teaspoon of baking soda\n- 3 large eggs\n- 1 cup of whole milk\n"
     "- 2 tablespoons of melted butter\n- a pinch of salt\n- 1 cup of fresh blueberries"),
    ("fix a typo", "Fix the spelling mistake in this paragraph and write the whole paragraph out again:\n"
     "The lighthouse stood at the edge of the cliff for two hundred years. Every night its keeper climbed the "
     "narrow stairs, lit the great lamp and watched the ships pass safley through the dark water below."),
    # The list is a small table: SmolLM2-135M copies each name and age from it into the JSON (from a
    # "name, age" list it invents names; the bench compares speed on text the model really writes).
    ("list to JSON", "Convert this list to JSON, with one object per person holding the keys \"name\" and \"age\".\n"
     "| name | age |\n| Alice | 34 |\n| Bob | 27 |\n| Carol | 45 |\n| David | 19 |\n| Eve | 52 |"),
)
FREE_TASKS = (("free writing", "Write a short story about a fox who finds a lantern in the forest."),)
TASKS = {"copy": COPY_TASKS + FREE_TASKS}
TASK_TOKENS = 128  # new tokens at most per task; a task stops earlier at its end of sequence


def _gen_ms(steps_or_rounds) -> float:
    """The generation's own time, from its records: each step's (or round's) ms, timed without the
    waits for the model's lock."""
    return sum(x.ms for x in steps_or_rounds)


def _plain_run(lm: LoadedModel, prompt: str, n: int, ignore_eos: bool) -> tuple[float, list[int]]:
    gen = start(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), ignore_eos=ignore_eos)
    steps = list(gen)
    return _gen_ms(steps) / 1000.0, [s.token_id for s in steps]


def _speculative(lm: LoadedModel, prompt: str, n: int, k: int, draft, ignore_eos: bool) -> tuple[float, list[int], dict]:
    from pipeline.speculative.decoding import start_speculative

    gen = start_speculative(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), k=k, draft=draft, ignore_eos=ignore_eos)
    for _ in gen:
        pass
    return _gen_ms(gen.rounds) / 1000.0, [s.token_id for s in gen.steps], gen.summary()


def run_speculative(lm: LoadedModel, *, prompt: str = DEFAULT_PROMPT, new_tokens: int = 48, repeats: int = 3, k: int = 4, draft=None,
                    ignore_eos: bool = True, warm: bool = True) -> dict:
    """Plain traced generator vs speculative generator (both greedy, both recording every
    step): same prompt, same tokens, alternating runs. Greedy makes the two texts identical
    (checked), so only the cost differs. Times are the records' own (each pass timed inside the
    model's lock, never the wait for it); the speed-up is the median over the alternating pairs
    of speculative tokens/s / plain tokens/s."""
    from pipeline.speculative.draft import make_draft
    from pipeline.speculative.decoding import validate_k

    k = validate_k(k)
    d = make_draft(lm, draft)
    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    if warm:  # warm-up of both paths
        _plain_run(lm, prompt, 4, True)
        _speculative(lm, prompt, 4, k, d, True)
    plain, spec, ratios, summary, n = [], [], [], {}, 0
    for _ in range(repeats):
        dt_p, toks_p = _plain_run(lm, prompt, new_tokens, ignore_eos)
        dt_s, toks_s, summary = _speculative(lm, prompt, new_tokens, k, d, ignore_eos)
        assert toks_s == toks_p, "greedy speculative text differs from greedy plain text: a bug in the rule"
        n = len(toks_p)
        plain.append(n / dt_p)
        spec.append(n / dt_s)
        ratios.append(spec[-1] / plain[-1])
    return {
        "model": lm.info.id,
        "draft": d.info.id,
        "draft_spec": d.info.spec,
        "draft_kind": d.info.kind,
        "draft_layers": d.info.n_layers,
        "draft_params": d.info.n_params,
        "target_params": lm.info.n_params,
        "k": k,
        "prompt_tokens": len(ids),
        "new_tokens": n,
        "repeats": repeats,
        "plain_tokens_per_s": statistics.median(plain),
        "speculative_tokens_per_s": statistics.median(spec),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "acceptance_rate": summary["acceptance_rate"],
        "share_accepted": summary["share_accepted"],
        "tokens_per_target_pass": summary["tokens_per_target_pass"],
        "expected_tokens_per_target_pass": summary["expected_tokens_per_target_pass"],
        "rounds": summary["rounds"],
        "rounds_without_proposals": summary["rounds_without_proposals"],
        "draft_ms": summary["draft_ms"],
        "target_ms": summary["target_ms"],
        "torch_threads": torch.get_num_threads(),
    }


def _pct(x) -> str:
    return "  n/a" if x is None else f"{x:5.1%}"


def report_speculative(r: dict) -> str:
    exp = r["expected_tokens_per_target_pass"]
    return "\n".join(
        [
            f"model {r['model']}, prompt {r['prompt_tokens']} tokens, {r['new_tokens']} new tokens (greedy), {r['repeats']} alternating runs "
            f"(records' own times, lock held for the pass only), {r['torch_threads']} torch threads",
            f"draft {r['draft']} ({r['draft_params'] / 1e6:.1f}M of the target's {r['target_params'] / 1e6:.1f}M parameters per proposal), k = {r['k']}",
            f"plain traced generator : {r['plain_tokens_per_s']:7.2f} tokens/s",
            f"speculative generator  : {r['speculative_tokens_per_s']:7.2f} tokens/s",
            f"ratio speculative/plain: {r['ratio']:7.3f}  (median of the pairs: {', '.join(f'{x:.2f}' for x in r['ratios'])})",
            f"acceptance rate        : {_pct(r['acceptance_rate'])} of tested proposals (Leviathan et al.'s alpha); "
            f"{_pct(r['share_accepted'])} of all proposals",
            f"tokens per target pass : {r['tokens_per_target_pass']:7.2f} measured, "
            f"{'n/a' if exp is None else f'{exp:.2f}'} expected from alpha ((1 - a^(k+1)) / (1 - a))  "
            f"({r['rounds']} target passes, {r['rounds_without_proposals']} with nothing proposed)",
            f"time in the rounds     : draft {r['draft_ms']:.0f} ms, verify {r['target_ms']:.0f} ms (last run)",
        ]
    )


def run_tasks(lm: LoadedModel, tasks: str = "copy", *, new_tokens: int = TASK_TOKENS, repeats: int = 3, k: int = 4, draft=None) -> dict:
    """`run_speculative` on each prompt of a fixed task set, stopping at each reply's end of sequence."""
    if tasks not in TASKS:
        from pipeline.errors import SettingsError

        raise SettingsError(f"unknown task set '{tasks}': choose one of {', '.join(TASKS)}")
    rows = []
    for i, (name, prompt) in enumerate(TASKS[tasks]):
        r = run_speculative(lm, prompt=prompt, new_tokens=new_tokens, repeats=repeats, k=k, draft=draft, ignore_eos=False, warm=i == 0)
        rows.append({"task": name, "copy": (name, prompt) in COPY_TASKS, **r})
    return {"tasks": tasks, "rows": rows}


def report_tasks(t: dict) -> str:
    rows = t["rows"]
    r0 = rows[0]
    head = (f"model {r0['model']}, draft {r0['draft_spec']} ({r0['draft']}), k = {r0['k']}, greedy, up to "
            f"{max(r['new_tokens'] for r in rows)} new tokens, {r0['repeats']} alternating runs per task, {r0['torch_threads']} torch threads; "
            "times are the records' own (the model's lock held for the pass only)")
    cols = f"{'task':<14s} {'tokens':>6s} {'plain tok/s':>11s} {'spec tok/s':>10s} {'speed-up':>8s} {'alpha':>6s} {'of all':>6s} " \
           f"{'tok/pass':>8s} {'expected':>8s} {'plain steps':>11s}"
    lines = [head, cols, "-" * len(cols)]
    for r in rows:
        exp = r["expected_tokens_per_target_pass"]
        lines.append(
            f"{r['task']:<14s} {r['new_tokens']:>6d} {r['plain_tokens_per_s']:>11.2f} {r['speculative_tokens_per_s']:>10.2f} "
            f"{r['ratio']:>7.2f}× {_pct(r['acceptance_rate']):>6s} {_pct(r['share_accepted']):>6s} {r['tokens_per_target_pass']:>8.2f} "
            f"{'n/a' if exp is None else f'{exp:.2f}':>8s} {r['rounds_without_proposals']:>5d} of {r['rounds']:<3d}"
        )
    lines.append("alpha: accepted / tested proposals (Leviathan et al.); of all: accepted / all proposals; expected: "
                 "(1 - alpha^(k+1)) / (1 - alpha) per round's k; plain steps: rounds where nothing matched (one pass of one token)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Many continuations as one batch (pipeline/samples.py) against one alone

SAMPLES_SETTINGS = Settings(temperature=0.7, seed=0)  # sampled (not greedy), so each row's sampling work is counted


def run_samples(lm: LoadedModel, *, prompt: str = DEFAULT_PROMPT, n: int = 16, new_tokens: int = 24, repeats: int = 3) -> dict:
    """One continuation alone against `n` decoded together (pipeline.samples.measure_cost): the same prompt, settings and
    number of new tokens, end of sequence ignored, alternating runs; times are the generations' own."""
    from pipeline.samples import measure_cost

    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    return measure_cost(lm, ids, SAMPLES_SETTINGS, n=n, max_new_tokens=new_tokens, repeats=repeats)


def report_samples(r: dict) -> str:
    n, rs = r["n"], r["ratios"]
    return "\n".join(
        [
            f"model {r['model']}, prompt {r['prompt_tokens']} tokens, {r['new_tokens']} new tokens per continuation (temperature 0.7, "
            f"end of sequence ignored), {r['repeats']} alternating pairs, {r['torch_threads']} torch threads",
            f"N = 1 (one alone)    : {r['one_seconds']:7.3f} s  (median; runs {min(r['one_runs']):.3f} to {max(r['one_runs']):.3f})",
            f"N = {n:<2d} (one batch)  : {r['n_seconds']:7.3f} s  (median; runs {min(r['n_runs']):.3f} to {max(r['n_runs']):.3f})",
            f"ratio N={n}/N=1       : {r['ratio']:7.2f}  (median of the pairs: {', '.join(f'{x:.2f}' for x in rs)}); "
            f"{n / r['ratio']:.1f}x the continuations per second",
        ]
    )
