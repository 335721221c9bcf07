"""Command line: `python -m generator [definitions...]`, `--check`, `build` and `run`.

Exit codes: 0 success; 1 generated files out of date (--check) or a build failed;
2 bad usage (an output directory that cannot be made or written included), a bad op
definition, or an internal error (a bug in opgen, said so; nothing is written).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from generator import check_record, config
from generator.errors import DefinitionErrors
from generator.exit_codes import EXIT_BAD_INPUT, EXIT_OK, EXIT_STALE
from generator.project_lock import project_lock

if TYPE_CHECKING:  # imported where used: `build`, `run` and `new` need no emitters
    from generator.project import GenerationError, Output
    from generator.writer import Leftovers


def _generate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="Generate every artifact of the given op definitions (default: all of "
        "the definitions folder). The configuration ([tool.opgen] in pyproject.toml, or "
        "opgen.toml) is found from the working directory up; flags override it. "
        "Subcommands: `new` scaffolds a new op, `import` writes one from a registered schema, `build` compiles what was generated, "
        "`wheel` builds the ops' wheel, `headers` prints the ONNX Runtime headers' folder, "
        "`run` runs every op.",
        epilog="Exit codes: 0 ok, 1 out of date (--check), 2 bad usage, bad op definition or "
        "an internal error (nothing written).",
    )
    parser.add_argument("definitions", nargs="*", type=Path, help="op definition files")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--dry-run", action="store_true", help="list what would change")
    config.add_arguments(parser, "opdefs_dir", "output_dir", "package")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="list unchanged files too")
    return parser


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator build",
        description="Compile the generated C++: the ONNX Runtime custom-op libraries, the "
        "pybind11 kernel modules and the ONNX C++ schema tests (incremental).",
        epilog="Exit codes: 0 ok, 1 build failed, 2 bad usage.",
    )
    config.add_arguments(parser, "opdefs_dir", "output_dir", "build_dir")
    parser.add_argument("--jobs", type=config.positive_int, default=2, help="parallel jobs")
    parser.add_argument(
        "--sanitize",
        action="store_true",
        help="build with AddressSanitizer and UndefinedBehaviorSanitizer (-DOPGEN_SANITIZE=ON), "
        "in <build-dir>-sanitize unless --build-dir is given",
    )
    for choice in config.BUILD_CHOICES:  # the runtime targets' (generator/target_settings.py)
        parser.add_argument(
            choice.flag, choices=choice.choices, default=choice.default, help=choice.help
        )
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None, *, record_checks: bool = False) -> int:
    """Every command; an operating-system error that no check foresaw (a disk filling up, a
    file changing under the run) is one error line naming the file, never a traceback. With
    record_checks (the command line's entry, not a caller in-process), a plain --check that
    passes is recorded (generator/check_record.py)."""
    try:
        return _command(sys.argv[1:] if argv is None else argv, record_checks)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _command(argv: list[str], record_checks: bool) -> int:
    try:
        os.getcwd()
    except FileNotFoundError:
        # Relative paths (flags, the configuration's folders, messages) all start from it.
        print(
            "error: the working directory no longer exists (deleted after the shell entered "
            "it): cd into the project again",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if argv[:1] == ["run"]:
        parser = argparse.ArgumentParser(
            prog="python -m generator run",
            description="Export every generated op with both exporters and run it in PyTorch "
            "and ONNX Runtime (after `build`).",
        )
        config.add_arguments(parser, "output_dir")
        args = parser.parse_args(argv[1:])
        if config.apply(args) is None:
            return EXIT_BAD_INPUT
        from generator.run_ops import run

        return run(args.output_dir)
    if argv[:1] == ["new"]:
        from generator import scaffold

        # `new` then generates the op as `python -m generator <definition>` would: it is handed
        # main rather than importing this module, which imports it.
        return scaffold.main(argv[1:], generate=main)
    if argv[:1] == ["import"]:
        from generator import scaffold

        return scaffold.import_main(argv[1:], generate=main)
    if argv[:1] == ["build"]:
        args = _build_parser().parse_args(argv[1:])
        if config.apply(args) is None:
            return EXIT_BAD_INPUT
        from generator.build import build

        return build(args)
    if argv[:1] == ["headers"]:
        from generator.build import headers_main

        return headers_main(argv[1:])
    if argv[:1] == ["wheel"]:
        from generator import ops_wheel

        return ops_wheel.main(argv[1:], generate=main)
    try:
        args = _generate_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    if config.apply(args) is None:
        return EXIT_BAD_INPUT
    # Modules and op models live until the run ends: frozen, the cyclic garbage collector stops
    # walking them again and again (about 15% of a run of 1000 definitions) and still collects
    # what black leaves behind. Forked workers inherit the frozen state.
    gc.freeze()
    try:
        return _generate(args, argv if record_checks else None)
    finally:
        gc.unfreeze()


def _report(errors: DefinitionErrors, args: argparse.Namespace) -> int:
    from generator import project as proj

    for error in errors.errors:
        print(f"error: {error}", file=sys.stderr)
    count = len(errors.errors)
    print(f"{count} error{'s' * (count != 1)} in op definitions; nothing written", file=sys.stderr)
    named = {proj.display(p.resolve(), Path.cwd().resolve()) for p in args.definitions}
    others = sorted({e.location.file for e in errors.errors} - named)
    if args.definitions and others:
        print(
            f"note: {', '.join(others)} {'is' if len(others) == 1 else 'are'} not among the "
            f"definitions you named, but every definition in {args.opdefs_dir}/ is loaded: "
            "the shared files (CMakeLists.txt, the package __init__.py, the docs index) list "
            "every op, and names and export nodes are checked across definitions; fix them "
            f"or move them out of {args.opdefs_dir}/",
            file=sys.stderr,
        )
    return EXIT_BAD_INPUT


def _report_internal(failed: GenerationError, args: argparse.Namespace) -> int:
    """An exception past validation: a bug in opgen, said so, with the op it was generating."""
    for failure in failed.failures:
        if args.verbose:
            print(failure.details, file=sys.stderr)
        print(
            f"error: internal error in opgen while generating {failure.what}: {failure.error}",
            file=sys.stderr,
        )
    print(
        "error: this is a bug in opgen, not in the definitions: please report it with the "
        "definition"
        + ("" if args.verbose else " and the traceback (-v shows it)")
        + "; nothing written",
        file=sys.stderr,
    )
    return EXIT_BAD_INPUT


def _generate(args: argparse.Namespace, recorded_argv: list[str] | None) -> int:
    with project_lock(args.opdefs_dir, exclusive=not (args.check or args.dry_run)):
        if recorded_argv is None:
            return _generate_locked(args)
        pending = check_record.start(recorded_argv, args.opdefs_dir, args.output_dir)
        args.files_checked = None  # set by a check that passed
        result = _generate_locked(args)
        if pending is not None and args.files_checked is not None:
            check_record.save(pending, args.files_checked)
        return result


def _generate_locked(args: argparse.Namespace) -> int:
    from generator import project as proj
    from generator.writer import find_leftovers

    problem = _usage_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    settings = args.settings
    project = proj.Project.of(
        args.opdefs_dir, args.output_dir, settings.generated_package(), settings.torch_api
    )
    selected_paths = args.definitions or proj.discover(project)
    if not selected_paths:
        print(f"error: no op definitions given and none in {args.opdefs_dir}/", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Shared files (CMake, package __init__) list every op, so all definitions are loaded.
    try:
        all_ops = proj.load(project, [*proj.discover(project), *selected_paths], Path.cwd())
        selected = all_ops
        if args.definitions:
            wanted = {p.resolve() for p in selected_paths}
            selected = [op for op in all_ops if Path(op.display_path).resolve() in wanted]
    except DefinitionErrors as errors:
        return _report(errors, args)
    gc.freeze()  # the op models too
    leftovers = find_leftovers(args.output_dir)
    try:
        # Nothing is written unless every file rendered and every path can be written.
        generated = proj.generate(
            project, selected, all_ops, write=not (args.check or args.dry_run)
        )
    except proj.GenerationError as failed:
        return _report_internal(failed, args)
    except proj.OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except proj.OwnershipError as refused:
        return refused.report()
    except DefinitionErrors as errors:  # a path that cannot be written, blamed on a definition
        return _report(errors, args)
    if args.check or args.dry_run:
        return _report_differences(args, generated, leftovers)
    return _finish_writing(args, generated, leftovers, len(selected))


def _usage_problem(args: argparse.Namespace) -> str | None:
    """Why the output directory cannot be used (None if it can; config.load checked that it
    overlaps neither the definitions nor the build folder)."""
    from generator.writer import folder_problem

    problem = folder_problem(args.output_dir, writing=not (args.check or args.dry_run))
    return f"the package folder {args.output_dir} {problem}" if problem else None


def _report_differences(args: argparse.Namespace, generated: Output, leftovers: Leftovers) -> int:
    """--check and --dry-run: what writing would change (and, with --check, whether stale)."""
    from generator.writer import ChangeKind, survey

    changes = generated.changes
    # Only a run over every definition knows all the output, so only it looks for orphans.
    if not args.definitions:
        found = survey(args.output_dir, generated.paths)
        changes = changes + found.orphans
        if args.verbose:
            _list_left_alone(found.left_alone, leftovers)
    for leftover in leftovers.dead:
        print(f"leftover: {leftover} ({_LEFTOVER}; `python -m generator` deletes it)")
    for change in changes:
        if change.kind is ChangeKind.orphaned:
            print(f"orphaned: {change.path} ({_ORPHAN})")
            continue
        print(f"{change.kind}: {change.path}")
        if args.check and not args.quiet:
            print(_shortened(change.diff))
    if not args.check:
        return EXIT_OK
    if changes or leftovers.dead:
        print(
            f"{len(changes)} generated file(s) out of date"
            + (f", {len(leftovers.dead)} leftover temporary file(s)" if leftovers.dead else "")
            + "; run `python -m generator`",
            file=sys.stderr,
        )
        return EXIT_STALE
    if not args.quiet:
        print(f"{len(generated.paths)} generated files up to date")
    args.files_checked = len(generated.paths)  # what a record of this check repeats
    return EXIT_OK


def _list_left_alone(left_alone: list[Path], leftovers: Leftovers) -> None:
    """-v: what is in the package folder that opgen did not generate, and so never touches."""
    for path in left_alone:
        print(f"left alone: {path} ({_NOT_OURS})")
    for path in leftovers.unproven:
        print(f"left alone: {path} ({_UNPROVEN})")


def _finish_writing(
    args: argparse.Namespace, generated: Output, leftovers: Leftovers, op_count: int
) -> int:
    """After the changed files are written: temporary leftovers and orphans go, then the
    report."""
    from generator.writer import remove_leftovers, remove_orphans, survey

    changes = generated.changes
    remove_leftovers(leftovers.dead)
    removed, folders = [], []
    if not args.definitions:  # only a run over every definition knows what is orphaned
        found = survey(args.output_dir, generated.paths)
        removed = found.orphans
        folders = remove_orphans(args.output_dir, removed)
        if args.verbose:
            _list_left_alone(found.left_alone, leftovers)
    if args.quiet:
        return EXIT_OK
    for change in changes:
        print(f"{change.kind}: {change.path}")
    for orphan in removed:
        print(f"removed: {orphan.path} (no definition generates it any more)")
    for folder in folders:
        print(f"removed: {folder}/ (held only generated files that were removed)")
    for leftover in leftovers.dead:
        print(f"removed: {leftover} ({_LEFTOVER})")
    if args.verbose:
        written = {change.path for change in changes}
        for path in generated.paths:
            if args.output_dir / path not in written:
                print(f"unchanged: {args.output_dir / path}")
    print(
        f"{op_count} op(s), {len(generated.paths)} files, {len(changes)} written "
        f"({len(generated.paths) - len(changes)} unchanged)"
        + (f", {len(removed)} orphaned removed" if removed else "")
    )
    return EXIT_OK


_LEFTOVER = "a temporary file of a generator run that was killed before renaming it"
_ORPHAN = "no definition generates it any more; `python -m generator` deletes it"
_NOT_OURS = "not generated by opgen: never written or deleted by it"
_UNPROVEN = (
    "named like opgen's temporary files, but not provably a dead run's: never deleted by opgen"
)


def _shortened(diff: str, limit: int = 40) -> str:
    lines = diff.splitlines()
    more = [f"... ({len(lines) - limit} more lines)"] if len(lines) > limit else []
    return "\n".join(lines[:limit] + more)
