"""C++ per kernel op: the kernel's API header and its instantiations, and what every kernel
target's wrapper reads about the op (its inputs' and outputs' views, the instantiations, the
shape rule's arguments), computed once here; each target's own view is in generator/targets/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from generator.api import cpp, cpp_shapes
from generator.api.cpp_shapes import OutputStatements
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp import CppAttribute
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.op import OpDef
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


def one_value(tensor: TensorParam, local: str) -> str:
    """A runtime's value of an input: a variadic one's at the views' loop index."""
    if tensor.variadic:
        return f"{local}[{Local.value_index(tensor.name)}]"
    return ("*" if tensor.optional else "") + local


def _outputs(
    op: OpDef, data: Callable[[TensorParam], str] = lambda tensor: ""
) -> tuple[KernelOutput, ...]:
    return tuple(KernelOutput.of(op, t, i, data(t)) for i, t in enumerate(op.outputs))


def one_output_value(tensor: TensorParam, local: str) -> str:
    """A runtime's value of an output: a variadic one's at the views' loop index."""
    return f"{local}[{Local.value_index(tensor.name)}]" if tensor.variadic else local


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


def kernel_wrapper_view(
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


def dtype_list_expr(op: OpDef) -> str:
    """The inputs' dtype names joined, as C++ (for the unsupported-dtypes message); an absent
    optional input's name is empty and left out."""
    return "opgen::join_present({" + ", ".join(Local.dtype_name(t.name) for t in op.inputs) + "})"


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    """Kernel ops only (ops ONNX Runtime provides, functions and export-only definitions have
    no kernel): the kernel's API and its instantiations, which every kernel target compiles
    (each target's wrapper comes from its module in generator/targets/)."""
    if op.kernel is None:
        return []
    base = f"{op.op_id}/{op.op_id}"
    srcs = common.sources(op)
    api = kernel_api_view(op, emission.output_dir)
    return [
        render("cpp/op.h.j2", f"{base}_op.h", srcs, api),
        render("cpp/kernel.cc.j2", f"{base}_kernel.cc", srcs, api),
    ]
