"""Finding and loading a project's op definitions, and producing every generated file."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar

from generator import emitters, parallel
from generator.dest.emission import Emission
from generator.errors import DefinitionError, DefinitionErrors, ErrorCollector, Location
from generator.exit_codes import EXIT_BAD_INPUT
from generator.generated_file import GeneratedFile
from generator.model.op import OpDef, TorchApi
from generator.model.package import GeneratedPackage
from generator.parse.op import parse_opdef
from generator.parse.project import check_project, onnx_op_index
from generator.render import FormatError, format_all
from generator.writer import TEMPORARY_EXTRA, Change, folder_conflicts, plan_changes, write_changes

DEFINITION_SUFFIXES = (".yaml", ".yml", ".toml")

Params = ParamSpec("Params")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Project:
    root: Path  # generated files name definitions relative to it
    opdefs_dir: Path
    output_dir: Path
    package: GeneratedPackage = GeneratedPackage()
    kernel_torch_api: TorchApi = TorchApi.native  # for definitions with a kernel that name none

    @classmethod
    def of(
        cls,
        opdefs_dir: Path,
        output_dir: Path,
        package: GeneratedPackage | None = None,
        kernel_torch_api: TorchApi = TorchApi.native,
    ) -> Project:
        """The project whose definitions are in `opdefs_dir`: its root is that directory's
        parent, whatever the working directory, so that the output is the same bytes from
        anywhere (`opdefs/inverse.yaml` in every header)."""
        root = opdefs_dir.resolve().parent
        return cls(root, opdefs_dir, output_dir, package or GeneratedPackage(), kernel_torch_api)


def display(resolved: Path, resolved_root: Path) -> str:
    """A definition's name relative to a directory when inside it (else absolute): to the
    project root in generated files, to the working directory in messages."""
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


def _parse_collecting(
    path_and_names: tuple[Path, str, str, TorchApi],
) -> tuple[OpDef | None, list[DefinitionError]]:
    """One definition's op, or its errors (returned: they cross a process boundary)."""
    errors = ErrorCollector()
    try:
        op = errors.attempt(parse_opdef, *path_and_names)
    except Exception as exc:  # noqa: BLE001 - a bug in opgen: said so, in the usual format
        op = None
        errors.add(
            DefinitionError(
                Location(path_and_names[1], 1, 1),
                "<file>",
                f"internal error in opgen while loading this definition: "
                f"{type(exc).__name__}: {exc}; this is a bug in opgen, please report it",
            )
        )
    return op, errors.errors


def load(project: Project, paths: list[Path], messages_from: Path | None = None) -> list[OpDef]:
    """Parses the given definitions (all of them get validated; errors are collected). Errors
    name files relative to `messages_from` (the command line's working directory, so that they
    can be opened from there), by default to the project root, as generated files do."""
    errors = ErrorCollector()
    found = []
    root = project.root.resolve()
    shown_from = root if messages_from is None else messages_from.resolve()
    # Absolute but with symbolic links kept: a link in opdefs/ is the definition it names (its
    # op id, and the name its errors show), whatever it points to. The CLI repeats the selected
    # paths.
    for path in sorted({Path(os.path.abspath(p)) for p in paths}):
        name = display(path, shown_from)
        if os.path.lexists(path):
            found.append((path, name, display(path, root), project.kernel_torch_api))
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


