"""The assembled op checked as a whole: what it asks of a target that the target does not
carry yet, beyond the capability table, as (field path, message) pairs that parse_opdef reports
at the field; and the shape rule applied to each random case."""

from __future__ import annotations

import math
from collections.abc import Iterator

from generator.model.capabilities import refusals
from generator.model.nodes import OnnxNode
from generator.model.op import OpDef, TorchApi
from generator.model.tensors import VariadicArity, value_name
from generator.model.tests import RandomCase
from generator.model.types import AttrType, DType, tensor_attribute_dtype_names
from generator.parse.tests import MAX_TEST_ELEMENTS
from generator.runtime._names import input_of
from generator.shapes.evaluate import evaluate_output_shapes
from generator.source import Node


def op_problems(op: OpDef) -> list[tuple[str, str]]:
    """(field path, message) for each thing the op uses that a target does not carry yet."""
    return (
        refusals(op)
        + _variadic_input_problems(op)
        + _variadic_output_problems(op)
        + _string_problems(op)
        + _tensor_attribute_problems(op)
        + _cuda_problems(op)
        + _gradient_case_problems(op)
        + _pytorch_alone_problems(op)
    )


def _gradient_case_problems(op: OpDef) -> list[tuple[str, str]]:
    """The gradient tests run each optional input given and left out (OpDef.gradient_cases):
    some random case must give it."""
    if not op.gradients or not op.tests.random:
        return []
    return [
        (
            "tests.random",
            f"the gradient tests run with each optional input given and left out: give "
            f"optional input '{t.name}' in some random case",
        )
        for t in op.inputs
        if t.optional and not op.random_cases_giving(t.name)
    ]


def _tensor_attribute_problems(op: OpDef) -> list[tuple[str, str]]:
    """A tensor attribute outside an interface-only op declares its element type (a kernel
    reads one C++ type; a test builds its values), and only kernel ops carry one yet."""
    if op.is_interface_only:
        return []
    problems = []
    for index, attr in enumerate(op.attributes):
        if attr.type is not AttrType.tensor:
            continue
        if op.kernel is None:
            problems.append(
                (
                    f"attributes[{index}].type",
                    "a tensor attribute is carried by kernel ops only yet (not by a function "
                    "body, an export rule or an op without a kernel)",
                )
            )
        elif attr.dtype is None:
            problems.append(
                (
                    f"attributes[{index}].type",
                    "a kernel op's tensor attribute declares its element type ('dtype: "
                    f"float32', one of {tensor_attribute_dtype_names()}): the "
                    "kernel reads it as opgen::TensorAttribute of that type",
                )
            )
    return problems


def _cuda_problems(op: OpDef) -> list[tuple[str, str]]:
    """What a CUDA kernel cannot have yet beyond the capability table's features."""
    if op.kernel is None or op.kernel.cuda_file is None:
        return []
    problems = []
    if op.shape_rule.kernel_allocated:
        problems.append(
            (
                "kernel.cuda",
                "a CUDA kernel with an output of data-dependent size (data_dependent_sizes) is "
                "not carried yet: its size would come back from the device",
            )
        )
    if op.torch is not None and op.new_torch_op and not op.has_native_torch_op:
        problems.append(
            (
                "kernel.cuda",
                "a CUDA kernel is registered with PyTorch natively (torch.api native, the "
                f"default), not yet with torch.api {op.torch.api.value}",
            )
        )
    return problems


def _string_problems(op: OpDef) -> list[tuple[str, str]]:
    """The generated tests run ONNX Runtime through its Python API, which takes strings as
    numpy arrays only and has no numpy bfloat16: no call of an op may have both."""
    tensors_only = all(tc.is_tensor_only for tc in op.type_constraints) and all(
        t.concrete is None or t.dtype is not None for t in op.inputs + op.outputs
    )
    if op.kernel is None or not tensors_only:
        return []  # other value types: refused by the capability table
    fields = [(f"inputs[{i}].type", t) for i, t in enumerate(op.inputs)]
    fields += [(f"outputs[{i}].type", t) for i, t in enumerate(op.outputs)]
    for binding in op.instantiations:
        dtypes = [t.dtype_in(binding) for _, t in fields]
        if DType.string in dtypes and DType.bfloat16 in dtypes:
            return [
                (
                    fields[dtypes.index(DType.bfloat16)][0],
                    "string and bfloat16 tensors in one call are not carried by the parity "
                    "tests yet (ONNX Runtime's Python API takes strings as numpy arrays, and "
                    "numpy has no bfloat16)",
                )
            ]
    return []


def _variadic_input_problems(op: OpDef) -> list[tuple[str, str]]:
    """(field path, message) for what a code target cannot do with a variadic input yet: the
    kernel targets take one (a list of tensors); a function body, an export rule and a
    gradient formula name each input as one value."""
    if op.is_interface_only:
        return []
    problems = []
    for index, tensor in enumerate(op.inputs):
        if not isinstance(tensor.arity, VariadicArity):
            continue
        where = f"inputs[{index}].variadic"
        if op.kernel is None:
            problems.append(
                (
                    where,
                    "a variadic input needs a kernel (not yet: a function body or an export "
                    "rule names each input as one value)",
                )
            )
        if op.gradients and op.torch is not None and op.torch.api is TorchApi.custom_op:
            problems.append(
                (
                    "gradients",
                    f"gradient formulas of an op with a variadic input ('{tensor.name}') are not "
                    "carried by torch.api 'custom_op' yet (torch 2.13's register_autograd "
                    "takes its list of gradients in another structure); use 'native' or "
                    "'library'",
                )
            )
        problems += _value_name_clashes(op, tensor.name, "input")
        own_inputs = tuple(t.name for t in op.inputs)
        for field, node, calls_the_op in _export_nodes(op):
            if calls_the_op and tuple(node.inputs) != own_inputs:
                problems.append(
                    (
                        field,
                        "a node of the op itself takes the op's own inputs in order "
                        f"({', '.join(own_inputs)}): its variadic input '{tensor.name}' "
                        "spreads into the node's last inputs (not yet: other arguments)",
                    )
                )
            elif tensor.name in node.inputs and not calls_the_op:
                problems.append(
                    (
                        field,
                        f"variadic input '{tensor.name}' may only be passed to the op "
                        "itself, as its variadic input (not yet: an export node that "
                        "spreads its values into another op)",
                    )
                )
    return problems


