"""Regression tests for run-time inputs that once crashed a process or gave a wrong answer in
silence (issue 16): shapes whose sizes overflow int64, float64 values near the limit of the type.
The generated parity tests cover what every op shares (wrong attribute types, forward-mode AD,
torch.func); these cover the shipped kernels' own arithmetic."""

import re
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from generated import _testing


def _model(nodes, inputs, outputs, domain: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)


def _inverse_of_zeros_model() -> onnx.ModelProto:
    """Inverse of a ConstantOfShape: any client can send the shape."""
    zeros = helper.make_node(
        "ConstantOfShape",
        ["shape"],
        ["X"],
        value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]),
    )
    inverse = helper.make_node("Inverse", ["X"], ["Y"], domain="ai.opgen")
    return _model(
        [zeros, inverse],
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        "ai.opgen",
    )


# Shapes whose sizes overflow int64, though some hold no element.
OVERFLOWING = pytest.mark.parametrize(
    "shape",
    [[0, 2**32, 2**32], [0, 2**62, 4], [2**40, 0, 2**40], [0, 2**63 - 1, 2]],
    ids=["n*n-wraps-to-0", "product-overflows", "empty-middle", "int64-max"],
)


def _outcome_in_a_subprocess(statements: str) -> str:
    """Runs `statements` (with numpy, generated, _testing and this module's models imported) in
    a fresh interpreter and says "ERROR <message>" or "NO ERROR": a crash fails the test that
    asked, not the whole run."""
    script = (
        "import numpy as np, generated\n"
        "from generated import _testing\n"
        "from tests.test_hostile_runtime import _codebook_model, _inverse_of_zeros_model\n"
        "try:\n"
        + textwrap.indent(textwrap.dedent(statements), "    ")
        + "\nexcept Exception as error:\n    print('ERROR', error)\n"
        "else:\n    print('NO ERROR')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"the process died: {result.returncode}\n{result.stderr}"
    return result.stdout


@OVERFLOWING
def test_empty_input_whose_sizes_overflow_is_an_error_status(shape):
    """The kernel once divided numel by n * n, which wraps to 0 here: SIGFPE killed the process."""
    outcome = _outcome_in_a_subprocess(f"""
        session = _testing.session(_inverse_of_zeros_model(), "ai_opgen")
        session.run(None, {{"shape": np.array({shape}, dtype=np.int64)}})
    """)
    dims = ", ".join(str(d) for d in shape)
    assert f"Inverse: input 'X' has shape [{dims}], whose size overflows int64" in outcome


def _codebook_model(dims: list[int]) -> onnx.ModelProto:
    """CodebookDequantize whose tensor attribute has `dims` (no data: the product may be 0)."""
    codebook = TensorProto(name="codebook", data_type=TensorProto.FLOAT, dims=dims)
    if 0 not in dims:
        codebook.float_data.extend([0.5] * int(np.prod(dims)))
    node = helper.make_node("CodebookDequantize", ["X"], ["Y"], domain="ai.opgen")
    node.attribute.append(helper.make_attribute("codebook", codebook))
    return _model(
        [node],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [None])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None])],
        "ai.opgen",
    )


@OVERFLOWING
def test_tensor_attribute_whose_sizes_overflow_is_an_error_status(shape):
    """A tensor attribute reaches the kernel as a view, as an input does: its sizes are checked
    where it is read (before, an empty [0, 2^32, 2^32] reached the kernel, whose size_from(1)
    overflowed int64)."""
    outcome = _outcome_in_a_subprocess(f"""
        session = _testing.session(_codebook_model({shape}), "ai_opgen")
        session.run(None, {{"X": np.zeros(2, dtype=np.uint8)}})
    """)
    dims = ", ".join(str(d) for d in shape)
    assert f"attribute 'codebook' has shape [{dims}], whose size overflows int64" in outcome


def test_empty_input_of_representable_shape_is_still_valid():
    session = _testing.session(_inverse_of_zeros_model(), "ai_opgen")
    for shape in ([0, 3, 3], [2, 0, 0], [0, 2**20, 2**20]):
        (y,) = session.run(None, {"shape": np.array(shape, dtype=np.int64)})
        assert list(y.shape) == shape


def _group_norm_session():
    node = helper.make_node(
        "CustomGroupNorm",
        ["X", "num_groups", "scale", "bias"],
        ["Y"],
        domain="mydomain",
        epsilon=0.0,
    )
    double = TensorProto.DOUBLE
    model = _model(
        [node],
        [
            helper.make_tensor_value_info("X", double, None),
            helper.make_tensor_value_info("num_groups", TensorProto.INT64, []),
            helper.make_tensor_value_info("scale", double, None),
            helper.make_tensor_value_info("bias", double, None),
        ],
        [helper.make_tensor_value_info("Y", double, None)],
        "mydomain",
    )
    return _testing.session(model, "mydomain")


