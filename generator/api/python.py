"""Python spellings: PyTorch dtypes and schema types, literals, and the shape rule on torch and
ONNX shapes."""

from __future__ import annotations

import json

from generator.api.common import guard_absent_inputs
from generator.api.onnx import TENSOR_PROTO
from generator.model.nodes import EAGER_STANDARD_OPS, AttrRef, NodeAttribute, OnnxNode
from generator.model.op import OpDef
from generator.model.shapes import (
    AllowedValuesCheck,
    DimEqualCheck,
    DimExpr,
    DimRef,
    RangeCheck,
    ShapePart,
)
from generator.model.tensors import Attribute
from generator.model.types import AttrType, DType

TORCH_DTYPE = {d: f"torch.{d.value}" for d in DType}
SCHEMA_TYPE = {
    AttrType.bool: "bool",
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "int[]",
    AttrType.floats: "float[]",
    AttrType.strings: "str[]",
}
ANNOTATION = {
    AttrType.bool: "bool",
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


def _torch_dim(ref: DimRef) -> str:
    return f"{ref.input}.shape[{ref.axis}]"


def _binary(op: str, a: str, b: str) -> str:
    return f"({a} {op} {b})"  # Python's ints do not overflow and // floors


def _torch_expr(expr: DimExpr) -> str:
    return expr.spell(_torch_dim, lambda name: name, _binary)


def _attribute_condition(check: AllowedValuesCheck | RangeCheck, value: str) -> str:
    """The condition an attribute check requires of `value` (a float range compares the
    float32 every runtime holds the value in)."""
    if isinstance(check, AllowedValuesCheck):
        return f"{value} in {literal(list(check.allowed))}"
    if check.is_float:
        value = f"_support.float32({value})"
    return " and ".join(
        f"{value} {relation} {literal(bound)}" for relation, bound in check.comparisons
    )


def torch_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for check in rule.attribute_checks:
        checks.append(
            {
                "condition": _attribute_condition(check, check.attribute),
                "message": literal(check.message + ", got "),
                "got": f"_support.quoted({check.attribute})",
            }
        )
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
    for check in rule.axis_checks:
        axis = _torch_expr(check.axis)
        checks.append(
            {
                "condition": f"-{check.input}.dim() <= {axis} < {check.input}.dim()",
                "message": literal(check.message + ", got axis "),
                "got": f'f"{{{axis}}} and rank {{{check.input}.dim()}}"',
            }
        )
    for check in rule.expr_checks:
        value = _torch_expr(check.expr)
        checks.append(
            {
                "condition": f"{value} {'>' if check.strict else '>='} 0",
                "message": literal(check.message + ", got "),
                "got": value,
            }
        )
    attribute_count = len(rule.attribute_checks)
    return checks[:attribute_count] + guard_absent_inputs(
        op, checks[attribute_count:], rule.input_checks, "{} is None", " or "
    )


def torch_output_shapes(op: OpDef) -> list[dict]:
    """Each output's shape as a Python list expression over the (fake) input tensors."""
    shapes = []
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}.shape[{_slice(part)}]")
            elif part.kind == "expr" and part.expr.kind == "dynamic":
                parts.append(part.expr.text)  # from new_dynamic_size() (see torch_op.py)
            elif part.kind == "expr":
                parts.append(_torch_expr(part.expr))
            elif part.kind == "broadcast":
                shapes_list = ", ".join(
                    (
                        f"None if {name} is None else {name}.shape"
                        if name in op.optional_inputs
                        else f"{name}.shape"
                    )
                    for name, _ in part.operands
                )
                parts.append(f"*_support.broadcast_sizes({literal(part.message)}, {shapes_list})")
            else:
                parts.append(
                    f"*_support.reduced_sizes(list({part.input}.shape), "
                    f"{_torch_expr(part.axis)}, {_torch_expr(part.keepdims)}, 1)"
                )
        shapes.append({"name": out.output, "expr": "[" + ", ".join(parts) + "]"})
    return shapes


