"""Imports point down the layers of hippo_rep._layers, without cycles or private names.

Every ``import`` / ``from ... import`` statement of every module is read with ``ast``, at module
top and inside functions alike, and resolved to the hippo_rep module it names: ``from pkg
import name`` is an import of ``pkg.name`` when that is a module, else of ``pkg``; relative
imports are resolved against the importing module. The checker is first tested on a small
synthetic package holding each kind of fault.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import hippo_rep
from hippo_rep._layers import LAYERS

PACKAGE_DIR = Path(hippo_rep.__file__).parent
LAYOUT_PAGE = PACKAGE_DIR.parent / "docs" / "guide" / "layout.md"


@dataclass(frozen=True)
class Import:
    """One imported module (``target``) of ``module``, at ``line``, and the names taken."""

    module: str
    target: str
    line: int
    in_function: bool
    names: tuple[str, ...]


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(package_dir: Path) -> list[Import]:
    """Every import of a module of the package by a module of the package."""
    package = package_dir.name
    files = module_files(package_dir)
    found = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        found += _imports(tree, module, is_package, package, files, False)
    return found


def _imports(node, module, is_package, package, files, in_function) -> list[Import]:
    out = []
    for child in ast.iter_child_nodes(node):
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
        if isinstance(child, ast.Import):
            out += [Import(module, a.name, child.lineno, in_function, ())
                    for a in child.names if _inside(a.name, package)]
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - (child.level - 1)]
                source = ".".join(base + ([child.module] if child.module else []))
            else:
                source = child.module or ""
            if _inside(source, package):
                for a in child.names:
                    sub = f"{source}.{a.name}"
                    target = sub if sub in files else source
                    out.append(Import(module, target, child.lineno, in_function, (a.name,)))
        out += _imports(child, module, is_package, package, files, inner)
    return out


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def component(module: str, layers) -> tuple[int, str]:
    """(layer index, entry) of the longest entry of ``layers`` that ``module`` falls under."""
    best = None
    for i, layer in enumerate(layers):
        for entry in layer:
            if _inside(module, entry) and (best is None or len(entry) > len(best[1])):
                best = (i, entry)
    if best is None:
        raise LookupError(module)
    return best


def unplaced(package_dir: Path, layers) -> list[str]:
    """Modules of the package that no layer holds."""
    out = []
    for module in module_files(package_dir):
        try:
            component(module, layers)
        except LookupError:
            out.append(module)
    return out


def upward_imports(imports: list[Import], layers) -> list[str]:
    """Each import of a higher layer's module, as 'a (layer i) imports b (layer j), line n'."""
    out = []
    for imp in imports:
        (low, _), (high, _) = component(imp.module, layers), component(imp.target, layers)
        if high > low:
            where = " in a function" if imp.in_function else ""
            out.append(f"{imp.module} (layer {low}) imports {imp.target} (layer {high}), "
                       f"line {imp.line}{where}")
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of a graph: its strongly connected components of two or more nodes
    (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def module_cycles(imports: list[Import]) -> list[list[str]]:
    """Cycles between modules."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if imp.target != imp.module:
            edges.setdefault(imp.module, set()).add(imp.target)
    return cycles(edges)


def component_cycles(imports: list[Import], layers) -> list[list[str]]:
    """Cycles between the entries of the layers (packages and top-level modules), e.g. two
    packages whose modules import each other's without a module-level cycle."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        a, b = component(imp.module, layers)[1], component(imp.target, layers)[1]
        if a != b:
            edges.setdefault(a, set()).add(b)
    return cycles(edges)


def private_imports(imports: list[Import], layers) -> list[str]:
    """Each ``_``-prefixed name taken from another entry of the layers (its internals)."""
    out = []
    for imp in imports:
        if component(imp.module, layers)[1] == component(imp.target, layers)[1]:
            continue
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        private += [p for p in imp.target.split(".") if p.startswith("_")
                    and not p.startswith("__") and p != "_layers"]
        if private:
            out.append(f"{imp.module} imports {', '.join(private)} from {imp.target}, "
                       f"line {imp.line}")
    return out


# ------------------------------------------------------------------- the checker itself
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


TOY_LAYERS = (("pkg", "pkg.base"), ("pkg.sub", "pkg.side"), ("pkg.top",))


def test_checker_finds_upward_imports_cycles_and_private_names(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "base.py": "import os\n\n\ndef late():\n    from pkg.top import run\n    return run\n",
        "sub/__init__.py": "",
        "sub/_impl.py": "z = 1\n",
        "sub/a.py": "from . import b\nfrom pkg.side.x import Y\n",
        "sub/b.py": "def g():\n    from .a import Y\n    return Y\n",  # a <-> b, in a function
        "side/__init__.py": "",
        "side/x.py": "Y = 1\n",
        "side/y.py": "from pkg.sub.b import g\nfrom pkg.sub._impl import z\n",  # side <-> sub
        "top.py": "from pkg.sub import _hidden\n\n\ndef run():\n    return _hidden\n",
    })
    imports = imports_of(root)
    assert unplaced(root, TOY_LAYERS) == []
    assert unplaced(root, (("pkg.sub",),)) == ["pkg", "pkg.base", "pkg.side", "pkg.side.x",
                                               "pkg.side.y", "pkg.top"]
    assert upward_imports(imports, TOY_LAYERS) == [
        "pkg.base (layer 0) imports pkg.top (layer 2), line 5 in a function"]
    assert module_cycles(imports) == [["pkg.sub.a", "pkg.sub.b"]]
    # sub.a imports side.x and side.y imports sub.b: no module imports back, the packages do
    assert component_cycles(imports, TOY_LAYERS) == [["pkg.side", "pkg.sub"]]
    assert private_imports(imports, TOY_LAYERS) == [
        "pkg.side.y imports _impl from pkg.sub._impl, line 2",
        "pkg.top imports _hidden from pkg.sub, line 1"]
    # the same package laid out with top lowest: top's imports of sub now point up
    flipped = (("pkg", "pkg.top"), ("pkg.sub", "pkg.side"), ("pkg.base",))
    assert upward_imports(imports, flipped) == [
        "pkg.top (layer 0) imports pkg.sub (layer 1), line 1"]


