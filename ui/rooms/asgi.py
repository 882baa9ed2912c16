"""The class rooms' JSON API answered in front of Gradio's app, on the same server and port.

A class of 500 polls its room 250 times a second. Profiled under that load (docs/benchmarks.md, "A class room of
500"), the event loop spent 0.73 ms of CPU a request, of which 28% matching the request against Gradio's hundred
routes before the rooms' (added after them), 15% FastAPI's handling of the route (parameters, dependencies), 3%
Gradio's middleware (CORS, Brotli, the upload limit), and 5% the room's state and its JSON. `serve_first` puts a
small dispatcher in front of the started app: a poll (GET /api/rooms/CODE) is answered here, by
ui/rooms_api.state_answer (what the route answers), without FastAPI; anything else under /api/rooms goes straight to
the rooms' own router (a dozen routes), everything else on to Gradio as before. What the skipped middleware did for
these requests they do not need (same-origin pages; JSON of a few kB, not compressed) or it is done here (a body over
MAX_BODY is refused). Cross-origin requests get no CORS headers: a page of another site cannot use the rooms' API.
A refusal that a page may show (a poll of a class that is not there, a guess pasted too long) is written in the
language of the page that asked (ui/language.py's `of`), found only when there is a refusal to write.
"""
from __future__ import annotations

from urllib.parse import parse_qs, unquote

from fastapi import FastAPI
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from viz.text import of, speaking, t, thousands

PREFIX = "/api/rooms"
MAX_BODY = 16 * 1024  # a room's requests are a few hundred bytes of JSON


class RoomsFirst:
    """ASGI: an HTTP request under PREFIX to `rooms`, any other to `app`; a poll of a room's state (GET PREFIX/CODE)
    answered by `state` (ui/rooms_api.state_answer: what the route answers) without FastAPI at all, when given."""

    def __init__(self, app: ASGIApp, rooms: ASGIApp, state=None):
        self.app, self.rooms, self.state = app, rooms, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not ours(scope):
            await self.app(scope, receive, send)
            return
        code = polled(scope)
        if code is not None and self.state is not None:
            await self.answer_state(code, scope, send)
            return
        refusal = too_big(scope)
        if refusal:
            await refusal(scope, receive, send)
            return
        await self.rooms(scope, receive, send)


    async def answer_state(self, code: str, scope: Scope, send: Send) -> None:
        headers = dict(scope["headers"])
        student = parse_qs(scope["query_string"].decode("latin-1")).get("student", [None])[-1]
        key, tag = (headers.get(h) for h in (b"x-room-key", b"if-none-match"))
        status, extra, body = self.state(code, student, key and key.decode("latin-1"), tag and tag.decode("latin-1"),
                                         HTTPConnection(scope))  # (its headers: a refusal's language)
        out = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]
        if body:
            out += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": body})


def polled(scope: Scope) -> str | None:
    """The room's code when the request is a GET of PREFIX/CODE (a page's poll), else None."""
    if scope["method"] != "GET":
        return None
    path, root = scope["path"], scope.get("root_path", "")
    rest = path[len(root) + len(PREFIX) + 1:] if root and path.startswith(root) else path[len(PREFIX) + 1:]
    return unquote(rest) if rest and "/" not in rest else None


def ours(scope: Scope) -> bool:
    """The request's path, less the app's root path (behind a proxy), is PREFIX or under it."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path == PREFIX or path.startswith(PREFIX + "/")


def too_big(scope: Scope) -> JSONResponse | None:
    """A refusal for a body that is too long, or of a length not said (Gradio's upload limit is not on this path)."""
    headers = dict(scope.get("headers") or [])
    size = headers.get(b"content-length")
    if size is None:
        if scope["method"] in ("POST", "PUT", "PATCH") and b"transfer-encoding" in headers:
            return JSONResponse({"error": "Send the request's body with its length (Content-Length)."}, status_code=411)
        return None
    if not size.isdigit() or int(size) > MAX_BODY:  # (a guess pasted too long, say: its page says why, in its language)
        with speaking(of(HTTPConnection(scope))):
            return JSONResponse({"error": t("rooms.too_big", n=thousands(MAX_BODY // 1024))}, status_code=413)
    return None


def rooms_app(router) -> FastAPI:
    """A FastAPI app of the rooms' router alone (FastAPI's routes need its own small middleware stack), no docs."""
    sub = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    sub.include_router(router)
    return sub


def serve_first(app, router, state=None) -> None:
    """Put the rooms' `router` (and `state`, the polls' answer) in front of `app`, a Starlette app already serving
    (Gradio's, after launch): its middleware stack, built at its first request, is what the dispatcher passes
    everything else on to."""
    stack = app.middleware_stack if app.middleware_stack is not None else app.build_middleware_stack()
    if not isinstance(stack, RoomsFirst):
        app.middleware_stack = RoomsFirst(stack, rooms_app(router), state)


__all__ = ["RoomsFirst", "serve_first", "rooms_app", "PREFIX", "MAX_BODY"]
