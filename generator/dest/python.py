"""Python per op: the PyTorch custom op, the ONNX schema, the exporters' translations."""

from __future__ import annotations

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.api import python_shapes
from generator.dest import common
from generator.model.op import OpDef
from generator.model.shapes import OutputShape, SlicePart
from generator.model.tensors import TensorParam
from generator.parse.project import export_targets
from generator.render import GeneratedFile, render


def output_dtype_expr(op: OpDef, output) -> str:
    source = op.dtype_source(output)
    return f"{source}.dtype" if source else py.TORCH_DTYPE[output.dtype]


def _torch_context(op: OpDef, index: dict[tuple[str, str], OpDef]) -> dict:
    names = [t.name for t in op.outputs]
    single = len(names) == 1
    return {
        # An export-only op runs its export nodes eagerly; others call their kernel.
        "eager_statements": None if op.kernel else py.eager_statements(op, index),
        "api": op.torch.api.value,
        "call_args": ", ".join([t.name for t in op.inputs] + [a.name for a in op.attributes]),
        "needs_autograd": _needs_autograd(op),
        "no_gradient_message": (
            py.literal(py.no_gradient_message(op)) if op.raises_without_gradients else None
        ),
        "forward_mode_message": py.literal(py.forward_mode_message(op)),
        "schema_literal": py.literal(py.torch_schema(op)),
        "fill_defaults": py.fill_defaults(op),
        "python_params": py.python_params(op, annotate=True),
        "plain_params": py.python_params(op, annotate=False),
        "return_annotation": (
            " -> torch.Tensor"
            if single
            else f" -> tuple[{', '.join(['torch.Tensor'] * len(names))}]"
        ),
        "checks": python_shapes.torch_checks(op),
        "data_dependent_sizes": list(op.shape_rule.data_dependent_sizes),
        "outputs": [
            {
                "name": o.name,
                "shape_expr": shape["expr"],
                "dtype_expr": output_dtype_expr(op, o),
            }
            for o, shape in zip(op.outputs, python_shapes.torch_output_shapes(op), strict=True)
        ],
        "first_input": op.inputs[0].name,
        "return_expr": names[0] if single else "(" + ", ".join(names) + ")",
        "output_names_tuple": ", ".join(names) + ("," if single else ""),
        "kernel_call_args": ", ".join(
            [
                (
                    f"None if {t.name} is None else _support.to_numpy({t.name})"
                    if t.optional
                    else f"_support.to_numpy({t.name})"
                )
                for t in op.inputs
            ]
            + [a.name for a in op.attributes]
        ),
        # For _support.name_the_op: the op's name and its inputs, when the kernel call fails.
        "name_the_op_args": (
            f"{py.literal(op.op_type or '')}, error, "
            + "{"
            + ", ".join(f"{t.name!r}: {t.name}" for t in op.inputs)
            + "}"
        ),
        "torch_return_expr": (
            f"_support.from_numpy({names[0]})"
            if single
            else "(" + ", ".join(f"_support.from_numpy({n})" for n in names) + ")"
        ),
        "doc_escaped": op.doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"'),
        **_autograd_context(op),
    }


def _needs_autograd(op: OpDef) -> str:
    """When the autograd kernel goes through the op's autograd.Function: a gradient can flow
    backward (grad mode on and some tensor input requiring grad) or forward (some input carries
    a forward-mode tangent, which would otherwise be dropped in silence)."""
    requires_grad = [
        (
            f"({t.name} is not None and {t.name}.requires_grad)"
            if t.optional
            else f"{t.name}.requires_grad"
        )
        for t in op.inputs
    ]
    any_requires_grad = (
        requires_grad[0] if len(requires_grad) == 1 else f"({' or '.join(requires_grad)})"
    )
    tensors = ", ".join(t.name for t in op.inputs)
    return f"(torch.is_grad_enabled() and {any_requires_grad}) or _support.has_tangent({tensors})"


def _autograd_context(op: OpDef) -> dict:
    if not op.gradients:
        return {"gradients": False}
    attributes = [a.name for a in op.attributes]
    tensors = [t.name for t in op.inputs] + [t.name for t in op.outputs]  # at least two
    return {
        "gradients": True,
        "argument_targets": ", ".join([t.name for t in op.inputs] + attributes)
        + ("," if len(op.inputs) + len(attributes) == 1 else ""),
        "output_count": len(op.outputs),
        "tensor_names": ", ".join(tensors),
        "attribute_names_tuple": "".join(f"{name}, " for name in attributes).rstrip(" "),
        "grad_params": ", ".join(f"grad_{t.name}" for t in op.outputs),
        "gradient_exprs": [op.gradients.get(t.name, "None") for t in op.inputs]
        + ["None"] * len(attributes),
    }


