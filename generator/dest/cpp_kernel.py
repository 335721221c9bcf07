"""C++ per kernel op: the kernel's API header, its instantiations, the ONNX Runtime custom op and
the pybind11 binding. Each template reads one view, built here from the op."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from generator.api import cpp, cpp_shapes
from generator.api import python as py
from generator.api.cpp_shapes import OutputStatements
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp import CppAttribute
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef
from generator.model.tensors import TensorParam, VariadicArity
from generator.model.types import TENSOR_PROTO_NUMBER
from generator.render import render
from generator.shapes.spell import SpelledCheck
from generator.view import view


@view
class KernelInput:
    """An input as the kernel wrappers hold it: its shape, its view, where its data is."""

    name: str
    index: int
    cpp_type: str
    optional: bool
    variadic: bool  # its values are inputs index, index + 1, ... (a vector of each local)
    min_arity: int  # variadic: the fewest values it takes
    too_few_message: str  # variadic: a literal, what fewer values than min_arity raise
    shape: str
    shape_type: str  # of `shape` in the kernel wrappers: a vector of them for a variadic input
    present: str
    value_index: str  # variadic: the loop index over its values
    optional_view: str
    runtime_value: str  # ONNX Runtime
    array: str  # pybind11
    dtype_name: str  # pybind11
    data: str  # where the wrapper at hand finds its elements

    @classmethod
    def of(cls, op: OpDef, tensor: TensorParam, index: int, data: str) -> KernelInput:
        name = tensor.name
        return cls(
            name=name,
            index=index,
            cpp_type=common.tensor_cpp_type(tensor),
            optional=tensor.optional,
            variadic=tensor.variadic,
            min_arity=tensor.arity.min_arity if isinstance(tensor.arity, VariadicArity) else 1,
            too_few_message=(
                cpp.string_literal(op.too_few_values_message(tensor)) if tensor.variadic else ""
            ),
            shape=Local.shape(name),
            shape_type="std::vector<opgen::Shape>" if tensor.variadic else "opgen::Shape",
            present=Local.present(name),
            value_index=Local.value_index(name),
            optional_view=Local.optional_view(name),
            runtime_value=Local.runtime_value(name),
            array=Local.array(name),
            dtype_name=Local.dtype_name(name),
            data=data,
        )


@view
class KernelOutput:
    name: str
    index: int
    cpp_type: str
    kernel_allocated: bool  # a data-dependent size: the kernel allocates it
    elements_copied: bool  # (ONNX Runtime only) its elements go to the tensor after compute
    optional: bool  # the kernel gets a pointer, null where the runtime leaves the output out
    # Variadic: one value per value of the variadic input `paired_shape` is the shapes of (a
    # vector of views); a node with another count fails with `count_message` (then "<outputs>
    # for <inputs>")
    variadic: bool
    min_arity: int  # variadic: the fewest values (its paired input's)
    paired_shape: str
    count_message: str
    value_index: str  # variadic: the loop index over its values
    present: str
    optional_view: str
    runtime_value: str
    array: str
    shape: str  # in infer_shapes' result
    value_shape: str  # variadic: one value's shape (at the loop index)
    data: str  # where the wrapper at hand has the output's buffer

    @classmethod
    def of(cls, op: OpDef, tensor: TensorParam, index: int, data: str) -> KernelOutput:
        paired = op.paired_input(tensor)
        return cls(
            name=tensor.name,
            index=index,
            cpp_type=common.tensor_cpp_type(tensor),
            kernel_allocated=tensor.name in op.shape_rule.kernel_allocated,
            elements_copied=op.elements_copied(tensor),
            optional=tensor.optional,
            variadic=tensor.variadic,
            min_arity=tensor.arity.min_arity if isinstance(tensor.arity, VariadicArity) else 1,
            paired_shape=Local.shape(paired) if paired else "",
            count_message=(cpp.string_literal(op.paired_count_message(tensor)) if paired else ""),
            value_index=Local.value_index(tensor.name),
            present=Local.present(tensor.name),
            optional_view=Local.optional_view(tensor.name),
            runtime_value=Local.runtime_value(tensor.name),
            array=Local.array(tensor.name),
            shape=Local.output_shape_member(tensor.name),
            value_shape=f"{Local.output_shape_member(tensor.name)}[{Local.value_index(tensor.name)}]",
            data=data,
        )


@view
class KernelInstantiation:
    """compute<...> for one binding of the type variables."""

    suffix: str
    template_args: str
    compute_params: str
    numpy_condition: str  # the pybind11 binding takes this kernel when it holds
    torch_condition: str  # the native PyTorch kernel takes it when this holds


def _inputs(
    op: OpDef, data: Callable[[TensorParam], str] = lambda tensor: ""
) -> tuple[KernelInput, ...]:
    return tuple(KernelInput.of(op, t, i, data(t)) for i, t in enumerate(op.inputs))


def _one_value(tensor: TensorParam, local: str) -> str:
    """A runtime's value of an input: a variadic one's at the views' loop index."""
    if tensor.variadic:
        return f"{local}[{Local.value_index(tensor.name)}]"
    return ("*" if tensor.optional else "") + local