@pytest.mark.parametrize("magnitude", [1e300, 1.7e308, 1e-300])
def test_group_norm_near_the_float64_limits(magnitude):
    """The variance of values near 1e300 overflows to inf, and every output was 0.0; the
    normalized values do not depend on the magnitude, so they must equal those of X / magnitude
    (torch.nn.functional.group_norm itself returns zeros here, so it is no reference)."""
    gen = torch.Generator().manual_seed(3)
    unit = torch.rand(2, 4, 3, generator=gen, dtype=torch.float64) * 2 - 1
    X = unit * magnitude
    num_groups = torch.tensor(2)
    scale = torch.linspace(0.5, 2, 4, dtype=torch.float64)
    bias = torch.linspace(-1, 1, 4, dtype=torch.float64)
    # epsilon 0, so that the problem at any magnitude is the unit problem
    want = torch.nn.functional.group_norm(unit, 2, scale, bias, 0.0)
    got_torch = torch.ops.mydomain.custom_group_norm(X, num_groups, scale, bias, 0.0)
    (got_ort,) = _group_norm_session().run(
        None,
        {
            "X": X.numpy(),
            "num_groups": num_groups.numpy(),
            "scale": scale.numpy(),
            "bias": bias.numpy(),
        },
    )
    torch.testing.assert_close(got_torch, want, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(torch.from_numpy(got_ort), want, rtol=1e-9, atol=1e-9)


def test_group_norm_with_inf_in_the_input_propagates_it():
    X = torch.tensor([[[1.0, float("inf")], [2.0, 3.0]]], dtype=torch.float64)
    Y = torch.ops.mydomain.custom_group_norm(
        X, torch.tensor(1), torch.ones(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    )
    assert torch.isnan(Y).all()  # as torch.nn.functional.group_norm gives


def test_empty_tensor_numpy_cannot_hold_is_an_error_naming_the_op():
    """PyTorch holds empty tensors of any shape whose strides fit int64; numpy refuses arrays of
    more than 2**63 - 1 bytes, empty or not. The Python registrations (through numpy) raised
    numpy's "array is too big" (found by the kernel fuzzer); now the op's name and the kernels'
    words. The native registration has no numpy in the way: it returns the empty result."""
    from generated import _support

    X = torch.empty(1, 0, 2**63 - 1)
    with pytest.raises(ValueError) as raised:
        try:
            _support.kernels("test_customop").custom_op_two(_support.to_numpy(X))
        except ValueError as error:  # what the `library` registration's CPU kernel does
            _support.name_the_op("CustomOpTwo", error, {"X": X})
    assert str(raised.value) == (
        "CustomOpTwo: input 'X' has shape [1, 0, 9223372036854775807], whose size in bytes "
        "overflows int64"
    )
    Y = torch.ops.test_customop.custom_op_two(X)
    assert Y.shape == X.shape and Y.dtype == torch.int32
    X = torch.empty(64, 0, 0, 2**63 - 1, dtype=torch.float64)
    ones = torch.ones(6, dtype=torch.float64)
    with pytest.raises(ValueError) as raised:
        torch.ops.mydomain.custom_group_norm(X, torch.tensor(2), ones, ones)
    # As ONNX Runtime says it (the kernels' own size check).
    assert str(raised.value) == (
        "CustomGroupNorm: input 'X' has shape [64, 0, 0, 9223372036854775807], whose size "
        "overflows int64"
    )


def test_native_op_that_cannot_allocate_says_what_and_names_the_op():
    """A broadcast view of 2**40 elements must be copied densely for the kernel, which cannot be
    done: PyTorch's stable ABI hands back no message, so ours names the op, the input, its shape
    and its size (never a crash, never the C++ macro text)."""
    X = torch.ones(1).expand(2**40)
    with pytest.raises(RuntimeError) as raised:
        torch.ops.test_customop.custom_op_one(X, X)
    assert str(raised.value) == (
        "CustomOpOne: cannot make a dense copy of input 'X' of shape [1099511627776] "
        "(4398046511104 bytes)"
    )


def test_native_op_names_dtypes_as_torch_does():
    with pytest.raises(ValueError, match=r"Inverse: unsupported input dtypes \(uint16\)"):
        torch.ops.opgen.inverse(torch.ones(2, 2, dtype=torch.uint16))
    with pytest.raises(ValueError, match=r"Inverse: unsupported input dtypes \(float8_e4m3fn\)"):
        torch.ops.opgen.inverse(torch.ones(2, 2).to(torch.float8_e4m3fn))


# ---------------------------------------------------------------- a variadic op (Sum)
def _sum_model(dtypes: list[int]) -> onnx.ModelProto:
    names = [f"X_{i}" for i in range(len(dtypes))]
    node = helper.make_node("Sum", names, ["Y"], domain="ai.opgen")
    inputs = [helper.make_tensor_value_info(n, d, None) for n, d in zip(names, dtypes, strict=True)]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
    return _model([node], inputs, outputs, "ai.opgen")


def test_variadic_op_with_thousands_of_values_in_both_runtimes():
    values = [torch.full((2, 3), float(i)) for i in range(3000)]
    want = torch.full((2, 3), float(sum(range(3000))))
    torch.testing.assert_close(torch.ops.opgen.sum(values), want, rtol=0, atol=0)
    session = _testing.session(_sum_model([TensorProto.FLOAT] * 3000), "ai_opgen")
    feeds = {f"X_{i}": v.numpy() for i, v in enumerate(values)}
    np.testing.assert_array_equal(session.run(None, feeds)[0], want.numpy())


def test_variadic_op_without_values_is_an_error_naming_the_op():
    with pytest.raises(Exception, match="opgen::sum"):  # PyTorch: no tensor to dispatch on
        torch.ops.opgen.sum([])
    with torch._subclasses.FakeTensorMode():
        with pytest.raises(RuntimeError, match="Sum: input 'X' takes 1 or more values, got 0"):
            torch.ops.opgen.sum([])
    with pytest.raises(Exception, match=r"ai\.opgen::Sum:1\) has input size 0 not in range"):
        _testing.session(_sum_model([]), "ai_opgen")


def test_variadic_op_values_of_two_dtypes_are_an_error_naming_the_op():
    with pytest.raises(ValueError, match=r"Sum: unsupported input dtypes \(\[float32, float64\]\)"):
        torch.ops.opgen.sum([torch.ones(2), torch.ones(2, dtype=torch.float64)])
    with pytest.raises(Exception, match=r"\(Sum\) bound to different types"):
        _testing.session(_sum_model([TensorProto.FLOAT, TensorProto.DOUBLE]), "ai_opgen")


def test_variadic_op_values_on_two_devices_are_an_error_naming_them():
    with pytest.raises(
        RuntimeError,
        match=r"Sum: the inputs must be on one device, got input "
        r"'X\[0\]' on cpu, input 'X\[1\]' on meta",
    ):
        torch.ops.opgen.sum([torch.ones(2), torch.ones(2, device="meta")])


def test_variadic_op_values_that_do_not_broadcast_fail_alike_in_both_runtimes():
    message = "Sum: inputs 'X' cannot be broadcast together, got [2, 3] and [4] and [1]"
    values = [np.ones((2, 3), np.float32), np.ones(4, np.float32), np.ones(1, np.float32)]
    with pytest.raises(ValueError) as raised:
        torch.ops.opgen.sum([torch.from_numpy(v) for v in values])
    assert message in str(raised.value)
    session = _testing.session(_sum_model([TensorProto.FLOAT] * 3), "ai_opgen")
    with pytest.raises(Exception) as raised:
        session.run(None, {f"X_{i}": v for i, v in enumerate(values)})
    assert message in str(raised.value)


def test_variadic_gradient_formula_of_the_wrong_length_is_an_error_naming_the_op():
    from generated import _support

    what = "Sum: the gradient formula of input 'X'"
    assert _support.value_gradients(what, None, 2) == [None, None]
    for wrong, got in (([torch.ones(1)], "1 of them"), (torch.ones(2), "Tensor")):
        with pytest.raises(
            RuntimeError,
            match=re.escape(f"{what} must give a list of 2 gradients (one per value), got {got}"),
        ):
            _support.value_gradients(what, wrong, 2)


def test_variadic_op_vmap_over_an_empty_batch_is_an_error_naming_the_op():
    with pytest.raises(RuntimeError, match="opgen::sum: vmap over a batch of size 0"):
        torch.vmap(lambda x, y: torch.ops.opgen.sum([x, y]))(torch.ones(0, 3), torch.ones(0, 3))


def _in_a_process_of_its_own(function: str, *args) -> None:
    """Runs tests.test_hostile_runtime.<function>(*args) in a fresh interpreter: it registers
    the package's ONNX schemas (register_all), which later tests in this process must not see
    in the registries (the importer's tests list every registered schema)."""
    script = f"from tests.test_hostile_runtime import {function}\n{function}(*{args!r})"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "names,message",
    [
        (["x", ""], "Sum: input 'X' has an absent value at node input 1"),
        ([], "Sum: input 'X' takes 1 or more values, got 0"),
    ],
)
def test_variadic_node_without_its_values_fails_onnx_inference_naming_the_op(names, message):
    """ONNX's checker lets such a node through to the op's inference function."""
    _in_a_process_of_its_own("check_inference_without_values", names, message)


def check_inference_without_values(names: list, message: str) -> None:
    import generated

    generated.register_all()
    node = helper.make_node("Sum", names, ["Y"], domain="ai.opgen")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])] if names else []
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n"])]
    model = _model([node], inputs, outputs, "ai.opgen")
    with pytest.raises(onnx.shape_inference.InferenceError, match=re.escape(message)):
        onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_export_model_of_a_list_argument_with_dynamic_axes(tmp_path):
    """A model taking a list of tensors: its input names name the list's tensors, whose dynamic
    axes the dynamo exporter gets in the list's structure."""
    _in_a_process_of_its_own("check_export_of_a_list_argument", str(tmp_path / "model.onnx"))


