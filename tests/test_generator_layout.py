"""The generator stays readable: no module of generator/ (its runtime included) over 1,000
lines, no function over 100, and dependencies that run one way.

The layers, bottom up: model/ (the model: it imports none of the layers above it); parse/,
shapes/ and api/ (reading definitions, the shape rule, each target's spellings); dest/ (the
emitters every target shares, and the views of the shared files and parity tests); targets/
(one module per runtime target, reading what dest/ computes); emitters.py (the one registry,
which hands each target's contributions, such as its parity test pieces, to dest/ as data);
then the modules that run the generator (project, cli, build, config, scaffold, ...). No
module of model/, parse/, shapes/, api/ or dest/ imports targets/, emitters.py or a module
that runs the generator, and model/ imports nothing from parse/, shapes/, api/ or dest/.
Imports inside functions count, as in test_architecture.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_architecture import import_graph, write_package

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "generator"

MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 100

# What runs the generator: the commands and what only they use.
RUNNERS = (
    "generator.project",
    "generator.cli",
    "generator.build",
    "generator.config",
    "generator.scaffold",
    "generator.importer",
    "generator.ops_wheel",
    "generator.run_ops",
)
ABOVE_THE_EMITTERS = ("generator.targets", "generator.emitters", *RUNNERS)
# Each lower layer, and the layers above it that it may not import.
FORBIDDEN = {
    "generator.model": (
        "generator.parse",
        "generator.shapes",
        "generator.api",
        "generator.dest",
        *ABOVE_THE_EMITTERS,
    ),
    "generator.parse": ABOVE_THE_EMITTERS,
    "generator.shapes": ABOVE_THE_EMITTERS,
    "generator.api": ABOVE_THE_EMITTERS,
    "generator.dest": ABOVE_THE_EMITTERS,
}


def _sources() -> list[Path]:
    return sorted(p for p in GENERATOR.rglob("*.py") if "__pycache__" not in p.parts)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_no_module_is_over_1000_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these along their seams: {long}"


def _function_lengths(path: Path) -> dict[str, int]:
    """Each function's lines, its decorators included (nested ones by their dotted name)."""
    lengths = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                assert child.end_lineno is not None
                lengths[name] = child.end_lineno - first + 1
            elif isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
            visit(child, f"{name}." if name != prefix else prefix)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return lengths


def test_no_function_is_over_100_lines():
    long = {
        f"{path.relative_to(ROOT)}: {name}": lines
        for path in _sources()
        for name, lines in _function_lengths(path).items()
        if lines > MAX_FUNCTION_LINES
    }
    assert not long, f"split these into one function per concept: {long}"


def test_function_lengths_count_decorators_and_nested_functions(tmp_path):
    """The measure itself: a decorated function from its first decorator, a nested one and a
    method by their dotted names."""
    path = tmp_path / "module.py"
    path.write_text(
        "@decorator\n"
        "def outer():\n"
        "    def inner():\n"
        "        pass\n"
        "    return inner\n"
        "class Class:\n"
        "    def method(self):\n"
        "        return 1\n"
    )
    assert _function_lengths(path) == {"outer": 5, "outer.inner": 2, "Class.method": 2}


def _upward_imports(graph: dict[str, set[str]], lower: str) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _within(module, lower)
        for target in targets
        if any(_within(target, above) for above in FORBIDDEN[lower])
    )


@pytest.mark.parametrize("lower", sorted(FORBIDDEN))
def test_dependencies_run_one_way(lower):
    wrong = _upward_imports(import_graph(ROOT), lower)
    assert not wrong, f"{lower} sits below these (see this module's docstring): {wrong}"


def test_the_layering_check_sees_an_import_inside_a_function(tmp_path):
    """A target imported lazily by dest/ is an upward dependency all the same."""
    root = write_package(
        tmp_path,
        {
            "generator/__init__.py": "",
            "generator/dest/__init__.py": "",
            "generator/dest/tests.py": "def pieces():\n    from generator.targets import cuda\n",
            "generator/targets/__init__.py": "",
            "generator/targets/cuda.py": "from generator.dest import tests\n",
        },
    )
    graph = import_graph(root)
    assert _upward_imports(graph, "generator.dest") == [
        "generator.dest.tests imports generator.targets.cuda"
    ]
    assert _upward_imports(graph, "generator.model") == []
