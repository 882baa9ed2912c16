"""ui/messages.py: a pipeline error (or loading line) the page shows is said in the visitor's language, from the key and
values it names (pipeline/errors.py); any other error as its own message says it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.errors import PipelineError, Said, SettingsError, TraceFormatError
from ui import messages
from viz.text import catalogue, languages, speaking, t

ROOT = Path(__file__).resolve().parents[2]


def _named() -> list[tuple[str, str, set[str]]]:
    """(where, key, the values given) of every error (XxxError(..., key=...)) and line (Said(text, key, ...)) in pipeline/
    that names its sentence."""
    out = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):  # (its subpackages' too)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            key = kw.pop("key", None) if name.endswith("Error") else (node.args[1] if name == "Said" and len(node.args) > 1 else None)
            if key is None:
                continue
            keys = [key.value] if isinstance(key, ast.Constant) else [key.body.value, key.orelse.value]  # (a conditional's both)
            out += [(f"{path.relative_to(ROOT)}:{node.lineno}", k, set(kw)) for k in keys]
    return out


NAMED = _named()


def test_the_scan_finds_the_pipelines_keyed_errors():
    where = {w.split(":")[0] for w, _, _ in NAMED}
    assert {"pipeline/generate.py", "pipeline/sampling/stages.py", "pipeline/loading.py", "pipeline/trace/files.py", "pipeline/guess.py"} <= where
    assert len(NAMED) > 60


@pytest.mark.parametrize("lang", languages())
def test_every_sentence_a_pipeline_error_names_is_said_in_every_language(lang):
    for where, key, given in NAMED:
        assert key in catalogue() and key in messages.SAY, f"{where}: {key} has no sentence (locales/en.json, ui/messages.py's SAY)"
        with speaking(lang):
            said = messages.SAY[key]({k: 1 for k in given})  # (KeyError: a value the sentence needs is not given)
        assert said and "{" not in said, f"{where}: {key}"


def test_a_keyed_error_is_said_in_the_visitors_language_and_the_cli_keeps_its_english():
    e = SettingsError("the seed must be a whole number, 0 or more, not 2.5", key="error.seed", value=2.5)
    assert str(e) == "the seed must be a whole number, 0 or more, not 2.5"  # (the command line's)
    assert messages.sentence(e) == "The seed must be a whole number, 0 or more, not 2.5."
    with speaking("fr"):
        assert messages.sentence(e) == "La graine doit être un nombre entier, 0 ou plus, pas 2,5."
    with speaking("zh-CN"):
        assert messages.sentence(e).endswith("2.5。")
    with speaking("de"):
        assert messages.said(TraceFormatError("x", key="error.trace_nested")).startswith("das JSON der Datei")


def test_an_error_without_a_key_or_its_values_is_said_as_written():
    assert messages.sentence(ValueError("no such step")) == "No such step."
    assert messages.sentence(PipelineError("done!")) == "Done!"
    with speaking("fr"):  # (a value missing: the English, never half a sentence)
        assert messages.said(SettingsError("the seed is bad", key="error.seed")) == "the seed is bad"
    assert messages.said("a plain line") == "a plain line"


def test_a_loading_line_is_said_in_the_visitors_language():
    line = Said("  done in 12 s", "model.converted", seconds=12)
    assert line.strip() == "done in 12 s" and isinstance(line, str)
    with speaking("de"):
        assert messages.said(line) == t("model.converted", seconds="12") == "fertig in 12 s"


def test_numbers_are_written_the_languages_way():
    e = TraceFormatError("too big", key="error.trace_too_big", size=150 * 2**20, limit=100 * 2**20)
    assert messages.said(e).startswith("this file is 150.0 MB, more than the 100.0 MB")
    with speaking("fr"):
        assert "150,0 MB" in messages.said(e)
        assert messages.said(SettingsError("x", key="error.token_id", id=50000, last=49151)).endswith("(0 à 49\u202f151)")
