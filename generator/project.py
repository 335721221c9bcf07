"""Finding and loading a project's op definitions, and producing every generated file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.dest import cpp as cpp_dest
from generator.dest import docs as docs_dest
from generator.dest import project as project_dest
from generator.dest import python as python_dest
from generator.dest import tests as tests_dest
from generator.errors import DefinitionError, ErrorCollector, Location
from generator.model import OpDef, check_project, onnx_op_index, parse_opdef
from generator.render import GeneratedFile, format_all

DEFINITION_SUFFIXES = (".yaml", ".yml", ".toml")


@dataclass(frozen=True)
class Project:
    root: Path
    opdefs_dir: Path
    output_dir: Path


def display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def discover(project: Project) -> list[Path]:
    if not project.opdefs_dir.is_dir():
        return []
    return sorted(p for p in project.opdefs_dir.iterdir() if p.suffix in DEFINITION_SUFFIXES)


def load(project: Project, paths: list[Path]) -> list[OpDef]:
    """Parses the given definitions (all of them get validated; errors are collected)."""
    errors = ErrorCollector()
    ops = []
    for path in sorted(set(p.resolve() for p in paths)):
        name = display(path, project.root)
        if not path.exists():
            errors.add(DefinitionError(Location(name, 1, 1), "<file>", "no such file"))
            continue
        op = errors.attempt(parse_opdef, path, name)
        if op is not None:
            ops.append(op)
    errors.raise_if_any()
    check_project(ops)
    return ops


def generate(project: Project, selected: list[OpDef], all_ops: list[OpDef]) -> list[GeneratedFile]:
    """Every file for the selected ops, plus the shared files (which depend on all ops)."""
    files: list[GeneratedFile] = []
    index = onnx_op_index(all_ops)
    for op in sorted(selected, key=lambda op: op.op_id):
        files += python_dest.emit(op, index)
        files += cpp_dest.emit(op, project.output_dir)
        files += tests_dest.emit(op, index)
    files += project_dest.emit(all_ops)
    files += docs_dest.emit(all_ops)
    return format_all(files)