def _ort_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = _one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return f"opgen::ort::data<{cpp_type}>({value}, aligned)"


def _numpy_data(tensor: TensorParam) -> str:
    array = _one_value(tensor, Local.array(tensor.name))
    return f"opgen::py_support::data<{common.tensor_cpp_type(tensor)}>({array}, aligned)"


def _torch_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = _one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return f"opgen::torch_support::data<{cpp_type}>({value}, aligned)"


def _outputs(
    op: OpDef, data: Callable[[TensorParam], str] = lambda tensor: ""
) -> tuple[KernelOutput, ...]:
    return tuple(KernelOutput.of(op, t, i, data(t)) for i, t in enumerate(op.outputs))


def _one_output_value(tensor: TensorParam, local: str) -> str:
    """A runtime's value of an output: a variadic one's at the views' loop index."""
    return f"{local}[{Local.value_index(tensor.name)}]" if tensor.variadic else local


def _numpy_output_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    array = _one_output_value(tensor, Local.array(tensor.name))
    return f"opgen::py_support::mutable_data<{cpp_type}>({array})"


def _torch_output_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    value = _one_output_value(tensor, Local.runtime_value(tensor.name))
    return f"opgen::torch_support::mutable_data<{cpp_type}>({value})"


def _instantiations(op: OpDef) -> tuple[KernelInstantiation, ...]:
    result = []
    for inst in op.instantiations:
        binding = {var: cpp.KERNEL_TYPE[dtype] for var, dtype in inst.bindings}
        # A variable an attribute chooses: the attribute's value (by then ONNX's number).
        chosen = [
            f"attrs.{name} == {TENSOR_PROTO_NUMBER[inst.dtype(tc.name)]}"
            for name, tc in op.type_choosers.items()
        ]
        conditions = list(chosen)
        torch_conditions = list(chosen)
        for tensor in op.inputs:
            torch_conditions.append(
                f"opgen::torch_support::has_dtype<{cpp.KERNEL_TYPE[tensor.dtype_in(inst)]}>"
                f"({Local.runtime_value(tensor.name)})"
            )
            # The numpy dtypes live in one place: dtype_of<T>() of pybind_support.h.
            has_dtype = f"opgen::py_support::has_dtype<{cpp.KERNEL_TYPE[tensor.dtype_in(inst)]}>"
            array = Local.array(tensor.name)
            conditions.append(
                f"(!{array} || {has_dtype}(*{array}))"
                if tensor.optional
                else f"{has_dtype}({array})"
            )
        result.append(
            KernelInstantiation(
                suffix=inst.suffix or "only",
                template_args=common.template_args(op, binding),
                compute_params=common.compute_params(op, binding),
                numpy_condition=" && ".join(conditions),
                torch_condition=" && ".join(torch_conditions),
            )
        )
    return tuple(result)


