"""How many students one class room holds, measured: plain HTTP against the app's room API (docs/rooms.md).

    .venv/bin/python scripts/room_load.py [--students 200] [--steps 10] [--tokens 64]

Starts the app (embedded model), then times one generation of `--tokens` tokens through the /trace API alone.
Then one teacher (a room from a gallery trace) and `--students` students (a thread each, one connection each)
play `--steps` steps: every student polls the room's state as the page does (every 2 s, with its ETag) and
guesses once a step, 2-12 s after the step opens (people read, then type: not all in the same second); the teacher waits until every guess is in, reveals, checks the room's count against the
guesses sent, and moves on; meanwhile the same generation runs again. Prints the generation's tokens/s under the
load against alone, the p95 latency of a guess and of a poll, the server's CPU seconds and memory growth, and
whether every guess was counted exactly once. The students' threads run at the lowest CPU priority (nice 19): on
this machine they share the server's cores, which a class's own devices do not. Nothing here is a pass/fail test.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import app_server  # noqa: E402

WORDS = ["air", "gas", "light", "water", "dust", "the", "molecules", "blue", "particles", "oxygen", "nitrogen", "sun"]
PROMPT = "Tell me a long story about a brave little robot."
POLL_S = 2.0  # a student's page polls the room every 2 s (assets/room.js)
THINK_S = (2.0, 12.0)  # a student guesses this many seconds after a step opens (uniform): not all in the same second


def proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds, resident MB) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
    return cpu, rss / 1024


def generate(url: str, tokens: int) -> float:
    from gradio_client import Client

    client = Client(url + "/", verbose=False)
    t = time.perf_counter()
    client.predict(prompt=PROMPT, temperature=0, max_new_tokens=tokens, api_name="/trace")
    return tokens / (time.perf_counter() - t)


class Student(threading.Thread):
    def __init__(self, url, code, name, room):
        super().__init__(daemon=True)
        import httpx

        self.http, self.code, self.name, self.room = httpx.Client(base_url=url, timeout=30), code, name, room
        self.polls, self.guesses, self.sent = [], [], {}  # latencies (s); step -> the guess sent

    def run(self):
        etag, guessed, think, state = None, set(), {}, None
        time.sleep(random.random() * POLL_S)  # (pages opened at different moments)
        while not self.room["done"]:
            t = time.perf_counter()
            r = self.http.get(f"/api/rooms/{self.code}", params={"student": self.name}, headers={"If-None-Match": etag} if etag else {})
            self.polls.append(time.perf_counter() - t)
            if r.status_code == 200:
                etag, state = r.headers.get("etag"), r.json()
            if state is not None:  # (a 304: the state as last read)
                ready = think.setdefault(state["step"], time.time() + random.uniform(*self.room["think"]))  # a person reads, then types
                if state["phase"] == "guessing" and state["step"] not in guessed and time.time() >= ready:
                    text = random.choice(WORDS)
                    t = time.perf_counter()
                    g = self.http.post(f"/api/rooms/{self.code}/guesses", json={"student": self.name, "text": text})
                    self.guesses.append(time.perf_counter() - t)
                    if g.status_code == 200:
                        guessed.add(state["step"])
                        self.sent[state["step"]] = g.json()["token_id"]
            time.sleep(max(0.0, POLL_S - (time.perf_counter() - t)))


def play(url: str, n: int, steps: int, think=THINK_S) -> dict:
    import httpx

    http = httpx.Client(base_url=url, timeout=30)
    made = http.post("/api/rooms", json={"example": "mountain", "step": 0}).json()  # (14 steps)
    code, key = made["code"], {"X-Room-Key": made["key"]}
    room = {"done": False, "think": think}
    students = [Student(url, code, f"s{i:03d}", room) for i in range(n)]
    for s in students:
        s.start()
    counted, exact = [], True
    for step in range(min(steps, http.get(f"/api/rooms/{code}").json()["n_steps"])):
        http.post(f"/api/rooms/{code}/step", json={"step": step}, headers=key)
        deadline = time.time() + 90
        while http.get(f"/api/rooms/{code}").json()["guesses"] < n and time.time() < deadline:
            time.sleep(0.5)
        state = http.post(f"/api/rooms/{code}/reveal", headers=key).json()
        got = sum(r["count"] for r in state["room"])
        sent = sum(1 for s in students if step in s.sent)
        by_token = {}
        for s in students:
            if step in s.sent:
                by_token[s.sent[step]] = by_token.get(s.sent[step], 0) + 1
        exact &= got == sent == n and {r["token_id"]: r["count"] for r in state["room"]} == by_token
        counted.append((got, sent))
    room["done"] = True
    http.post(f"/api/rooms/{code}/close", headers=key)
    for s in students:
        s.join(timeout=5)
    return {"polls": [x for s in students for x in s.polls], "guesses": [x for s in students for x in s.guesses],
            "counted": counted, "exact": exact}


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1] * 1000 if len(xs) >= 20 else max(xs) * 1000


def p50(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--think", default=f"{THINK_S[0]:g},{THINK_S[1]:g}",
                    help="LO,HI: a student guesses LO-HI s after a step opens (0,1: the first second, when the step's distribution is new)")
    a = ap.parse_args(argv)
    think = tuple(float(x) for x in a.think.split(","))
    with app_server(env={"LLM_VIZ_MAX_STUDENTS": str(max(500, a.students))}) as url:
        # the students' side at the lowest priority: in a class their pages run on their own devices, so the 200
        # threads that play them here must not take the server's CPU (the server, started above, keeps its own)
        os.nice(19)
        for _ in range(120):  # the model loads in the background: its first call waits for it
            try:
                generate(url, 4)  # warm-up (the first call's costs paid)
                break
            except Exception:  # (gradio_client's AppError: "still loading")
                time.sleep(1)
        alones = [generate(url, a.tokens) for _ in range(2)]  # (the second also: the server's memory after a generation's)
        cpu0, rss0 = proc_stats(url.pid)
        out, loaded = {}, {}
        th = threading.Thread(target=lambda: out.update(play(url, a.students, a.steps, think)))
        th.start()
        time.sleep(3)  # every student polling by then
        loaded["tok_s"] = generate(url, a.tokens)
        rss_g = proc_stats(url.pid)[1]  # the generation done: what grows from here on is the room's
        th.join()
        cpu1, rss1 = proc_stats(url.pid)
        alones.append(generate(url, a.tokens))  # alone again after the class: this machine's own drift shows in the spread
    alone = statistics.median(alones)
    print(f"generation of {a.tokens} tokens: {alone:.2f} tok/s alone (median of {', '.join(f'{x:.2f}' for x in alones)}), "
          f"{loaded['tok_s']:.2f} tok/s with the room (ratio {loaded['tok_s'] / alone:.2f}; goal >= 0.90)")
    print(f"{a.students} students, {len(out['counted'])} steps: guess p50 {p50(out['guesses']):.0f} ms, p95 {p95(out['guesses']):.0f} ms "
          f"({len(out['guesses'])} guesses, {think[0]:g}-{think[1]:g} s after a step opens), "
          f"poll p95 {p95(out['polls']):.0f} ms ({len(out['polls'])} polls); goal < 200 ms")
    print(f"server: {cpu1 - cpu0:.1f} CPU s over the class (the generation's included), memory {rss1 - rss0:+.1f} MB, "
          f"{rss1 - rss_g:+.1f} MB of it after the generation ended (the room alone; goal < 50 MB)")
    print(f"every guess counted exactly once: {out['exact']} (room count vs sent per step: {out['counted']})")


if __name__ == "__main__":
    main()
