"""The tab registry of "Inside the model" (ui/inside/tabs.py) and the page agree, and the open tab is drawn by a lookup
in it (ui/inside/listeners.py: Inside.inside_view): every declared tab is a gr.Tab of the page, in order, with its element id,
title and caption; every declared part a component of its kind in that tab; every compute fills exactly its outputs."""
from __future__ import annotations

import inspect
from pathlib import Path

import gradio as gr
import pytest

from pipeline.trace import files as trace_io
from pipeline.errors import SettingsError
from ui import layout
from ui.inside import tabs as inside_tabs
from ui.inside.listeners import INSIDE, Inside
from ui.inside.tabs import BY_ID, INPUTS, TABS, Tab, TabView, flat
from viz.captions import captions

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"html": gr.HTML, "plot": gr.Plot, "number": gr.Number, "button": gr.Button, "radio": gr.Radio}
NOTHING = gr.skip()


@pytest.fixture(scope="module")
def page():
    with gr.Blocks():
        return layout.layout(None, "status", None)


@pytest.fixture(scope="module")
def example():
    return trace_io.load(str(ROOT / "assets" / "example_trace.json.gz"))


def _values(p) -> dict:
    """The page's first values of every tab's inputs (the side-by-side sampler's fields, the seed, the prices)."""
    return {k: p.C[k].value for k in INPUTS}


def _ancestors(block) -> list:
    out = []
    while block is not None:
        out.append(block)
        block = getattr(block, "parent", None)
    return out


def test_every_declared_tab_is_a_tab_of_the_page_in_order(page):
    assert list(page.tabs) == [t.id for t in TABS]
    first = page.tabs[TABS[0].id].parent
    assert isinstance(first, gr.Tabs) and first.elem_id == "inside-tabs"
    assert [c.elem_id for c in first.children] == [t.elem_id for t in TABS]  # nothing on the page the registry lacks
    for t in TABS:
        tab = page.tabs[t.id]
        assert isinstance(tab, gr.Tab) and (tab.id, tab.elem_id, tab.label) == (t.id, f"tab-{t.id}", t.title)
        caption = tab.children[0]
        assert isinstance(caption, gr.Markdown) and caption.value == layout._caption(t.caption), t.id


def test_every_declared_part_is_a_component_of_its_kind_in_its_tab(page):
    for t in TABS:
        for part in flat(t.parts):
            if part.kind == "caption":
                assert part.key in captions(), (t.id, part.key)
                continue
            comp = page.C[part.key]
            assert type(comp) is KINDS[part.kind] and comp.elem_id == part.elem_id, (t.id, part.key)
            assert page.tabs[t.id] in _ancestors(comp), f"{part.key} is not in the tab {t.id}"
            for name in ("label", "scale", "minimum", "maximum", "precision"):
                if name in part.props:
                    assert getattr(comp, name) == part.props[name], (part.key, name)
        assert t.caption in captions()


def test_the_controls_keep_their_ids_labels_and_values(page):
    """What the browser tests and assets/ select by, and what a person sees first."""
    C = page.C
    assert [C[f"cmp_{x}{n}"].value for n in range(3) for x in "tkp"] == [v for row in inside_tabs.SAMPLING_ROWS for v in row]
    assert (C.cmp_t1.label, C.cmp_k1.label, C.cmp_p1.label) == ("2: temperature", "top-k", "top-p")
    assert C.swap_btn.value == "Swap them and compare attention" and C.swap_i.elem_id == "swap-i"
    assert C.branch_rank.value == 2 and C.branch_pick.elem_id == "branch-pick" and "No branches yet" in C.branches_html.value
    assert C.price_in.value is None and C.price_out.elem_id == "price-out"
    assert C.kvc_btn.elem_id == "kvc-button" and C.cmp_btn.elem_id == "sampling-button"


def test_what_the_wiring_reads_resolves_to_the_page(page):
    ins = Inside(page)
    assert set(ins.inputs) == {"tab", "trace", "step", *INPUTS} and ins.inputs["trace"] is page.state
    assert ins.inputs["seed"] is page.C.seed and ins.inputs["tab"] is page.tab  # an input may live outside the tabs
    assert ins.outputs == [page.C[k] for keys in INSIDE.values() for k in keys]
    assert ins.redraws() == [page.C.cmp_btn.click, page.C.price_in.input, page.C.price_out.input]
    acts = {fn.__name__: (inputs, outputs) for _, fn, inputs, outputs in ins.actions()}
    assert acts["kv_compare_click"] == ({"trace": page.state, "step": page.C.slider}, [page.C.kvc_html, page.C.kvc_plot])
    assert acts["swap_click"] == ({"trace": page.state, "i": page.C.swap_i, "j": page.C.swap_j}, [page.C.swap_plot, page.C.swap_i, page.C.swap_j])
    for a in inside_tabs.ACTIONS:
        assert len(inspect.signature(a.fn).parameters) == len(a.inputs), a.button


def test_every_compute_fills_exactly_its_declared_outputs(page, example):
    values = _values(page)
    for t in TABS:
        if t.compute is None:
            continue
        out = t.compute(TabView(example, 3, {k: values[k] for k in t.inputs}))
        assert set(out) == set(t.outputs), t.id
        drawn = Inside(page).inside_view(t.id, example, 3, **values)
        assert set(drawn) == {page.C[k] for k in t.outputs}, t.id


def test_inside_view_looks_the_tab_up_and_an_unknown_one_draws_nothing(page, example, monkeypatch):
    ins, C = Inside(page), page.C
    for tab in ("nope", None, "", ["lens"], "kvc", "branches"):  # no such tab, or one with no compute
        assert ins.inside_view(tab, example, 3, **_values(page)) == {C.lens_html: NOTHING}, tab
    assert ins.inside_view("bytes", None, 3) == {C.lens_html: NOTHING}  # no trace
    seen = []

    def compute(v: TabView) -> dict:
        seen.append(v)
        return {"bytes_html": "drawn"}

    monkeypatch.setitem(BY_ID, "new", Tab("new", "New", "bytes", compute=compute, outputs=("bytes_html",), inputs=("price_in",)))
    assert ins.inside_view("new", example, 999, price_in=3.0, seed=7) == {C.bytes_html: "drawn"}
    (v,) = seen
    assert v.trace is example and v.s == len(example.steps) - 1 and v.inputs == {"price_in": 3.0}  # only its own inputs


def test_a_refused_input_warns_and_draws_nothing(page, example, monkeypatch):
    warned = []
    monkeypatch.setattr(gr, "Warning", lambda m, *a, **k: warned.append(m))

    def refuse(v):
        raise SettingsError("a column needs a top-k")

    monkeypatch.setitem(BY_ID, "new", Tab("new", "New", "bytes", compute=refuse, outputs=("bytes_html",)))
    assert Inside(page).inside_view("new", example, 0) == {page.C.lens_html: NOTHING}
    assert Inside(page).inside_view("sampling", example, 0, **{**_values(page), "cmp_k1": None}) == {page.C.lens_html: NOTHING}
    assert warned == ["A column needs a top-k.", "Each of the three columns needs a temperature, a top-k and a top-p."]
