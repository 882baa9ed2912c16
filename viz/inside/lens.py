"""The logit lens: the model's prediction read out after every layer (pipeline.inside.LensRecord).

Row 0 is the input embedding, row i (1..L) the residual stream after block i - 1 (blocks are
numbered from 0, as everywhere: viz.style.depth_label), row L the model's own output.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from pipeline.trace.records import LensRecord

from viz.fmt import pct
from viz.style import NEW_COLOR, WEIGHT_SCALE, base_layout, depth_label, html_piece, plot_lines, plot_piece
from viz.text import decimal, t, t_html


def row_labels(n_rows: int) -> list[str]:
    """['embedding', 'after block 0', ..., 'after block L-1 · output'] for L+1 rows."""
    L = n_rows - 1
    return [t("lens.row_output", depth=depth_label(k)) if k == L and k else depth_label(k) for k in range(L + 1)]


def _at(k: int, n_layers: int) -> str:
    """'at the input embedding' / 'after block 3'."""
    return t("lens.at_embedding") if k == 0 else depth_label(k, n_layers)


def _join(*sentences: str) -> str:
    """Sentences one after the other: a space between them, none after a full-width full stop (Chinese)."""
    out = ""
    for x in sentences:
        out += ("" if not out or out.endswith(("。", "！", "？")) else " ") + x
    return out


def forms_at(ranks) -> int | None:
    """The first row from which the chosen token stays the top prediction to the output; None if
    it is not the top prediction at the output."""
    r = np.asarray(ranks)
    if r.size == 0 or r[-1] != 0:
        return None
    k = r.size - 1
    while k > 0 and r[k - 1] == 0:
        k -= 1
    return int(k)


def first_top(ranks) -> int | None:
    """The first row where the chosen token is the top prediction (it may lose the top later)."""
    idx = np.flatnonzero(np.asarray(ranks) == 0)
    return int(idx[0]) if idx.size else None


def _check(lens: LensRecord, n_layers: int | None) -> int:
    rows = int(np.asarray(lens.top_probs).shape[0])
    if n_layers is not None and rows != int(n_layers) + 1:
        raise ValueError(f"the lens has {rows} rows but the model has {n_layers} layers (expected {int(n_layers) + 1} rows)")
    return rows


def _lens_heatmap(lens: LensRecord, labels: list[str], probs: np.ndarray, ids: np.ndarray, entropy: np.ndarray) -> go.Heatmap:
    """The top-5 table: a row per depth, cells coloured by probability, the chosen token in bold."""
    rows, K = probs.shape
    text, hover = [], []
    for k in range(rows):
        top5 = "<br>".join(
            f"{'<b>' if ids[k, c] == lens.token_id else ''}#{c + 1} {plot_piece(lens.top_pieces[k][c], 40)}  {pct(probs[k, c])}"
            f"{'</b>' if ids[k, c] == lens.token_id else ''}" for c in range(K))
        hover.append([f"<b>{labels[k]}</b> · {t_html('lens.entropy', bits=decimal(entropy[k], 2))}<br>{top5}"] * K)
        text.append([(f"<b>{plot_piece(lens.top_pieces[k][c], 9)}</b>" if ids[k, c] == lens.token_id
                      else plot_piece(lens.top_pieces[k][c], 9)) for c in range(K)])
    return go.Heatmap(
        z=probs.astype(np.float32), x=[f"#{c + 1}" for c in range(K)], y=labels, text=text, texttemplate="%{text}",
        textfont=dict(size=11), customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorscale=WEIGHT_SCALE, zmin=0.0, zmax=1.0, showscale=False, xgap=1, ygap=1, name=t("lens.top5_name"),
    )


def _lens_line(lens: LensRecord, labels: list[str], chosen: np.ndarray, ranks: np.ndarray) -> go.Scatter:
    """The chosen token's probability at every depth, a filled marker where it is the top prediction."""
    line_hover = [t_html("lens.line_hover", depth=labels[k], token=plot_piece(lens.piece, 24), p=pct(chosen[k]), rank=int(ranks[k]) + 1)
                  for k in range(len(labels))]
    return go.Scatter(
        x=chosen.astype(np.float32), y=labels, xaxis="x2", yaxis="y", mode="lines+markers", name=t("lens.line_name"),
        line=dict(color=NEW_COLOR, width=2), marker=dict(size=6, color=[NEW_COLOR if r == 0 else "white" for r in ranks],
                                                         line=dict(color=NEW_COLOR, width=1.5)),
        customdata=line_hover, hovertemplate="%{customdata}<extra></extra>",
    )


