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
from older_torch_headers import RELEASES, fetched, include_dir

# One test process runs the whole module (pytest-xdist's loadgroup): its tests share compiled
# programs.
pytestmark = pytest.mark.xdist_group("test_runtime_sources")

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


def _cuda_flags() -> list[str]:
    """The folder of CUDA's runtime headers, as nvcc finds them."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        _missing("nvcc (CUDA)")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.cu"
        probe.write_text("#include <cuda_runtime.h>\n")
        listed = subprocess.run([nvcc, "-M", str(probe)], capture_output=True, text=True)
    headers = [word for word in listed.stdout.split() if word.endswith("/cuda_runtime.h")]
    if not headers:
        _missing(f"cuda_runtime.h ({nvcc} -M: {listed.stderr[-500:]})")
    return [f"-I{Path(headers[0]).parent}"]


# As libonnx-dev's CMake target defines them; the headers come from the compiler's own path.
_ONNX_FLAGS = ["-DONNX_NAMESPACE=onnx", "-DONNX_ML=1"]

# What each header needs beyond the standard library and opgen/ itself.
_NEEDS = {
    "ort_support.h": (_ort_flags, "onnxruntime_cxx_api.h"),
    "pybind_support.h": (_pybind11_flags, "pybind11/pybind11.h"),
    "onnx_schema_support.h": (lambda: _ONNX_FLAGS, "onnx/defs/shape_inference.h"),
    "schema_test_support.h": (lambda: _ONNX_FLAGS, "onnx/onnx_pb.h"),
    "torch_support.h": (_torch_flags, "torch/csrc/stable/library.h"),
    "cuda.h": (_cuda_flags, "cuda_runtime.h"),
    "ort_cuda_support.h": (lambda: _ort_flags() + _cuda_flags(), "cuda_runtime.h"),
    "torch_cuda_support.h": (
        lambda: _torch_flags() + _cuda_flags() + ["-DUSE_CUDA"],
        "torch/csrc/inductor/aoti_torch/c/shim.h",
    ),
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


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("header", ["torch_support.h", "torch_cuda_support.h"])
def test_torch_headers_compile_against_older_torch_releases(header, release):
    """The native PyTorch libraries build against the headers of any torch from
    TORCH_BUILD_REQUIREMENT's floor on (the GPU machine has 2.11): what 2.13's headers added
    (STABLE_TORCH_ERROR_CODE_CHECK, TORCH_VERSION_2_13_0) is spelled for older ones too."""
    from generator.api.cpp import TORCH_TARGET_VERSION
    from generator.dest.project import TORCH_BUILD_REQUIREMENT

    assert TORCH_BUILD_REQUIREMENT == "torch>=" + RELEASES[0].removesuffix(".0")
    if shutil.which("g++") is None:
        _missing("g++")
    if not fetched(release):
        _missing(f"torch {release}'s headers (`./dev setup` fetches them)")
    flags = [f"-isystem{include_dir(release)}", f"-DTORCH_TARGET_VERSION={TORCH_TARGET_VERSION}"]
    if header == "torch_cuda_support.h":
        flags += _cuda_flags() + ["-DUSE_CUDA"]
    result = _compile(f'#include "opgen/{header}"\n', flags)
    assert result.returncode == 0, result.stderr[-4000:]


def _compiled(source: str, program: Path) -> Path:
    """A C++ program of the runtime headers, compiled by g++ (required: CI installs it)."""
    if shutil.which("g++") is None:
        _missing("g++")
    build = subprocess.run(
        ["g++", "-std=c++17", "-O1", f"-I{INCLUDE}", "-x", "c++", "-", "-o", str(program)],
        input=source,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    return program


_QUOTED = r"""
#include <iostream>
#include <string>
#include "opgen/runtime.h"
int main() {  // each line: bytes in hex; prints opgen::quoted of them
  std::string line;
  while (std::getline(std::cin, line)) {
    std::string bytes;
    for (size_t i = 0; i + 1 < line.size(); i += 2) {
      bytes += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
    }
    std::cout << opgen::quoted(bytes) << "\n";
  }
}
"""


@pytest.fixture(scope="module")
def quoted_program(tmp_path_factory) -> Path:
    return _compiled(_QUOTED, tmp_path_factory.mktemp("quoted") / "quoted")


# Bytes a model's string attribute may hold: well-formed UTF-8 of every length, and the ways
# to break it (stray continuation bytes, truncated, overlong, surrogate and past-U+10FFFF
# sequences), mixed.
_PIECES = [
    b"a", b'"', b"\\", b"\n", b"\x00", b"\x1f", b"\x7f", "é".encode(), "€".encode(),
    "😀".encode(), b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xc2", b"\xe2\x82",
    b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80",
    b"\xff", b"\xfe", b"\xf0\x9f\x98",
]  # fmt: skip


def test_quoted_spells_any_bytes_as_python_does(quoted_program):
    """opgen::quoted (C++ messages) and _support.quoted of _support.attribute's decoding
    (Python inference) spell an attribute the same, whatever its bytes: a message about a
    value that is not UTF-8 stays UTF-8 (ONNX Runtime's Python API could not decode it)."""
    import json
    import random

    rng = random.Random(0)
    values = [bytes([b]) for b in range(256)] + [
        b"".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6))) for _ in range(3000)
    ]
    result = subprocess.run(
        [str(quoted_program)],
        input="\n".join(value.hex() for value in values) + "\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")[: len(values)]
    for value, line in zip(values, lines, strict=True):
        want = json.dumps(value.decode("utf-8", "backslashreplace"), ensure_ascii=False)
        assert line == want, (value, line, want)


