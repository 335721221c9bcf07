"""The native PyTorch registration: the op's schema and CPU kernel through PyTorch's stable ABI,
its Autograd kernel and the op below it (torch_op.cc)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generator.api import cpp
from generator.api import python as py
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp_kernel import (
    KernelWrapperView,
    dtype_list_expr,
    kernel_wrapper_view,
    one_output_value,
    one_value,
)
from generator.dest.emission import Emission
from generator.dest.tests import ParityTestPieces
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import OpDef
from generator.model.tensors import TensorParam
from generator.render import render
from generator.view import view


def _torch_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return f"opgen::torch_support::data<{cpp_type}>({value}, aligned)"


def torch_output_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = one_output_value(tensor, Local.runtime_value(tensor.name))
    return f"opgen::torch_support::mutable_data<{cpp_type}>({value})"


@dataclass(frozen=True)
class TorchDevice:
    """Where the native PyTorch op runs its kernel: the dispatch key's kernel of one device
    (torch_kernel.j2), in the library of that device."""

    label: str  # as comments name it
    source_file: str  # the generated file, for PyTorch's debug info ({op_id}: the op's)
    kernel_name: str  # the kernel with the schema's arguments
    boxed_kernel: str  # and the one the dispatcher calls
    prologue: Callable[[OpDef], tuple[str, ...]]  # run()'s first statements
    empty: str  # allocates an output: (shape, op, what)
    context_statement: str  # declares the kernel's context, `context`; {elements}: the call's
    context: str
    compute: str  # the kernel's function
    after_compute: str  # a statement after it returns, or ""
    input_data: Callable[[TensorParam], str]
    output_data: Callable[[TensorParam], str]


CPU = TorchDevice(
    label="CPU",
    source_file="{op_id}_torch.cc",
    kernel_name="cpu_kernel",
    boxed_kernel="boxed_cpu_kernel",
    prologue=lambda op: (),
    empty="opgen::torch_support::empty",
    context_statement="const opgen::torch_support::ParallelContext parallel({elements});",
    context="parallel",
    compute="compute",
    after_compute="",
    input_data=_torch_data,
    output_data=torch_output_data,
)


@view
class TorchAttribute:
    assignment: str  # the native kernel's argument into the Attributes struct


@view
class AutogradCheck:
    """One input as the native Autograd kernel checks it in its stack slot."""

    function: str  # input or optional_input (NoGradientHere's)
    index: int
    name_literal: str


@view
class TorchOpView(KernelWrapperView):
    """torch_op.cc: the native PyTorch registration (schema and CPU kernel, stable ABI)."""

    torch_namespace: str
    torch_name: str
    torch_name_literal: str
    definition_literal: str  # `name(schema)`, for m.def
    namespace_literal: str
    qualified_name_literal: str
    source_literal: str  # the file, for PyTorch's debug info (_support.bind_op reads it)
    # An op through which a gradient can flow registers its own Autograd kernel too (for when
    # the generated package, whose Autograd kernel wins over it, is not imported) and the op
    # it calls below the Autograd key.
    autograd_kernel: bool
    below_name_literal: str
    below_qualified_name_literal: str
    below_definition_literal: str
    below_kernel: str  # the op below's CPU kernel (a BoxedKernel)
    # The op below returns every output as one list (see flat_below_autograd_kernel), the
    # Autograd kernel takes back `outputs_before_variadic` outputs and the variadic one's list
    flat_below: bool
    outputs_before_variadic: int
    package_literal: str
    forward_mode_message_literal: str
    autograd_checks: tuple[AutogradCheck, ...]
    return_type: str
    run_params: str  # the input tensors, by value (made dense in place)
    kernel_params: str  # the schema's arguments
    boxed_args: tuple[str, ...]  # each taken from the dispatcher's stack
    run_args: str
    torch_attributes: tuple[TorchAttribute, ...]
    result_expr: str
    dtype_list_expr: str
    supported_dtypes: str
    device_label: str
    kernel_name: str
    boxed_kernel: str
    device_prologue: tuple[str, ...]
    empty: str
    context_statement: str
    compute: str
    after_compute: str


def _torch_type(tensor: TensorParam) -> str:
    """What the native kernel takes for an input (its schema's Tensor, Tensor? or Tensor[])."""
    if tensor.variadic:
        return "std::vector<opgen::torch_support::Tensor>"
    if tensor.optional:
        return "std::optional<opgen::torch_support::Tensor>"
    return "opgen::torch_support::Tensor"


def _torch_return_type(tensor: TensorParam) -> str:
    """What the native kernel returns for an output (its schema's Tensor or Tensor[])."""
    if tensor.variadic:
        return "std::vector<opgen::torch_support::Tensor>"
    return "opgen::torch_support::Tensor"


def _autograd_check(tensor: TensorParam) -> str:
    """NoGradientHere's check of the input's stack slot."""
    if tensor.variadic:
        return "variadic_input"
    return "optional_input" if tensor.optional else "input"


def torch_op_view(op: OpDef, package: str, device: TorchDevice = CPU) -> TorchOpView:
    torch = py.torch_binding(op)
    below = common.below_autograd_op(torch.name)
    tensor_types = [_torch_type(t) for t in op.inputs]
    tensor_params = [
        f"{cpp_type} {Local.runtime_value(t.name)}"
        for cpp_type, t in zip(tensor_types, op.inputs, strict=True)
    ]
    arg_types = tensor_types + [cpp.torch_attribute_type(op, a) for a in op.attributes]
    outputs = [Local.runtime_value(t.name) for t in op.outputs]
    allocated = op.shape_rule.kernel_allocated
    # torch 2.13's dispatcher call from C++ converts results of (Tensor, ..., Tensor[]) wrongly
    # (see flat_below_autograd_kernel): the op below returns them as one list.
    singles = op.outputs_before_variadic
    flat_below = bool(singles)
    result = [
        f"{value}.take()" if t.name in allocated else value
        for t, value in zip(op.outputs, outputs, strict=True)
    ]
    wrapper = kernel_wrapper_view(op, device.input_data, device.output_data, device.context)
    return TorchOpView(
        **vars(wrapper),
        torch_namespace=torch.namespace,
        torch_name=torch.name,
        torch_name_literal=cpp.string_literal(torch.name),
        definition_literal=cpp.string_literal(torch.name + py.torch_schema(op)),
        namespace_literal=cpp.string_literal(torch.namespace),
        qualified_name_literal=cpp.string_literal(torch.qualified_name),
        source_literal=cpp.string_literal(device.source_file.format(op_id=op.op_id)),
        autograd_kernel=op.has_autograd_kernel,
        below_name_literal=cpp.string_literal(below),
        below_qualified_name_literal=cpp.string_literal(f"{torch.namespace}::{below}"),
        below_definition_literal=cpp.string_literal(
            below + (py.flat_torch_schema(op) if flat_below else py.torch_schema(op))
        ),
        below_kernel=(
            f"&opgen::torch_support::flat_below_autograd_kernel<&{device.boxed_kernel}, {singles}>"
            if flat_below
            else f"&opgen::torch_support::below_autograd_kernel<&{device.boxed_kernel}>"
        ),
        flat_below=flat_below,
        outputs_before_variadic=singles or 0,
        package_literal=cpp.string_literal(package),
        forward_mode_message_literal=cpp.string_literal(py.forward_mode_message(op)),
        autograd_checks=tuple(
            AutogradCheck(_autograd_check(t), i, cpp.string_literal(t.name))
            for i, t in enumerate(op.inputs)
        ),
        return_type=(
            _torch_return_type(op.outputs[0])
            if len(outputs) == 1
            else f"std::tuple<{', '.join(_torch_return_type(t) for t in op.outputs)}>"
        ),
        run_params=", ".join(tensor_params),
        kernel_params=", ".join(
            tensor_params + [cpp.torch_attribute_param(op, a) for a in op.attributes]
        ),
        boxed_args=tuple(
            f"opgen::torch_support::take<{arg_type}>(stack[{i}])"
            for i, arg_type in enumerate(arg_types)
        ),
        run_args=", ".join(Local.runtime_value(t.name) for t in op.inputs),
        torch_attributes=tuple(
            TorchAttribute(cpp.torch_attribute_assignment(op, a)) for a in op.attributes
        ),
        result_expr=(result[0] if len(result) == 1 else f"std::make_tuple({', '.join(result)})"),
        dtype_list_expr=dtype_list_expr(op),
        supported_dtypes=common.supported_dtypes(op),
        device_label=device.label,
        kernel_name=device.kernel_name,
        boxed_kernel=device.boxed_kernel,
        device_prologue=device.prologue(op),
        empty=device.empty,
        context_statement=device.context_statement.format(elements=wrapper.elements_expr),
        compute=device.compute,
        after_compute=device.after_compute,
    )


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if Target.torch_native not in targets_of(op):
        return []
    path = f"{op.op_id}/{op.op_id}_torch.cc"
    view = torch_op_view(op, emission.package.name)
    return [render("cpp/torch_op.cc.j2", path, common.sources(op), view)]


@view
class NativeTestsView:
    """The tests of a natively registered op: TorchScript, torch.compile, vmap."""

    script_params: str  # ScriptedModel.forward's tensor parameters
    script_call: str  # the op called with the first random case's attributes
    vmap: bool  # outputs of a size the shape rule knows (vmap stacks them)
    domain_ident: str  # names the op's native library


def native_tests_view(op: OpDef) -> NativeTestsView | None:
    if op.torch is None or not op.has_native_torch_op:
        return None
    torch = op.torch
    attributes = op.case_attributes(op.tests.random[0].attributes)
    return NativeTestsView(
        script_params=", ".join(f"{t.name}: {py.tensor_annotation(t.arity)}" for t in op.inputs),
        script_call=f"torch.ops.{torch.namespace}.{torch.name}("
        + ", ".join(
            [t.name for t in op.inputs]
            + [f"{k}={py.attribute_value_in_tests(op, k, v)}" for k, v in attributes.items()]
        )
        + ")",
        vmap=not op.shape_rule.kernel_allocated,
        domain_ident=op.domain_ident,
    )


def parity_test_pieces(op: OpDef) -> ParityTestPieces:
    """This target's parts of the generated tests (generator/templates/python/test_parity/):
    whether the op's test module has each, and what they read."""
    view = native_tests_view(op)
    return ParityTestPieces(
        Target.torch_native, {"test_native_registration": view is not None}, view
    )
