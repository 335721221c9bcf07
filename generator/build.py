"""`python -m generator build`: fetch the ONNX Runtime headers once, then CMake.

The ONNX Runtime wheel ships no C/C++ headers. The official 1.29 headers (ORT_API_VERSION 29,
MIT licence) come from the npm package below; they are verified against pinned SHA-256
digests and cached, never committed. Set ORT_INCLUDE_DIR to use headers of your own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from generator.cache import cache_root
from generator.config import BUILD_CHOICES, TARGET_KEYS
from generator.errors import DefinitionErrors
from generator.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from generator.runtime._names import schema_tests_name

if TYPE_CHECKING:  # the model is loaded only by build(), not by importing this module
    from generator.model.op import OpDef

NPM_PACKAGE = "com.github.asus4.onnxruntime@0.4.9"
NPM_INTEGRITY = "sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jXah8OYyJbCN29Fg=="
HEADERS_IN_PACKAGE = (
    "package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers"
)
HEADER_SHA256 = {
    "onnxruntime_c_api.h": "acc0cf4b3f28d39339c76770d76164bb7a0637dc89f5fde764b4017b632f6743",
    "onnxruntime_cxx_api.h": "9c63ed5bf0427ddf1c10a99aca0beeec77318ce77d2ea6f7ae76d7d933660f67",
    "onnxruntime_cxx_inline.h": "c508dbb7d8203003a2584b8712118cb88e5b4ef1e1c7876a9974156fb7489301",
    "onnxruntime_float16.h": "88b242845d25981633a0bbd1c148e273cf8bfb016ea3f57c4af41a06530f72b0",
    "onnxruntime_lite_custom_op.h": "5ac84897a95ee5fa5b5bbbeb84dd51f0768e83b293716b147f114e63b28fdf85",
    "onnxruntime_error_code.h": "5ce3b054e798eced8d14f5b86e98692fd33470463f96194ce0700a2d53dd8721",
    "onnxruntime_ep_c_api.h": "e6c986c9e98583f8113b2c6bc3864814883b806d501cf24da4d239c45753e235",
}
LICENSE_IN_PACKAGE = "package/LICENSE"
# How a --sanitize build is run: the first report aborts (a crash the caller sees), leaks are
# off (the interpreter's own allocations would be reported at exit), and an allocation beyond
# ASan's limit fails as malloc's would (PyTorch and ONNX Runtime then raise, and the op must say
# which output it could not allocate) rather than aborting.
SANITIZER_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


class BuildError(Exception):
    pass


def sanitizer_runtime() -> list[Path]:
    """The shared ASan and UBSan runtimes g++ links a --sanitize build against: a Python that
    loads such a library must preload them (ASan first), as LD_PRELOAD."""
    found = []
    for name in ("libasan.so", "libubsan.so"):
        result = subprocess.run(
            ["g++", f"-print-file-name={name}"], capture_output=True, text=True, check=False
        )
        path = Path(result.stdout.strip())
        if result.returncode != 0 or not path.is_absolute() or not path.exists():
            raise BuildError(f"g++ has no {name} (on Debian: apt-get install libasan8 libubsan1)")
        found.append(path.resolve())
    return found


def sanitizer_env(build_dir: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that runs Python (and the generated tests) on a --sanitize build: its
    artifacts, the runtimes preloaded, SANITIZER_OPTIONS."""
    env = dict(os.environ if env is None else env)
    env["OPGEN_BUILD_DIR"] = str(build_dir)
    env["LD_PRELOAD"] = ":".join(str(path) for path in sanitizer_runtime())
    env["ASAN_OPTIONS"] = SANITIZER_OPTIONS["ASAN_OPTIONS"]
    env["UBSAN_OPTIONS"] = SANITIZER_OPTIONS["UBSAN_OPTIONS"]
    return env


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _headers_ok(directory: Path) -> bool:
    return all(
        (directory / name).is_file() and _sha256(directory / name) == digest
        for name, digest in HEADER_SHA256.items()
    )