# ---- ONNX shapes (Python OpSchema inference): lists of TensorShapeProto.Dimension


def _onnx_dim(ref: DimRef) -> str:
    return f"{ref.input}_dims[{ref.axis}]"


def onnx_attribute_variable(name: str) -> str:
    return f"attr_{name}"


def _onnx_value_expr(expr: DimExpr) -> str:
    """The expression on dim values; `_support.value` raises _support.Unknown for an unknown
    dim, which the callers (computed_dim, known_true) catch."""
    return expr.spell(
        lambda ref: f"_support.value({_onnx_dim(ref)})", onnx_attribute_variable, _binary
    )


def onnx_checks(op: OpDef) -> list[dict]:
    """Checks on shapes (run when every input shape is known); see onnx_attribute_checks. Each
    message reports what it got as the kernels' do (known dims by value, others by name)."""
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "condition": f"len({rank.input}_dims) {relation} {rank.rank}",
                "message": literal(rank.message + ", got shape "),
                "got": f"_support.shape_text({rank.input}_dims)",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _onnx_dim(check.a), _onnx_dim(check.b)
            condition = f"_support.known_equal({a}, {b})"
            got = f'_support.dim_text({a}) + " and " + _support.dim_text({b})'
        else:
            a = _onnx_dim(check.ref)
            condition = f"_support.known_equal({a}, _support.fixed_dim({check.value}))"
            got = f"_support.dim_text({a})"
        checks.append(
            {"condition": condition, "message": literal(check.message + ", got "), "got": got}
        )
    for check in rule.shape_checks:
        a, b = f"{check.a}_dims", f"{check.b}_dims"
        checks.append(
            {
                "condition": f"len({a}) == len({b}) and all(_support.known_equal(d, e) "
                f"for d, e in zip({a}, {b}, strict=True))",
                "message": literal(check.message + ", got "),
                "got": f'_support.shape_text({a}) + " and " + _support.shape_text({b})',
            }
        )
    for check in rule.axis_checks:
        axis = _onnx_value_expr(check.axis)
        checks.append(
            {
                "condition": f"-len({check.input}_dims) <= {axis} < len({check.input}_dims)",
                "message": literal(check.message + ", got axis "),
                "got": f'str({axis}) + " and rank " + str(len({check.input}_dims))',
            }
        )
    for check in rule.expr_checks:
        relation = ">" if check.strict else ">="
        value = _onnx_value_expr(check.expr)
        checks.append(
            {
                "condition": f"_support.known_true(lambda: {value} {relation} 0)",
                "message": literal(check.message + ", got "),
                "got": f"str({value})",  # known: the check failed on it
            }
        )
    return guard_absent_inputs(op, checks, rule.input_checks, "{}_dims is None", " or ")


def onnx_inference_attributes(op: OpDef) -> list[dict]:
    """The attributes the inference function reads, with their defaults (None: required)."""
    attrs = {a.name: a for a in op.attributes}
    return [
        {
            "variable": onnx_attribute_variable(name),
            "name": name,
            "default": "None" if attrs[name].required else literal(attrs[name].default),
            "missing_message": (
                f", {literal(f'{op.op_type}: required attribute {name!r} is missing')}"
                if attrs[name].required
                else ""
            ),
        }
        for name in op.shape_rule.attributes
    ]


def onnx_attribute_checks(op: OpDef) -> list[dict]:
    return [
        {
            "condition": _attribute_condition(check, onnx_attribute_variable(check.attribute)),
            "message": literal(check.message + ", got "),
            "got": f"_support.quoted({onnx_attribute_variable(check.attribute)})",
        }
        for check in op.shape_rule.attribute_checks
    ]


