"""What the page says of a guess (pipeline.guess's rating): the guess as the model's tokens, how the model
rated it, and how that compares with the token it sampled. Data attributes carry the numbers for tests and
tools: data-step, data-rank (1-based) and data-prob (temperature 1; empty when only a bound is known)."""
from __future__ import annotations

import html

from pipeline.guess import GuessRating
from pipeline.records import StepRecord
from viz.fmt import pct
from viz.style import html_piece


def _q(text: str) -> str:
    return "“" + html.escape(text) + "”"


def _qp(piece: str) -> str:
    """A token's piece in quotes, its spaces marked as the distribution marks them ("·Paris")."""
    return "“" + html_piece(piece) + "”"


def rating_html(r: GuessRating, s: int, step: StepRecord) -> str:
    """The rating of a guess at step `s` (the trace's `s`-th step, `step`)."""
    chosen = _qp(step.piece)
    attrs = (f"data-step='{s}' data-rank='{r.rank if r.rank is not None else ''}' "
             f"data-prob='{r.prob if r.prob is not None else ''}' data-chosen='{int(r.chosen)}'")
    if r.prob is None:
        body = (f"<p class='guess-head'>Your guess {_q(r.text)} is not among the model's {len(step.top_ids)} most likely next tokens: "
                f"the model gave it less than {pct(r.below)}.</p><p>It wrote {chosen} ({pct(step.chosen_prob)}).</p>")
        return f"<div class='guess-result' {attrs}>{body}</div>"
    if r.tokenized or r.pieces == (r.text,):
        as_tokens = "As this model's tokens: " + " + ".join(_qp(p) for p in r.pieces) + "."
    else:  # (no tokenizer: the first token matched among the kept candidates, the rest not rated)
        as_tokens = (f"Its first token as this model writes it: {_qp(r.pieces[0])}, one of the model's {len(step.top_ids):,} "
                     "most likely next tokens, which your guess starts with before another word or sign (no tokenizer here to rate the rest).")
    lines = [f"<p class='guess-head'>Your guess {_q(r.text)}: the model rated it <b>{pct(r.prob)}</b>, "
             f"<b>rank {r.rank:,}</b> (1 = most likely).</p>",
             f"<p>{as_tokens} In the distribution it sampled from (after temperature, top-k and top-p): "
             f"{pct(r.final_prob)}.</p>"]
    if r.seq_prob is not None:
        lines.append(f"<p>The whole guess, token after token: {pct(r.seq_prob)}.</p>")
    if r.chosen:
        lines.append(f"<p class='guess-match'>✓ The model wrote your guess here: {chosen}.</p>")
    elif r.above_chosen:
        lines.append(f"<p>The model wrote {chosen} ({pct(step.chosen_prob)}), yet it rated your guess higher: "
                     "sampling does not always pick the most likely token.</p>")
    else:
        lines.append(f"<p>The model wrote {chosen} ({pct(step.chosen_prob)}).</p>")
    return f"<div class='guess-result' {attrs}>{''.join(lines)}</div>"


def refused_html(sentence: str) -> str:
    return f"<div class='guess-result guess-refused' data-step='' data-rank='' data-prob=''><p>{html.escape(sentence)}</p></div>"


__all__ = ["rating_html", "refused_html"]
