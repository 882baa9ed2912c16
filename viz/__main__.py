"""Command line: `python -m viz html TRACE --out FILE.html [--lang fr]` writes one self-contained page that
replays a trace (no server, no network), drawn by viz from a trace file that `python -m pipeline
trace` or the app wrote.

Errors a person can cause print one sentence on stderr and exit with status 2 (no traceback).
"""
from __future__ import annotations

import argparse
import sys

from viz.text import languages, speaking



def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m viz", description="Draw a trace of a language model generating text.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ht = sub.add_parser("html", help="write one self-contained HTML page replaying a trace: no server, no network")
    ht.add_argument("trace", help="a trace file (.json, or .json.gz) written by `python -m pipeline trace` or the app")
    ht.add_argument("--out", required=True, help="the .html file to write")
    ht.add_argument("--layer", type=int, default=0, help="the attention panel's block, from 0")
    ht.add_argument("--head", type=int, default=0, help="the attention panel's head, from 0")
    ht.add_argument("--max-frames", type=int, default=256, help="steps the page holds at most")
    ht.add_argument("--lang", default="en", choices=languages(), help="the page's language (its words and numbers)")
    return ap


def _html(a) -> int:
    from pipeline.errors import SettingsError
    from pipeline.trace.files import load

    from viz.viewer.page import write_html

    trace = load(a.trace)  # .json or .json.gz, /1 or /2
    m = trace.model
    if not trace.steps:
        raise SettingsError("the trace has no steps: generate at least one token")
    if not (0 <= a.layer < m.n_layers and 0 <= a.head < m.n_heads and a.max_frames >= 1):
        raise SettingsError(f"--layer must be 0 to {m.n_layers - 1}, --head 0 to {m.n_heads - 1}, --max-frames 1 or more")
    with speaking(a.lang):
        size = write_html(trace, a.out, layer=a.layer, head=a.head, max_frames=a.max_frames)
    print(f"[{min(len(trace.steps), a.max_frames)} of {len(trace.steps)} steps; {a.out}: {size / 1e6:.2f} MB]", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    from pipeline.cli import run_command
    from pipeline.errors import SettingsError, TraceFormatError

    a = _parser().parse_args(argv)
    return run_command({"html": _html}[a.cmd], a, (SettingsError, TraceFormatError))

if __name__ == "__main__":
    sys.exit(main())
