"""The shape of the code: data flows one way (pipeline -> records -> viz -> ui)."""
from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pipeline
import viz

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_viz_never_imports_torch():
    names = [m.name for m in pkgutil.iter_modules(viz.__path__)]
    assert len(names) >= 15  # every panel module, so the check below covers them
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module('viz.' + n)\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    assert _fresh(code) == "[]"


def _pipeline_imports() -> dict[str, set[str]]:
    """module -> the pipeline modules it imports (top level or inside functions)."""
    graph = {}
    for m in pkgutil.iter_modules(pipeline.__path__):
        tree = ast.parse((ROOT / "pipeline" / f"{m.name}.py").read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipeline."):
                deps.add(node.module.split(".")[1])
        graph[m.name] = deps - {m.name}
    return graph


def _top_level_imports(name: str) -> set[str]:
    tree = ast.parse((ROOT / "pipeline" / f"{name}.py").read_text())
    return {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}


def test_no_import_cycle_at_module_level():
    graph = {m: _top_level_imports(m) for m in _pipeline_imports()}

    def visit(m, path):
        assert m not in path, f"import cycle: {' -> '.join(path + [m])}"
        for d in graph.get(m, ()):
            visit(d, path + [m])

    for m in graph:
        visit(m, [])


def test_leaf_modules_import_only_leaves():
    g = _pipeline_imports()
    # the trace file (trace_io) reads records, never the reverse; the record modules are leaves
    assert g["records"] <= {"errors", "sampling", "records_inside", "records_speculative"}, g["records"]
    assert g["records_inside"] == set() and g["records_speculative"] == set()
    assert g["sampling"] <= {"errors"}, g["sampling"]
    assert g["errors"] == set()
    assert g["arch"] <= {"records"}, g["arch"]
    assert "loading" not in g["capture"] and "capture" not in _top_level_imports("loading")


def test_one_project_error_type():
    from pipeline import errors

    for name in ("SettingsError", "SpeculativeError", "ModelLoadError", "TraceFormatError"):
        assert issubclass(getattr(errors, name), errors.PipelineError)
    # no module defines its own error class outside errors.py
    for m in pkgutil.iter_modules(pipeline.__path__):
        if m.name == "errors":
            continue
        tree = ast.parse((ROOT / "pipeline" / f"{m.name}.py").read_text())
        own = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Error")]
        assert not own, f"pipeline/{m.name}.py defines {own}: put project errors in pipeline/errors.py"
