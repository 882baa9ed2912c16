"""Scripts that must run before Gradio's own, written at the top of the page's <head> as the server sends it.

Gradio adds the `head` given to launch() (ui/bridge.py's scripts and the rest) once its own modules have run. A script
that must be in place before them goes here: assets/status_frames.js, which gives Gradio's status trackers a frame a
tenth of a second apart (the tracker module keeps its own reference to requestAnimationFrame, taken as it loads).
`serve_first(app)` wraps the started app (as ui/rooms/asgi.py's front does): the page itself (a GET of the
app's root answered with HTML) gets the scripts right after its <head>; every other request, and a page answered
compressed (nothing to insert into), passes as it came.
"""
from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ui.bridge import inline_scripts

EARLY_SCRIPTS = ("status_frames.js",)
HEAD = b"<head>"


def early_html(names=EARLY_SCRIPTS) -> bytes:
    """The scripts `names` (in assets/), inline, in one <script>."""
    return inline_scripts(names).encode("utf-8")


def with_early(body: bytes, html: bytes) -> bytes:
    """`body` with `html` right after its first <head> (unchanged when it has none)."""
    at = body.find(HEAD)
    return body if at < 0 else body[:at + len(HEAD)] + html + body[at + len(HEAD):]


def is_page(scope: Scope) -> bool:
    """A GET of the app's root (less its root path behind a proxy): the page."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return scope.get("type") == "http" and scope.get("method") == "GET" and path in ("", "/")


class EarlyHead:
    """ASGI: the page's HTML with `html` at the top of its <head>; everything else as `app` answers it."""

    def __init__(self, app: ASGIApp, html: bytes):
        self.app, self.html = app, html

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_page(scope):
            await self.app(scope, receive, send)
            return
        held: dict = {}
        parts: list[bytes] = []

        async def relay(msg: Message) -> None:
            if msg["type"] == "http.response.start" and _plain_html(msg):
                held.update(msg)  # sent with the body, once its length is known
                return
            if msg["type"] != "http.response.body" or not held:
                await send(msg)
                return
            parts.append(msg.get("body", b""))
            if msg.get("more_body"):
                return
            body = with_early(b"".join(parts), self.html)
            headers = [(k, v) for k, v in held["headers"] if k.lower() != b"content-length"]
            await send({**held, "headers": headers + [(b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, relay)


def _plain_html(start: Message) -> bool:
    """A successful, uncompressed HTML answer."""
    headers = {k.lower(): v for k, v in start.get("headers", [])}
    return (start.get("status") == 200 and headers.get(b"content-type", b"").startswith(b"text/html")
            and b"content-encoding" not in headers)


def serve_first(app, html: bytes | None = None) -> None:
    """Put EarlyHead in front of `app`, a Starlette app already serving (Gradio's, after launch)."""
    stack = app.middleware_stack if app.middleware_stack is not None else app.build_middleware_stack()
    if not isinstance(stack, EarlyHead):
        app.middleware_stack = EarlyHead(stack, early_html() if html is None else html)


__all__ = ["EarlyHead", "serve_first", "early_html", "with_early", "is_page", "EARLY_SCRIPTS"]