_ALLOCATE = r"""
#include <iostream>
#include "opgen/runtime.h"
int main() {  // each line: a shape; prints what allocate makes of it, and the allocator's calls
  int calls = 0;
  const std::vector<opgen::Shape> shapes = {{0, 4294967296, 4294967296}, {3, 4611686018427387904, 2},
                                            {-1, 2}, {0, 2}, {2, 3}, {2097152, 2097152, 2097152}};
  for (const opgen::Shape& shape : shapes) {
    opgen::AllocatedOutput<float> out([&](const opgen::Shape&) {
      ++calls;
      static float one;
      return &one;
    });
    try {
      out.allocate(shape);
      std::cout << "allocated " << out.view().numel() << "\n";
    } catch (const opgen::Error& error) {
      std::cout << error.what() << "\n";
    }
  }
  std::cout << "calls " << calls << "\n";
}
"""


def test_allocate_refuses_a_shape_whose_sizes_overflow_before_the_allocator_runs(tmp_path):
    """A data-dependent output's shape comes from the kernel, which no shape rule checked:
    AllocatedOutput::allocate, which every runtime's adapter goes through, refuses negative
    dims and sizes that overflow int64 before any allocator sees them."""
    program = _compiled(_ALLOCATE, tmp_path / "allocate")
    result = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "allocate: shape [0, 4294967296, 4294967296], whose size overflows int64",
        "allocate: shape [3, 4611686018427387904, 2], whose size overflows int64",
        "allocate: negative dimension in [-1, 2]",
        "allocated 0",
        "allocated 6",
        "allocate: shape [2097152, 2097152, 2097152], whose size overflows int64",
        "calls 2",
    ]


_ONNX_DTYPES = r"""
#include <iostream>
#include "opgen/torch_support.h"
int main() {  // each line: c10's ScalarType index and opgen::torch_support::onnx_dtype of it
  for (int index = 0; index < 64; ++index) {
    const auto type = static_cast<opgen::torch_support::ScalarType>(index);
    std::cout << index << " " << opgen::torch_support::onnx_dtype(type) << "\n";
  }
}
"""


