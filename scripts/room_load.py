"""How many students one class room holds, measured: plain HTTP against the app's room API (docs/rooms.md).

    .venv/bin/python scripts/room_load.py [--students 500] [--steps 5] [--tokens 64] [--pairs 3] [--profile OUT.txt]

Starts the app (embedded model); one teacher (a room from a gallery trace) and `--students` students play `--steps`
steps: every student polls the room's state as the page does (every 2 s, with its ETag, asking for Brotli as a
browser does) and guesses once a step, 2-12 s after the step opens (people read, then type); the teacher waits
until every guess is in, reveals, checks the room's count against the guesses sent, and moves on. Meanwhile
another visitor (`--generators N`: N visitors at once) generates `--tokens` tokens through the /trace API, `--pairs` times alone (the students' process
stopped: the room open, its pages silent) and then with the room, so that each pair is a few seconds apart (this
machine's speed drifts between runs by more than a class costs; the first generation, thrown away, runs at a fifth
of the speed of the next). Prints the load average, the generation's tokens/s in each pair and their ratio, the
p50/p95 of a guess and of a poll (while the other visitor generates, and otherwise; requests under way at a pause
left out), how many polls the ETag answered (304), how often the room's version moved, the server's CPU seconds
and memory growth, and whether every guess was counted exactly once.

The students are one process at the lowest CPU priority (nice 19): each a coroutine with its own keep-alive
connection, over a small HTTP/1.1 client of its own (a thread and an httpx client a student made the script use 121
CPU s in a run of 500, this 5-7 s: on this machine they share the server's two cores, which a class's devices do not). `--profile`
runs the server under py-spy (`.venv/bin/pip install py-spy`; not a requirement of the app) and prints where its
CPU time went: by thread, and on the event loop's thread by layer (uvicorn, Starlette, FastAPI, Gradio's
middleware, JSON, the rooms' own code): scripts/room_profile.py. Nothing here is a pass/fail test.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import app_server  # noqa: E402
from scripts.room_profile import profiled_server, summary  # noqa: E402

WORDS = ["air", "gas", "light", "water", "dust", "the", "molecules", "blue", "particles", "oxygen", "nitrogen", "sun"]
PROMPT = "Tell me a long story about a brave little robot."
POLL_S = 2.0  # a student's page polls the room every 2 s (assets/room.js)
THINK_S = (2.0, 12.0)  # a student guesses this many seconds after a step opens (uniform): not all in the same second


def proc_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, from /proc (ticks of 1/100 s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / 100, int(fields[12]) / 100


def proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds, resident MB) of a process, from /proc."""
    cpu = sum(proc_times(pid))
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
    return cpu, rss / 1024


