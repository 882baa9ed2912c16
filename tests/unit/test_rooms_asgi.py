"""The class rooms' fast path (issue 36, a lecture hall): /api/rooms/... answered in front of Gradio's app
(ui/rooms/asgi.py), and a guess rated on the event loop once its step's distribution is ready, in a worker thread
before (ui/rooms/rooms.py Rooms.guess(wait=False), ui/rooms/api.py)."""
import threading
from concurrent.futures import Future

import pytest
from fastapi import APIRouter, FastAPI, Request
from fastapi.testclient import TestClient

from tests.rooms_setup import room_setup
from ui.rooms import rooms
from ui.rooms import api as rooms_api
from ui.rooms import asgi as rooms_asgi


def gradio_like(router) -> FastAPI:
    """An app standing for Gradio's: a catch-all route added before the rooms' router, a middleware that marks
    every answer it lets through."""
    app = FastAPI()

    @app.middleware("http")
    async def mark(request, call_next):
        response = await call_next(request)
        response.headers["x-through"] = "gradio"
        return response

    @app.api_route("/{path:path}", methods=["GET", "POST"])
    async def anything(path: str):
        return {"gradio": path}

    app.include_router(router)
    return app


def echo_router() -> APIRouter:
    r = APIRouter(prefix="/api/rooms")

    @r.get("/{code}")
    async def state(code: str, student: str | None = None):
        return {"code": code, "student": student}

    @r.post("/{code}/guesses")
    async def guess(code: str, request: Request):
        return {"code": code, "body": await request.json()}

    return r


def test_the_rooms_paths_go_to_the_rooms_router_and_every_other_to_the_app():
    router = echo_router()
    app = gradio_like(router)
    client = TestClient(app)
    assert client.get("/api/rooms/ABC").json() == {"gradio": "api/rooms/ABC"}  # (the rooms' routes came last: shadowed)
    rooms_asgi.serve_first(app, router)
    rooms_asgi.serve_first(app, router)  # (twice: one dispatcher)
    r = client.get("/api/rooms/ABC", params={"student": "s1"})
    assert r.json() == {"code": "ABC", "student": "s1"} and "x-through" not in r.headers
    assert client.post("/api/rooms/ABC/guesses", json={"text": "fox"}).json() == {"code": "ABC", "body": {"text": "fox"}}
    for other in ("/", "/api/roomsX", "/gradio_api/info", "/api/passages"):
        r = client.get(other)
        assert r.json() == {"gradio": other.lstrip("/")} and r.headers["x-through"] == "gradio"


def test_under_a_root_path_too():
    router = echo_router()
    app = gradio_like(router)
    rooms_asgi.serve_first(app, router)
    assert rooms_asgi.ours({"path": "/space/api/rooms/ABC", "root_path": "/space"})
    assert not rooms_asgi.ours({"path": "/space/gradio_api/info", "root_path": "/space"})
    assert TestClient(app, root_path="/space").get("/api/rooms/ABC").json()["code"] == "ABC"


def test_a_body_too_long_or_of_no_stated_length_is_refused_with_a_sentence():
    router = echo_router()
    app = gradio_like(router)
    rooms_asgi.serve_first(app, router)
    client = TestClient(app)
    r = client.post("/api/rooms/ABC/guesses", content=b"{" + b" " * rooms_asgi.MAX_BODY + b"}", headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"].endswith("kB.")
    ok = client.post("/api/rooms/ABC/guesses", content=b"{" + b" " * (rooms_asgi.MAX_BODY - 2) + b"}", headers={"content-type": "application/json"})
    assert ok.status_code == 200  # (MAX_BODY itself is let through)

    def chunks():
        yield b'{"text": '
        yield b'"fox"}'

    r = client.post("/api/rooms/ABC/guesses", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 411 and "Content-Length" in r.json()["error"]


class Held:
    """MODEL_THREAD's stand-in: the distributions asked for stay pending until `release`."""

    def __init__(self):
        self.asked = []

    def submit(self, fn, *args):
        f = Future()
        self.asked.append((f, fn, args))
        return f

    def release(self):
        for f, fn, args in self.asked:
            if not f.done():
                f.set_result(fn(*args))


@pytest.fixture()
def held(lm, monkeypatch):
    pool = Held()
    monkeypatch.setattr(rooms, "MODEL_THREAD", pool)
    return pool, room_setup(lm, monkeypatch)


def test_a_guess_on_the_event_loop_waits_for_nothing_and_counts_once(held):
    pool, (client, store, room, clock) = held
    assert store.guess(room.code, "a", "fox", wait=False) is None  # the step's forward pass still running: nothing done
    assert store.state(room)["guesses"] == 0 and not room.last_guess
    pool.release()
    g = store.guess(room.code, "a", "fox", wait=False)
    assert g is not None and g.token_id is not None and g.step == room.step
    assert store.state(room)["guesses"] == 1
    clock[0] += 1
    assert store.guess(room.code, "a", "dog", wait=True).text == "dog" and store.state(room)["guesses"] == 1  # (one live guess)


def test_the_api_rates_a_ready_step_without_a_thread_and_a_pending_one_in_a_worker(held, monkeypatch):
    pool, (client, store, room, clock) = held
    threads = []
    real = rooms_api.run_in_threadpool
    monkeypatch.setattr(rooms_api, "run_in_threadpool", lambda fn, *a: threads.append(a) or real(fn, *a))
    timer = threading.Timer(0.3, pool.release)  # the forward pass ends while the guess waits for it, in a worker
    timer.start()
    r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "fox"})
    timer.join()
    assert r.status_code == 200 and len(threads) == 1
    clock[0] += 1
    r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": "b", "text": "fox"})
    assert r.status_code == 200 and len(threads) == 1  # ready: rated on the event loop
    assert r.json()["token_id"] == store.rooms[room.code].guesses[room.step]["a"].token_id
    assert client.get(f"/api/rooms/{room.code}").json()["guesses"] == 2
    bad = client.post(f"/api/rooms/{room.code}/guesses", json={"student": "c", "text": "   "})
    assert bad.status_code == 400 and bad.json()["error"]  # (a refusal as before)


