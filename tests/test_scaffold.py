"""`python -m generator new`: a new op from nothing to passing parity tests in three commands
(new, build, pytest), never overwriting, and bad arguments caught before anything is written."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(project: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the project itself comes from the cwd
    env.pop("OPGEN_BUILD_DIR", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _digest(directory: Path) -> dict[str, str]:
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_new_op_builds_and_passes_its_generated_tests(tmp_path):
    new = _run(
        tmp_path,
        "-m", "generator", "new", "MyScale",
        "--package", "generated",
        "--domain", "test.scaffold",
        "--inputs", "X,W*",
        "--outputs", "Y,Z",
        "--attribute", "alpha:float=1.0",
        "--attribute", "eps:float=1e-6",
        "--attribute", "steps:int",
        "--attribute", "sizes:ints=1,2",
        "--attribute", "mode:string=fast",
        "--attribute", "scale:float?",
        "--dtypes", "float32,float64,int64",
        "--dtype-attribute", "to=float16,int32,bool",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    # A variadic output beside it: a Tensor[] return in PyTorch.
    each = _run(
        tmp_path, "-m", "generator", "new", "Each", "-q", "--package", "generated",
        "--domain", "test.scaffold", "--inputs", "A,X*", "--outputs", "Z,Y*",
        "--dtypes", "float32,int64",
    )  # fmt: skip
    assert each.returncode == 0, each.stdout + each.stderr
    assert "variadic: true, same_shape_as: X" in (tmp_path / "opdefs" / "each.yaml").read_text()
    assert "-> (Tensor, Tensor[])" in (tmp_path / "generated" / "each" / "torch_op.py").read_text()
    definition = tmp_path / "opdefs" / "my_scale.yaml"
    # The last output's type is the one `to` names: the PyTorch op takes a torch.dtype there.
    assert "chosen_by: to" in definition.read_text()
    assert "{name: Z, type: U, same_shape_as: X, doc: TODO}" in definition.read_text()
    assert (
        "ScalarType? to=None" in (tmp_path / "generated" / "my_scale" / "torch_op.py").read_text()
    )
    kernel = tmp_path / "opdefs" / "my_scale_kernel.h"
    assert "TODO" in definition.read_text() and "TODO" in kernel.read_text()
    assert "{name: scale, type: float, required: false, doc: TODO}" in definition.read_text()
    assert "{name: eps, type: float, default: 1.0e-06, doc: TODO}" in definition.read_text()
    assert "{name: W, type: T, variadic: true, doc: TODO}" in definition.read_text()
    assert (tmp_path / "generated" / "my_scale" / "test_my_scale.py").is_file()
    assert "next: opgen build" in new.stdout
    assert 'package = "generated"' in (tmp_path / "opgen.toml").read_text()

    build = _run(tmp_path, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = _run(
        tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated/my_scale",
        "generated/each",
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout

    # The generated files are in sync with the scaffolded definition.
    check = _run(tmp_path, "-m", "generator", "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_new_ops_without_pytorch_run_in_onnxruntime_only(tmp_path):
    """--no-torch, --dtypes string (PyTorch has no string tensors), a variadic output without
    PyTorch and tensor attributes (no PyTorch side yet): the ops build in one domain and pass
    their tests against one-node models."""
    for op, flags in (
        ("OrtOnly", ["--no-torch", "--inputs", "X,Rest*"]),
        ("Texts", ["--dtypes", "string"]),
        (
            "Each",
            ["--no-torch", "--inputs", "A,X*", "--outputs", "Z,Y*", "--dtypes", "float32,int64"],
        ),
        (
            "Tabled",
            ["--attribute", "table:tensor(float16)", "--attribute", "keys:tensor(uint32)?"],
        ),
    ):
        new = _run(
            tmp_path, "-m", "generator", "new", op, "-q", "--package", "generated",
            "--domain", "test.ortonly", *flags,
        )  # fmt: skip
        assert new.returncode == 0, new.stdout + new.stderr
    for stem in ("ort_only", "texts", "each", "tabled"):
        definition = (tmp_path / "opdefs" / f"{stem}.yaml").read_text()
        assert "torch:" not in definition and "--no-torch" in definition
        assert not (tmp_path / "generated" / stem / "torch_op.py").exists()
    assert '"x\\0y"' in (tmp_path / "opdefs" / "texts.yaml").read_text()
    assert "variadic: true, same_shape_as: X" in (tmp_path / "opdefs" / "each.yaml").read_text()
    tabled = (tmp_path / "opdefs" / "tabled.yaml").read_text()
    assert "type: tensor, dtype: float16" in tabled and "table: [0.5]" in tabled
    assert "type: tensor, dtype: uint32, required: false" in tabled
    build = _run(tmp_path, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated")
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    collected = _run(tmp_path, "-m", "pytest", "-q", "--collect-only", "generated").stdout
    assert "test_single_node_parity[case0-string]" in collected, collected
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


def test_new_op_with_a_cuda_kernel_compiles_for_the_gpu_and_passes_its_tests(tmp_path):
    """--device cuda: the definition names a CUDA kernel too, and its stub (every output a copy
    of the first input, converted where the chosen type differs; a variadic output's values
    copied) is compiled by nvcc into both CUDA libraries; the tests pass as without it (the
    CUDA ones run on a GPU, `./dev test-gpu`). The op's names may be the stub's own."""
    common = ["-m", "generator", "new", "--package", "generated", "--domain", "test.cudascaffold"]
    new = _run(
        tmp_path, *common, "MyCopy", "--inputs", "copy,kThreads", "--outputs", "copy_elements,Z",
        "--dtypes", "float32,float16,int64", "--dtype-attribute", "to=float32,int32,bool",
        "--device", "cuda",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    assert "opdefs/my_copy_kernel.cuh" in new.stdout
    each = _run(
        tmp_path, *common, "Each", "-q", "--inputs", "A,X*", "--outputs", "Z,Y*",
        "--dtypes", "float32,int64", "--device", "cuda", "--device", "cuda",
    )  # fmt: skip
    assert each.returncode == 0, each.stdout + each.stderr
    for op in ("my_copy", "each"):
        assert f"  cuda: {op}_kernel.cuh\n" in (tmp_path / "opdefs" / f"{op}.yaml").read_text()
        assert "TODO" in (tmp_path / "opdefs" / f"{op}_kernel.cuh").read_text()

    build = _run(tmp_path, "-m", "generator", "build", "-q", "--cuda", "on")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    for library in (
        "libopgen_test_cudascaffold_cuda.so",
        "libopgen_test_cudascaffold_torch_cuda.so",
    ):
        symbols = subprocess.run(
            ["nm", "-C", str(tmp_path / "build" / "lib" / library)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "opgen::my_copy::compute_cuda<opgen::float16, bool>" in symbols, library
        assert "opgen::each::compute_cuda<long>" in symbols, library
    tests = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated")
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout
    check = _run(tmp_path, "-m", "generator", "--check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_new_op_with_a_cuda_kernel_of_what_cuda_does_not_carry_writes_nothing(tmp_path):
    new = _run(
        tmp_path, "-m", "generator", "new", "Words", "--package", "generated",
        "--dtypes", "string", "--device", "cuda",
    )  # fmt: skip
    assert new.returncode == 2
    assert "string tensors: not carried by CUDA kernels" in new.stderr
    assert "nothing written" in new.stderr
    assert list(tmp_path.iterdir()) == []


def test_new_never_overwrites(tmp_path):
    first = _run(tmp_path, "-m", "generator", "new", "Twice", "-q", "--package", "generated")
    assert first.returncode == 0, first.stderr
    (tmp_path / "opdefs" / "twice_kernel.h").write_text("// my work\n")
    before = _digest(tmp_path)
    second = _run(tmp_path, "-m", "generator", "new", "Twice", "--package", "generated")
    assert second.returncode == 2
    assert "exists; `new` never overwrites" in second.stderr
    assert _digest(tmp_path) == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["Bad-Name"], "is not a valid identifier"),
        (["Op", "--inputs", "X,X"], "a name appears twice"),
        (["Op", "--inputs", ""], "--inputs: an op without inputs (as ONNX's Constant) gets"),
        (["Op", "--inputs", "X*,W"], "--inputs: only the last name may be variadic (NAME*)"),
        (["Op", "--outputs", "Y*,Z"], "--outputs: only the last name may be variadic (NAME*)"),
        (["Op", "--outputs", "Y*"], "a variadic output pairs with the variadic input"),
        (
            ["Op", "--inputs", "X*", "--outputs", "Y*", "--dtypes", "string"],
            "a variadic output of strings or 4-bit integers is not carried yet",
        ),
        (
            ["Op", "--inputs", "X*", "--outputs", "Y*", "--dtype-attribute", "to=int8"],
            "--outputs Y* with --dtype-attribute",
        ),
        (["Op", "--inputs", "X,class"], "reserved"),
        (["Op", "--attribute", "alpha:double"], "type 'double' is not one of"),
        (["Op", "--attribute", "n:int=two"], "'two' is not a int value"),
        (["Op", "--attribute", "n:int?=2"], "expected NAME:TYPE, NAME:TYPE=DEFAULT or NAME:TYPE?"),
        (["Op", "--dtypes", "float32,float128"], "--dtypes"),
        (["Op", "--attribute", "t:tensor(bool)"], "a tensor attribute's dtype is one of"),
        (["Op", "--attribute", "t:tensor()"], "a tensor attribute's dtype is one of"),
        (["Op", "--attribute", "t:tensor(float32)=1"], "a tensor attribute takes no default"),
        (["Op", "--attribute", "t:tensor"], "type 'tensor' is not one of"),
        (
            ["Op", "--attribute", "t:tensor(int8)", "--torch-name", "a::b"],
            "a tensor attribute runs in ONNX Runtime alone for now",
        ),
        (["Op", "--domain", "bad domain"], "domain"),
        (["Op", "--no-torch", "--torch-name", "a::b"], "not allowed with argument"),
        (["Op", "--dtypes", "string,int32"], "string with other dtypes"),
        (["Op", "--dtypes", "string,string"], "string given more than once"),
        (["Op", "--dtypes", "string", "--torch-name", "a::b"], "PyTorch has no string tensors"),
        (["Op", "--dtype-attribute", "to"], "expected NAME=DTYPES"),
        (["Op", "--dtype-attribute", "X=float32"], "--dtype-attribute X: the name is taken"),
        (["Op", "--dtype-attribute", "to=float17"], "--dtype-attribute to: 'float17'"),
        (["Op", "--dtype-attribute", "to=int8,int8"], "--dtype-attribute to: int8 given more"),
        (["Op", "--dtype-attribute", "to=string"], "string is not scaffolded"),
        (
            ["Op", "--dtype-attribute", "a=int8", "--dtype-attribute", "b=int16"],
            "--dtype-attribute given twice",
        ),
    ],
)
def test_new_rejects_bad_arguments_and_writes_nothing(tmp_path, args, message):
    result = _run(tmp_path, "-m", "generator", "new", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir()), "nothing is written"


def test_new_op_of_integer_and_bool_dtypes_only(tmp_path):
    """No floating dtype: no tolerances to declare, and known values every dtype holds (1.5
    is no int8, -2 no uint16)."""
    new = _run(
        tmp_path, "-m", "generator", "new", "Bits", "-q", "--package", "generated",
        "--dtypes", "uint16,int8,bool",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    text = (tmp_path / "opdefs" / "bits.yaml").read_text()
    assert "tolerances: {}" in text and "[[1, 0], [0, 1]]" in text


def test_new_op_on_float8_builds_and_passes_its_generated_tests(tmp_path):
    """float8 first (its input and the chosen output): every runtime carries it, and the C++
    schema test, whose ONNX (Debian's 1.12) has no float8 model, runs at the first binding
    that ONNX knows (float16 in, int32 out)."""
    new = _run(
        tmp_path, "-m", "generator", "new", "Narrow", "-q", "--package", "generated",
        "--dtypes", "float8e4m3fn,float16", "--dtype-attribute", "to=float8e5m2,int32",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    text = (tmp_path / "opdefs" / "narrow.yaml").read_text()
    assert "float8e4m3fn: {rtol: 0.0, atol: 0.0}" in text
    build = _run(tmp_path, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated/narrow")
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


def test_new_op_on_int4_runs_in_onnx_runtime_and_passes_its_generated_tests(tmp_path):
    """int4 and uint4 make an op for ONNX Runtime alone (PyTorch computes nothing on them), whose
    kernel sees them one per byte (and converts them to the chosen output's type). A 4-bit type
    chosen by an attribute is not scaffolded (the identity's copy may not fit it)."""
    refused = _run(
        tmp_path, "-m", "generator", "new", "Nib", "-q", "--package", "generated",
        "--dtypes", "int4", "--torch-name", "generated::nib",
    )  # fmt: skip
    assert refused.returncode == 2 and "PyTorch computes nothing on int4" in refused.stderr
    chosen_4bit = _run(
        tmp_path, "-m", "generator", "new", "Nib", "-q", "--package", "generated",
        "--dtypes", "int4", "--dtype-attribute", "to=uint4,int8",
    )  # fmt: skip
    assert chosen_4bit.returncode == 2 and "uint4 is not scaffolded" in chosen_4bit.stderr
    new = _run(
        tmp_path, "-m", "generator", "new", "Nib", "-q", "--package", "generated",
        "--dtypes", "int4,uint4", "--dtype-attribute", "to=int8,int16",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    text = (tmp_path / "opdefs" / "nib.yaml").read_text()
    assert "torch:" not in text and 'reference: "X.to(U)"' in text
    build = _run(tmp_path, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated/nib")
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


def test_new_op_on_complex_runs_in_pytorch_alone_and_passes_its_generated_tests(tmp_path):
    """complex64 and complex128 make an op for PyTorch alone (kernel: {onnxruntime: false}),
    whose identity kernel copies std::complex values."""
    refused = _run(
        tmp_path, "-m", "generator", "new", "Spin", "-q", "--package", "generated",
        "--dtypes", "complex64", "--no-torch",
    )  # fmt: skip
    assert refused.returncode == 2 and "runs in PyTorch alone" in refused.stderr
    new = _run(
        tmp_path, "-m", "generator", "new", "Spin", "-q", "--package", "generated",
        "--dtypes", "complex64,complex128",
    )  # fmt: skip
    assert new.returncode == 0, new.stdout + new.stderr
    text = (tmp_path / "opdefs" / "spin.yaml").read_text()
    assert "onnxruntime: false" in text and "complex128: {rtol:" in text
    build = _run(tmp_path, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "generated/spin")
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout
