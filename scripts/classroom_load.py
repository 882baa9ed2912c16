"""Classroom load: 30 viewers and 4 generating sessions on one server (issue 11, item 7).

    .venv/bin/python scripts/classroom_load.py                 # 30 viewers, 4 generating, 32 new tokens
    .venv/bin/python scripts/classroom_load.py --viewers 10 --new-tokens 16

It starts the app itself on a free port, then measures, in one run:
  1. alone: 4 sessions generate at once with nobody else on the server;
  2. class: the same 4 generations while 30 viewers do what a page does: open the page (GET /,
     the app's config, its load event), fetch a gallery trace, and now and then ask the server
     for one redraw (a layer change), pausing a few seconds between actions like a student;
  3. alone again, to see how much the machine itself drifted.
It prints each phase's tokens/s (per generating session), the class against alone, the errors
seen, and the server's resident memory before and after. Timings are this machine's, with
whatever else runs on it; nothing here asserts them.

Viewers use plain HTTP (httpx) for files and gradio_client for events, as the page does.
"""
from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GENERATE_API = "/trace"  # the app's scripting endpoint: a generation to its end, its trace file returned
GALLERY = ROOT / "assets" / "gallery"
PROMPTS = ("Tell me a story about a cat.", "Why is the sky blue?", "Explain what a token is.", "Write a short poem about the sea.")
# what a generating session asks for, by name; fill_args matches names to an endpoint's parameters
ALIASES = {"prompt": ("prompt",), "system_prompt": ("system prompt", "system_prompt"), "mode": ("mode",),
           "temperature": ("temperature",), "top_k": ("top-k", "top_k"), "top_p": ("top-p", "top_p"),
           "seed": ("seed",), "max_new_tokens": ("max new tokens", "max_new_tokens")}


# ---------------------------------------------------------------------------------------
# Pure helpers (tests/unit/test_classroom_load.py)


def fill_args(params: list[dict], values: dict) -> list:
    """Positional arguments for an endpoint (gradio_client's view_api parameters) from `values`
    keyed as in ALIASES: matched by parameter name or label; choices matched case-blind;
    a parameter not named in `values` gets its default (None when it has none)."""
    args = []
    for p in params:
        name, label = str(p.get("parameter_name") or "").lower(), str(p.get("label") or "").lower()
        key = next((k for k, al in ALIASES.items() if k in values and any(name == a or label.startswith(a) for a in al)), None)
        v = values[key] if key else (p.get("parameter_default") if p.get("parameter_has_default") else None)
        choices = (p.get("type") or {}).get("enum") if isinstance(p.get("type"), dict) else None
        if isinstance(v, str) and choices:
            v = next((c for c in choices if str(c).lower() == v.lower()), v)
        args.append(v)
    return args


def count_tokens(result) -> int:
    """Tokens a generation made, from the endpoint's result: a trace file (/trace) or the
    outputs of /generate, whose step slider ends at the last step (maximum = steps - 1)."""
    if isinstance(result, (str, Path)) and str(result).endswith((".json", ".json.gz")):
        from pipeline import records

        return len(records.loads(Path(result).read_bytes()).steps)
    for x in result if isinstance(result, (list, tuple)) else ():
        if isinstance(x, dict) and x.get("minimum") == 0 and isinstance(x.get("maximum"), int):
            return x["maximum"] + 1
    raise ValueError(f"cannot tell how many tokens this result holds: {str(result)[:200]}")


def find_layer_endpoint(endpoints: dict) -> str | None:
    """The endpoint a layer change calls: parameters Layer and Head, one plot returned."""
    found = [n for n, e in endpoints.items() if {"Layer", "Head"} <= {p.get("label") for p in e.get("parameters", [])}
             and len(e.get("returns", [])) == 1 and e["returns"][0].get("component") == "Plot"]
    return found[-1] if found else None


def rates(results: list[tuple[int, float]]) -> list[float]:
    """tokens/s of each (tokens, seconds)."""
    return [n / s for n, s in results if s > 0]


