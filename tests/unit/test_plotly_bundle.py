"""The page's Plotly.js (assets/vendor/, built by scripts/plotly_bundle/: what the app's head loads and an exported page
inlines) is of the version the plotly package makes its figures for, and is the small bundle (the full one is 4.8 MB).
That it draws every trace type the figures use: tests/browser/test_plotly_bundle.py."""
from plotly.offline import get_plotlyjs_version

from viz.viewer.page import PLOTLY_JS, plotly_js


def test_the_pages_plotly_js_is_the_plotly_packages_version_in_its_cartesian_bundle():
    js, version = plotly_js()
    assert version == get_plotlyjs_version(), (
        f"{PLOTLY_JS.name} is plotly.js {version}, the plotly package makes figures for {get_plotlyjs_version()}: "
        "build it again: scripts/plotly_bundle/build.js")
    assert js.lstrip().startswith("/**") and "(cartesian and scattergl - minified)" in js[:200]
    assert len(js.encode()) < 2_000_000
    assert (PLOTLY_JS.parent / "plotly.js-LICENSE.txt").read_text(encoding="utf-8").startswith("MIT License")
