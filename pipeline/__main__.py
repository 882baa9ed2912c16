"""Command line: `python -m pipeline trace ...` writes a JSON trace; `python -m pipeline bench` measures.

Errors a person can cause print one sentence on stderr and exit with status 2 (no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .records import Settings

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline", description="Trace a real language model generating text.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    tr = sub.add_parser("trace", help="generate from a prompt and write a JSON trace (docs/TRACE_FORMAT.md)")
    tr.add_argument("--prompt", required=True, help="the text to continue (in chat mode: the user message)")
    tr.add_argument("--out", required=True, help="where to write the trace (.json)")
    tr.add_argument("--model", default=None, help="Hub id or local directory (default: embedded SmolLM2-135M-Instruct)")
    tr.add_argument("--max-new-tokens", type=int, default=64)
    tr.add_argument("--temperature", type=float, default=0.7, help="0 is greedy")
    tr.add_argument("--top-k", type=int, default=0, help="0 is off")
    tr.add_argument("--top-p", type=float, default=1.0, help="1.0 is off")
    tr.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0 is off")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--system-prompt", default=None, help="replaces the chat template's default system prompt")
    tr.add_argument("--raw", action="store_true", help="raw text: no chat template")
    tr.add_argument("--special-tokens", action="store_true", help="let special-token text in the prompt act as special tokens")
    tr.add_argument("--full", action="store_true", help="also write full-vocabulary logits, embeddings and hidden states")
    tr.add_argument("--quiet", action="store_true", help="do not stream the text to stdout")

    be = sub.add_parser("bench", help="plain model.generate vs the traced generator, side by side")
    be.add_argument("--model", default=None)
    be.add_argument("--prompt", default=None)
    be.add_argument("--new-tokens", type=int, default=48)
    be.add_argument("--repeats", type=int, default=5)
    be.add_argument("--json", default=None, help="also write the numbers to this file")
    return ap


def _trace(a) -> int:
    from .generate import start, validate
    from .loading import load_model
    from .sampling import SettingsError
    from .records import dumps

    settings = Settings(
        temperature=a.temperature,
        top_k=a.top_k,
        top_p=a.top_p,
        repetition_penalty=a.repetition_penalty,
        seed=a.seed,
        max_new_tokens=a.max_new_tokens,
        chat=not a.raw,
        system_prompt=a.system_prompt,
        parse_special=a.special_tokens,
    )
    validate(settings)  # before the model loads: a typo should not cost a minute
    if not a.prompt.strip():
        raise SettingsError("the prompt is empty: type some text for the model to continue")
    lm = load_model(a.model)
    gen = start(lm, a.prompt, settings)
    t0 = time.perf_counter()
    for step in gen:
        if not a.quiet:
            sys.stdout.write(step.text)
            sys.stdout.flush()
    dt = time.perf_counter() - t0
    trace = gen.trace()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(trace, full=a.full), encoding="utf-8")
    n = len(trace.steps)
    print(f"\n[{n} tokens in {dt:.2f} s, {n / dt:.1f} tokens/s; stop: {trace.stop_reason}; trace: {out}]", file=sys.stderr)
    return 0


def _bench(a) -> int:
    from . import bench
    from .loading import load_model

    from .sampling import SettingsError

    if a.new_tokens < 1 or a.repeats < 1:
        raise SettingsError("--new-tokens and --repeats must be at least 1")
    lm = load_model(a.model)
    r = bench.run(lm, prompt=a.prompt or bench.DEFAULT_PROMPT, new_tokens=a.new_tokens, repeats=a.repeats)
    print(bench.report(r))
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    from .loading import ModelLoadError
    from .sampling import SettingsError

    a = _parser().parse_args(argv)
    try:
        return _trace(a) if a.cmd == "trace" else _bench(a)
    except (SettingsError, ModelLoadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:  # e.g. the output file cannot be written
        print(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
