"""The generator's module graph: no module imports another in a cycle.

A cycle works only as long as every module in it happens to be imported in the right order
(render -> cache -> writer -> render did, by luck), and it hides which module a type belongs
to. Imports inside functions count: deferring an import hides a cycle, it does not remove it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "generator"


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package by its dotted name; a package is its __init__.py (so that
    `generator.model` is generator/model.py or generator/model/__init__.py alike)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterable[str]:
    """The dotted names one import statement may mean: `from a import b` is module a.b if there
    is one, else a name in a (both are offered; the caller keeps the modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package (its own name for an __init__.py)
        package = module.split(".") if is_package else module.split(".")[:-1]
        base_parts = package[: len(package) - (node.level - 1)]
        base = ".".join(base_parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(root: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports, anywhere in the file (functions, `if`
    blocks and TYPE_CHECKING included). Importing a.b.c counts as importing a.b.c only, not
    its parent packages: a submodule importing a sibling needs its package in sys.modules,
    which it already is, not finished."""
    modules = module_files(root, package)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = list(_imported(node, module, is_package))
            if isinstance(node, ast.ImportFrom):
                # `from a import b, c`: the submodules named, else a itself (a name defined in it).
                submodules = [name for name in names[1:] if name in modules]
                if submodules:
                    targets.update(submodules)
                    if len(submodules) < len(names) - 1 and names[0] in modules:
                        targets.add(names[0])
                elif names[0] in modules:
                    targets.add(names[0])
                continue
            for name in names:  # `import a.b.c`: the deepest module of the package it names
                parts = name.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                if parts:
                    targets.add(".".join(parts))
        targets.discard(module)  # `from . import x` in x's own package __init__ is not a cycle
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each group of modules that import each other (a strongly
    connected component), as [a, b, ..., a]."""
    found = []
    reported: set[str] = set()
    for start in sorted(graph):
        if start in reported:
            continue
        # Breadth first from start: the shortest path back to it, if any.
        previous: dict[str, str] = {}
        frontier = [start]
        cycle = None
        while frontier and cycle is None:
            following = []
            for module in frontier:
                for target in sorted(graph.get(module, ())):
                    if target == start:
                        path = [module]
                        while path[-1] != start:
                            path.append(previous[path[-1]])
                        cycle = [start, *reversed(path[:-1]), start]
                        break
                    if target not in previous and target in graph:
                        previous[target] = module
                        following.append(target)
                if cycle:
                    break
            frontier = following
        if cycle:
            found.append(cycle)
            reported.update(_component(graph, start))
    return found


def _component(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules reachable from start that reach it back."""

    def reachable(edges: dict[str, set[str]]) -> set[str]:
        seen, stack = {start}, [start]
        while stack:
            for target in edges.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    reverse: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            reverse.setdefault(target, set()).add(module)
    return reachable(graph) & reachable(reverse)


def test_no_module_of_the_generator_imports_another_in_a_cycle():
    graph = import_graph(ROOT)
    # Not vacuous: the graph sees imports at module level and inside functions.
    assert "generator.dest.cpp_kernel" in graph["generator.emitters"]
    assert "generator.project" in graph["generator.cli"]  # imported inside functions
    found = cycles(graph)
    assert not found, "import cycles in generator/:\n" + "\n".join(
        " -> ".join(cycle) for cycle in found
    )


# The checker itself, on small packages written here: the shapes of imports it must resolve.


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "files,expected",
    [
        pytest.param(
            {  # the cycle this test was written for: the last import inside a function
                "generator/__init__.py": "",
                "generator/render.py": "from generator import cache as opgen_cache\n",
                "generator/cache.py": "def write():\n    from generator.writer import f\n",
                "generator/writer.py": "from generator.render import GENERATED_MARK\n",
            },
            ["generator.cache", "generator.writer", "generator.render", "generator.cache"],
            id="function-level import",
        ),
        pytest.param(
            {  # and the other one: `from generator import cli` names the module generator.cli
                "generator/__init__.py": "",
                "generator/cli.py": "def main():\n    from generator import scaffold\n",
                "generator/scaffold.py": "def main():\n    from generator import cli\n",
            },
            ["generator.cli", "generator.scaffold", "generator.cli"],
            id="from package import module",
        ),
        pytest.param(
            {
                "generator/__init__.py": "",
                "generator/api/__init__.py": "",
                "generator/api/onnx.py": "from ..model import OpDef\n",
                "generator/model/__init__.py": "from .ops import OpDef\n",
                "generator/model/ops.py": "import generator.api.onnx\n",
            },
            ["generator.api.onnx", "generator.model", "generator.model.ops", "generator.api.onnx"],
            id="relative imports and a package",
        ),
        pytest.param(
            {
                "generator/__init__.py": "",
                "generator/model/__init__.py": "from generator.model.ops import OpDef\n",
                "generator/model/ops.py": "from . import types\nfrom .types import DType\n",
                "generator/model/types.py": "import enum\nimport generator\n",
            },
            None,
            id="a package importing its own submodules",
        ),
    ],
)
def test_the_cycle_check_resolves_every_kind_of_import(tmp_path, files, expected):
    found = cycles(import_graph(write_package(tmp_path, files)))
    assert found == ([expected] if expected else []), found


def test_every_generated_test_part_has_one_place_in_the_order():
    """A part file nobody placed would never be included; a name without a file would fail
    every generation."""
    from generator.dest.tests import PART_ORDER

    folder = ROOT / "generator" / "templates" / "python" / "test_parity"
    files = {path.name.removesuffix(".py.j2") for path in folder.glob("*.py.j2")}
    assert len(PART_ORDER) == len(set(PART_ORDER)) and set(PART_ORDER) == files