def check_export_of_a_list_argument(path: str) -> None:
    import generated

    class Model(torch.nn.Module):
        def forward(self, values: list[torch.Tensor]):
            return torch.ops.opgen.sum(values)

    example = [torch.randn(3, 2), torch.randn(3, 2), torch.randn(2)]
    generated.export_model(
        Model().eval(),
        (example,),
        path,
        exporter="dynamo",
        input_names=["a", "b", "c"],
        dynamic_axes={"a": {0: "n"}, "b": {0: "n"}},
    )
    session = _testing.session(onnx.load(path), "ai_opgen")
    a, b, c = torch.randn(5, 2), torch.randn(5, 2), torch.randn(2)
    got = session.run(None, {"a": a.numpy(), "b": b.numpy(), "c": c.numpy()})[0]
    # The kernel and PyTorch may round the three float32 terms in another order: where they
    # cancel, the difference is a few roundings of the terms, not of the (small) sum.
    rounding = 4 * np.finfo(np.float32).eps * (a.abs() + b.abs() + c.abs()).numpy()
    assert (np.abs(got - (a + b + c).numpy()) <= rounding).all(), (got, (a + b + c).numpy())


def test_python_registration_names_the_op_and_the_value_numpy_cannot_hold():
    """The pybind11 path (torch.api library) of a variadic op: an empty value whose size in
    bytes overflows, which numpy refuses, is named as the op and the value."""
    from generated import _support

    huge = torch.empty(1, 0, 2**63 - 1)
    with pytest.raises(ValueError) as raised:
        try:
            values = [_support.to_numpy(torch.ones(1)), _support.to_numpy(huge)]
            _support.kernels("ai_opgen").sum_op(values)
        except ValueError as error:  # what the `library` registration's CPU kernel does
            _support.name_the_op("Sum", error, {"X": [torch.ones(1), huge]})
    assert str(raised.value) == (
        "Sum: input 'X[1]' has shape [1, 0, 9223372036854775807], whose size in bytes overflows "
        "int64"
    )


def test_an_error_in_several_parallel_ranges_names_the_first_one_every_time():
    """Quantize's NaNs in many ranges of a parallel_for: every run, in ONNX Runtime (eight
    intra-op threads) and in PyTorch, reports the first one, not whichever range failed first."""
    import generated  # noqa: F401 (registers the PyTorch ops)

    x = torch.full((100_000,), float("nan"))  # every range fails
    scale = torch.tensor(1.0)
    quantize = helper.make_node("Quantize", ["X", "scale"], ["Y"], domain="ai.opgen")
    model = _model(
        [quantize],
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [None]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, [None])],
        "ai.opgen",
    )
    session = _testing.session(model, "ai_opgen", threads=8)
    messages = set()
    for _ in range(200):
        with pytest.raises(Exception) as raised:
            _testing.run_ort(session, {"X": x, "scale": scale})
        messages.add(str(raised.value).split("Status Message: ")[-1])
        with pytest.raises(ValueError) as raised:
            torch.ops.opgen.quantize(x, scale)
        messages.add(str(raised.value))
    assert messages == {"Quantize: X[0] is NaN, which no integer represents"}, messages
