"""What the page says of a guess (pipeline.guess's rating): the guess as the model's tokens, how the model
rated it, and how that compares with the token it sampled. Data attributes carry the numbers for tests and
tools: data-step, data-rank (1-based) and data-prob (temperature 1; empty when only a bound is known); data-chosen (the
guess was the token the model wrote) and data-top (the model's own top pick was) give the running score (assets/guess.js)."""
from __future__ import annotations

import html

from pipeline.guess import GuessRating
from pipeline.trace.records import StepRecord
from viz.char_parts import chip_html, parts
from viz.style import html_piece
from viz.text import pct, t_html, thousands


def _q(text: str) -> str:
    return t_html("common.quote", text=html.escape(text))


def _qp(piece: str) -> str:
    """A token's piece in quotes, its spaces marked as the distribution marks them ("·Paris")."""
    return t_html("common.quote", text=html_piece(piece))


def _p(cls: str, sentence: str) -> str:
    return f"<p class='{cls}'>{sentence}</p>" if cls else f"<p>{sentence}</p>"


def rating_html(r: GuessRating, s: int, step: StepRecord) -> str:
    """The rating of a guess at step `s` (the trace's `s`-th step, `step`), in the catalogue's words (guess.*: the
    offline page's assets/viewer_guess.js says the same)."""
    chosen, wrote = _qp(step.piece), pct(step.chosen_prob, None)
    attrs = (f"data-step='{s}' data-rank='{r.rank if r.rank is not None else ''}' "
             f"data-prob='{r.prob if r.prob is not None else ''}' data-chosen='{int(r.chosen)}' "
             f"data-top='{int(len(step.top_ids) > 0 and int(step.top_ids[0]) == int(step.token_id))}'")  # (the model's top pick right)
    if r.prob is None:
        body = (_p("guess-head", t_html("guess.not_kept", guess=_q(r.text), n=thousands(len(step.top_ids)), bound=pct(r.below, None)))
                + _p("", t_html("guess.forced_it_wrote" if step.forced else "guess.it_wrote", token=chosen, prob=wrote)))
        return f"<div class='guess-result' {attrs}>{body}</div>"
    if r.tokenized or "".join(r.pieces) == r.text:  # (no tokenizer: the candidate the guess is, or the pieces the text has)
        as_tokens = t_html("guess.tokens", pieces=" + ".join(  # (a character cut across tokens: its parts, '天 1/3')
            t_html("common.quote", text=chip_html(seg, None)) for seg in parts(r.pieces)))
    else:  # (no tokenizer: the first token matched among the kept candidates, the rest not rated)
        as_tokens = t_html("guess.first_token", piece=_qp(r.pieces[0]), n=thousands(len(step.top_ids)))
    lines = [_p("guess-head", t_html("guess.rated", guess=_q(r.text), prob=f"<b>{pct(r.prob, None)}</b>",
                                     rank=f"<b>{t_html('guess.rank', rank=thousands(r.rank))}</b>")),
             _p("", as_tokens + " " + t_html("guess.final", prob=pct(r.final_prob, None)))]
    if r.seq_prob is not None:
        lines.append(_p("", t_html("guess.sequence", prob=pct(r.seq_prob, None))))
    if r.chosen:
        lines.append(_p("guess-match", t_html("guess.forced_match" if step.forced else "guess.match", token=chosen)))
    else:
        lines.append(_p("", t_html(("guess.forced_above" if r.above_chosen else "guess.forced_wrote") if step.forced  # (real text, a branch)
                                   else ("guess.above" if r.above_chosen else "guess.wrote"), token=chosen, prob=wrote)))
    return f"<div class='guess-result' {attrs}>{''.join(lines)}</div>"


def refused_html(sentence: str) -> str:
    return f"<div class='guess-result guess-refused' data-step='' data-rank='' data-prob=''><p>{html.escape(sentence)}</p></div>"


__all__ = ["rating_html", "refused_html"]