def _lens_marks(lens: LensRecord, ids: np.ndarray, forms: int | None) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations): the chosen token's cells outlined, the row where the prediction forms
    marked across both panels, and the panels' titles."""
    shapes = [dict(type="rect", xref="x", yref="y", x0=float(c) - 0.5, x1=float(c) + 0.5, y0=float(k) - 0.5, y1=float(k) + 0.5,
                   line=dict(color=NEW_COLOR, width=2), fillcolor="rgba(0,0,0,0)", name="chosen")
              for k, c in zip(*np.nonzero(ids == lens.token_id))]
    annotations = []
    if forms is not None:
        shapes.append(dict(type="line", xref="paper", yref="y", x0=0, x1=1, y0=forms - 0.5, y1=forms - 0.5,
                           line=dict(color=NEW_COLOR, width=2, dash="dash"), name="forms"))
        annotations.append(dict(xref="x2 domain", yref="y", x=0.98, y=forms - 0.5, xanchor="right", yanchor="bottom",
                                showarrow=False, text=t_html("lens.forms_here") + " ↓", font=dict(size=11, color=NEW_COLOR), name="forms"))
    annotations += [
        dict(xref="x domain", yref="paper", x=0.5, y=1.0, xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12),
             text=plot_lines(t("lens.top5_title"), 28)),  # (short lines: on a phone the panel is ~200 px wide)
        dict(xref="x2 domain", yref="paper", x=0.5, y=1.0, xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12),
             text=f"p({plot_piece(lens.piece, 12)})"),
    ]
    return shapes, annotations


def logit_lens_figure(lens: LensRecord, n_layers: int | None = None, *, forced: bool = False) -> go.Figure:
    """Left: a table of the top-5 tokens at every depth (rows: embedding, layer 1..L; cells coloured by
    probability; the chosen token in bold and outlined). Right: the chosen token's probability at every depth.
    The row from which the chosen token stays on top is marked ("prediction forms here"). `forced`: the
    step's token was chosen by a person (a branch), not drawn."""
    rows = _check(lens, n_layers)
    labels = row_labels(rows)
    probs = np.asarray(lens.top_probs, np.float64)  # (L+1, K)
    ids = np.asarray(lens.top_ids, np.int64)  # (L+1, K)
    ranks = np.asarray(lens.chosen_ranks, np.int64)  # (L+1,)
    heat = _lens_heatmap(lens, labels, probs, ids, np.asarray(lens.entropy, np.float64))
    line = _lens_line(lens, labels, np.asarray(lens.chosen_probs, np.float64), ranks)
    forms = forms_at(ranks)
    shapes, annotations = _lens_marks(lens, ids, forms)
    if forms is None:
        sub = t_html("lens.ranked_forced" if forced else "lens.ranked_sampled", rank=int(ranks[-1]) + 1)
    else:
        sub = t_html("lens.on_top_from_embedding") if forms == 0 else t_html("lens.on_top_from_block", block=forms - 1)
    # (in short lines: Gradio's plot does not wrap a title, and a phone cuts a long one at both ends)
    title = plot_lines(t("lens.title", step=lens.step), 34) + "".join(f"<br><sup>{line}</sup>" for line in plot_lines(html.unescape(sub), 48).split("<br>"))
    layout = base_layout(
        title, height=max(380, 21 * rows + 195), margin=dict(l=120, r=20, t=110, b=50), shapes=shapes, annotations=annotations,
        showlegend=False,
        xaxis=dict(domain=[0.0, 0.66], side="bottom", title=dict(text=t_html("lens.rank_axis")), fixedrange=True, showgrid=False),
        xaxis2=dict(domain=[0.71, 1.0], anchor="y", range=[0, 1.05], autorange=False, tickformat=".0%",
                    title=dict(text=t_html("dist.axis")), fixedrange=True),
        yaxis=dict(type="category", autorange="reversed", tickfont=dict(size=11), fixedrange=True),
    )
    return go.Figure(data=[heat, line], layout=layout)


def lens_summary_html(lens: LensRecord, *, forced: bool = False) -> str:
    """Where the chosen token became the prediction, in one or two sentences (escaped). `forced`: the
    step's token was chosen by a person (a branch), not drawn."""
    ranks = np.asarray(lens.chosen_ranks, np.int64)
    chosen = np.asarray(lens.chosen_probs, np.float64)
    L = ranks.size - 1
    tok = f"<b>{t_html('common.quote', text=html_piece(lens.piece, 40))}</b>"
    forms, first = forms_at(ranks), first_top(ranks)
    if forms == 0:
        s1 = t_html("lens.top_at_embedding", token=tok)
    elif forms is not None and first == forms:
        s1 = t_html("lens.first_top_last" if forms == L else "lens.first_top", token=tok, depth=depth_label(forms, L))
    elif forms is not None:
        s1 = t_html("lens.for_good_last" if forms == L else "lens.for_good", token=tok, depth=depth_label(forms, L), at=_at(first, L))
    else:
        top = f"<b>{t_html('common.quote', text=html_piece(lens.top_pieces[-1][0], 40))}</b>"
        s1 = t_html("lens.not_top_forced" if forced else "lens.not_top_sampled", token=tok, rank=int(ranks[-1]) + 1, top=top)
        if first is not None:
            s1 = _join(s1, t_html("lens.was_on_top", at=_at(first, L)))
    mid = L // 2
    s2 = (t_html("lens.prob_path", p0=pct(chosen[0]), p_mid=pct(chosen[mid]), depth=depth_label(mid), p_out=pct(chosen[-1])) if 0 < mid < L
          else t_html("lens.prob_path_short", p0=pct(chosen[0]), p_out=pct(chosen[-1])))
    return f"<div class='lens-summary' style='font-size:14px;line-height:1.5'><p style='margin:2px 0'>{_join(s1, s2)}</p></div>"
