"""Python per op: the op's package and the PyTorch custom op's module (fake kernel, autograd,
the Python registrations), which both PyTorch targets share. Each template reads one view (a
frozen dataclass) built here from the op."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

from generator.api import python as py
from generator.api import python_shapes
from generator.api.names import Local
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.capabilities import Target, targets_of
from generator.model.expressions import EXPRESSION_MODULES, PythonImport, import_block
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef, TorchApi
from generator.model.tensors import TensorParam, VariadicArity
from generator.model.types import AttrType
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
    variadic: bool
    values_of: str  # variadic: the input whose values its values take the shapes of, one for one


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
    # The outputs the formulas read, as assignment targets (`_` for the others); "": none
    output_targets: str
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
    imports: str  # the module's `import` lines, the gradient formulas' modules among them
    uses_legacy_api: bool  # torch._custom_op: no autograd
    uses_custom_op_api: bool  # torch.library.custom_op
    uses_library_api: bool  # torch.library.Library with our own Autograd kernel
    uses_native_api: bool  # schema and CPU kernel from the native library (C++)
    native_domain: str
    native_domain_ident: str
    native_library_file: str
    native_source: str  # the op's registration in C++
    devices: tuple[str, ...]  # beside the CPU, whose native libraries register its kernels
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
        imports=import_block(
            [PythonImport("onnx", "", "dtype attributes of eager nodes"), PythonImport("torch")]
            # what the gradient formulas may name (the validator's same list)
            + (list(EXPRESSION_MODULES) if op.gradients else [])
        ),
        uses_legacy_api=torch.api is TorchApi.legacy,
        uses_custom_op_api=torch.api is TorchApi.custom_op,
        uses_library_api=torch.api is TorchApi.library,
        uses_native_api=op.has_native_torch_op,
        native_domain=op.domain or "",
        native_domain_ident=op.domain_ident if op.kernel else "",
        native_library_file=common.torch_library_file(op.domain_ident) if op.kernel else "",
        native_source=f"{op.op_id}_torch.cc",
        devices=op.kernel.devices if op.kernel and op.has_native_torch_op else (),
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
            TorchOutputView(
                o.name, shape.expr, output_dtype_expr(op, o), o.variadic, shape.values_of
            )
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
    read = op.outputs_read_by_gradients
    params = op.inputs + read
    tensors = [f"*{t.name}" if t.variadic else t.name for t in params]
    if sum(t.variadic for t in params) > 1:  # two starred targets cannot unpack
        saved_targets = ", ".join(t.name for t in params)
        flags = ", ".join(str(t.variadic) for t in params)
        saved_values = f"_support.saved_values(ctx.saved_tensors, ({flags}))"
    else:
        saved_targets, saved_values = _targets(tensors), "ctx.saved_tensors"

    def gradient(t: TensorParam) -> str:
        formula = op.gradients.get(t.name, "None")
        if t.optional and t.name in op.gradients:
            # Autograd takes None for an input given as None, and the formula may read it (the
            # parser parenthesized the formula: parse/expressions.pasteable_expression).
            return f"None if {t.name} is None else {formula}"
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
        output_targets=(
            _targets([t.name if t in read else "_" for t in op.outputs]) if read else ""
        ),
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
        returned_gradients=py.tuple_display(gradients),
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


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    """The op's package and its PyTorch op's module (the ONNX schema's and the exporters'
    modules come from their targets' modules in generator/targets/)."""
    srcs = common.sources(op)
    targets = targets_of(op)
    files = [render("python/op_init.py.j2", f"{op.op_id}/__init__.py", srcs, op_init_view(op))]
    if Target.torch_native in targets or Target.torch_python in targets:
        view = torch_op_view(op, emission.onnx_ops)
        files.append(render("python/torch_op.py.j2", f"{op.op_id}/torch_op.py", srcs, view))
    return files
