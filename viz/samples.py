"""What the page shows of N continuations drawn at once (pipeline.samples), in `#samples-result`: pure functions.

    samples_html(s, alone_seconds=1.7)   # the whole view: cost, first-token counts, prefix tree, the N texts

- the cost of the batch in one sentence (with one continuation's time alone when it was measured);
- the first token's frequencies over the N draws beside the distribution it was drawn from (HTML bars: readable on a
  phone, themed by assets/style.css);
- a prefix tree of the continuations' tokens: each node with how many of the N pass through it and the model's
  probability of its tokens there (a run of tokens that every continuation through it shares is one node, its
  probability the run's), the most common path marked, cut at `depth` tokens and `width` branches per node (said so);
- the N texts, each in `.sample-text[data-i]` with a `.sample-open[data-i]` button the page wires to open it as a branch.
Every sentence is the catalogue's (`samples.*`, locales/en.json). The root element carries data-n (how many continuations
are shown), data-step (the step they start at), data-seconds and data-alone (empty when not measured).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from pipeline.trace.samples import Samples
from viz.style import html_piece
from viz.text import decimal, pct, t, t_html

TREE_DEPTH = 16  # tokens of each continuation the tree shows (N = 32, M = 24: the branching is nearly all before)
TREE_WIDTH = 8  # branches shown per node (the rest are counted in one line)
FIRST_ROWS = 10  # rows of the first-token chart: every token drawn, then the most likely others


@dataclass
class Node:
    """A node of the prefix tree: a run of tokens that `count` continuations share (after collapsing)."""

    ids: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)  # each token's probability in the distribution it was drawn from
    members: list[int] = field(default_factory=list)  # the continuations that pass through (indices)
    ended: int = 0  # continuations that end here (their last token is this node's last)
    eos: int = 0  # of those, the ones the model ended (end of sequence), not M
    cut: int = 0  # continuations that go on past the tree's depth from here
    children: list["Node"] = field(default_factory=list)
    main: bool = False  # on the most common path

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def prob(self) -> float:
        """The model's probability of the node's first token there: the choice where this branch leaves the others."""
        return self.probs[0]

    @property
    def run_prob(self) -> float:
        """The probability of the whole run given what comes before it: the product of its tokens'."""
        p = 1.0
        for x in self.probs:
            p *= x
        return p


def _trie(s: Samples, depth: int) -> Node:
    root = Node(members=list(range(s.n)))
    for x in s.samples:
        node = root
        for j, tok in enumerate(x.token_ids[:depth]):
            child = next((c for c in node.children if c.ids[0] == tok), None)
            if child is None:
                child = Node([int(tok)], [x.pieces[j]], [float(x.prob[j])])
                node.children.append(child)
            child.members.append(x.index)
            node = child
        if len(x.token_ids) > depth:
            node.cut += 1
        else:
            node.ended += 1
            node.eos += x.stop_reason == "eos"
    return root


def _collapse(node: Node) -> Node:
    """Join each node with its only child when every continuation through it goes on into that child."""
    while len(node.children) == 1 and node.ended == 0 and node.cut == 0 and node.ids:
        c = node.children[0]
        node.ids += c.ids
        node.pieces += c.pieces
        node.probs += c.probs
        node.ended, node.eos, node.cut, node.children = c.ended, c.eos, c.cut, c.children
    node.children = [_collapse(c) for c in node.children]
    node.children.sort(key=lambda c: (-c.count, -c.probs[0], c.ids[0]))
    return node


def prefix_tree(s: Samples, depth: int = TREE_DEPTH) -> Node:
    """The continuations' prefix tree to `depth` tokens, single-child chains collapsed, branches by count (then
    probability), the most common path marked (`main`). The root holds no token and every continuation."""
    root = _trie(s, depth)
    root.children = [_collapse(c) for c in root.children]
    root.children.sort(key=lambda c: (-c.count, -c.probs[0], c.ids[0]))
    node = root
    while node.children:
        node = node.children[0]  # the most continuations (ties: the more likely)
        node.main = True
    return root


