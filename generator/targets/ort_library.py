"""The ONNX Runtime custom-op library: each kernel op's Ort::CustomOpBase per dtype, its kernel
and its graph-time shape inference (ort_op.cc)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from generator.api import cpp
from generator.api import python as py
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp_kernel import (
    KernelOutput,
    KernelWrapperView,
    kernel_wrapper_view,
    one_value,
)
from generator.dest.emission import Emission
from generator.dest.tests import ParityTestPieces
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.onnxruntime_domains import replaces_onnxruntime
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef
from generator.model.tensors import TensorParam
from generator.model.types import AttrType
from generator.render import render
from generator.view import view


def _ort_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return f"opgen::ort::data<{cpp_type}>({value}, aligned)"


@dataclass(frozen=True)
class OrtDevice:
    """Where ONNX Runtime runs an op's kernel: its wrapper for each device is a file of its own
    (a unity build may compile several in one unit, so each names its classes apart)."""

    kernel_class: str
    op_class: str
    infer_function: str
    add_function: str  # adds the op's kernels to the domain
    execution_provider: str  # GetExecutionProviderType's; "" for ONNX Runtime's default, the CPU
    includes: tuple[str, ...]  # beside <op>_op.h
    context_statement: str  # declares the kernel's context; {elements}: what a call touches
    context: str  # its name
    compute: str  # the kernel's function
    after_compute: str  # a statement after it returns, or ""
    input_data: Callable[[TensorParam], str]  # where an input's elements are
    output_data: Callable[[OpDef, TensorParam], str]  # where an output's buffer is


def _cpu_output_data(op: OpDef, tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = Local.runtime_value(tensor.name)
    if tensor.variadic:
        index = Local.value_index(tensor.name)
        shape = f"{Local.output_shape_member(tensor.name)}[{index}]"
        return f"opgen::ort::variadic_output_data<{cpp_type}>({value}[{index}], aligned, {shape})"
    if op.elements_copied(tensor):
        shape = Local.output_shape_member(tensor.name)
        return f"opgen::ort::output_data<{cpp_type}>({value}, aligned, {shape})"
    return f"opgen::ort::mutable_data<{cpp_type}>({value})"


CPU = OrtDevice(
    kernel_class="OrtKernel",
    op_class="OrtOp",
    infer_function="InferOutputShapes",
    add_function="add_ort_ops",
    execution_provider="",
    includes=("opgen/ort_support.h",),
    context_statement="const opgen::ort::ThreadPoolContext pool(context, {elements});",
    context="pool",
    compute="compute",
    after_compute="",
    input_data=_ort_data,
    output_data=_cpu_output_data,
)


@view
class RuleAttribute:
    """An attribute ONNX Runtime's shape inference reads (the shape rule uses it)."""

    name: str
    required_literal: str


@view
class InferredOutput:
    name: str
    index: int
    variadic: bool  # its values are the outputs from index on, `shape` a vector of theirs
    element_type: str  # how ONNX Runtime's shape inference gets its element type
    shape: str
    setter: str  # set_output, or set_optional_output (the node may leave it out)


@view
class OrtOpView(KernelWrapperView):
    """ort_op.cc: the ONNX Runtime custom op (kernel, shape inference, registration)."""

    version: int
    versions_text: str
    first_version: int
    rank_ambiguous_indices: str  # inputs whose rank 0 could mean "unknown rank" (not scalars)
    rule_attributes: tuple[RuleAttribute, ...]
    inferred_outputs: tuple[InferredOutput, ...]
    # GetInputCharacteristic's and GetOutputCharacteristic's table ("": all required)
    input_characteristics: str
    output_characteristics: str
    # Outputs that may hold strings: their elements go to ONNX Runtime after compute
    copied_outputs: tuple[KernelOutput, ...]
    type_choosers: tuple[TypeChooser, ...]
    kernel_class: str
    op_class: str
    infer_function: str
    add_function: str
    execution_provider: str
    includes: tuple[str, ...]
    context_statement: str
    compute: str
    after_compute: str


@view
class TypeChooser:
    """An attribute that picks a type variable's dtype: the kernel ONNX Runtime chose by the
    node's output types must be the one the attribute names."""

    attribute: str
    type_var: str


