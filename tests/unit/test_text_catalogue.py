"""One source for the page's words (viz/text.py, assets/text.js, locales/en.json): every key the code names, in
Python and in assets/*.js, is in the catalogue and every placeholder of its sentence is given; no sentence is left
unused; Python and the browser write every sentence, percentage and count the same (the JS run by node, else by
Chromium); the sentences moved into the catalogue are no longer written out in the code they came from."""
from __future__ import annotations

import ast
import json
import math
import random
import re
from pathlib import Path

import pytest

from tests.js_run import run_js
from viz import captions, text
from viz.text import PLACEHOLDER, catalogue, catalogue_js, count, head_script, pct, t, t_html, thousands

ROOT = Path(__file__).resolve().parents[2]
PY_DIRS = ("pipeline", "viz", "ui")
KEY_CALLS = {"t", "t_html", "template"}  # viz.text's functions that take a key first
# the places that build their keys: caption.<name> (viz.captions._NAMES); an example's gallery.<name>.title/look and
# passage.<name>.title (ui/examples.py `words`); a Gradio label's own key, found by its English (ui/language.py `relabelling`)
BY_NAME = ("viz/captions.py:", "ui/examples.py:", "ui/language.py:", "viz/viewer/page.py:")  # (the last: assets/viewer.html's slots)
# sentences moved out of these files: none of their text may be written there again
MOVED = {"viz/guess.py": ("guess.", "common."), "assets/viewer_guess.js": ("guess.", "error.guess"),
         "viz/distribution.py": ("stage.", "dist."), "assets/viewer_frames.js": ("stage.",),
         "viz/tour.py": ("tour.",), "viz/room.py": ("room.",), "viz/captions.py": ("caption.",),
         # the page's components (their labels, buttons, placeholders, info, choices, titles) and its warnings
         "ui/layout.py": ("label.", "button.", "placeholder.", "info.", "choice.", "title.", "tab."),
         "ui/inside/tabs.py": ("label.", "button.", "tab."), "ui/views.py": ("choice.",),
         "ui/links.py": ("button.", "placeholder.", "warn.", "note.", "error.", "choice."),
         "ui/listeners.py": ("button.", "warn.", "error.", "common.", "choice."), "ui/generation.py": ("note.", "error."),
         "viz/viewer/page.py": ("viewer.", "label."), "viz/inside/residual.py": ("residual.",),
         "viz/panels.py": ("compare.", "title.", "dist."), "assets/room.js": ("room.", "label.", "button."),
         "viz/sampling_compare.py": ("sampling_compare.",), "viz/inside/bytes_view.py": ("bytes.",), "viz/branches.py": ("branches.",),
         "assets/branch_ask.js": ("branch.", "button."), "assets/link_actions.js": ("button.",), "assets/page_view.js": ("button.",)}


def _placeholders(sentence: str) -> set[str]:
    return set(PLACEHOLDER.findall(sentence))


# -- where the code names a key: Python (ast) ------------------------------------------------------------------------

