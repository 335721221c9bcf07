"""Python-free deployment of the natively registered ops (torch.api native, the default for
kernel ops): a TorchScript model and an AOTInductor package that call them run in a C++ program
with no Python interpreter (tests/cpp/deploy_runner.cc, built here against the torch wheel's
libtorch), and an AOTInductor package runs in Python with only the native libraries loaded,
not the generated package. The model is onnx/tutorials' group norm flow plus two more domains."""

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import generated  # noqa: F401 (registers the ops, with their fake kernels for export)
from generated import _support

# One test process runs the whole module (pytest-xdist's loadgroup): its tests share one compiled
# runner (a minute of g++ against libtorch).
pytestmark = pytest.mark.xdist_group("test_native_deployment")

ROOT = Path(__file__).resolve().parent.parent
TORCH_DIR = Path(importlib.util.find_spec("torch").submodule_search_locations[0])
DOMAINS = ("mydomain", "ai_opgen", "test_customop")

# onnx/tutorials' group norm example, as in opdefs/custom_group_norm.yaml's known case.
GROUP_NORM_KNOWN = [-1.3416407864998738, -0.4472135954999579, 1.894427190999916, 3.6832815729997477]


class Model(torch.nn.Module):
    def forward(self, X, num_groups, scale, bias, M, A):
        Y = torch.ops.mydomain.custom_group_norm(X, num_groups, scale, bias, epsilon=0.0)
        return Y, torch.ops.opgen.inverse(M), torch.ops.test_customop.custom_op_one(A, A)


def inputs(batch: int = 2) -> list[torch.Tensor]:
    matrices = torch.tensor([[4.0, 7.0], [2.0, 6.0]]).repeat(batch, 1, 1)
    return [
        torch.tensor([[[1.0, 2.0], [3.0, 4.0]]]),
        torch.tensor(1),
        torch.tensor([1.0, 2.0]),
        torch.tensor([0.0, 1.0]),
        matrices + torch.arange(batch).reshape(batch, 1, 1),
        torch.arange(batch * 3, dtype=torch.float32).reshape(batch, 3),
    ]


def libraries() -> list[str]:
    return [str(_support.torch_library(domain)) for domain in DOMAINS]


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Path:
    """deploy_runner, compiled against the torch wheel's headers and libraries."""
    path = tmp_path_factory.mktemp("runner") / "deploy_runner"
    include = TORCH_DIR / "include"
    command = [
        "g++", "-std=c++17", "-O1", "-w",
        f"-I{include}", f"-I{include / 'torch/csrc/api/include'}",
        str(ROOT / "tests/cpp/deploy_runner.cc"), "-o", str(path),
        f"-L{TORCH_DIR / 'lib'}", f"-Wl,-rpath,{TORCH_DIR / 'lib'}",
        "-ltorch", "-ltorch_cpu", "-lc10", "-ldl",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return path


def run(runner: Path, mode: str, model: Path, tensors: list, tmp_path: Path, libs: list[str]):
    torch.save(tensors, tmp_path / "inputs.pt")
    # An environment without Python's variables: nothing here may need them.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run(
        [str(runner), mode, str(model), str(tmp_path / "inputs.pt"), *libs],
        capture_output=True,
        text=True,
        env=env,
    )


def parse(stdout: str) -> list[torch.Tensor]:
    tensors = []
    for line in stdout.splitlines():
        dims, values = line.split("|")
        shape = [int(d) for d in dims.split(",")] if dims else []
        tensors.append(
            torch.tensor([float(v) for v in values.split()], dtype=torch.float64).reshape(shape)
        )
    return tensors


def assert_outputs(got: list[torch.Tensor], tensors: list[torch.Tensor]) -> None:
    want = Model()(*tensors)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w.double(), rtol=0, atol=0)
    known = torch.tensor(GROUP_NORM_KNOWN, dtype=torch.float64)
    torch.testing.assert_close(got[0].flatten(), known, rtol=1e-6, atol=1e-6)


def scripted(tmp_path: Path) -> Path:
    with (
        warnings.catch_warnings()
    ):  # TorchScript is deprecated in torch 2.13, yet C++ servers use it
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(Model()).save(str(tmp_path / "model.pt"))
    return tmp_path / "model.pt"


def test_torchscript_model_runs_in_cpp_without_python(runner, tmp_path):
    model = scripted(tmp_path)
    for batch in (2, 4):
        result = run(runner, "torchscript", model, inputs(batch), tmp_path, libraries())
        assert result.returncode == 0, result.stderr
        assert_outputs(parse(result.stdout), inputs(batch))


def test_cpp_program_gets_the_kernels_errors(runner, tmp_path):
    """A bad input is an exception with the op's own message, as in Python."""
    model = scripted(tmp_path)
    bad = inputs()
    bad[2] = torch.tensor([1.0, 2.0, 3.0])  # scale must have C = 2 elements
    with pytest.raises(ValueError) as in_python:
        Model()(*bad)
    message = str(in_python.value).splitlines()[0]
    assert message.startswith("CustomGroupNorm: "), message
    result = run(runner, "torchscript", model, bad, tmp_path, libraries())
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stderr, result.stderr


