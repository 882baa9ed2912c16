"""The shape of the code: data flows one way (pipeline -> viz -> ui), no import cycles, small
modules and functions (the Python and the browser's JavaScript), and the scripts stand apart from the tests."""
from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import viz

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "viz", "ui")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# Known exceptions to the rules below, each to be fixed in its own change. An entry that no longer
# needs its exception fails the test, so these lists only shrink: empty them, never grow them.
# (viz/tour.py tour_stages, viz/kv.py kv_timing_figure_dict, viz/inside/lens.py logit_lens_figure and the
# viz/viewer <-> viz/viewer_attention cycle were listed here; they are fixed, so the lists are empty.)
LONG_MODULES: set[str] = set()  # "viz/x.py"
LONG_FUNCTIONS: set[str] = set()  # "viz/x.py:function"
IMPORT_CYCLES: set[frozenset[str]] = set()
LONG_JS_FILES: set[str] = set()  # "assets/x.js"
# (assets/page.js and assets/links.js were one anonymous function each, of 110 and 215 lines: split by action)
LONG_JS_FUNCTIONS: set[str] = set()  # "assets/x.js:name" (no @line)
# (scripts/trace_size.py was listed here for the /1 writer; that writer now lives in scripts/.)
SCRIPTS_IMPORTING_TESTS: set[str] = set()


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_viz_never_imports_torch():
    names = [m.name for m in pkgutil.walk_packages(viz.__path__, "viz.")]  # (its subpackages' modules too)
    assert len(names) >= 35 and "viz.viewer.bundle" in names  # every panel module, so the check below covers them
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    assert _fresh(code) == "[]"