def test_dtype_numbers_agree_with_onnx_torch_and_the_native_library(tmp_path):
    """A dtype argument (the PyTorch op's torch.dtype) becomes ONNX's number for it in Python
    (_support.onnx_dtype, and from the TorchScript exporter's ScalarType index) and in C++
    (torch_support.h's onnx_dtype): one table, checked against ONNX's TensorProto, PyTorch's
    own ScalarType indices (its schema parser reads a default by name) and the C++ switch."""
    import onnx
    import torch

    from generated import _support

    onnx_names = {"float32": "FLOAT", "float64": "DOUBLE", "float8_e8m0fnu": "FLOAT8E8M0"}
    for name, (number, index) in _support.DTYPE_NUMBERS.items():
        onnx_name = onnx_names.get(name, name.replace("_", "").upper())
        assert onnx.TensorProto.DataType.Value(onnx_name) == number, name
        schema = torch._C.parse_schema(f"f(ScalarType to={name}) -> Tensor")
        assert schema.arguments[0].default_value == index, name
        assert _support.onnx_dtype(getattr(torch, name)) == number, name
        assert _support.onnx_dtype_of_scalar_type(index) == number, name
        assert _support.torch_dtype(number) is getattr(torch, name), name
    for other in (torch.quint8, torch.complex32, "float32", 1, None):
        assert _support.onnx_dtype(other) == 0, other
    if shutil.which("g++") is None:
        _missing("g++")
    program = tmp_path / "onnx_dtypes"
    build = subprocess.run(
        [
            "g++",
            "-std=c++17",
            f"-I{INCLUDE}",
            *_torch_flags(),
            "-x",
            "c++",
            "-",
            "-o",
            str(program),
        ],
        input=_ONNX_DTYPES,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    printed = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    native = dict(tuple(map(int, line.split())) for line in printed.splitlines())
    by_index = {index: number for number, index in _support.DTYPE_NUMBERS.values()}
    assert native == {index: by_index.get(index, 0) for index in range(64)}


_FLOAT8 = r"""
#include <cstdio>
#include <iostream>
#include "opgen/runtime.h"
template <typename F>
void print(const std::vector<float>& values) {  // every code decoded, then each value encoded
  for (int bits = 0; bits < 256; ++bits) {
    const float decoded = F::to_float(static_cast<uint8_t>(bits));
    uint32_t x;
    std::memcpy(&x, &decoded, sizeof x);
    std::printf("%08x ", x);
  }
  for (float value : values) {
    std::printf("%02x %02x ", F::from_float(value, true), F::from_float(value, false));
  }
  std::printf("\n");
}
int main() {  // stdin: float32 values as the hex of their bits
  std::vector<float> values;
  std::string word;
  while (std::cin >> word) {
    const uint32_t x = static_cast<uint32_t>(std::stoul(word, nullptr, 16));
    float value;
    std::memcpy(&value, &x, sizeof value);
    values.push_back(value);
  }
  print<opgen::float8e4m3fn>(values);
  print<opgen::float8e4m3fnuz>(values);
  print<opgen::float8e5m2>(values);
  print<opgen::float8e5m2fnuz>(values);
  for (float value : values) {  // the 16-bit floats: each value there and back
    const float half = static_cast<float>(opgen::float16(value));
    const float brain = static_cast<float>(opgen::bfloat16(value));
    uint32_t x, y;
    std::memcpy(&x, &half, sizeof x);
    std::memcpy(&y, &brain, sizeof y);
    std::printf("%08x %08x ", x, y);
  }
  std::printf("\n");
}
"""


def _float8_probe_values():
    """float32 values that probe every rounding and range decision of the float8 formats:
    each float8 value, the midpoints between neighbours and one float32 step either side of
    them, every float16 value (subnormals and both ends included), infinities, NaN, -0,
    float32 subnormals, and random float32 bit patterns."""
    import ml_dtypes
    import numpy as np

    codes = np.arange(256, dtype=np.uint8)
    exact = np.concatenate(
        [
            codes.view(getattr(ml_dtypes, name)).astype(np.float32)
            for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
        ]
    )
    exact = np.unique(exact[np.isfinite(exact)])
    middles = ((exact[:-1].astype(np.float64) + exact[1:]) / 2).astype(np.float32)
    steps = np.concatenate(
        [np.nextafter(middles, np.float32(np.inf)), np.nextafter(middles, np.float32(-np.inf))]
    )
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-45, -1e-45, 3e38, 1e-40], np.float32)
    values = np.concatenate(
        [
            exact,
            -exact,
            middles,
            -middles,
            steps,
            -steps,
            halves,
            random_bits.view(np.float32),
            special,
        ]
    )
    return values.astype(np.float32)


