"""A guided walk through one generation step: the stages in order, each pointing at its panel and
told with this step's own numbers (pure: a trace and a step in, text out), in the catalogue's words (tour.*:
locales/en.json, viz.text)."""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from pipeline.indices import clamp_index
from pipeline.trace.records import RoundRecord, StepRecord, Trace

from viz import fmt
from viz.speculative import round_of_step
from viz.style import html_piece, human_bytes
from viz.text import decimal, number_marks, pct, t, t_html, thousands


def _stage(n: int, name: str) -> str:
    return f"{n} · {name}"


def _code(piece: str) -> str:
    return f"<code>{html_piece(piece)}</code>"


def _setting(x: float) -> str:
    """A sampling setting as f"{x:g}" writes it (0.8, 1), with the language's decimal mark (French 0,8)."""
    return f"{x:g}".replace(".", number_marks()[1])


# why a generation stopped (pipeline's stop reasons), in words that fit "Generation stopped here ({reason})."
_STOPPED = {"eos": lambda: t("tour.reason.eos"), "max_new_tokens": lambda: t("tour.reason.max_new_tokens"),
            "context_limit": lambda: t("tour.reason.context_limit")}


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
        how = t_html("tour.round_plain") if rnd.k == 0 else t_html("tour.round_proposed", k=fmt.tokens(rnd.k))
        return t_html("tour.round", round=rnd.index, how=how, fed=fmt.tokens(fed), added=fmt.tokens(len(rnd.token_ids)),
                      position=st.position)
    if st.phase == "prefill":
        return t_html("tour.prefill", n=T)
    return t_html("tour.decode", step=st.index, last=last, before=T - 1)


def _time_words(st: StepRecord, rnd: RoundRecord | None) -> str:
    if rnd is None:
        return t_html("tour.time_step", ms=decimal(st.ms, 1))
    return t_html("tour.time_round", round=rnd.index, draft=decimal(rnd.draft_ms, 1), verify=decimal(rnd.target_ms, 1),
                  tokens=fmt.tokens(len(rnd.token_ids)))


def _attention_words(trace: Trace, step: int) -> str:
    """Where the step's query looked most, and the runner-up when that was the first token."""
    st = trace.steps[step]
    key_piece, key_w, key_pos = _top_key(trace, step)
    sink = ""
    if key_pos == 0 and st.position > 0:  # the first token is a common resting place: name the runner-up too
        mean = np.asarray(st.attention, dtype=np.float64).mean(axis=(0, 1))
        k2 = int(np.argmax(mean[1:])) + 1
        sink = " " + t_html("tour.sink", piece=_code(st.context_pieces[k2]), position=k2, weight=pct(mean[k2], 0))
    return t_html("tour.top_key", piece=_code(key_piece), position=key_pos, weight=pct(key_w, 0)) + sink


def _input_stages(trace: Trace, step: int, rnd: RoundRecord | None) -> list[TourStage]:
    """Stages 1-4: from the context's tokens through the layers to the logits."""
    st, m = trace.steps[step], trace.model
    T = st.position + 1
    n_prompt = len(trace.prompt.token_ids)
    last = _code(st.context_pieces[-1])
    return [
        TourStage(_stage(1, t("tour.stage.tokens")), t_html("tour.tokens", n=T, prompt=n_prompt, generated=T - n_prompt) + " "
                  + _feed_words(st, rnd, last), "panel-tokens"),
        TourStage(_stage(2, t("tour.stage.embeddings")), t_html("tour.embeddings", rows=thousands(m.vocab_size), d=m.d_model, last=last),
                  "panel-embeddings"),
        TourStage(_stage(3, t("tour.stage.attention")), t_html("tour.attention", layers=m.n_layers, heads=m.n_heads, position=st.position, n=T,
                                                 where=_attention_words(trace, step)), "panel-attention"),
        TourStage(_stage(4, t("tour.stage.layers")), t_html("tour.layers", n=thousands(m.vocab_size)), "panel-inside"),
    ]


def _settings_words(st: StepRecord) -> tuple[str, str, bool]:
    """The settings this step was sampled with, what each filter kept, and whether it was greedy. Read
    from the step's own stages: a re-sample or branch keeps earlier steps made with other settings
    than the trace's latest."""
    param = {g.name: g.param for g in st.stages}
    greedy = param.get("temperature") == 0
    kept = [g for g in st.stages if g.name in ("top_k", "top_p")]
    top_k = f"{int(param['top_k'])}" if "top_k" in param else t_html("common.off")
    top_p = _setting(param["top_p"]) if "top_p" in param else t_html("common.off")
    temp = _setting(param.get("temperature", 1.0))
    used = t_html("tour.used", t=temp) if greedy else t_html("tour.used_filters", t=temp, k=top_k, p=top_p)
    kept_txt = (t_html("tour.greedy") if greedy else
                "; ".join(t_html("tour.kept", filter=g.name.replace("_", "-"), tokens=fmt.tokens(g.kept)) for g in kept)
                or t_html("tour.no_filter"))
    return used, kept_txt, greedy


def _chosen_words(st: StepRecord, piece: str, greedy: bool) -> str:
    """How the token was chosen: forced by a branch, taken greedily, or drawn at random."""
    return t_html("tour.forced" if st.forced else "tour.taken" if greedy else "tour.drawn", piece=piece, final=pct(st.chosen_final_prob),
                  raw=pct(st.chosen_prob))


def _output_stages(st: StepRecord, rnd: RoundRecord | None) -> list[TourStage]:
    """Stages 5-8: from the logits to the chosen token, the cache and the text."""
    T = st.position + 1
    fed = rnd.target_tokens_fed if rnd is not None else T if st.phase == "prefill" else 1
    piece = _code(st.piece)
    top = [f"{_code(p)} {pct(pr)}" for p, pr in zip(st.top_pieces[:3], st.top_probs[:3])]
    used, kept_txt, greedy = _settings_words(st)
    cache = dict(fed=fmt.tokens(fed), n=thousands(T), bytes=html.escape(human_bytes(st.kv_cache_bytes)))
    kv = (t_html("tour.kv_rolled", rolled=rnd.target_rollback, **cache) if rnd is not None and rnd.target_rollback else
          t_html("tour.kv", **cache))
    text = t_html("tour.output_text", piece=piece, text=_code(st.text)) if st.text else t_html("tour.output_none", piece=piece)
    then = (t_html("tour.next") if st.stop_reason is None else
            t_html("tour.stopped", reason=html.escape(_STOPPED[st.stop_reason]() if st.stop_reason in _STOPPED else st.stop_reason.replace("_", " "))))
    return [
        TourStage(_stage(5, t("tour.stage.distribution")), t_html("tour.distribution", top=", ".join(top), entropy=decimal(st.entropy, 2)),
                  "panel-distribution"),
        TourStage(_stage(6, t("tour.stage.sampling")), t_html("tour.sampling", used=used, kept=kept_txt) + " " + _chosen_words(st, piece, greedy),
                  "panel-distribution"),
        TourStage(_stage(7, t("tour.stage.kv")), kv + " " + _time_words(st, rnd), "panel-kv"),
        TourStage(_stage(8, t("tour.stage.output")), text + " " + then, "output"),
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
    head = t_html("tour.head", step=trace.steps[step].index, i=i + 1, n=len(stages), title=f"<b>{html.escape(s.title.split('·', 1)[-1].strip())}</b>")
    return f"<div class='tour-box'><div class='tour-head'>{head}</div><p>{s.html}</p></div>"