def first_counts(s: Samples) -> list[tuple[int, str, int, float]]:
    """(id, piece, how many of the N drew it first, its probability in the distribution drawn from), by probability:
    every token drawn, then the most likely others, up to FIRST_ROWS rows (more when more distinct tokens were drawn)."""
    drawn: dict[int, int] = {}
    for x in s.samples:
        if x.token_ids:
            drawn[x.token_ids[0]] = drawn.get(x.token_ids[0], 0) + 1
    f = s.first
    rows = [(i, p, drawn.get(i, 0), q) for i, p, q in zip(f.ids, f.pieces, f.probs)]
    keep = [r for r in rows if r[2] > 0]
    keep += [r for r in rows if r[2] == 0 and r[3] > 0][: max(0, FIRST_ROWS - len(keep))]
    keep.sort(key=lambda r: (-r[3], r[0]))
    return [(i, p, c, q) for i, p, c, q in keep]


def _secs(x: float) -> str:
    return decimal(x, 1) if x >= 1 else decimal(x, 2)


def cost_sentence(s: Samples, alone_seconds: float | None = None) -> str:
    """"16 continuations took X s; one alone takes Y s: ..." (Y left out when not measured). Plain text."""
    if alone_seconds is None:
        return t("samples.cost", n=s.n, seconds=_secs(s.seconds))
    return t("samples.cost_alone", n=s.n, seconds=_secs(s.seconds), alone=_secs(alone_seconds))


def _bar_row(piece: str, count: int, n: int, prob: float, tid: int) -> str:
    share = count / n if n else 0.0
    return (f"<div class='samples-frow' data-id='{tid}' data-count='{count}' data-prob='{prob:.6g}'>"
            f"<span class='samples-piece'>{html_piece(piece, 14)}</span>"
            f"<span class='samples-pair'><span class='samples-track'><span class='samples-bar samples-bar-drawn' style='width:{share * 100:.2f}%'>"
            f"</span></span><span class='samples-val'>{t_html('samples.drawn_count', count=count, n=n)}</span></span>"
            f"<span class='samples-pair'><span class='samples-track'><span class='samples-bar samples-bar-model' style='width:{prob * 100:.2f}%'>"
            f"</span></span><span class='samples-val'>{html.escape(pct(prob, None))}</span></span></div>")


def first_html(s: Samples) -> str:
    """The first token's counts over the N draws beside its probability in the distribution they were drawn from."""
    rows = first_counts(s)
    rest = max(0.0, 1.0 - sum(r[3] for r in rows))
    body = "".join(_bar_row(p, c, s.n, q, i) for i, p, c, q in rows)
    if rest > 1e-9:
        body += (f"<div class='samples-frow samples-rest' data-id='' data-count='0' data-prob='{rest:.6g}'>"
                 f"<span class='samples-others'>{html.escape(t('samples.others'))}</span>"
                 f"<span class='samples-pair'><span class='samples-track'><span class='samples-bar samples-bar-model' style='width:{rest * 100:.2f}%'>"
                 f"</span></span><span class='samples-val'>{html.escape(pct(rest, None))}</span></span></div>")
    legend = (f"<p class='samples-legend'><span class='samples-key samples-bar-drawn'></span>{html.escape(t('samples.legend_drawn', n=s.n))} "
              f"<span class='samples-key samples-bar-model'></span>{html.escape(t('samples.legend_model'))}</p>")
    return (f"<section class='samples-first'><h4>{html.escape(t('samples.title_first'))}</h4>{legend}"
            f"<div class='samples-chart'>{body}</div></section>")


def _text_piece(piece: str) -> str:
    """A token's text as it reads in running text (spaces as spaces; a line break, a tab or nothing made visible)."""
    v = piece.replace("\n", "↵").replace("\t", "⇥") if piece else "∅"
    return html.escape(v)