def _shape_args(op: OpDef) -> str:
    """The arguments of infer_shapes: each input's shape (and presence), then the attributes."""
    args = [
        Local.shape(t.name) + (f", {Local.present(t.name)}" if t.optional else "")
        for t in op.inputs
    ]
    return ", ".join(args) + ", attrs"


def _compute_args(op: OpDef, context: str) -> str:
    return ", ".join(
        [context] + [t.name for t in op.inputs] + [t.name for t in op.outputs] + ["attrs"]
    )


@view
class KernelApiView:
    """op.h (the kernel's API: attributes, the shape rule, compute's signature) and kernel.cc
    (the kernel compiled for each dtype)."""

    op_id: str
    op_type: str
    domain: str
    kernel_origin: str
    doc_lines: tuple[str, ...]
    attributes: tuple[CppAttribute, ...]
    inputs: tuple[KernelInput, ...]
    outputs: tuple[KernelOutput, ...]
    shape_params: str
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[OutputStatements, ...]
    template_decl: str
    compute_params: str
    kernel_include: str | None  # the kernel's source file, or None for an inline body
    kernel_body: str
    # compute<...> explicitly instantiated for each binding; none where compute is no template
    # (an op without type variables)
    instantiations: tuple[KernelInstantiation, ...]


def kernel_api_view(op: OpDef, output_dir: Path) -> KernelApiView:
    kernel = op.kernel
    assert kernel is not None and op.op_type is not None and op.domain is not None
    kernel_include = None
    if kernel.source_file is not None:
        kernel_include = common.relative_include(
            output_dir.resolve() / op.op_id, kernel.source_file.resolve()
        )
    shape_params = ", ".join(
        (
            f"const std::vector<std::vector<Dim>>& {Local.shape(t.name)}"
            if t.variadic
            else f"const std::vector<Dim>& {Local.shape(t.name)}"
        )
        + (f", bool {Local.present(t.name)}" if t.optional else "")
        for t in op.inputs
    )
    return KernelApiView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        kernel_origin=(
            f"in {kernel.source_file.name}" if kernel.source_file else "inline in the definition"
        ),
        doc_lines=tuple(cpp.comment(op.doc)),
        attributes=tuple(CppAttribute.of(a) for a in op.attributes),
        inputs=_inputs(op),
        outputs=_outputs(op),
        shape_params=shape_params + ", const Attributes& attrs",
        checks=tuple(cpp_shapes.concrete_checks(op)),
        output_shapes=cpp_shapes.concrete_output_shapes(op),
        template_decl=common.template_decl(op),
        compute_params=common.compute_params(op),
        kernel_include=kernel_include,
        kernel_body=kernel.body or "",
        instantiations=_instantiations(op) if op.type_constraints else (),
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
class KernelWrapperView:
    """What both kernel wrappers (ONNX Runtime, pybind11) read: they check the shapes, make
    the views and outputs, and call compute."""

    op_id: str
    op_type: str
    domain: str
    template_decl: str
    template_args: str
    attributes: tuple[CppAttribute, ...]
    inputs: tuple[KernelInput, ...]
    outputs: tuple[KernelOutput, ...]
    shape_args: str
    compute_args: str
    instantiations: tuple[KernelInstantiation, ...]
    elements_expr: str  # the elements a call touches, which size the thread pool's tasks
    # Where no instantiation takes the arguments: the checks of the attributes that choose a
    # dtype (a value they reject has no kernel), before the inputs' dtypes are named
    dtype_attribute_checks: tuple[SpelledCheck, ...]