def test_float8_and_16_bit_conversions_agree_with_onnx_runtime_and_numpy(tmp_path):
    """opgen's float8 types (runtime.h) decode every code as ml_dtypes does, and encode (round
    to nearest even) as ONNX Runtime's Cast does with saturate=1 (out of range: the largest
    value of the sign) and as ml_dtypes does without saturation (out of range: infinity in
    e5m2, NaN in the others; ONNX's Cast table says the same, while ONNX Runtime 1.31's
    saturate=0 turns 61440 into NaN in e5m2 and 480 into 448 in e4m3fn): checked on every
    rounding boundary, every float16 value and random float32 bit patterns. opgen::float16 and
    opgen::bfloat16 round the same values as numpy and ml_dtypes do."""
    import ml_dtypes
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    program = _compiled(_FLOAT8, tmp_path / "float8")
    values = _float8_probe_values()
    printed = subprocess.run(
        [str(program)],
        input=" ".join(f"{bits:08x}" for bits in values.view(np.uint32)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    sixteen = np.array([int(w, 16) for w in printed.pop().split()], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want16 = [values.astype(np.float16), values.astype(ml_dtypes.bfloat16)]
    for column, want, name in ((0, want16[0], "float16"), (1, want16[1], "bfloat16")):
        got, want = sixteen[column::2], want.astype(np.float32)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        wrong = np.nonzero(~same)[0]
        assert not wrong.size, (
            f"{name}: {len(wrong)} values differ, first {values[wrong[:5]].tolist()}: opgen "
            f"{got[wrong[:5]].tolist()}, numpy {want[wrong[:5]].tolist()}"
        )
    formats = [
        ("float8_e4m3fn", TensorProto.FLOAT8E4M3FN),
        ("float8_e4m3fnuz", TensorProto.FLOAT8E4M3FNUZ),
        ("float8_e5m2", TensorProto.FLOAT8E5M2),
        ("float8_e5m2fnuz", TensorProto.FLOAT8E5M2FNUZ),
    ]
    for (name, number), line in zip(formats, printed, strict=True):
        words = line.split()
        decoded = np.array([int(w, 16) for w in words[:256]], np.uint32).view(np.float32)
        codes = np.arange(256, dtype=np.uint8)
        want = codes.view(getattr(ml_dtypes, name)).astype(np.float32)
        np.testing.assert_array_equal(decoded, want, err_msg=f"{name} decoding")
        encoded = np.array([int(w, 16) for w in words[256:]], np.uint8).reshape(-1, 2)
        ours = encoded.view(getattr(ml_dtypes, name)).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and overflow are the point
            unsaturated = values.astype(getattr(ml_dtypes, name)).astype(np.float32)
        # ONNX Runtime's Python API returns no float8 array: its values come back through a
        # Cast to float32, which is exact.
        graph = helper.make_graph(
            [
                helper.make_node("Cast", ["x"], ["y"], to=number, saturate=1),
                helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT),
            ],
            "cast",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
            [helper.make_tensor_value_info("z", TensorProto.FLOAT, [None])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = 10
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        (saturated,) = session.run(None, {"x": values})
        for column, want, what in (
            (0, saturated, "saturating"),
            (1, unsaturated, "not saturating"),
        ):
            # NaN is compared as NaN, -0 as -0.
            same = (ours[:, column].view(np.uint32) == want.view(np.uint32)) | (
                np.isnan(ours[:, column]) & np.isnan(want)
            )
            wrong = np.nonzero(~same)[0]
            assert not wrong.size, (
                f"{name}, {what}: {len(wrong)} values differ, first "
                f"{values[wrong[:5]].tolist()}: opgen {ours[wrong[:5], column].tolist()}, "
                f"expected {want[wrong[:5]].tolist()}"
            )


_FOUR_BIT = r"""
#include <cstdio>
#include <iostream>
#include <vector>
#include "opgen/runtime.h"
template <bool Signed>
void print(const std::vector<uint8_t>& bytes, int64_t count) {  // unpacked, then packed again
  std::vector<opgen::int4_of<Signed>> values(static_cast<size_t>(count));
  opgen::unpack_4bit(bytes.data(), count, values.data());
  for (const auto& value : values) std::printf("%d ", static_cast<int>(value));
  std::vector<uint8_t> packed(static_cast<size_t>(opgen::packed_4bit_bytes(count)), 0xaa);
  opgen::pack_4bit(values.data(), count, packed.data());
  std::printf("|");
  for (uint8_t byte : packed) std::printf(" %d", byte);
  std::printf("\n");
}
int main() {  // stdin: the element count, then the packed bytes
  int64_t count;
  std::cin >> count;
  std::vector<uint8_t> bytes;
  int byte;
  while (std::cin >> byte) bytes.push_back(static_cast<uint8_t>(byte));
  print<true>(bytes, count);
  print<false>(bytes, count);
  using S = std::numeric_limits<opgen::int4>;
  using U = std::numeric_limits<opgen::uint4>;
  std::printf("%d %d %d %d %d %d %d\n", int(S::lowest()), int(S::max()), int(U::lowest()), int(U::max()),
              S::is_signed && S::is_integer, !U::is_signed && U::is_integer, S::digits * 10 + U::digits);
  for (int64_t v : {-17, -9, -8, -1, 0, 7, 8, 15, 16, 1000}) {  // wrapping and saturating
    std::printf("%d %d %d %d\n", static_cast<int>(opgen::int4(v)), static_cast<int>(opgen::uint4(v)),
                static_cast<int>(opgen::int4::saturated(v)), static_cast<int>(opgen::uint4::saturated(v)));
  }
}
"""


def test_4bit_packing_agrees_with_onnx_runtime_and_ml_dtypes(tmp_path):
    """runtime.h unpacks ONNX's two-per-byte int4 and uint4 tensors as ONNX Runtime reads them
    (its Cast to int8 and uint8), for odd and even counts, and packs them back into the same
    bytes with the unused high nibble of an odd count zero; int4(v) keeps v's low four bits, as
    a conversion to int8_t keeps the low eight, and saturated(v) clamps; numeric_limits gives
    their ranges, as a kernel written for any integer type reads them."""
    import ml_dtypes
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    program = _compiled(_FOUR_BIT, tmp_path / "four_bit")
    rng = np.random.default_rng(4)
    for count in [0, 1, 2, 3, 7, 8, 255, 256, 1001]:
        packed = rng.integers(0, 256, (count + 1) // 2, dtype=np.uint8)
        if count % 2:
            packed[-1] &= 0x0F  # ONNX leaves the unused nibble 0
        printed = subprocess.run(
            [str(program)],
            input=f"{count} " + " ".join(map(str, packed)),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        for line, number, to, np_type in (
            (printed[0], TensorProto.INT4, TensorProto.INT8, ml_dtypes.int4),
            (printed[1], TensorProto.UINT4, TensorProto.UINT8, ml_dtypes.uint4),
        ):
            values, repacked = line.split("|")
            graph = helper.make_graph(
                [helper.make_node("Cast", ["x"], ["y"], to=to)],
                "cast",
                [helper.make_tensor_value_info("x", number, [None])],
                [helper.make_tensor_value_info("y", to, [None])],
            )
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
            model.ir_version = 10
            buffer = np.zeros(count, np.uint8)  # ONNX Runtime reads the bytes of this shape
            buffer[: packed.size] = packed
            value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffer, number)
            session = ort.InferenceSession(model.SerializeToString())
            want = session.run_with_ort_values(["y"], {"x": value})[0].numpy()
            assert [int(v) for v in values.split()] == want.tolist(), (count, number)
            assert want.astype(np_type).astype(np.int64).tolist() == want.tolist()
            assert [int(b) for b in repacked.split()] == packed.tolist(), (count, number)
    assert printed[2].split() == ["-8", "7", "0", "15", "1", "1", "34"]  # numeric_limits
    wraps = [list(map(int, line.split())) for line in printed[3:]]
    for v, (int4, uint4, int4_saturated, uint4_saturated) in zip(
        [-17, -9, -8, -1, 0, 7, 8, 15, 16, 1000], wraps, strict=True
    ):
        assert int4 == ((v + 8) % 16) - 8 and uint4 == v % 16, v
        assert int4_saturated == min(max(v, -8), 7) and uint4_saturated == min(max(v, 0), 15), v
