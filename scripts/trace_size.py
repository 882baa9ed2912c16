"""How big a trace file is, how long it takes to write, and how much memory the CLI needs.

Runs the real command line, `python -m pipeline trace --temperature 0 --out X.json.gz`, as a
child process on the embedded model (or --model), for N new tokens. End-of-sequence is
ignored (pipeline.generate.start(..., ignore_eos=True), patched in the child before the CLI's
own main() runs) so that exactly N tokens are generated. Reports the CLI's generation and
write seconds (from its last stderr line), the file size, and the child's peak resident
memory (os.wait4). Then reads the file back here, and with --plain writes it as plain .json.
A benchmark to run by hand, not a test:

    .venv/bin/python scripts/trace_size.py [--new-tokens 400] [--plain] [--v1] [--model DIR]

--v1 also writes the old /1 format (scripts/trace_v1_writer.py) of the same trace, for comparison:
slow and memory-hungry, that is the point.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.trace import files as trace_io  # noqa: E402

PROMPT = "Write a long story about a lighthouse keeper who finds a message in a bottle."
CHILD = (
    "import functools, sys; import pipeline.generate as g; "
    "g.start = functools.partial(g.start, ignore_eos=True); "
    "from pipeline.__main__ import main; sys.exit(main(sys.argv[1:]))"
)
# the CLI's last line: [400 tokens in 20.12 s, ...; trace: PATH, 50.9 MB written in 2.7 s]
LINE = re.compile(r"\[(\d+) tokens in ([\d.]+) s.* ([\d.]+) MB written in ([\d.]+) s\]")


def run_cli(out: Path, n: int, model: str | None) -> dict:
    """The CLI in a child process: its own timings, and its peak RSS from the kernel."""
    args = ["trace", "--prompt", PROMPT, "--max-new-tokens", str(n), "--temperature", "0", "--quiet", "--out", str(out)]
    args += ["--model", model] if model else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    m = LINE.search(text)
    if p.returncode != 0 or m is None:
        sys.exit(f"the CLI failed (exit {p.returncode}):\n{text[-2000:]}")
    return {"tokens": int(m[1]), "gen_s": float(m[2]), "write_s": float(m[4]), "wall_s": wall, "peak_rss_gb": usage.ru_maxrss * 1024 / 1e9}


def timed(fn, *a, **kw):
    """fn's result, wall seconds, and CPU seconds of this process (robust on a busy machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    r = fn(*a, **kw)
    return r, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new-tokens", type=int, default=400)
    ap.add_argument("--model", default=None, help="Hub id or local directory (default: the embedded SmolLM2-135M)")
    ap.add_argument("--plain", action="store_true", help="also write and read the trace as plain .json")
    ap.add_argument("--v1", action="store_true", help="also write the old /1 format, for comparison")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gz = Path(tmp) / "trace.json.gz"
        c = run_cli(gz, a.new_tokens, a.model)
        mb = gz.stat().st_size / 1e6
        print(f"CLI: python -m pipeline trace --temperature 0 --max-new-tokens {a.new_tokens} --out trace.json.gz (eos ignored)")
        print(f"  generation          {c['gen_s']:7.1f} s  ({c['tokens']} tokens, {c['tokens'] / c['gen_s']:.1f} tokens/s)")
        print(f"  write /2 .json.gz   {c['write_s']:7.1f} s  {mb:7.1f} MB")
        print(f"  CLI peak RSS        {c['peak_rss_gb']:7.2f} GB  (model, records and writing)")
        print(f"  CLI wall time       {c['wall_s']:7.1f} s  (model load included)")
        trace, dt, cpu = timed(trace_io.load, gz)
        print(f"  read back .json.gz  {dt:7.1f} s  (CPU {cpu:.1f} s; {len(trace.steps)} steps, last position {trace.steps[-1].position})")
        _, dt, cpu = timed(trace_io.save, trace, Path(tmp) / "again.json.gz")
        print(f"  write it again      {dt:7.1f} s  (CPU {cpu:.1f} s; this process, same trace, .json.gz)")
        if a.plain:
            _, dt, cpu = timed(trace_io.save, trace, Path(tmp) / "trace.json")
            print(f"  write /2 .json      {dt:7.1f} s  (CPU {cpu:.1f} s) {(Path(tmp) / 'trace.json').stat().st_size / 1e6:7.1f} MB")
            _, dt, cpu = timed(trace_io.load, Path(tmp) / "trace.json")
            print(f"  read back .json     {dt:7.1f} s  (CPU {cpu:.1f} s)")
        if a.v1:
            from scripts.trace_v1_writer import dumps as dumps_v1

            text, dt, cpu = timed(dumps_v1, trace)
            print(f"  write /1 .json      {dt:7.1f} s  (CPU {cpu:.1f} s) {len(text.encode('utf-8')) / 1e6:7.1f} MB  (old format, text only)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
        print(f"  this process peak   {peak:7.2f} GB  (reading{', writing' if a.plain or a.v1 else ''})")
        print(f"  machine load        {os.getloadavg()[0]:7.1f}  (1-minute load average on {os.cpu_count()} cores: timings stretch with it)")
        ok = lambda b: "ok" if b else "MISSED"  # noqa: E731
        print(f"goals: .json.gz <= 60 MB: {ok(mb <= 60)}; CLI peak < 2 GB: {ok(c['peak_rss_gb'] < 2)}; "
              f"write <= 5 s: {ok(c['write_s'] <= 5)}")


if __name__ == "__main__":
    main()
