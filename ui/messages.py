"""An error as the one sentence the page shows (a gr.Warning, a gr.Error, a class room's refusal)."""
from __future__ import annotations


def sentence(e: Exception) -> str:
    """An error's message as a sentence: a capital first letter and a full stop."""
    t = str(e)
    return f"{t[:1].upper()}{t[1:]}" + ("" if t.endswith((".", "!", "?")) else ".")
