"""The app's server under py-spy, for scripts/room_load.py --profile: where its CPU time goes under a class's load.

py-spy (`.venv/bin/pip install py-spy`; a tool, not a requirement of the app) samples every thread of the server 100
times a second, with the threads' names (a thread waiting in epoll or on a lock is sampled too: `IDLE` leaves it out). `summary`
reads its raw stacks: CPU seconds by thread, and the event loop's (the thread that answers every HTTP request) by
layer: each sample goes to the first layer met from the innermost frame outwards, so a Starlette function that calls
`json.dumps` counts as JSON. Attaching to a running process by its id fails on this machine ("Failed to find python
version"); py-spy starting the app itself works.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATE = 100  # samples a second
# (the layer, what a frame's file or function says): the first layer met from the innermost frame out takes the sample
LAYERS = [
    ("the rooms' own code (ui/rooms*.py)", ("ui/rooms", "ui/room_")),
    ("JSON encoding of the state", ("json/", "orjson", "render (")),
    ("Brotli compression (Gradio's middleware)", ("brotli",)),
    ("FastAPI: parameters, dependencies, validation", ("fastapi/", "pydantic")),
    ("Starlette: routing, Request, Response, middleware base", ("starlette/",)),
    ("Gradio's app and middleware (CORS, ...)", ("gradio/",)),
    ("uvicorn and h11: HTTP parsing and writing", ("uvicorn/", "h11/")),
    ("asyncio: the event loop, sockets, tasks", ("asyncio/", "selectors.py")),
]
LOOP_MARK = "_run_once ("  # a frame only the event loop's thread has
# innermost frames of a thread that waits (py-spy samples a thread blocked in epoll or on a lock as running here)
IDLE = ("EpollSelector.select (", "Condition.wait (", "Event.wait (", "_wait_for_tstate_lock (", "get (queue.py", "sleep (")


@contextmanager
def profiled_server(out: Path, env: dict | None = None, timeout: float = 300):
    """`python app.py` started by py-spy, which writes the raw stacks to `out` when the app exits; yields its URL
    (scripts/browser_kit.ServerURL, `pid` the app's own process)."""
    from scripts.browser_kit import ServerURL, free_port

    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists() and not shutil.which(spy):
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
    cmd = [spy, "record", "--threads", "--nonblocking", "-r", str(RATE), "-f", "raw", "-o", str(out),
           "--", sys.executable, str(ROOT / "app.py"), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = ServerURL(f"http://127.0.0.1:{port}")
    try:
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read(1)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"the app under py-spy did not answer on {url}") from None
                time.sleep(0.5)
        url.pid = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        yield url
    finally:
        if url.pid:
            os.kill(url.pid, signal.SIGTERM)  # (the app exits cleanly on SIGTERM; py-spy then writes its file)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def parse(path: Path) -> list[tuple[str, list[str], int]]:
    """(thread name, frames outermost first, samples) for each line of py-spy's raw output."""
    rows = []
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        head, *frames = stack.split(";")
        name = head.split(": ", 1)[1] if ": " in head else head
        rows.append((name, frames, int(n)))
    return rows


def layer(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, marks in LAYERS:
            if any(m in frame for m in marks):
                return name
    return "other"


def summary(path: Path, requests: int = 0) -> str:
    """CPU seconds by thread (names without their numbers), then the event loop's by layer, and per request."""
    rows = parse(path)
    loops = {name for name, frames, _ in rows if any(LOOP_MARK in f for f in frames)}
    by_thread, by_layer = Counter(), Counter()
    for name, frames, n in rows:
        if not frames or any(frames[-1].startswith(i) or i in frames[-1] for i in IDLE):
            continue
        if name in loops:
            by_thread["the event loop (every HTTP request)"] += n
            by_layer[layer(frames)] += n
        else:
            by_thread[re.sub(r"[-_ ]?\d+", "", name).strip() or name] += n
    lines = ["server CPU by thread (py-spy, s): " + ", ".join(f"{k} {v / RATE:.1f}" for k, v in by_thread.most_common(8))]
    total = sum(by_layer.values())
    lines.append(f"the event loop's {total / RATE:.1f} s"
                 + (f" ({total / RATE / requests * 1000:.2f} ms a request of the room's {requests})" if requests else "") + ", by layer:")
    lines += [f"  {v / max(1, total):6.1%}  {k}" for k, v in by_layer.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":  # summary of a file written before: python scripts/room_profile.py OUT.txt [REQUESTS]
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0))
