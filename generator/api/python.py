"""Python spellings: PyTorch dtypes and schema types, literals, and the shape rule on torch and
ONNX shapes."""

from __future__ import annotations

import json

from generator.api.onnx import TENSOR_PROTO, text_value
from generator.model import (
    EAGER_STANDARD_OPS,
    Attribute,
    AttrRef,
    AttrType,
    DimEqualCheck,
    DimRef,
    DType,
    NodeAttribute,
    OnnxNode,
    OpDef,
    ShapePart,
)

TORCH_DTYPE = {d: f"torch.{d.value}" for d in DType}
SCHEMA_TYPE = {
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "int[]",
    AttrType.floats: "float[]",
    AttrType.strings: "str[]",
}
ANNOTATION = {
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "list[int]",
    AttrType.floats: "list[float]",
    AttrType.strings: "list[str]",
}


def literal(value) -> str:
    """A Python literal (tuples become lists, which is what PyTorch schemas accept)."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, float):
        text = repr(value)
        return {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}.get(
            text, text
        )
    return repr(value)


def _slice(part: ShapePart) -> str:
    start = "" if part.start is None else str(part.start)
    stop = "" if part.stop is None else str(part.stop)
    return f"{start}:{stop}"


# ---- torch shapes (fake kernel): torch._check so that symbolic sizes stay symbolic


def torch_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "condition": f"{rank.input}.dim() {relation} {rank.rank}",
                "message": literal(rank.message + ", got shape "),
                "got": f"list({rank.input}.shape)",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _torch_dim(check.a), _torch_dim(check.b)
            condition, got = f"{a} == {b}", f'f"{{{a}}} and {{{b}}}"'
        else:
            a = _torch_dim(check.ref)
            condition, got = f"{a} == {check.value}", a
        checks.append(
            {"condition": condition, "message": literal(check.message + ", got "), "got": got}
        )
    for check in rule.shape_checks:
        a, b = f"list({check.a}.shape)", f"list({check.b}.shape)"
        checks.append(
            {
                "condition": f"{a} == {b}",
                "message": literal(check.message + ", got "),
                "got": f'f"{{{a}}} and {{{b}}}"',
            }
        )
    return checks


def _torch_dim(ref: DimRef) -> str:
    return f"{ref.input}.shape[{ref.axis}]"


def torch_output_shapes(op: OpDef) -> list[dict]:
    shapes = []
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}.shape[{_slice(part)}]")
            elif part.kind == "dim":
                parts.append(f"{part.input}.shape[{part.axis}]")
            else:
                parts.append(str(part.value))
        shapes.append({"name": out.output, "expr": "[" + ", ".join(parts) + "]"})
    return shapes


# ---- ONNX shapes (Python OpSchema inference): lists of TensorShapeProto.Dimension


def onnx_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "condition": f"len({rank.input}_dims) {relation} {rank.rank}",
                "message": literal(rank.message),
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _onnx_dim(check.a), _onnx_dim(check.b)
            condition = f"_support.known_equal({a}, {b})"
        else:
            condition = (
                f"_support.known_equal({_onnx_dim(check.ref)}, _support.fixed_dim({check.value}))"
            )
        checks.append({"condition": condition, "message": literal(check.message)})
    for check in rule.shape_checks:
        a, b = f"{check.a}_dims", f"{check.b}_dims"
        checks.append(
            {
                "condition": f"len({a}) == len({b}) and all(_support.known_equal(d, e) "
                f"for d, e in zip({a}, {b}, strict=True))",
                "message": literal(check.message),
            }
        )
    return checks


def _onnx_dim(ref: DimRef) -> str:
    return f"{ref.input}_dims[{ref.axis}]"


def onnx_output_shapes(op: OpDef) -> list[dict]:
    shapes = []
    index = {o.name: i for i, o in enumerate(op.outputs)}
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}_dims[{_slice(part)}]")
            elif part.kind == "dim":
                parts.append(f"{part.input}_dims[{part.axis}]")
            else:
                parts.append(f"_support.fixed_dim({part.value})")
        shapes.append(
            {"name": out.output, "index": index[out.output], "expr": "[" + ", ".join(parts) + "]"}
        )
    return shapes


def literal_dict(values: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in values.items()) + "}"


def defaults_via_none(attr: Attribute) -> bool:
    """PyTorch schemas cannot hold a default list of strings: such an attribute is `str[]?`
    with None meaning the definition's default."""
    return attr.type is AttrType.strings and not attr.required


def torch_schema(op: OpDef) -> str:
    """The PyTorch operator schema, derived from the definition (not inferred from Python)."""
    args = [f"Tensor {t.name}" for t in op.inputs]
    for attr in op.attributes:
        if attr.required:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}")
        elif defaults_via_none(attr):
            args.append(f"{SCHEMA_TYPE[attr.type]}? {attr.name}=None")
        else:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}={text_value(attr.default)}")
    returns = ", ".join("Tensor" for _ in op.outputs)
    return f"({', '.join(args)}) -> " + (returns if len(op.outputs) == 1 else f"({returns})")