def torch_flags() -> list[str]:
    """The compiler flags of the native PyTorch libraries (as the generated CMakeLists sets
    them): the installed torch package's headers and the targeted stable ABI."""
    import importlib.util

    from generator.api.cpp import TORCH_TARGET_VERSION

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("no torch package in this Python environment")
    include = Path(spec.submodule_search_locations[0]) / "include"
    return [f"-isystem{include}", f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"]


def ort_include_dir(log: Callable[[str], None]) -> Path:
    """ORT_INCLUDE_DIR if set, else the verified cache (fetched with npm on first use)."""
    override = os.environ.get("ORT_INCLUDE_DIR")
    if override:
        path = Path(override).absolute()  # CMake runs elsewhere (pip builds in the package)
        if not (path / "onnxruntime_cxx_api.h").is_file():
            raise BuildError(f"ORT_INCLUDE_DIR={override} has no onnxruntime_cxx_api.h")
        return path
    cache = cache_root() / "onnxruntime-headers-1.29"
    if _headers_ok(cache):
        return cache
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError(
            "npm is needed once to fetch the ONNX Runtime headers (or set ORT_INCLUDE_DIR)"
        )
    log(f"fetching ONNX Runtime 1.29 C/C++ headers from npm package {NPM_PACKAGE} (~150 MB, once)")
    with tempfile.TemporaryDirectory(prefix="opgen-ort-") as temp:
        result = subprocess.run(
            [npm, "pack", NPM_PACKAGE, "--json", "--pack-destination", temp],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise BuildError(f"npm pack {NPM_PACKAGE} failed:\n{result.stderr[-2000:]}")
        info = json.loads(result.stdout[result.stdout.index("[") :])[0]
        if info.get("integrity") != NPM_INTEGRITY:
            raise BuildError(f"{NPM_PACKAGE}: unexpected integrity {info.get('integrity')}")
        staging = Path(temp) / "headers"
        staging.mkdir()
        with tarfile.open(Path(temp) / info["filename"]) as archive:
            for name in HEADER_SHA256:
                (staging / name).write_bytes(_member(archive, f"{HEADERS_IN_PACKAGE}/{name}"))
            (staging / "LICENSE").write_bytes(_member(archive, LICENSE_IN_PACKAGE))
        if not _headers_ok(staging):
            raise BuildError("the fetched ONNX Runtime headers do not match the pinned SHA-256")
        cache.parent.mkdir(parents=True, exist_ok=True)
        if cache.exists():
            shutil.rmtree(cache)
        shutil.move(str(staging), cache)
    return cache


def _configured_source(build_dir: Path) -> Path | None:
    """The source folder a CMake build folder was configured for (None if it was not)."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M)
    return Path(match.group(1)).resolve() if match else None


def headers_main(argv: list[str]) -> int:
    """`opgen headers`: prints the folder of the verified ONNX Runtime headers (fetching them
    once), for CMake and for builds outside opgen; progress goes to stderr."""
    parser = argparse.ArgumentParser(
        prog="opgen headers",
        description="Print the folder of the ONNX Runtime C/C++ headers the libraries are "
        "built against: ORT_INCLUDE_DIR if set, else opgen's verified copy (fetched once).",
    )
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    try:
        include = ort_include_dir(lambda message: print(f"[opgen] {message}", file=sys.stderr))
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(include)
    return EXIT_OK


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    """A file's bytes from the package (tarfile gives None for a directory or a device)."""
    extracted = archive.extractfile(archive.getmember(name))
    if extracted is None:
        raise BuildError(f"{NPM_PACKAGE}: {name} is not a regular file")
    with extracted:
        return extracted.read()


def _ops_in(line: str, ops: Iterable[OpDef], output_dir: Path, build_dir: Path) -> set[str]:
    """The ops whose files a compiler's message names: its generated folder (which the kernels
    are included from, as <output>/<op>/../../<definitions>/<kernel>) or a kernel file. CMake
    hands the compilers absolute paths; a compiler cache told to (ccache's base_dir) makes them
    relative to the build folder, where the compilers run."""
    found = set()
    for op in ops:
        files = [file.resolve() for file in op.kernel.files] if op.kernel is not None else []
        absolute = [f"{output_dir}/{op.op_id}/", *map(str, files)]
        relative = [
            os.path.relpath(Path(output_dir, op.op_id), build_dir) + "/",
            *(os.path.relpath(file, build_dir) for file in files),
        ]
        if any(place in line for place in absolute) or any(
            re.search(rf"(?:^|[\s'\"(]){re.escape(place)}", line) for place in relative
        ):
            found.add(f"{op.op_id} ({op.definition_path})")
    return found


def _cmake_warnings(lines: list[str]) -> list[str]:
    """CMake's warning messages in its output: each from its "CMake Warning" line to the end of
    its indented text."""
    found: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("CMake Warning"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        if inside:
            found.append(line)
    return found


def _run(command: list[str], quiet: bool) -> tuple[int, list[str]]:
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert process.stdout is not None  # stdout=PIPE
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if not quiet or "error" in line or "fatal" in line:
            print(line, end="", flush=True)
    return process.wait(), lines


def build(args: argparse.Namespace) -> int:
    from generator import project as proj

    def log(message: str) -> None:
        if not args.quiet:
            print(f"[opgen] {message}", flush=True)

    source = args.output_dir.resolve()
    if not (source / "CMakeLists.txt").is_file():
        print(
            f"error: {source}/CMakeLists.txt not found; run `python -m generator` first",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    conflict = _sanitize_conflict(args)
    if conflict:
        print(f"error: {conflict}", file=sys.stderr)
        return EXIT_BAD_INPUT
    build_dir = args.build_dir.resolve()  # with --sanitize, <build-dir>-sanitize (config.load)
    settings = args.settings
    project = proj.Project.of(
        args.opdefs_dir, args.output_dir, settings.generated_package(), settings.torch_api
    )
    try:
        ops = proj.load(project, proj.discover(project), Path.cwd())
        include = ort_include_dir(log)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DefinitionErrors as errors:
        for error in errors.errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from generator.writer import folder_problem

    # As named, not resolved: a link to nowhere is refused, not built at its target.
    problem = folder_problem(args.build_dir) or folder_problem(build_dir)
    if problem:
        print(f"error: the build folder {build_dir} {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    started = time.monotonic()
    configured_for = _configured_source(build_dir)
    if configured_for is not None and configured_for != source:
        print(
            f"error: {build_dir} was configured for {configured_for}, not for this package "
            f"({source}): delete it, or build elsewhere (--build-dir, or the configuration's "
            "build-dir)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    # The sanitizer and the runtime targets' choices and configured keys, as CMake variables
    cache_variables = [
        f"-DORT_INCLUDE_DIR={include}",
        f"-DOPGEN_SANITIZE={'ON' if args.sanitize else 'OFF'}",
        *_target_variables(args),
    ]
    if configured_for is None:
        log(f"configuring {build_dir}")
        if not _configure(source, build_dir, cache_variables, args.sanitize, args.quiet):
            return EXIT_FAILED
    else:
        _reconfigure(build_dir, cache_variables)
    log(f"building with {args.jobs} job(s)")
    if not _compile(build_dir, args.jobs, args.quiet, ops, source):
        return EXIT_FAILED
    log(f"built in {time.monotonic() - started:.1f} s")
    for artifact in sorted((build_dir / "lib").glob("*.so")):
        print(f"  {artifact}")
    for test in sorted((build_dir / "bin").glob(schema_tests_name("*"))):
        print(f"  {test}")
    if args.sanitize:
        log(
            "run Python on it with OPGEN_BUILD_DIR, LD_PRELOAD, ASAN_OPTIONS and UBSAN_OPTIONS "
            "as generator.build.sanitizer_env() sets them"
        )
    return EXIT_OK


def _sanitize_conflict(args: argparse.Namespace) -> str | None:
    """Why a runtime target's choice cannot be built with --sanitize (None: it can)."""
    for choice in BUILD_CHOICES:
        chosen = getattr(args, choice.dest)
        if (
            args.sanitize
            and choice.refused_with_sanitize
            and chosen == choice.refused_with_sanitize
        ):
            return choice.sanitize_conflict
    return None


def _target_variables(args: argparse.Namespace) -> list[str]:
    """The runtime targets' choices and configured keys (generator/target_settings.py)."""
    values = dict(args.settings.target_values)
    return [
        *(
            f"-D{choice.cmake_variable}={getattr(args, choice.dest).upper()}"
            for choice in BUILD_CHOICES
        ),
        *(f"-D{key.cmake_variable}={values[key.name]}" for key in TARGET_KEYS),
    ]


def _configure(
    source: Path, build_dir: Path, cache_variables: list[str], sanitize: bool, quiet: bool
) -> bool:
    """A new build folder configured (False: CMake failed, and said why)."""
    import pybind11

    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    code, lines = _run(
        [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(build_dir),
            *generator,
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            # RelWithDebInfo: pybind11 strips modules in Release, losing the sanitizer
            # reports' line numbers (the template's -O1 overrides -O2).
            f"-DCMAKE_BUILD_TYPE={'RelWithDebInfo' if sanitize else 'Release'}",
            *cache_variables,
        ],
        quiet,
    )
    if quiet and code == 0:  # CMake's warnings (a target left out, and why) still show
        for warning in _cmake_warnings(lines):
            print(warning, file=sys.stderr)
    if code != 0:
        print("\n".join(lines[-30:]), file=sys.stderr)
        print("error: CMake configuration failed", file=sys.stderr)
        return False
    return True


def _reconfigure(build_dir: Path, cache_variables: list[str]) -> None:
    """Keep the cache pointing at the headers in use (ORT_INCLUDE_DIR may have changed) and at
    the sanitizer and target choices of this command and the configured keys."""
    reconfigured = subprocess.run(
        ["cmake", str(build_dir), *cache_variables],
        capture_output=True,
        text=True,
        check=False,
    )
    # CMake's warnings and errors (a target left out, and why): the build step reruns a
    # failed configuration and shows its errors again.
    if reconfigured.stderr.strip():
        print(reconfigured.stderr.rstrip(), file=sys.stderr)


def _compile(build_dir: Path, jobs: int, quiet: bool, ops: list[OpDef], source: Path) -> bool:
    """The build run (False: it failed, and the ops whose files the errors name are said)."""
    code, lines = _run(["cmake", "--build", str(build_dir), "--parallel", str(jobs)], quiet)
    if code == 0:
        return True
    failed = sorted(
        {
            op
            for line in lines
            if re.search(r"\b(error|fatal)\b", line)
            for op in _ops_in(line, ops, source, build_dir)
        }
    )
    where = ", ".join(failed) if failed else "see the compiler output above"
    print(f"error: build failed in op(s): {where}", file=sys.stderr)
    return False
