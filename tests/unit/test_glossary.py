"""viz/glossary.py: the page's glossary words, marked in captions and written out in docs/glossary.md."""
import html
import re
from pathlib import Path

from viz.captions import captions
from viz.glossary import GLOSSARY, gloss, glossary_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_use_of_each_word_is_marked_with_its_meaning_once():
    out = gloss("Temperature divides each logit; a logit is a score. Top-p and top-k keep tokens.")
    assert re.findall(r">([^<]+)</abbr>", out) == ["Temperature", "logit", "Top-p", "top-k", "tokens"]  # each once
    assert out.count(">logit</abbr>") == 1 and "a logit is" in out
    assert 'title="Keeps the fewest likeliest tokens' in out
    assert gloss("nothing here") == "nothing here"


def test_plurals_are_marked_and_words_inside_other_words_are_not():
    out = gloss("Two tokens from stepping stones")
    assert ">tokens</abbr>" in out and "stepping" in out and ">step" not in out


def test_docs_glossary_says_what_the_page_says():
    doc = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert glossary_markdown() in doc, "docs/glossary.md is out of date: write glossary_markdown() into it"
    for key in GLOSSARY:
        assert f"**{key}**" in doc


def test_the_first_screens_captions_gloss_their_words():
    for key in ("distribution_app", "output"):
        assert '<abbr class="term"' in gloss(captions()[key]), key


def test_a_caption_is_marked_in_the_language_it_is_written_in():
    from viz.text import speaking, t

    with speaking("fr"):
        out = gloss("Le modèle lit le contexte ; un jeton est tiré au hasard, puis les jetons suivants.")
    assert re.findall(r">([^<]+)</abbr>", out) == ["contexte", "jeton", "tiré"] and "les jetons suivants" in out  # each once
    assert f'title="{html.escape(t("glossary.meaning.token", "fr"))}"' in out and "A piece of text" not in out
    with speaking("zh-CN"):
        out = gloss("模型从词表中抽取一个词元，再抽取一个词元。")
    assert re.findall(r">([^<]+)</abbr>", out) == ["词表", "词元"]  # no spaces in Chinese: no word edges to check
    with speaking("de"):
        assert ">Tokens</abbr>" in gloss("Zwei Tokens, kein Tokenizer")
