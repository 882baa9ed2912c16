"""A guided walk through one generation step: the stages in order, each pointing at its panel and
told with this step's own numbers (pure: a trace and a step in, text out)."""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from pipeline.indices import clamp_index
from pipeline.records import RoundRecord, StepRecord, Trace

from . import fmt
from .speculative import round_of_step
from .style import html_piece, human_bytes


@dataclass(frozen=True)
class TourStage:
    title: str
    html: str  # the explanation, with this step's numbers
    target: str  # elem_id of the panel it is about


def _top_key(trace: Trace, s: int) -> tuple[str, float, int]:
    """The key the step's query attended to most, averaged over every layer and head."""
    st = trace.steps[s]
    mean = np.asarray(st.attention, dtype=np.float64).mean(axis=(0, 1))  # (position+1,)
    k = int(np.argmax(mean))
    return st.context_pieces[k], float(mean[k]), k


def _feed_words(st: StepRecord, rnd: RoundRecord | None, last: str) -> str:
    """What went through the model at this step: the round's pass, the prefill, or the newest token."""
    T = st.position + 1
    if rnd is not None:  # speculative: the token came from a round of draft and verify, not a pass of its own
        fed = rnd.target_tokens_fed
        how = ("the draft had nothing to propose, so it was a plain step" if rnd.k == 0 else
               f"the draft proposed {fmt.tokens(rnd.k)} and the model checked them")
        return (f"This token came from speculative round {rnd.index}: {how}, in one pass of {fmt.tokens(fed)} "
                f"fed; the round added {fmt.tokens(len(rnd.token_ids))}. The query at "
                f"position {st.position} of that pass chose it.")
    if st.phase == "prefill":
        return (f"This is the first step (prefill): all {T} tokens of the context go through the model in one pass, "
                "in parallel, and the last one's output chooses the first new token.")
    return (f"This is decode step {st.index}: only the newest token, {last}, goes through the model; the "
            f"{T - 1} before it are remembered in the KV cache.")


def _time_words(st: StepRecord, rnd: RoundRecord | None) -> str:
    if rnd is None:
        return f"This step took {st.ms:.1f} ms on the machine that made this trace."
    return (f"Round {rnd.index} took draft {rnd.draft_ms:.1f} ms + verify {rnd.target_ms:.1f} ms on the machine that made this trace, for "
            f"{fmt.tokens(len(rnd.token_ids))}.")


def _attention_words(trace: Trace, step: int) -> str:
    """Where the step's query looked most, and the runner-up when that was the first token."""
    st = trace.steps[step]
    key_piece, key_w, key_pos = _top_key(trace, step)
    sink = ""
    if key_pos == 0 and st.position > 0:  # the first token is a common resting place: name the runner-up too
        mean = np.asarray(st.attention, dtype=np.float64).mean(axis=(0, 1))
        k2 = int(np.argmax(mean[1:])) + 1
        sink = (f" Many heads rest their attention on the first token when nothing else is relevant; after it came "
                f"<code>{html_piece(st.context_pieces[k2])}</code> (position {k2}, {mean[k2]:.0%}).")
    return f"<code>{html_piece(key_piece)}</code> (position {key_pos}, {key_w:.0%}).{sink}"


def _input_stages(trace: Trace, step: int, rnd: RoundRecord | None) -> list[TourStage]:
    """Stages 1-4: from the context's tokens through the layers to the logits."""
    st, m = trace.steps[step], trace.model
    T = st.position + 1
    n_prompt = len(trace.prompt.token_ids)
    last = f"<code>{html_piece(st.context_pieces[-1])}</code>"
    return [
        TourStage("1 · Tokens", (
            f"The context is {T} tokens: {n_prompt} of the prompt (chat template included) and {T - n_prompt} generated so far. "
            f"The model never sees letters, only these {T} id numbers. {_feed_words(st, rnd, last)}"), "panel-tokens"),
        TourStage("2 · Embeddings", (
            f"Each id picks one row of the embedding matrix ({m.vocab_size:,} rows of {m.d_model} numbers). The newest "
            f"token {last} becomes a vector of {m.d_model} numbers: the start of its residual stream."), "panel-embeddings"),
        TourStage("3 · Attention", (
            f"In each of {m.n_layers} layers, {m.n_heads} heads let the query at position {st.position} read the "
            f"{T} positions before and including it. Averaged over every layer and head, it put most weight on "
            f"{_attention_words(trace, step)} Pick a layer and head to see each pattern."),
            "panel-attention"),
        TourStage("4 · Through the layers", (
            f"Each layer adds an update to the residual stream: attention mixes in information from other tokens, the "
            f"feed-forward block transforms it. After the last layer, the final norm and the LM head turn the stream into "
            f"{m.vocab_size:,} scores (logits), one per token. The “Inside the model” tabs show this layer by layer."),
            "panel-inside"),
    ]


