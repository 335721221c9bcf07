"""The macros that the headers of the generated C++ define, taken from the real headers: each
kind of translation unit opgen generates (the ONNX Runtime, pybind11 and PyTorch ones; the C++
schema ones, against ONNX's headers; the CUDA ones, through nvcc) preprocessed with `-dM` and
the build's flags, against every torch this machine has headers of. A user name that is one of
them would be replaced in the generated code, which then fails to compile, so
generator/model/header_macros.py lists them for validation to refuse.

`python tests/header_macros.py --write` rewrites that list from this machine's headers;
tests/test_definition_errors.py checks that it holds every macro found here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import older_torch_headers  # noqa: E402

from generator.api.cpp import TORCH_TARGET_VERSION  # noqa: E402
from generator.build import ort_include_dir  # noqa: E402
from generator.model.names import IDENTIFIER, is_implementation_name  # noqa: E402

LIST = ROOT / "generator" / "model" / "header_macros.py"
RUNTIME = ROOT / "generator" / "runtime" / "include"

# What each kind of generated translation unit includes: the runtime headers and, through them,
# ONNX Runtime's, PyTorch's stable ABI, pybind11's and Python's, and the C++ library.
HOST_HEADERS = ["opgen/runtime.h", "opgen/shape_rule.h", "opgen/ort_support.h",
                "opgen/pybind_support.h", "opgen/torch_support.h", "pybind11/stl.h",
                "cstdint", "exception", "iostream", "optional", "stdexcept", "string", "vector"]  # fmt: skip
SCHEMA_HEADERS = ["opgen/onnx_schema_support.h", "opgen/schema_test_support.h",
                  "onnx/defs/schema.h", "onnx/defs/shape_inference.h", "onnx/defs/parser.h",
                  "onnx/shape_inference/implementation.h", "onnx/checker.h"]  # fmt: skip
CUDA_HEADERS = ["opgen/cuda.h", "opgen/ort_cuda_support.h", "opgen/torch_cuda_support.h"]


def torch_include_dirs() -> list[Path]:
    """This torch's headers and those of the older releases the native libraries build against."""
    import torch

    dirs = [Path(torch.__file__).parent / "include"]
    return dirs + [
        older_torch_headers.include_dir(r)
        for r in older_torch_headers.RELEASES
        if older_torch_headers.fetched(r)
    ]


def _defined(command: list[str], headers: list[str], suffix: str) -> set[str]:
    with tempfile.TemporaryDirectory(prefix="opgen-macros-") as folder:
        unit = Path(folder) / f"unit{suffix}"
        unit.write_text("".join(f"#include <{h}>\n" for h in headers))
        result = subprocess.run([*command, str(unit)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return set(re.findall(r"(?m)^#define ([A-Za-z_]\w*)", result.stdout))


def missing_tools() -> list[str]:
    """What this machine lacks to take the whole list (each kind of unit needs its compiler)."""
    missing = [tool for tool in ("g++", "nvcc") if shutil.which(tool) is None]
    if not Path("/usr/include/onnx/defs/schema.h").is_file():
        missing.append("ONNX's C++ headers (libonnx-dev)")
    return missing


def header_macros() -> set[str]:
    """Every macro those units define here that a user name could spell."""
    import pybind11

    common = ["-std=c++17", f"-I{RUNTIME}", "-DNDEBUG"]
    host = [f"-I{ort_include_dir(lambda message: None)}", "-DORT_API_MANUAL_INIT",
            f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}", "-DUSE_CUDA",
            f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}"]  # fmt: skip
    found: set[str] = set()
    found |= _defined(
        ["g++", "-E", "-dM", *common, "-DONNX_ML=1", "-DONNX_NAMESPACE=onnx"], SCHEMA_HEADERS, ".cc"
    )
    for torch_include in torch_include_dirs():
        with_torch = [*common, *host, f"-I{torch_include}"]
        found |= _defined(["g++", "-E", "-dM", *with_torch], HOST_HEADERS, ".cc")
        found |= _defined(
            ["nvcc", "-E", "-Xcompiler=-dM", "-x", "cu", *with_torch], CUDA_HEADERS, ".cu"
        )
    return {
        name for name in found if IDENTIFIER.fullmatch(name) and not is_implementation_name(name)
    }


def listing(names: set[str]) -> str:
    """generator/model/header_macros.py holding `names` (black formats it)."""
    lines: list[str] = []
    line = "   "
    for name in sorted(names):
        if len(line) + 1 + len(name) > 96:
            lines.append(line)
            line = "   "
        line += " " + name
    lines.append(line)
    body = "\n".join(lines)
    return (
        '"""Macros that the headers of the generated C++ define (C, C++, ONNX, ONNX Runtime,\n'
        "PyTorch's stable ABI, pybind11, Python, CUDA): a user name that is one of them would be\n"
        "replaced in the generated code. Written by `python tests/header_macros.py --write` from\n"
        "the headers of the machine it ran on; names reserved to the C++ implementation are\n"
        'refused by their form and not listed."""\n\n'
        f'HEADER_MACROS = frozenset(\n    """\n{body}\n    """.split()\n)\n'
    )


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python tests/header_macros.py --write", file=sys.stderr)
        return 2
    if missing_tools():
        print(f"cannot take the list here: no {', '.join(missing_tools())}", file=sys.stderr)
        return 1
    if len(torch_include_dirs()) <= len(older_torch_headers.RELEASES):
        print("the older torch headers are missing: run ./dev setup first", file=sys.stderr)
        return 1
    names = header_macros()
    import black

    LIST.write_text(black.format_str(listing(names), mode=black.Mode(line_length=100)))
    print(f"{LIST.relative_to(ROOT)}: {len(names)} macros")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
