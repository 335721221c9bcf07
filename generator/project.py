"""Finding and loading a project's op definitions, and producing every generated file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from generator import parallel
from generator.dest import cpp as cpp_dest
from generator.dest import docs as docs_dest
from generator.dest import project as project_dest
from generator.dest import python as python_dest
from generator.dest import tests as tests_dest
from generator.errors import DefinitionError, DefinitionErrors, ErrorCollector, Location
from generator.model import OpDef, check_project, onnx_op_index, parse_opdef
from generator.render import GeneratedFile, format_all, paths_only
from generator.writer import Change, plan_changes, write_changes

DEFINITION_SUFFIXES = (".yaml", ".yml", ".toml")


@dataclass(frozen=True)
class Project:
    root: Path
    opdefs_dir: Path
    output_dir: Path


def display(resolved: Path, resolved_root: Path) -> str:
    """How messages and headers name a definition: relative to the project when inside it."""
    try:
        return resolved.relative_to(resolved_root).as_posix()
    except ValueError:
        return resolved.as_posix()


def discover(project: Project) -> list[Path]:
    """Every definition file in opdefs/ (anything with a definition's suffix: a directory or a
    FIFO named so is reported by the loader, not skipped silently)."""
    if not project.opdefs_dir.is_dir():
        return []
    return sorted(p for p in project.opdefs_dir.iterdir() if p.suffix in DEFINITION_SUFFIXES)


# Parsing one definition takes about 0.8 ms, emitting its files 1.4 ms: below a few dozen ops,
# starting worker processes would cost more than it saves.
_MIN_OPS_PER_WORKER = 16


def _parse_collecting(path_and_name: tuple[Path, str]) -> tuple[OpDef | None, list]:
    """One definition's op, or its errors (returned: they cross a process boundary)."""
    errors = ErrorCollector()
    op = errors.attempt(parse_opdef, *path_and_name)
    return op, errors.errors


def load(project: Project, paths: list[Path]) -> list[OpDef]:
    """Parses the given definitions (all of them get validated; errors are collected)."""
    errors = ErrorCollector()
    found = []
    root = project.root.resolve()
    # Absolute but with symbolic links kept: a link in opdefs/ is the definition it names (its
    # op id, and the name its errors show), whatever it points to. The CLI repeats the selected
    # paths.
    for path in sorted({Path(os.path.abspath(p)) for p in paths}):
        name = display(path, root)
        if os.path.lexists(path):
            found.append((path, name))
        else:
            errors.add(DefinitionError(Location(name, 1, 1), "<file>", "no such file"))
    ops = []
    for op, op_errors in parallel.map_forked(_parse_collecting, found, _MIN_OPS_PER_WORKER):
        errors.errors.extend(op_errors)
        if op is not None:
            ops.append(op)
    errors.raise_if_any()
    check_project(ops)
    return ops


@dataclass(frozen=True)
class Output:
    """What a generation run produced, compared with the output directory."""

    paths: list[str]  # every generated file, relative to the output directory
    changes: list[Change]  # the files that differed from the disk: new or changed


class OutputError(Exception):
    """The output cannot be written where it should go (bad usage, not a bad definition)."""


# Linux's limits (macOS has the same name limit, a smaller path limit): a longer name fails only
# when its file is written, after others were.
NAME_MAX = 255  # bytes in one file or directory name
PATH_MAX = 4096  # bytes in a path, the terminating NUL included
_TEMP_EXTRA = len(".") + len(".4194304.tmp")  # writer._replace's temporary name (largest pid)


def _path_problem(output_dir: str, relative: str) -> str | None:
    """Why the file cannot be written under that name (its temporary name too), or None."""
    for name in relative.split("/"):
        size = len(os.fsencode(name)) + _TEMP_EXTRA
        if size > NAME_MAX:
            return (
                f"its name {name[:40]!r}... would be {size} bytes with the temporary suffix; "
                f"file names have at most {NAME_MAX}"
            )
    size = len(os.fsencode(os.path.join(output_dir, relative))) + _TEMP_EXTRA
    if size >= PATH_MAX:
        return f"its path would be {size} bytes long; paths have fewer than {PATH_MAX}"
    return None


