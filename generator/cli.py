"""Command line: `python -m generator [definitions...]`, `--check`, `build` and `run`.

Exit codes: 0 success; 1 generated files out of date (--check) or a build failed;
2 bad usage or a bad op definition.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generator.errors import DefinitionErrors

EXIT_OK, EXIT_STALE, EXIT_BAD_INPUT = 0, 1, 2


def _generate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="Generate every artifact of the given op definitions (default: all of "
        "opdefs/). Subcommand: `build` compiles what was generated.",
        epilog="Exit codes: 0 ok, 1 out of date (--check), 2 bad usage or bad op definition.",
    )
    parser.add_argument("definitions", nargs="*", type=Path, help="op definition files")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--dry-run", action="store_true", help="list what would change")
    parser.add_argument("--opdefs-dir", type=Path, default=Path("opdefs"))
    parser.add_argument("--output-dir", type=Path, default=Path("generated"))
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator build",
        description="Compile the generated C++: the ONNX Runtime custom-op libraries, the "
        "pybind11 kernel modules and the ONNX C++ schema tests (incremental).",
        epilog="Exit codes: 0 ok, 1 build failed, 2 bad usage.",
    )
    parser.add_argument("--output-dir", type=Path, default=Path("generated"))
    parser.add_argument("--opdefs-dir", type=Path, default=Path("opdefs"))
    parser.add_argument("--build-dir", type=Path, default=Path("build"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        parser = argparse.ArgumentParser(
            prog="python -m generator run",
            description="Export every generated op with both exporters and run it in PyTorch "
            "and ONNX Runtime (after `build`).",
        )
        parser.add_argument("--output-dir", type=Path, default=Path("generated"))
        args = parser.parse_args(argv[1:])
        from generator.run_ops import run

        return run(args.output_dir)
    if argv[:1] == ["build"]:
        args = _build_parser().parse_args(argv[1:])
        from generator.build import build

        return build(args)
    try:
        args = _generate_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    return _generate(args)


def _generate(args) -> int:
    from generator import project as proj
    from generator.writer import plan_changes, write_files

    project = proj.Project(Path.cwd(), args.opdefs_dir, args.output_dir)
    selected_paths = args.definitions or proj.discover(project)
    if not selected_paths:
        print(f"error: no op definitions given and none in {args.opdefs_dir}/", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Shared files (CMake, package __init__) list every op, so all definitions are loaded.
    all_paths = sorted(set(p.resolve() for p in [*proj.discover(project), *selected_paths]))
    try:
        all_ops = proj.load(project, all_paths)
    except DefinitionErrors as errors:
        for error in errors.errors:
            print(f"error: {error}", file=sys.stderr)
        count = len(errors.errors)
        print(
            f"{count} error{'s' * (count != 1)} in op definitions; nothing written", file=sys.stderr
        )
        return EXIT_BAD_INPUT
    wanted = {p.resolve() for p in selected_paths}
    selected = [op for op in all_ops if (project.root / op.definition_path).resolve() in wanted]
    files = proj.generate(project, selected, all_ops)
    if args.check or args.dry_run:
        changes = plan_changes(args.output_dir, files)
        for change in changes:
            print(f"{change.kind}: {change.path}")
            if args.check and not args.quiet:
                lines = change.diff.splitlines()
                print(
                    "\n".join(
                        lines[:40]
                        + ([f"... ({len(lines) - 40} more lines)"] if len(lines) > 40 else [])
                    )
                )
        if args.check:
            if changes:
                print(
                    f"{len(changes)} generated file(s) out of date; run `python -m generator`",
                    file=sys.stderr,
                )
                return EXIT_STALE
            if not args.quiet:
                print(f"{len(files)} generated files up to date")
        return EXIT_OK
    changes = write_files(args.output_dir, files)
    if not args.quiet:
        for change in changes:
            print(f"{change.kind}: {change.path}")
        print(
            f"{len(selected)} op(s), {len(files)} files, {len(changes)} written "
            f"({len(files) - len(changes)} unchanged)"
        )
    return EXIT_OK
