"""Plain-language captions for each panel (Markdown), at the level of a good explainer post: the catalogue's
caption.* sentences (locales/en.json, viz.text), by the panel's key. The distribution's two captions (the offline
page's, and the app's, where a click on a bar branches: assets/page.js) share their detail."""
from __future__ import annotations

from viz.text import t

_NAMES = ("intro", "output", "tokens", "embeddings", "attention", "distribution", "distribution_app", "kv", "speculative", "inside",
          "lens", "residual", "contributions", "position", "kv_compare", "accounting", "sampling_compare", "branching", "bytes",
          "context", "tour", "ablate")
_DETAILED = ("distribution", "distribution_app")  # these two end with caption.distribution_detail


def captions(locale: str | None = None) -> dict[str, str]:
    """Every caption by key, in `locale` (None: the language spoken, viz.text.speaking; English where it has none)."""
    detail = t("caption.distribution_detail", locale)
    return {k: t(f"caption.{k}", locale) + (" " + detail if k in _DETAILED else "") for k in _NAMES}

