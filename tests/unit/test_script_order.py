"""The page's scripts in an order where none calls another's module before it is there. Gradio runs the head's
script files in turn, but builds the page meanwhile, so a script's observer or timer may run before the next
script has: branch_ask.js, once before text.js, named its keyboard button with `root.LLMText.t` while the
words were not loaded yet, an error on a busy machine as the page opened (a CI run failed on it)."""
import re

from ui.viewer_wiring import PLOTLY_JS, SCRIPTS

DEFINES = re.compile(r"\b(?:root|window)\.(LLM\w+)\s*=(?!=)")
USES = re.compile(r"\b(?:root|window)\.(LLM\w+)\b(?!\s*=(?!=))")


def _scripts():
    return [(p.name, p.read_text(encoding="utf-8")) for p in SCRIPTS if p != PLOTLY_JS]


def _defined_by():
    out = {}
    for name, code in _scripts():
        for m in DEFINES.finditer(code):
            out.setdefault(m.group(1), name)
    return out


def _guarded(code: str, module: str) -> bool:
    """Every use of the module looks first whether it is there (`root.M && root.M...`, `root.M?.`)."""
    uses = [m.start() for m in re.finditer(rf"\b(?:root|window)\.{module}\b(?!\s*=(?!=))", code)]
    checks = {m.start() for m in re.finditer(rf"\b(?:root|window)\.{module}(?:\s*&&|\?\.)", code)}
    return all(u in checks or any(0 < u - c < 80 for c in checks) for u in uses)


def test_plotly_then_the_words_first():
    assert SCRIPTS[0] == PLOTLY_JS and SCRIPTS[1].name == "text.js"


def test_every_module_is_there_before_a_script_that_uses_it_unguarded():
    order = [name for name, _ in _scripts()]
    defined_by = _defined_by()
    assert {"LLMText", "LLMViewer", "LLMApp"} <= set(defined_by)  # (the pattern still finds the page's modules)
    late = []
    for i, (name, code) in enumerate(_scripts()):
        for module in sorted(set(USES.findall(code))):
            where = defined_by.get(module)
            if where and where != name and order.index(where) > i and not _guarded(code, module):
                late.append(f"{name} uses {module} of the later {where}")
    assert late == []


def test_the_check_finds_an_unguarded_use():
    assert not _guarded("const a = root.LLMApp.state;", "LLMApp")
    assert _guarded("const a = root.LLMApp && root.LLMApp.state;", "LLMApp")
    assert _guarded("const a = root.LLMApp?.state;", "LLMApp")