def test_checker_passes_a_clean_package_and_resolves_relative_imports(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "base.py": "X = 1\n",
        "sub/__init__.py": "from .a import f\n",
        "sub/a.py": "from ..base import X\nfrom . import b\n\ndef f():\n    return X\n",
        "sub/b.py": "import pkg.base\n",
        "top.py": "from pkg.sub import f\nfrom pkg import base\n",
    })
    imports = imports_of(root)
    targets = {(i.module, i.target) for i in imports}
    assert targets == {("pkg.sub", "pkg.sub.a"), ("pkg.sub.a", "pkg.base"),
                       ("pkg.sub.a", "pkg.sub.b"), ("pkg.sub.b", "pkg.base"),
                       ("pkg.top", "pkg.sub"), ("pkg.top", "pkg.base")}
    assert upward_imports(imports, TOY_LAYERS) == []
    assert module_cycles(imports) == component_cycles(imports, TOY_LAYERS) == []
    assert private_imports(imports, TOY_LAYERS) == []


# ------------------------------------------------------------------------- hippo_rep
@pytest.fixture(scope="module")
def package_imports():
    return imports_of(PACKAGE_DIR)


def test_every_module_has_a_layer():
    assert unplaced(PACKAGE_DIR, LAYERS) == [], "add these modules to hippo_rep/_layers.py"
    entries = [e for layer in LAYERS for e in layer]
    assert len(entries) == len(set(entries))
    files = module_files(PACKAGE_DIR)
    assert [e for e in entries if e not in files] == []  # no stale entry


def test_no_import_points_up(package_imports):
    assert upward_imports(package_imports, LAYERS) == []


def test_no_import_cycles(package_imports):
    assert module_cycles(package_imports) == []
    assert component_cycles(package_imports, LAYERS) == []


def test_no_private_names_across_packages(package_imports):
    assert private_imports(package_imports, LAYERS) == []


def test_no_private_names_across_analysis_modules(package_imports):
    """Inside hippo_rep.analysis no module takes another's private name: what its modules
    share is public (the numpy core, hippo_rep.analysis.core, and each module's API)."""
    inside = "hippo_rep.analysis"
    found = [f"{i.module} imports {n} from {i.target}, line {i.line}" for i in package_imports
             if _inside(i.module, inside) and _inside(i.target, inside) and i.target != i.module
             for n in i.names if n.startswith("_") and not n.startswith("__")]
    assert found == []


def test_layout_page_diagram_shows_the_layers():
    """The "Module layers" block of docs/guide/layout.md lists the layers top (cli) to
    bottom, one line each, entries without the ``hippo_rep.`` prefix separated by `` · ``."""
    text = LAYOUT_PAGE.read_text()
    block = re.search(r"## Module layers\n.*?```\n(.*?)```", text, re.S)
    assert block, "docs/guide/layout.md has no '## Module layers' section with a code block"
    shown = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    shown = [line for line in shown if line and set(line) != {"↑"}]

    def name(entry):
        return "(root)" if entry == "hippo_rep" else entry.removeprefix("hippo_rep.")

    expected = [" · ".join(name(e) for e in layer if e != "hippo_rep._layers")
                for layer in reversed(LAYERS)]
    assert shown == expected