def _onnx_schema_context(op: OpDef) -> dict:
    shaped = common.shaped_inputs(op)
    used = {s["name"] for s in shaped}
    function_text = onnx_api.function_text(op) if op.function else None
    return {
        "inputs": [
            {
                "name": t.name,
                "index": i,
                "type_str": t.type_var or onnx_api.onnx_type_string(t.dtype),
                "doc_literal": py.literal(t.doc),
                "optional": t.optional,
            }
            for i, t in enumerate(op.inputs)
        ],
        # Inputs whose type the inference function reads: shapes, or an output's dtype.
        "read_inputs": [
            {"name": t.name, "index": i, "optional": t.optional}
            for i, t in enumerate(op.inputs)
            if t.name in used or t.name in {op.dtype_source(o) for o in op.outputs}
        ],
        "outputs": [
            {
                "name": t.name,
                "index": i,
                "type_str": t.type_var or onnx_api.onnx_type_string(t.dtype),
                "doc_literal": py.literal(t.doc),
                "elem_type_expr": (
                    f"{op.dtype_source(t)}_type.tensor_type.elem_type"
                    if op.dtype_source(t)
                    else f"onnx.TensorProto.{onnx_api.TENSOR_PROTO[t.dtype]}"
                ),
            }
            for i, t in enumerate(op.outputs)
        ],
        "shaped_inputs": shaped,
        "shapes_known": " and ".join(
            (
                f'({s["name"]}_type is None or {s["name"]}_type.tensor_type.HasField("shape"))'
                if s["name"] in op.optional_inputs
                else f'{s["name"]}_type.tensor_type.HasField("shape")'
            )
            for s in shaped
        )
        or "True",
        "inference_attributes": python_shapes.onnx_inference_attributes(op),
        "attribute_checks": python_shapes.onnx_attribute_checks(op),
        "checks": python_shapes.onnx_checks(op),
        "output_shapes": python_shapes.onnx_output_shapes(op),
        "function_text": function_text,
        "function_text_literal": py.literal(function_text) if function_text else None,
        "function_opset": op.function.opset if op.function else None,
        "infer_through_body": op.infers_through_function,
        "input_names": py.literal([t.name for t in op.inputs]),
        "output_names": py.literal([t.name for t in op.outputs]),
        "provided_by": op.provided_by.value if op.provided_by else None,
        "type_constraints": [
            {
                "name": tc.name,
                "types": py.literal([onnx_api.onnx_type_string(d) for d in tc.dtypes]),
                "doc_literal": py.literal(tc.doc),
            }
            for tc in op.type_constraints
        ],
        "attributes": [
            {
                "name": a.name,
                "required": a.required,
                "onnx_enum": onnx_api.ATTR_TYPE[a.type],
                "doc_literal": py.literal(a.doc),
                "python_default": None if a.required else py.literal(_onnx_value(a.default)),
                "since": a.since_version or op.versions[0],
            }
            for a in op.attributes
        ],
        "doc_literal": py.literal(op.doc),
        "versions": py.literal(list(op.versions)),
    }


def _onnx_value(value):
    """ONNX has no bool attributes: a PyTorch bool is an int 0/1."""
    return int(value) if isinstance(value, bool) else value


_PARSE_ARG = {
    "bool": "b",
    "int": "i",
    "float": "f",
    "string": "s",
    "ints": "is",
    "floats": "fs",
    "strings": "ss",
}


def export_opsets(op: OpDef, index: dict[tuple[str, str], OpDef]) -> dict[str, int]:
    """Custom domain -> version, for every custom op the export nodes call."""
    opsets: dict[str, int] = {}
    for target in export_targets(op, index):
        opsets[target.domain] = max(opsets.get(target.domain, 0), target.version)
    return dict(sorted(opsets.items()))


