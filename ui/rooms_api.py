"""The rooms' JSON API on the app's own server (not through the model's queue): docs/rooms.md is its contract.

    POST /api/rooms                    {"example": NAME, "step": N}   -> {"code", "key", "join"}  (a gallery trace)
    GET  /api/rooms/{code}?student=ID  the room's state; with If-None-Match of its ETag and no change: 304
    POST /api/rooms/{code}/guesses     {"student": ID, "text": GUESS}
    POST /api/rooms/{code}/reveal | /step {"step": N} | /hide {"token_id": T} or {"text": S} | /close
                                       the teacher's, with the header X-Room-Key

The page's "Start a class" makes its room from the trace on the teacher's screen through the page's own
event (ui/wiring.py), into the same rooms. Every refusal is a 4xx with {"error": one sentence}.
"""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from pipeline.errors import GalleryError
from ui.rooms import ROOMS, RoomError

router = APIRouter(prefix="/api/rooms")  # its routes, added at import (docs/state.md); the rooms: ui/rooms.py's ROOMS


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
    from ui.examples import gallery_trace

    try:
        body = await _body(request)
        name = body.get("example")
        try:
            trace = gallery_trace(name) if isinstance(name, str) else None
        except GalleryError:
            raise RoomError(404, f"There is no gallery trace named {name!r}.") from None
        if trace is None:
            raise RoomError(400, "Name a gallery trace to start a class from: {\"example\": NAME}.")
        room = ROOMS.create(trace, body.get("step", len(trace.steps) - 1), example=name)
    except RoomError as e:
        return _refused(e)
    return {"code": room.code, "key": room.key, "join": f"?room={room.code}"}


@router.get("/{code}")
async def state(code: str, request: Request, student: str | None = None):
    try:
        room = ROOMS.seen(code, student, request.headers.get("x-room-key"))  # (the teacher's page sends its key: still there)
    except RoomError as e:
        return _refused(e)
    tag = _etag(room.version)
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag})
    return JSONResponse(ROOMS.state(room), headers={"ETag": tag, "Cache-Control": "no-cache"})


@router.post("/{code}/guesses")
async def guess(code: str, request: Request):
    try:
        body = await _body(request)
        # (in a worker thread: a guess sent before the step's distribution is ready waits for it; asked for when the step
        # opened, on the model's thread, which may be busy with a generation)
        g = await run_in_threadpool(ROOMS.guess, code, body.get("student"), body.get("text"))
    except RoomError as e:
        return _refused(e)
    return {"text": g.text, "token_id": g.token_id, "piece": g.piece}


async def _teacher(code: str, request: Request, act) -> Response:
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


__all__ = ["router"]
