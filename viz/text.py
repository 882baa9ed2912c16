"""The page's words, one source: every sentence a person reads lives once, in locales/en.json, read here and shipped
to the page's scripts (head_script, read by assets/text.js); and the one way each side writes a percentage and a
count (pct, thousands, count), tested equal to assets/text.js's on the same numbers (tests/unit/test_text_catalogue.py).

The catalogue: nested JSON objects by area (guess, stage, tour, caption, room, ...), looked up by dotted key
("guess.rated"). A sentence's placeholders are named, `{prob}`, as Python's str.format writes them, and both sides
fill them the same plain way (no format specs, no attribute access: a number is formatted by pct, thousands or the
caller before it goes in). A sentence is plain text: markup (a <b>, a <code>) rides in a placeholder's value, never in
the catalogue (t_html escapes the sentence's own text, never the values). Counts: `unit.<name>.one` and
`unit.<name>.other` ("{n} token", "{n} tokens"), picked by count().

Languages: catalogue(locale) reads locales/<locale>.json over the English one, so a sentence not yet translated
falls back to English (a locale with no file is English). Numbers are written the locale's way, told by its own
catalogue: `number.format` ("1,234.5"; French "1 234,5") gives the thousands mark and the decimal one,
`number.percent` ("{x}%"; French "{x} %") where the sign goes, `number.one_for` ("1"; French "0 1") the counts that
take the singular.

A key that is not in the catalogue raises KeyError, as does a placeholder given no value: never a half-written
sentence on a class's screen. The tests prove that every key the code names (in Python and in assets/*.js) exists
and every placeholder is given, so neither can happen on a page. (`locale` is not a placeholder name: t takes it.)
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import html
import json
import math
import numbers
import re
from pathlib import Path
from types import MappingProxyType
from typing import Mapping
from urllib.parse import parse_qs, urlsplit

LOCALES = Path(__file__).resolve().parents[1] / "locales"
DEFAULT = "en"
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")  # {name}: the one placeholder syntax (assets/text.js's too)
_LOCALE_NAME = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?")  # "en", "pt-BR": a file name, never a path


def _flat(tree: dict, prefix: str = "") -> dict[str, str]:
    """{"guess": {"rated": "..."}} -> {"guess.rated": "..."}; every leaf a string."""
    out: dict[str, str] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out |= _flat(v, key + ".")
        elif isinstance(v, str):
            out[key] = v
        else:
            raise TypeError(f"locales: {key} is a {type(v).__name__}, not a sentence")
    return out


def _read(locale: str) -> dict[str, str]:
    path = LOCALES / f"{locale}.json"
    return _flat(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else {}


_LANGUAGE: contextvars.ContextVar[str] = contextvars.ContextVar("language", default=DEFAULT)
# a browser's or a link's language tag -> the catalogue that serves it ("fr-CA" -> "fr", "zh-Hans" -> "zh-CN")
_ALIASES = {"pt": "pt-BR", "zh": "zh-CN", "zh-hans": "zh-CN", "zh-sg": "zh-CN", "zh-hans-cn": "zh-CN"}


def languages() -> tuple[str, ...]:
    """The languages the page speaks: English, then every file in locales/ (a new file is a new language)."""
    return (DEFAULT, *sorted(p.stem for p in LOCALES.glob("*.json") if p.stem != DEFAULT))


def match(tag) -> str | None:
    """The page's language for a language tag ("fr", "fr-FR", "pt", "zh-Hans-CN"; case ignored), None when the page
    does not speak it (assets/language.js's match, the same rule)."""
    if not isinstance(tag, str) or not tag or len(tag) > 35:
        return None
    tag = tag.strip().replace("_", "-").lower()
    have = {x.lower(): x for x in languages()}
    for cand in (tag, _ALIASES.get(tag), tag.split("-")[0], _ALIASES.get(tag.split("-")[0])):
        if cand and cand.lower() in have:
            return have[cand.lower()]
    return None


def known(tag) -> str:
    """match(tag), English where the page does not speak it."""
    return match(tag) or DEFAULT


def preferred(tags, fallback: str = DEFAULT) -> str:
    """The first of a person's languages, in their order, that the page speaks ("de-CH, fr;q=0.9" -> "de"), `fallback`
    (English) where none: what a browser's Accept-Language header or navigator.languages asks for. A header's
    q-values order it; a tag whose q is 0 is refused."""
    if isinstance(tags, str):
        weighted = []
        for i, part in enumerate(tags.split(",")[:32]):
            tag, _, params = part.strip().partition(";")
            q = 1.0
            for param in params.split(";"):
                name, _, value = param.strip().partition("=")
                if name.strip() == "q":
                    try:
                        q = float(value)
                    except ValueError:
                        q = 0.0
            if q > 0:
                weighted.append((-q, i, tag.strip()))
        tags = [tag for _, _, tag in sorted(weighted)]
    for tag in tags or ():
        if match(tag):
            return match(tag)
    return fallback


def names() -> dict[str, str]:
    """Each language the page speaks by its tag, named in itself ("fr": "Français"): the picker's choices."""
    return {tag: catalogue(tag)["language.name"] for tag in languages()}


def language() -> str:
    """The language this request or command speaks (speaking() sets it; English otherwise)."""
    return _LANGUAGE.get()


@contextlib.contextmanager
def speaking(tag):
    """Every sentence and number written inside, in `tag`'s language (a ContextVar: each request its own, and a
    worker thread started inside inherits it)."""
    token = _LANGUAGE.set(known(tag))
    try:
        yield language()
    finally:
        _LANGUAGE.reset(token)


@functools.cache
def catalogue(locale: str = DEFAULT) -> Mapping[str, str]:
    """Every sentence by dotted key, in `locale` where it has the sentence, else in English (read once)."""
    en = _read(DEFAULT)
    own = _read(locale) if locale != DEFAULT and _LOCALE_NAME.fullmatch(locale) else {}
    return MappingProxyType(en | {k: v for k, v in own.items() if k in en})


def _fill(text: str, key: str, vars: Mapping[str, object], value=str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in vars:
            raise KeyError(f"{key}: no value for {{{m.group(1)}}}")
        return value(vars[m.group(1)])
    return PLACEHOLDER.sub(one, text)


def t(key: str, /, locale: str | None = None, **vars) -> str:
    """The sentence `key`, its placeholders filled with `vars` (each as str() writes it). Plain text."""
    return _fill(catalogue(locale or language())[key], key, vars)


def template(key: str, /, locale: str | None = None) -> str:
    """The sentence `key` unfilled, its placeholders as they are: a template that another side fills (the
    distribution's title, filled by Python and by assets/viewer_frames.js)."""
    return catalogue(locale or language())[key]


def t_html(key: str, /, locale: str | None = None, **vars) -> str:
    """The sentence `key` as HTML: its own text escaped, the values put in as they are (the caller's markup,
    already escaped: a guess, a token's piece)."""
    parts = PLACEHOLDER.split(catalogue(locale or language())[key])  # literal, name, literal, name, ..., literal
    return "".join(html.escape(p, quote=False) if i % 2 == 0 else _fill(f"{{{p}}}", key, vars) for i, p in enumerate(parts))


_FORMAT = re.compile(r"1(\D*)234(\D)5")  # number.format: "1,234.5" -> (",", ".")


def number_marks(locale: str | None = None) -> tuple[str, str, str, frozenset]:
    """(thousands mark, decimal mark, percent template, the counts that take the singular) of `locale`."""
    return _marks(locale or language())


@functools.cache
def _marks(locale: str) -> tuple[str, str, str, frozenset]:
    cat = catalogue(locale)
    m = _FORMAT.fullmatch(cat["number.format"])
    if m is None or "{x}" not in cat["number.percent"]:
        raise ValueError(f"locales/{locale}.json: number.format must look like 1,234.5 and number.percent hold {{x}}")
    return m.group(1), m.group(2), cat["number.percent"], frozenset(int(k) for k in cat["number.one_for"].split())


def _local(english: str, locale: str | None) -> str:
    """A number written the English way ("12,345.6") written the locale's way ("12 345,6")."""
    group, decimal, _, _ = number_marks(locale)
    if (group, decimal) == (",", "."):
        return english
    return english.replace(",", "\0").replace(".", decimal).replace("\0", group)


def thousands(n, locale: str | None = None) -> str:
    """A whole number with its thousands marked, as f"{n:,}" writes it: 2048 -> '2,048' (a fraction is rounded
    half to even first, as Python's round does); in French '2 048'."""
    return _local(f"{int(n) if isinstance(n, numbers.Integral) else round(float(n)):,}", locale)


def decimal(x, digits: int = 2, locale: str | None = None) -> str:
    """A number to `digits` decimals, as f"{x:,.{digits}f}" writes it, the locale's way: 4.67 (French 4,67)."""
    return _local(f"{float(x):,.{digits}f}", locale)


def count(n: int, unit: str, locale: str | None = None) -> str:
    """'1 token', '2,048 tokens': the catalogue's unit.<unit>.one or .other with n (French: '0 jeton')."""
    return t(f"unit.{unit}.{'one' if n in number_marks(locale)[3] else 'other'}", locale, n=thousands(n, locale))


def _pct_auto(p: float) -> str:
    """The digits a probability's size needs: 0.873 -> '87%', 0.023 -> '2.3%', 4e-6 -> '0.0004%'."""
    p *= 100
    if p >= 10:
        return f"{p:.0f}%"
    if p >= 1:
        return f"{p:.1f}%"
    if p >= 0.01:
        return f"{p:.2f}%"
    if p <= 0:
        return "0%"
    return f"{p:.1g}%" if p >= 1e-4 else "<0.0001%"


def pct(x, digits: int | None = 1, floor: bool = False, locale: str | None = None) -> str:
    """pct_en's percentage written the locale's way: '12.3%'; French '12,3 %', German '12,3 %'."""
    english = pct_en(x, digits, floor)
    if not english.endswith("%"):
        return english
    return number_marks(locale)[2].replace("{x}", _local(english[:-1], locale))


def pct_en(x, digits: int | None = 1, floor: bool = False) -> str:
    """The one way to write a share or a probability as a percentage.

    digits: that many decimals, as f"{x:.{digits}%}" writes it (0.1234 -> '12.3%'); None: the digits its size
    needs (0.873 -> '87%', 0.023 -> '2.3%', 0.00123 -> '0.12%', 4e-6 -> '0.0004%', below that '<0.0001%').
    floor: a share above 0 that would read as 0 reads '<0.1%' instead (at digits 1; '<1%' at 0). No number
    (NaN) reads '–'."""
    x = float(x) + 0.0  # (-0.0 reads as 0.0, as in assets/text.js)
    if math.isnan(x):
        return "–"
    if digits is None:
        return _pct_auto(x)
    unit = 10.0 ** -digits / 100
    if floor and 0 < x < unit:
        return f"<{unit:.{digits}%}"
    return f"{x:.{digits}%}"


def catalogue_js(locale: str | None = None) -> str:
    """The catalogue as a script's statement, `window.LLMTextCatalogue = {...};`: compact JSON with no '<' at all
    (so nothing in it ends a <script> element early, nor opens a comment)."""
    body = json.dumps(dict(catalogue(locale or language())), ensure_ascii=False, separators=(",", ":"), sort_keys=True).replace("<", "\\u003c")
    return f"window.LLMTextCatalogue = {body};"


def head_script(locale: str | None = None) -> str:
    """A <script> element defining window.LLMTextCatalogue, for a page's head, before assets/text.js is used."""
    return f"<script>{catalogue_js(locale)}</script>"


__all__ = ["DEFAULT", "LOCALES", "PLACEHOLDER", "catalogue", "catalogue_js", "count", "decimal", "head_script", "known", "language", "languages", "match",
           "names", "number_marks", "pct", "pct_en", "preferred", "speaking", "t", "t_html", "template", "thousands"]


def of(request) -> str:
    """The language a request speaks: its page's `?lang=`, else its Accept-Language, else its page's `?hl=` (a class's
    join link: the teacher's language, for a browser whose languages the page does not speak), else English (as
    assets/language.js picks it)."""
    if request is None:
        return DEFAULT
    headers = getattr(request, "headers", None) or {}
    query = parse_qs(urlsplit(headers.get("referer") or "").query)
    asked, hint = query.get("lang"), query.get("hl")
    if asked and match(asked[-1]):
        return match(asked[-1])
    return preferred(headers.get("accept-language") or "", fallback=(hint and match(hint[-1])) or DEFAULT)
