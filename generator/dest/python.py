"""Python per op: the PyTorch custom op, the ONNX schema, the exporters' translations."""

from __future__ import annotations

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.dest import common
from generator.model import OpDef
from generator.render import GeneratedFile, render


def output_dtype_expr(op: OpDef, output) -> str:
    source = op.dtype_source(output)
    return f"{source}.dtype" if source else py.TORCH_DTYPE[output.dtype]


def _torch_context(op: OpDef) -> dict:
    names = [t.name for t in op.outputs]
    single = len(names) == 1
    return {
        "legacy": op.torch.api == "legacy",
        "schema_literal": py.literal(py.torch_schema(op)),
        "fill_defaults": py.fill_defaults(op),
        "python_params": py.python_params(op, annotate=True),
        "plain_params": py.python_params(op, annotate=False),
        "return_annotation": (
            " -> torch.Tensor"
            if single
            else f" -> tuple[{', '.join(['torch.Tensor'] * len(names))}]"
        ),
        "checks": py.torch_checks(op),
        "outputs": [
            {
                "name": o.name,
                "shape_expr": shape["expr"],
                "dtype_expr": output_dtype_expr(op, o),
            }
            for o, shape in zip(op.outputs, py.torch_output_shapes(op), strict=True)
        ],
        "first_input": op.inputs[0].name,
        "return_expr": names[0] if single else "(" + ", ".join(names) + ")",
        "output_names_tuple": ", ".join(names) + ("," if single else ""),
        "kernel_call_args": ", ".join(
            [f"{t.name}.detach().contiguous().numpy()" for t in op.inputs]
            + [a.name for a in op.attributes]
        ),
        "torch_return_expr": (
            f"torch.from_numpy({names[0]})"
            if single
            else "(" + ", ".join(f"torch.from_numpy({n})" for n in names) + ")"
        ),
        "doc_escaped": op.doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"'),
    }


def _onnx_schema_context(op: OpDef) -> dict:
    used = op.shape_rule.shaped_inputs
    shaped = [{"name": t.name, "index": i} for i, t in enumerate(op.inputs) if t.name in used]
    return {
        "inputs": [
            {
                "name": t.name,
                "index": i,
                "type_str": t.type_var or onnx_api.onnx_type_string(t.dtype),
                "doc_literal": py.literal(t.doc),
            }
            for i, t in enumerate(op.inputs)
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
            f'{s["name"]}_type.tensor_type.HasField("shape")' for s in shaped
        )
        or "True",
        "checks": py.onnx_checks(op),
        "output_shapes": py.onnx_output_shapes(op),
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
                "python_default": None if a.required else py.literal(a.default),
            }
            for a in op.attributes
        ],
        "doc_literal": py.literal(op.doc),
    }


_PARSE_ARG = {
    "int": "i",
    "float": "f",
    "string": "s",
    "ints": "is",
    "floats": "fs",
    "strings": "ss",
}
_ATTR_SUFFIX = {"int": "i", "float": "f", "string": "s", "ints": "i", "floats": "f", "strings": "s"}


def _export_context(op: OpDef) -> dict:
    input_names = [t.name for t in op.inputs]
    outputs = []
    for i, o in enumerate(op.outputs):
        source = op.dtype_source(o)
        shape = op.shape_rule.outputs[i]
        same_shape = next((t.name for t in op.inputs if _same_shape(shape, t, op)), None)
        entry = {"index": i, "same_type_as": None, "with_dtype": ""}
        if same_shape is not None:
            entry["same_type_as"] = same_shape
            if source is None:
                entry["with_dtype"] = f".with_dtype({py.TORCH_DTYPE[o.dtype]})"
        outputs.append(entry)
    symbolic_args = input_names + [
        f"{a.name}_{_ATTR_SUFFIX[a.type.value]}={a.name}" for a in op.attributes
    ]
    if len(op.outputs) > 1:
        symbolic_args.append(f"outputs={len(op.outputs)}")
    return {
        "translation_params": py.python_params(op, annotate=False),
        "fill_defaults": py.fill_defaults(op),
        "string_list_constants": [
            {"name": a.name, "default": py.literal(a.default) if not a.required else "None"}
            for a in op.attributes
            if a.type.value == "strings"
        ],
        "translation_args": ", ".join(input_names + [f"{a.name}={a.name}" for a in op.attributes]),
        "parse_args": ", ".join(
            ['"v"'] * len(op.inputs) + [f'"{_PARSE_ARG[a.type.value]}"' for a in op.attributes]
        ),
        "symbolic_params": ", ".join(input_names + [a.name for a in op.attributes]),
        "symbolic_args": ", ".join(symbolic_args),
        "outputs": outputs,
        "symbolic_return": "outputs[0]" if len(op.outputs) == 1 else "outputs",
        "uses_torch": any(o["with_dtype"] for o in outputs),
    }


def _same_shape(shape, tensor, op: OpDef) -> bool:
    """True when the output provably has this input's shape (for the TorchScript type)."""
    parts = shape.parts
    if len(parts) == 1 and parts[0].kind == "slice" and parts[0].start is None:
        return parts[0].input == tensor.name and parts[0].stop is None
    output = next(o for o in op.outputs if o.name == shape.output)
    return output.shape is not None and tensor.shape is not None and output.shape == tensor.shape


def base_context(op: OpDef) -> dict:
    return {
        "op_id": op.op_id,
        "op_type": op.op_type,
        "domain": op.domain,
        "domain_ident": op.domain_ident,
        "version": op.version,
        "torch_namespace": op.torch.namespace,
        "torch_name": op.torch.name,
        "qualified_name": op.torch.qualified_name,
    }


def emit(op: OpDef) -> list[GeneratedFile]:
    srcs = common.sources(op)
    base = base_context(op)
    return [
        render("python/op_init.py.j2", f"{op.op_id}/__init__.py", srcs, **base),
        render(
            "python/torch_op.py.j2", f"{op.op_id}/torch_op.py", srcs, **base, **_torch_context(op)
        ),
        render(
            "python/onnx_schema.py.j2",
            f"{op.op_id}/onnx_schema.py",
            srcs,
            **base,
            **_onnx_schema_context(op),
        ),
        render(
            "python/onnx_export.py.j2",
            f"{op.op_id}/onnx_export.py",
            srcs,
            **base,
            **_export_context(op),
        ),
    ]
