"""Guess first on the offline page (assets/viewer_guess.js, viz/viewer/guess.py), in Chromium: a link's ?guess=1
hides the step's answer at open; a guess is rated with the trace's own numbers as pipeline.guess rates it without a
tokenizer; a hostile guess is text; another step hides again; Play waits at each step not guessed; the box off
shows everything. No request, no dialog, no console error.

The synthetic traces here are short: the attention heatmap's frame holds more positions than their contexts, and
those positions to come are labelled "k ?" (no token of theirs named), so the heatmap stays shown while guessing."""
import numpy as np
import pytest

from ui.messages import sentence

from pipeline import gallery
from pipeline.errors import GuessError
from pipeline.guess import _best_candidate, clean, written_ahead
from tests.synthetic import make_trace
from viz.fmt import pct
from viz.viewer.page import write_html

from .test_viewer_page import DRAG, _the_pages

pytestmark = pytest.mark.browser
HOSTILE = "<img src=x onerror=alert(1)>"
STATE = """() => { const vis = (el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const s = LLMViewer.page.state.step, spans = [...document.querySelectorAll('#output .step')];
  const plot = (id) => vis(document.querySelector('#' + id + ' .plot'));
  return { step: s, hidden: document.documentElement.classList.contains('guess-hidden'),
    dist: plot('dist-plot'), emb: plot('emb-plot'), attn: plot('attn-plot'), overview: plot('attn-overview'), kv: plot('kv-plot'),
    token: vis(spans.find((e) => Number(e.dataset.step) === s)), later: spans.some((e) => Number(e.dataset.step) > s && vis(e)),
    earlier: spans.filter((e) => Number(e.dataset.step) < s).every(vis),
    label: vis(document.querySelector('#step-label b:nth-of-type(2)')), box: vis(document.getElementById('guess-box')),
    playing: LLMViewer.page.playing() }; }"""
RESULT = """() => { const r = document.getElementById('guess-result');
  return { step: r.dataset.step, rank: r.dataset.rank, prob: r.dataset.prob, chosen: r.dataset.chosen, text: r.textContent,
           elements: r.querySelectorAll('*:not(div):not(p):not(b)').length }; }"""
# every animation frame: the answer of a step not guessed is never on screen (the text's step, the plots' steps)
WATCH = """() => { window.__leaks = []; const seen = LLMViewer.guess.seen;
  const tick = () => { if (document.documentElement.classList.contains('guess-hidden')) { requestAnimationFrame(tick); return; }
    const cur = document.querySelector('#output .step.current'), s = cur ? Number(cur.dataset.step) : null;
    const metas = ['dist-plot', 'emb-plot'].map((id) => document.querySelector('#' + id + ' .js-plotly-plot')?.layout?.meta?.step);
    if ((s !== null && !seen.has(s)) || metas.some((m) => m !== undefined && !seen.has(m))) window.__leaks.push([s, metas]);
    requestAnimationFrame(tick); };
  requestAnimationFrame(tick); }"""


@pytest.fixture(scope="module")
def trace():
    return make_trace(n_steps=8, prompt_len=8, vocab=400, top_n=40, temperature=0.8, top_p=0.9, seed=5)


@pytest.fixture(scope="module")
def chat():
    return gallery.load("chat")


@pytest.fixture(scope="module")
def html_file(trace, tmp_path_factory):
    path = tmp_path_factory.mktemp("guess") / "trace.html"
    write_html(trace, path)
    return path


@pytest.fixture(scope="module")
def chat_file(chat, tmp_path_factory):
    path = tmp_path_factory.mktemp("guess") / "chat.html"
    write_html(chat, path)
    return path


