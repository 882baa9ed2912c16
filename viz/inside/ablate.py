"""Switching parts of the model off (pipeline.trace.ablated): the step's distribution before and after, the chosen
token's probability both ways, the tokens that moved most, and the block x head map of "which heads matter".

Pure functions of the records and the readable pieces of the ids they name (`pieces`: id -> piece, from the
tokenizer the caller has); every sentence from the catalogue (locales/en.json, "ablate.*").
"""
from __future__ import annotations

import html
import math
from typing import Mapping

import numpy as np
import plotly.graph_objects as go

from pipeline.trace.ablated import AblationRecord, HeadMapRecord

from viz.style import GEN_COLOR, PROMPT_COLOR, base_layout, html_piece, plot_lines, plot_piece, plot_text, significant
from viz.text import decimal, number_marks, pct, t, t_html, thousands

SHOWN = 8  # tokens of each distribution in the side-by-side bars (their union is drawn)
MOVERS = 6  # rows of the "changed most" table
NAMED = 5  # the largest effects named under the map
MAP_SCALE = "PuOr"  # ColorBrewer's purple-orange: diverging, readable with colour-vision deficiency (orange: less likely)
UNSEEN = "#c4c9d1"  # a block not computed (the same grey in the light theme and the dark)
MARK = "#111111"  # the largest effects' labels: dark on a white box in both themes (not a colour the dark theme swaps)

_TD = "padding:2px 10px;border-bottom:1px solid #e2e8f0;text-align:right"
_TH = "padding:2px 10px;border-bottom:1px solid #cbd5e0;text-align:left;font-weight:600"


def part_name(layer: int, part: str, head: int | None = None) -> str:
    """'head 5 of block 3', 'the attention of block 3', 'the MLP of block 3' (plain text)."""
    if part == "head":
        return t("ablate.part_head", head=head, layer=layer)
    return t("ablate.part_attn", layer=layer) if part == "attn" else t("ablate.part_mlp", layer=layer)


def factor(change: float) -> str:
    """A change in log-probability as the factor the probability was multiplied by: -0.69 -> '0.5'."""
    return significant(math.exp(change)) if np.isfinite(change) else "–"


def signed(change: float) -> str:
    """-0.123 -> '−0.123', 0.5 -> '+0.500' (the language's decimal mark)."""
    return f"{change:+.3f}".replace("-", "−").replace(".", number_marks()[1])


def note_html(sentence: str) -> str:
    return f"<p class='inside-note'>{html.escape(sentence)}</p>"


def what_it_is_html() -> str:
    return f"<p class='ablate-note' style='color:#4a5568;font-size:13.5px'>{html.escape(t('ablate.what_it_is'))}</p>"


def _piece(pieces: Mapping[int, str], i: int, n: int = 24) -> str:
    return pieces.get(int(i), f"#{int(i)}")