# -- imports -----------------------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    """'pipeline.trace.records' -> its file, for every module of the three packages ('pipeline': __init__)."""
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):  # (a subpackage's too: ui/rooms/)
            parts = p.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if p.stem == "__init__" else parts)] = p
    return out


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of ours that `name` ('pipeline.trace.records.Trace', 'viz') names, or None (not ours)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(pkg: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {m for a in node.names if (m := _owner(a.name))}
    base = (f"{pkg}.{node.module}" if node.module else pkg) if node.level else (node.module or "")
    # `from pipeline import records`: the module records; `from pipeline.trace.records import Trace`: pipeline.trace.records
    return {m for a in node.names if (m := _owner(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base))}


def _imports(name: str, top_level_only: bool = False) -> set[str]:
    """The modules of ours that module `name` imports: anywhere in it (inside functions too), or at
    its top level only."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _imported(name.split(".")[0], node)
    return found - {name}


GRAPH = {m: _imports(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a list of modules."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_is_read():
    assert {"pipeline.trace.records", "pipeline.errors"} <= GRAPH["pipeline.trace.files"]
    assert "pipeline.trace.records" in GRAPH["viz.page"] and "viz.page" in GRAPH["ui.views"]
    assert "pipeline.inside.analyses" in GRAPH["ui.inside.lens_cache"]  # imported inside functions: counted too
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_counting_imports_inside_functions():
    found = {frozenset(c) for c in _cycles(GRAPH)}
    assert found <= IMPORT_CYCLES, f"import cycles: {[sorted(c) for c in found - IMPORT_CYCLES]}"
    assert IMPORT_CYCLES <= found, f"fixed, take them off IMPORT_CYCLES: {[sorted(c) for c in IMPORT_CYCLES - found]}"


def test_data_flows_one_way_pipeline_viz_ui():
    for m, deps in GRAPH.items():
        layer = m.split(".")[0]
        below = {"pipeline": (), "viz": ("pipeline",), "ui": ("pipeline", "viz")}[layer]
        wrong = sorted(d for d in deps if d.split(".")[0] not in (layer, *below))
        assert not wrong, f"{m} imports {wrong}: pipeline imports neither viz nor ui, and viz does not import ui"


def test_leaf_modules_import_only_leaves():
    def g(name):
        return {d.split(".", 1)[1] for d in GRAPH[f"pipeline.{name}"]}

    # the trace file (trace.files) reads records, never the reverse; the record modules are leaves
    assert g("trace.records") <= {"errors", "sampling.stages", "trace.inside", "trace.speculative"}, g("trace.records")
    assert g("trace.inside") == set() and g("trace.speculative") == set()
    assert g("sampling.stages") <= {"errors"} and g("errors") == set() and g("indices") == set()
    assert g("arch") <= {"trace.records"}, g("arch")
    assert "loading" not in g("capture") and "pipeline.capture" not in _imports("pipeline.loading", top_level_only=True)


def test_no_script_imports_the_tests():
    for p in sorted((ROOT / "scripts").glob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level]
        uses = any(n == "tests" or n.startswith("tests.") for n in names)
        rel = p.relative_to(ROOT).as_posix()
        assert uses == (rel in SCRIPTS_IMPORTING_TESTS), (
            f"{rel} imports tests/: share it through scripts/ instead (scripts/browser_kit.py)" if uses
            else f"{rel} no longer imports tests/: take it off SCRIPTS_IMPORTING_TESTS")


# -- sizes -------------------------------------------------------------------------------------


def sizes() -> tuple[dict[str, int], dict[str, int]]:
    """(lines of every module, lines of every function: 'pkg/mod.py:name', def line to last line)."""
    modules, functions = {}, {}
    for p in MODULES.values():
        rel, text = p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")
        modules[rel] = len(text.splitlines())
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{rel}:{n.name}"
                functions[key] = max(functions.get(key, 0), n.end_lineno - n.lineno + 1)
    return modules, functions


def test_no_module_over_400_lines_and_no_function_over_60():
    modules, functions = sizes()
    long_m = {k for k, v in modules.items() if v > MAX_MODULE_LINES}
    long_f = {k for k, v in functions.items() if v > MAX_FUNCTION_LINES}
    assert long_m <= LONG_MODULES, f"over {MAX_MODULE_LINES} lines: {sorted((k, modules[k]) for k in long_m - LONG_MODULES)}; split by concept"
    assert long_f <= LONG_FUNCTIONS, f"over {MAX_FUNCTION_LINES} lines: {sorted((k, functions[k]) for k in long_f - LONG_FUNCTIONS)}"
    assert LONG_MODULES <= long_m and LONG_FUNCTIONS <= long_f, (
        f"fixed, take them off the lists: {sorted((LONG_MODULES - long_m) | (LONG_FUNCTIONS - long_f))}")


# -- the browser's code (assets/*.js), by the same limits -----------------------------------------
#
# JavaScript has no ast module here, so a small scanner blanks comments, strings, template-literal
# text and regex literals (keeping newlines, and the code inside `${...}`), and a function's extent
# is found by matching brackets on what is left: from the line that names it to the line of its
# closing brace (or, for an arrow with an expression body, the end of that expression).
# Counted: function declarations and expressions (`function name(`, `function (`), arrows assigned
# to a name (`const name = (...) =>`), and every anonymous function at the file's top level (inside no
# brace or bracket: a file that is one `(text, ...values) => { ... }` snippet, a `(function () { ... })()`
# IIFE), named '<top-level>'. Not counted: anonymous arrow callbacks inside a function or the module
# scope (`.forEach((e) => {`), and the module wrapper `(function (root) { ... })(window)` that each
# viewer file is wrapped in: that is the file's module scope, not a function, and the file's own limit
# covers it. Exactly that outermost wrapper is exempt (an anonymous `function` of one parameter that
# opens the file's code, whose closing brace is the file's last, called with the global object:
# `window` or `globalThis`), nothing nested in it.

_JS_FUNCTION = re.compile(
    r"\bfunction\b\s*\*?\s*(?P<fn>[A-Za-z_$][\w$]*)?\s*\("  # function name( / function (
    r"|\b(?:const|let|var)\s+(?P<arrow>[A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?(?=(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*=>)")
_REGEX_AFTER = set("(,=:[!&|?{};>+-*%~^<") | {""}


def _js_code(text: str) -> str:
    """`text` with comments, string and template text and regex literals blanked (newlines kept)."""
    out, i, n = list(text), 0, len(text)
    stack = []  # one entry per open `${`: the brace depth inside it, to find its `}`

    def blank(a, b):
        for j in range(a, b):
            if out[j] != "\n":
                out[j] = " "

    def template(i):  # i: just after a backtick or a `}` closing `${`; returns where the code goes on
        j = i
        while j < n and text[j] != "`" and not text.startswith("${", j):
            j += 2 if text[j] == "\\" else 1
        blank(i, min(j, n))
        if j < n and text[j] == "`":
            return j + 1
        stack.append(0)
        return j + 2

    prev = ""  # the last significant code character
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i, prev = j + 1, c
        elif c == "`":
            i, prev = template(i + 1), "`"
        elif c == "/" and (prev in _REGEX_AFTER or re.search(r"\breturn\s*$", text[max(0, i - 8):i])):
            j, in_class = i + 1, False
            while j < n and text[j] != "\n" and (in_class or text[j] != "/"):
                in_class = (in_class or text[j] == "[") and text[j] != "]"
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i, prev = j + 1, "/"
        elif stack and c in "{}":
            if c == "{":
                stack[-1] += 1
            elif stack[-1] == 0:  # the `}` that closes `${`: back into the template's text
                stack.pop()
                i = template(i + 1)
                prev = "`"
                continue
            else:
                stack[-1] -= 1
            i, prev = i + 1, c
        else:
            if not c.isspace():
                prev = c
            i += 1
    return "".join(out)


def _closing(code: str, i: int) -> int:
    """The index of the bracket that closes the one at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] in "([{":
            depth += 1
        elif code[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced bracket at {i}")


def _js_function_end(code: str, m: re.Match) -> int:
    """Where the function that `m` found ends: its body's closing brace, or the end of an arrow's
    expression body (its `;` or `,`, or the bracket that encloses it)."""
    if m.group("arrow") is None:
        i = _closing(code, m.end() - 1) + 1  # past the parameters (which may hold `{`: destructuring)
    else:
        i = m.end()
        if code[i] == "(":
            i = _closing(code, i) + 1
        i = code.index("=>", i) + 2
    while code[i].isspace():
        i += 1
    if code[i] == "{":
        return _closing(code, i)
    j = i
    while j < len(code) and code[j] not in ";,)]}":
        j = _closing(code, j) + 1 if code[j] in "([{" else j + 1
    return j - 1


def _top_level(code: str) -> list[bool]:
    """For each index of `code`: whether it is inside no brace or bracket (parentheses aside): the file's own scope."""
    out, opened = [], []
    for c in code:
        if c in "([{":
            opened.append(c)
        elif c in ")]}" and opened:
            opened.pop()
        out.append(all(o == "(" for o in opened))
    return out


def _module_wrapper(code: str, m: re.Match, end: int) -> bool:
    """Whether the anonymous `function` that `m` found is the file's module wrapper: `(function (root) { ... })(window)`,
    opening the file's code, closing at its last brace, of one parameter, called with the global object."""
    first_code = len(code) - len(code.lstrip())
    params = code[m.end():_closing(code, m.end() - 1)].strip()
    call = re.fullmatch(r"\s*\)\s*\((?P<args>[^;]*)\)\s*;?\s*", code[end + 1:])
    return (m.group("fn") is None and end == code.rfind("}") and code[first_code] == "("
            and code[first_code + 1:m.start()].strip() == "" and re.fullmatch(r"[A-Za-z_$][\w$]*", params) is not None
            and call is not None and re.search(r"\b(?:window|globalThis)\b", call["args"]) is not None)


def _top_level_arrows(code: str, top: list[bool]):
    """(start, end) of every anonymous arrow function at the file's top level (one assigned to a name is counted by name)."""
    for a in re.finditer(r"=>", code):
        if not top[a.start()]:
            continue
        i = a.start() - 1
        while i >= 0 and code[i].isspace():
            i -= 1
        if i >= 0 and code[i] == ")":
            depth, j = 0, i
            for j in range(i, -1, -1):
                depth += code[j] == ")"
                depth -= code[j] == "("
                if depth == 0:
                    break
            start = j
        else:
            start = i
            while start > 0 and re.match(r"[\w$]", code[start - 1]):
                start -= 1
        before = code[:start].rstrip()
        before = before[:-5].rstrip() if before.endswith("async") else before
        if re.search(r"\b(?:const|let|var)\s+[A-Za-z_$][\w$]*\s*=$", before):
            continue
        k = a.end()
        while k < len(code) and code[k].isspace():
            k += 1
        if k < len(code) and code[k] == "{":
            yield start, _closing(code, k)
        else:
            j = k
            while j < len(code) and code[j] not in ";,)]}":
                j = _closing(code, j) + 1 if code[j] in "([{" else j + 1
            yield start, j - 1


def js_function_sizes(path: Path) -> dict[str, int]:
    """'name@line' -> lines, for every counted function of one JS file (the module wrapper exempt); an anonymous
    function at the file's top level is '<top-level>@line'."""
    code = _js_code(path.read_text(encoding="utf-8"))
    top = _top_level(code)
    out = {}

    def count(name: str, start: int, end: int):
        line = code.count("\n", 0, start) + 1
        out[f"{name}@{line}"] = code.count("\n", start, end) + 1

    for m in _JS_FUNCTION.finditer(code):
        end = _js_function_end(code, m)
        name = m.group("fn") or m.group("arrow")
        if name is None and _module_wrapper(code, m, end):
            continue
        count(name or ("<top-level>" if top[m.start()] else "<anonymous>"), m.start(), end)
    for start, end in _top_level_arrows(code, top):
        count("<top-level>", start, end)
    return out


def js_sizes(folder: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(lines of every assets/*.js file, lines of every counted function: 'assets/x.js:name@line')."""
    files, functions = {}, {}
    for p in sorted(folder.glob("*.js")):
        rel = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.name
        files[rel] = len(p.read_text(encoding="utf-8").splitlines())
        functions |= {f"{rel}:{k}": v for k, v in js_function_sizes(p).items()}
    return files, functions


def test_the_js_scanner_measures_functions_by_their_braces(tmp_path):
    body = "\n".join(f"    x += {i}; // }}" for i in range(58))  # 58 lines, each with a brace in a comment
    src = (
        "/* a header with a } and `backtick */\n"
        "(function (root) {\n"
        "  'use strict';\n"
        f"  function sixty(a, {{ b, c }}) {{\n{body}\n  }}\n"  # 60 lines, with destructured parameters
        "  const s = '}' + \"{\" + `${'}'} and ${ { a: 1 }.a } }`;\n"
        "  const re = (t) => /[}{]/.test(t);\n"
        f"  const arrow = async (x) => {{\n{body}\n  x++;\n  }};\n"  # 61 lines
        "  root.f = function () { return 1; };\n"
        "})(window);\n")
    (tmp_path / "a.js").write_text(src)
    assert js_function_sizes(tmp_path / "a.js") == {"sixty@4": 60, "re@65": 1, "arrow@66": 61, "<anonymous>@127": 1}
    (tmp_path / "b.js").write_text("(text) => {\n  function g() {\n  }\n};\n")  # a gr js= snippet: an anonymous arrow
    assert js_function_sizes(tmp_path / "b.js") == {"<top-level>@1": 4, "g@2": 2}


def test_the_js_scanner_counts_a_files_top_level_anonymous_functions(tmp_path):
    """A file that is one anonymous function (a gr js= snippet, an IIFE) is measured as a function; the module wrapper
    of one parameter called with the global object is the file's scope and is not; a named arrow keeps its name."""
    body = "\n".join(f"  x += {i};" for i in range(3))
    cases = {
        "(text, ...values) => {\n" + body + "\n}\n": {"<top-level>@1": 5},
        "async (a) => {\n" + body + "\n};\n": {"<top-level>@1": 5},
        "x => x + 1;\n": {"<top-level>@1": 1},
        "(function () {\n" + body + "\n})();\n": {"<top-level>@1": 5},
        "(function (root) {\n" + body + "\n})();\n": {"<top-level>@1": 5},  # not called with the global object
        "(function (root) {\n" + body + "\n})(document);\n": {"<top-level>@1": 5},
        "(function (root) {\n  'use strict';\n  const f = (e) => {\n  };\n})(typeof window !== 'undefined' ? window : globalThis);\n": {"f@3": 2},
        "(function (root) {\n  root.on('x', () => {\n  });\n})(window);\n": {},  # a callback in the module scope
        "const f = () => {\n" + body + "\n};\nf();\n": {"f@1": 5},
        "document.addEventListener('x', (e) => {\n" + body + "\n});\n": {"<top-level>@1": 5},
    }
    for i, (src, want) in enumerate(cases.items()):
        (tmp_path / f"c{i}.js").write_text(src)
        assert js_function_sizes(tmp_path / f"c{i}.js") == want, src


def test_no_js_file_over_400_lines_and_no_js_function_over_60():
    files, functions = js_sizes(ROOT / "assets")
    assert len(files) >= 8 and len(functions) >= 50  # every viewer file, so the check below covers them
    long_m = {k for k, v in files.items() if v > MAX_MODULE_LINES}
    long_f = {k.rpartition("@")[0] for k, v in functions.items() if v > MAX_FUNCTION_LINES}  # (by name: lines move)
    assert long_m <= LONG_JS_FILES, f"over {MAX_MODULE_LINES} lines: {sorted((k, files[k]) for k in long_m - LONG_JS_FILES)}; split by concept"
    assert long_f <= LONG_JS_FUNCTIONS, f"over {MAX_FUNCTION_LINES} lines: {sorted(long_f - LONG_JS_FUNCTIONS)}"
    assert LONG_JS_FILES <= long_m and LONG_JS_FUNCTIONS <= long_f, (
        f"fixed, take them off the lists: {sorted((LONG_JS_FILES - long_m) | (LONG_JS_FUNCTIONS - long_f))}")


def test_one_project_error_type():
    from pipeline import errors

    for name in ("SettingsError", "SpeculativeError", "ModelLoadError", "TraceFormatError"):
        assert issubclass(getattr(errors, name), errors.PipelineError)
    # no module defines its own error class outside errors.py
    for path in sorted((ROOT / "pipeline").rglob("*.py")):  # (its subpackages' too)
        if path.name == "errors.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Error")]
        assert not own, f"{path.relative_to(ROOT)} defines {own}: put project errors in pipeline/errors.py"


