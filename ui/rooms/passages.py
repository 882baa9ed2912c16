"""The real-text passages over HTTP (docs/rooms.md): what a class can guess against the model.

    GET /api/passages          [{"name", "title", "source", "url", "licence", "n_tokens"}]
    GET /api/passages/{name}   {"name", "title", "source", "url", "licence", "text", "token_ids", "pieces"}

Token counts and ids are the loaded model's tokenizer's (null while the model loads). A room on a passage:
POST /api/rooms {"passage": NAME, "step": N} (ui/rooms/api.py).
"""
from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from pipeline import passages
from pipeline.errors import GalleryError
from ui.model import loaded

router = APIRouter(prefix="/api/passages")  # its routes, added at import (docs/state.md)


def _about(p: passages.Passage) -> dict:
    d = asdict(p)
    del d["text"]
    return d


@router.get("")
async def listed():
    lm = loaded()
    try:
        return [dict(_about(p), n_tokens=len(passages.token_ids(lm, p)) if lm is not None else None) for p in passages.entries()]
    except GalleryError as e:
        return JSONResponse({"error": str(e)}, status_code=500)


@router.get("/{name}")
async def one(name: str):
    try:
        p = passages.get(name)
    except GalleryError as e:
        return JSONResponse({"error": str(e)}, status_code=404)
    lm = loaded()
    ids = passages.token_ids(lm, p) if lm is not None else None
    return dict(_about(p), text=p.text, token_ids=ids, pieces=lm.tokens.pieces(ids) if ids is not None else None)


__all__ = ["router"]