def _strings(node: ast.AST) -> tuple[list[str], bool]:
    """The string constants an argument can be (a conditional's both), and whether it is built at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value], False
    if isinstance(node, ast.IfExp):
        (a, da), (b, db) = _strings(node.body), _strings(node.orelse)
        return a + b, da or db
    return [], True


def _python_uses() -> list[tuple[str, list[str], set[str] | None]]:
    """(where, keys, the placeholders given: None when not known, a **mapping) of every call naming a key."""
    out = []
    files = [p for d in PY_DIRS for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"]
    for path in files:
        if path == ROOT / "viz" / "text.py":
            continue  # (the definitions)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own_count = any(isinstance(n, ast.ImportFrom) and (n.module or "").endswith("text") and any(a.name == "count" for a in n.names)
                        for n in ast.walk(tree))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = ast.unparse(node.func)
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            given = None if any(k.arg is None for k in node.keywords) or f.endswith("template") else {k.arg for k in node.keywords}
            if f in KEY_CALLS or f in {f"text.{c}" for c in KEY_CALLS}:
                keys, dynamic = _strings(node.args[0])
                out.append((where, keys if not dynamic else [f"<built at run time: {ast.unparse(node.args[0])}>"], given))
            elif (f == "text.count" or (f == "count" and own_count)) and len(node.args) >= 2:
                units, dynamic = _strings(node.args[1])
                out.append((where, [f"<built at run time: {ast.unparse(node.args[1])}>"] if dynamic else
                            [f"unit.{u}.{form}" for u in units for form in ("one", "other")], {"n"}))
    return out


# -- and the browser's scripts (a small scanner: comments out, then each call's first two arguments) ------------------

_JS_CALL = re.compile(r"(?:(?<![\w$.])|(?<=LLMText\.))(t|parts|count)\(")  # t(...), LLMText.t(...), root.LLMText.count(...)


def _js_without_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), src, flags=re.S)
    return re.sub(r"(^|\s)//[^\n]*", r"\1", src)


def _args(src: str, i: int) -> list[str]:
    """The top-level arguments of the call whose '(' is just before src[i] (as text)."""
    out, depth, start, quote = [], 0, i, None
    for j in range(i, len(src)):
        c = src[j]
        if quote:
            if c == "\\":
                continue
            if c == quote and src[j - 1] != "\\":
                quote = None
        elif c in "'\"`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                out.append(src[start:j].strip())
                return out
            depth -= 1
        elif c == "," and depth == 0:
            out.append(src[start:j].strip())
            start = j + 1
    raise AssertionError(f"unclosed call at {i}")


def _object_keys(arg: str) -> set[str] | None:
    """The keys of an object literal `{ a: x, b }` (None when the argument is not one)."""
    if not (arg.startswith("{") and arg.endswith("}")):
        return None
    return {re.match(r"\s*([A-Za-z_$][\w$]*)", part).group(1) for part in _args(arg[1:-1] + ")", 0) if part}


def _js_uses() -> list[tuple[str, list[str], set[str] | None]]:
    out = []
    for path in sorted((ROOT / "assets").glob("*.js")):
        if path.name == "text.js":
            continue  # (the definitions)
        src = _js_without_comments(path.read_text(encoding="utf-8"))
        for m in _JS_CALL.finditer(src):
            args = _args(src, m.end())
            where = f"{path.relative_to(ROOT)}:{src.count(chr(10), 0, m.start()) + 1}"
            if m.group(1) == "count":
                unit = re.fullmatch(r"'(\w+)'", args[1]) if len(args) == 2 else None
                if unit:
                    out.append((where, [f"unit.{unit.group(1)}.one", f"unit.{unit.group(1)}.other"], {"n"}))
                continue
            keys = re.findall(r"'(\w+(?:\.\w+)+)'", args[0])  # (a conditional's both; its test's strings are no keys)
            dynamic = not keys or "`" in args[0] or "+" in args[0]
            out.append((where, keys if not dynamic else [f"<built at run time: {args[0]}>"],
                        _object_keys(args[1]) if len(args) > 1 else set()))
    return out


def _template_uses() -> list[tuple[str, list[str], set[str] | None]]:
    """The offline page's words: assets/viewer.html's {{T:key}} and {{CSS:key}} slots (viz/viewer/page.py fills them)."""
    src = (ROOT / "assets" / "viewer.html").read_text(encoding="utf-8")
    return [(f"assets/viewer.html:{src.count(chr(10), 0, m.start()) + 1}", [m.group(1)], set())
            for m in re.finditer(r"\{\{(?:T|CSS):([a-z_.]+)\}\}", src)]


USES = _python_uses() + _js_uses() + _template_uses()


def test_the_scanners_find_the_code_that_names_keys():
    where = {w.split(":")[0] for w, _, _ in USES}
    assert {"viz/guess.py", "viz/distribution.py", "viz/tour.py", "viz/room.py", "assets/viewer_guess.js", "assets/viewer_frames.js"} <= where
    assert _object_keys("{ a: f(x, y), b, c: { b: 1 } }") == {"a", "b", "c"} and _object_keys("vars") is None


def test_every_key_the_code_names_is_in_the_catalogue_and_every_placeholder_is_given():
    cat = catalogue()
    for where, keys, given in USES:
        if where.startswith(BY_NAME):
            continue  # (its keys: test_no_sentence_is_left_unused)
        for key in keys:
            assert key in cat, f"{where}: {key} is not in locales/en.json"
            if given is not None:
                assert _placeholders(cat[key]) <= given, f"{where}: {key} needs {sorted(_placeholders(cat[key]) - given)}"


def test_no_sentence_is_left_unused():
    used = {k for _, keys, _ in USES for k in keys}
    used |= {f"caption.{k}" for k in captions._NAMES} | {"caption.distribution_detail"}  # viz/captions.py: by name
    used |= {"number.format", "number.percent", "number.one_for"}  # viz.text.number_marks, assets/text.js numberMarks
    used |= {"language.name", "language.pick"}  # viz.text.names (the picker's choices), assets/language.js (its label)
    from pipeline import gallery, passages
    used |= {f"gallery.{e.name.replace('-', '_')}.{part}" for e in gallery.entries() for part in ("title", "look")}
    used |= {f"passage.{x.name.replace('-', '_')}.title" for x in passages.entries()}  # (ui/examples.py `words`)
    used |= {f"lesson.step_{i}" for i in range(len(gallery.lesson()))}  # (ui/examples.py `lesson_steps`)
    assert set(catalogue()) - used == set(), "sentences nothing uses: take them out of locales/en.json"


def test_every_sentence_is_plain_text_with_named_placeholders():
    for key, sentence in catalogue().items():
        assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", key), key
        assert "{" not in PLACEHOLDER.sub("", sentence) and "}" not in PLACEHOLDER.sub("", sentence), f"{key}: a stray brace"
        assert "locale" not in _placeholders(sentence), f"{key}: t() takes `locale` itself"
        assert not re.search(r"<[a-zA-Z/]", sentence), f"{key}: markup belongs in a placeholder's value, not the catalogue"
        assert sentence == sentence.strip() and sentence, key


def _code_strings(path: Path) -> str:
    """The text of a file's string literals, docstrings and comments left out (they may name what they describe)."""
    src = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        return _js_without_comments(src)
    tree = ast.parse(src)
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return "\n".join(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)


