"""The model's text carries its language (viz/text_lang.py, WCAG 3.1.2): a screen reader reads a French reply with a French
voice on an English page. Told from the words of each of the page's six languages, or not told at all."""
from __future__ import annotations

import pytest

from pipeline import gallery
from viz.output import output_html
from viz.text_lang import language

SENTENCES = {
    "en": "The sky is blue because of the way sunlight is scattered by the air.",
    "es": "El cielo es azul porque la luz del sol se dispersa en la atmósfera.",
    "fr": "Le ciel est bleu parce que la lumière du soleil est diffusée dans l'air.",
    "de": "Der Himmel ist blau, weil das Licht in der Atmosphäre gestreut wird.",
    "pt-BR": "O céu é azul porque a luz do sol é espalhada na atmosfera.",
    "zh-CN": "天空是蓝色的，因为阳光被大气散射。",
}


@pytest.mark.parametrize("lang", list(SENTENCES))
def test_a_sentence_in_each_of_the_six_languages_is_told(lang):
    assert language(SENTENCES[lang]) == lang


@pytest.mark.parametrize("text", ["Paris", " Paris.", "123 456", "", "la de que", "OK 🌪 🍡"])
def test_a_text_that_does_not_say_is_not_told(text):
    assert language(text) is None


def test_the_text_on_screen_carries_its_language():
    french, chat = gallery.load("french"), gallery.load("chat")
    assert "<div class='gen-text' lang='fr'" in output_html(french.steps)
    assert "<div class='gen-text' lang='en'" in output_html(chat.steps)
    assert "<div class='gen-text' data-steps" in output_html(gallery.load("loop").steps)  # (not told: the page's)