def machine_busy() -> float:
    """CPU seconds this machine's cores have been busy (all processes; /proc/stat, ticks of 1/100 s)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / 100  # all but idle and iowait (guest time is inside user)


def generate(url: str, tokens: int, visitors: int = 1) -> float:
    """`visitors` generations of `tokens` tokens through /trace at once (each its own client): their tokens/s together."""
    from gradio_client import Client

    clients = [Client(url + "/", verbose=False) for _ in range(visitors)]
    errors: list = []

    def one(c):
        try:
            c.predict(prompt=PROMPT, temperature=0, max_new_tokens=tokens, api_name="/trace")
        except Exception as e:  # noqa: BLE001  (raised below)
            errors.append(e)

    t = time.perf_counter()
    threads = [threading.Thread(target=one, args=(c,)) for c in clients]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return visitors * tokens / (time.perf_counter() - t)


class Http:
    """One keep-alive HTTP/1.1 connection, as a browser tab holds: a request, its answer's status, headers and body
    (Brotli-decoded). About 0.3 ms of CPU a request, JSON included (5-7 CPU s for 500 students a run)."""

    def __init__(self, url: str):
        self.host, self.port = url.split("//", 1)[1].split(":")
        self.r = self.w = None

    async def request(self, method: str, path: str, headers: dict | None = None, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept-Encoding: gzip, deflate, br"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        for attempt in (0, 1):  # (a connection the server closed while idle: opened again, once)
            try:
                if self.w is None:
                    self.r, self.w = await asyncio.open_connection(self.host, int(self.port))
                self.w.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
                return await self._answer()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.w = None
                if attempt:
                    raise

    async def _answer(self):
        lines = (await self.r.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hd = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
        if "content-length" in hd:
            body = await self.r.readexactly(int(hd["content-length"]))
        elif hd.get("transfer-encoding") == "chunked":
            body = b""
            while size := int((await self.r.readuntil(b"\r\n")).strip(), 16):
                body += (await self.r.readexactly(size + 2))[:-2]
            await self.r.readuntil(b"\r\n")
        else:
            body = b""
        if hd.get("content-encoding") == "br":
            import brotli

            body = brotli.decompress(body)
        if hd.get("connection") == "close":
            self.w.close()
            self.w = None
        return status, hd, body


async def student(url: str, code: str, name: str, think, done: dict, rec: dict):
    """One student's page: poll every 2 s with the ETag; guess once a step, `think` s after seeing it."""
    http, etag, state, guessed, ready = Http(url), None, None, set(), {}
    await asyncio.sleep(random.random() * POLL_S)  # (pages opened at different moments)
    while not done["done"]:
        t, wall = time.perf_counter(), time.time()
        try:
            st, hd, body = await http.request("GET", f"/api/rooms/{code}?student={name}", {"If-None-Match": etag} if etag else None)
        except (OSError, asyncio.IncompleteReadError):
            rec["errors"] += 1
            await asyncio.sleep(POLL_S)
            continue
        rec["polls"].append((wall, time.perf_counter() - t))
        rec["status"][st] += 1
        if st == 200:
            etag, state = hd.get("etag"), json.loads(body)
        if state is not None and state["phase"] == "guessing" and state["step"] not in guessed:
            if time.time() >= ready.setdefault(state["step"], time.time() + random.uniform(*think)):  # a person reads, then types
                t, wall = time.perf_counter(), time.time()
                st, _, body = await http.request("POST", f"/api/rooms/{code}/guesses", body={"student": name, "text": random.choice(WORDS)})
                rec["guesses"].append((wall, time.perf_counter() - t))
                if st == 200:
                    guessed.add(state["step"])
                    rec["sent"].setdefault(name, {})[state["step"]] = json.loads(body)["token_id"]
        due = t + POLL_S
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        late = time.perf_counter() - due
        if late > 1.0:  # the process was stopped (the generation timed alone): spread out again, as pages are, the
            ready = {k: v + late for k, v in ready.items()}  # thinking paused too (else every page would poll, and guess, at once)
            await asyncio.sleep(random.random() * POLL_S)


def crowd(url: str, code: str, n: int, think, stop, results):
    """The students' process: `n` students until `stop` is set; their latencies and guesses put on `results`."""
    os.nice(19)  # (a class's pages run on the students' own devices, not on the server's cores)
    rec = {"polls": [], "guesses": [], "status": Counter(), "sent": {}, "errors": 0}

    async def run():
        done = {"done": False}
        tasks = [asyncio.create_task(student(url, code, f"s{i:04d}", think, done, rec)) for i in range(n)]
        while not stop.is_set():
            await asyncio.sleep(0.2)
        done["done"] = True
        await asyncio.wait(tasks, timeout=10)

    asyncio.run(run())
    rec["cpu"] = time.process_time()
    results.put(rec)


def play(url: str, n: int, steps: int, think=THINK_S, ctl: dict | None = None) -> dict:
    """One teacher and `n` students over `steps` steps: their latencies, and per step (room count, guesses sent).
    `ctl["pid"]`: the students' process, once started."""
    import httpx

    http = httpx.Client(base_url=url, timeout=30)
    made = http.post("/api/rooms", json={"example": "mountain", "step": 0}).json()  # (14 steps)
    code, key = made["code"], {"X-Room-Key": made["key"]}
    v0, t0 = http.get(f"/api/rooms/{code}").json()["version"], time.time()
    ctx = mp.get_context("spawn")
    stop, results = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=crowd, args=(url, code, n, think, stop, results), daemon=True)
    proc.start()
    if ctl is not None:
        ctl["pid"] = proc.pid
    reveals = []
    for step in range(min(steps, http.get(f"/api/rooms/{code}").json()["n_steps"])):
        http.post(f"/api/rooms/{code}/step", json={"step": step}, headers=key)
        deadline = time.time() + 90
        while http.get(f"/api/rooms/{code}").json()["guesses"] < n and time.time() < deadline:
            time.sleep(0.5)
        reveals.append(http.post(f"/api/rooms/{code}/reveal", headers=key).json())
    bumps, seconds = http.get(f"/api/rooms/{code}").json()["version"] - v0, time.time() - t0
    stop.set()
    rec = results.get(timeout=120)
    proc.join(timeout=10)
    http.post(f"/api/rooms/{code}/close", headers=key)
    counted, exact = [], True
    for step, state in enumerate(reveals):
        sent = Counter(s[step] for s in rec["sent"].values() if step in s)
        got = Counter({r["token_id"]: r["count"] for r in state["room"]})
        exact &= sum(got.values()) == sum(sent.values()) == n and got == sent
        counted.append((sum(got.values()), sum(sent.values())))
    return dict(rec, counted=counted, exact=exact, bumps=bumps, seconds=seconds)


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1] * 1000 if len(xs) >= 20 else max(xs, default=0) * 1000