def _kernel_wrapper_view(
    op: OpDef,
    data: Callable[[TensorParam], str],
    output_data: Callable[[TensorParam], str],
    context: str,
) -> KernelWrapperView:
    """`data` spells where the wrapper finds an input's elements, `output_data` an output's
    buffer, `context` is what it passes compute as its opgen::Context."""
    assert op.op_type is not None and op.domain is not None
    return KernelWrapperView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        template_decl=common.template_decl(op),
        template_args=common.template_args(op),
        attributes=tuple(CppAttribute.of(a) for a in op.attributes),
        inputs=_inputs(op, data),
        outputs=_outputs(op, output_data),
        shape_args=_shape_args(op),
        compute_args=_compute_args(op, context),
        instantiations=_instantiations(op),
        elements_expr=_elements_expr(op),
        dtype_attribute_checks=tuple(cpp_shapes.dtype_attribute_checks(op)),
    )


def _elements_expr(op: OpDef) -> str:
    """Every input's shape (a variadic input's values) and every output's the wrapper knows
    before compute (not a kernel-allocated one)."""
    allocated = op.shape_rule.kernel_allocated
    touched = [Local.shape(t.name) for t in op.inputs] + [
        Local.output_shape_member(t.name) for t in op.outputs if t.name not in allocated
    ]
    return f"opgen::elements_touched({', '.join(touched)})"


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


@view
class TypeChooser:
    """An attribute that picks a type variable's dtype: the kernel ONNX Runtime chose by the
    node's output types must be the one the attribute names."""

    attribute: str
    type_var: str


