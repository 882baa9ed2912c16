"""Token chips, tokenizer comparison and the generated text: escaping, counts, boundaries."""
import dataclasses
import html
import re

from tests.synthetic import make_trace
from viz.output import STOPS, output_html, stop_words
from viz.tokens import compare_tokenizers_html, tokens_html

EVIL = ("<script>", "<img src=x onerror=alert(1)>")


def _no_raw_markup(s: str):
    for bad in EVIL + ("<script", "onerror=alert(1)>"):
        assert bad not in s


def test_tokens_html_escapes_every_piece_and_shows_whitespace():
    t = make_trace(prompt_len=12)  # the prompt holds '<script>', ' hello', '\n', '😀' and more
    assert "<script>" in t.prompt.pieces and "\n" in t.prompt.pieces
    out = tokens_html(t.prompt, t.steps, upto=None, highlight=None)
    _no_raw_markup(out)
    assert "&lt;script&gt;" in out
    assert "·hello" in out and "↵" in out and "😀" in out


def test_tokens_html_counts_chips_and_highlight():
    t = make_trace(n_steps=4)
    out = tokens_html(t.prompt, t.steps, upto=2, highlight=1)
    assert out.count("class='tok'") == len(t.prompt.token_ids)
    # steps 0..2 shown; step 3 there too, hidden, for the page's step viewer to show when the slider reaches it
    assert out.count("class='tok gen") == 4 and re.findall(r"data-step='(\d+)' hidden", out) == ["3"]
    hl = re.findall(r"class='tok gen hl'[^>]*title=\"([^\"]*)\"", out)
    assert len(hl) == 1 and "generated at step 1 " in html.unescape(hl[0])
    # every chip shows its id
    for tid in list(t.prompt.token_ids) + [s.token_id for s in t.steps[:3]]:
        assert f">{tid}</span>" in out
    p_chars, T0 = len(t.prompt.rendered), len(t.prompt.token_ids)
    g_chars = sum(len(s.text) for s in t.steps[:3])
    assert f"{p_chars:,} characters → {T0:,} tokens ({p_chars / T0:.2f} characters per token)" in out
    assert f"{g_chars:,} characters → 3 tokens ({g_chars / 3:.2f} characters per token)" in out


def test_tokens_html_without_steps():
    t = make_trace()
    out = tokens_html(t.prompt, (), upto=None, highlight=None)
    assert "class='tok gen" not in out and "0 tokens (–" in out


def test_compare_tokenizers_rows_and_counts():
    text = "<script>x</script> hi"
    out = compare_tokenizers_html(text, [("A <b>", ["<script>", "x", "</script>", " hi"], [1, 2, 3, 4]), ("B", [text], [9])])
    _no_raw_markup(out)
    assert "A &lt;b&gt;</b>: 4 tokens" in out and "B</b>: 1 token (" in out
    assert out.count("class='cmp-row'") == 2


def _steps_with_text(texts):
    t = make_trace(n_steps=len(texts))
    return tuple(dataclasses.replace(s, text=x) for s, x in zip(t.steps, texts))


def test_output_html_escapes_and_keeps_newlines():
    steps = _steps_with_text(["Hi", " <script>alert(1)</script>", "\n", "é😀"])
    plain = output_html(steps, upto=None, stop_reason=None)
    _no_raw_markup(plain)
    text = re.sub(r"<span class='step' [^>]*>|</span>", "", plain)  # each step's text in its own span
    assert html.escape("Hi <script>alert(1)</script>\né😀") in text and plain.count("class='step'") == 4
    assert "white-space:pre-wrap" in plain and "stop-reason" not in plain


def test_output_html_boundaries_alternate_and_upto():
    steps = _steps_with_text(["a", "b", "", "c"])  # an empty step (held-back bytes / eos) gets no span
    out = output_html(steps, upto=None, stop_reason=None)
    # the boundaries' two shades by the step's parity (assets/colour_by.js paints them; colour modes: test_colour_by.py)
    spans = re.findall(r"<span class='step' data-step='(\d+)'[^>]* data-cb='([ab])'[^>]*title=\"([^\"]*)\">([^<]*)</span>", out)
    assert [s[3] for s in spans] == ["a", "b", "c"] and [s[0] for s in spans] == ["0", "1", "3"]
    spans = [s[1:] for s in spans]
    assert spans[0][0] != spans[1][0] and spans[2][0] == spans[1][0]  # shade by step parity: steps 0, 1, 3
    assert html.unescape(spans[2][1]).startswith(f"step 3 · id {steps[3].token_id}")
    assert f"p={steps[1].chosen_final_prob:.3f}" in html.unescape(spans[1][1])
    short = output_html(steps, upto=1, stop_reason="eos")
    # the whole trace's text, the steps after the one on screen hidden (the page's viewer shows any step of it)
    assert short.count("class='step") == 3 and "data-steps='4'" in short and "data-steps='4'" in out
    assert re.findall(r"data-step='(\d+)' hidden", short) == ["3"] and "class='stop-reason' hidden" in short
    assert "hidden" not in output_html(steps, upto=3, stop_reason="eos")
    # the step on screen is marked in the text drawn at that step (Guess first hides it before the page's script runs)
    assert re.findall(r"class='step at-step' data-step='(\d+)'", short) == ["1"] and "at-step" not in out


def test_output_html_stop_reason_in_words():
    steps = _steps_with_text(["a"])
    for reason in STOPS:
        assert stop_words(reason) in output_html(steps, upto=None, stop_reason=reason)
    assert "end-of-sequence" in stop_words("eos") and "maximum number of new tokens" in stop_words("max_new_tokens")
    assert "context limit" in stop_words("context_limit") and stop_words("odd") == "stopped: odd"


def test_a_chip_carries_its_pastel_only_and_the_page_styles_the_rest():
    """A chip's look is assets/style.css's: its inline style is its background alone (the look inline was ~270 of a
    chip's ~460 characters, sent again for every chip with every streamed token), and the page's stylesheet draws it
    in both panels that show chips, with a dark rule of its own for each (one selector a rule: Gradio scopes a list's
    later selectors wrongly)."""
    from pathlib import Path

    from viz.style import PASTELS

    t = make_trace(n_steps=6)
    out = tokens_html(t.prompt, t.steps, upto=5, highlight=5) + compare_tokenizers_html("a b", [("x", ["a", " b"], [1, 2])])
    styles = re.findall(r"<span class='tok[^']*'[^>]* style=\"([^\"]*)\"", out)
    assert len(styles) == len(t.prompt.token_ids) + 6 + 2
    assert all(re.fullmatch("background:#[0-9a-f]{6}", s) and s[len("background:"):] in PASTELS for s in styles), set(styles)
    assert "font-family" not in out and out.count("<span class='tok-id'>") == len(styles)
    css = (Path(__file__).resolve().parents[2] / "assets" / "style.css").read_text(encoding="utf-8")
    rule = re.search(r"#tokens-html \.tok, #tokenizer-compare \.tok \{([^}]*)\}", css)
    assert rule and "display: inline-flex" in rule.group(1) and "font-family: ui-monospace" in rule.group(1)
    for panel in ("#tokens-html", "#tokenizer-compare"):
        for sel in (".tok", ".tok.gen", ".tok-id"):
            assert re.search(rf"^\.dark {panel} {re.escape(sel)} \{{", css, re.M), (panel, sel)