class OwnershipError(Exception):
    """Files would be written where something opgen does not own is: a user's file, link or
    folder. opgen replaces only its own files (see writer), so nothing is written."""

    def __init__(self, conflicts: list[Change]):
        self.conflicts = conflicts
        super().__init__("; ".join(f"{c.path} {c.not_ours}" for c in conflicts))

    def report(self) -> int:
        """One error line per path in the way, then what to do; the exit code."""
        for conflict in self.conflicts:
            print(f"error: {conflict.path} {conflict.not_ours}", file=sys.stderr)
        print(
            f"{len(self.conflicts)} path(s) in the way of generated files; opgen replaces only "
            "files it generated: move them, or give the package another folder (package-dir); "
            "nothing written",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT


# Linux's limits (macOS has the same name limit, a smaller path limit): a longer name fails only
# when its file is written, after others were.
NAME_MAX = 255  # bytes in one file or directory name
PATH_MAX = 4096  # bytes in a path, the terminating NUL included


def _path_problem(output_dir: str, relative: str) -> str | None:
    """Why the file cannot be written under that name (its temporary name too), or None."""
    for name in relative.split("/"):
        size = len(os.fsencode(name)) + TEMPORARY_EXTRA
        if size > NAME_MAX:
            return (
                f"its name {name[:40]!r}... would be {size} bytes with the temporary suffix; "
                f"file names have at most {NAME_MAX}"
            )
    size = len(os.fsencode(os.path.join(output_dir, relative))) + TEMPORARY_EXTRA
    if size >= PATH_MAX:
        return f"its path would be {size} bytes long; paths have fewer than {PATH_MAX}"
    return None


def _check_paths(
    project: Project, produced: list[tuple[OpDef | None, list[str]]], all_ops: list[OpDef]
) -> None:
    """Every path the run would write (by its producer: an op, or None for the shared files),
    checked before anything is written: a name too long is the definition's problem (its file
    name or domain), reported as such; an output directory too deep for any file is an
    OutputError."""
    output_dir = os.path.abspath(project.output_dir)
    errors = ErrorCollector()
    shared: list[str] = []
    for op, paths in produced:
        if op is None:
            shared += paths
            continue
        for path in paths:
            problem = _path_problem(output_dir, path)
            if problem:
                shown = os.path.join(project.output_dir, path)
                errors.add(op.located("<file name>", f"cannot write {shown}: {problem}"))
                break
    for path in shared:
        problem = _path_problem(output_dir, path)
        if problem is None:
            continue
        blamed = [op for op in all_ops if op.domain and op.domain_ident in path.split("/")]
        if not blamed:
            raise OutputError(f"cannot write {os.path.join(output_dir, path)}: {problem}")
        for op in blamed:
            shown = os.path.join(project.output_dir, path)
            errors.add(op.located("domain", f"cannot write {shown}: {problem}"))
    if errors.errors:
        # Each op once per problem: ops sharing a domain share its files.
        unique = {(str(e.location), e.field, e.message): e for e in errors.errors}
        raise DefinitionErrors(list(unique.values()))


@dataclass(frozen=True)
class Failure:
    """An exception past validation, while generating one op's files (or the shared ones)."""

    what: str  # "<op_id> (<definition file>)", or the shared files
    error: str  # "ZeroDivisionError: integer division or modulo by zero"
    details: str  # the traceback, for a bug report


class GenerationError(Exception):
    """Every definition was valid, yet generating failed: a bug in opgen (an emitter or a
    template), never the user's. Raised before anything is written."""

    def __init__(self, failures: list[Failure]):
        self.failures = failures
        super().__init__("; ".join(f"{f.what}: {f.error}" for f in failures))


SHARED_FILES = "the shared files (every definition)"


def _describe(op: OpDef) -> str:
    return f"{op.op_id} ({op.display_path})"


def _failure(what: str, exc: Exception) -> Failure:
    import traceback  # here: only a bug in opgen needs it (a run imports it for nothing else)

    # The notes say where it arose: render() names the file, the template and its line.
    notes = "".join(f" ({note})" for note in getattr(exc, "__notes__", ()))
    return Failure(what, f"{type(exc).__name__}: {exc}{notes}", traceback.format_exc())


def _attempt(
    what: str, function: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
) -> Result | Failure:
    """function(*args), or a Failure naming `what` (returned: it may cross a process boundary)."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any bug here must be reported, not a traceback
        return _failure(what, exc)


def generate(
    project: Project, selected: list[OpDef], all_ops: list[OpDef], *, write: bool
) -> Output:
    """Every file for the selected ops, plus the shared files (which depend on all ops),
    compared with the output directory; with `write`, the files that differ are written
    (atomically; untouched files keep their mtime, for make). The definitions were all
    validated by load(). Everything is rendered, compared and its paths checked before the
    first file is written, and the output directory is left as it was when: rendering raises
    or two producers generate one path (a bug in opgen: GenerationError, naming the op); a path
    cannot be written (DefinitionErrors blaming the definition, or OutputError); a path holds
    something that is not opgen's to replace (OwnershipError)."""
    index = onnx_op_index(all_ops)
    ops = sorted(selected, key=lambda op: op.op_id)

    emission = Emission(project.output_dir, index, project.package)

    def op_files(op: OpDef) -> list[GeneratedFile]:
        return [file for emit in emitters.OP_EMITTERS for file in emit(op, emission)]

    def shared_files() -> list[GeneratedFile]:
        return [file for emit in emitters.PROJECT_EMITTERS for file in emit(all_ops, emission)]

    def compare(files: list[GeneratedFile]) -> Output:
        changes = plan_changes(project.output_dir, files)
        if write:  # the old text is for --check's diff only: do not carry it around
            changes = [
                Change(change.path, change.kind, new=change.new, not_ours=change.not_ours)
                for change in changes
            ]
        return Output([f.path for f in files], changes)

    producers: list[OpDef | None] = [*ops, None]  # None: the shared files, last
    if parallel.worker_count(len(ops), _MIN_OPS_PER_WORKER) == 1:
        attempts = [_attempt(_describe(op), op_files, op) for op in ops]
        attempts.append(_attempt(SHARED_FILES, shared_files))
        parts = _raise_failures(attempts)
        produced = [(op, [f.path for f in part]) for op, part in zip(producers, parts, strict=True)]
        owners = _owners(project, produced)
        try:
            # One format_all for everything: it forks for black's cache misses on its own.
            formatted = format_all([f for part in parts for f in part])
        except Exception as exc:  # noqa: BLE001 - as in _attempt, naming the file's op
            what = (
                owners.get(exc.path, SHARED_FILES) if isinstance(exc, FormatError) else SHARED_FILES
            )
            raise GenerationError([_failure(what, exc)]) from None
        outputs = [compare(formatted)]
    else:
        # Each worker renders, formats (cache lookups, or black on a miss) and compares its ops'
        # files with the disk, so that only paths and the changed files come back. The ops are
        # inherited through fork: only their positions are sent.
        def op_output(position: int) -> Output | Failure:
            op = ops[position]
            return _attempt(_describe(op), lambda: compare(format_all(op_files(op))))

        results = parallel.map_forked(op_output, range(len(ops)), _MIN_OPS_PER_WORKER)
        results.append(_attempt(SHARED_FILES, lambda: compare(format_all(shared_files()))))
        outputs = _raise_failures(results)
        produced = [(op, out.paths) for op, out in zip(producers, outputs, strict=True)]
        _owners(project, produced)
    # One pass: the paths just produced are checked here, not emitted again beforehand.
    _check_paths(project, produced, all_ops)
    changes = [change for out in outputs for change in out.changes]
    paths = [path for _, produced_paths in produced for path in produced_paths]
    conflicts = [c for c in changes if c.not_ours]
    conflicts += folder_conflicts(project.output_dir, paths, changes, writing=write)
    if conflicts:
        raise OwnershipError(sorted(conflicts, key=lambda c: c.path))
    if write:
        # Only now, with every file rendered: written by forked workers where there are many
        # (they inherit the texts), then the texts are dropped.
        parallel.map_forked(
            lambda position: write_changes(outputs[position].changes),
            range(len(outputs)),
            _MIN_OPS_PER_WORKER,
        )
        outputs = [
            Output(out.paths, [Change(change.path, change.kind) for change in out.changes])
            for out in outputs
        ]
    return Output(
        [path for out in outputs for path in out.paths],
        [change for out in outputs for change in out.changes],
    )


class DuplicateOutputError(Exception):
    """Two producers (or one, twice) generate the same path: a bug in opgen, as validation keeps
    names apart; writing both would keep whichever came last."""

    def __init__(self, path: str, first: str, second: str):
        self.path, self.first, self.second = path, first, second
        by = f"by {first} and by {second}" if first != second else f"by {first}"
        super().__init__(f"{path} is generated twice, {by}")


def _owners(project: Project, produced: list[tuple[OpDef | None, list[str]]]) -> dict[str, str]:
    """Each generated path's producer (as Failure.what names it); a path generated twice raises
    GenerationError, naming the path and both producers."""
    owners: dict[str, str] = {}
    try:
        for op, paths in produced:
            what = SHARED_FILES if op is None else _describe(op)
            for path in paths:
                if path in owners:
                    shown = os.path.join(project.output_dir, path)
                    raise DuplicateOutputError(shown, owners[path], what)
                owners[path] = what
    except DuplicateOutputError as exc:
        raise GenerationError([_failure(exc.second, exc)]) from None
    return owners


def _raise_failures(parts: list[Result | Failure]) -> list[Result]:
    """The parts, when none is a Failure; else GenerationError with every one."""
    failures = [part for part in parts if isinstance(part, Failure)]
    if failures:
        raise GenerationError(failures)
    return [part for part in parts if not isinstance(part, Failure)]