def _node_html(node: Node, n: int, width: int) -> str:
    toks = "".join(f"<span class='samples-tok' data-id='{i}' data-prob='{p:.6g}' title='{html.escape(pct(p, None))}'>{_text_piece(pc)}</span>"
                   for i, pc, p in zip(node.ids, node.pieces, node.probs))
    tip = t("samples.node_title", count=node.count, n=n, prob=pct(node.prob, None), run=pct(node.run_prob, None))
    tail = f"<span class='samples-end'>{html.escape(t('samples.ended'))}</span>" if node.eos and not node.children else ""
    tail += "<span class='samples-cont'>…</span>" if node.cut or node.ended > node.eos else ""  # (M reached: it would go on)
    head = (f"<span class='samples-run' title='{html.escape(tip)}'>{toks}</span>{tail} "
            f"<span class='samples-count'>{t_html('samples.node_count', count=node.count, n=n)}</span> "
            f"<span class='samples-prob'>{html.escape(pct(node.prob, None))}</span>")
    cls = "samples-node samples-main" if node.main else "samples-node"
    return f"<li class='{cls}' data-count='{node.count}' data-prob='{node.prob:.6g}'>{head}{_children_html(node, n, width)}</li>"


def _children_html(node: Node, n: int, width: int) -> str:
    if not node.children:
        return ""
    items = "".join(_node_html(c, n, width) for c in node.children[:width])
    more = node.children[width:]
    if more:
        k, c = len(more), sum(x.count for x in more)
        items += f"<li class='samples-more' data-count='{c}'>{html.escape(t('samples.more', k=k, count=c, n=n))}</li>"
    return f"<ul>{items}</ul>"


def tree_html(s: Samples, *, depth: int = TREE_DEPTH, width: int = TREE_WIDTH) -> str:
    root = prefix_tree(s, depth)
    notes = [t("samples.tree_main")]
    if any(len(x.token_ids) > depth for x in s.samples):
        notes.append(t("samples.tree_depth", depth=depth))
    if _widest(root) > width:
        notes.append(t("samples.tree_width", width=width))
    body = _children_html(root, s.n, width).replace("<ul>", "<ul class='samples-tree'>", 1)
    return (f"<section class='samples-tree-box'><h4>{html.escape(t('samples.title_tree'))}</h4>"
            f"<p class='samples-note'>{html.escape(' '.join(notes))}</p>{body}</section>")


def _widest(node: Node) -> int:
    return max([len(node.children)] + [_widest(c) for c in node.children])


def texts_html(s: Samples) -> str:
    items = []
    for x in s.samples:
        text = html.escape(x.text) if x.text else f"<i>{html.escape(t('samples.empty'))}</i>"
        end = f" <span class='samples-end'>{html.escape(t('samples.ended'))}</span>" if x.stop_reason == "eos" else ""
        items.append(f"<li class='sample-row' data-i='{x.index}'><span class='sample-text' data-i='{x.index}'>{text}</span>{end} "
                     f"<button type='button' class='sample-open' data-i='{x.index}'>{html.escape(t('samples.open'))}</button></li>")
    return (f"<section class='samples-texts'><h4>{html.escape(t('samples.title_texts', n=s.n))}</h4>"
            f"<ol class='samples-list'>{''.join(items)}</ol></section>")


def samples_html(s: Samples, *, alone_seconds: float | None = None, depth: int = TREE_DEPTH, width: int = TREE_WIDTH) -> str:
    """The whole view for `#samples-result`."""
    alone = "" if alone_seconds is None else f"{alone_seconds:.6g}"
    same = t("samples.greedy") if s.settings.temperature == 0 else ""
    intro = f"<p class='samples-cost'>{html.escape(cost_sentence(s, alone_seconds))}</p>"
    if same:
        intro += f"<p class='samples-note'>{html.escape(same)}</p>"
    return (f"<div class='samples-result' data-n='{s.n}' data-step='{s.start_step}' data-seconds='{s.seconds:.6g}' data-alone='{alone}'>"
            f"{intro}<div class='samples-cols'>{first_html(s)}{tree_html(s, depth=depth, width=width)}</div>{texts_html(s)}</div>")


__all__ = ["FIRST_ROWS", "Node", "TREE_DEPTH", "TREE_WIDTH", "cost_sentence", "first_counts", "first_html", "prefix_tree", "samples_html",
           "texts_html", "tree_html"]