def ort_op_view(op: OpDef, device: OrtDevice = CPU) -> OrtOpView:
    assert op.op_type is not None and op.domain is not None and op.version is not None
    input_index = {t.name: i for i, t in enumerate(op.inputs)}
    attrs = {a.name: a for a in op.attributes}

    def element_type(output: TensorParam) -> str:
        match op.dtype_source(output):
            case FixedDType():
                return f"opgen::ort::element_type<{common.tensor_cpp_type(output)}>()"
            case FromInput(name):
                return f"context.element_type({input_index[name]})"
            case FromAttribute(name):  # read, and checked against the allowed dtypes, above
                return f"static_cast<ONNXTensorElementDataType>(attrs.{name})"
            case source:
                assert_never(source)

    wrapper = kernel_wrapper_view(
        op, device.input_data, lambda t: device.output_data(op, t), device.context
    )
    return OrtOpView(
        **vars(wrapper),
        version=op.version,
        versions_text=", ".join(str(v) for v in op.versions),
        first_version=op.versions[0],
        rank_ambiguous_indices=", ".join(
            str(i.index) for i in common.shaped_inputs(op) if i.name in op.rank_ambiguous_inputs
        ),
        rule_attributes=tuple(
            RuleAttribute(name, cpp.bool_literal(attrs[name].required))
            for name in op.shape_rule.attributes
        ),
        inferred_outputs=tuple(
            InferredOutput(
                t.name,
                i,
                t.variadic,
                element_type(t),
                Local.output_shape_member(t.name),
                "set_optional_output" if t.optional else "set_output",
            )
            for i, t in enumerate(op.outputs)
        ),
        input_characteristics=_characteristics(op.inputs),
        output_characteristics=_characteristics(op.outputs),
        copied_outputs=tuple(view for view in wrapper.outputs if view.elements_copied),
        type_choosers=tuple(TypeChooser(name, tc.name) for name, tc in op.type_choosers.items()),
        kernel_class=device.kernel_class,
        op_class=device.op_class,
        infer_function=device.infer_function,
        add_function=device.add_function,
        execution_provider=device.execution_provider,
        includes=device.includes,
        context_statement=device.context_statement.format(elements=wrapper.elements_expr),
        compute=device.compute,
        after_compute=device.after_compute,
    )


def _characteristics(tensors: tuple[TensorParam, ...]) -> str:
    """ONNX Runtime's characteristic of each parameter, or "" where all are required."""
    names = [cpp.ort_characteristic(t.arity) for t in tensors]
    return "" if all(n == "INPUT_OUTPUT_REQUIRED" for n in names) else ", ".join(names)


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if Target.ort_library not in targets_of(op):
        return []
    path = f"{op.op_id}/{op.op_id}_ort.cc"
    return [render("cpp/ort_op.cc.j2", path, common.sources(op), ort_op_view(op))]


def output_omissions(op: OpDef) -> list[list[str]]:
    """Each optional output alone, then all of them together (where there are several), but
    never every output: ONNX Runtime runs no node without one ("At least one output should be
    requested")."""
    optional = [t.name for t in op.outputs if t.optional]
    alone = [[name] for name in optional if len(op.outputs) > 1]
    together = optional if len(optional) < len(op.outputs) else optional[:-1]
    return alone + ([together] if len(together) > 1 else [])


def bool_attributes(op: OpDef) -> list[str]:
    return [a.name for a in op.attributes if a.type is AttrType.bool]


@view
class OrtTestsView:
    """What this target's parts of the generated tests read."""

    output_omissions: str  # [[optional output, ...], ...]
    bool_attribute_names: str


def parity_test_pieces(op: OpDef) -> ParityTestPieces:
    """This target's parts of the generated tests (generator/templates/python/test_parity/):
    whether the op's test module has each, and what they read."""
    ours = Target.ort_library in targets_of(op)
    shape_errors = any(case.values is None for case in op.error_cases)
    view = OrtTestsView(py.literal(output_omissions(op)), py.literal(bool_attributes(op)))
    parts = {
        "test_onnxruntime_infers_output_types_and_shapes": ours,
        "test_onnxruntime_leaves_out_optional_outputs": ours and output_omissions(op) != [],
        "test_onnxruntime_pairs_variadic_output_values": ours
        and any(t.variadic for t in op.outputs),
        "test_bad_shapes_error_status_in_onnxruntime": ours and shape_errors,
        "test_attribute_of_the_wrong_type_fails_the_session": ours and bool(op.attributes),
        "test_tensor_attribute_of_another_dtype_fails_the_session": ours
        and any(a.dtype is not None for a in op.attributes),
        "test_bool_attribute_other_than_0_or_1_fails_the_session": ours
        and bool(bool_attributes(op)),
        "test_session_without_library_fails_clearly": ours and not replaces_onnxruntime(op),
        "test_session_without_library_runs_onnxruntimes_own_op": ours and replaces_onnxruntime(op),
    }
    return ParityTestPieces(Target.ort_library, parts, view)