def any_path_problem(project: Project, paths: list[str]) -> bool:
    output_dir = os.path.abspath(project.output_dir)
    return any(_path_problem(output_dir, path) for path in paths)


def check_output_paths(project: Project, selected: list[OpDef], all_ops: list[OpDef]) -> None:
    """Every path the run would write, checked before anything is rendered or written: a name
    too long is the definition's problem (its file name or domain), reported as such; an
    output directory too deep for any file is an OutputError."""
    output_dir = os.path.abspath(project.output_dir)
    errors = ErrorCollector()
    index = onnx_op_index(all_ops)
    with paths_only():
        for op in selected:
            files = (
                python_dest.emit(op, index)
                + cpp_dest.emit(op, project.output_dir)
                + tests_dest.emit(op, index)
                + [docs_dest.emit_op(op)]
            )
            for file in files:
                problem = _path_problem(output_dir, file.path)
                if problem:
                    shown = os.path.join(project.output_dir, file.path)
                    errors.add(op.located("<file name>", f"cannot write {shown}: {problem}"))
                    break
        shared = project_dest.emit(all_ops) + [docs_dest.emit_index(all_ops)]
    for file in shared:
        problem = _path_problem(output_dir, file.path)
        if problem is None:
            continue
        blamed = [op for op in all_ops if op.domain and op.domain_ident in file.path.split("/")]
        if not blamed:
            raise OutputError(f"cannot write {os.path.join(output_dir, file.path)}: {problem}")
        for op in blamed:
            shown = os.path.join(project.output_dir, file.path)
            errors.add(op.located("domain", f"cannot write {shown}: {problem}"))
    if errors.errors:
        # Each op once per problem: ops sharing a domain share its files.
        unique = {(str(e.location), e.field, e.message): e for e in errors.errors}
        raise DefinitionErrors(list(unique.values()))


def generate(
    project: Project, selected: list[OpDef], all_ops: list[OpDef], *, write: bool
) -> Output:
    """Every file for the selected ops, plus the shared files (which depend on all ops),
    compared with the output directory; with `write`, the files that differ are written
    (atomically; untouched files keep their mtime, for make). The definitions were all
    validated by load(), so only a template bug or the disk can fail from here on."""
    index = onnx_op_index(all_ops)
    ops = sorted(selected, key=lambda op: op.op_id)

    def op_files(op: OpDef) -> list[GeneratedFile]:
        return (
            python_dest.emit(op, index)
            + cpp_dest.emit(op, project.output_dir)
            + tests_dest.emit(op, index)
            + [docs_dest.emit_op(op)]
        )

    def settle(files: list[GeneratedFile]) -> Output:
        changes = plan_changes(project.output_dir, files)
        if write:
            write_changes(changes)
            changes = [Change(change.path, change.kind) for change in changes]  # texts not needed
        return Output([f.path for f in files], changes)

    shared = project_dest.emit(all_ops) + [docs_dest.emit_index(all_ops)]
    if parallel.worker_count(len(ops), _MIN_OPS_PER_WORKER) == 1:
        # One format_all for everything: it forks for black's cache misses on its own.
        return settle(format_all([f for op in ops for f in op_files(op)] + shared))

    def settled_in_worker(position: int) -> Output:
        # Each worker renders, formats (cache lookups, or black on a miss), compares and writes
        # its ops' files, so that only paths and changes come back, not every file's text. The
        # ops are inherited through fork: only their positions are sent.
        return settle(format_all(op_files(ops[position])))

    parts = parallel.map_forked(settled_in_worker, range(len(ops)), _MIN_OPS_PER_WORKER)
    parts.append(settle(format_all(shared)))
    return Output(
        [path for part in parts for path in part.paths],
        [change for part in parts for change in part.changes],
    )
