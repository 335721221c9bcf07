"""`opgen wheel`: the generated package as a wheel, built by pip with scikit-build-core from the
package folder's pyproject.toml and CMakeLists.txt, in this Python environment (no build
isolation: the build compiles against this environment's torch and pybind11)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from generator import config
from generator.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, EXIT_STALE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="opgen wheel",
        description="Build a wheel of the generated package: its Python modules and, in "
        "<package>/_lib, the ONNX Runtime libraries, the pybind11 kernel modules and the "
        "native PyTorch libraries. The generated files must be up to date.",
        epilog="Exit codes: 0 ok, 1 generated files out of date or the build failed, 2 bad usage.",
    )
    config.add_arguments(parser, "opdefs_dir", "output_dir", "build_dir")
    parser.add_argument(
        "--wheel-dir",
        type=Path,
        help="where the wheel goes (default: dist/ beside the configuration file, or beside "
        "the definitions folder without one)",
    )
    parser.add_argument("--jobs", type=config.positive_int, default=2, help="parallel jobs")
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def main(argv: list[str], generate: Callable[[list[str]], int]) -> int:
    """`generate` is the CLI's main, handed over as `new` is (this module cannot import it)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    settings = config.apply(args)
    if settings is None:
        return EXIT_BAD_INPUT
    package_dir = settings.package_dir
    problem = _wheel_dir_problem(args, settings)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not (package_dir / "pyproject.toml").is_file():
        print(f"error: {package_dir}/pyproject.toml not found; run `opgen` first", file=sys.stderr)
        return EXIT_BAD_INPUT
    for module in ("scikit_build_core", "pybind11"):
        try:
            __import__(module)
        except ImportError:
            print(
                f"error: `opgen wheel` builds with {module.replace('_', '-')}, which this Python "
                "lacks: pip install 'opgen[runtime]'",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
    # A wheel of stale files would ship code no definition describes any more.
    check = [
        "--check",
        "-q",
        *("--opdefs-dir", str(settings.definitions)),
        *("--output-dir", str(package_dir)),
        *("--package", settings.package),
    ]
    if args.config is not None:
        check += ["--config", str(args.config)]
    status = generate(check)
    if status != EXIT_OK:
        if status == EXIT_STALE:
            print("error: the generated files are out of date: run `opgen`", file=sys.stderr)
        return status
    return _build(args, settings)


def _wheel_dir_problem(args: argparse.Namespace, settings: config.Config) -> str | None:
    """Sets args.wheel_dir (the default: dist/ in the project's root, wherever the command runs)
    and says why the wheel cannot go there, or None. It must stay out of the definitions and
    the package folders: opgen writes in those only what it generates."""
    from generator.writer import folder_problem

    if args.wheel_dir is None:
        root = settings.file.parent if settings.file else settings.definitions.absolute().parent
        args.wheel_dir = Path(os.path.relpath(root.absolute() / "dist"))
    wheel_dir = args.wheel_dir.resolve()
    for what, folder in (
        ("the definitions folder", settings.definitions),
        ("the package folder", settings.package_dir),
    ):
        if wheel_dir.is_relative_to(folder.resolve()):
            return (
                f"the wheel folder {args.wheel_dir} is inside {what} {folder}; give --wheel-dir "
                "a folder outside it (default: dist/ beside the configuration)"
            )
    problem = folder_problem(args.wheel_dir)
    return f"the wheel folder {args.wheel_dir} {problem}" if problem else None


def _build(args: argparse.Namespace, settings: config.Config) -> int:
    import pybind11

    from generator.build import BuildError, ort_include_dir

    def log(message: str) -> None:
        if not args.quiet:
            print(f"[opgen] {message}", flush=True)

    try:
        include = ort_include_dir(log)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    wheel_dir = args.wheel_dir.absolute()
    before = {path: path.stat().st_mtime_ns for path in wheel_dir.glob("*.whl")}
    # Its own CMake build folder (the wheel's configuration differs from `opgen build`'s),
    # kept, so that the next wheel rebuilds only what changed.
    build_dir = settings.build_dir.absolute() / "wheel"
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-build-isolation",
        "--no-deps",
        *("--wheel-dir", str(wheel_dir)),
        *("--config-settings", f"build-dir={build_dir}"),
        *("--config-settings", f"cmake.define.ORT_INCLUDE_DIR={include}"),
        *("--config-settings", f"cmake.define.pybind11_DIR={pybind11.get_cmake_dir()}"),
        *(["--quiet"] if args.quiet else []),
        str(settings.package_dir.absolute()),
    ]
    log(f"building the wheel of {settings.package} {settings.version} in {build_dir}")
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(args.jobs)}
    result = subprocess.run(command, env=env, check=False)
    if result.returncode != 0:
        print("error: building the wheel failed (pip's output above)", file=sys.stderr)
        return EXIT_FAILED
    # Wheel file names carry the distribution name normalized (`MyOps` gives `myops-...`).
    from packaging.utils import canonicalize_name

    distribution = canonicalize_name(settings.package)
    built = [
        path
        for path in wheel_dir.glob("*.whl")
        if canonicalize_name(path.name.split("-")[0]) == distribution
        and before.get(path) != path.stat().st_mtime_ns
    ]
    if len(built) != 1:
        print(f"error: expected one new wheel in {wheel_dir}, found {built}", file=sys.stderr)
        return EXIT_FAILED
    wheel = built[0]
    with zipfile.ZipFile(wheel) as archive:
        libraries = sorted(
            name for name in archive.namelist() if name.startswith(f"{settings.package}/_lib/")
        )
    print(wheel)
    if not args.quiet:
        for name in libraries:
            print(f"  {name}")
    return EXIT_OK