def test_a_poll_answered_without_fastapi_is_the_routes_answer(lm, monkeypatch):
    client, store, room, clock = room_setup(lm, monkeypatch)  # (the route, through FastAPI)
    app = gradio_like(rooms_api.router)
    rooms_asgi.serve_first(app, rooms_api.router, rooms_api.state_answer)
    fast = TestClient(app)
    calls = []
    real = rooms_api.state_answer
    monkeypatch.setattr(app.middleware_stack, "state", lambda *a: calls.append(a) or real(*a))
    path = f"/api/rooms/{room.code}"
    a, b = client.get(path, params={"student": "s1"}), fast.get(path.lower(), params={"student": "s2"})  # (a code in lower case)
    assert len(calls) == 1 and calls[0][1] == "s2"
    assert (a.status_code, b.status_code) == (200, 200) and b.headers["content-type"] == "application/json"
    assert b.headers["etag"] != a.headers["etag"] and b.json()["students"] == 2  # (s2's arrival moved the version)
    assert b.json() == client.get(path).json() and b.headers["cache-control"] == "no-cache"
    same = fast.get(path, params={"student": "s2"}, headers={"If-None-Match": b.headers["etag"]})
    assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == b.headers["etag"]
    clock[0] += 1
    assert client.post(f"{path}/guesses", json={"student": "s1", "text": "fox"}).status_code == 200
    moved = fast.get(path, params={"student": "s2"}, headers={"If-None-Match": b.headers["etag"]})
    assert moved.status_code == 200 and moved.json()["guesses"] == 1
    key = {"X-Room-Key": room.key}
    clock[0] += 3 * 3600 - 10  # the teacher's page away nearly 3 h: its poll (with the key) keeps the room
    assert fast.get(path, headers=key).status_code == 200 and calls[-1][2] == room.key
    clock[0] += 20
    assert fast.get(path).json()["closed"] is False
    nope = fast.get("/api/rooms/QQQQQQ")
    assert nope.status_code == 404 and nope.json()["error"].startswith("There is no class")
    other = fast.get(f"{path}/summary")  # (not a poll: the rooms' router answers it, not Gradio's app)
    assert "x-through" not in other.headers and "gradio" not in other.json()
    assert len(calls) == 6


class Counted(dict):
    """A room's students, counting how often they are counted."""
    reads = 0

    def values(self):
        Counted.reads += 1
        return super().values()


def test_the_students_present_are_counted_once_a_version_and_second_and_never_stale(lm, monkeypatch):
    client, store, room, clock = room_setup(lm, monkeypatch)
    for sid in ("a", "b"):
        store.seen(room.code, sid)
    room.students = Counted(room.students)
    assert store.state(room)["students"] == 2
    reads = Counted.reads
    for _ in range(50):  # a class's polls of one version within a second: counted once
        assert store.state(room)["students"] == 2
    assert Counted.reads == reads
    store.seen(room.code, "c")  # an arrival moves the version: counted at once
    assert store.state(room)["students"] == 3
    clock[0] += 10
    store.seen(room.code, "a")  # (a poll of a student present: no change)
    assert store.state(room)["students"] == 3
    clock[0] += rooms.PRESENT_S - 5  # b and c gone quiet, the version as it was: the next second counts them out
    assert store.state(room)["students"] == 1
    assert client.get(f"/api/rooms/{room.code}").json()["students"] == 1


def test_a_polls_refusal_and_a_body_too_long_speak_the_pages_language(lm, monkeypatch):
    from viz.text import t

    room_setup(lm, monkeypatch)
    app = gradio_like(rooms_api.router)
    rooms_asgi.serve_first(app, rooms_api.router, rooms_api.state_answer)
    fast = TestClient(app)
    nope = fast.get("/api/rooms/QQQQQQ", headers={"Referer": "http://x/?lang=zh-CN"})
    assert nope.status_code == 404 and nope.json()["error"] == t("rooms.no_class", locale="zh-CN")
    big = fast.post("/api/rooms/QQQQQQ/guesses", content=b"x" * (rooms_asgi.MAX_BODY + 1), headers={"Accept-Language": "es"})
    assert big.status_code == 413 and big.json()["error"] == t("rooms.too_big", locale="es", n="16")