def ratio_line(alone: list[float], loaded: list[float], goal: float = 0.2) -> str:
    a, b = statistics.mean(alone), statistics.mean(loaded)
    change = b / a - 1
    verdict = "within" if change >= -goal else "NOT within"
    return f"class vs alone: {b:.2f} vs {a:.2f} tokens/s per session ({change:+.0%}; {verdict} the {goal:.0%} goal)"


def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------
# The server


def start_app(port: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "app.py", "--port", str(port)]  # the app serves assets/gallery itself
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 300) -> float:
    """Wait for the page, then for the model (a tiny generation succeeds); seconds taken."""
    import httpx
    from gradio_client import Client

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                client = Client(url, verbose=False)
                generate(client, dict(prompt="Hi", mode="chat", seed=0, max_new_tokens=2))
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001 (not up yet, or the model still loading)
            time.sleep(2)
    raise TimeoutError(f"the app was not ready in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


# ---------------------------------------------------------------------------------------
# Sessions


def generate(client, values: dict) -> tuple[int, float]:
    """One generation through the app's API: (tokens made, seconds)."""
    params = client.view_api(print_info=False, return_format="dict")["named_endpoints"][GENERATE_API]["parameters"]
    args = fill_args(params, values)
    t0 = time.perf_counter()
    result = client.predict(*args, api_name=GENERATE_API)
    return count_tokens(result), time.perf_counter() - t0


@dataclass
class Stats:
    """What the viewers did, how long it took, and what failed (thread-safe)."""

    seconds: dict = field(default_factory=lambda: defaultdict(list))
    errors: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    opened: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))  # one release a viewer

    def call(self, kind: str, fn):
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 (every failure is counted and printed)
            with self.lock:
                self.errors[f"{kind}: {type(e).__name__}: {str(e)[:120]}"] += 1
            return None
        with self.lock:
            self.seconds[kind].append(time.perf_counter() - t0)
        return out


def fetch(http, path: str) -> int:
    r = http.get(path)
    r.raise_for_status()
    return len(r.content)


def viewer(url: str, stop: threading.Event, stats: Stats, layer_api: str | None, seed: int, a) -> None:
    """One student: open the page, a gallery trace, then now and then a layer change or another trace."""
    import httpx
    from gradio_client import Client

    rng = random.Random(seed)
    files = sorted(p.name for p in GALLERY.glob("*.json.gz"))
    trace_url = lambda: f"/gradio_api/file={GALLERY / rng.choice(files)}"  # noqa: E731
    stop.wait(rng.uniform(0, a.stagger))  # a class opens the page over some seconds, not all at once
    with httpx.Client(base_url=url, timeout=120) as http:
        stats.call("page GET /", lambda: fetch(http, "/"))
        stats.call("gallery trace GET", lambda: fetch(http, trace_url()))
        client = stats.call("client (config + API info)", lambda: Client(url, verbose=False))
        steps = stats.call("page load event", lambda: client.predict(api_name="/on_load")) if client else None
        stats.opened.release()
        last = count_tokens(steps) - 1 if steps else 0
        while client and not stop.wait(rng.uniform(a.think_min, a.think_max)):
            if layer_api and rng.random() < a.layer_share:
                layer = rng.randrange(30)
                stats.call("layer change", lambda: client.predict(last, layer, "all", 0.7, 0, 0.9, api_name=layer_api))
            else:
                stats.call("gallery trace GET", lambda: fetch(http, trace_url()))