def p50(xs: list[float]) -> float:
    return statistics.median(xs) * 1000 if xs else 0.0


def split(timed: list[tuple[float, float]], windows: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """The latencies of requests that began while the other visitor generated, and of the others."""
    during = [x for t, x in timed if any(a <= t <= b for a, b in windows)]
    return during, [x for t, x in timed if not any(a <= t <= b for a, b in windows)]


def unpaused(timed: list[tuple[float, float]], pauses: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The requests that did not span a pause of the students' process (their time would be the pause's)."""
    return [(t, x) for t, x in timed if not any(t <= a + 0.1 and t + x > a for a, _ in pauses)]  # (none begins in one)


def line(name: str, timed: list, windows: list) -> str:
    xs = [x for _, x in timed]
    during, rest = split(timed, windows)
    return (f"{name} p50 {p50(xs):.0f} ms, p95 {p95(xs):.0f} ms ({len(xs)}; while the other visitor generates: p95 "
            f"{p95(during):.0f} ms of {len(during)}, otherwise {p95(rest):.0f} ms)")


def generations(url: str, tokens: int, crowd_pid, pairs: int, visitors: int = 1) -> tuple[list, list, list]:
    """`pairs` times: the generation alone (the students' process stopped: the room open, its pages silent), then
    with the room (the students going again). Pairs a few seconds apart: this machine's speed drifts between runs by
    more than a class costs. (Alone, loaded, the loaded windows and the pauses: (start, end) wall times.)"""
    alone, loaded, windows, pauses = [], [], [], []
    for _ in range(pairs):
        t = time.time()
        os.kill(crowd_pid, signal.SIGSTOP)
        time.sleep(0.5)  # (the requests under way answered)
        try:
            alone.append(generate(url, tokens, visitors))
        finally:
            os.kill(crowd_pid, signal.SIGCONT)
            pauses.append((t, time.time()))
        time.sleep(2)  # every page polling again
        t = time.time()
        loaded.append(generate(url, tokens, visitors))
        windows.append((t, time.time()))
    return alone, loaded, windows, pauses


def measure(url, a, think) -> tuple:
    """(The run's figures, the generation alone and under the room, the server's CPU and memory) for `url`."""
    for _ in range(120):  # the model loads in the background: its first call waits for it
        try:
            generate(url, 4)
            break
        except Exception:  # (gradio_client's AppError: "still loading")
            time.sleep(1)
    generate(url, a.tokens)  # thrown away: the first whole generation runs at a fifth of the speed of the next
    time.sleep(2)
    idle = (time.time(), *proc_times(url.pid))
    time.sleep(5)  # the server with no class and no generation: what it spends on its own (subtracted per request)
    idle += (time.time(), *proc_times(url.pid))
    cpu0, rss0 = proc_stats(url.pid)
    busy0, own0 = machine_busy(), time.process_time()
    out, ctl = {}, {}
    th = threading.Thread(target=lambda: out.update(play(url, a.students, a.steps, think, ctl)))
    th.start()
    while "pid" not in ctl and th.is_alive():
        time.sleep(0.1)
    time.sleep(4)  # every student polling by then
    quiet = (time.time(), *proc_times(url.pid))
    time.sleep(10)  # the class alone: the server's CPU for it, per request (a figure that other work on the machine moves little)
    quiet += (time.time(), *proc_times(url.pid))
    alone, loaded, out_windows, pauses = generations(url, a.tokens, ctl["pid"], a.pairs, a.generators)
    rss_g = proc_stats(url.pid)[1]  # the generations done: what grows from here on is the room's
    th.join()
    cpu1, rss1 = proc_stats(url.pid)
    others = machine_busy() - busy0 - (cpu1 - cpu0) - (time.process_time() - own0) - out["cpu"]  # (this script's own threads too)
    out.update(windows=out_windows, pauses=pauses, quiet=quiet, idle=idle, others=others)
    return out, alone, loaded, (cpu1 - cpu0, rss1 - rss0, rss1 - rss_g)


def report(a, think, out, alones, loaded, server, load_before: str):
    ratios = [y / x for x, y in zip(alones, loaded)]
    cpu, rss, rss_room = server
    polls, guesses = unpaused(out["polls"], out["pauses"]), unpaused(out["guesses"], out["pauses"])
    status = out["status"]
    print(f"load average before: {load_before}; after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"generation of {a.tokens} tokens by {a.generators} visitor(s) at once, alone then with the room, {len(ratios)} pairs: "
          + ", ".join(f"{x:.2f} -> {y:.2f}" for x, y in zip(alones, loaded))
          + f" tok/s; ratio {statistics.median(ratios):.2f} (median; {min(ratios):.2f}-{max(ratios):.2f}; goal >= 0.80)")
    print(f"{a.students} students, {len(out['counted'])} steps (guesses {think[0]:g}-{think[1]:g} s after a step opens; goal: "
          f"p95 < 200 ms):\n  {line('guess', guesses, out['windows'])}\n  {line('poll', polls, out['windows'])}; "
          f"{status.get(304, 0) / max(1, len(out['polls'])):.0%} answered 304, {out['errors']} failed "
          f"({len(out['polls']) - len(polls)} polls and {len(out['guesses']) - len(guesses)} guesses left out: under way at a pause)")
    t0, u0, s0, t1, u1, s1 = out["quiet"]
    i0, iu0, is0, i1, iu1, is1 = out["idle"]
    n, cpu_q, cpu_i = sum(1 for t, _ in out["polls"] + out["guesses"] if t0 <= t < t1), u1 - u0 + s1 - s0, (iu1 - iu0 + is1 - is0) / (i1 - i0)
    print(f"the class alone ({t1 - t0:.0f} s, no generation): the server used {cpu_q / (t1 - t0):.0%} of a core (idle, before the "
          f"class: {cpu_i:.0%}), {(cpu_q - cpu_i * (t1 - t0)) / max(1, n) * 1000:.2f} ms of CPU a request beyond idle "
          f"({(s1 - s0) / max(1, n) * 1000:.2f} of it system; {n / (t1 - t0):.0f} requests a second)")
    print(f"the room's version moved {out['bumps']} times in {out['seconds']:.0f} s ({out['bumps'] / out['seconds']:.1f} a second: "
          f"each move makes every page's next poll a whole answer)")
    print(f"server: {cpu:.1f} CPU s over the class (the generations' included), memory {rss:+.1f} MB, "
          f"{rss_room:+.1f} MB of it after the generations ended (the room alone; goal < 100 MB); "
          f"the students' process: {out['cpu']:.1f} CPU s; other processes on this machine: {out['others']:.1f} CPU s "
          f"({out['others'] / out['seconds']:.0%} of a core: other people's work, which moves every figure here)")
    print(f"every guess counted exactly once: {out['exact']} (room count vs sent per step: {out['counted']})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=500)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--think", default=f"{THINK_S[0]:g},{THINK_S[1]:g}",
                    help="LO,HI: a student guesses LO-HI s after a step opens (0,1: the first second, when the step's distribution is new)")
    ap.add_argument("--pairs", type=int, default=3, help="generations alone and with the room, alternating")
    ap.add_argument("--generators", type=int, default=1, help="visitors generating at once through /trace (a class trying its own prompts)")
    ap.add_argument("--profile", type=Path, help="run the server under py-spy and write its raw stacks here")
    a = ap.parse_args(argv)
    think = tuple(float(x) for x in a.think.split(","))
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    env = {"LLM_VIZ_MAX_STUDENTS": str(max(500, a.students))}
    with (profiled_server(a.profile, env=env) if a.profile else app_server(env=env)) as url:
        os.nice(19)  # the teacher and the other visitor's client too: the server, started above, keeps its priority
        out, alones, loaded, server = measure(url, a, think)
    report(a, think, out, alones, loaded, server, load_before)
    if a.profile:
        print(summary(a.profile, requests=len(out["polls"]) + len(out["guesses"])))


if __name__ == "__main__":
    main()
