"""The page's languages (locales/*.json, viz/text.py): every language has every English sentence with the same
placeholders, none left in English, and its own way of writing numbers; a language is added by adding one file
(these tests read whatever files locales/ holds)."""
from __future__ import annotations

import json
import re

import pytest

from viz import text
from viz.text import DEFAULT, PLACEHOLDER, catalogue, count, number_marks, pct, t, thousands

LANGUAGES = sorted(p.stem for p in text.LOCALES.glob("*.json") if p.stem != DEFAULT)
WORD = re.compile(r"[^\W\d_]{4,}")  # a word of four letters or more
# the numbers' own marks may read the same in every language
SAME = re.compile(r"number\..*")


def english_left(sentence: str) -> bool:
    """A sentence of two words or more (of four letters or more) left as the English wrote it. One word may be the
    language's own too ("Attention", "Position", "Mode", "Tokens", "Chat")."""
    return len(WORD.findall(PLACEHOLDER.sub("", sentence))) >= 2


def own(locale: str) -> dict[str, str]:
    """The file's own sentences, flattened (no English fallback)."""
    return text._flat(json.loads((text.LOCALES / f"{locale}.json").read_text(encoding="utf-8")))


def test_the_six_languages_are_there():
    assert {"es", "fr", "de", "pt-BR", "zh-CN"} <= set(LANGUAGES)


@pytest.mark.parametrize("locale", LANGUAGES)
def test_every_sentence_is_translated_with_the_same_placeholders(locale):
    en, mine = own(DEFAULT), own(locale)
    assert set(mine) == set(en), f"missing: {sorted(set(en) - set(mine))[:8]}; not in English: {sorted(set(mine) - set(en))[:8]}"
    for key, sentence in en.items():
        assert set(PLACEHOLDER.findall(mine[key])) == set(PLACEHOLDER.findall(sentence)), f"{locale}: {key}'s placeholders"
        assert mine[key] == mine[key].strip() and mine[key], f"{locale}: {key} is empty or padded"
        assert not re.search(r"<[a-zA-Z/]", mine[key]), f"{locale}: {key} holds markup"


@pytest.mark.parametrize("locale", LANGUAGES)
def test_no_sentence_is_left_in_english(locale):
    en, mine = own(DEFAULT), own(locale)
    left = [k for k, s in en.items() if mine.get(k) == s and english_left(s) and not SAME.fullmatch(k)]
    assert not left, f"{locale}: still English: {left[:10]}"


@pytest.mark.parametrize("locale", LANGUAGES)
def test_each_language_writes_numbers_its_own_way(locale):
    group, decimal, percent, one = number_marks(locale)
    assert decimal in ".," and group != decimal and "{x}" in percent and 1 in one
    assert thousands(1234567, locale) == f"1{group}234{group}567" and thousands(999, locale) == "999"
    assert pct(0.1234, 1, locale=locale) == percent.replace("{x}", f"12{decimal}3")
    assert pct(0.0004, 1, True, locale) == percent.replace("{x}", f"<0{decimal}1") and pct(float("nan"), locale=locale) == "–"
    assert count(2048, "token", locale) == t("unit.token.other", locale, n=f"2{group}048")


def test_the_languages_marks_are_the_ones_their_readers_expect():
    assert [pct(0.1234, 1, locale=x) for x in ("en", "fr", "de", "es", "pt-BR", "zh-CN")] == \
        ["12.3%", "12,3\u202f%", "12,3\u00a0%", "12,3\u00a0%", "12,3%", "12.3%"]
    assert [thousands(12345, x) for x in ("en", "fr", "de", "es", "pt-BR", "zh-CN")] == \
        ["12,345", "12\u202f345", "12.345", "12.345", "12.345", "12,345"]
    # French takes the singular for 0 and 1 ("0 jeton"); English, German, Spanish and Brazilian Portuguese for 1 only
    assert [count(0, "token", x) == t("unit.token.one", x, n="0") for x in ("fr", "pt-BR", "en", "de", "es")] == \
        [True, False, False, False, False]


def test_a_language_is_one_file(tmp_path, monkeypatch):
    """A new file in locales/ is a new language: its sentences, its numbers; what it lacks falls back to English."""
    en = json.loads((text.LOCALES / "en.json").read_text(encoding="utf-8"))
    xx = {"number": {"format": "1'234.5", "percent": "{x} pc", "one_for": "1"}, "unit": {"token": {"one": "{n} tok", "other": "{n} toks"}}}
    (tmp_path / "en.json").write_text(json.dumps(en), encoding="utf-8")
    (tmp_path / "xx.json").write_text(json.dumps(xx), encoding="utf-8")
    monkeypatch.setattr(text, "LOCALES", tmp_path)
    text.catalogue.cache_clear(), text._marks.cache_clear()
    try:
        assert count(12345, "token", "xx") == "12'345 toks" and pct(0.5, 0, locale="xx") == "50 pc"
        assert t("button.generate", "xx") == en["button"]["generate"]
    finally:
        text.catalogue.cache_clear(), text._marks.cache_clear()


def test_every_language_is_whole_in_the_page_script():
    for locale in LANGUAGES:
        assert json.loads(text.catalogue_js(locale)[len("window.LLMTextCatalogue = "):-1]) == dict(catalogue(locale))


def test_the_offline_page_speaks_the_language_asked(tmp_path):
    """`python -m viz html TRACE --lang fr`: <html lang="fr">, the French catalogue, French numbers in the figures,
    and not one English sentence of the interface anywhere in the page (Plotly.js's own aside)."""
    import os
    import subprocess
    import sys

    from pipeline.trace.files import dumps
    from tests.synthetic import make_trace

    root = text.LOCALES.parent
    (tmp_path / "t.json").write_text(dumps(make_trace(n_steps=4, prompt_len=5)), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "viz", "html", str(tmp_path / "t.json"), "--out", str(tmp_path / "t.html"), "--lang", "fr"],
                       capture_output=True, text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert '<html lang="fr">' in page and json.dumps(t("caption.output", "fr"), ensure_ascii=False)[1:30] in page
    from viz.viewer.page import plotly_js

    ours = page.replace(plotly_js()[0], "")
    assert '"separators":",\u202f"' in ours  # the figures' axes: 0,5 and 1 234
    en, fr = own(DEFAULT), own("fr")
    left = {run.strip() for k, s in en.items() if fr[k] != s for run in PLACEHOLDER.split(s)[::2] if len(run.strip()) >= 24}
    assert not [run for run in left if run in ours], "English left on the French page"
    r = subprocess.run([sys.executable, "-m", "viz", "html", str(tmp_path / "t.json"), "--out", str(tmp_path / "u.html"), "--lang", "xx"],
                       capture_output=True, text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 2 and "--lang" in r.stderr and "Traceback" not in r.stderr