if __name__ == "__main__":  # the sizes, largest first: python -m tests.unit.test_structure
    mods, funcs = sizes()
    js_files, js_funcs = js_sizes(ROOT / "assets")
    mods, funcs = mods | js_files, funcs | js_funcs
    for k, v in sorted(mods.items(), key=lambda kv: -kv[1])[:10]:
        print(f"{v:5d}  {k}")
    for k, v in sorted(funcs.items(), key=lambda kv: -kv[1])[:10]:
        print(f"{v:5d}  {k}")


# every folder of code: the three packages and their subpackages (pipeline/trace, ui/rooms, ...)
FOLDERS = sorted(p.parent.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py"))


def test_the_architecture_file_map_names_every_module():
    """docs/architecture.md's file map names every module of pipeline/, viz/ and ui/ in its folder's block, and every
    script and style sheet of assets/ in theirs: a contributor finds each file there. A name counts as listed where a
    list puts it (at the block's start, after a comma, a parenthesis, a colon, "and", "with"...), not as a word of the
    prose: ui/page.py is not listed by "the page's scripts"."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    files = doc[doc.index("## The files"):doc.index("## One request")]
    blocks: dict[str, str] = {}
    folder = None
    for line in files.splitlines():
        m = re.match(r"^((?:pipeline|viz|ui)(?:/\w+)?|assets|tests)/\s", line)
        if m:
            folder, line = m.group(1), line[len(m.group(0)):]
            blocks[folder] = ""
        if folder:
            blocks[folder] += line + "\n"

    def listed(folder: str, name: str) -> bool:
        return re.search(r"(?:^|[.,(;:+]|\band|\bwith|\bfrom|\bbeside)\s*" + re.escape(name) + r"\b", blocks[folder], re.M) is not None

    missing = [f"{d}/{p.name}" for d in FOLDERS for p in sorted((ROOT / d).glob("*.py"))
               if p.stem != "__init__" and (d not in blocks or not listed(d, p.stem))]
    missing += [f"assets/{p.name}" for p in sorted((ROOT / "assets").iterdir()) if p.suffix in (".js", ".css") and not listed("assets", p.name)]
    assert not missing, f"docs/architecture.md's file map does not list, in its folder's block: {missing}"




def test_the_class_rooms_import_no_gradio():
    """ui/rooms/ (the class rooms' server: its state, store, HTTP API and front, scores, filter, results) can be served
    and tested without the page: importing every module of it loads no gradio (issue 48)."""
    mods = [f"ui.rooms.{p.stem}" for p in sorted((ROOT / "ui" / "rooms").glob("*.py")) if p.stem != "__init__"]
    code = f"import importlib, sys\nfor m in {mods!r}: importlib.import_module(m)\nprint(sorted(k for k in sys.modules if k.split('.')[0] == 'gradio'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
    assert len(mods) >= 9 and out.strip() == "[]", out


def test_each_folder_of_code_holds_25_modules_at_most_and_no_run_of_a_prefix():
    """A folder shows its parts (issue 48): 25 modules at most in each folder of code, and no four of them sharing the
    first word of their names (records_inside, records_samples, ... belong in a folder of their own)."""
    big, runs = {}, {}
    for d in FOLDERS:
        stems = [p.stem for p in (ROOT / d).glob("*.py") if not p.stem.startswith("__")]
        if len(stems) > 25:
            big[d] = len(stems)
        words: dict[str, list[str]] = {}
        for s in stems:
            words.setdefault(s.split("_")[0], []).append(s)
        runs |= {f"{d}/{w}_*": sorted(v) for w, v in words.items() if len(v) >= 4}
    assert len(FOLDERS) >= 10 and big == {} and runs == {}, (big, runs)


GRADIO_EVENTS = {"click", "change", "submit", "input", "select", "release", "upload", "tick", "unload", "expand", "collapse",
                 "then", "success", "focus", "blur", "key_up", "stop_recording"}


def _events_attached(tree: ast.AST) -> list[str]:
    """The calls in a module that attach a listener to a Gradio event: `X.click(...)` and the rest, `demo.load(...)`,
    `gr.on(...)` and ui/bridge.py's `bridge.listen(...)`."""
    found = []
    for node in ast.walk(tree):
        f = getattr(node, "func", None) if isinstance(node, ast.Call) else None
        if not isinstance(f, ast.Attribute):
            continue
        who = f.value.id if isinstance(f.value, ast.Name) else ""
        if f.attr in GRADIO_EVENTS or (f.attr == "load" and who == "demo") or (who, f.attr) in {("gr", "on"), ("bridge", "listen")}:
            found.append(f"{who or '…'}.{f.attr}@{node.lineno}")
    return found


def test_every_event_of_the_page_is_wired_in_one_home():
    """One place a newcomer looks for "what runs when": ui/wiring.py attaches every listener to its event (issue 48);
    the modules it reads give it listeners and triggers (ui/inside's actions, ui/links.py's listeners, ui/language.py's
    relabelling), and ui/views.py's Call is the helper it attaches them with."""
    homes = {"ui/wiring.py", "ui/views.py"}
    elsewhere = {}
    for path in sorted((ROOT / "ui").rglob("*.py")) + [ROOT / "app.py"]:
        rel = path.relative_to(ROOT).as_posix()  # (ui/rooms/ imports no gradio, a test above holds: its `submit`s are a pool's)
        if rel not in homes and not rel.startswith("ui/rooms/") and (got := _events_attached(ast.parse(path.read_text(encoding="utf-8")))):
            elsewhere[rel] = got
    assert _events_attached(ast.parse((ROOT / "ui" / "wiring.py").read_text(encoding="utf-8")))  # (the scan finds them)
    assert elsewhere == {}, f"listeners attached outside ui/wiring.py: {elsewhere}"
