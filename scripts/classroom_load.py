"""Classroom load: 30 viewers and 4 generating sessions on one server (issue 11, item 7).

    .venv/bin/python scripts/classroom_load.py                 # 30 viewers, 4 generating, 32 new tokens
    .venv/bin/python scripts/classroom_load.py --viewers 10 --new-tokens 16

It starts the app itself on a free port, then measures, in one run:
  0. warm-up: the same 4 generations, not counted (a process's first runs of each length are slower);
  1. alone: 4 sessions generate at once with nobody else on the server;
  2. class: the same 4 generations while 30 viewers do what a page does: open the page (GET /,
     then the page-open events the page's script calls: the example trace, its viewer bundle, the
     open "Inside the model" tab, the link check), fetch a gallery trace, and now and then make the
     one server call a layer change makes (and fetch the file its message names, as the page does),
     pausing a few seconds between actions like a student
     (scrubbing and the sampling sliders cost the server nothing: the page does them);
  3. alone again, to see how much the machine itself drifted.
It prints each phase's tokens/s (per generating session), the class against alone, the errors
seen, and the server's resident memory before and after. Timings are this machine's, with
whatever else runs on it; nothing here asserts them.

Viewers use plain HTTP (httpx): files by GET, the page's events by Gradio's queue protocol (join,
then the session's event stream), as the page's script does; generating sessions call /trace
through gradio_client.
"""
from __future__ import annotations

import argparse
import json
import os
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
        from pipeline.trace import files as trace_io

        return len(trace_io.loads(Path(result).read_bytes()).steps)
    for x in result if isinstance(result, (list, tuple)) else ():
        if isinstance(x, dict) and x.get("minimum") == 0 and isinstance(x.get("maximum"), int):
            return x["maximum"] + 1
    raise ValueError(f"cannot tell how many tokens this result holds: {str(result)[:200]}")


def page_events(config: dict) -> dict:
    """What a page tab calls, from the app's /config: the page-open chain (the load event and the
    events chained after it, in order, each with the values a fresh page sends), and the layer change.
    {"open": [(fn_index, data)], "layer": fn_index or None}."""
    comps = {c["id"]: c for c in config["components"]}
    deps = config["dependencies"]

    def fresh(ids):  # a fresh page's values; a State is kept by the server (the page sends null)
        return [None if comps[i]["type"] == "state" else comps[i].get("props", {}).get("value") for i in ids]

    def elem(t):
        return comps.get(t[0], {}).get("props", {}).get("elem_id") if t[0] is not None else None

    order = [i for i, d in enumerate(deps) if any(t[1] == "load" for t in d.get("targets") or ())]
    for i in order:  # breadth-first along .then()
        order += [j for j, d in enumerate(deps) if d.get("trigger_after") == deps[i].get("id", i) and j not in order]
    layer = next((i for i, d in enumerate(deps) if any(elem(t) == "layer" and t[1] == "input" for t in d.get("targets") or ())), None)
    return {"open": [(i, fresh(deps[i]["inputs"])) for i in order if deps[i].get("backend_fn", True)], "layer": layer}


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


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_cpu(fn, pids: dict[str, int]):
    """fn()'s result and the CPU seconds each named process used while it ran."""
    before = {k: cpu_s(p) for k, p in pids.items()}
    out = fn()
    return out, {k: cpu_s(p) - before[k] for k, p in pids.items()}


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
    cpu: dict = field(default_factory=dict)  # CPU seconds each process used while the class's generations ran

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


