"""The token tax, drawn: how many tokens the same sentence takes in each language, under each tokenizer (bars), with
characters per token and the ratio to English on hover, one sentence on what it costs, and the sentences' source.
Counts come from pipeline/token_tax.py; every number is a count the tokenizers gave."""
from __future__ import annotations

import html

import plotly.graph_objects as go

from pipeline.token_tax import Row, about, relative

from viz.style import base_layout
from viz.text import count, decimal, t, t_html, thousands

COLOURS = ("#2b6cb0", "#dd6b20", "#2f855a", "#805ad5")  # one per tokenizer, in their order


def _label(row: Row) -> str:
    return t("tax.own") if row.sentence.lang == "own" else row.sentence.name


def figure(rows: list[Row], names: list[str]) -> go.Figure:
    """Horizontal bars: a language per row (English on top), a bar per tokenizer, its token count at its end. The
    learner's own sentence is not one of them: the bars compare one meaning across languages, and a sentence of
    another meaning counted beside them says nothing of its language (a short Hindi sentence would look cheap);
    own_tokens_html says its numbers."""
    rows = [r for r in rows if r.sentence.lang != "own"]
    order = list(reversed(rows))  # (plotly draws the first category at the bottom)
    bars = []
    for i, name in enumerate(names):
        times = relative(rows, name)
        bars.append(go.Bar(
            y=[_label(r) for r in order], x=[r.tokens.get(name, 0) for r in order], name=name, orientation="h",
            marker=dict(color=COLOURS[i % len(COLOURS)]), text=[thousands(r.tokens.get(name, 0)) for r in order],
            textposition="outside", cliponaxis=False,
            customdata=[[decimal(r.per_token(name), 1), decimal(times.get(r.sentence.lang, float("nan")), 1)] for r in order],
            hovertemplate=t("tax.hover", name=name, tokens="%{x}", per="%{customdata[0]}", times="%{customdata[1]}") + "<extra></extra>"))
    height = 120 + 26 * len(rows) * max(1, len(names))
    return go.Figure(data=bars, layout=base_layout(t("tax.title"), height=height, barmode="group", bargap=0.25,
                                                   margin=dict(l=10, r=40, t=50, b=40),
                                                   legend=dict(orientation="h", x=0, y=-0.08, yanchor="top"),
                                                   xaxis=dict(title=dict(text=t("tax.axis")), fixedrange=True),
                                                   yaxis=dict(fixedrange=True, automargin=True)))


def summary_html(rows: list[Row], names: list[str], model_name: str | None) -> str:
    """The lead, the one sentence on what the tax costs, the widest gap in words, and the source."""
    parts = [f"<p>{t_html('tax.lead', n=len([r for r in rows if r.sentence.lang != 'own']))}</p>"]
    if model_name and model_name in names and len(names) > 1:
        ratios = relative(rows, model_name)
        worst = max((r for r in rows if r.sentence.lang not in ("en", "own")), key=lambda r: ratios.get(r.sentence.lang, 0), default=None)
        if worst is not None:
            other = names[-1]
            parts.append("<p>" + t_html("tax.widest", model=html.escape(model_name), lang=html.escape(worst.sentence.name),
                                        x=decimal(ratios[worst.sentence.lang], 1), other=html.escape(other),
                                        y=decimal(relative(rows, other)[worst.sentence.lang], 1)) + "</p>")
    parts.append(f"<p><b>{t_html('tax.cost')}</b></p>")
    if not model_name:
        parts.append(f"<p class='tax-wait'>{t_html('tax.no_model')}</p>")
    src = about()
    link = f"<a href='{html.escape(src['url'], quote=True)}' target='_blank' rel='noopener'>{t_html('tax.source_text')}</a>"
    parts.append(f"<p class='tax-source'>{t_html('tax.source', source=link)}</p>")
    return "<div class='token-tax-text'>" + "".join(parts) + "</div>"


def own_tokens_html(row: Row | None, rows: list[Row] = ()) -> str:
    """The learner's own sentence (shown as it was typed, right to left where it is), with its counts and, per
    tokenizer, its characters per token beside the English article's: its measure that does not hang on its length."""
    if row is None:
        return ""
    counts = " · ".join(f"{html.escape(name)}: {thousands(n)}" for name, n in row.tokens.items())
    en = next((r for r in rows if r.sentence.lang == "en"), None)
    per = " · ".join(t_html("tax.own_per", name=html.escape(name), own=decimal(row.per_token(name), 1), en=decimal(en.per_token(name), 1))
                     for name in row.tokens if en is not None and name in en.tokens)
    return (f"<p class='tax-own'><span dir='auto'>{html.escape(row.sentence.text)}</span><br>"
            f"{t_html('tax.own_counts', chars=count(row.chars, 'character'), counts=counts)}"
            + (f"<br>{t_html('tax.own_compare', per=per)}" if per else "") + "</p>")
