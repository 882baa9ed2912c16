"""Command line: `python -m pipeline trace ...` writes a JSON trace; `python -m pipeline bench` measures.
The page that replays a trace is drawn by viz: `python -m viz html TRACE --out FILE.html` (pipeline
never imports viz; `python -m pipeline html` says so and exits with status 2).
`trace` and `bench` take `--speculative [--k K] [--draft ngram[:N] | layers:N | MODEL]` for speculative decoding.
`bench --speculative --tasks copy` runs a fixed set of copy/edit prompts and one free-writing
prompt and prints a table; `bench --cost-curve` prints what a target pass costs by tokens fed,
each draft's cost per proposal, and the acceptance rate each needs to pay off.
`samples` draws N continuations as one batch and writes them (docs/TRACE_FORMAT.md, "Samples file");
`bench --samples N` times N together against one alone.

Errors a person can cause print one sentence on stderr and exit with status 2 (no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipeline.cli import EXIT_USAGE, run_command
from pipeline.trace.records import Settings
HTML_MOVED = "use `python -m viz html TRACE --out FILE.html` (the same arguments)"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline", description="Trace a real language model generating text.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    tr = sub.add_parser("trace", help="generate from a prompt and write a JSON trace (docs/TRACE_FORMAT.md)")
    tr.add_argument("--prompt", required=True, help="the text to continue (in chat mode: the user message)")
    tr.add_argument("--out", required=True, help="where to write the trace (.json, or .json.gz to compress it)")
    tr.add_argument("--model", default=None, help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")
    tr.add_argument("--max-new-tokens", type=int, default=64)
    tr.add_argument("--temperature", type=float, default=0.7, help="0 is greedy")
    tr.add_argument("--top-k", type=int, default=0, help="0 is off")
    tr.add_argument("--top-p", type=float, default=1.0, help="1.0 is off")
    tr.add_argument("--min-p", type=float, default=0.0, help="keep tokens at least this share of the top one's probability; 0 is off")
    tr.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0 is off")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--system-prompt", default=None, help="replaces the chat template's default system prompt")
    tr.add_argument("--raw", action="store_true", help="raw text: no chat template")
    tr.add_argument("--special-tokens", action="store_true", help="let special-token text in the prompt act as special tokens")
    tr.add_argument("--full", action="store_true", help="also write full-vocabulary logits, embeddings and hidden states")
    tr.add_argument("--quiet", action="store_true", help="do not stream the text to stdout")
    _speculative_args(tr)

    be = sub.add_parser("bench", help="plain model.generate vs the traced generator (or, with --speculative, traced vs speculative), side by side")
    be.add_argument("--model", default=None)
    be.add_argument("--prompt", default=None)
    be.add_argument("--new-tokens", type=int, default=None, help="default 48 (with --tasks: 128, each task stopping at its end)")
    be.add_argument("--repeats", type=int, default=5)
    be.add_argument("--json", default=None, help="also write the numbers to this file")
    be.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: torch's own choice; 1 is steadier when other processes share the cores)")
    be.add_argument("--tasks", default=None, choices=["copy"],
                    help="with --speculative: run a fixed task set instead of --prompt (copy: repeat a list, fix a typo, "
                         "list to JSON, and one free-writing prompt) and print a table")
    be.add_argument("--cost-curve", action="store_true",
                    help="time one target pass fed 1..9 tokens and each draft's cost per proposal; print the break-even acceptance rates")
    be.add_argument("--context", type=int, default=None, help="with --cost-curve: positions already cached (default 256)")
    be.add_argument("--drafts", default=None, help="with --cost-curve: comma-separated drafts (default ngram,layers:10,layers:20,layers:28)")
    be.add_argument("--samples", type=int, default=None,
                    help="time N continuations decoded as one batch against one alone (pipeline/samples.py; --new-tokens default 24)")
    be.add_argument("--visitors", default=None,
                    help="a class at once: comma-separated numbers of visitors (e.g. 1,4,8,16), each a captured generation on a thread of "
                         "its own, through the decode loop (pipeline/batching.py; --new-tokens default 32)")
    _speculative_args(be)

    _ablate_args(sub)
    _samples_args(sub)
    sub.add_parser("html", help=f"moved: {HTML_MOVED}")
    return ap


def _speculative_args(p: argparse.ArgumentParser) -> None:
    from pipeline.speculative.draft import DEFAULT_DRAFT

    g = p.add_argument_group("speculative decoding (--k or --draft turn it on too)")
    g.add_argument("--speculative", action="store_true", help="a draft proposes k tokens, the model checks them in one pass")
    g.add_argument("--k", type=int, default=None, help="tokens the draft proposes per round, 1 to 16 (default 4)")
    g.add_argument(
        "--draft",
        default=None,
        help="ngram or ngram:N (prompt lookup: copy what followed the last N tokens' earlier occurrence; no model), "
        "layers:N (the model's own first N layers) or a smaller model with the same tokenizer: Hub id or local directory "
        f"(default: {DEFAULT_DRAFT})",
    )


def _ablate_args(sub) -> None:
    ab = sub.add_parser("ablate", help="switch one part of the model off for the next token and write both distributions (docs/ablation.md)")
    ab.add_argument("--prompt", required=True, help="the text to continue (in chat mode: the user message)")
    ab.add_argument("--layer", type=int, required=True, help="the block, from 0")
    ab.add_argument("--head", type=int, default=None, help="switch off this attention head of the block")
    ab.add_argument("--part", choices=["attn", "mlp"], default=None, help="switch off the whole attention block or the MLP block")
    ab.add_argument("--step", type=int, default=0, help="the step after this many greedy tokens (0: the next token after the prompt)")
    ab.add_argument("--raw", action="store_true", help="raw text: no chat template")
    ab.add_argument("--model", default=None, help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")
    ab.add_argument("--out", required=True, help="where to write the JSON file")


def _ablate(a) -> int:
    from pipeline.inside.ablate import ablate, check_part, greedy_step, to_json
    from pipeline.errors import SettingsError
    from pipeline.loading import load_model

    if (a.head is None) == (a.part is None):
        raise SettingsError("switch off one thing: --head H (one attention head) or --part attn or --part mlp (a whole block)"
                            + (", not both" if a.part else ""))
    if a.layer < 0 or (a.head is not None and a.head < 0) or a.step < 0:
        raise SettingsError("--layer, --head and --step count from 0: give whole numbers, 0 or more")
    lm = load_model(a.model)
    part = "head" if a.head is not None else a.part
    check_part(lm.info.n_layers, lm.info.n_heads, a.layer, part, a.head)  # before the greedy tokens are generated
    prompt_ids, step = greedy_step(lm, a.prompt, step=a.step, chat=not a.raw)
    rec = ablate(lm, step.context_ids, step.token_id, layer=a.layer, part=part, head=a.head)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_json(rec, prompt_ids, step=a.step)), encoding="utf-8")
    what = f"head {a.head} of block {a.layer}" if part == "head" else f"block {a.layer}'s {'attention' if part == 'attn' else 'MLP'}"
    print(f"{what} off: {lm.tokens.piece(rec.token_id)!r} {rec.chosen_before:.2%} -> {rec.chosen_after:.2%}; {out}", file=sys.stderr)
    return 0


def _speculative_options(a) -> dict | None:
    """{k, draft} when speculative decoding is asked for; checked before any model loads."""
    from pipeline.speculative.draft import check_spec
    from pipeline.speculative.decoding import DEFAULT_K, validate_k

    if not (a.speculative or a.k is not None or a.draft is not None):
        return None
    k = validate_k(DEFAULT_K if a.k is None else a.k)
    check_spec(a.draft)  # a malformed layers:N / ngram:N is refused here; a layer count's range needs the model
    return {"k": k, "draft": a.draft}


def _trace(a) -> int:
    from pipeline.generate import start, validate
    from pipeline.loading import load_model
    from pipeline.errors import SettingsError
    from pipeline.trace.files import save

    settings = Settings(
        temperature=a.temperature,
        top_k=a.top_k,
        top_p=a.top_p,
        min_p=a.min_p,
        repetition_penalty=a.repetition_penalty,
        seed=a.seed,
        max_new_tokens=a.max_new_tokens,
        chat=not a.raw,
        system_prompt=a.system_prompt,
        parse_special=a.special_tokens,
    )
    validate(settings)  # before the model loads: a typo should not cost a minute
    spec = _speculative_options(a)
    if not a.prompt.strip():
        raise SettingsError("the prompt is empty: type some text for the model to continue")
    lm = load_model(a.model)
    if spec is None:
        gen = start(lm, a.prompt, settings)
        steps = iter(gen)
    else:
        from pipeline.speculative.decoding import start_speculative

        gen = start_speculative(lm, a.prompt, settings, **spec)
        steps = gen.iter_steps()
    t0 = time.perf_counter()
    for step in steps:
        if not a.quiet:
            sys.stdout.write(step.text)
            sys.stdout.flush()
    dt = time.perf_counter() - t0
    trace = gen.trace()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t1 = time.perf_counter()
    save(trace, out, full=a.full)  # .gz: gzip; streamed step by step
    wrote = f"{out.stat().st_size / 1e6:.1f} MB written in {time.perf_counter() - t1:.1f} s"
    n = len(trace.steps)
    extra = ""
    if spec is not None:
        sm = gen.summary()
        acc = "n/a" if sm["acceptance_rate"] is None else f"{sm['acceptance_rate']:.0%}"
        extra = f"; draft {gen.draft.info.id}, k={gen.k}: {sm['rounds']} rounds, {acc} of proposals accepted, {sm['tokens_per_target_pass']:.2f} tokens per target pass"
    print(f"\n[{n} tokens in {dt:.2f} s, {n / dt:.1f} tokens/s; stop: {trace.stop_reason}{extra}; trace: {out}, {wrote}]", file=sys.stderr)
    return 0


def _bench(a) -> int:
    from pipeline.bench import alone as bench
    from pipeline.bench import classroom as bench_class
    from pipeline.loading import load_model

    from pipeline.errors import SettingsError

    if (a.new_tokens is not None and a.new_tokens < 1) or a.repeats < 1 or (a.threads is not None and a.threads < 1):
        raise SettingsError("--new-tokens, --repeats and --threads must be at least 1")
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    if a.samples is not None:
        return _bench_samples(a)
    if a.visitors:
        return _bench_class(a)
    spec = _speculative_options(a)
    if a.tasks and spec is None:
        spec = _speculative_options(argparse.Namespace(speculative=True, k=a.k, draft=a.draft))
    if a.cost_curve:
        from pipeline.speculative import cost as speculative_cost
        from pipeline.speculative.draft import check_spec

        drafts = tuple(x.strip() for x in (a.drafts or ",".join(speculative_cost.DEFAULT_DRAFTS)).split(",") if x.strip())
        for d in drafts:
            check_spec(d)
        lm = load_model(a.model)
        curve = speculative_cost.measure(lm, context=a.context or speculative_cost.DEFAULT_CONTEXT, drafts=drafts, repeats=a.repeats)
        print(speculative_cost.report(curve))
        if a.json:
            Path(a.json).write_text(speculative_cost.to_json(curve))
        return 0
    lm = bench_class.load_as_the_app_does(a.model)  # (as the app loads it: on a thread that then ends)
    prompt = a.prompt or bench.DEFAULT_PROMPT
    if a.tasks:
        r = bench.run_tasks(lm, a.tasks, new_tokens=a.new_tokens or bench.TASK_TOKENS, repeats=a.repeats, **spec)
        print(bench.report_tasks(r))
    elif spec is None:
        r = bench.run(lm, prompt=prompt, new_tokens=a.new_tokens or 48, repeats=a.repeats)
        print(bench.report(r))
    else:
        r = bench.run_speculative(lm, prompt=prompt, new_tokens=a.new_tokens or 48, repeats=a.repeats, **spec)
        print(bench.report_speculative(r))
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


def _samples_args(sub) -> None:
    sa = sub.add_parser("samples", help="draw N continuations as one batch and write them as JSON (docs/TRACE_FORMAT.md, Samples file)")
    sa.add_argument("--prompt", required=True, help="the text to continue (in chat mode: the user message)")
    sa.add_argument("--out", required=True, help="where to write the JSON file")
    sa.add_argument("--n", type=int, default=16, help="how many continuations, 1 to 32")
    sa.add_argument("--max-new-tokens", type=int, default=24, help="new tokens per continuation at most, 1 to 256")
    sa.add_argument("--temperature", type=float, default=0.7, help="0 is greedy")
    sa.add_argument("--top-k", type=int, default=0, help="0 is off")
    sa.add_argument("--top-p", type=float, default=1.0, help="1.0 is off")
    sa.add_argument("--min-p", type=float, default=0.0, help="keep tokens at least this share of the top one's probability; 0 is off")
    sa.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0 is off")
    sa.add_argument("--seed", type=int, default=0, help="continuation i draws from the stream of (seed, i)")
    sa.add_argument("--system-prompt", default=None, help="replaces the chat template's default system prompt")
    sa.add_argument("--raw", action="store_true", help="raw text: no chat template")
    sa.add_argument("--model", default=None, help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")


def _samples(a) -> int:
    from pipeline.errors import SettingsError
    from pipeline.generate import validate
    from pipeline.loading import load_model
    from pipeline.trace.samples import to_json
    from pipeline.samples import samples_from_prompt, validate_counts

    settings = Settings(temperature=a.temperature, top_k=a.top_k, top_p=a.top_p, min_p=a.min_p, repetition_penalty=a.repetition_penalty,
                        seed=a.seed, max_new_tokens=a.max_new_tokens, chat=not a.raw, system_prompt=a.system_prompt)
    validate(settings)  # before the model loads
    validate_counts(a.n, a.max_new_tokens)
    if not a.prompt.strip():
        raise SettingsError("the prompt is empty: type some text for the model to continue")
    lm = load_model(a.model)
    s = samples_from_prompt(lm, a.prompt, settings, n=a.n, max_new_tokens=a.max_new_tokens)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_json(s), ensure_ascii=False), encoding="utf-8")
    print(f"{s.n} continuations of up to {s.max_new_tokens} tokens in {s.seconds:.2f} s ({s.forward_passes} forward passes); {out}",
          file=sys.stderr)
    return 0


def _bench_class(a) -> int:
    from pipeline.bench import classroom as bench_class
    from pipeline.errors import SettingsError

    try:
        visitors = [int(x) for x in a.visitors.split(",") if x.strip()]
    except ValueError:
        visitors = []
    if not visitors or min(visitors) < 1:
        raise SettingsError(f"--visitors takes whole numbers of at least 1, comma-separated (like 1,4,8,16), not {a.visitors!r}")
    lm = bench_class.load_as_the_app_does(a.model)
    n = a.new_tokens or 32
    r = bench_class.run(lm, visitors, n, repeats=a.repeats)
    print(bench_class.report(r, n))
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    return 0


def _bench_samples(a) -> int:
    from pipeline.bench import alone as bench
    from pipeline.loading import load_model
    from pipeline.samples import validate_counts

    validate_counts(a.samples, a.new_tokens or 24)
    lm = load_model(a.model)
    r = bench.run_samples(lm, prompt=a.prompt or bench.DEFAULT_PROMPT, n=a.samples, new_tokens=a.new_tokens or 24, repeats=a.repeats)
    print(bench.report_samples(r))
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    from pipeline.errors import ModelLoadError, SettingsError, TraceFormatError

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["html"]:  # whatever its arguments: one line, no usage text
        print(f"error: the html command moved: {HTML_MOVED}", file=sys.stderr)
        return EXIT_USAGE
    a = _parser().parse_args(argv)
    return run_command({"trace": _trace, "bench": _bench, "ablate": _ablate, "samples": _samples}[a.cmd], a, (SettingsError, ModelLoadError, TraceFormatError))

if __name__ == "__main__":
    sys.exit(main())
