"""The state a reader can see: every process-wide object of ui/ (shared by every session, unlike a session's
gr.State) is listed in docs/state.md with what it holds, who writes it, its bound and its lock.

An `ast` scan of ui/*.py finds them: module-level (and class-level) assignments of a mutable object (a dict, list or
set display or comprehension; a call such as dict(), OrderedDict(), WeakValueDictionary(), Lock(), a thread pool; an
instance of a class defined in ui/; a folder made at import, tempfile.mkdtemp), names a function rebinds with
`global`, and functools caches. Each must be named in docs/state.md as `ui.module.NAME`, so a new global cannot slip
in unnoticed; and each name docs/state.md lists must still be there, so the page does not go stale."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "state.md"

MUTABLE_CALLS = {
    "dict", "list", "set", "bytearray", "OrderedDict", "defaultdict", "deque", "Counter", "ChainMap",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "Lock", "RLock", "Event", "Condition", "Semaphore",
    "BoundedSemaphore", "Barrier", "Queue", "SimpleQueue", "LifoQueue", "PriorityQueue", "ThreadPoolExecutor",
    "ProcessPoolExecutor", "APIRouter", "itertools.count", "itertools.cycle", "threading.local",
}
MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
CACHES = {"lru_cache", "cache", "cached_property"}


def _dotted(node: ast.AST) -> str:
    """A called thing's name as written: `threading.Lock` -> "threading.Lock", `Rooms` -> "Rooms"."""
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _name(node: ast.AST) -> str:
    """The last name of a called thing: `threading.Lock` -> "Lock"."""
    return _dotted(node).rpartition(".")[2]


def _mutable(value: ast.AST | None, classes: set[str]) -> bool:
    """Whether `value` makes a mutable object: a dict, list or set; a call to a mutable type or to a class of ui/ (not a
    frozen dataclass); a tuple holding one of those; or a folder made at import (`Path(tempfile.mkdtemp())`)."""
    if value is None:
        return False
    if any(isinstance(n, ast.Call) and _name(n.func) == "mkdtemp" for n in ast.walk(value)):
        return True
    if isinstance(value, MUTABLE_NODES):
        return True
    if isinstance(value, ast.Call):
        return _name(value.func) in MUTABLE_CALLS or _dotted(value.func) in MUTABLE_CALLS or _name(value.func) in classes
    if isinstance(value, ast.Tuple):
        return any(_mutable(e.value if isinstance(e, ast.Starred) else e, classes) for e in value.elts)
    if isinstance(value, ast.IfExp):
        return _mutable(value.body, classes) or _mutable(value.orelse, classes)
    return False


def _targets(node: ast.Assign | ast.AnnAssign) -> list[tuple[str, ast.AST | None]]:
    """(name, its value) for each name an assignment binds; `a, b = x, y` pairs them up."""
    out = []
    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
        if isinstance(t, ast.Name):
            out.append((t.id, node.value))
        elif isinstance(t, (ast.Tuple, ast.List)):
            vals = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) and len(node.value.elts) == len(t.elts) else None
            out += [(e.id, vals[i] if vals else node.value) for i, e in enumerate(t.elts) if isinstance(e, ast.Name)]
    return out


def _frozen(node: ast.ClassDef) -> bool:
    """A `@dataclass(frozen=True)`: its instances cannot be written."""
    return any(isinstance(d, ast.Call) and _name(d.func) == "dataclass"
               and any(k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True for k in d.keywords)
               for d in node.decorator_list)


def ui_classes(folder: Path) -> set[str]:
    """The classes defined in `folder` whose instances can be written (every one but a frozen dataclass)."""
    trees = [ast.parse(p.read_text(encoding="utf-8")) for p in folder.rglob("*.py")]
    return {n.name for tree in trees for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and not _frozen(n)}


