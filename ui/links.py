"""Links and the gallery: a URL that fills the page in, and saved traces opened from a dropdown.

    ?prompt=…&mode=chat|raw&system=…&temperature=…&top_k=…&top_p=…&min_p=…&repetition_penalty=…&seed=…&max_new_tokens=…&step=…
    &run=1            generate at once (as if Generate were clicked)
    &branch=S:R,…     then force the candidate of rank R (1 = the likeliest) at step S and generate on, in order
    &example=NAME     open the gallery trace NAME (pipeline/gallery.py) at its step
    &view=present     the presenter view: the lesson alone, large (assets/page.js)
    &guess=1          Guess first: each step's answer hidden until a guess (assets/guess.js)
    &room=CODE        join the class room CODE (assets/room.js, ui/class_room.py)
    &lang=fr          the page in that language (assets/language.js, ui/language.py); else the browser's

The page's script (assets/links.js, from the page's head) writes a link's fields in the browser as the page is drawn
(the server answers seconds later, when a person may have typed); what the server sends for the fields later (an
example's settings) goes only into a field nobody has touched.
"Copy link" writes how the trace on screen was made (trace_link: its prompt, mode and settings, run=1, the
step on screen, the branches it took), not the what-if sliders, so that the link writes the same text again.

Names starting with "__" are the host's (a Space adds __theme, and __sign when private), passed over in silence. In a
Space, "Copy link" points at the Space's page on huggingface.co (SPACE_ID), not its frame, and sets its address (link_base).

The pure part (parse_link, make_link, trace_link, link_base) takes and gives plain values; the Gradio part is the listeners
of the "Example traces" dropdown (a gallery trace goes on as an uploaded file: ui/listeners.py's load_trace), a link's
rest read after the page opened, and "Copy link" (their events are wired in ui/wiring.py, with every other).
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import urlencode, urlsplit

import gradio as gr  # (at module level: Gradio reads the `gr.Request` annotation against this module's names)

from pipeline.errors import GalleryError, TraceFormatError
from pipeline.indices import clamp_index
from ui import bridge, examples, messages, network
from ui.network import SPACE_ORIGIN, link_base, space_page  # noqa: F401 (this module's names for them too)
from ui.views import Components
from ui.viewer_wiring import LIGHT
from viz.text import DEFAULT, language, match, number_marks, t, thousands

LINK_FIELDS_JS = (Path(__file__).resolve().parents[1] / "assets" / "link_fields.js").read_text(encoding="utf-8")
MODES = {"chat": "Chat", "raw": "Raw text"}
# name in the link -> (field key in the page's C (ui/layout.py), kind, lowest, highest): the page's own slider ranges
NUMBERS = {"temperature": ("temperature", float, 0.0, 2.0), "top_k": ("top_k", int, 0, 200), "top_p": ("top_p", float, 0.01, 1.0),
           "min_p": ("min_p", float, 0.0, 0.5), "repetition_penalty": ("repetition_penalty", float, 1.0, 2.0),
           "seed": ("seed", int, 0, 2**32 - 1), "max_new_tokens": ("max_new", int, 1, 512), "step": ("step", int, 0, 100_000)}
KNOWN = ("prompt", "mode", "system", *NUMBERS, "run", "branch", "example", "view", "guess", "room", "lang", "hl")
# read by the page's scripts alone (assets/page.js, guess.js, room.js, language.js: hl, a class's join link's language hint)
PAGE_ONLY = ("view", "guess", "room", "lang", "hl")
# the fields a link fills, by the page's C key, in the order the page's script gets and gives them, with their element ids
FIELDS = {"prompt": "prompt", "mode": "mode", "system": "system-prompt", "temperature": "temperature", "top_k": "top-k",
          "top_p": "top-p", "min_p": "min-p", "repetition_penalty": "repetition-penalty", "seed": "seed", "max_new": "max-new-tokens"}
MAX_BRANCHES, _BRANCH = 20, re.compile(r"^\s*(\d{1,6})\s*:\s*(\d{1,3})\s*$")  # step:rank
# names the host adds to the address, not the person (a Space's __theme, __sign): a warning about them would only confuse
HOST_PREFIX = "__"
MAX_TEXT = 20_000  # a prompt or system prompt longer than this is refused (a link is no place for a book)


@dataclass
class Link:
    """What a link asks for: `fields` by the page's C key (only those given and valid), and the rest."""
    fields: dict = field(default_factory=dict)
    step: int | None = None
    run: bool = False
    example: str | None = None
    branches: list = field(default_factory=list)  # [(step, rank)], rank 1 = the likeliest candidate
    warnings: list = field(default_factory=list)


