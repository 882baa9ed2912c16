"""The panel registry (viz.panels) is the one list of panels: the page's keys, the bundle's panels, the
offline page's sections, the app's step viewer and the server's render all come from it."""
import re
from pathlib import Path

from tests.synthetic import make_trace
from viz import page, panels
from viz.viewer import bundle as viewer
from viz.viewer import page as viewer_page
from viz.captions import captions

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_of_panels_derives_from_the_registry():
    assert page.PANEL_KEYS == tuple(p.key for p in panels.PANELS)
    assert page.STEP_FIGURES == {p.key for p in panels.PANELS if p.follows_step}
    assert set(page.HEAVY) == {p.key for p in panels.PANELS if p.heavy}
    assert panels.STEP_IDS == tuple(p.elem_id for p in panels.PANELS if p.follows_step)
    assert all(c.caption in captions() for c in panels.CARDS)
    assert len({c.number for c in panels.CARDS}) == len(panels.CARDS)


def test_the_bundle_the_render_and_the_offline_page_hold_the_same_step_panels():
    trace = make_trace(n_steps=3)
    bundle = viewer.viewer_bundle(trace, layer=1, head=None)
    assert tuple(bundle["panels"]) == panels.STEP_IDS
    out = page.render(trace, step=1, layer=1, head="all", temperature=0.8, top_k=0, top_p=0.9)
    assert tuple(out) == panels.PANEL_KEYS
    for p in panels.STEP_PANELS:
        assert out[p.key].layout.meta["step"] == 1 and bundle["panels"][p.elem_id]["frames"][1]["layout"]["meta"] == {"step": 1}
    html = viewer_page.render_html(trace, bundle=bundle)
    assert re.findall(r'<div id="([a-z-]+)"(?: class="grow\d")?><div class="plot">', html) == list(panels.STEP_IDS)


def test_the_apps_step_viewer_reads_the_registrys_ids_from_the_page_head():
    from ui import viewer_wiring

    assert viewer_wiring.FIVE == panels.STEP_KEYS
    assert f"window.LLMAppPanels = {list(panels.STEP_IDS)!r};".replace("'", '"') in viewer_wiring.head_html()
    js = (ROOT / "assets" / "app_viewer.js").read_text(encoding="utf-8")
    assert "root.LLMAppPanels" in js and "'kv-plot'" not in js
