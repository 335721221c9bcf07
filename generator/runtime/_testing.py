"""Helpers of the generated parity tests: sessions, single-node models, comparisons."""

import re

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from . import _names, _support

input_of = _names.input_of


def grouped(inputs: dict, variadic: str) -> dict:
    """Test inputs by input: the variadic input's values (named X_0, X_1, ...) as one list."""
    values = _names.value_names(variadic, inputs)
    by_input = {name: value for name, value in inputs.items() if name not in values}
    return {**by_input, variadic: [inputs[name] for name in values]}


def value_order(inputs: dict, order: list, variadic: str) -> list:
    """The op's inputs in order, the variadic one as the names of its values among `inputs`."""
    return [
        value
        for name in order
        for value in (_names.value_names(variadic, inputs) if name == variadic else [name])
    ]


TENSOR_PROTO = {
    torch.float16: TensorProto.FLOAT16,
    torch.bfloat16: TensorProto.BFLOAT16,
    torch.float32: TensorProto.FLOAT,
    torch.float64: TensorProto.DOUBLE,
    torch.int8: TensorProto.INT8,
    torch.int16: TensorProto.INT16,
    torch.int32: TensorProto.INT32,
    torch.int64: TensorProto.INT64,
    torch.uint8: TensorProto.UINT8,
    torch.bool: TensorProto.BOOL,
    torch.uint16: TensorProto.UINT16,
    torch.uint32: TensorProto.UINT32,
    torch.uint64: TensorProto.UINT64,
}
# onnxruntime 1.31 refuses the IR version onnx 1.23 stamps by default (14); 10 works.
IR_VERSION = 10


def float32_attributes(attributes: dict) -> dict:
    """Float attributes as every runtime sees them: ONNX float attributes are float32."""

    def rounded(value):
        if isinstance(value, float):
            return float(np.float32(value))
        if isinstance(value, list | tuple) and value and isinstance(value[0], float):
            return [float(np.float32(v)) for v in value]
        return value

    return {name: rounded(value) for name, value in attributes.items()}


def session(model, libraries=(), threads: int = 1) -> ort.InferenceSession:
    """An ONNX Runtime session on the CPU with the given custom-op libraries (domain idents;
    one ident or None also work)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if libraries is None:
        libraries = ()
    for ident in [libraries] if isinstance(libraries, str) else libraries:
        options.register_custom_ops_library(str(_support.ort_library(ident)))
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def single_node_model(
    domain: str,
    op_type: str,
    version: int,
    inputs: dict[str, tuple[torch.dtype, int]],
    outputs: list[str],
    attributes: dict,
    static_shapes: dict[str, tuple[int, ...]] | None = None,
    attribute_types: dict[str, int] | None = None,
    input_order: list[str] | None = None,
) -> onnx.ModelProto:
    """One node of the op. Input dims are symbolic (so the kernel, not ONNX Runtime, checks
    shapes) unless `static_shapes` gives them (for ONNX shape inference). `attribute_types`
    spell the type of an empty list, which its value does not tell. An output named "" is one
    the node leaves out. `input_order`: the op's inputs, of which those not in `inputs` are
    left out (named "" before a present one, as ONNX spells it)."""
    names = [name if name in inputs else "" for name in input_order or list(inputs)]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op_type, names, outputs, domain=domain)
    node.attribute.extend(
        helper.make_attribute(name, value, attr_type=(attribute_types or {}).get(name))
        for name, value in attributes.items()
    )
    graph = helper.make_graph(
        [node],
        f"{op_type}_single_node",
        [
            helper.make_tensor_value_info(
                name,
                TENSOR_PROTO[dtype],
                (static_shapes or {}).get(name) or [f"{name}_d{i}" for i in range(rank)],
            )
            for name, (dtype, rank) in inputs.items()
        ],
        [helper.make_value_info(name, onnx.TypeProto()) for name in outputs if name],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid(domain, version)]
    if not domain:  # a standard op: one import of the standard domain
        opsets = [helper.make_opsetid("", max(18, version))]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def without_trailing_none(args: tuple) -> tuple:
    """Positional arguments without the absent optional inputs at the end (None stays where
    a later input is given: ONNX names such an input "")."""
    while args and args[-1] is None:
        args = args[:-1]
    return args


def ort_type(dtype: torch.dtype) -> str:
    """ONNX Runtime's name of a tensor type, as NodeArg.type gives it: "tensor(float)"."""
    return f"tensor({TensorProto.DataType.Name(TENSOR_PROTO[dtype]).lower()})"


def evaluate_dim(dim: int | str, sizes: dict[str, int]) -> int:
    """A dim that shape inference computed: a number, or an expression of named dims in the
    shape rules' syntax (+ - * // and parentheses), evaluated at the named dims' sizes."""
    if isinstance(dim, int):
        return dim
    if not re.fullmatch(r"[\w\s()+*/-]+", dim):
        raise AssertionError(f"not a dim expression: {dim!r}")
    return eval(dim, {"__builtins__": {}}, dict(sizes))  # checked above: names, numbers, + - * //


def assert_close(actual, expected, tolerances: dict, what: str) -> None:
    actual = torch.as_tensor(actual) if not isinstance(actual, torch.Tensor) else actual
    rtol, atol = tolerances.get(expected.dtype, (0.0, 0.0))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def run_ort(session, inputs: dict) -> list:
    """Runs a session on torch tensors; returns torch tensors. ONNX Runtime's Python API has
    no numpy type for bfloat16, so such tensors cross as OrtValues through DLPack."""
    feeds = {
        name: (
            ort.OrtValue.from_dlpack(tensor.detach().contiguous())
            if tensor.dtype == torch.bfloat16
            else ort.OrtValue.ortvalue_from_numpy(_support.to_numpy(tensor))
        )
        for name, tensor in inputs.items()
    }
    names = [output.name for output in session.get_outputs()]
    values = session.run_with_ort_values(names, feeds)
    return [
        (
            torch.from_dlpack(value).clone()
            if value.data_type() == "tensor(bfloat16)"
            else _support.from_numpy(value.numpy())
        )
        for value in values
    ]


def sizes(case: dict) -> int:
    """How many sizes a random case runs each dynamic dim at."""
    return len(next(iter(case["dynamic"].values()))) if case["dynamic"] else 1


def dynamic_axes(case: dict) -> dict:
    """A random case's dynamic dims in the exporters' {input: {axis: name}} form."""
    return {
        name: {axis: dim for axis, dim in enumerate(dims) if isinstance(dim, str)}
        for name, dims in case["shapes"].items()
    }