def process_wide(path: Path, module: str, classes: set[str]) -> set[str]:
    """'ui.module.NAME' for every process-wide object of one file (see the module's docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            found |= {f"{module}.{name}" for name, value in _targets(node) if _mutable(value, classes)}
        elif isinstance(node, ast.ClassDef):  # a class attribute is shared by every instance (a dataclass field() is not one)
            for item in node.body:
                if isinstance(item, (ast.Assign, ast.AnnAssign)):
                    found |= {f"{module}.{node.name}.{name}" for name, value in _targets(item) if _mutable(value, classes)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Global):
            found |= {f"{module}.{name}" for name in n.names}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = [_name(d.func if isinstance(d, ast.Call) else d) for d in n.decorator_list]
            if CACHES & set(decorators):
                found.add(f"{module}.{n.name}")
    return found


def scan(folder: Path, package: str = "ui") -> set[str]:
    classes = ui_classes(folder)
    found = {name for p in sorted(folder.rglob("*.py"))  # (a subpackage's modules too: ui.rooms.rooms)
             for name in process_wide(p, ".".join((package, *p.relative_to(folder).with_suffix("").parts)), classes)}
    return {name for name in found if not name.rpartition(".")[2].startswith("__")}  # (not __all__: what a module exports)


def listed(doc: str) -> set[str]:
    """Every `ui.module.NAME` (or `ui.module.Class.NAME`, `ui.package.module.NAME`) docs/state.md names in backticks."""
    return set(re.findall(r"`(ui\.\w+\.\w+(?:\.\w+){0,2})`", doc))


def test_the_scanner_finds_each_kind_of_process_wide_object(tmp_path):
    (tmp_path / "a.py").write_text(
        "import itertools, threading, tempfile, weakref\nfrom dataclasses import dataclass\nfrom collections import OrderedDict\nfrom functools import lru_cache\n"
        "from pathlib import Path\n\n"
        "class Store:\n    shared = {}\n    n: int = 0\n\n"
        "A = {}\nB: list = []\nC = OrderedDict()\nD = threading.Lock()\nE = weakref.WeakValueDictionary()\nF = Store()\n"
        "G = Path(tempfile.mkdtemp())\nH, I = 3, set()\nJ = {k: 1 for k in 'ab'}\nK = itertools.count()\nM = (1, Store())\n"
        "@dataclass(frozen=True)\nclass Frozen:\n    a: int = 0\n\n"
        "N = 3\nT = (1, 2)\nS = 'x'\nL = lambda: {}\nX = None\nY = (Frozen(), Frozen())\nZ = tuple(dict.fromkeys('ab'))\n"
        "W = 'abc'.count('a')\n\n"
        "__all__ = ['A']\n\ndef f():\n    global X\n    X = 1\n\n"
        "@lru_cache(maxsize=4)\ndef g(): return 1\n")
    assert scan(tmp_path, "ui") == {f"ui.a.{n}" for n in ("Store.shared", "A", "B", "C", "D", "E", "F", "G", "I", "J", "K", "M", "X", "g")}
    assert listed("| `ui.a.A` | and `ui.a.Store.shared`, not ui.a.B |") == {"ui.a.A", "ui.a.Store.shared"}


def test_the_scan_of_ui_finds_the_known_ones():
    found = scan(ROOT / "ui")
    known = {"ui.model.HOLDER", "ui.model.DRAFTS", "ui.rooms.rooms.ROOMS", "ui.inside.lens_cache.LENS", "ui.generation.RUNS",
             "ui.examples._TRACES", "ui.network.SERVED_ON", "ui.listeners.DOWNLOADS", "ui.viewer_wiring._CACHE"}
    assert known <= found, sorted(known - found)


def test_every_process_wide_object_of_ui_is_listed_in_docs_state_md():
    found, doc = scan(ROOT / "ui"), DOC.read_text(encoding="utf-8")
    missing = sorted(found - listed(doc))
    assert not missing, (f"process-wide objects not in docs/state.md: {missing}. Keep a session's data in gr.State; if it "
                         "must be shared, list it there (what it holds, who writes it, its bound, its lock)")


def test_every_object_docs_state_md_lists_is_still_there():
    """A listed name must still be a module-level (or class-level) name of its module: the page does not go stale."""
    stale = []
    for name in sorted(listed(DOC.read_text(encoding="utf-8"))):
        parts = name.split(".")
        if (ROOT / "ui" / parts[1]).is_dir():  # a subpackage's module: ui.rooms.rooms.ROOMS
            parts = [parts[0], f"{parts[1]}/{parts[2]}", *parts[3:]]
        path = ROOT / "ui" / f"{parts[1]}.py"
        if not path.exists():
            stale.append(name)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = tree.body
        if len(parts) == 4:
            body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == parts[2]), [])
        names = {t for n in body if isinstance(n, (ast.Assign, ast.AnnAssign)) for t, _ in _targets(n)}
        names |= {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if parts[-1] not in names:
            stale.append(name)
    assert not stale, f"docs/state.md lists what is no longer there: {stale}"


def test_the_class_room_page_does_not_import_the_http_api():
    """ROOMS lives beside the Rooms class (ui/rooms/rooms.py): the page's side of a class (ui/class_room.py) needs no HTTP module."""
    tree = ast.parse((ROOT / "ui" / "class_room.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not any(m == "ui.rooms.api" for m in imported), "ui/class_room.py imports ui.rooms.api: take ROOMS from ui.rooms.rooms"
