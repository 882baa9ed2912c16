"""Where a link to this page points so that others can open it: a class's join link and Copy link alike.

A teacher on the laptop that serves the app (`--host 0.0.0.0`) opens it as 127.0.0.1 or localhost: that address is
the laptop's own, so a link written with it opens nothing on a student's phone. Links are written with the laptop's
address on its network instead; on a Space, with the Space's page (link_base).
"""
from __future__ import annotations

import os
import re
import socket
from urllib.parse import urlsplit

from viz.text import t

LOCAL = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
# Process-wide (docs/state.md): set once by app.py before the server starts, then only read.
SERVED_ON = {"host": "127.0.0.1"}  # where the server listens (app.py sets it): 0.0.0.0 reaches the school's network
HOST_COMMAND = "bash scripts/run.sh --host 0.0.0.0"


def not_reachable() -> str:
    """Why a join link of this computer's own address reaches no student, in the language spoken."""
    return t("network.not_reachable", command=HOST_COMMAND)


SPACE_PAGE = "https://huggingface.co/spaces/"
SPACE_ORIGIN = "https://huggingface.co"  # the page that holds a Space's frame (assets/links.js posts to it)
_SPACE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def space_page(space_id: str | None) -> str | None:
    """The public page of the Space `space_id` ("owner/name", as a Space sets SPACE_ID), or None when it is not one."""
    space_id = (space_id or "").strip()
    return SPACE_PAGE + space_id if _SPACE_ID.fullmatch(space_id) else None


def _host(address: str) -> str:
    """The host name of an address, lower case ("" when there is none or the address is malformed)."""
    try:
        return (urlsplit(address or "").hostname or "").lower()
    except ValueError:  # e.g. an unclosed "[" of an IPv6 address
        return ""


def link_base(address: str, space_id: str | None = None, space_host: str | None = None) -> tuple[str, bool]:
    """(where a copied link points, whether the page is a Space's frame). A Space serves the app at OWNER-NAME.hf.space
    (SPACE_HOST) in a frame of huggingface.co/spaces/OWNER/NAME, which hands its query on to the frame: a link to it is the one
    to share (it keeps the Space's header, and survives the frame's address changing). Anywhere else: the page's own address."""
    page, host = space_page(space_id), _host(address)
    if page and host and (host.endswith(".hf.space") or host == _host(f"//{space_host}" if space_host else "")):
        return page, True
    return address or "", False


def lan_address() -> str | None:
    """This machine's address on its network (None: none found). No packet is sent: a UDP socket's route is asked."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.254.254.254", 1))
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") or ip == "0.0.0.0" else ip


def shareable_base(address) -> tuple[str, str, bool]:
    """(the base of a link others can open, a sentence when they cannot, whether the page is a Space's frame)."""
    base, in_space = link_base(address or "", os.environ.get("SPACE_ID"), os.environ.get("SPACE_HOST"))
    u = urlsplit(base)
    if in_space or u.hostname not in LOCAL:
        return base, "", in_space
    ip = lan_address() if SERVED_ON["host"] in ("0.0.0.0", "::") else None
    if ip is None:
        return base, not_reachable(), False
    return u._replace(netloc=f"{ip}:{u.port}" if u.port else ip).geturl(), "", False


__all__ = ["SERVED_ON", "SPACE_ORIGIN", "lan_address", "link_base", "shareable_base", "space_page"]
