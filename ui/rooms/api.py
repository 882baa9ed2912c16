"""The rooms' JSON API on the app's own server (not through the model's queue): docs/rooms.md is its contract.

    POST /api/rooms                    {"example": NAME, "step": N}   -> {"code", "key", "join"}  (a gallery trace)
                                       {"passage": NAME, "step": N}   (real text: step N asks the passage's token N)
    GET  /api/rooms/{code}/summary     every revealed step's score and the round's totals (ui/rooms/scores.py)
    POST /api/rooms/{code}/options     {"profanity": ..., "hide_counts": ...}  the teacher's (ui/rooms/profanity.py)
    GET  /api/rooms/{code}/results.csv the teacher's: one row per student and step (ui/rooms/results.py)
    GET  /api/rooms/{code}?student=ID  the room's state; with If-None-Match of its ETag and no change: 304
    POST /api/rooms/{code}/guesses     {"student": ID, "text": GUESS}
    GET  /api/rooms/{code}/rating?student=ID  after the reveal, the student's own guess rated as the page shows it
                                       (ui/rooms/ratings.py): {"step": N, "html": ...}; no guess of theirs: "html" null
    POST /api/rooms/{code}/reveal | /step {"step": N} | /hide {"token_id": T} or {"text": S} | /close
                                       the teacher's, with the header X-Room-Key

The page's "Start a class" makes its room from the trace on the teacher's screen through the page's own
event (ui/wiring.py), into the same rooms. Every refusal is a 4xx with {"error": one sentence}: a sentence the page
shows, in the language of the page that asked (ui/language.py's `of`: its address's ?lang=, else Accept-Language),
as these routes run outside Gradio's listeners; a refusal only a hand-made request gets (a body that is not JSON, a
gallery trace's name) in English, as the API's docs.
"""
from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from pipeline.errors import GalleryError
from ui.rooms.rooms import ROOMS, RoomError
from viz.text import of, speaking

router = APIRouter(prefix="/api/rooms")  # its routes, added at import (docs/state.md); the rooms: ui/rooms/rooms.py's ROOMS


def _refused(e: RoomError) -> JSONResponse:
    return JSONResponse({"error": str(e)}, status_code=e.status)


async def _body(request: Request) -> dict:
    try:
        body = await request.json()
    except ValueError:
        raise RoomError(400, "The request's body is not JSON.") from None
    if not isinstance(body, dict):
        raise RoomError(400, "The request's body is a JSON object.")
    return body


def _etag(version: int) -> str:
    return f'"{version}"'


@router.post("")
async def create(request: Request):
    with speaking(of(request)):
        return await _create(request)


async def _create(request: Request):
    from ui.examples import gallery_trace, is_passage

    try:
        body = await _body(request)
        name = body.get("passage", body.get("example"))
        is_text = "passage" in body
        if is_text and not is_passage(name):
            raise RoomError(404, f"There is no passage named {name!r}: GET /api/passages lists them.")
        try:  # (a passage is read by the model: one forward pass, off the event loop)
            trace = await run_in_threadpool(gallery_trace, name) if isinstance(name, str) else None
        except GalleryError as e:
            raise RoomError(503 if is_text else 404, str(e) if is_text else f"There is no gallery trace named {name!r}.") from None
        if trace is None:
            raise RoomError(400, "Name a gallery trace or a passage to start a class from: {\"example\": NAME} or {\"passage\": NAME}.")
        room = ROOMS.create(trace, body.get("step", 0 if is_text else len(trace.steps) - 1), example=name)
    except RoomError as e:
        return _refused(e)
    return {"code": room.code, "key": room.key, "join": f"?room={room.code}"}


@router.get("/{code}/summary")
async def summary(code: str, request: Request):
    with speaking(of(request)):
        try:
            return JSONResponse(ROOMS.summary(code))
        except RoomError as e:
            return _refused(e)


def state_answer(code: str, student: str | None, key: str | None, seen_tag: str | None, request=None) -> tuple[int, dict, bytes]:
    """GET /{code}: (status, headers, JSON body). Also answered without FastAPI by ui/rooms/asgi.py (a class's polls).
    `request` (its headers) says the language of a refusal, read only when there is one (a poll that is answered
    writes no sentence: the page writes its own words from the state)."""
    try:
        room = ROOMS.seen(code, student, key)  # (the teacher's page sends its key: still there)
    except RoomError as e:
        with speaking(of(request)):
            return e.status, {}, _json({"error": str(e)})
    tag = _etag(room.version)
    if seen_tag == tag:
        return 304, {"ETag": tag}, b""
    return 200, {"ETag": tag, "Cache-Control": "no-cache"}, _json(ROOMS.state(room))


