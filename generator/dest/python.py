"""Python per op: the PyTorch custom op, the ONNX schema, the exporters' translations. Each
template reads one view (a frozen dataclass) built here from the op."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.api import python_shapes
from generator.api.names import Local
from generator.api.python_shapes import InferenceAttribute
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.capabilities import Target, targets_of
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef, TorchApi
from generator.model.shapes import OutputShape, SlicePart
from generator.model.tensors import TensorParam, VariadicArity
from generator.model.types import AttrType
from generator.parse.project import export_targets
from generator.render import GeneratedFile, render
from generator.shapes.spell import SpelledCheck
from generator.view import view


def title_and_torch_op(op: OpDef) -> str:
    """The op's title and the PyTorch op it defines, if any (how docstrings introduce it)."""
    if not op.new_torch_op:
        return op.title
    torch = py.torch_binding(op)
    return f"{op.title} <-> torch.ops.{torch.namespace}.{torch.name}"


def torch_overload_expr(op: OpDef) -> str:
    """The PyTorch overload the op defines or overrides, as a Python expression."""
    torch = py.torch_binding(op)
    return f"torch.ops.{torch.namespace}.{torch.name}.{torch.overload}"


def output_dtype_expr(op: OpDef, output: TensorParam) -> str:
    match op.dtype_source(output):
        case FixedDType(dtype):
            return py.TORCH_DTYPE[dtype]
        case FromInput(name):
            return f"{_first_value(op, name)}.dtype"
        case FromAttribute(name):  # by then ONNX's number (see dtype_conversions)
            return f"_support.torch_dtype({name})"
        case source:
            assert_never(source)


def _first_value(op: OpDef, name: str) -> str:
    """An input as one tensor: a variadic input's first value (it has one at least)."""
    return f"{name}[0]" if name in op.variadic_inputs else name


# ---- the op's package: op_init.py.j2


@view
class OpInitView:
    """generated/<op>/__init__.py: the facts the generated package reads of every op."""

    summary: str  # the module's docstring, without its final period
    submodules: str  # the op's modules that exist, comma-separated
    imports_torch_op: bool  # importing torch_op registers the PyTorch op
    defines_onnx_op: bool
    op_type: str | None
    domain: str | None
    version: int | None
    has_function: bool
    has_export: bool
    has_torch: bool
    torch_qualified_name: str | None
    is_override: bool
    overload_expr: str | None


def op_init_view(op: OpDef) -> OpInitView:
    summary = title_and_torch_op(op)
    if op.torch is not None and op.torch.is_override:
        summary += f": the ONNX export of {op.torch.qualified_name}"
    present = (
        ("onnx_export", bool(op.export)),
        ("onnx_schema", op.defines_onnx_op),
        ("torch_op", op.new_torch_op),
    )
    return OpInitView(
        summary=summary,
        submodules=", ".join(module for module, exists in present if exists),
        imports_torch_op=op.new_torch_op,
        defines_onnx_op=op.defines_onnx_op,
        op_type=op.op_type,
        domain=op.domain,
        version=op.version,
        has_function=op.function is not None,
        has_export=bool(op.export),
        has_torch=op.torch is not None,
        torch_qualified_name=op.torch.qualified_name if op.torch else None,
        is_override=bool(op.torch and op.torch.is_override),
        overload_expr=torch_overload_expr(op) if op.torch else None,
    )


# ---- the PyTorch op: torch_op.py.j2


@view
class TorchOutputView:
    name: str
    shape_expr: str  # a list of sizes over the (fake) inputs
    dtype_expr: str
    # A variadic output: the input whose values its values take the shapes of, one for one
    # ("" for another output)
    values_of: str


@view
class KernelCallView:
    """How the CPU implementation calls the C++ kernel in the domain's pybind11 module."""

    domain: str
    module_ident: str  # the domain as an identifier: names the module
    function: str
    args: str  # the inputs as numpy arrays, then the attributes
    name_the_op_args: str  # for _support.name_the_op, when the kernel call fails
    result_expr: str  # the outputs back as torch tensors