def onnx_output_shapes(op: OpDef) -> list[dict]:
    shapes = []
    index = {o.name: i for i, o in enumerate(op.outputs)}
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}_dims[{_slice(part)}]")
            elif part.kind == "expr" and part.expr.kind == "dim":
                parts.append(_onnx_dim(part.expr.ref))  # copied: a named dim stays named
            elif part.kind == "expr" and part.expr.kind == "dynamic":
                parts.append("onnx.TensorShapeProto.Dimension()")  # data-dependent: unknown
            elif part.kind == "expr":
                parts.append(f"_support.computed_dim(lambda: {_onnx_value_expr(part.expr)})")
            elif part.kind == "broadcast":
                dims = ", ".join(f"{name}_dims" for name, _ in part.operands)
                parts.append(f"*_support.broadcast_dims({literal(part.message)}, {dims})")
            else:
                parts.append(
                    f"*_support.reduced_sizes({part.input}_dims, {_onnx_value_expr(part.axis)}, "
                    f"{_onnx_value_expr(part.keepdims)}, _support.fixed_dim(1))"
                )
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


def optional_input_default(op: OpDef) -> bool:
    """Optional inputs default to None unless a required attribute follows them (then they
    must be passed, possibly as None)."""
    return not any(a.required for a in op.attributes)


_SCHEMA_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


def schema_value(value) -> str:
    """A default as PyTorch's schema parser reads it: its strings take \\n-style and octal
    escapes but no \\u ones, so non-ASCII text stays as UTF-8."""
    if isinstance(value, str):
        return '"' + "".join(_schema_char(c) for c in value) + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(schema_value(v) for v in value) + "]"
    return repr(value)


def _schema_char(char: str) -> str:
    if char in _SCHEMA_ESCAPES:
        return _SCHEMA_ESCAPES[char]
    return f"\\{ord(char):03o}" if ord(char) < 0x20 or ord(char) == 0x7F else char


def torch_schema(op: OpDef) -> str:
    """The PyTorch operator schema, derived from the definition (not inferred from Python)."""
    default = "=None" if optional_input_default(op) else ""
    args = [f"Tensor? {t.name}{default}" if t.optional else f"Tensor {t.name}" for t in op.inputs]
    for attr in op.attributes:
        if attr.required:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}")
        elif defaults_via_none(attr):
            args.append(f"{SCHEMA_TYPE[attr.type]}? {attr.name}=None")
        else:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}={schema_value(attr.default)}")
    returns = ", ".join("Tensor" for _ in op.outputs)
    return f"({', '.join(args)}) -> " + (returns if len(op.outputs) == 1 else f"({returns})")


def python_params(op: OpDef, annotate: bool) -> str:
    default = " = None" if optional_input_default(op) else ""
    params = []
    for t in op.inputs:
        annotation = ": torch.Tensor | None" if t.optional else ": torch.Tensor"
        params.append(t.name + (annotation if annotate else "") + (default if t.optional else ""))
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
    AttrType.bool: "i",
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
    # Copies even when nothing changes: a functional op's output must not alias its input.
    "Identity": "{0}.clone()",
    "Cast": "{0}.to({to}, copy=True)",
    "CastLike": "{0}.to({1}.dtype, copy=True)",
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


def no_gradient_message(op: OpDef) -> str:
    """What backward through a new PyTorch op without gradient formulas raises."""
    return (
        f"{op.torch.qualified_name} has no gradient formula: give one under 'gradients' in "
        f"{op.definition_path}"
    )


def forward_mode_message(op: OpDef) -> str:
    """What forward-mode AD through a new PyTorch op raises (definitions give reverse-mode
    formulas only; a silently zero tangent would be a wrong answer)."""
    return (
        f"{op.torch.qualified_name} does not support forward-mode AD (torch.func.jvp, jacfwd, "
        f"hessian, torch.autograd.forward_ad): {op.definition_path} gives reverse-mode "
        "gradient formulas only"
    )


def op_title(op: OpDef) -> str:
    """How messages name the op: its ONNX name, or the PyTorch overload it exports."""
    if op.defines_onnx_op:
        return f"{op.domain}::{op.op_type}"
    return op.torch.overload_name
