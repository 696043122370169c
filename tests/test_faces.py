"""Package faces stay true: every package under core/ and demo/ names each of its direct modules.

The rule: each direct submodule (``name.py``) and subpackage (``name/`` with an ``__init__.py``)
of a package is named in the package's ``__all__``, or in its docstring in double backquotes, as
``name`` (a subpackage also as ``name/``), the way the faces already read. A folder without
``__init__.py`` (data) is no module.
The packages are found by walking the tree, so a package added or moved is covered without an edit.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WALKED = ("core", "demo")


def packages() -> list[Path]:
    """Every package folder under the walked trees, the roots included."""
    return sorted(init.parent for top in WALKED for init in (ROOT / top).rglob("__init__.py"))


def members(package: Path) -> list[str]:
    """The direct submodules and subpackages of a package folder."""
    return sorted({p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
                  | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()})


def face(package: Path) -> tuple[str, set[str]]:
    """The package's docstring and its ``__all__`` (read with ast: a face is not imported to be read)."""
    tree = ast.parse((package / "__init__.py").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            names = {elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)}
    return ast.get_docstring(tree) or "", names


def unnamed(package: Path) -> list[str]:
    """The members a package's face does not name."""
    doc, names = face(package)
    subpackages = {m for m in members(package) if (package / m / "__init__.py").is_file()}
    return [m for m in members(package) if m not in names and f"``{m}``" not in doc
            and not (m in subpackages and f"``{m}/``" in doc)]


def test_the_walk_finds_the_packages():
    found = {p.relative_to(ROOT).as_posix() for p in packages()}
    assert {"core", "core/clarify", "core/live", "core/runs", "core/decision/data", "demo", "demo/live"} <= found
    assert "core/clarify/data" not in found  # a data folder, not a package


def test_unnamed_catches_a_missing_name(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "__init__.py").write_text('"""Uses ``one``, ``sub/`` and ``five/``; two is not quoted."""\n'
                                          '__all__ = ["three"]\n')
    for name in ("one.py", "two.py", "three.py", "five.py", "sub/__init__.py"):
        (tmp_path / name).write_text("")
    assert unnamed(tmp_path) == ["five", "two"]  # ``five/`` names a folder, and five is a module


@pytest.mark.parametrize("package", packages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_package_face_names_its_modules(package):
    doc, _ = face(package)
    assert doc, f"{package.relative_to(ROOT)}/__init__.py has no docstring"
    missing = unnamed(package)
    assert not missing, (f"{package.relative_to(ROOT)}/__init__.py names neither in __all__ nor as ``name`` "
                         f"in its docstring: {', '.join(missing)}")
