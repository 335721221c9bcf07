"""Test-only op definitions (tests/opdefs/) go through the whole pipeline in a temporary
project: generate, build with plain CMake via `python -m generator build` (once, for all of
them), then run each op's generated parity tests in a fresh interpreter. Each definition
covers a group of features that the shipped ops do not exercise (see its first lines)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from output_warnings import warning_lines
from run_once import made_once

ROOT = Path(__file__).resolve().parent.parent
FEATURE_OPS = sorted((ROOT / "tests" / "opdefs").glob("*.yaml"))


def _run(project: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}"}
    env.pop("OPGEN_BUILD_DIR", None)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


def _generate_and_build(root: Path) -> None:
    """No definition has a CUDA kernel: a CPU-only project, whose generation and build (CMake's
    configuration with the variables `opgen build` passes, and every compiler message, shown
    without -q) warn of nothing (what counts: output_warnings.py)."""
    (root / "opdefs").mkdir()
    for definition in (ROOT / "tests" / "opdefs").iterdir():
        shutil.copy(definition, root / "opdefs")
    generate = _run(root, sys.executable, "-m", "generator")
    assert generate.returncode == 0, generate.stdout + generate.stderr
    build = _run(root, sys.executable, "-m", "generator", "build")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    assert not list((root / "build" / "lib").glob("*cuda*")), "no CUDA library: CPU only"
    found = warning_lines(generate.stdout, generate.stderr, build.stdout, build.stderr)
    assert not found, "\n".join(found[:20])


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """Every feature definition, generated and built together (one CMake build, once per run:
    the test processes share it, and the pipelines below run side by side)."""
    return made_once(tmp_path_factory, "feature_ops", _generate_and_build)


@pytest.mark.parametrize("definition", FEATURE_OPS, ids=[p.stem for p in FEATURE_OPS])
def test_feature_op_pipeline(project, definition):
    tests = _run(
        project,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",  # as in the project's own run (pyproject.toml)
        "--rootdir",
        str(project),
        f"generated/{definition.stem}",
    )
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout


# ONNX Runtime's shape-inference API reports an input of unknown rank as rank 0 (like a scalar)
# and an input named "" as one without element type. Our inference must not turn either into a
# wrong shape: ONNX Runtime trusts inferred shapes (a wrong one fails the model's load against
# its declared output shape, or misleads the optimisers).
_EDGE_CASES = r"""
import numpy as np, onnx
from onnx import TensorProto, helper
from generated import _testing

def run(inputs, input_infos, declared_y):
    node = helper.make_node("MulAdd", inputs, ["Y"], domain="test.shapes")
    graph = helper.make_graph([node], "g", input_infos, [declared_y])
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("test.shapes", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)
    session = _testing.session(model, "test_shapes")
    feeds = {"A": np.ones((2, 3), np.float32), "B": np.full((3,), 2, np.float32)}
    return session.get_outputs()[0].shape, session.run(None, feeds)[0]

# A of unknown rank, B of shape [3]: a rule run on "A is a scalar" would claim Y is [3].
shape, y = run(
    ["A", "B"],
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
    helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["rows", 3]),
)
assert shape == ["rows", 3], shape
assert y.shape == (2, 3) and (y == 2).all(), y

# C named "" (absent, as the TorchScript exporter writes it): inferred from A and B alone.
shape, y = run(
    ["A", "B", ""],
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["rows", 3]),
     helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
    onnx.ValueInfoProto(name="Y"),
)
assert shape == ["rows", 3], shape
assert y.shape == (2, 3) and (y == 2).all(), y
print("edge cases ok")
"""


# A tensor attribute reaches the kernel as ONNX Runtime reads it: raw bytes and typed fields
# alike; one it cannot read, or another attribute type under the name, fails the session naming
# the op and the attribute (and ONNX Runtime's own reason), never a crash; sessions created on
# many threads at once each get their own node's values.
_TENSOR_ATTRIBUTE_EDGE_CASES = r"""
import re
import threading
import numpy as np, onnx, pytest
from onnx import TensorProto, helper, numpy_helper
from generated import _testing