def _number(name: str, text: str, link: Link):
    key, kind, lo, hi = NUMBERS[name]
    try:
        v = float(text)
        if not math.isfinite(v) or (kind is int and not v.is_integer()):
            raise ValueError
    except (TypeError, ValueError):
        link.warnings.append(t("links.not_whole" if kind is int else "links.not_number", setting=f"{name}={text!r}"))
        return None
    if not lo <= v <= hi:
        link.warnings.append(t("links.outside", setting=f"{name}={text}", low=_shown(lo), high=_shown(hi)))
        return None
    return kind(v)


def _shown(v) -> str:
    """A range's end as a person reads it, the language's way: 0.01 (French 0,01), 4,294,967,295."""
    return thousands(v) if isinstance(v, int) else _plain(v).replace(".", number_marks()[1])


def _branches(text: str, link: Link) -> None:
    parts = [p for p in text.split(",") if p.strip()]
    pairs = [_BRANCH.match(p) for p in parts]
    if not parts or len(parts) > MAX_BRANCHES or not all(pairs):
        link.warnings.append(t("links.branch_pairs", setting=f"branch={text!r}", n=MAX_BRANCHES))
    elif any(int(m[2]) < 1 or int(m[2]) > 100 for m in pairs):
        link.warnings.append(t("links.branch_rank", setting=f"branch={text!r}", high=100))
    else:
        link.branches = [(int(m[1]), int(m[2])) for m in pairs]


def parse_link(params: Mapping[str, str], example_names=()) -> Link:
    """The link's query (name -> text) as a Link. Every bad value is left out with a warning, so the
    field keeps its default; unknown names are reported too, except the host's own (see HOST_PREFIX).
    Never raises."""
    link = Link()
    for name, text in params.items():
        text = str(text)
        if str(name).startswith(HOST_PREFIX) or name in PAGE_ONLY:
            continue
        if name in ("prompt", "system"):
            if len(text) > MAX_TEXT:
                link.warnings.append(t("links.too_long", name=name, n=thousands(MAX_TEXT)))
            else:
                link.fields[name] = text
        elif name == "mode":
            if text.strip().lower() in MODES:
                link.fields["mode"] = MODES[text.strip().lower()]
            else:
                link.warnings.append(t("links.mode", setting=f"mode={text!r}"))
        elif name in NUMBERS:
            v = _number(name, text, link)
            if v is not None and name == "step":
                link.step = v
            elif v is not None:
                link.fields[NUMBERS[name][0]] = v
        elif name == "branch":
            _branches(text, link)
        elif name == "run":
            link.run = text.strip().lower() in ("1", "true", "yes", "on")
        elif name == "example":
            if text in example_names:
                link.example = text
            else:
                link.warnings.append(t("links.no_example", name=repr(text), names=", ".join(example_names) or t("links.none")))
        else:
            link.warnings.append(t("links.unknown", name=repr(name), names=", ".join(KNOWN)))
    return link


def warning_text(link: Link) -> str:
    problems = functools.reduce(lambda first, then: t("links.joined", first=first, then=then), link.warnings or [""])  # "a; b" (French "a ; b")
    return t("warn.link_unused", problems=problems)


def _plain(v):
    """A number as a link writes it: 0.7, not 0.7000000000000001; 3, not 3.0."""
    if isinstance(v, float):
        v = round(v, 6)
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


def make_link(base: str, *, prompt=None, mode=None, system=None, temperature=None, top_k=None, top_p=None, min_p=None,
              repetition_penalty=None, seed=None, max_new_tokens=None, step=None, example=None, branches=(), run=False, lang=None) -> str:
    """The link that opens the page at `base` in this state (None and empty values left out; min-p and the repetition
    penalty when they are on), in the language `lang` (None: the language speaking, when it is not English)."""
    pairs = (("example", example or None), ("prompt", prompt), ("mode", {v: k for k, v in MODES.items()}.get(mode)), ("system", system or None),
             ("temperature", temperature), ("top_k", top_k), ("top_p", top_p), ("min_p", min_p or None),
             ("repetition_penalty", None if repetition_penalty in (None, 1, 1.0) else repetition_penalty),
             ("seed", seed), ("max_new_tokens", max_new_tokens),
             ("branch", ",".join(f"{int(s)}:{int(r)}" for s, r in branches) or None), ("step", step), ("run", "1" if run else None),
             ("lang", lang or (language() if language() != DEFAULT else None)))
    q = [(name, _plain(v)) for name, v in pairs if v not in (None, "")]
    base = (base or "").split("?")[0].split("#")[0]
    return base + ("?" + urlencode(q) if q else "")


def trace_fields(trace) -> dict:
    """The fields (by C key) as they were when `trace` was made: its prompt, mode and settings."""
    s = trace.settings
    return {"prompt": trace.prompt.text, "mode": MODES["chat" if s.chat else "raw"], "system": (s.system_prompt or "") if s.chat else "",
            "temperature": s.temperature, "top_k": s.top_k, "top_p": s.top_p, "min_p": s.min_p, "repetition_penalty": s.repetition_penalty,
            "seed": s.seed, "max_new": s.max_new_tokens}


def trace_branches(trace) -> list[tuple[int, int]]:
    """(step, rank) of every token a person forced in `trace` (a branch), in order; rank 1 = the likeliest."""
    hits = ((st, [i for i, t in enumerate(st.top_ids) if int(t) == int(st.token_id)]) for st in trace.steps if getattr(st, "forced", False))
    return [(int(st.index), h[0] + 1) for st, h in hits if h]


def made_tokens(trace) -> int:
    """The max_new_tokens that writes `trace` again: as many as it holds (a stopped or "+1 token" run), its own when it hit the end."""
    n = len(trace.steps)
    ended = n and trace.steps[-1].stop_reason == "eos"
    return max(n, int(trace.settings.max_new_tokens)) if ended else max(1, n)


def trace_link(base: str, trace, step: int | None, example: str | None = None, lang: str | None = None) -> str:
    """The link that shows `trace` at `step` again: a gallery trace by name; any other by how it was made (run=1: written anew)."""
    if example:
        return make_link(base, example=example, step=step, lang=lang)
    f = trace_fields(trace)
    return make_link(base, prompt=f["prompt"], mode=f["mode"], system=f["system"], temperature=f["temperature"], top_k=f["top_k"],
                     top_p=f["top_p"], min_p=f["min_p"], repetition_penalty=f["repetition_penalty"], seed=f["seed"],
                     max_new_tokens=made_tokens(trace), branches=trace_branches(trace),
                     step=step, run=True, lang=lang)


# -- inside a Hugging Face Space --------------------------------------------------------------------
# -- Gradio -------------------------------------------------------------------------------------
def tables(C: Components) -> dict:
    """For the page's script: the server's ranges (parse_link warns of the rest), the fields' ids, their values as drawn."""
    return {"numbers": {n: [k, "int" if kind is int else "float", lo, hi] for n, (k, kind, lo, hi) in NUMBERS.items() if k != "step"},
            "modes": MODES, "max_text": MAX_TEXT, "ids": FIELDS, "defaults": {k: C[k].value for k in FIELDS}}


EARLY: dict | None = None  # tables() of the page built last (remember_tables, from ui/layout.py)


def early_head() -> str:
    """A <head> script: assets/link_fields.js, inline (after ui/bridge.py's head), writes each of a link's fields the
    moment it exists, before it is painted (from a component of the page, it began only once Gradio had drawn that far:
    a second of defaults)."""
    if EARLY is None:
        return ""
    go = f"const go = () => window.LLMLinkFields.early({json.dumps(EARLY)}); if (document.body) go(); else document.addEventListener('DOMContentLoaded', go);"
    code = f"{LINK_FIELDS_JS}\n(function () {{ {go} }})();".replace("</", "<\\/")
    return f"<script>{code}</script>"


@dataclass
class Deps:
    """What the links' listeners need from the page (given by ui/wiring.py, which wires their events)."""
    C: Components
    state: object  # the session's trace (gr.State)
    load_trace: Callable  # ui/listeners.py's load_trace(file) -> {component: value}
    load_outputs: list  # its outputs, as the "Load trace" button lists them
    view: Callable  # ui/views.py's panels_of_values, C given: (trace, step, layer, head, temperature, top_k, top_p, only=...) -> {component: value}
    slider: Callable  # ui/views.py's slider(trace, step) -> the step slider's update


def remember_tables(C: Components) -> None:
    """The tables the page's head writes a link's fields with (early_head), from the page just laid out (ui/layout.py)."""
    global EARLY
    EARLY = tables(C)


def open_example(d: Deps, name, step=None) -> dict:
    """The gallery trace `name` on the page through app.load_trace (as an uploaded file would be),
    at the entry's step (or `step`), with its "look" sentence."""
    C = d.C
    try:
        e = examples.entry(name)
        out = d.load_trace(examples.gallery_trace(name))
    except (GalleryError, OSError, EOFError, TraceFormatError) as err:
        gr.Warning(t("error.example_open", error=messages.said(err)))
        return {C.example_look: gr.skip()}
    trace = out.get(d.state)
    if trace is None:  # load_trace said why
        return out
    s = clamp_index(e.step if step is None else step, len(trace.steps))
    st = trace.settings
    out.update({C.slider: d.slider(trace, s), **d.view(trace, s, 0, "all", st.temperature, st.top_k, st.top_p, st.min_p,
                                                      st.repetition_penalty, only=LIGHT)})
    out.update({C[k]: v for k, v in trace_fields(trace).items()})  # what the panels use is what the fields show
    out[C.example_look] = f"**{e.title}.** {e.look}\n\n{fields_line(trace)}"
    examples.remember(trace, name)
    return out