def generators(url: str, n: int, new_tokens: int, seed: int) -> tuple[list[tuple[int, float]], list[str]]:
    """`n` sessions generating at once, each with its own client: ([(tokens, seconds)], errors)."""
    from gradio_client import Client

    clients = [Client(url, verbose=False) for _ in range(n)]
    out: list = [None] * n
    errors: list[str] = []
    start = threading.Barrier(n)

    def run(i: int) -> None:
        values = dict(prompt=PROMPTS[i % len(PROMPTS)], mode="chat", temperature=0.7, top_k=0, top_p=0.9,
                      seed=seed + i, max_new_tokens=new_tokens)
        start.wait()
        try:
            out[i] = generate(clients[i], values)
        except Exception as e:  # noqa: BLE001
            errors.append(f"generate: {type(e).__name__}: {str(e)[:120]}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in out if r is not None], errors


# ---------------------------------------------------------------------------------------
# The run


def phase_line(name: str, results: list[tuple[int, float]]) -> str:
    r = rates(results)
    toks = ", ".join(f"{n} tok/{s:.1f} s" for n, s in results)
    return f"{name:<12} tokens/s per session: mean {statistics.mean(r):.2f} (min {min(r):.2f}, max {max(r):.2f})  [{toks}]" if r \
        else f"{name:<12} no generation finished"


def class_phase(url: str, a, layer_api: str | None, stats: Stats) -> tuple[list, list[str], float]:
    """The 4 generations while the viewers are on, started once every viewer has opened the
    page (today that burst is the heavy part): (results, errors, seconds the viewers ran)."""
    stop = threading.Event()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=viewer, args=(url, stop, stats, layer_api, 1000 + i, a)) for i in range(a.viewers)]
    for t in threads:
        t.start()
    for _ in threads:
        stats.opened.acquire(timeout=300)
    print(f"the {a.viewers} viewers opened the page in {time.perf_counter() - t0:.0f} s; now {a.generators} sessions generate among them")
    results, errors = generators(url, a.generators, a.new_tokens, a.seed)
    stop.set()
    for t in threads:
        t.join()
    return results, errors, time.perf_counter() - t0


def report(stats: Stats, viewer_s: float) -> None:
    print(f"viewers' requests over {viewer_s:.0f} s:")
    for kind, s in sorted(stats.seconds.items()):
        print(f"  {kind:<28} {len(s):>4} ok, median {statistics.median(s):.2f} s, max {max(s):.2f} s")
    print(f"errors seen: {sum(stats.errors.values())}")
    for msg, n in stats.errors.most_common():
        print(f"  {n} x {msg}")


def run(a) -> None:
    from gradio_client import Client

    port = a.port or free_port()
    url = f"http://127.0.0.1:{port}/"
    log = Path(tempfile.mkdtemp(prefix="classroom-load-")) / "app.log"
    proc = start_app(port, log)
    try:
        print(f"app on {url} (log {log}); ready with the model in {wait_ready(url, proc, log):.0f} s")
        layer_api = find_layer_endpoint(Client(url, verbose=False).view_api(print_info=False, return_format="dict")["named_endpoints"])
        print(f"generation endpoint {GENERATE_API}; layer change endpoint {layer_api or 'none found: viewers only fetch files'}")
        rss0 = rss_mb(proc.pid)
        alone, e1 = generators(url, a.generators, a.new_tokens, a.seed)
        stats = Stats()
        loaded, e2, viewer_s = class_phase(url, a, layer_api, stats)
        rss1 = rss_mb(proc.pid)
        again, e3 = generators(url, a.generators, a.new_tokens, a.seed)
        print(f"\n{a.generators} generating sessions, {a.new_tokens} new tokens each; {a.viewers} viewers in the class phase, "
              f"one action every {a.think_min:g}-{a.think_max:g} s, {a.layer_share:.0%} of them a layer change")
        for name, res in (("alone", alone), ("class", loaded), ("alone again", again)):
            print(phase_line(name, res))
        if rates(alone + again) and rates(loaded):
            print(ratio_line(rates(alone + again), rates(loaded)))
        print(f"generation errors: {len(e1 + e2 + e3)}" + "".join(f"\n  {e}" for e in e1 + e2 + e3))
        report(stats, viewer_s)
        print(f"server resident memory: {rss0:.0f} MB before the runs (model loaded), {rss1:.0f} MB after the class, "
              f"{rss_mb(proc.pid):.0f} MB at the end")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--viewers", type=int, default=30)
    ap.add_argument("--generators", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=0, help="0: a free one")
    ap.add_argument("--stagger", type=float, default=10.0, help="seconds over which the viewers open the page")
    ap.add_argument("--think-min", type=float, default=3.0, help="seconds a viewer looks before the next action (low)")
    ap.add_argument("--think-max", type=float, default=10.0, help="(high)")
    ap.add_argument("--layer-share", type=float, default=0.7, help="share of a viewer's actions that are a layer change (a server call); "
                    "the rest fetch a gallery trace (a static file)")
    run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