def open_guess(browser, path, query="?guess=1"):
    """The file (with its link's query) in a fresh page: every request recorded, any beyond the file refused,
    every dialog recorded and dismissed."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    url = path.as_uri() + query
    page.errors, page.requests, page.dialogs = [], [], []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(f"{m.type}: {m.text}") if _the_pages(m) else None)
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
    page.goto(url)
    page.wait_for_function("() => window.LLMViewer && LLMViewer.page")
    page.evaluate("() => LLMViewer.page.settled()")
    page.url_opened = url  # type: ignore[attr-defined]
    return page


def show(page, s):
    page.evaluate("(s) => LLMViewer.page.show(s)", s)
    return page.evaluate(STATE)


def guess(page, text):
    page.fill("#guess-input", text)
    page.press("#guess-input", "Enter")
    return page.evaluate(RESULT)


def clean_page(page):
    assert page.requests == [page.url_opened] and not page.errors and not page.dialogs


def revealed(st) -> bool:
    """The step's answer on screen; while guessing, the later steps' text still hidden."""
    guessing = st["box"]
    return (not st["hidden"] and st["dist"] and st["emb"] and st["token"] and st["label"] and st["earlier"]
            and st["later"] != guessing and st["attn"])


# the attention heatmap's labels past the step's context: the page shows "k ?", never a token still to come
ATTN_LABELS = "() => [...new Set(document.querySelector('#attn-plot .js-plotly-plot').data[0].x.map((x) => x.replace(/\u200b/g, '')))]"


def test_a_guess_link_hides_the_answer_at_open(browser, html_file, trace):
    page = open_guess(browser, html_file)
    st = page.evaluate(STATE)
    assert st["step"] == 0 and st["hidden"] and st["box"]
    assert not st["dist"] and not st["emb"] and not st["token"] and not st["later"] and not st["label"]
    T = trace.steps[0].position + 1  # the context at step 0; the heatmap's frame is wider (these traces are short)
    labels = page.evaluate(ATTN_LABELS)
    assert st["attn"] and len(labels) > T and labels[T:] == [f"{k} ?" for k in range(T, len(labels))]  # no token to come named
    assert st["overview"] and st["kv"]  # the context only: they stay
    assert page.get_attribute("#guess-input", "maxlength") == "40"
    assert page.evaluate("() => document.querySelector('#guess-toggle input[type=checkbox]').checked")
    clean_page(page)


def test_without_the_link_nothing_is_hidden(browser, html_file):
    page = open_guess(browser, html_file, query="")
    st = page.evaluate(STATE)
    assert revealed(st) and not st["box"]
    clean_page(page)


def _plain_candidate(step):
    """A kept candidate (k, piece) that a guess of its piece alone rates as itself (pipeline.guess)."""
    for k, piece in enumerate(str(x) for x in step.top_pieces):
        if piece.strip() and _best_candidate(step, clean(piece)).rank == k + 1 and k > 0:
            return k, piece
    raise AssertionError("no such candidate")


@pytest.mark.parametrize("s", [0, 3, 6])
def test_a_guess_of_a_kept_candidate_shows_the_traces_numbers(browser, html_file, trace, s):
    page = open_guess(browser, html_file)
    step = trace.steps[s]
    k, piece = _plain_candidate(step)
    show(page, s)
    got = guess(page, piece)
    assert got["step"] == str(s) and got["rank"] == str(k + 1)
    assert float(got["prob"]) == pytest.approx(float(step.top_probs[k]), abs=1e-6)
    assert got["chosen"] == ("1" if int(step.top_ids[k]) == step.token_id else "0")
    assert pct(step.top_probs[k]) in got["text"] and pct(step.top_final_probs[k]) in got["text"]
    assert f"rank {k + 1} (1 = most likely)" in got["text"]
    assert revealed(page.evaluate(STATE))
    clean_page(page)


def test_a_guess_matching_nothing_gets_the_bound(browser, html_file, trace):
    page = open_guess(browser, html_file)
    step = trace.steps[2]
    show(page, 2)
    got = guess(page, "☃zzz")
    assert got["step"] == "2" and got["rank"] == "" and got["prob"] == "" and got["chosen"] == "0"
    assert (f"is not among the model's {len(step.top_ids)} most likely next tokens: the model gave it less than "
            f"{pct(step.top_probs[-1])}.") in got["text"]
    assert f"({pct(step.chosen_prob)})" in got["text"]
    clean_page(page)


def test_a_guess_that_merely_starts_with_a_kept_candidate_gets_the_bound(browser, tmp_path):
    """The flat lesson's step 2 keeps "·b" (0.11%) and not "·banana": "banana" is rated by the bound, never by "·b"."""
    flat = gallery.load("flat")
    step = flat.steps[2]
    pieces = [str(x) for x in step.top_pieces]
    assert " b" in pieces and " banana" not in pieces
    path = tmp_path / "flat.html"
    write_html(flat, path)
    page = open_guess(browser, path)
    show(page, 2)
    got = guess(page, "banana")
    assert got["prob"] == "" and got["rank"] == ""
    assert f"the model gave it less than {pct(step.top_probs[-1])}." in got["text"] and pct(step.top_probs[pieces.index(" b")]) not in got["text"]
    got = guess(page, "b")  # a candidate itself: its numbers (of "b" and "·b", the likelier)
    want = max(float(step.top_probs[pieces.index(v)]) for v in ("b", " b") if v in pieces)
    assert float(got["prob"]) == pytest.approx(want, abs=1e-7) and pct(want) in got["text"]
    clean_page(page)