def _set_types(op: OpDef) -> list[str]:
    """TorchScript values carry no type from g.op: outputs that provably have an input's shape
    get that input's type (with their own dtype)."""
    statements = []
    rules = {shape.output: shape for shape in op.shape_rule.outputs}
    for output in op.outputs:
        dtype = "" if op.dtype_source(output) else f".with_dtype({py.TORCH_DTYPE[output.dtype]})"
        shape = rules.get(output.name)
        if shape is None:  # no shape rule: the dtype, and sizes left to ONNX inference
            source = op.dtype_source(output) or op.inputs[0].name
            statements.append(f"{output.name}.setType({source}.type(){dtype}.with_sizes(None))")
            continue
        same_shape = next((t.name for t in op.inputs if _same_shape(shape, t, op)), None)
        if same_shape is None:
            continue
        statements.append(f"{output.name}.setType({same_shape}.type(){dtype})")
    return statements


def _export_context(op: OpDef, index: dict[tuple[str, str], OpDef]) -> dict:
    input_names = [t.name for t in op.inputs]
    opsets = export_opsets(op, index)
    uses_standard = any(not n.domain for rule in op.export for n in rule.nodes)
    return {
        "overload_name": op.torch.overload_name,
        "opsets": [
            {"domain": d, "version": v, "variable": py.opset_variable(d)} for d, v in opsets.items()
        ],
        "opsets_literal": py.literal_dict(opsets),
        "uses_standard": uses_standard,
        "translation_params": py.python_params(op, annotate=False),
        "fill_defaults": py.fill_defaults(op),
        "translation_statements": py.translation_statements(op),
        "string_list_constants": [
            {"name": a.name, "default": py.literal(a.default) if not a.required else "None"}
            for a in op.attributes
            if a.type.value == "strings"
        ],
        "parse_args": ", ".join(
            ['"v"'] * len(op.inputs) + [f'"{_PARSE_ARG[a.type.value]}"' for a in op.attributes]
        ),
        "symbolic_params": ", ".join(input_names + [a.name for a in op.attributes]),
        "symbolic_statements": py.symbolic_statements(op, _set_types(op)),
    }


def _same_shape(shape: OutputShape, tensor: TensorParam, op: OpDef) -> bool:
    """True when the output provably has this input's shape (for the TorchScript type)."""
    match shape.parts:
        case (SlicePart(start=None) as whole,):
            return whole.input == tensor.name and whole.stop is None
    output = next(o for o in op.outputs if o.name == shape.output)
    return output.shape is not None and tensor.shape is not None and output.shape == tensor.shape


def base_context(op: OpDef) -> dict:
    torch = op.torch
    return {
        "op_id": op.op_id,
        "op_type": op.op_type,
        "domain": op.domain,
        "domain_ident": op.domain_ident if op.defines_onnx_op else None,
        "version": op.version,
        "title": op.title,
        "torch_namespace": torch.namespace if torch else None,
        "torch_name": torch.name if torch else None,
        "qualified_name": torch.qualified_name if torch else None,
        "overload_expr": (
            f"torch.ops.{torch.namespace}.{torch.name}.{torch.overload}" if torch else None
        ),
        "is_override": bool(torch and torch.is_override),
        "new_torch_op": op.new_torch_op,
        "defines_onnx_op": op.defines_onnx_op,
        "has_function": op.function is not None,
        "has_export": bool(op.export),
        "modules": [
            module
            for module, present in (
                ("onnx_export", bool(op.export)),
                ("onnx_schema", op.defines_onnx_op),
                ("torch_op", op.new_torch_op),
            )
            if present
        ],
    }


def emit(op: OpDef, index: dict[tuple[str, str], OpDef]) -> list[GeneratedFile]:
    srcs = common.sources(op)
    base = base_context(op)
    files = [render("python/op_init.py.j2", f"{op.op_id}/__init__.py", srcs, **base)]
    if op.new_torch_op:
        files.append(
            render(
                "python/torch_op.py.j2",
                f"{op.op_id}/torch_op.py",
                srcs,
                **base,
                **_torch_context(op, index),
            )
        )
    if op.defines_onnx_op:
        files.append(
            render(
                "python/onnx_schema.py.j2",
                f"{op.op_id}/onnx_schema.py",
                srcs,
                **base,
                **_onnx_schema_context(op),
            )
        )
    if op.export:
        files.append(
            render(
                "python/onnx_export.py.j2",
                f"{op.op_id}/onnx_export.py",
                srcs,
                **base,
                **_export_context(op, index),
            )
        )
    return files