def _variadic_output_problems(op: OpDef) -> list[tuple[str, str]]:
    """(field path, message) for what a code target cannot do with a variadic output yet: it
    needs a kernel, and a node of the op itself gives it."""
    if op.is_interface_only:
        return []
    problems = []
    for index, tensor in enumerate(op.outputs):
        if not tensor.variadic:
            continue
        where = f"outputs[{index}].variadic"
        if op.kernel is None:
            problems.append((where, "a variadic output needs a kernel (not yet: a function body)"))
        elif op.elements_copied(tensor):
            problems.append(
                (
                    where,
                    "a variadic output of strings or 4-bit integers is not carried yet (ONNX "
                    "Runtime takes those by copy, which the values of a variadic output do not "
                    "get yet)",
                )
            )
        problems += _value_name_clashes(op, tensor.name, "output")
        own_outputs = tuple(t.name for t in op.outputs)
        for field, node, calls_the_op in _export_nodes(op):
            gives = tensor.name in node.outputs
            if tensor.name in node.inputs or (
                gives and (not calls_the_op or tuple(node.outputs) != own_outputs)
            ):
                problems.append(
                    (
                        field,
                        f"variadic output '{tensor.name}' may only come from a node of the "
                        f"op itself, giving the op's own outputs in order "
                        f"({', '.join(own_outputs)}), and go to no other node (not yet: "
                        "another op's outputs gathered into it, or its values spread into "
                        "another op)",
                    )
                )
    return problems


def _export_nodes(op: OpDef) -> Iterator[tuple[str, OnnxNode, bool]]:
    """Each node of the op's export rules: its field path, the node, and whether it is a node
    of the op itself."""
    for rule_index, rule in enumerate(op.export):
        for node_index, node in enumerate(rule.nodes):
            calls_the_op = (node.domain, node.op_type) == (op.domain, op.op_type)
            yield f"export[{rule_index}].nodes[{node_index}]", node, calls_the_op


def _value_name_clashes(op: OpDef, variadic: str, kind: str) -> list[tuple[str, str]]:
    """The values of a variadic input (`kind`: or output) X are named X_0, X_1, ... in test
    cases and test models: no other name of the op may be one of them."""
    problems = []
    names = {
        "inputs": [t.name for t in op.inputs],
        "outputs": [t.name for t in op.outputs],
        "attributes": [a.name for a in op.attributes],
    }
    for key, items in names.items():
        for index, name in enumerate(items):
            if name != variadic and input_of(name, variadic) == variadic:
                problems.append(
                    (
                        f"{key}[{index}].name",
                        f"'{name}' is the name of a value of variadic {kind} '{variadic}' "
                        f"({value_name(variadic, 0)}, {value_name(variadic, 1)}, ... in the "
                        "tests); choose another name",
                    )
                )
    return problems


def _pytorch_alone_problems(op: OpDef) -> list[tuple[str, str]]:
    """A kernel for PyTorch alone: nothing runs the op's ONNX node, so no export and no
    comparison with an ONNX Runtime op."""
    if op.kernel is None or op.kernel.in_onnxruntime:
        return []
    problems = []
    if "export" in op.locations:
        problems.append(
            (
                "export",
                "an op whose kernel runs in PyTorch alone (kernel: {onnxruntime: false}) is "
                "not exported: nothing would run its ONNX nodes in the tests",
            )
        )
    if op.tests.builtin_equivalents:
        problems.append(
            (
                "tests.builtin_equivalents",
                "an op whose kernel runs in PyTorch alone (kernel: {onnxruntime: false}) is "
                "not run in ONNX Runtime, so nothing compares it with a built-in op there",
            )
        )
    return problems


def check_random_case_outputs(op: OpDef, case: RandomCase, node: Node) -> None:
    """The shape rule at each of a random case's sizes gives outputs of sane sizes."""
    for index in range(max((len(sizes) for sizes in case.dynamic.values()), default=1)):
        dims: dict[str, list[int | str]] = {
            name: [d if isinstance(d, int) else case.dynamic[d][index] for d in shape]
            for name, shape in case.shapes.items()
        }
        where = f"inputs of shapes {dims}" + (
            f", attributes {case.attributes}" * bool(case.attributes)
        )
        try:
            outputs = evaluate_output_shapes(op, dims, case.attributes)
        except ZeroDivisionError:
            raise node.error(f"the shape rule divides by zero for {where}") from None
        except LookupError:
            raise node.error(
                f"the shape rule cannot be applied to {where}: do the shapes match the inputs' "
                "shape patterns?"
            ) from None
        for name, shape in outputs.items():
            sizes = [d for d in shape if isinstance(d, int)]  # "?": a data-dependent size
            if any(d < 0 for d in sizes):
                raise node.error(f"output '{name}' would have a negative dim {shape} for {where}")
            if math.prod(sizes) > MAX_TEST_ELEMENTS:
                raise node.error(
                    f"output '{name}' would have {math.prod(sizes)} elements (shape {shape}) for "
                    f"{where}; a generated test tensor may have at most {MAX_TEST_ELEMENTS} (2**20)"
                )