def test_a_hostile_guess_is_shown_as_text(browser, html_file):
    page = open_guess(browser, html_file)
    for s in (0, 1):  # (the synthetic vocabulary has that very piece: matched or not, it is text)
        show(page, s)
        got = guess(page, HOSTILE)
        assert f"“{HOSTILE}”" in got["text"] or f"“ {HOSTILE}”" in got["text"]
        assert got["elements"] == 0 and page.evaluate("() => document.querySelectorAll('img').length") == 0
    page.wait_for_timeout(200)
    clean_page(page)


def test_refused_guesses_say_why(browser, html_file):
    page = open_guess(browser, html_file)
    got = guess(page, "   ")
    assert got["text"] == "Type a guess first: a word, or a piece of one." and got["step"] == ""
    page.evaluate("() => { document.getElementById('guess-input').value = 'x'.repeat(41); }")  # (past the input's maxlength)
    page.click("#guess-submit")
    assert page.evaluate(RESULT)["text"] == "A guess is at most 40 characters."
    assert page.evaluate(STATE)["hidden"]
    clean_page(page)


def test_another_step_hides_again_until_guessed_and_a_guessed_one_stays_shown(browser, html_file):
    page = open_guess(browser, html_file)
    page.evaluate(WATCH)
    guess(page, "x")
    page.evaluate("() => LLMViewer.page.settled()")
    assert revealed(page.evaluate(STATE))
    page.evaluate(DRAG, ["step-slider", 1])  # as a person drags
    page.evaluate("() => LLMViewer.page.settled()")
    st = page.evaluate(STATE)
    assert st["step"] == 1 and st["hidden"] and not st["dist"] and not st["token"] and st["earlier"]
    assert page.evaluate(RESULT)["step"] == ""  # step 0's rating is not this step's
    for s in (3, 0, 5, 0):  # a fast drag, over steps guessed and not
        page.evaluate(DRAG, ["step-slider", s])
    page.evaluate("() => LLMViewer.page.settled()")
    assert revealed(page.evaluate(STATE)) and page.evaluate(RESULT)["step"] == "0"
    assert page.evaluate("() => window.__leaks") == []
    clean_page(page)


def test_play_stops_at_each_step_not_yet_guessed(browser, html_file):
    page = open_guess(browser, html_file)
    page.evaluate(WATCH)
    guess(page, "a")
    show(page, 1)
    guess(page, "b")
    show(page, 0)
    page.click("#play")
    page.wait_for_function("() => !LLMViewer.page.playing()", timeout=30_000)
    page.evaluate("() => LLMViewer.page.settled()")
    st = page.evaluate(STATE)
    assert st["step"] == 2 and st["hidden"] and not st["dist"] and not st["token"]
    assert page.inner_text("#play") == "▶ Play"
    guess(page, "c")
    assert "in the model's top 5 at" in page.inner_text("#guess-score") and " of 3 steps;" in page.inner_text("#guess-score")
    page.click("#play")  # on again: one step, and it waits there
    page.wait_for_function("() => !LLMViewer.page.playing()", timeout=30_000)
    assert page.evaluate(STATE)["step"] == 3
    assert page.evaluate("() => window.__leaks") == []
    clean_page(page)