def python_params(op: OpDef, annotate: bool) -> str:
    params = [f"{t.name}: torch.Tensor" if annotate else t.name for t in op.inputs]
    for attr in op.attributes:
        annotation = ANNOTATION[attr.type]
        default = "" if attr.required else f" = {literal(attr.default)}"
        if defaults_via_none(attr):
            annotation, default = f"{annotation} | None", " = None"
        params.append(
            f"{attr.name}: {annotation}{default}" if annotate else f"{attr.name}{default}"
        )
    return ", ".join(params)


def fill_defaults(op: OpDef) -> list[str]:
    """Statements that replace None by the definition's default (see defaults_via_none)."""
    return [
        f"{a.name} = {literal(a.default)} if {a.name} is None else list({a.name})"
        for a in op.attributes
        if defaults_via_none(a)
    ]


# ---- the export rules, as Python statements: the dynamo translation (onnxscript), the
# TorchScript symbolic (g.op) and, for export-only ops, the eager PyTorch implementation


def opset_variable(domain: str) -> str:
    """Module-level name of the onnxscript Opset of a domain ("" is the standard domain)."""
    return "_ONNX" if not domain else "_" + domain.replace(".", "_").upper()


def _value(attr: NodeAttribute) -> str:
    if isinstance(attr.value, AttrRef):
        return attr.value.name
    if isinstance(attr.value, DType):
        return f"onnx.TensorProto.{TENSOR_PROTO[attr.value]}"
    return literal(attr.value)


def _translation_node(node: OnnxNode) -> str:
    args = list(node.inputs) + [f"{a.name}={_value(a)}" for a in node.attributes]
    return f"{', '.join(node.outputs)} = {opset_variable(node.domain)}.{node.op_type}({', '.join(args)})"


_SYMBOLIC_SUFFIX = {
    AttrType.int: "i",
    AttrType.float: "f",
    AttrType.string: "s",
    AttrType.ints: "i",
    AttrType.floats: "f",
    AttrType.strings: "s",
}


def _symbolic_node(node: OnnxNode) -> str:
    args = [json.dumps(node.qualified)] + list(node.inputs)
    args += [f"{a.name}_{_SYMBOLIC_SUFFIX[a.type]}={_value(a)}" for a in node.attributes]
    if len(node.outputs) > 1:
        args.append(f"outputs={len(node.outputs)}")
    return f"{', '.join(node.outputs)} = g.op({', '.join(args)})"


# Eager spellings of the standard ops in model.EAGER_STANDARD_OPS.
_EAGER_STANDARD = {
    "Add": "{0} + {1}",
    "Sub": "{0} - {1}",
    "Mul": "{0} * {1}",
    "Neg": "-{0}",
    "Identity": "{0}",
    "Cast": "{0}.to({to})",
    "CastLike": "{0}.to({1}.dtype)",
}
assert _EAGER_STANDARD.keys() == EAGER_STANDARD_OPS


def _eager_node(node: OnnxNode, index: dict[tuple[str, str], OpDef]) -> str:
    if not node.domain:
        attrs = {
            a.name: TORCH_DTYPE[a.value] if isinstance(a.value, DType) else _value(a)
            for a in node.attributes
        }
        expr = _EAGER_STANDARD[node.op_type].format(*node.inputs, **attrs)
    else:
        target = index[(node.domain, node.op_type)].torch
        args = list(node.inputs) + [f"{a.name}={_value(a)}" for a in node.attributes]
        expr = f"torch.ops.{target.namespace}.{target.name}.default({', '.join(args)})"
    return f"{', '.join(node.outputs)} = {expr}"


def _rules(op: OpDef, spell, before_return: list[str] = ()) -> list[str]:
    """Statements choosing the export rule by attribute values, then running its nodes
    (and `before_return` ahead of each return)."""
    returns = ", ".join(t.name for t in op.outputs)
    lines: list[str] = []
    for rule in op.export:
        indent = ""
        if rule.when:
            condition = " and ".join(f"{name} == {literal(value)}" for name, value in rule.when)
            lines.append(f"if {condition}:")
            indent = "    "
        lines += [indent + spell(node) for node in rule.nodes]
        lines += [indent + statement for statement in before_return]
        lines.append(f"{indent}return {returns}")
        if not rule.when:
            return lines
    names = sorted({name for rule in op.export for name, _ in rule.when})
    supported = "; ".join(
        ", ".join(f"{name}={value!r}" for name, value in rule.when) for rule in op.export
    )
    got = ", ".join(f"{name}={{{name}!r}}" for name in names)
    lines.append(
        f"raise ValueError(f{json.dumps(f'{op_title(op)}: no ONNX export for {got}; supported: {supported}')})"
    )
    return lines


def translation_statements(op: OpDef) -> list[str]:
    return _rules(op, _translation_node)


def symbolic_statements(op: OpDef, set_types: list[str]) -> list[str]:
    return _rules(op, _symbolic_node, set_types)


def eager_statements(op: OpDef, index: dict[tuple[str, str], OpDef]) -> list[str]:
    return _rules(op, lambda node: _eager_node(node, index))


def op_title(op: OpDef) -> str:
    """How messages name the op: its ONNX name, or the PyTorch overload it exports."""
    if op.defines_onnx_op:
        return f"{op.domain}::{op.op_type}"
    return op.torch.overload_name
