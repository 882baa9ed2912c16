"""The page in the visitor's language: which one a request speaks, every listener run speaking it, the page's words
for the page's scripts, and Gradio's own labels put in it as the page opens.

Which language: the page's address's `?lang=` (a link, the picker, a class's join link), else the browser's
languages (Accept-Language; navigator.languages on the page's side, assets/language.js, the same rule), else
English. The server reads the address from a request's Referer: Gradio's queue calls come from the page itself, so
every listener knows the language of the page that called it, with no state to keep.

    language.of(request)        "fr"
    language.speak_all(demo)    every listener of the page runs in speaking(its caller's language) (viz.text)
    language.relabelling(demo)  Gradio's labels, choices and placeholders (made in English by ui/layout.py) in the
                                visitor's language as the page opens: one source, the catalogue, one mechanism
    language.router             GET /api/text/{lang}.json: a language's catalogue, for assets/language.js
"""
from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path

import gradio as gr
from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse
from gradio.context import LocalContext

from viz.text import DEFAULT, _ALIASES, catalogue, language, match, names, of, speaking, t

ASSETS = Path(__file__).resolve().parents[1] / "assets"
ENGLISH_ONLY = ("trace",)  # the API's endpoints: they answer in English, whoever calls (issue 37: the CLI and /trace)
router = APIRouter(prefix="/api/text")


def _speaking_request():
    return speaking(of(LocalContext.request.get(None)))


def speaking_caller(fn):
    """`fn` run in its caller's language (the request Gradio has set for it): a plain function, a generator (each
    step speaking), or either kind of async one. Its signature stays its own (Gradio reads it)."""
    if inspect.isasyncgenfunction(fn):
        async def agen(*a, **k):
            with _speaking_request():
                async for x in fn(*a, **k):
                    yield x
        wrapped = agen
    elif inspect.iscoroutinefunction(fn):
        async def coro(*a, **k):
            with _speaking_request():
                return await fn(*a, **k)
        wrapped = coro
    elif inspect.isgeneratorfunction(fn):
        def gen(*a, **k):
            it = fn(*a, **k)
            while True:
                with _speaking_request():  # (each step may run on another worker thread: its own context)
                    try:
                        x = next(it)
                    except StopIteration as stop:
                        return stop.value
                yield x
        wrapped = gen
    else:
        def plain(*a, **k):
            with _speaking_request():
                return fn(*a, **k)
        wrapped = plain
    return functools.wraps(fn)(wrapped)


def speak_all(demo: gr.Blocks) -> gr.Blocks:
    """Every listener of `demo` (but the English API's) run in its caller's language."""
    for block_fn in demo.fns.values():
        if block_fn.fn is not None and block_fn.api_name not in ENGLISH_ONLY and not getattr(block_fn.fn, "_speaks", False):
            block_fn.fn = speaking_caller(block_fn.fn)
            block_fn.fn._speaks = True
    return demo


def head_html() -> str:
    """For the page's <head>, before any script that writes a word: the languages and their names, the English
    catalogue, and assets/language.js, which picks the visitor's language and puts its catalogue in place."""
    en = json.dumps(dict(catalogue(DEFAULT)), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    data = {"names": names(), "aliases": _ALIASES}
    code = (ASSETS / "language.js").read_text(encoding="utf-8")
    words = f"window.LLMLanguages = {json.dumps(data, ensure_ascii=False)}; window.LLMTextCatalogue = {en};".replace("<", "\\u003c")
    return f"<script>{words}\n{code}</script>"


@router.get("/{lang}.json")
def catalogue_file(lang: str):
    """A language's whole catalogue (English where a sentence is not translated), cached by the browser for an hour."""
    tag = match(lang)
    if tag is None or tag != lang:
        raise HTTPException(404, f"no language {lang!r}: the page speaks {', '.join(names())}")
    return JSONResponse(dict(catalogue(tag)), headers={"Cache-Control": "public, max-age=3600"})


# --- Gradio's own labels ---------------------------------------------------------------------------------------
_ATTRS = ("label", "info", "placeholder", "value")
_AGAIN: list = []  # (component, {attribute: a function writing it}) that layout.py asked to be written again


def again(component, **made):
    """`component`, its attributes (`value=fn`, `label=fn`) written again by their functions in the visitor's
    language as the page opens: for words made of several sentences, or sentences with numbers in them."""
    _AGAIN.append((component, made))
    return component


def _english_keys() -> dict[str, str]:
    """English sentence -> its key, for the sentences with no placeholder (a label is one of them)."""
    out: dict[str, str] = {}
    for key, s in catalogue(DEFAULT).items():
        if "{" not in s:
            out.setdefault(s, key)
    return out


def _words_of(block) -> dict:
    """{attribute: key or [(key or None, value), ...] for choices} of a component's English words."""
    keys, found = _english_keys(), {}
    for attr in _ATTRS:
        v = getattr(block, attr, None)
        if isinstance(v, str) and v in keys and not (attr == "value" and not isinstance(block, (gr.Button, gr.Markdown))):
            found[attr] = keys[v]
    choices = getattr(block, "choices", None)
    if isinstance(choices, list) and any(isinstance(c, tuple) and isinstance(c[0], str) and c[0] in keys for c in choices):
        found["choices"] = [(keys.get(c[0]), c) if isinstance(c, tuple) else (None, (c, c)) for c in choices]
    return found


def relabelling(demo: gr.Blocks) -> tuple | None:
    """(The listener, its outputs) that, as the page opens, gives every component whose label, info, placeholder,
    choices (or a button's or a Markdown's text) is a sentence of the catalogue that sentence in the visitor's language
    (nothing changes for English); None: no such component. ui/wiring.py makes it the listener of the bridge's "words",
    which a page not in English sends as it opens (assets/language.js): once run, its outputs join the components Gradio's
    page walks at every message of every run, so an English page never runs it (docs/benchmarks.md)."""
    mine = [(c, m) for c, m in _AGAIN if demo.blocks.get(c._id) is c]
    _AGAIN[:] = [x for x in _AGAIN if x not in mine]  # (taken: a later build starts from none)
    made = {id(c): m for c, m in mine}
    targets = [(b, w, made.get(id(b), {})) for b in demo.blocks.values() if (w := _words_of(b)) or id(b) in made]
    if not targets:
        return None

    # A component Gradio's page finds in no event is interactive; once only an output (of this listener) it would be
    # drawn static (a checkbox the page's script ticks, Guess first, would be disabled): said explicitly, it stays so.
    used = {getattr(c, "_id", c) for f in demo.fns.values() for c in (*f.inputs, *f.outputs)}
    for b, _, _ in targets:
        if getattr(b, "interactive", False) is None and b._id not in used:
            b.interactive = True

    def words():
        if language() == DEFAULT:
            return [gr.skip() for _ in targets]
        out = []
        for _, found, fns in targets:
            upd = {a: t(k) for a, k in found.items() if a != "choices"}
            if "choices" in found:
                upd["choices"] = [(t(k) if k else c[0], c[1]) for k, c in found["choices"]]
            out.append(gr.update(**upd | {a: fn() for a, fn in fns.items()}))
        return out

    return words, [b for b, _, _ in targets]
