"""The C++ runtime headers in generator/runtime/ are real C++: each compiles on its own (it
includes what it uses), checked here in seconds rather than by the whole build. A missing
compiler or third-party header skips, except under CI=true, where it is a failure."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "generator" / "runtime" / "include"
HEADERS = sorted(path.name for path in (INCLUDE / "opgen").glob("*.h"))


def _missing(what: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"missing under CI: {what}")
    pytest.skip(f"missing: {what}")


def _ort_flags() -> list[str]:
    from generator.build import BuildError, ort_include_dir

    try:  # the verified cache, fetched once as `python -m generator build` fetches it
        include = ort_include_dir(lambda message: None)
    except BuildError as error:
        _missing(f"the ONNX Runtime headers ({error})")
    # As the generated CMakeLists defines it for the custom-op library.
    return [f"-I{include}", "-DORT_API_MANUAL_INIT"]


def _pybind11_flags() -> list[str]:
    try:
        import pybind11
    except ImportError:
        _missing("pybind11")
    return [f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}"]


def _torch_flags() -> list[str]:
    from generator.build import BuildError, torch_flags

    try:
        return torch_flags()
    except BuildError as error:
        _missing(str(error))


# As libonnx-dev's CMake target defines them; the headers come from the compiler's own path.
_ONNX_FLAGS = ["-DONNX_NAMESPACE=onnx", "-DONNX_ML=1"]

# What each header needs beyond the standard library and opgen/ itself.
_NEEDS = {
    "ort_support.h": (_ort_flags, "onnxruntime_cxx_api.h"),
    "pybind_support.h": (_pybind11_flags, "pybind11/pybind11.h"),
    "onnx_schema_support.h": (lambda: _ONNX_FLAGS, "onnx/defs/shape_inference.h"),
    "schema_test_support.h": (lambda: _ONNX_FLAGS, "onnx/onnx_pb.h"),
    "torch_support.h": (_torch_flags, "torch/csrc/stable/library.h"),
}


def _compile(source: str, flags: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE}", *flags, "-x", "c++", "-"],
        input=source,
        capture_output=True,
        text=True,
    )


def test_every_header_is_listed():
    assert set(HEADERS) >= set(_NEEDS)
    assert "runtime.h" in HEADERS


@pytest.mark.parametrize("header", HEADERS)
def test_header_compiles_on_its_own(header):
    if shutil.which("g++") is None:
        _missing("g++")
    flags: list[str] = []
    if header in _NEEDS:
        make_flags, probe = _NEEDS[header]
        flags = make_flags()
        # A missing third-party header is a missing component, not a broken header of ours.
        found = _compile(f"#if !__has_include(<{probe}>)\n#error\n#endif\n", flags)
        if found.returncode != 0:
            _missing(probe)
    result = _compile(f'#include "opgen/{header}"\n', flags)
    assert result.returncode == 0, result.stderr[-4000:]
