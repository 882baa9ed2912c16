"""No label written out where the page is laid out: every label, button text, placeholder, info text, choice label and
title of the components made by ui/layout.py, ui/inside/tabs.py (the Inside tabs' declarations) and ui/links.py (the
Copy link row) comes from the text catalogue (locales/en.json, read with viz.text.t), so that the page's words live
in one place (docs/architecture.md, "How to add a sentence").

An AST scan: a component's `label=`, `placeholder=` and `info=` (a keyword, or a key of a declared part's props), the
first argument of the components whose first argument is their text (gr.Button, gr.Markdown, gr.Tab, ...), each
choice of a Radio or Dropdown (a plain string, or a (label, value) pair's label), a Tab's title and a declared
field's label (ui/inside/tabs.py: Tab, _number, _button) and the constants that hold labels (DOWNLOAD, ...) may not
be a string literal holding a letter, nor an f-string or a sum with such a literal part. Markup-free symbols ("# ",
" · ") are no words: they may stay. A choice's value may be a literal (the code compares it: links.MODES, "all")."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = ("ui/layout.py", "ui/inside/tabs.py", "ui/links.py")
TEXT_KEYWORDS = {"label", "placeholder", "info"}
# components whose first positional argument is the text they show
TEXT_FIRST = {"gr.Button", "gr.Markdown", "gr.Tab", "gr.TabItem", "gr.Accordion", "gr.UploadButton", "gr.DownloadButton",
              "gr.ClearButton"}
CHOICES = {"gr.Radio", "gr.Dropdown", "gr.CheckboxGroup"}
# ui/inside/tabs.py's declarations: the positional argument that is a tab's title or a field's label (0-based)
DECLARED = {"Tab": 1, "_number": 2, "_button": 2}
CONSTANTS = {"DOWNLOAD", "DOWNLOAD_PAGE", "GUESS_LABEL"}  # ui/layout.py's labels, read by the listeners
# (file, call, literal): the only literal words allowed. The hidden download button's value names no visible text: it
# is the file input Download clicks (ui/layout.py _hidden, class hidden-input)
EXCEPTIONS = {("ui/layout.py", "gr.DownloadButton", "file")}


def _words(node: ast.AST) -> list[str]:
    """The literal words in an expression a component shows: a string constant holding a letter, the literal parts
    of an f-string or of a sum of strings holding one (a call, a name, a subscript: none, they are looked up)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if any(c.isalpha() for c in node.value) else []
    if isinstance(node, ast.JoinedStr):
        return [w for v in node.values for w in _words(v)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _words(node.left) + _words(node.right)
    if isinstance(node, ast.IfExp):
        return _words(node.body) + _words(node.orelse)
    return []


def _choice_words(node: ast.AST) -> list[str]:
    """The literal words among a Radio's or a Dropdown's choices: a plain string choice, or a pair's label."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _choice_words(node.left) + _choice_words(node.right)
    if not isinstance(node, (ast.List, ast.Tuple)):
        return []
    out = []
    for e in node.elts:
        out += _words(e.elts[0]) if isinstance(e, ast.Tuple) and e.elts else _words(e)
    return out


def literal_labels(rel: str, src: str) -> list[tuple[int, str, str]]:
    """(line, what, the literal) of every label written out in `src` (the file `rel`)."""
    found = []
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in CONSTANTS for t in node.targets):
            found += [(node.lineno, ast.unparse(node.targets[0]), w) for w in _words(node.value)]
        elif isinstance(node, ast.Dict):  # a declared part's props: {"label": ...}
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value in TEXT_KEYWORDS:
                    found += [(node.lineno, f"{k.value!r}:", w) for w in _words(v)]
        elif isinstance(node, ast.Call):
            f = ast.unparse(node.func)
            for kw in node.keywords:
                if kw.arg in TEXT_KEYWORDS:
                    found += [(node.lineno, f"{f}({kw.arg}=)", w) for w in _words(kw.value)]
                elif kw.arg == "choices" and f in CHOICES:
                    found += [(node.lineno, f"{f}(choices=)", w) for w in _choice_words(kw.value)]
            if f in TEXT_FIRST and node.args:
                found += [(node.lineno, f, w) for w in _words(node.args[0]) if (rel, f, w) not in EXCEPTIONS]
            if f in CHOICES and node.args:
                found += [(node.lineno, f"{f}(choices)", w) for w in _choice_words(node.args[0])]
            if f in DECLARED and len(node.args) > DECLARED[f]:
                found += [(node.lineno, f, w) for w in _words(node.args[DECLARED[f]])]
    return found


def test_the_page_layout_writes_no_label_of_its_own():
    found = {rel: literal_labels(rel, (ROOT / rel).read_text(encoding="utf-8")) for rel in FILES}
    found = {rel: hits for rel, hits in found.items() if hits}
    assert not found, f"labels written out, not read from locales/en.json (viz.text.t): {found}"


def test_the_exceptions_are_still_there():
    """An exception no longer needed is taken out of EXCEPTIONS (the list only shrinks)."""
    for rel, f, word in EXCEPTIONS:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.Call) and ast.unparse(n.func) == f and n.args and isinstance(n.args[0], ast.Constant)
                   and n.args[0].value == word for n in ast.walk(tree)), (rel, f, word)


def test_the_scan_sees_every_way_a_label_is_written():
    src = '''
DOWNLOAD = "Download trace"
a = gr.Button("Generate", elem_id="generate")
b = gr.Slider(0, 2, label="Temperature", info=f"{x} of it")
c = gr.Radio(["Chat", ("Raw text", "raw")], value="Chat", label=t("label.mode"))
d = gr.Dropdown(choices=[(t("choice.head.all"), "all")] + ["every"], label=t("label.head"))
e = gr.Markdown("# " + t("title.page") + " · " + "more words")
f = Tab("lens", "Logit lens", "lens")
g = _number("k", "k", t("label.k")), _button("b", "b", "Press", scale=2)
h = Part("radio", "p", "p", {"choices": [], "label": "Show branch"})
i = gr.Textbox(placeholder="Type" if x else t("placeholder.y"), value="Why is the sky blue?")
j = gr.HTML("", elem_id="room-head")
'''
    got = [w for _, _, w in literal_labels("x.py", src)]
    assert sorted(got) == sorted(["Download trace", "Generate", "Temperature", " of it", "Chat", "Raw text", "every", "more words",
                                  "Logit lens", "Press", "Show branch", "Type"])