def test_the_moved_sentences_are_written_nowhere_else():
    """A sentence is written once: none of the moved sentences' words (each literal run of 12 characters or more) is
    left in the code of the files they came from."""
    cat = catalogue()
    for rel, areas in MOVED.items():
        src = _code_strings(ROOT / rel)
        for key, sentence in cat.items():
            if key.startswith(areas):
                for run in PLACEHOLDER.split(sentence)[::2]:
                    run = run.strip()
                    assert len(run) < 12 or run not in src, f"{rel} still writes {key}'s {run!r}"


def test_t_fills_placeholders_and_refuses_what_is_missing():
    assert t("guess.rank", rank="1,234") == "rank 1,234"
    assert t("common.range", lo=1, hi="2 tokens") == "1 to 2 tokens"
    with pytest.raises(KeyError):
        t("guess.no_such_sentence")
    with pytest.raises(KeyError, match="rank"):
        t("guess.rank")
    assert t_html("common.quote", text="<b>x</b>") == "“<b>x</b>”"  # a value goes in as given (the caller's markup)
    assert text.template("dist.title") == "Next token at step {step}"
    assert count(1, "token") == "1 token" and count(2048, "token") == "2,048 tokens" and count(0, "step") == "0 steps"


def test_a_language_falls_back_to_english_sentence_by_sentence(tmp_path, monkeypatch):
    (tmp_path / "en.json").write_text(json.dumps({"a": {"b": "Hello {name}", "c": "Bye"}}), encoding="utf-8")
    (tmp_path / "xx.json").write_text(json.dumps({"a": {"b": "Hallo {name}", "old": "no longer in English"}}), encoding="utf-8")
    monkeypatch.setattr(text, "LOCALES", tmp_path)
    text.catalogue.cache_clear()
    try:
        assert t("a.b", name="Ada") == "Hello Ada" and t("a.b", "xx", name="Ada") == "Hallo Ada" and t("a.c", "xx") == "Bye"
        assert "a.old" not in catalogue("xx") and dict(catalogue("zz")) == dict(catalogue()) == dict(catalogue("../en"))
    finally:
        text.catalogue.cache_clear()


def test_the_head_script_holds_the_catalogue_and_nothing_that_ends_it():
    js = catalogue_js()
    assert js.startswith("window.LLMTextCatalogue = {") and js.endswith("};") and "<" not in js
    assert json.loads(js[len("window.LLMTextCatalogue = "):-1]) == dict(catalogue())
    assert head_script() == f"<script>{js}</script>"


def test_the_guess_refusals_are_the_pipelines_words():
    """pipeline.guess refuses a guess in its own words (pipeline/ cannot read viz/); the offline page says the same."""
    from pipeline.errors import GuessError
    from pipeline.guess import MAX_GUESS_CHARS, clean
    from ui.messages import sentence

    for bad, key in (("   ", "error.guess_empty"), ("x" * (MAX_GUESS_CHARS + 1), "error.guess_too_long")):
        with pytest.raises(GuessError) as e:
            clean(bad)
        assert sentence(e.value) == t(key, n=MAX_GUESS_CHARS)


# -- Python and the browser write the same -----------------------------------------------------------------------