@view
class GradientFormulasView:
    """The definition's gradient formulas as the autograd Function's context and backward."""

    argument_targets: str  # unpacks `inputs`: the inputs, then the attributes
    unpacked_output: str  # `output` as a tuple of the outputs
    tensor_names: str  # inputs and outputs, saved for backward
    # backward's unpacking of them: a variadic parameter's values back into a list
    saved_targets: str
    saved_values: str
    saves_attributes: bool
    attribute_names_tuple: str  # `a, b,`
    # The attributes as the kernel holds them (float ones rounded to float32), saved for the
    # formulas, which must differentiate the function the kernel computed
    saved_attributes: str
    output_gradient_params: str
    returned_gradients: str  # one per input and attribute: a formula or None


@view
class TorchOpView:
    """generated/<op>/torch_op.py: the PyTorch op, its fake kernel and its autograd."""

    title: str
    torch_namespace: str
    torch_name: str
    qualified_name: str
    definition_path: str  # for _support.bind_op's messages
    uses_legacy_api: bool  # torch._custom_op: no autograd
    uses_custom_op_api: bool  # torch.library.custom_op
    uses_library_api: bool  # torch.library.Library with our own Autograd kernel
    uses_native_api: bool  # schema and CPU kernel from the native library (C++)
    native_domain: str
    native_domain_ident: str
    native_library_file: str
    native_source: str  # the op's registration in C++
    autograd_kernel: bool  # our own Autograd kernel (library api; native with formulas)
    schema_literal: str
    python_params: str  # annotated, with defaults
    plain_params: str  # not annotated, with defaults
    return_annotation: str
    doc_escaped: str  # the definition's doc, inside a """ string
    checks: tuple[SpelledCheck, ...]
    device_check_args: str | None  # for _support.check_one_device: two tensor inputs or more
    dtype_check_args: str | None  # for _support.check_dtypes: a kernel op's
    data_dependent_sizes: tuple[str, ...]
    outputs: tuple[TorchOutputView, ...]
    first_input: str
    return_expr: str
    output_names_tuple: str  # the outputs as assignment targets
    fill_defaults: tuple[str, ...]
    # Each dtype argument (a torch.dtype) as ONNX's number, which the attribute checks, the
    # kernel and the messages read (the fake kernel and the CPU implementation begin so)
    dtype_conversions: tuple[str, ...]
    kernel_call: KernelCallView | None  # None: the export nodes run eagerly
    eager_statements: tuple[str, ...]
    call_args: str
    # The autograd Function's arguments (a variadic input's values spread last: apply sees
    # only tensors passed one by one), and how its forward calls the op with them
    function_args: str
    function_targets: str  # the same as a tuple's items (assignment targets, return values)
    function_forward_args: str
    # With a variadic input: the op's arguments in its own order from the Function's inputs
    # (_setup_context and _backward take them so), and the Function's gradients from the op's
    function_as_op_args: str | None
    op_gradient_targets: str
    function_gradients: str
    # With a variadic output: the Function returns its values one by one, last (autograd sees
    # no tensor in a list). `function_outputs` spreads the op's outputs (`output_targets`) so,
    # and unpacks the Function's back; `function_incoming_gradients` unpacks backward's
    # gradients, `op_incoming_gradients` passes them to _backward as the op's outputs are.
    function_outputs: str | None
    output_targets: str
    function_incoming_gradients: str
    op_incoming_gradients: str
    needs_autograd: str  # the condition for going through the autograd Function
    gradient_formulas: GradientFormulasView | None
    no_gradient_message: str | None  # a literal: backward without formulas raises it
    forward_mode_message: str
    loop_vmap: bool  # a Tensor[] input: vmap through our own rule