def _settings_words(st: StepRecord) -> tuple[str, str, bool]:
    """The settings this step was sampled with, what each filter kept, and whether it was greedy. Read
    from the step's own stages: a re-sample or branch keeps earlier steps made with other settings
    than the trace's latest."""
    param = {g.name: g.param for g in st.stages}
    greedy = param.get("temperature") == 0
    kept = [g for g in st.stages if g.name in ("top_k", "top_p")]
    top_k = f"{int(param['top_k'])}" if "top_k" in param else "off"
    top_p = f"{param['top_p']:g}" if "top_p" in param else "off"
    used = f"Temperature {param.get('temperature', 1.0):g}" + ("" if greedy else f", top-k {top_k}, top-p {top_p}")
    kept_txt = ("temperature 0 is greedy: only the most likely token can be chosen (top-k and top-p change nothing)" if greedy else
                "; ".join(f"{g.name.replace('_', '-')} kept {fmt.tokens(g.kept)}" for g in kept) or "no filter was on")
    return used, kept_txt, greedy


def _chosen_words(st: StepRecord, piece: str, greedy: bool) -> str:
    """How the token was chosen: forced by a branch, taken greedily, or drawn at random."""
    if st.forced:
        return (f"The token {piece} was not drawn here: it was forced (a branch), in place of the model's own choice. It had "
                f"probability {st.chosen_final_prob:.1%} under these settings and {st.chosen_prob:.1%} before sampling reshaped it.")
    if greedy:
        return (f"So the token {piece} was taken, with no randomness; the model gave it {st.chosen_prob:.1%} before "
                f"sampling reshaped the distribution.")
    return (f"From that distribution the token {piece} was drawn at random; it had probability "
            f"{st.chosen_final_prob:.1%} there and {st.chosen_prob:.1%} before sampling reshaped it.")


def _output_stages(st: StepRecord, rnd: RoundRecord | None) -> list[TourStage]:
    """Stages 5-8: from the logits to the chosen token, the cache and the text."""
    T = st.position + 1
    fed = rnd.target_tokens_fed if rnd is not None else T if st.phase == "prefill" else 1
    piece = f"<code>{html_piece(st.piece)}</code>"
    top = [f"<code>{html_piece(p)}</code> {float(pr):.1%}" for p, pr in zip(st.top_pieces[:3], st.top_probs[:3])]
    used, kept_txt, greedy = _settings_words(st)
    rolled = f" (but the {rnd.target_rollback} of rejected proposals, cut back after the test)" if rnd is not None and rnd.target_rollback else ""
    text = (f" and its text <code>{html_piece(st.text)}</code> appears in the output. " if st.text else
            " but releases no text yet (it ends the reply, or holds part of a character whose other bytes come next). ")
    then = ("The next step starts again at 1 with one more token." if st.stop_reason is None else
            f"Generation stopped here ({html.escape(st.stop_reason.replace('_', ' '))}).")
    return [
        TourStage("5 · Next-token distribution", (
            f"Softmax turns the logits into probabilities. The three most likely next tokens were {', '.join(top)}; "
            f"the entropy was {st.entropy:.2f} bits (0 would mean certain)."), "panel-distribution"),
        TourStage("6 · Sampling", f"{used}: {kept_txt}. " + _chosen_words(st, piece, greedy), "panel-distribution"),
        TourStage("7 · KV cache and time", (
            f"The keys and values of the {fmt.tokens(fed)} fed in are kept{rolled}: the cache now holds {T:,} "
            f"positions, {human_bytes(st.kv_cache_bytes)}. {_time_words(st, rnd)}"), "panel-kv"),
        TourStage("8 · Output", f"The chosen token {piece} is appended to the context" + text + then, "output"),
    ]


def tour_stages(trace: Trace, step: int) -> list[TourStage]:
    """The stages of step `step` of `trace`, in the order the model goes through them."""
    rnd = round_of_step(trace.rounds, trace.steps[step].index)
    return [*_input_stages(trace, step, rnd), *_output_stages(trace.steps[step], rnd)]


def tour_html(trace: Trace, step: int, stage: int) -> str:
    """The tour box for one stage: where we are, the explanation, how to go on."""
    stages = tour_stages(trace, step)
    i = clamp_index(stage, len(stages))
    s = stages[i]
    return (f"<div class='tour-box'><div class='tour-head'>Step {trace.steps[step].index} · stage {i + 1} of {len(stages)}: "
            f"<b>{html.escape(s.title.split('·', 1)[-1].strip())}</b></div><p>{s.html}</p></div>")
