"""The generated tests again, on the AddressSanitizer + UndefinedBehaviorSanitizer build of every
generated C++ artifact (`python -m generator build --sanitize`, into build-sanitize/): the ONNX
Runtime libraries, the pybind11 kernel modules behind the PyTorch ops and the C++ schema tests.
A memory error or undefined behaviour that happens to give the right answer in the normal build
aborts the run here. First, proof that the sanitizers are really there and really fire."""

import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from generator.runtime._names import schema_tests_name

ROOT = Path(__file__).resolve().parent.parent

# What ASan and UBSan print when they find something (UBSan: "file:line:col: runtime error:").
SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error: ")


def _domains_with_kernels() -> list[str]:
    return sorted(
        path.name
        for path in (ROOT / "generated" / "domains").iterdir()
        if (path / "ort_library.cc").is_file()
    )


def _schema_tests() -> list[str]:
    """Each domain's schema test executable (every domain with ops has one)."""
    return sorted(
        schema_tests_name(path.name)
        for path in (ROOT / "generated" / "domains").iterdir()
        if (path / "schema_tests.cc").is_file()
    )


def _artifacts(build: Path) -> list[Path]:
    lib = build / "lib"
    found = []
    for domain in _domains_with_kernels():
        found.append(lib / f"libopgen_{domain}.so")
        modules = sorted(lib.glob(f"opgen_{domain}_kernels.*.so"))
        assert len(modules) == 1, f"pybind11 module of {domain} in {lib}: {modules}"
        found.extend(modules)
    found.extend(build / "bin" / name for name in _schema_tests())
    return found


def test_every_artifact_is_instrumented(sanitizer_env):
    """Every library, module and schema test calls into both runtimes (a flag lost on the way
    from the CMake option to a target would leave it unchecked)."""
    artifacts = _artifacts(Path(sanitizer_env["OPGEN_BUILD_DIR"]))
    assert len(artifacts) >= 3 * len(_domains_with_kernels()) > 0
    for artifact in artifacts:
        symbols = subprocess.run(
            ["nm", "-D", "--undefined-only", str(artifact)], capture_output=True, text=True
        )
        assert symbols.returncode == 0, symbols.stderr
        assert " __asan_init" in symbols.stdout, f"{artifact} is not built with ASan"
        assert " __ubsan_handle_" in symbols.stdout, f"{artifact} is not built with UBSan"


_PROBE = textwrap.dedent(r"""
    import ctypes
    import onnxruntime as ort
    from generated import _support

    options = []  # alive: ONNX Runtime unloads a library with its options
    for domain in DOMAINS:
        _support.kernels(domain)
        _support.torch_library(domain)  # every shipped kernel op is registered natively
        options.append(ort.SessionOptions())
        options[-1].register_custom_ops_library(str(_support.ort_library(domain)))
    maps = open("/proc/self/maps").read()
    for name in ("libasan.so", "libubsan.so"):
        assert name in maps, f"{name} is not mapped"
    loaded = {line.split()[-1] for line in maps.splitlines() if "libopgen_" in line
              or "_kernels." in line}
    assert loaded and all(path.startswith(BUILD) for path in loaded), loaded
    assert len(loaded) == 3 * len(DOMAINS), loaded
    # ASan intercepts malloc: freed memory is poisoned (quarantined), so a read would be caught.
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    pointer = libc.malloc(64)
    libc.free(ctypes.c_void_p(pointer))
    assert libc.__asan_address_is_poisoned(ctypes.c_void_p(pointer)) == 1
    print("probe ok", flush=True)
    # A report must abort the process and be found in its output: report that read.
    libc.__asan_report_error(ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_void_p(0),
                             ctypes.c_void_p(pointer), 0, ctypes.c_size_t(8))
""")


def test_sanitizer_runtime_is_active_and_fatal(sanitizer_env):
    """In the environment the sanitized tests run in: every library loaded comes from the
    sanitizer build, both runtimes are mapped, ASan watches the heap, and a report aborts."""
    build = sanitizer_env["OPGEN_BUILD_DIR"]
    script = f"DOMAINS = {_domains_with_kernels()!r}\nBUILD = {build!r}\n"
    result = subprocess.run(
        [sys.executable, "-c", script + _PROBE],
        cwd=ROOT,
        env=sanitizer_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "probe ok" in result.stdout, result.stdout + result.stderr[-6000:]
    assert result.returncode == -signal.SIGABRT, (result.returncode, result.stderr[-6000:])
    assert "ERROR: AddressSanitizer: heap-use-after-free" in result.stderr, result.stderr[-6000:]


def test_generated_tests_pass_under_sanitizers(sanitizer_env):
    """The generated tests (parity in PyTorch and ONNX Runtime, bad shapes and values, wrong
    attributes and dtypes, opcheck, gradients, the C++ schema tests) on the sanitizer build: all
    pass, nothing reported. Not the exports: they are three quarters of the time, in Python, and
    their models run the kernels the one-node models run."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:warnings",
            "-k",
            "not test_export_and_parity",
            "generated",
        ],
        cwd=ROOT,
        env=sanitizer_env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = result.stdout + result.stderr
    reports = SANITIZER_REPORT.findall(output)
    assert not reports, output[-20000:]
    assert result.returncode == 0, output[-20000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout, result.stdout[-3000:]