def fields_line(trace, what: str = "example") -> str:
    """The one line that says the fields now hold the example's (or trace file's) prompt, mode and settings."""
    f = trace_fields(trace)
    mode = t("choice.mode.raw" if f["mode"] == MODES["raw"] else "choice.mode.chat")  # (the mode as the page names it)
    return "*" + t("note.fields_trace" if what == "trace" else "note.fields_example", mode=mode, temperature=_shown(f["temperature"]),
                   top_k=_plain(f["top_k"]), top_p=_shown(f["top_p"]), seed=_plain(f["seed"])) + "*"


def example_outputs(d: Deps) -> list:
    """What opening a gallery trace fills: the loaded trace's outputs, the slider, the light panels, the fields."""
    C = d.C
    return list(dict.fromkeys([*d.load_outputs, C.slider, *[C[k] for k in LIGHT], C.example_look, *(C[k] for k in FIELDS)]))


def chosen(d: Deps, name) -> dict:
    """The "Example traces" dropdown's choice opened (nothing for an empty choice)."""
    return open_example(d, name) if name else {d.C.example_look: gr.skip()}


def picked(d: Deps, data: dict) -> dict:
    """A step of the lesson, "NAME:STEP" (assets/room.js's bridge message): its example at that step."""
    hit = examples.lesson_pick(data.get("pick"))
    return {**open_example(d, hit[0], step=hit[1]), d.C.example: hit[0]} if hit else {d.C.example_look: gr.skip()}


def from_link(d: Deps, flag, request) -> dict:
    """What the page's link asks for, after the page opened: its example, then (the bridge's "fields" and "link") the
    example's fields where nobody typed and the link's run, branches and step."""
    C = d.C
    params = dict(request.query_params) if request is not None else {}
    if not params:
        return {flag: False}
    link = parse_link(params, examples.names())
    if link.warnings:
        gr.Warning(warning_text(link))
    out = {flag: bool(link.example)}
    if link.example:
        out.update(open_example(d, link.example, step=link.step))
        out[C.example] = link.example
    # the link's own fields are on the page already (the browser wrote them as it drew it); the example's
    # go to the fields nobody has touched, and never over the link's own
    later = {k: out.pop(C[k]) for k in FIELDS if C[k] in out}
    later = {k: v for k, v in later.items() if k not in link.fields}
    out[C.bridge] = bridge.say("link", run=link.run, step=None if link.example else link.step, branch=[] if link.example else link.branches,
                               fields=later)
    return out


def sliders_moved(trace, temperature, top_k, top_p, min_p, repetition_penalty) -> bool:
    """The sampling sliders show other settings than the ones the text on screen was made with (a what-if the link,
    which writes the text as it was made, leaves out)."""
    st = trace.settings
    try:
        now = (float(temperature), int(top_k), float(top_p), float(min_p), float(repetition_penalty))
    except (TypeError, ValueError):
        return False
    was = (float(st.temperature), int(st.top_k), float(st.top_p), float(st.min_p), float(st.repetition_penalty))
    return any(abs(a - b) > 1e-9 for a, b in zip(now, was))


def copy_answer(trace, step, values: dict, data: dict) -> tuple:
    """"Copy link": (the link for the link box, the bridge's message). The page sends its own address (the server cannot
    know it behind a proxy); `values`: the fields by the page's C key; `data`: the page's message (its address, and the
    language picker's choice, when that asked: the page again in that language, on this same address)."""
    switch = match(data.get("lang"))
    base, _, in_space = network.shareable_base(data.get("address"))  # (the network's address where 127.0.0.1 is the page's)
    if switch:
        base, in_space = str(data.get("address") or ""), False
    if trace is not None and trace.steps:  # how the text on screen was made, not the what-if sliders
        url = trace_link(base, trace, clamp_index(step, len(trace.steps)), example=examples.shown_example(trace), lang=switch)
    else:  # nothing on screen: the fields as they are
        url = make_link(base, **{("max_new_tokens" if k == "max_new" else k): v for k, v in values.items()}, lang=switch)
    if switch:
        return gr.skip(), bridge.say("link", go=url)
    action = {"copy": url}
    if trace is not None and trace.steps and sliders_moved(trace, *(values[k] for k in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty"))):
        action["moved"] = True  # (the page says the link leaves out the sliders moved since the run: assets/link_actions.js)
    if in_space:  # the Space's page shows this query in its address bar too (assets/link_actions.js asks it)
        action["parent"] = {"origin": SPACE_ORIGIN, "queryString": urlsplit(url).query}
    return url, bridge.say("link", **action)