def torch_op_view(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> TorchOpView:
    torch = py.torch_binding(op)
    names = [t.name for t in op.outputs]
    single = len(names) == 1
    shapes = python_shapes.torch_output_shapes(op)
    return TorchOpView(
        title=op.title,
        torch_namespace=torch.namespace,
        torch_name=torch.name,
        qualified_name=torch.qualified_name,
        definition_path=op.definition_path,
        uses_legacy_api=torch.api is TorchApi.legacy,
        uses_custom_op_api=torch.api is TorchApi.custom_op,
        uses_library_api=torch.api is TorchApi.library,
        uses_native_api=op.has_native_torch_op,
        native_domain=op.domain or "",
        native_domain_ident=op.domain_ident if op.kernel else "",
        native_library_file=common.torch_library_file(op.domain_ident) if op.kernel else "",
        native_source=f"{op.op_id}_torch.cc",
        autograd_kernel=op.has_autograd_kernel,
        schema_literal=py.literal(py.torch_schema(op)),
        python_params=py.python_params(op, annotate=True, dtype_arguments=True),
        plain_params=py.python_params(op, annotate=False, dtype_arguments=True),
        return_annotation=(
            f" -> {py.return_annotation(op.outputs[0].arity)}"
            if single
            else f" -> tuple[{', '.join(py.return_annotation(t.arity) for t in op.outputs)}]"
        ),
        doc_escaped=op.doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"'),
        checks=tuple(_arity_checks(op) + python_shapes.torch_checks(op)),
        device_check_args=(
            f"{py.literal(op.message_prefix)}, "
            + "{"
            + ", ".join(f"{t.name!r}: {t.name}" for t in op.inputs)
            + "}"
            if len(op.inputs) > 1 or op.variadic_inputs
            else None
        ),
        dtype_check_args=_dtype_check_args(op),
        data_dependent_sizes=tuple(op.shape_rule.data_dependent_sizes),
        outputs=tuple(
            TorchOutputView(o.name, shape.expr, output_dtype_expr(op, o), shape.values_of)
            for o, shape in zip(op.outputs, shapes, strict=True)
        ),
        # The device of the outputs: a required input's (an optional one may be None).
        first_input=_first_value(
            op, next((t.name for t in op.inputs if not t.optional), op.inputs[0].name)
        ),
        return_expr=names[0] if single else "(" + ", ".join(names) + ")",
        output_names_tuple=", ".join(names) + ("," if single else ""),
        fill_defaults=tuple(py.fill_defaults(op)),
        dtype_conversions=tuple(py.dtype_conversions(op, "onnx_dtype")),
        # An export-only op runs its export nodes eagerly; others call their kernel.
        kernel_call=_kernel_call(op) if op.kernel else None,
        eager_statements=() if op.kernel else tuple(py.eager_statements(op, index)),
        call_args=", ".join([t.name for t in op.inputs] + [a.name for a in op.attributes]),
        function_args=", ".join(_function_order(op)),
        function_targets=_targets(_function_order(op)),
        function_forward_args=", ".join(_op_args(op)),
        function_as_op_args=(
            "(" + "".join(f"{arg}, " for arg in _op_args(op)) + ")"
            if op.variadic_inputs or op.variadic_outputs
            else None
        ),
        op_gradient_targets=", ".join([t.name for t in op.inputs] + [a.name for a in op.attributes])
        + ("," if len(op.inputs) + len(op.attributes) == 1 else ""),
        function_gradients=_targets(_function_order(op)),
        function_outputs=(
            _targets([("*" if t.variadic else "") + t.name for t in op.outputs])
            if op.variadic_outputs
            else None
        ),
        output_targets=", ".join(names),
        function_incoming_gradients=_targets(
            [("*" if t.variadic else "") + Local.incoming_gradient(t.name) for t in op.outputs]
        ),
        op_incoming_gradients=", ".join(Local.incoming_gradient(t.name) for t in op.outputs),
        needs_autograd=_needs_autograd(op),
        gradient_formulas=_gradient_formulas(op) if op.gradients else None,
        no_gradient_message=(
            py.literal(py.no_gradient_message(op))
            if op.raises_without_gradients and op.has_autograd_kernel
            else None
        ),
        forward_mode_message=py.literal(py.forward_mode_message(op)),
        loop_vmap=bool(op.variadic_inputs),
    )


def _function_order(op: OpDef) -> list[str]:
    """The autograd Function's arguments: a variadic input's values spread last."""
    return (
        [t.name for t in op.inputs if not t.variadic]
        + [a.name for a in op.attributes]
        + [f"*{t.name}" for t in op.inputs if t.variadic]
    )


def _targets(names: list[str]) -> str:
    """Names as a tuple's items, in parameters, assignment targets and return values alike (one
    item takes a trailing comma: `*X,`)."""
    return ", ".join(names) + ("," if len(names) == 1 else "")


def _op_args(op: OpDef) -> list[str]:
    """The op's arguments from the autograd Function's (a variadic input's values as a list)."""
    return [f"list({t.name})" if t.variadic else t.name for t in op.inputs] + [
        a.name for a in op.attributes
    ]


def _arity_checks(op: OpDef) -> list[SpelledCheck]:
    """Each variadic input has its minimum number of values (the fake kernel checks it first:
    the shape rule reads the first value)."""
    return [
        SpelledCheck(
            f"len({t.name}) >= {t.arity.min_arity}",
            py.literal(op.too_few_values_message(t)),
            f"len({t.name})",
        )
        for t in op.inputs
        if isinstance(t.arity, VariadicArity)
    ]


def _kernel_call(op: OpDef) -> KernelCallView:
    assert op.domain is not None  # a kernel op defines an ONNX op

    def array(t: TensorParam) -> str:
        if t.variadic:
            return f"[_support.to_numpy(value) for value in {t.name}]"
        if t.optional:
            return f"None if {t.name} is None else _support.to_numpy({t.name})"
        return f"_support.to_numpy({t.name})"

    def from_numpy(t: TensorParam) -> str:
        if t.variadic:
            return f"[_support.from_numpy(value) for value in {t.name}]"
        return f"_support.from_numpy({t.name})"

    arrays = [array(t) for t in op.inputs]
    inputs_by_name = "{" + ", ".join(f"{t.name!r}: {t.name}" for t in op.inputs) + "}"
    return KernelCallView(
        domain=op.domain,
        module_ident=op.domain_ident,
        function=op.op_id,
        args=", ".join(arrays + [a.name for a in op.attributes]),
        name_the_op_args=f"{py.literal(op.op_type or '')}, error, {inputs_by_name}",
        result_expr=(
            from_numpy(op.outputs[0])
            if len(op.outputs) == 1
            else "(" + ", ".join(from_numpy(t) for t in op.outputs) + ")"
        ),
    )


def _needs_autograd(op: OpDef) -> str:
    """When the autograd kernel goes through the op's autograd.Function: a gradient can flow
    backward (grad mode on and some tensor input requiring grad) or forward (some input carries
    a forward-mode tangent, which would otherwise be dropped in silence)."""

    def requires_grad(t: TensorParam) -> str:
        if t.variadic:
            return f"any(value.requires_grad for value in {t.name})"
        if t.optional:
            return f"({t.name} is not None and {t.name}.requires_grad)"
        return f"{t.name}.requires_grad"

    conditions = [requires_grad(t) for t in op.inputs]
    any_requires_grad = conditions[0] if len(conditions) == 1 else f"({' or '.join(conditions)})"
    tensors = ", ".join(f"*{t.name}" if t.variadic else t.name for t in op.inputs)
    return f"(torch.is_grad_enabled() and {any_requires_grad}) or _support.has_tangent({tensors})"


def _gradient_formulas(op: OpDef) -> GradientFormulasView:
    attributes = [a.name for a in op.attributes]
    # A variadic parameter's values are saved one by one (and unpacked back into a list): the
    # inputs, and the outputs the formulas read.
    params = op.inputs + op.outputs_read_by_gradients
    tensors = [f"*{t.name}" if t.variadic else t.name for t in params]
    if sum(t.variadic for t in params) > 1:  # two starred targets cannot unpack
        saved_targets = ", ".join(t.name for t in params)
        flags = ", ".join(str(t.variadic) for t in params)
        saved_values = f"_support.saved_values(ctx.saved_tensors, ({flags}))"
    else:
        saved_targets, saved_values = _targets(tensors), "ctx.saved_tensors"

    def gradient(t: TensorParam) -> str:
        formula = op.gradients.get(t.name, "None")
        if not t.variadic:
            return formula
        # One gradient per value, as PyTorch takes a list argument's.
        message = py.literal(f"{op.message_prefix}: the gradient formula of input '{t.name}'")
        return f"_support.value_gradients({message}, {formula}, len({t.name}))"

    gradients = [gradient(t) for t in op.inputs] + ["None"] * len(attributes)
    return GradientFormulasView(
        argument_targets=", ".join([t.name for t in op.inputs] + attributes)
        + ("," if len(op.inputs) + len(attributes) == 1 else ""),
        unpacked_output="(output,)" if len(op.outputs) == 1 else "output",
        tensor_names=", ".join(tensors),
        saved_targets=saved_targets,
        saved_values=saved_values,
        saves_attributes=bool(attributes),
        attribute_names_tuple="".join(f"{name}, " for name in attributes).rstrip(" "),
        saved_attributes="".join(
            (
                f"_support.float32_value({a.name}), "
                if a.type in (AttrType.float, AttrType.floats)
                else f"{a.name}, "
            )
            for a in op.attributes
        ).rstrip(" "),
        output_gradient_params=", ".join(Local.incoming_gradient(t.name) for t in op.outputs),
        returned_gradients="(" + "".join(f"{gradient}, " for gradient in gradients) + ")",
    )


# ---- the ONNX schema: onnx_schema.py.j2


@view
class KeywordView:
    keyword: str
    value: str  # a Python expression


@view
class SchemaInputView:
    name: str
    type_str: str
    doc_literal: str
    keywords: tuple[KeywordView, ...]  # FormalParameter's, where not its defaults


@view
class SchemaOutputView:
    name: str
    index: int
    type_str: str
    doc_literal: str
    keywords: tuple[KeywordView, ...]
    type_variable: str  # its TypeProto in the inference function
    elem_type_expr: str | None  # None: an interface-only op, which infers nothing
    optional: bool  # a node may leave it out (then inference must not set it)
    # A variadic output (type_variable is a list of its values' TypeProtos): the index of the
    # variadic input whose values its values pair with, and what another count raises
    paired_index: int | None = None
    count_message: str = ""


@view
class ReadInputView:
    """An input whose type the inference function reads (for its shape or its dtype)."""

    index: int
    optional: bool
    variadic: bool  # its values are the inputs from index on: type_variable is their list
    type_variable: str
    # variadic: its fewest values, and literals of what fewer or an absent ("") value raise
    min_arity: int = 1
    too_few_message: str = ""
    absent_message: str = ""


@view
class ShapedInputView:
    """An input whose dims the shape rule reads."""

    optional: bool
    variadic: bool  # dims_variable is a list of every value's dims
    type_variable: str
    dims_variable: str


@view
class InferredShapeView:
    type_variable: str  # the output's TypeProto
    expr: str  # its dims, over the inputs' dims
    # A variadic output: the dims variable of the input it pairs with (type_variable is a list,
    # value i takes that input's value i's dims); "" for others
    values_of: str = ""


@view
class SchemaAttributeView:
    name: str
    has_default: bool
    required_literal: str  # without a default: required or not (True / False)
    onnx_enum: str
    doc_literal: str
    python_default: str | None  # None: no default
    since: int  # the op version that added it


@view
class TypeConstraintView:
    name: str
    types: str  # a list literal
    doc_literal: str


@view
class OnnxSchemaView:
    """generated/<op>/onnx_schema.py: the op's ONNX schemas and shape inference in Python."""

    title: str
    domain: str
    op_type: str
    version: int
    provided_by: str | None  # the runtime that implements the op, if not us
    has_inference: bool  # False: an interface-only op, whose schema has no inference function
    infers_through_function: bool
    input_names: str  # a list literal
    output_names: str  # a list literal
    inference_attributes: tuple[InferenceAttribute, ...]
    attribute_checks: tuple[SpelledCheck, ...]
    read_inputs: tuple[ReadInputView, ...]
    infers_shapes: bool  # the shape rule checks or gives some output's shape
    shapes_known: str  # the condition that every shape the rule reads is known
    shaped_inputs: tuple[ShapedInputView, ...]
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[InferredShapeView, ...]
    inputs: tuple[SchemaInputView, ...]
    outputs: tuple[SchemaOutputView, ...]
    attributes: tuple[SchemaAttributeView, ...]
    type_constraints: tuple[TypeConstraintView, ...]
    doc_literal: str
    versions: str  # a list literal
    has_function: bool
    function_text_literal: str | None
    function_opset: int | None


def onnx_schema_view(op: OpDef) -> OnnxSchemaView:
    assert op.op_type is not None and op.domain is not None and op.version is not None
    inference = _schema_inference(op) if not op.is_interface_only else _NO_INFERENCE
    function_text = onnx_api.function_text(op) if op.function else None
    return OnnxSchemaView(
        title=op.title,
        domain=op.domain,
        op_type=op.op_type,
        version=op.version,
        provided_by=op.provided_by.value if op.provided_by else None,
        has_inference=not op.is_interface_only,
        infers_through_function=op.infers_through_function,
        input_names=py.literal([t.name for t in op.inputs]),
        output_names=py.literal([t.name for t in op.outputs]),
        inference_attributes=inference.attributes,
        attribute_checks=inference.attribute_checks,
        read_inputs=inference.read_inputs,
        infers_shapes=bool(inference.checks or inference.output_shapes),
        shapes_known=inference.shapes_known,
        shaped_inputs=inference.shaped_inputs,
        checks=inference.checks,
        output_shapes=inference.output_shapes,
        inputs=tuple(
            SchemaInputView(
                t.name, onnx_api.parameter_type_string(t), py.literal(t.doc), _keywords(t)
            )
            for t in op.inputs
        ),
        outputs=tuple(
            SchemaOutputView(
                name=t.name,
                index=i,
                type_str=onnx_api.parameter_type_string(t),
                doc_literal=py.literal(t.doc),
                keywords=_keywords(t),
                type_variable=Local.onnx_type(t.name),
                elem_type_expr=None if op.is_interface_only else _elem_type(op, t),
                optional=t.optional,
                paired_index=op.paired_input_index(t),
                count_message=(
                    py.literal(op.paired_count_message(t)) if op.paired_input(t) else ""
                ),
            )
            for i, t in enumerate(op.outputs)
        ),
        attributes=tuple(
            SchemaAttributeView(
                name=a.name,
                has_default=a.has_default,
                required_literal=str(a.required),
                onnx_enum=onnx_api.ATTR_TYPE[a.type],
                doc_literal=py.literal(a.doc),
                python_default=py.literal(_onnx_value(a.default)) if a.has_default else None,
                since=a.since_version or op.versions[0],
            )
            for a in op.attributes
        ),
        type_constraints=tuple(
            TypeConstraintView(
                tc.name,
                py.literal([onnx_api.value_type_string(t) for t in tc.types]),
                py.literal(tc.doc),
            )
            for tc in op.type_constraints
        ),
        doc_literal=py.literal(op.doc),
        versions=py.literal(list(op.versions)),
        has_function=function_text is not None,
        function_text_literal=py.literal(function_text) if function_text else None,
        function_opset=op.function.opset if op.function else None,
    )


def _keywords(param: TensorParam) -> tuple[KeywordView, ...]:
    return tuple(KeywordView(k, v) for k, v in onnx_api.formal_parameter_keywords(param))


@dataclass(frozen=True)
class _SchemaInference:
    """The parts of the schema's inference function (the shape rule, spelled in Python)."""

    attributes: tuple[InferenceAttribute, ...]
    attribute_checks: tuple[SpelledCheck, ...]
    read_inputs: tuple[ReadInputView, ...]
    shapes_known: str
    shaped_inputs: tuple[ShapedInputView, ...]
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[InferredShapeView, ...]


_NO_INFERENCE = _SchemaInference((), (), (), "True", (), (), ())


def _schema_inference(op: OpDef) -> _SchemaInference:
    shaped = common.shaped_inputs(op)
    shaped_names = {s.name for s in shaped}
    dtype_sources = {
        source.input for o in op.outputs if isinstance(source := op.dtype_source(o), FromInput)
    }
    return _SchemaInference(
        attributes=tuple(python_shapes.onnx_inference_attributes(op)),
        attribute_checks=tuple(python_shapes.onnx_attribute_checks(op)),
        read_inputs=tuple(
            _read_input(op, i, t)
            for i, t in enumerate(op.inputs)
            if t.name in shaped_names or t.name in dtype_sources
        ),
        shapes_known=" and ".join(_shape_known(op, s.name) for s in shaped) or "True",
        shaped_inputs=tuple(
            ShapedInputView(s.optional, s.variadic, _onnx_type(op, s.name), Local.onnx_dims(s.name))
            for s in shaped
        ),
        checks=tuple(python_shapes.onnx_checks(op)),
        output_shapes=tuple(
            InferredShapeView(Local.onnx_type(shape.output), shape.expr, shape.values_of)
            for shape in python_shapes.onnx_output_shapes(op)
        ),
    )


def _read_input(op: OpDef, index: int, tensor: TensorParam) -> ReadInputView:
    if not isinstance(tensor.arity, VariadicArity):
        return ReadInputView(index, tensor.optional, False, _onnx_type(op, tensor.name))
    return ReadInputView(
        index,
        False,
        True,
        _onnx_type(op, tensor.name),
        tensor.arity.min_arity,
        py.literal(op.too_few_values_message(tensor)),
        py.literal(op.absent_value_message(tensor)),
    )


def _onnx_type(op: OpDef, tensor: str) -> str:
    """The inference function's TypeProto of an input (a list of them for a variadic one)."""
    return Local.onnx_types(tensor) if tensor in op.variadic_inputs else Local.onnx_type(tensor)


def _shape_known(op: OpDef, tensor: str) -> str:
    """The condition that an input's shape is known to the inference function (an absent
    optional input's counts as known; a variadic one's, every value's)."""
    if tensor in op.variadic_inputs:
        types = Local.onnx_types(tensor)
        return f'all(value.tensor_type.HasField("shape") for value in {types})'
    has_shape = f'{Local.onnx_type(tensor)}.tensor_type.HasField("shape")'
    if tensor in op.optional_inputs:
        return f"({Local.onnx_type(tensor)} is None or {has_shape})"
    return has_shape


def _elem_type(op: OpDef, output: TensorParam) -> str:
    """The output's element type in the inference function: its dtype source's, or fixed."""
    match op.dtype_source(output):
        case FromInput(name) if name in op.variadic_inputs:
            return f"{Local.onnx_types(name)}[0].tensor_type.elem_type"
        case FromInput(name):
            return f"{Local.onnx_type(name)}.tensor_type.elem_type"
        case FromAttribute(name):  # read, and checked against the allowed dtypes, above
            return f"int({Local.onnx_attribute(name)})"  # a FLOAT 7.0 passes that check
        case FixedDType(dtype):
            return f"onnx.TensorProto.{onnx_api.TENSOR_PROTO[dtype]}"
        case source:
            assert_never(source)


def _onnx_value(value: object) -> object:
    """ONNX has no bool attributes: a PyTorch bool is an int 0/1."""
    return int(value) if isinstance(value, bool) else value


# ---- the exporters' translations: onnx_export.py.j2


_PARSE_ARG = {
    AttrType.bool: "b",
    AttrType.int: "i",
    AttrType.float: "f",
    AttrType.string: "s",
    AttrType.ints: "is",
    AttrType.floats: "fs",
    AttrType.strings: "ss",
}


@view
class OpsetView:
    """A custom domain the export nodes call, as an onnxscript Opset."""

    variable: str
    domain: str
    version: int


@view
class StringListConstantView:
    """A list-of-strings attribute, which the TorchScript exporter passes as a constant."""

    name: str
    # constant_strings's arguments after the value: the default (a literal; "None" for a
    # required attribute), and whether it may be absent
    defaults: str


@view
class OnnxExportView:
    """generated/<op>/onnx_export.py: the dynamo translation and the TorchScript symbolic."""

    overload_name: str
    is_override: bool
    op_id: str
    uses_standard_opset: bool
    opsets: tuple[OpsetView, ...]
    opsets_literal: str
    translation_params: str
    fill_defaults: tuple[str, ...]
    translation_statements: tuple[str, ...]
    parse_args: str
    symbolic_params: str
    string_list_constants: tuple[StringListConstantView, ...]
    # Each dtype argument, which a symbolic gets as c10's ScalarType index, as ONNX's number
    symbolic_dtype_conversions: tuple[str, ...]
    symbolic_statements: tuple[str, ...]


def export_opsets(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> dict[str, int]:
    """Custom domain -> version, for every custom op the export nodes call."""
    opsets: dict[str, int] = {}
    for target in export_targets(op, index):
        assert target.domain is not None and target.version is not None  # it defines an ONNX op
        opsets[target.domain] = max(opsets.get(target.domain, 0), target.version)
    return dict(sorted(opsets.items()))


def onnx_export_view(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> OnnxExportView:
    torch = py.torch_binding(op)
    opsets = export_opsets(op, index)
    return OnnxExportView(
        overload_name=torch.overload_name,
        is_override=torch.is_override,
        op_id=op.op_id,
        uses_standard_opset=any(not n.domain for rule in op.export for n in rule.nodes),
        opsets=tuple(OpsetView(py.opset_variable(d), d, v) for d, v in opsets.items()),
        opsets_literal=py.literal_dict(opsets),
        translation_params=py.python_params(op, annotate=False, dtype_arguments=False),
        fill_defaults=tuple(py.fill_defaults(op) + py.fill_dtype_defaults(op)),
        translation_statements=tuple(py.translation_statements(op)),
        parse_args=", ".join(
            ['"v"'] * len(op.inputs) + [f'"{_PARSE_ARG[a.type]}"' for a in op.attributes]
        ),
        symbolic_params=", ".join([t.name for t in op.inputs] + [a.name for a in op.attributes]),
        string_list_constants=tuple(
            StringListConstantView(
                a.name,
                (
                    "None, may_be_absent=True"
                    if a.optional_without_default
                    else py.literal(a.default) if a.has_default else "None"
                ),
            )
            for a in op.attributes
            if a.type is AttrType.strings
        ),
        symbolic_dtype_conversions=tuple(py.dtype_conversions(op, "onnx_dtype_of_scalar_type")),
        symbolic_statements=tuple(py.symbolic_statements(op, _set_types(op))),
    )


def _dtype_check_args(op: OpDef) -> str | None:
    """The fake kernel checks the inputs' dtypes as the kernel does (a kernel for each dtype
    binding), so that tracing refuses what eager refuses, in the same words."""
    if op.kernel is None:
        return None
    bindings = dict.fromkeys(
        tuple(py.TORCH_DTYPE[t.dtype_in(binding)] for t in op.inputs)
        for binding in op.instantiations
    )

    def spelled(items: list[str]) -> str:  # a tuple, without a trailing comma black would keep
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    return (
        f"{py.literal(op.message_prefix)}, "
        + "{"
        + ", ".join(f"{t.name!r}: {t.name}" for t in op.inputs)
        + "}, "
        + spelled([spelled(list(binding)) for binding in bindings])
        + f", {py.literal(common.supported_dtypes(op))}"
    )


def _set_types(op: OpDef) -> list[str]:
    """TorchScript values carry no type from g.op: outputs that provably have an input's shape
    get that input's type (with their own dtype)."""
    statements = []
    rules = {shape.output: shape for shape in op.shape_rule.outputs}
    for output in op.outputs:
        if output.variadic:  # a list value: its values stay untyped, to ONNX inference
            continue
        match op.dtype_source(output):
            case FromInput(name):
                typed_like, dtype = name, ""
                own_dtype = f".with_dtype({name}.type().dtype())"  # on another input's type
            case FixedDType(fixed):
                typed_like, dtype = op.inputs[0].name, f".with_dtype({py.TORCH_DTYPE[fixed]})"
                own_dtype = dtype
            case FromAttribute(name):  # by then ONNX's number (symbolic_dtype_conversions)
                dtype = f".with_dtype(_support.torch_dtype({name}))"
                typed_like, own_dtype = op.inputs[0].name, dtype
            case source:
                assert_never(source)
        shape = rules.get(output.name)
        if shape is None:  # no shape rule: the dtype, and sizes left to ONNX inference
            statements.append(f"{output.name}.setType({typed_like}.type(){dtype}.with_sizes(None))")
            continue
        same_shape = next((t.name for t in op.inputs if _same_shape(shape, t, op)), None)
        if same_shape is None:
            continue
        if same_shape != typed_like:
            dtype = own_dtype
        statements.append(f"{output.name}.setType({same_shape}.type(){dtype})")
    return statements


def _same_shape(shape: OutputShape, tensor: TensorParam, op: OpDef) -> bool:
    """True when the output provably has this input's shape (for the TorchScript type)."""
    match shape.parts:
        case (SlicePart(start=None) as whole,):
            return whole.input == tensor.name and whole.stop is None
    output = next(o for o in op.outputs if o.name == shape.output)
    return output.shape is not None and tensor.shape is not None and output.shape == tensor.shape


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    index = emission.onnx_ops
    srcs = common.sources(op)
    targets = targets_of(op)
    files = [render("python/op_init.py.j2", f"{op.op_id}/__init__.py", srcs, op_init_view(op))]
    if Target.torch_native in targets or Target.torch_python in targets:
        view = torch_op_view(op, index)
        files.append(render("python/torch_op.py.j2", f"{op.op_id}/torch_op.py", srcs, view))
    if Target.onnx_schema in targets:
        schema = onnx_schema_view(op)
        path = f"{op.op_id}/onnx_schema.py"
        files.append(render("python/onnx_schema.py.j2", path, srcs, schema))
    if Target.exporters in targets:
        export = onnx_export_view(op, index)
        path = f"{op.op_id}/onnx_export.py"
        files.append(render("python/onnx_export.py.j2", path, srcs, export))
    return files
