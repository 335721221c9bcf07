"""C++ spellings: kernel types, ONNX Runtime types and enums, ONNX C++ schema pieces."""

from __future__ import annotations

from generator.api.common import guard_absent_inputs
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.api.onnx import TENSOR_PROTO
from generator.model.op import OpDef
from generator.model.shapes import (
    AllowedValuesCheck,
    DimEqualCheck,
    DimExpr,
    DimLiteralCheck,
    DimRef,
    RangeCheck,
    ShapePart,
)
from generator.model.tensors import Attribute
from generator.model.types import AttrType, DType

KERNEL_TYPE = {
    DType.float16: "opgen::float16",
    DType.bfloat16: "opgen::bfloat16",
    DType.float32: "float",
    DType.float64: "double",
    DType.int8: "int8_t",
    DType.int16: "int16_t",
    DType.int32: "int32_t",
    DType.int64: "int64_t",
    DType.uint8: "uint8_t",
    DType.bool: "bool",
}
ATTR_TYPE = {
    AttrType.bool: "bool",
    AttrType.int: "int64_t",
    AttrType.float: "float",
    AttrType.string: "std::string",
    AttrType.ints: "std::vector<int64_t>",
    AttrType.floats: "std::vector<float>",
    AttrType.strings: "std::vector<std::string>",
}


def onnx_proto_enum(dtype: DType) -> str:
    return f"ONNX_NAMESPACE::TensorProto_DataType_{TENSOR_PROTO[dtype]}"


def _byte_spelling(byte: int) -> str:
    char = chr(byte)
    if char in '\\"':
        return "\\" + char
    if char == "?":
        return "\\?"  # no trigraphs, whatever the compiler mode
    if 0x20 <= byte < 0x7F:
        return char
    return f"\\{byte:03o}"


# Indexed by byte value; the UTF-8 bytes are read as Latin-1 so str.translate maps each byte.
_BYTE_SPELLINGS = {byte: _byte_spelling(byte) for byte in range(256)}


def string_literal(text: str) -> str:
    """A C++ string literal for any text: printable ASCII as is, everything else as octal bytes."""
    return '"' + text.encode("utf-8").decode("latin-1").translate(_BYTE_SPELLINGS) + '"'


def _float_literal(value: float) -> str:
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        return {
            "inf": "std::numeric_limits<float>::infinity()",
            "-inf": "-std::numeric_limits<float>::infinity()",
            "nan": "std::numeric_limits<float>::quiet_NaN()",
        }[text]
    return text + "f"


def int_literal(value: int) -> str:
    """An int64_t. C++ has no negative literals: -9223372036854775808 would negate a literal
    too large for any signed type, so the smallest int64 is spelled as an expression."""
    if value == -(2**63):
        return "int64_t{-9223372036854775807 - 1}"
    return f"int64_t{{{value}}}"


def attr_literal(attr: Attribute) -> str:
    """The default value as a C++ initializer."""
    value, kind = attr.default, attr.type
    if kind is AttrType.bool:
        return "true" if value else "false"
    if kind is AttrType.int:
        return int_literal(value)
    if kind is AttrType.float:
        return _float_literal(value)
    if kind is AttrType.string:
        return f"std::string({string_literal(value)})"
    scalars = {
        AttrType.ints: int_literal,
        AttrType.floats: _float_literal,
        AttrType.strings: lambda v: f"std::string({string_literal(v)})",
    }[kind]
    return f"{ATTR_TYPE[kind]}{{{', '.join(scalars(v) for v in value)}}}"


def schema_default(attr: Attribute) -> str:
    """An attribute's default as the ONNX C++ schema holds it (a bool is an int 0/1)."""
    if attr.type is AttrType.float:
        return f"static_cast<float>({attr_literal(attr)})"
    if attr.type is AttrType.bool:  # ONNX has no bool attributes
        return f"int64_t{{{int(attr.default)}}}"
    return attr_literal(attr)


def comment(text: str) -> list[str]:
    """Doc text as safe `//` comment lines (no line splicing by a trailing backslash)."""
    return [line.rstrip().rstrip("\\") for line in text.splitlines()] or [""]


# ---- shape rule, generic over the dim type (op.h's infer_shapes<Dim>): int64_t in the kernel
# wrappers (ONNX Runtime and pybind11), opgen::SymDim in ONNX Runtime's shape inference


def _shape_var(name: str) -> str:
    return f"{name}_shape"


def _concrete_dim(ref: DimRef) -> str:
    return f"opgen::axis_size({_shape_var(ref.input)}, {ref.axis})"


# The checked arithmetic of opgen/shape_rule.h, for int64_t and SymDim alike.
_DIM_FUNCTIONS = {"+": "dim_add", "-": "dim_sub", "*": "dim_mul", "//": "dim_floor_div"}