def _numbers() -> list[float]:
    rng = random.Random(7)
    xs = [0.0, -0.0, 1.0, 0.5, 0.125, 0.00125, 0.0125, 0.995, 0.0995, 0.00995, 0.000995, 1e-4, 1e-6, 1e-7, 0.105, 0.0105,
          0.00105, 0.0375, 0.00875, 0.001, 0.0009999, 0.01, 0.005, 0.0049999, 0.345, 0.2345, 1.5, -0.25, float("nan")]
    xs += [k / 1000 for k in range(1001)] + [k / 20000 for k in range(200)]
    xs += [rng.random() ** rng.choice([1, 2, 5, 12, 30]) for _ in range(3000)]
    return xs


_JOB = """function run(job) { const T = window.LLMText, out = {};
  const xs = job.xs.map(Number);
  out.pct = job.digits.map((d) => xs.map((x) => T.pct(x, d)));
  out.floor = xs.map((x) => T.pct(x, 1, true));
  out.floor0 = xs.map((x) => T.pct(x, 0, true));
  out.thousands = job.ns.map(Number).map(T.thousands);
  out.count = job.units.map((u) => job.counts.map((n) => T.count(n, u)));
  out.t = job.sentences.map(([k, vars]) => T.t(k, vars));
  out.parts = T.parts('guess.rated', { guess: 'g', prob: { b: '1%' }, rank: { b: 'rank 2' } });
  out.errors = [() => T.t('no.such'), () => T.t('guess.rank', {})].map((f) => { try { f(); return null; } catch (e) { return e.message; } });
  return out; }"""


def _js(job: dict, locale: str = "en") -> dict:
    """_JOB run on `job` with `locale`'s catalogue and assets/text.js loaded: by node, else in headless Chromium."""
    return run_js([catalogue_js(locale), (ROOT / "assets" / "text.js").read_text(encoding="utf-8")], _JOB, job)


LANGUAGES = sorted(p.stem for p in text.LOCALES.glob("*.json"))


@pytest.fixture(scope="module", params=LANGUAGES)
def both(request):
    return _both(request.param)


@pytest.fixture(scope="module")
def both_en():
    return _both("en")


def _both(loc: str):
    xs = _numbers()
    digits = [None, 0, 1, 2, 3]
    ns = [0, 1, 999, 1000, 1234, -1234, 1234567, 10**15, 2.5, 3.5, -2.5, 1234567.5, 0.49, 12.51]
    units = sorted({k.split(".")[1] for k in catalogue() if k.startswith("unit.")})
    counts = [0, 1, 2, 1000, 49152]
    sentences = [(k, {name: f"<{name}>" for name in _placeholders(s)}) for k, s in catalogue(loc).items()]
    job = {"xs": [repr(x) for x in xs], "digits": digits, "ns": [repr(n) for n in ns], "units": units, "counts": counts, "sentences": sentences}
    py = {"pct": [[pct(x, d, locale=loc) for x in xs] for d in digits], "floor": [pct(x, 1, True, loc) for x in xs],
          "floor0": [pct(x, 0, True, loc) for x in xs], "thousands": [thousands(n, loc) for n in ns],
          "count": [[count(n, u, loc) for n in counts] for u in units], "t": [t(k, loc, **v) for k, v in sentences]}
    return py, _js(job, loc), xs, loc


@pytest.mark.parametrize("what", ["pct", "floor", "floor0", "thousands", "count", "t"])
def test_python_and_the_browser_write_the_same(both, what):
    py, js, xs, _ = both
    if what in ("pct", "floor", "floor0"):
        rows = py[what] if what == "pct" else [py[what]]
        jrows = js[what] if what == "pct" else [js[what]]
        for a, b in zip(rows, jrows):
            diff = [(x, u, v) for x, u, v in zip(xs, a, b) if u != v]
            assert not diff, diff[:5]
    else:
        assert py[what] == js[what]


def test_the_formatters_keep_the_pages_words(both_en):
    assert [pct(p, None) for p in (0.873, 0.023, 0.00123, 4e-6, 0.0, 1e-9)] == ["87%", "2.3%", "0.12%", "0.0004%", "0%", "<0.0001%"]
    assert [pct(f, 1, floor=True) for f in (0.1234, 0.0004, 0.0, math.nan)] == ["12.3%", "<0.1%", "0.0%", "–"]
    assert [pct(0.125, 0), pct(0.0125, 1), pct(0.345, 2)] == [f"{0.125:.0%}", f"{0.0125:.1%}", f"{0.345:.2%}"]
    assert [thousands(n) for n in (0, 999, 1000, -1234567, 2.5, 3.5)] == ["0", "999", "1,000", "-1,234,567", "2", "4"]
    js = both_en[1]
    assert js["parts"] == ["Your guess ", "g", ": the model rated it ", {"b": "1%"}, ", ", {"b": "rank 2"}, " (1 = most likely)."]
    assert "no.such" in js["errors"][0] and "{rank}" in js["errors"][1]
