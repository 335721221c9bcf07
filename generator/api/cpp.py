"""C++ spellings: kernel types, ONNX Runtime types and enums, ONNX C++ schema pieces."""

from __future__ import annotations

from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.api.onnx import TENSOR_PROTO
from generator.model import (
    Attribute,
    AttrType,
    DimEqualCheck,
    DimLiteralCheck,
    DimRef,
    DType,
    OpDef,
    ShapePart,
)

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
    AttrType.int: "int64_t",
    AttrType.float: "float",
    AttrType.string: "std::string",
    AttrType.ints: "std::vector<int64_t>",
    AttrType.floats: "std::vector<float>",
    AttrType.strings: "std::vector<std::string>",
}


def onnx_proto_enum(dtype: DType) -> str:
    return f"ONNX_NAMESPACE::TensorProto_DataType_{TENSOR_PROTO[dtype]}"


def string_literal(text: str) -> str:
    """A C++ string literal for any text: printable ASCII as is, everything else as octal bytes."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "?":
            out.append("\\?")  # no trigraphs, whatever the compiler mode
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _float_literal(value: float) -> str:
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        return {
            "inf": "std::numeric_limits<float>::infinity()",
            "-inf": "-std::numeric_limits<float>::infinity()",
            "nan": "std::numeric_limits<float>::quiet_NaN()",
        }[text]
    return text + "f"


def attr_literal(attr: Attribute) -> str:
    """The default value as a C++ initializer."""
    value, kind = attr.default, attr.type
    if kind is AttrType.int:
        return f"int64_t{{{value}}}"
    if kind is AttrType.float:
        return _float_literal(value)
    if kind is AttrType.string:
        return f"std::string({string_literal(value)})"
    scalars = {
        AttrType.ints: lambda v: f"int64_t{{{v}}}",
        AttrType.floats: _float_literal,
        AttrType.strings: lambda v: f"std::string({string_literal(v)})",
    }[kind]
    return f"{ATTR_TYPE[kind]}{{{', '.join(scalars(v) for v in value)}}}"


def comment(text: str) -> list[str]:
    """Doc text as safe `//` comment lines (no line splicing by a trailing backslash)."""
    return [line.rstrip().rstrip("\\") for line in text.splitlines()] or [""]


# ---- shape rule, on concrete shapes (std::vector<int64_t>): ONNX Runtime wrapper and pybind11


def _shape_var(name: str) -> str:
    return f"{name}_shape"


def _concrete_dim(ref: DimRef) -> str:
    return f"opgen::axis_size({_shape_var(ref.input)}, {ref.axis})"


def concrete_checks(op: OpDef) -> list[dict]:
    """Each check: a C++ condition that must hold, the message, and the values to report."""
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        var = _shape_var(rank.input)
        checks.append(
            {
                "condition": f"static_cast<int64_t>({var}.size()) {relation} {rank.rank}",
                "message": string_literal(rank.message + ", got shape "),
                "got": f"opgen::shape_to_string({var})",
                "guard": "true",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            condition = f"{_concrete_dim(check.a)} == {_concrete_dim(check.b)}"
            got = (
                f'std::to_string({_concrete_dim(check.a)}) + " and " + '
                f"std::to_string({_concrete_dim(check.b)})"
            )
        else:
            condition = f"{_concrete_dim(check.ref)} == {check.value}"
            got = f"std::to_string({_concrete_dim(check.ref)})"
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
    return checks


def _part_concrete(target: str, part: ShapePart) -> str:
    if part.kind == "slice":
        start = part.start if part.start is not None else 0
        stop = part.stop if part.stop is not None else "opgen::kShapeEnd"
        return f"opgen::append_dims({target}, {_shape_var(part.input)}, {start}, {stop});"
    if part.kind == "dim":
        return f"{target}.push_back(opgen::axis_size({_shape_var(part.input)}, {part.axis}));"
    return f"{target}.push_back({part.value});"


def concrete_output_shapes(op: OpDef) -> list[dict]:
    return [
        {
            "name": out.output,
            "statements": [_part_concrete(f"shapes.{out.output}", p) for p in out.parts],
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


def symbolic_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "input_index": rank.input_index,
                "condition": f"{rank.input}_shape.dim_size() {relation} {rank.rank}",
                "message": string_literal(rank.message),
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _proto_dim(check.a), _proto_dim(check.b)
            condition = (
                f"!{a}.has_dim_value() || !{b}.has_dim_value() || "
                f"{a}.dim_value() == {b}.dim_value()"
            )
        else:
            assert isinstance(check, DimLiteralCheck)
            a = _proto_dim(check.ref)
            condition = f"!{a}.has_dim_value() || {a}.dim_value() == {check.value}"
        checks.append(
            {"input_index": None, "condition": condition, "message": string_literal(check.message)}
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
            {"input_index": None, "condition": condition, "message": string_literal(check.message)}
        )
    return checks


def _part_symbolic(target: str, part: ShapePart) -> str:
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
    if part.kind == "dim":
        ref = DimRef(part.input, part.input_index, part.axis)
        return f"*{target}->add_dim() = {_proto_dim(ref)};"
    return f"{target}->add_dim()->set_dim_value({part.value});"


def symbolic_output_shapes(op: OpDef) -> list[dict]:
    index = {o.name: i for i, o in enumerate(op.outputs)}
    return [
        {
            "name": out.output,
            "index": index[out.output],
            "statements": [_part_symbolic(f"{out.output}_out", p) for p in out.parts],
        }
        for out in op.shape_rule.outputs
    ]


_PROTO_SETTER = {  # NodeProto attribute setter, and how to spell one value (None: a string)
    AttrType.int: ("set_i", "int64_t{{{}}}"),
    AttrType.float: ("set_f", "{}f"),
    AttrType.string: ("set_s", None),
    AttrType.ints: ("add_ints", "int64_t{{{}}}"),
    AttrType.floats: ("add_floats", "{}f"),
    AttrType.strings: ("add_strings", None),
}


def node_attribute_statements(node: str, attrs: dict[str, Attribute], values: dict) -> list[str]:
    """C++ statements adding attribute values to an ONNX NodeProto (for the schema test)."""
    statements = []
    for name, value in values.items():
        kind = attrs[name].type
        enum = ATTR_PROTO[kind]
        setter, pattern = _PROTO_SETTER[kind]
        var = f"{name}_attribute"
        statements.append(f"auto* {var} = {node}->add_attribute();")
        statements.append(f"{var}->set_name({string_literal(name)});")
        statements.append(f"{var}->set_type(ONNX_NAMESPACE::AttributeProto::{enum});")
        for item in value if kind.is_list else [value]:
            spelled = string_literal(item) if pattern is None else pattern.format(repr(item))
            statements.append(f"{var}->{setter}({spelled});")
    return statements