def _json(obj) -> bytes:  # (as JSONResponse writes it)
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


@router.get("/{code}")
async def state(code: str, request: Request, student: str | None = None):
    status, headers, body = state_answer(code, student, request.headers.get("x-room-key"), request.headers.get("if-none-match"), request)
    return Response(body, status_code=status, headers=headers, media_type="application/json" if body else None)


@router.post("/{code}/guesses")
async def guess(code: str, request: Request):
    try:
        body = await _body(request)
        # on the event loop when the step's distribution is ready (a lookup: no thread, whose hand-offs of the GIL
        # made a guess wait behind the others under a class of 500); else in a worker thread, which waits for it (asked
        # for when the step opened, on the model's thread, which may be busy with a generation)
        lang = of(request)  # (the language of the page that sent it: its rude words are masked too)
        g = ROOMS.guess(code, body.get("student"), body.get("text"), wait=False, lang=lang) \
            or await run_in_threadpool(ROOMS.guess, code, body.get("student"), body.get("text"), True, lang)
    except RoomError as e:
        with speaking(of(request)):  # (a refusal the student's page shows, in its language)
            return _refused(e)
    return {"text": g.text, "token_id": g.token_id, "piece": g.piece, "ids": list(g.ids), "case_ids": list(g.case_ids)}


@router.get("/{code}/rating")
async def rating(code: str, request: Request, student: str | None = None):
    from viz import guess as guess_viz

    with speaking(of(request)):  # (the rating's words, and a refusal's, in the page's language)
        try:
            trace, step, done = ROOMS.rating(code, student)
            r = None if done is None else await asyncio.wrap_future(done)
        except RoomError as e:
            return _refused(e)
        html = None if r is None else guess_viz.rating_html(r, step, trace.steps[step])
        return JSONResponse({"step": step, "html": html}, headers={"Cache-Control": "no-store"})


async def _teacher(code: str, request: Request, act) -> Response:
    with speaking(of(request)):
        try:
            room = await act(request.headers.get("x-room-key"))
        except RoomError as e:
            return _refused(e)
        return JSONResponse(ROOMS.state(room))


@router.post("/{code}/reveal")
async def reveal(code: str, request: Request):
    async def act(key):
        return ROOMS.reveal(code, key)
    return await _teacher(code, request, act)


@router.post("/{code}/step")
async def step(code: str, request: Request):
    async def act(key):
        ROOMS.teacher(code, key)  # (the key first: a student's request says nothing more)
        return ROOMS.move(code, key, (await _body(request)).get("step"))
    return await _teacher(code, request, act)


@router.post("/{code}/hide")
async def hide(code: str, request: Request):
    async def act(key):
        ROOMS.teacher(code, key)
        body = await _body(request)
        if not isinstance(body.get("token_id"), int) and not isinstance(body.get("text"), str):
            raise RoomError(400, "Name the answer to hide: {\"token_id\": T} or {\"text\": S}.")
        return ROOMS.hide(code, key, body.get("token_id") if isinstance(body.get("token_id"), int) else None, body.get("text"))
    return await _teacher(code, request, act)


@router.post("/{code}/close")
async def close(code: str, request: Request):
    async def act(key):
        return ROOMS.close(code, key)
    return await _teacher(code, request, act)



# -- the teacher's tools (issue 36): the projector's options, the results as CSV (ui/rooms/profanity.py, ui/rooms/results.py)
@router.post("/{code}/options")
async def options(code: str, request: Request):
    """{"profanity": "off" | "replace" | "hide", "hide_counts": bool}, either or both: the state, with its `options`."""
    async def act(key):
        ROOMS.teacher(code, key)
        return ROOMS.set_options(code, key, **(await _body(request)))
    return await _teacher(code, request, act)


@router.get("/{code}/results.csv")
async def results(code: str, request: Request):
    """One row per student and step (anonymous "S1", "S2", ...): the teacher's, with the header X-Room-Key."""
    from ui.rooms import results as room_results

    with speaking(of(request)):  # (the refusal's sentence, and the file's headers and yes/no: the teacher's language)
        try:
            with ROOMS.lock:  # (a copy taken under the lock; the file written outside it)
                snap = room_results.snapshot(ROOMS.teacher(code, request.headers.get("x-room-key")))
        except RoomError as e:
            return _refused(e)
        name = room_results.filename(snap["code"])
        return Response(room_results.csv_text(snap), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})


__all__ = ["router"]
