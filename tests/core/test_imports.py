"""Dependencies point one way: core/ sits below demo/ and train/, and demo/ below nothing but core/.

Checks: every module's own import statements (read with ``ast``, lazy imports inside functions
included); a fresh interpreter importing every core module without gradio or trl appearing; no
import cycle among core modules; no ``demo/<tab>`` package importing another tab's package (shared
figures live beside the tabs, in ``demo/``). openenv-core imports gradio when it loads, so
``core.clarify.serve`` and ``core.clarify.remote`` import it only inside the functions that serve or
connect: the second check keeps them to that.

The module graph counts every import statement, module-level or inside a function, as an edge: a
lazy import hides a cycle from the interpreter's start-up but not from the design. ``from core.x
import y`` is an edge to ``core.x.y`` when ``y`` is a submodule, else to ``core.x`` (its ``__init__``).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "core": ("demo", "train", "bench", "app", "gradio", "gradio_client", "trl"),
    "demo": ("train", "bench", "app"),
}


def module_files(package: str, root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file of every module under ``root/package/``, subpackages included."""
    names = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def modules(package: str) -> list[str]:
    """Dotted names of every module under ``package/``, subpackages included."""
    return list(module_files(package))


def _known(dotted: str, names: dict) -> str | None:
    """The longest prefix of ``dotted`` that is one of ``names`` (None: outside the package)."""
    while dotted and dotted not in names:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _targets(node: ast.AST, name: str, path: Path, names: dict) -> set[str]:
    """The modules of ``names`` that one import statement in module ``name`` loads."""
    if isinstance(node, ast.Import):
        return {_known(alias.name, names) for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:  # relative: from the module's package, up level - 1
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        package = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
        base = ".".join(p for p in (package, base) if p)
    full = (f"{base}.{alias.name}" for alias in node.names)
    return {f if f in names else _known(base, names) for f in full}


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, anywhere in its file."""
    names = module_files(package, root)
    graph = {}
    for name, path in names.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            found |= _targets(node, name, path, names)
        graph[name] = found - {None, name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that returns to its start (``[a, b, a]``), or None."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once every path from it is explored
    for start in sorted(graph):
        if start in state:
            continue
        path, todo = [start], [iter(sorted(graph.get(start, ())))]
        state[start] = "open"
        while todo:
            step = next(todo[-1], None)
            if step is None:
                state[path.pop()] = "done"
                todo.pop()
            elif state.get(step) == "open":
                return path[path.index(step):] + [step]
            elif step not in state:
                state[step] = "open"
                path.append(step)
                todo.append(iter(sorted(graph.get(step, ()))))
    return None


def tab_crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one ``demo/<tab>`` package into another tab's package, as ``a -> b``."""
    tabs = {name.split(".")[1] for name in graph if name.count(".") >= 2}  # demo.<tab>.<module>: a package

    def tab(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in tabs else None
    return [f"{src} -> {dst}" for src in sorted(graph) for dst in sorted(graph[src])
            if tab(src) and tab(dst) and tab(src) != tab(dst)]


def imported(path: Path) -> set[str]:
    """Top-level package names that a file imports, wherever the statement stands."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_every_subpackage_is_walked():
    names = modules("core")
    assert {"core.clarify.environment", "core.runs.eval", "core.live.session", "core.decision.data.rows"} <= set(names)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_layer_above(package):
    bad = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        hits = imported(path) & set(FORBIDDEN[package])
        if hits:
            bad[str(path.relative_to(ROOT))] = sorted(hits)
    assert not bad, f"{package}/ must not import {FORBIDDEN[package]}: {bad}"


def test_core_imports_no_ui_or_trainer():
    code = (
        "import importlib, sys\n"
        f"for m in {modules('core')!r}: importlib.import_module(m)\n"
        "bad = [m for m in ('gradio', 'trl', 'demo', 'train') if m in sys.modules]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    # a fresh interpreter: this test process may already hold gradio from other tests
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


# The cycle finder and the tab check are pure functions of a graph: shown failing on made-up graphs.
@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),                       # a chain
    ({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, None),       # a diamond is no cycle
    ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),                         # two modules importing each other
    ({"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}, ["b", "c", "d", "b"]),  # a loop below the start
    ({"x": set(), "a": {"x", "a"}}, ["a", "a"]),                         # a module importing itself
])
def test_find_cycle_on_made_up_graphs(graph, cycle):
    assert find_cycle(graph) == cycle


def test_a_lazy_import_cycle_in_real_files_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "one.py").write_text("from pkg.sub import two\n")  # a submodule named by from-import
    (pkg / "sub" / "two.py").write_text("def f():\n    from . import three  # a lazy, relative import\n")
    (pkg / "sub" / "three.py").write_text("import pkg.sub.one\n")
    graph = import_graph("pkg", tmp_path)
    assert graph["pkg.sub.one"] == {"pkg.sub.two"} and graph["pkg.sub.two"] == {"pkg.sub.three"}
    assert find_cycle(graph) == ["pkg.sub.one", "pkg.sub.two", "pkg.sub.three", "pkg.sub.one"]
    (pkg / "sub" / "three.py").write_text("import pkg\n")  # the package itself, not a cycle through one
    assert find_cycle(import_graph("pkg", tmp_path)) is None


def test_no_import_cycle_in_core():
    graph = import_graph("core")
    assert {"core.live.endpoint_turns", "core.live.session"} <= graph["core.live.turns"]  # edges are read
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in core/: " + " -> ".join(cycle)


def test_tab_crossings_on_a_made_up_graph():
    graph = {"demo": set(), "demo.plots": set(), "demo.a.handlers": {"demo.plots", "demo.a.layout", "demo.b.plots"},
             "demo.a.layout": set(), "demo.b": set(), "demo.b.plots": set(), "demo.b.layout": {"demo.b"}}
    assert tab_crossings(graph) == ["demo.a.handlers -> demo.b.plots"]
    graph["demo.b.layout"] = {"demo.a"}  # the other tab's package face counts too
    assert tab_crossings(graph) == ["demo.a.handlers -> demo.b.plots", "demo.b.layout -> demo.a"]


def test_no_tab_imports_another_tab():
    graph = import_graph("demo")
    assert "demo.plots" in graph["demo.live.handlers"]  # edges are read
    crossings = tab_crossings(graph)
    assert not crossings, "a demo/ tab imports another tab (share through demo/ instead): " + ", ".join(crossings)