def test_the_box_off_shows_everything_and_the_sliders_still_reshape(browser, html_file):
    page = open_guess(browser, html_file)
    show(page, 4)
    page.click("#guess-toggle input[type=checkbox]")
    page.evaluate("() => LLMViewer.page.settled()")
    st = page.evaluate(STATE)
    assert revealed(st) and st["later"] and st["attn"] and not st["box"]
    assert not page.evaluate("() => document.documentElement.classList.contains('guessing')")
    page.evaluate(DRAG, ["temperature", 1.5])
    page.evaluate("() => LLMViewer.page.settled()")
    assert page.evaluate("() => LLMViewer.page.state.t") == 1.5 and revealed(page.evaluate(STATE))
    page.click("#guess-toggle input[type=checkbox]")  # on again: the step on screen was not guessed
    assert page.evaluate(STATE)["hidden"]
    clean_page(page)


def test_an_attention_heatmap_of_a_long_context_stays_shown(browser, tmp_path):
    """A context longer than the heatmap's frame (viz.attention.MAX_TOKENS): a sliding window of the context."""
    path = tmp_path / "long.html"
    write_html(make_trace(n_steps=4, prompt_len=140, vocab=400, top_n=30, seed=7), path)
    page = open_guess(browser, path)
    st = show(page, 2)
    assert st["hidden"] and not st["dist"] and not st["emb"] and not st["token"]
    assert st["attn"] and st["overview"] and st["kv"]
    clean_page(page)


def _guesses(step, ahead=()) -> list[str]:
    """Guesses that exercise every rule: each piece, with and without its space, longer, cut, case, odd characters;
    what the text goes on with over several tokens from the step (`ahead`), typed whole, cut and longer."""
    out = ["a", "A", " ", "\r\nThe\r\n", "\n", "é", "😀x", "1", "x" * 40, "x" * 41, "\t", "\u3000", "\x1c", "☃", HOSTILE, "🌪", " 🌪",
           " a", "  a", "8849", "日本"]
    for piece in (str(x) for x in step.top_pieces[:30]):
        out += [piece, piece.lstrip(), piece + "s and more", piece[:2], piece.upper(), piece.strip() + "\n", " " + piece.lstrip(),
                piece + " more", piece + ".", piece + "7", piece.lstrip() + "é"]
    for n in range(1, len(ahead) + 1):
        whole = str(step.piece) + "".join(ahead[:n])
        out += [whole, whole.strip(), whole[:-1], whole + "x"]
    return out


def _python(step, g, ahead=()):
    try:
        r = _best_candidate(step, clean(g), ahead)
    except GuessError as e:
        return {"refused": sentence(e)}
    return {"text": r.text, "rank": r.rank, "prob": r.prob, "final": r.final_prob, "below": r.below, "chosen": r.chosen,
            "above": r.above_chosen, "pieces": list(r.pieces)}


RATE_ALL = """([s, guesses]) => guesses.map((g) => { const G = LLMViewer.guess;
  try { const r = G.rate(s, g); return { text: r.text, rank: r.rank, prob: r.prob, final: r.prob === null ? null : r.final,
                                           below: r.below, chosen: r.chosen, above: r.above, pieces: r.pieces || [] }; }
  catch (e) { if (e instanceof G.Refused) return { refused: e.message }; throw e; } })"""


@pytest.mark.parametrize("which", ["synthetic", "chat"])
def test_the_browsers_rating_is_pipeline_guess_exactly(browser, html_file, chat_file, trace, chat, which):
    """Every rule of pipeline.guess without a tokenizer (clean, variants, _rate_candidates, _best_candidate), on the
    trace's own numbers: equal, not close; and every percentage as viz.fmt.pct writes it."""
    t, path = (trace, html_file) if which == "synthetic" else (chat, chat_file)
    page = open_guess(browser, path)
    for s in range(0, len(t.steps), 3):
        step, ahead = t.steps[s], written_ahead(t, s)
        gs = _guesses(step, ahead)
        assert page.evaluate(RATE_ALL, [s, gs]) == [_python(step, g, ahead) for g in gs], f"step {s}"
    values = [float(v) for st in t.steps for v in (*st.top_probs, *st.top_final_probs, st.chosen_prob)]
    values += [0.125, 0.00125, 0.0125, 0.5, 0.995, 0.0995, 0.00995, 0.000995, 1e-4, 1e-6, 1e-7, 0.0, 1.0, 0.105, 0.0105, 0.00105,
               0.0375, 0.00875, float(np.float32(0.035))]
    assert page.evaluate("(vs) => vs.map((v) => LLMViewer.guess.pct(v))", values) == [pct(v) for v in values]
    clean_page(page)