def model(weights):
    node = helper.make_node("TableAffine", ["X"], ["Y"], domain="test.tensorattr")
    node.attribute.append(weights if isinstance(weights, onnx.AttributeProto)
                          else helper.make_attribute("weights", weights))
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n"])
    graph = helper.make_graph([node], "g", [x], [onnx.ValueInfoProto(name="Y")])
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("test.tensorattr", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)

def run(weights, x=(1.0, 2.0, 3.0)):
    session = _testing.session(model(weights), "test_tensorattr")
    return session.run(None, {"X": np.array(x, np.float32)})[0]

halves = np.array([0.5, -2.0], np.float16)
typed = helper.make_tensor("w", TensorProto.FLOAT16, [2], [0.5, -2.0])  # in int32_data
raw = helper.make_tensor("w", TensorProto.FLOAT16, [2], halves.tobytes(), raw=True)
for tensor in (typed, raw, numpy_helper.from_array(halves)):
    assert run(tensor).tolist() == [0.5, -4.0, 1.5], tensor
short = helper.make_tensor("w", TensorProto.FLOAT16, [2], [0.5, -2.0])
short.dims[:] = [8]  # dims that its data does not fill
unreadable = ("TableAffine: attribute 'weights' must be a readable TENSOR, got an empty list, "
              "a GRAPH, a SPARSE_TENSOR, TENSORS or a TENSOR ONNX Runtime cannot read "
              "(ONNX Runtime: ")
with pytest.raises(Exception, match=re.escape(unreadable) + ".+"):
    run(short)
tensors = helper.make_attribute("weights", [numpy_helper.from_array(halves)])
with pytest.raises(Exception, match=re.escape(unreadable)):
    run(tensors)
with pytest.raises(Exception, match="TableAffine: attribute 'weights' must be of type TENSOR, "
                   "got FLOATS"):
    run([0.5, -2.0])
with pytest.raises(Exception, match="TableAffine: attribute 'weights' must be a tensor of "
                   "float16, got one of float32"):
    run(numpy_helper.from_array(halves.astype(np.float32)))

results, errors = {}, []
def worker(i):
    try:
        results[i] = run(numpy_helper.from_array(np.array([i], np.float16)), x=(1.0,))[0]
    except Exception as error:  # noqa: BLE001
        errors.append(error)
threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors and results == {i: float(i) for i in range(16)}, (errors, results)
print("tensor attribute edge cases ok")
"""


def test_onnxruntime_tensor_attribute_edge_cases(project):
    result = _run(project, sys.executable, "-c", _TENSOR_ATTRIBUTE_EDGE_CASES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tensor attribute edge cases ok" in result.stdout


# `replaces: onnxruntime` (tests/opdefs/replaced_gelu.yaml: com.microsoft::Gelu as GELU's tanh
# approximation): a session that registers the domain's library runs the kernel, at every node
# of the op, in place of ONNX Runtime's exact Gelu; one that does not still runs ONNX Runtime's.
_REPLACED_BUILTIN = r"""
import numpy as np, torch
from onnx import TensorProto, helper
from generated import _testing

node = helper.make_node("Gelu", ["X"], ["H"], domain="com.microsoft")
again = helper.make_node("Gelu", ["H"], ["Y"], domain="com.microsoft")
graph = helper.make_graph(
    [node, again], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None])])
opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
model = helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)
x = np.linspace(-4, 4, 101, dtype=np.float32)
t = torch.from_numpy(x).double()
tanh = torch.nn.functional.gelu(torch.nn.functional.gelu(t, approximate="tanh"), approximate="tanh")
exact = torch.nn.functional.gelu(torch.nn.functional.gelu(t))
assert (tanh - exact).abs().max() > 1e-4  # the two are told apart
(ours,) = _testing.session(model, "com_microsoft").run(None, {"X": x})
(builtin,) = _testing.session(model, None).run(None, {"X": x})
np.testing.assert_allclose(ours, tanh.numpy(), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(builtin, exact.numpy(), rtol=1e-5, atol=1e-6)
print("replaced ok")
"""


def test_a_replacing_kernel_runs_in_place_of_onnxruntimes_own(project):
    result = _run(project, sys.executable, "-c", _REPLACED_BUILTIN)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "replaced ok" in result.stdout


def test_onnxruntime_inference_edge_cases(project):
    result = _run(project, sys.executable, "-c", _EDGE_CASES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "edge cases ok" in result.stdout


# ONNX Runtime picks CastTo's kernel by the output type its inference gives the node. On an
# input of unknown rank the shape rule cannot run, and a custom op cannot set a type without a
# shape: ONNX Runtime falls back to the first kernel. That must fail naming why, never convert
# to another type in silence; a declared output type that disagrees fails as ONNX Runtime's.
_CHOSEN_TYPE_EDGE_CASES = r"""
import numpy as np, onnx, pytest
from onnx import TensorProto, helper
from generated import _testing

def run(to, x_shape, declared_y):
    node = helper.make_node("CastTo", ["X"], ["Y"], domain="test.typed", to=to)
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)
    graph = helper.make_graph([node], "g", [x], [declared_y])
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("test.typed", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)
    session = _testing.session(model, "test_typed")
    return session.run(None, {"X": np.array([1.5, -2.0], np.float32)})[0]

untyped = onnx.ValueInfoProto(name="Y")
for to, dtype in ((1, np.float32), (7, np.int64), (10, np.float16), (9, np.bool_)):
    y = run(to, [2], untyped)
    assert y.dtype == dtype and (y == np.array([1.5, -2.0]).astype(dtype)).all(), (to, y)
y = run(1, None, untyped)  # unknown rank, the first kernel's type: right by chance
assert y.dtype == np.float32, y
with pytest.raises(Exception, match="attribute 'to' names element type 7, but ONNX Runtime "
                   "inferred element type 1 .*give the model's inputs a known rank of at least 1"):
    run(7, None, untyped)
with pytest.raises(Exception, match=r"Type \(tensor\(int64\)\) of output arg \(Y\)"):
    run(10, [2], helper.make_tensor_value_info("Y", TensorProto.INT64, [2]))
# A FLOAT 7.0: ONNX's Python inference refuses it as ONNX Runtime does (never read as 7, nor
# as a TypeError).
import generated
generated.register_all()
node = helper.make_node("CastTo", ["X"], ["Y"], domain="test.typed")
node.attribute.append(helper.make_attribute("to", 7.0))
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])], [onnx.ValueInfoProto(name="Y")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("test.typed", 1)], ir_version=_testing.IR_VERSION)
with pytest.raises(onnx.shape_inference.InferenceError,
                   match="CastTo: attribute 'to' must be of type INT, got FLOAT"):
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
with pytest.raises(Exception, match=r"attribute 'to' must be one of \[1, 7, 10, 9\] "
                   r"\(U: float32, int64, float16, bool\), got 16"):
    run(16, [2], untyped)
print("chosen type edge cases ok")
"""


def test_onnxruntime_type_chosen_by_an_attribute_edge_cases(project):
    result = _run(project, sys.executable, "-c", _CHOSEN_TYPE_EDGE_CASES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "chosen type edge cases ok" in result.stdout


# The PyTorch op takes a torch.dtype where ONNX has the number: every way a dtype reaches it
# (eager, fake, a default left out and exported by both exporters) and the dtypes it must refuse.
_TORCH_DTYPE_ARGUMENT_EDGE_CASES = r"""
import os, re, tempfile, warnings
import numpy as np, onnx, pytest, torch
import generated
from generated import _testing

op = torch.ops.test_typed.cast_to
x = torch.tensor([1.5, -2.0])
allowed = "attribute 'to' must be one of [1, 7, 10, 9] (U: float32, int64, float16, bool), got "
for dtype in (torch.float32, torch.int64, torch.float16, torch.bool):
    y, y1 = op(x, to=dtype)
    assert y.dtype == y1.dtype == dtype and torch.equal(y, x.to(dtype)), (dtype, y)
    with torch._subclasses.FakeTensorMode() as mode:
        assert op(mode.from_tensor(x), to=dtype)[0].dtype == dtype