class PageTab:
    """One browser tab as the page drives the server: Gradio's queue protocol over plain HTTP (join an
    event, read its result from the session's event stream), the calls the page's own script makes."""

    def __init__(self, http, rng: random.Random):
        self.http, self.session = http, f"{rng.getrandbits(48):012x}"

    def call(self, fn_index: int, data: list) -> list:
        r = self.http.post("/gradio_api/queue/join", json={"data": data, "event_data": None, "fn_index": fn_index,
                                                            "trigger_id": None, "session_hash": self.session})
        r.raise_for_status()
        with self.http.stream("GET", "/gradio_api/queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                msg = json.loads(line[5:]) if line.startswith("data:") else {}
                if msg.get("msg") == "process_completed":
                    if not msg.get("success"):
                        raise RuntimeError(f"event {fn_index} failed: {str(msg.get('output'))[:120]}")
                    return (msg.get("output") or {}).get("data") or []
        raise RuntimeError(f"event {fn_index}: the stream ended with no result")


def fetch_named(http, outputs: list) -> int:
    """What the page fetches after an event: the file each viewer message names (a bundle, a panel)."""
    n = 0
    for v in outputs:
        if isinstance(v, str) and v.startswith('{"kind"'):
            m = json.loads(v)
            if m.get("url"):
                n += fetch(http, "/" + m["url"])
    return n


def viewer(url: str, stop: threading.Event, stats: Stats, events: dict, seed: int, a) -> None:
    """One student: open the page (its page-open events), a gallery trace, then now and then a layer
    change (one server call, as the page makes it) or another gallery trace."""
    import httpx

    rng = random.Random(seed)
    files = sorted(p.name for p in GALLERY.glob("*.json.gz"))
    trace_url = lambda: f"/gradio_api/file={GALLERY / rng.choice(files)}"  # noqa: E731
    stop.wait(rng.uniform(0, a.stagger))  # a class opens the page over some seconds, not all at once
    with httpx.Client(base_url=url, timeout=120) as http:
        tab = PageTab(http, rng)
        stats.call("page GET /", lambda: fetch(http, "/"))
        stats.call("gallery trace GET", lambda: fetch(http, trace_url()))
        opened = stats.call("page-open events", lambda: [fetch_named(http, tab.call(i, data)) for i, data in events["open"]])
        stats.opened.release()
        while opened is not None and not stop.wait(rng.uniform(a.think_min, a.think_max)):
            if events["layer"] is not None and rng.random() < a.layer_share:
                layer = rng.randrange(30)
                stats.call("layer change", lambda layer=layer: fetch_named(http, tab.call(events["layer"], [None, layer, "all"])))
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


def class_phase(url: str, a, events: dict, stats: Stats) -> tuple[list, list[str], float]:
    """The 4 generations while the viewers are on, started once every viewer has opened the
    page (today that burst is the heavy part): (results, errors, seconds the viewers ran)."""
    stop = threading.Event()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=viewer, args=(url, stop, stats, events, 1000 + i, a)) for i in range(a.viewers)]
    for t in threads:
        t.start()
    for _ in threads:
        stats.opened.acquire(timeout=300)
    print(f"the {a.viewers} viewers opened the page in {time.perf_counter() - t0:.0f} s; now {a.generators} sessions generate among them")
    (results, errors), cpu = timed_cpu(lambda: generators(url, a.generators, a.new_tokens, a.seed), a.pids)
    stats.cpu = cpu
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
    port = a.port or free_port()
    url = f"http://127.0.0.1:{port}/"
    log = Path(tempfile.mkdtemp(prefix="classroom-load-")) / "app.log"
    proc = start_app(port, log)
    try:
        print(f"app on {url} (log {log}); ready with the model in {wait_ready(url, proc, log):.0f} s")
        import httpx

        events = page_events(httpx.get(url + "config", timeout=60).json())
        print(f"generation endpoint {GENERATE_API}; page-open events {[i for i, _ in events['open']]}; "
              f"layer change event {events['layer'] if events['layer'] is not None else 'none found: viewers only fetch files'}")
        generators(url, a.generators, a.new_tokens, a.seed)  # warm-up, not counted: a process's first runs of each length are slower
        rss0 = rss_mb(proc.pid)
        a.pids = {"server": proc.pid, "this script": os.getpid()}
        (alone, e1), cpu1 = timed_cpu(lambda: generators(url, a.generators, a.new_tokens, a.seed), a.pids)
        stats = Stats()
        loaded, e2, viewer_s = class_phase(url, a, events, stats)
        rss1 = rss_mb(proc.pid)
        (again, e3), cpu3 = timed_cpu(lambda: generators(url, a.generators, a.new_tokens, a.seed), a.pids)
        print(f"\n{a.generators} generating sessions, {a.new_tokens} new tokens each; {a.viewers} viewers in the class phase, "
              f"one action every {a.think_min:g}-{a.think_max:g} s, {a.layer_share:.0%} of them a layer change")
        for name, res, cpu in (("alone", alone, cpu1), ("class", loaded, stats.cpu), ("alone again", again, cpu3)):
            print(phase_line(name, res) + "; CPU s used meanwhile: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
        if rates(alone + again) and rates(loaded):
            print(ratio_line(rates(alone + again), rates(loaded)))
            print("  against each alone phase: " + ", ".join(
                f"{statistics.mean(rates(loaded)) / statistics.mean(rates(r)) - 1:+.0%}" for r in (alone, again) if rates(r)))
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