def _movers_table(rec: AblationRecord, pieces: Mapping[int, str]) -> str:
    ids, b, a = rec.movers(MOVERS)
    head = "".join(f"<th style='{_TH}'>{html.escape(h)}</th>" for h in
                   (t("ablate.col_token"), t("ablate.col_before"), t("ablate.col_after"), t("ablate.col_change")))
    rows = "".join(
        f"<tr data-id='{int(i)}'><td style='{_TH}'>{html_piece(_piece(pieces, i), 24)}</td><td style='{_TD}'>{pct(x, None)}</td>"
        f"<td style='{_TD}'>{pct(y, None)}</td><td style='{_TD}'>{'+' if y >= x else '−'}{pct(abs(y - x), None)}</td></tr>"
        for i, x, y in zip(ids, b, a))
    return (f"<p style='margin:8px 0 2px;font-weight:600'>{html.escape(t('ablate.changed_most'))}</p>"
            # (as wide as its box at most: a phone's narrow column, a language's longer headers wrap, never cut)
            f"<table class='ablate-movers' style='border-collapse:collapse;font-size:13.5px;max-width:100%;overflow-wrap:anywhere'>"
            f"<thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def ablation_html(rec: AblationRecord, pieces: Mapping[int, str], *, step: int) -> str:
    """`#ablate-result`: the chosen token's probability before and after (also as data attributes), whether the top
    token moved, the tokens that changed most, the time it took, and what this test is and is not."""
    tok = f"<b>{html_piece(_piece(pieces, rec.token_id), 30)}</b>"
    result = t_html("ablate.result", step=step, part=html.escape(part_name(rec.layer, rec.part, rec.head)), token=tok,
                    before=f"<b>{pct(rec.chosen_before, None)}</b>", after=f"<b>{pct(rec.chosen_after, None)}</b>",
                    factor=factor(rec.logprob_change))
    top_b, top_a = int(rec.top("before", 1)[0][0]), int(rec.top("after", 1)[0][0])
    top = (t_html("ablate.top_changed", token=f"<b>{html_piece(_piece(pieces, top_b), 30)}</b>") if top_b == top_a else
           t_html("ablate.top_moved", before=f"<b>{html_piece(_piece(pieces, top_b), 30)}</b>",
                  after=f"<b>{html_piece(_piece(pieces, top_a), 30)}</b>"))
    ms = thousands(rec.ms)
    timing = t("ablate.timing", ms=ms, layer=rec.layer) if rec.path == "upper" else t("ablate.timing_full", ms=ms)
    head = "" if rec.head is None else f" data-head='{rec.head}'"
    return (f"<div id='ablate-result' class='ablate-result' data-layer='{rec.layer}' data-part='{rec.part}'{head} "
            f"data-token='{rec.token_id}' data-before='{rec.chosen_before!r}' data-after='{rec.chosen_after!r}' data-step='{step}' "
            f"style='font-size:14px;line-height:1.5'><p style='margin:2px 0'>{result}</p><p style='margin:2px 0'>{top}</p>"
            f"{_movers_table(rec, pieces)}<p style='margin:6px 0 0;color:#718096;font-size:13px'>{html.escape(timing)}</p>"
            f"{what_it_is_html()}</div>")


def _shown_ids(rec: AblationRecord) -> list[int]:
    """The union of both distributions' SHOWN likeliest tokens and the chosen one: before's order, then after's new ones."""
    ids = [int(i) for i in rec.top("before", SHOWN)[0]]
    ids += [int(i) for i in rec.top("after", SHOWN)[0] if int(i) not in ids]
    return ids if rec.token_id in ids else ids + [rec.token_id]


def ablation_figure(rec: AblationRecord, pieces: Mapping[int, str], *, step: int) -> go.Figure:
    """Both distributions side by side: for each token among either's likeliest (and the chosen one, marked ▶), its
    probability before (blue) and after (orange) at temperature 1, likeliest before at the top."""
    ids = _shown_ids(rec)
    b, a = rec.probs("before")[ids], rec.probs("after")[ids]
    labels = [("▶ " if i == rec.token_id else "") + plot_piece(_piece(pieces, i), 16) for i in ids]
    hover = ["<br>".join((plot_piece(_piece(pieces, i), 24), t("ablate.hover_before", p=pct(x, None)), t("ablate.hover_after", p=pct(y, None))))
             for i, x, y in zip(ids, b, a)]
    y = list(range(len(ids)))
    part = part_name(rec.layer, rec.part, rec.head)
    bars = dict(orientation="h", y=y, customdata=hover, hovertemplate="%{customdata}<extra></extra>")
    traces = [go.Bar(x=b, name=t("ablate.dist_before"), marker=dict(color=PROMPT_COLOR), **bars),
              go.Bar(x=a, name=t("ablate.dist_after", part=part), marker=dict(color=GEN_COLOR), **bars)]
    layout = base_layout(
        plot_text(t("ablate.dist_title", step=step)) + f"<br><sup>{plot_text(t('ablate.dist_subtitle', part=part))}</sup>",
        height=170 + 34 * len(ids), barmode="group", bargap=0.25, margin=dict(l=110, r=20, t=100, b=50),
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", xanchor="left"),
        xaxis=dict(title=dict(text=t("ablate.dist_axis")), tickformat=".0%", range=[0, max(float(b.max()), float(a.max())) * 1.08],
                   autorange=False, rangemode="tozero"),
        yaxis=dict(tickvals=y, ticktext=labels, autorange="reversed", automargin=True))
    fig = go.Figure(data=traces, layout=layout)
    fig.layout.meta = dict(step=step, layer=rec.layer, part=rec.part, head=rec.head, token=rec.token_id)
    return fig


def map_key(model_id: str, step: int, context_ids, token_id: int) -> str:
    """What a head map was computed for (a map on screen for another step or model is stale): model, step, a digest
    of the context, token."""
    import zlib

    digest = zlib.crc32(np.asarray(context_ids, np.int64).tobytes())
    return html.escape(f"{model_id}|{step}|{len(context_ids)}|{digest:08x}|{int(token_id)}", quote=True)


def map_hint_html() -> str:
    return f"<div id='ablate-map-result' data-key=''>{note_html(t('ablate.map_hint'))}</div>"


def head_map_html(hm: HeadMapRecord, pieces: Mapping[int, str], *, step: int, key: str, total: int) -> str:
    """`#ablate-map-result`: progress while it runs (`total`: the blocks asked for), then what was computed and the
    largest effects, named. `key`: what it was computed for (map_key)."""
    attrs = (f"data-key='{key}' data-token='{hm.token_id}' data-done='{len(hm.layers)}' data-total='{total}' "
             f"data-layers='{','.join(str(i) for i in sorted(hm.layers))}'")
    secs = decimal(hm.seconds, 1)
    if len(hm.layers) < total:
        return f"<div id='ablate-map-result' {attrs}>{note_html(t('ablate.map_progress', done=len(hm.layers), total=total, seconds=secs))}</div>"
    n = len(hm.layers)
    blocks = t("ablate.map_blocks_one") if n == 1 else t("ablate.map_blocks_other", n=n)
    done = t_html("ablate.map_done", blocks=html.escape(blocks), heads=hm.n_heads, step=step, seconds=secs,
                  token=f"<b>{html_piece(_piece(pieces, hm.token_id), 30)}</b>")
    items = "".join(f"<li data-layer='{l}' data-head='{h}'>{html.escape(t('ablate.map_effect', head=h, layer=l, change=signed(d), factor=factor(d)))}</li>"
                    for l, h, d in hm.largest(NAMED))
    return (f"<div id='ablate-map-result' {attrs} style='font-size:14px;line-height:1.5'><p style='margin:2px 0'>{done}</p>"
            f"<p style='margin:6px 0 0;font-weight:600'>{html.escape(t('ablate.map_largest'))}</p><ol style='margin:2px 0'>{items}</ol>"
            f"<p style='margin:4px 0;color:#718096;font-size:13px'>{html.escape(t('ablate.map_legend'))}</p></div>")


def head_map_figure(hm: HeadMapRecord, pieces: Mapping[int, str], *, step: int, every_block: bool = True) -> go.Figure:
    """The block x head map of the change in the chosen token's log-probability when each head alone is switched off:
    a diverging scale centred on 0 (orange: less likely, purple: more likely), the largest effects numbered on the map.
    `every_block`: every block's row, grey until computed (a map filling block by block); else the blocks computed only."""
    rows = list(range(hm.n_layers)) if every_block else sorted(hm.layers)
    d, H = hm.delta[rows], hm.n_heads
    seen = np.isfinite(d)
    z = [[float(v) if ok else None for v, ok in zip(row, oks)] for row, oks in zip(d, seen)]
    lim = max(float(np.abs(d[seen]).max()) if seen.any() else 0.0, 1e-3)
    cell = [["<br>".join((part_name(l, "head", h), t("ablate.map_cell_change", change=signed(d[r, h])),
                          t("ablate.map_cell_factor", factor=factor(d[r, h])))) if seen[r, h] else "" for h in range(H)]
            for r, l in enumerate(rows)]
    grid = dict(x=list(range(H)), y=list(range(len(rows))), xgap=1, ygap=1)  # a row per block shown, labelled with its number
    traces = [
        go.Heatmap(z=[[None if ok else 1 for ok in oks] for oks in seen], showscale=False, colorscale=[[0, UNSEEN], [1, UNSEEN]],
                   hoverinfo="skip", **grid),
        go.Heatmap(z=z, colorscale=MAP_SCALE, zmid=0, zmin=-lim, zmax=lim, customdata=cell, hovertemplate="%{customdata}<extra></extra>",
                   # (each map scales to its own largest change: a block's map and every block's differ, said on the bar)
                   colorbar=dict(title=dict(text=plot_text(t("ablate.map_bar")) + "<br>" + plot_lines(t("ablate.map_scale", lim=decimal(lim, 2)), 34), side="top"), orientation="h", thickness=12, len=0.9,
                                 x=0.5, xanchor="center", yanchor="top"), **grid),
    ]
    marks = [dict(x=h, y=rows.index(l), text=str(k + 1), showarrow=False, font=dict(color=MARK, size=12), bgcolor="white", opacity=0.9,
                  borderpad=1) for k, (l, h, _) in enumerate(hm.largest(NAMED))]
    title = (plot_text(t("ablate.map_title", token=plot_piece(_piece(pieces, hm.token_id), 20), step=step))
             + f"<br><sup>{plot_text(t('ablate.map_subtitle'))}</sup>")
    height = max(300, 80 + 17 * len(rows) + 130)  # the title, the rows, the head axis and the colour bar under it
    below = -62 / (height - 80 - 130)  # the colour bar's top, 62 px under the rows (in the plot's own fractions)
    traces[1].colorbar.y = below
    layout = base_layout(
        title, height=height, margin=dict(l=60, r=20, t=80, b=130), annotations=marks,
        xaxis=dict(title=dict(text=t("ablate.map_x")), tickvals=list(range(H)), range=[-0.5, H - 0.5]),
        yaxis=dict(title=dict(text=t("ablate.map_y")), autorange="reversed", tickvals=list(range(len(rows)))[::1 if len(rows) <= 12 else 2],
                   ticktext=[str(l) for l in rows][::1 if len(rows) <= 12 else 2]))
    fig = go.Figure(data=traces, layout=layout)
    fig.layout.meta = dict(step=step, token=hm.token_id, layers=sorted(hm.layers))
    return fig