# Left out or None: the definition's default (the schema says None: AOTInductor's serializer
# refuses a ScalarType default, which PyTorch stores as an int).
assert op(x)[0].dtype == op(x, to=None)[0].dtype == torch.int64
assert "ScalarType? to=None" in str(op.default._schema), op.default._schema
# Refused with the allowed list, eagerly and in the fake kernel; a dtype ONNX lacks is 0 there.
for dtype, number in ((torch.float64, 11), (torch.uint8, 2), (torch.complex32, 0)):
    with pytest.raises(ValueError, match=re.escape(allowed + str(number))):
        op(x, to=dtype)
    with torch._subclasses.FakeTensorMode() as mode:
        with pytest.raises(RuntimeError, match="attribute 'to' must be one of"):
            op(mode.from_tensor(x), to=dtype)
# A quantized dtype: the stable ABI refuses to pass it to the kernel (an error, not a crash).
with pytest.raises(RuntimeError, match="ScalarType"):
    op(x, to=torch.quint8)
# An int is PyTorch's ScalarType index (10: complex128), not ONNX's number (10: float16).
with pytest.raises(ValueError, match=re.escape(allowed + "15")):
    op(x, to=10)
compiled = torch.compile(lambda t: op(t, to=torch.bool), fullgraph=True, dynamic=True)
assert compiled(x)[0].dtype == torch.bool

class Default(torch.nn.Module):  # leaves `to` out: the exported node must say int64 (7)
    def forward(self, t):
        return op(t)[0]

class Half(torch.nn.Module):
    def forward(self, t):
        return op(t, to=torch.float16)[0]

for exporter in ("dynamo", "torchscript"):
    for model, number, dtype in ((Default(), 7, np.int64), (Half(), 10, np.float16)):
        path = os.path.join(tempfile.mkdtemp(), "model.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            generated.export_model(model, (x,), path, exporter=exporter, input_names=["X"], output_names=["Y"])
        exported = onnx.load(path)
        node = next(n for n in exported.graph.node if n.op_type == "CastTo")
        assert {a.name: a.i for a in node.attribute}["to"] == number, (exporter, node)
        y = _testing.session(exported, "test_typed").run(None, {"X": x.numpy()})[0]
        assert y.dtype == dtype, (exporter, y.dtype)
# AOTInductor with the default left out (torch 2.13 refused `ScalarType to=int64` there).
import torch._inductor
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    program = torch.export.export(Default(), (x,))
    package = torch._inductor.aoti_compile_and_package(
        program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    y = torch._inductor.aoti_load_package(package)(x)
y = y[0] if isinstance(y, (list, tuple)) else y
assert y.dtype == torch.int64 and torch.equal(y, x.to(torch.int64)), y
print("dtype argument edge cases ok")
"""


def test_torch_dtype_argument_edge_cases(project):
    result = _run(project, sys.executable, "-c", _TORCH_DTYPE_ARGUMENT_EDGE_CASES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dtype argument edge cases ok" in result.stdout


STRING_ARGUMENTS = r"""
import resource
import torch
import generated

probe = torch.ops.opgen_probe.attribute_probe
x, offset = torch.ones(4), torch.tensor(1)
text = "s" * 100_000


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


for _ in range(200):  # warm up the allocator
    probe(x, offset, bias=0.0, mode=text, tags=[text])
before = peak_mib()
for _ in range(2000):
    probe(x, offset, bias=0.0, mode=text, tags=[text, text])
print(f"grew {peak_mib() - before:.1f} MiB")
"""


def test_native_string_arguments_do_not_leak(project):
    """Each call passes three 100 KB strings to the native kernel: 2000 calls would keep 600 MB
    if the strings leaked (torch 2.13's own unboxing of a str argument does: we unbox them)."""
    result = _run(project, sys.executable, "-c", STRING_ARGUMENTS)
    assert result.returncode == 0, result.stderr[-3000:]
    grown = float(result.stdout.split()[1])
    assert grown < 50, result.stdout