def _checked_binary(op: str, a: str, b: str) -> str:
    return f"opgen::{_DIM_FUNCTIONS[op]}(kOpType, {a}, {b})"


def _concrete_expr(expr: DimExpr) -> str:
    return expr.spell(_concrete_dim, lambda name: f"attrs.{name}", _checked_binary)


def _attribute_condition(check: AllowedValuesCheck | RangeCheck, value: str) -> str:
    """The condition an attribute check requires of `value` (a float attribute is a float
    here, as in every runtime; its bounds are float32 values, spelled exactly)."""
    if isinstance(check, AllowedValuesCheck):
        attribute_type = type(check.allowed[0])
        spell = string_literal if attribute_type is str else int_literal
        return " || ".join(f"{value} == {spell(v)}" for v in check.allowed)
    spell = (lambda v: f"{v!r}f") if check.is_float else int_literal
    return " && ".join(
        f"{value} {relation} {spell(bound)}" for relation, bound in check.comparisons
    )


def concrete_checks(op: OpDef) -> list[dict]:
    """Each check: a C++ condition that must hold, the message, and the values to report."""
    rule = op.shape_rule
    checks = []
    for check in rule.attribute_checks:
        value = f"attrs.{check.attribute}"
        checks.append(
            {
                "condition": _attribute_condition(check, value),
                "message": string_literal(check.message + ", got "),
                "got": f"opgen::quoted({value})",
            }
        )
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        var = _shape_var(rank.input)
        checks.append(
            {
                "condition": f"static_cast<int64_t>({var}.size()) {relation} {rank.rank}",
                "message": string_literal(rank.message + ", got shape "),
                "got": f"opgen::shape_to_string({var})",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            condition = f"{_concrete_dim(check.a)} == {_concrete_dim(check.b)}"
            got = (
                f'opgen::dim_to_string({_concrete_dim(check.a)}) + " and " + '
                f"opgen::dim_to_string({_concrete_dim(check.b)})"
            )
        else:
            condition = f"{_concrete_dim(check.ref)} == {check.value}"
            got = f"opgen::dim_to_string({_concrete_dim(check.ref)})"
        checks.append(
            {
                "condition": condition,
                "message": string_literal(check.message + ", got "),
                "got": got,
            }
        )
    for check in rule.shape_checks:
        a, b = _shape_var(check.a), _shape_var(check.b)
        checks.append(
            {
                "condition": f"{a} == {b}",
                "message": string_literal(check.message + ", got "),
                "got": f'opgen::shape_to_string({a}) + " and " + opgen::shape_to_string({b})',
            }
        )
    for check in rule.axis_checks:
        axis, rank = (
            _concrete_expr(check.axis),
            f"static_cast<int64_t>({_shape_var(check.input)}.size())",
        )
        checks.append(
            {
                "condition": f"-{rank} <= {axis} && {axis} < {rank}",
                "message": string_literal(check.message + ", got axis "),
                "got": f'std::to_string({axis}) + " and rank " + std::to_string({rank})',
            }
        )
    for check in rule.expr_checks:
        value = _concrete_expr(check.expr)
        checks.append(
            {
                "condition": f"{value} {'>' if check.strict else '>='} 0",
                "message": string_literal(check.message + ", got "),
                "got": f"opgen::dim_to_string({value})",
            }
        )
    attribute_count = len(rule.attribute_checks)
    return checks[:attribute_count] + guard_absent_inputs(
        op, checks[attribute_count:], rule.input_checks, "!{}_present", " || "
    )


def _part_concrete(target: str, part: ShapePart, optional: frozenset[str]) -> str:
    if part.kind == "slice":
        start = part.start if part.start is not None else 0
        stop = part.stop if part.stop is not None else "opgen::kShapeEnd"
        return f"opgen::append_dims({target}, {_shape_var(part.input)}, {start}, {stop});"
    if part.kind == "expr" and part.expr.kind == "dynamic":
        symbol = string_literal(part.expr.text)
        return f"{target}.push_back(opgen::data_dependent_dim<Dim>({symbol}));"
    if part.kind == "expr":
        return f"{target}.push_back({_concrete_expr(part.expr)});"
    if part.kind == "broadcast":
        shapes = ", ".join(
            (
                f"{name}_present ? &{_shape_var(name)} : nullptr"
                if name in optional
                else f"&{_shape_var(name)}"
            )
            for name, _ in part.operands
        )
        return f"{target} = opgen::broadcast_shapes<Dim>({string_literal(part.message)}, {{{shapes}}});"
    return (
        f"{target} = opgen::reduced_shape({_shape_var(part.input)}, {_concrete_expr(part.axis)}, "
        f"{_concrete_expr(part.keepdims)});"
    )


def concrete_output_shapes(op: OpDef) -> list[dict]:
    return [
        {
            "name": out.output,
            "statements": [
                _part_concrete(f"shapes.{out.output}", p, op.optional_inputs) for p in out.parts
            ],
        }
        for out in op.shape_rule.outputs
    ]


# ---- shape rule, on symbolic shapes (TensorShapeProto): the ONNX C++ schema inference


def _proto_dim(ref: DimRef) -> str:
    return f"{ref.input}_shape.dim({_proto_index(ref)})"


def _proto_index(ref: DimRef) -> str:
    if ref.axis >= 0:
        return str(ref.axis)
    return f"{ref.input}_shape.dim_size() - {-ref.axis}"


def schema_attribute_variable(name: str) -> str:
    return f"attr_{name}"


def _proto_expr(expr: DimExpr) -> tuple[str, str]:
    """(condition that every dim it reads is known, the value)."""
    known = " && ".join(dict.fromkeys(f"{_proto_dim(r)}.has_dim_value()" for r in expr.refs))
    value = expr.spell(
        lambda ref: f"{_proto_dim(ref)}.dim_value()", schema_attribute_variable, _binary_proto
    )
    return known or "true", value


def _binary_proto(op: str, a: str, b: str) -> str:
    """The checked arithmetic of opgen/onnx_schema_support.h (on a model's dim values)."""
    return f"opgen::schema::{_DIM_FUNCTIONS[op]}(kOpType, {a}, {b})"


# How ONNX's C++ AttributeProto holds the attributes a shape rule reads (a bool is an int).
_SCHEMA_ATTRIBUTE = {
    AttrType.string: ("std::string", "s()"),
    AttrType.float: ("float", "f()"),
    AttrType.int: ("int64_t", "i()"),
    AttrType.bool: ("int64_t", "i()"),
}


def schema_attributes(op: OpDef) -> list[dict]:
    """The attributes the inference function reads: allowed-value checks and the shape rule."""
    attrs = {a.name: a for a in op.attributes}
    result = []
    for name in op.shape_rule.attributes:
        attr = attrs[name]
        cpp_type, getter = _SCHEMA_ATTRIBUTE[attr.type]
        result.append(
            {
                "variable": schema_attribute_variable(name),
                "name_literal": string_literal(name),
                "cpp_type": cpp_type,
                "getter": getter,
                "default": None if attr.required else schema_default(attr),
                "missing_message": string_literal(
                    f"{op.op_type}: required attribute '{name}' is missing"
                ),
            }
        )
    return result


def symbolic_attribute_checks(op: OpDef) -> list[dict]:
    return [
        {
            "condition": _attribute_condition(check, schema_attribute_variable(check.attribute)),
            "message": string_literal(check.message + ", got "),
            "got": f"opgen::quoted({schema_attribute_variable(check.attribute)})",
        }
        for check in op.shape_rule.attribute_checks
    ]


def symbolic_checks(op: OpDef) -> list[dict]:
    """The checks of ONNX's C++ inference; each message reports what it got as the kernels' do
    (known dims by value, others by name)."""
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "input_index": rank.input_index,
                "condition": f"{rank.input}_shape.dim_size() {relation} {rank.rank}",
                "message": string_literal(rank.message + ", got shape "),
                "got": f"opgen::schema::shape_text({rank.input}_shape)",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _proto_dim(check.a), _proto_dim(check.b)
            condition = (
                f"!{a}.has_dim_value() || !{b}.has_dim_value() || "
                f"{a}.dim_value() == {b}.dim_value()"
            )
            got = f'opgen::schema::dim_text({a}), " and ", opgen::schema::dim_text({b})'
        else:
            assert isinstance(check, DimLiteralCheck)
            a = _proto_dim(check.ref)
            condition = f"!{a}.has_dim_value() || {a}.dim_value() == {check.value}"
            got = f"opgen::schema::dim_text({a})"
        checks.append(
            {
                "input_index": None,
                "condition": condition,
                "message": string_literal(check.message + ", got "),
                "got": got,
            }
        )
    for check in rule.shape_checks:
        a, b = f"{check.a}_shape", f"{check.b}_shape"
        # Ranks must agree; dims only where both are known.
        condition = (
            f"{a}.dim_size() == {b}.dim_size() && [&] {{ for (int i = 0; i < {a}.dim_size(); ++i) "
            f"if ({a}.dim(i).has_dim_value() && {b}.dim(i).has_dim_value() && "
            f"{a}.dim(i).dim_value() != {b}.dim(i).dim_value()) return false; return true; }}()"
        )
        checks.append(
            {
                "input_index": None,
                "condition": condition,
                "message": string_literal(check.message + ", got "),
                "got": f'opgen::schema::shape_text({a}), " and ", opgen::schema::shape_text({b})',
            }
        )
    for check in rule.axis_checks:
        _, axis = _proto_expr(check.axis)
        rank = f"{check.input}_shape.dim_size()"
        checks.append(
            {
                "input_index": None,
                "condition": f"-{rank} <= {axis} && {axis} < {rank}",
                "message": string_literal(check.message + ", got axis "),
                "got": f'{axis}, " and rank ", {rank}',
            }
        )
    for check in rule.expr_checks:
        known, value = _proto_expr(check.expr)
        relation = ">" if check.strict else ">="
        checks.append(
            {
                "input_index": None,
                "condition": f"!({known}) || {value} {relation} 0",
                "message": string_literal(check.message + ", got "),
                "got": value,
            }
        )
    return guard_absent_inputs(op, checks, rule.input_checks, "!{}_present", " || ")


def _part_symbolic(target: str, part: ShapePart, optional: frozenset[str]) -> str:
    if part.kind == "slice":
        source = f"{part.input}_shape"
        start = part.start if part.start is not None else 0
        start_expr = f"{source}.dim_size() - {-start}" if start < 0 else str(start)
        stop_expr = (
            f"{source}.dim_size()"
            if part.stop is None
            else (f"{source}.dim_size() - {-part.stop}" if part.stop < 0 else str(part.stop))
        )
        return f"for (int i = {start_expr}; i < {stop_expr}; ++i) *{target}->add_dim() = {source}.dim(i);"
    if part.kind == "expr" and part.expr.kind == "dim":
        return f"*{target}->add_dim() = {_proto_dim(part.expr.ref)};"  # a named dim stays named
    if part.kind == "expr" and part.expr.kind == "dynamic":
        return f"{target}->add_dim();  // data-dependent: unknown"
    if part.kind == "expr":
        known, value = _proto_expr(part.expr)
        return f"{{ auto* dim = {target}->add_dim(); if ({known}) dim->set_dim_value({value}); }}"
    if part.kind == "broadcast":
        required = ", ".join(f"&{n}_shape" for n, _ in part.operands if n not in optional)
        added = "".join(
            f" if ({n}_present) shapes.push_back(&{n}_shape);"
            for n, _ in part.operands
            if n in optional
        )
        return (
            f"{{ std::vector<const ONNX_NAMESPACE::TensorShapeProto*> shapes{{{required}}};{added} "
            f"try {{ ONNX_NAMESPACE::multidirectionalBroadcastShapeInference(shapes, *{target}); }} "
            "catch (const ONNX_NAMESPACE::InferenceError&) { std::string got; "
            'for (const auto* shape : shapes) got += (got.empty() ? "" : " and ") + '
            f"opgen::schema::shape_text(*shape); fail_shape_inference({string_literal(part.message)}, got); }} }}"
        )
    source = f"{part.input}_shape"
    _, axis = _proto_expr(part.axis)
    _, keep = _proto_expr(part.keepdims)
    return (
        f"{{ const int rank = {source}.dim_size(); const int64_t axis = ({axis} + rank) % rank; "
        f"for (int i = 0; i < rank; ++i) {{ if (i != axis) *{target}->add_dim() = {source}.dim(i); "
        f"else if ({keep}) {target}->add_dim()->set_dim_value(1); }} }}"
    )


def symbolic_output_shapes(op: OpDef) -> list[dict]:
    index = {o.name: i for i, o in enumerate(op.outputs)}
    return [
        {
            "name": out.output,
            "index": index[out.output],
            "statements": [
                _part_symbolic(f"{out.output}_out", p, op.optional_inputs) for p in out.parts
            ],
        }
        for out in op.shape_rule.outputs
    ]


_PROTO_SETTER = {  # NodeProto attribute setter, and how to spell one value (None: a string)
    AttrType.bool: ("set_i", int_literal),
    AttrType.int: ("set_i", int_literal),
    AttrType.float: ("set_f", _float_literal),
    AttrType.string: ("set_s", string_literal),
    AttrType.ints: ("add_ints", int_literal),
    AttrType.floats: ("add_floats", _float_literal),
    AttrType.strings: ("add_strings", string_literal),
}


def _plain(value):
    return int(value) if isinstance(value, bool) else value


def node_attribute_statements(node: str, attrs: dict[str, Attribute], values: dict) -> list[str]:
    """C++ statements adding attribute values to an ONNX NodeProto (for the schema test)."""
    statements = []
    for name, value in values.items():
        kind = attrs[name].type
        enum = ATTR_PROTO[kind]
        setter, spell = _PROTO_SETTER[kind]
        var = f"{name}_attribute"
        statements.append(f"auto* {var} = {node}->add_attribute();")
        statements.append(f"{var}->set_name({string_literal(name)});")
        statements.append(f"{var}->set_type(ONNX_NAMESPACE::AttributeProto::{enum});")
        for item in value if kind.is_list else [value]:
            statements.append(f"{var}->{setter}({spell(_plain(item))});")
    return statements