def test_cpp_program_with_autograd_on_gets_results_or_an_error_naming_the_op(runner, tmp_path):
    """A C++ program that runs the model with autograd on (no c10::InferenceMode) goes through
    the libraries' own Autograd kernels: the same results; and an input that requires grad is an
    error naming the op and the input (PyTorch's fallback let the gradient come out as None,
    with a warning at most)."""
    model = scripted(tmp_path)
    result = run(runner, "torchscript-autograd", model, inputs(), tmp_path, libraries())
    assert result.returncode == 0, result.stderr
    assert_outputs(parse(result.stdout), inputs())
    grad = inputs()
    grad[2].requires_grad_()  # scale
    result = run(runner, "torchscript-autograd", model, grad, tmp_path, libraries())
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "mydomain::custom_group_norm: no gradient flows through this op here: "
        f"{libraries()[0]} was loaded without its Python package generated"
    ) in result.stderr, result.stderr
    assert "input 'scale' requires grad" in result.stderr


def test_cpp_program_without_the_libraries_fails_clearly(runner, tmp_path):
    result = run(runner, "torchscript", scripted(tmp_path), inputs(), tmp_path, [])
    assert result.returncode == 1
    assert "Unknown builtin op: mydomain::custom_group_norm" in result.stderr, result.stderr


AOTI_IN_PYTHON = r"""
import sys
import torch
import torch._inductor
package, inputs, *libraries = sys.argv[1:]
for library in libraries:
    torch.ops.load_library(library)
outputs = torch._inductor.aoti_load_package(package)(*torch.load(inputs))
assert not any(name == "generated" or name.startswith("generated.") for name in sys.modules)
for output in outputs:
    values = output.double().flatten().tolist()
    print(",".join(map(str, output.shape)) + "|" + " ".join(repr(v) for v in values))
"""


@pytest.mark.slow
# torch 2.13's own export and inductor code
@pytest.mark.filterwarnings(
    "ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated:FutureWarning"
)
def test_aoti_package_runs_from_the_native_libraries_alone(runner, tmp_path):
    """torch.export with a dynamic batch and aoti_compile_and_package (Python, with the
    generated package's fake kernels); then the package runs in a Python process that loads
    only the native libraries, and in the C++ program, at another batch size."""
    import torch._inductor

    batch = torch.export.Dim("batch", min=1, max=64)
    dynamic = [None] * 4 + [{0: batch}, {0: batch}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        program = torch.export.export(Model(), tuple(inputs(2)), dynamic_shapes=dynamic)
        package = torch._inductor.aoti_compile_and_package(
            program, package_path=str(tmp_path / "model.pt2")
        )
    torch.save(inputs(5), tmp_path / "inputs.pt")
    result = subprocess.run(
        [sys.executable, "-c", AOTI_IN_PYTHON, package, str(tmp_path / "inputs.pt"), *libraries()],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # no generated/ to import from here
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_outputs(parse(result.stdout), inputs(5))
    result = run(runner, "aoti", Path(package), inputs(5), tmp_path, libraries())
    assert result.returncode == 0, result.stderr
    assert_outputs(parse(result.stdout), inputs(5))


def test_an_op_that_cannot_be_differentiated_runs_no_python_per_call():
    """custom_op_two (float in, int32 out) has no gradient to give: its only kernels are C++ (CPU)
    and the Python fake kernel, so an eager call runs no Python. custom_op_one (no formulas,
    but float in and out) and inverse (a formula) get the Python Autograd kernel: without it,
    torch.func.grad and forward-mode AD would give zeros without an error."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    assert not has_kernel("test_customop::custom_op_two", "Autograd")
    assert has_kernel("test_customop::custom_op_one", "Autograd")
    assert has_kernel("opgen::inverse", "Autograd")
    assert "custom_op_two_torch.cc" in torch._C._dispatch_dump("test_customop::custom_op_two")
    x = torch.ones(3, requires_grad=True)
    y = torch.ops.test_customop.custom_op_two(x)
    assert y.dtype == torch.int32 and not y.requires_grad


SECOND_COPY = r"""
import sys
import torch
torch.ops.load_library(sys.argv[1])  # a copy of the library, loaded by hand
try:
    import generated
except RuntimeError as error:
    print("refused:", error)
"""


def test_a_second_copy_of_a_native_library_is_refused_clearly(tmp_path):
    """Two builds of one domain cannot both register its ops (PyTorch takes one definition):
    importing the package after loading another copy is an error naming both files, and
    loading a copy never ends the process (an error in a library's registration while it loads
    would: it is reported and the op left to the first copy)."""
    original = _support.torch_library("ai_opgen")
    copy = tmp_path / original.name
    copy.write_bytes(original.read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", SECOND_COPY, str(copy)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"refused: {copy} is loaded in this process, so {original}" in result.stdout
    both = subprocess.run(
        [sys.executable, "-c", f"import torch; torch.ops.load_library({str(original)!r}); "
         f"torch.ops.load_library({str(copy)!r}); print('alive')"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert "alive" in both.stdout, both.stderr[-3000:]
    assert "opgen: Inverse was not registered by this library" in both.stderr