def ort_op_view(op: OpDef) -> OrtOpView:
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

    def output_data(tensor: TensorParam) -> str:
        cpp_type = common.tensor_cpp_type(tensor)
        value = Local.runtime_value(tensor.name)
        if tensor.variadic:
            index = Local.value_index(tensor.name)
            shape = f"{Local.output_shape_member(tensor.name)}[{index}]"
            return (
                f"opgen::ort::variadic_output_data<{cpp_type}>({value}[{index}], aligned, {shape})"
            )
        if op.elements_copied(tensor):
            shape = Local.output_shape_member(tensor.name)
            return f"opgen::ort::output_data<{cpp_type}>({value}, aligned, {shape})"
        return f"opgen::ort::mutable_data<{cpp_type}>({value})"

    wrapper = _kernel_wrapper_view(op, _ort_data, output_data, "pool")
    return OrtOpView(
        **vars(wrapper),
        version=op.version,
        versions_text=", ".join(str(v) for v in op.versions),
        first_version=op.versions[0],
        rank_ambiguous_indices=", ".join(
            str(i.index)
            for i in common.shaped_inputs(op)
            if i.name not in op.shape_rule.scalar_inputs and not i.variadic
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
    )


def _characteristics(tensors: tuple[TensorParam, ...]) -> str:
    """ONNX Runtime's characteristic of each parameter, or "" where all are required."""
    names = [cpp.ort_characteristic(t.arity) for t in tensors]
    return "" if all(n == "INPUT_OUTPUT_REQUIRED" for n in names) else ", ".join(names)


def _dtype_list_expr(op: OpDef) -> str:
    """The inputs' dtype names joined, as C++ (for the unsupported-dtypes message); an absent
    optional input's name is empty and left out."""
    return "opgen::join_present({" + ", ".join(Local.dtype_name(t.name) for t in op.inputs) + "})"


def _numpy_type(tensor: TensorParam) -> str:
    """What the pybind11 binding takes for an input."""
    if tensor.variadic:
        return "const std::vector<py::array>"
    return "const std::optional<py::array>" if tensor.optional else "const py::array"


@view
class PybindOpView(KernelWrapperView):
    """pybind_op.cc: the kernel bound for numpy arrays."""

    pybind_params: str
    binding_params: str
    binding_arg_specs: tuple[str, ...]
    run_args: str
    output_arrays: str
    dtype_list_expr: str
    supported_dtypes: str
    doc_literal: str


def pybind_op_view(op: OpDef) -> PybindOpView:
    assert op.op_type is not None and op.domain is not None
    array_params = [f"{_numpy_type(t)}& {Local.array(t.name)}" for t in op.inputs]
    attr_params = [f"{cpp.attribute_type(a)} {a.name}" for a in op.attributes]
    return PybindOpView(
        **vars(_kernel_wrapper_view(op, _numpy_data, _numpy_output_data, "serial")),
        pybind_params=", ".join(array_params),
        binding_params=", ".join(array_params + attr_params),
        binding_arg_specs=tuple(
            [f'py::arg("{t.name}")' + (" = py::none()" if t.optional else "") for t in op.inputs]
            + [
                f'py::arg("{a.name}")' + (" = py::none()" if a.optional_without_default else "")
                for a in op.attributes
            ]
        ),
        run_args=", ".join(Local.array(t.name) for t in op.inputs),
        output_arrays=", ".join(Local.array(t.name) for t in op.outputs),
        dtype_list_expr=_dtype_list_expr(op),
        supported_dtypes=common.supported_dtypes(op),
        doc_literal=cpp.string_literal(op.doc),
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
    # The outputs before a variadic one whose op below returns them all as one list (see
    # flat_below_autograd_kernel); None where it returns the op's own results
    flat_below_singles: int | None
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


def torch_op_view(op: OpDef, package: str) -> TorchOpView:
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
    singles = len(op.outputs) - 1
    flat_singles = singles if op.outputs[-1].variadic and singles else None
    result = [
        f"{value}.take()" if t.name in allocated else value
        for t, value in zip(op.outputs, outputs, strict=True)
    ]
    return TorchOpView(
        **vars(_kernel_wrapper_view(op, _torch_data, _torch_output_data, "parallel")),
        torch_namespace=torch.namespace,
        torch_name=torch.name,
        torch_name_literal=cpp.string_literal(torch.name),
        definition_literal=cpp.string_literal(torch.name + py.torch_schema(op)),
        namespace_literal=cpp.string_literal(torch.namespace),
        qualified_name_literal=cpp.string_literal(torch.qualified_name),
        source_literal=cpp.string_literal(f"{op.op_id}_torch.cc"),
        autograd_kernel=op.has_autograd_kernel,
        below_name_literal=cpp.string_literal(below),
        below_qualified_name_literal=cpp.string_literal(f"{torch.namespace}::{below}"),
        below_definition_literal=cpp.string_literal(
            below + py.torch_schema(op, flat_returns=flat_singles is not None)
        ),
        below_kernel=(
            f"&opgen::torch_support::flat_below_autograd_kernel<&boxed_cpu_kernel, {flat_singles}>"
            if flat_singles is not None
            else "&opgen::torch_support::below_autograd_kernel<&boxed_cpu_kernel>"
        ),
        flat_below_singles=flat_singles,
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
        dtype_list_expr=_dtype_list_expr(op),
        supported_dtypes=common.supported_dtypes(op),
    )


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    """Kernel ops only (ops ONNX Runtime provides, functions and export-only definitions have
    no kernel): the kernel's API and instantiations, and each kernel target's wrapper."""
    if op.kernel is None:
        return []
    base = f"{op.op_id}/{op.op_id}"
    srcs = common.sources(op)
    api = kernel_api_view(op, emission.output_dir)
    targets = targets_of(op)
    files = [
        render("cpp/op.h.j2", f"{base}_op.h", srcs, api),
        render("cpp/kernel.cc.j2", f"{base}_kernel.cc", srcs, api),
    ]
    if Target.ort_library in targets:
        files.append(render("cpp/ort_op.cc.j2", f"{base}_ort.cc", srcs, ort_op_view(op)))
    if Target.pybind in targets:
        files.append(render("cpp/pybind_op.cc.j2", f"{base}_pybind.cc", srcs, pybind_op_view(op)))
    if Target.torch_native in targets:
        view = torch_op_view(op, emission.package.name)
        files.append(render("cpp/torch_op.cc.j2", f"{base}_torch.cc", srcs, view))
    return files
