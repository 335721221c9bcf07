"""C++ spellings: kernel types, ONNX Runtime types and enums, ONNX C++ schema pieces."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, assert_never

from generator.api.names import Local
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.api.onnx import TENSOR_PROTO
from generator.api.python import chooses_dtype, defaults_via_none
from generator.model.op import OpDef
from generator.model.tensors import (
    Arity,
    Attribute,
    Differentiation,
    OptionalArity,
    SingleArity,
    TensorParam,
    VariadicArity,
)
from generator.model.types import TENSOR_PROTO_NUMBER, AttrType, DType

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
    DType.uint16: "uint16_t",
    DType.uint32: "uint32_t",
    DType.uint64: "uint64_t",
    DType.float8e4m3fn: "opgen::float8e4m3fn",
    DType.float8e4m3fnuz: "opgen::float8e4m3fnuz",
    DType.float8e5m2: "opgen::float8e5m2",
    DType.float8e5m2fnuz: "opgen::float8e5m2fnuz",
    DType.complex64: "std::complex<float>",  # PyTorch only (docs/capabilities.md)
    DType.complex128: "std::complex<double>",
    DType.int4: "opgen::int4",  # one per byte; ONNX Runtime only (docs/capabilities.md)
    DType.uint4: "opgen::uint4",
    DType.string: "std::string",  # ONNX Runtime only (docs/capabilities.md)
}
# ONNX 1.12 (Debian's libonnx-dev, which the C++ schemas build against here) knows
# TensorProto's element types up to bfloat16 (16); the float8 ones came in 1.14, int4 in 1.16.
NEWEST_ONNX_1_12_DTYPE = 16
ATTR_TYPE = {
    AttrType.bool: "bool",
    AttrType.int: "int64_t",
    AttrType.float: "float",
    AttrType.string: "std::string",
    AttrType.ints: "std::vector<int64_t>",
    AttrType.floats: "std::vector<float>",
    AttrType.strings: "std::vector<std::string>",
}


def attribute_type(attr: Attribute) -> str:
    """The kernel's type of an attribute: std::optional where it may be absent (optional
    without a default)."""
    if attr.dtype is not None:  # a tensor attribute (parse: only these declare a dtype)
        cpp_type = f"opgen::TensorAttribute<{KERNEL_TYPE[attr.dtype]}>"
    else:
        cpp_type = ATTR_TYPE[attr.type]
    return f"std::optional<{cpp_type}>" if attr.optional_without_default else cpp_type


# The PyTorch release whose stable ABI the native libraries target (TORCH_TARGET_VERSION,
# major << 56 | minor << 48): they load into it and every later release.
TORCH_TARGET_VERSION = "0x020a000000000000"  # torch 2.10

# An attribute as the native PyTorch kernel receives it: the C++ type of its schema type
# (api/python.py's SCHEMA_TYPE), which PyTorch's stable ABI unboxes.
TORCH_ARG_TYPE = {
    AttrType.bool: "bool",
    AttrType.int: "int64_t",
    AttrType.float: "double",
    AttrType.string: "std::string",
    AttrType.ints: "std::vector<int64_t>",
    AttrType.floats: "std::vector<double>",
    AttrType.strings: "std::vector<std::string>",
}


def torch_attribute_type(op: OpDef, attr: Attribute) -> str:
    """The C++ type of an attribute's argument to the native kernel (`T?` where it may be
    absent, and for a list of strings with a default: see defaults_via_none)."""
    if chooses_dtype(op, attr):  # `ScalarType? to=None` where it has a default
        scalar_type = "opgen::torch_support::ScalarType"
        return scalar_type if attr.required else f"std::optional<{scalar_type}>"
    cpp_type = TORCH_ARG_TYPE[attr.type]
    if defaults_via_none(attr) or attr.optional_without_default:
        return f"std::optional<{cpp_type}>"
    return cpp_type


def torch_attribute_param(op: OpDef, attr: Attribute) -> str:
    """The native kernel's parameter for an attribute."""
    return f"{torch_attribute_type(op, attr)} {attr.name}"


def torch_attribute_assignment(op: OpDef, attr: Attribute) -> str:
    """The statement that puts the native kernel's argument into the Attributes struct (None
    keeps the struct's default; floats narrow to float32, as ONNX attributes are; a dtype
    becomes ONNX's number of it)."""
    member = f"attrs.{attr.name}"
    if chooses_dtype(op, attr) and attr.required:
        return f"{member} = opgen::torch_support::onnx_dtype({attr.name});"
    if chooses_dtype(op, attr):  # None keeps the struct's default
        return f"if ({attr.name}) {member} = opgen::torch_support::onnx_dtype(*{attr.name});"
    if attr.optional_without_default:
        if attr.type is AttrType.float:
            return f"if ({attr.name}) {member} = static_cast<float>(*{attr.name});"
        if attr.type is AttrType.floats:
            return f"if ({attr.name}) {member}.emplace({attr.name}->begin(), {attr.name}->end());"
        return f"{member} = std::move({attr.name});"
    if defaults_via_none(attr):
        return f"if ({attr.name}) {member} = std::move(*{attr.name});"
    if attr.type is AttrType.float:
        return f"{member} = static_cast<float>({attr.name});"
    if attr.type is AttrType.floats:
        return f"{member}.assign({attr.name}.begin(), {attr.name}.end());"
    if attr.type in (AttrType.string, AttrType.ints, AttrType.strings):
        return f"{member} = std::move({attr.name});"
    return f"{member} = {attr.name};"


_CATEGORY = {
    Differentiation.unknown: "OpSchema::Unknown",
    Differentiation.differentiable: "OpSchema::Differentiable",
    Differentiation.non_differentiable: "OpSchema::NonDifferentiable",
}


def formal_parameter_arguments(param: TensorParam) -> tuple[str, ...]:
    """The arguments of OpSchema::Input / Output after the type string: as few as say what
    differs from ONNX's defaults (Single, homogeneous, min arity 1, Unknown)."""
    match param.arity:
        case SingleArity():
            option, homogeneous, min_arity = "OpSchema::Single", True, 1
        case OptionalArity():
            option, homogeneous, min_arity = "OpSchema::Optional", True, 1
        case VariadicArity():
            option = "OpSchema::Variadic"
            homogeneous, min_arity = param.arity.homogeneous, param.arity.min_arity
        case _:
            assert_never(param.arity)
    arguments = [
        option,
        bool_literal(homogeneous),
        str(min_arity),
        _CATEGORY[param.differentiation],
    ]
    defaults = ("OpSchema::Single", "true", "1", "OpSchema::Unknown")
    while arguments and arguments[-1] == defaults[len(arguments) - 1]:
        arguments.pop()
    return tuple(arguments)


def ort_characteristic(arity: Arity) -> str:
    """ONNX Runtime's OrtCustomOpInputOutputCharacteristic of a parameter."""
    match arity:
        case SingleArity():
            return "INPUT_OUTPUT_REQUIRED"
        case OptionalArity():
            return "INPUT_OUTPUT_OPTIONAL"
        case VariadicArity():
            return "INPUT_OUTPUT_VARIADIC"
        case _:
            assert_never(arity)


def onnx_proto_enum(dtype: DType) -> str:
    """A TensorProto element type in C++: by its enum name where every ONNX the C++ schemas
    build against has it, else by number (ONNX 1.12 has no TensorProto_DataType_FLOAT8E4M3FN)."""
    if in_every_onnx(dtype):
        return f"ONNX_NAMESPACE::TensorProto_DataType_{TENSOR_PROTO[dtype]}"
    return f"static_cast<ONNX_NAMESPACE::TensorProto_DataType>({TENSOR_PROTO_NUMBER[dtype]})"


def in_every_onnx(dtype: DType) -> bool:
    """Every ONNX the C++ schemas build against has the element type (ONNX 1.12 does)."""
    return TENSOR_PROTO_NUMBER[dtype] <= NEWEST_ONNX_1_12_DTYPE


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


def _float_literal(value: float, cpp_type: str = "float") -> str:
    """A float (or, with cpp_type "double", a double) literal; non-finite values by name."""
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        return {
            "inf": f"std::numeric_limits<{cpp_type}>::infinity()",
            "-inf": f"-std::numeric_limits<{cpp_type}>::infinity()",
            "nan": f"std::numeric_limits<{cpp_type}>::quiet_NaN()",
        }[text]
    return text + ("f" if cpp_type == "float" else "")


def bool_literal(value: bool) -> str:
    return "true" if value else "false"


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
    scalars: dict[AttrType, Callable[[Any], str]] = {
        AttrType.ints: int_literal,
        AttrType.floats: _float_literal,
        AttrType.strings: lambda v: f"std::string({string_literal(v)})",
    }
    spell = scalars[kind]
    return f"{ATTR_TYPE[kind]}{{{', '.join(spell(v) for v in value)}}}"


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


# NodeProto's attribute setter for each type, and how to spell one value.
_PROTO_SETTER: dict[AttrType, tuple[str, Callable[[Any], str]]] = {
    AttrType.bool: ("set_i", int_literal),
    AttrType.int: ("set_i", int_literal),
    AttrType.float: ("set_f", _float_literal),
    AttrType.string: ("set_s", string_literal),
    AttrType.ints: ("add_ints", int_literal),
    AttrType.floats: ("add_floats", _float_literal),
    AttrType.strings: ("add_strings", string_literal),
}


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


# A tensor attribute's elements in TensorProto's typed fields (float16: its bits, in int32_data).
_TENSOR_SETTER: dict[DType, tuple[str, Callable[[Any], str]]] = {
    # (parse/tests.py refuses a finite value float16 cannot hold, which struct.pack refuses.)
    DType.float16: ("add_int32_data", lambda v: str(struct.unpack("<H", struct.pack("<e", v))[0])),
    DType.float32: ("add_float_data", _float_literal),
    DType.float64: ("add_double_data", lambda v: _float_literal(v, "double")),
    DType.int8: ("add_int32_data", int_literal),
    DType.int16: ("add_int32_data", int_literal),
    DType.int32: ("add_int32_data", int_literal),
    DType.uint8: ("add_int32_data", int_literal),
    DType.uint16: ("add_int32_data", int_literal),
    DType.int64: ("add_int64_data", int_literal),
    DType.uint32: ("add_uint64_data", lambda v: f"uint64_t{{{v}u}}"),
    DType.uint64: ("add_uint64_data", lambda v: f"uint64_t{{{v}u}}"),
}


def _flattened(value: Any) -> tuple[list[int], list[Any]]:
    """A nested list's shape and its elements in row-major order."""
    if not isinstance(value, list):
        return [], [value]
    parts = [_flattened(item) for item in value]
    inner = parts[0][0] if parts else []
    return [len(value), *inner], [element for _, elements in parts for element in elements]


def tensor_attribute_statements(var: str, attr: Attribute, value: Any) -> list[str]:
    """Fills the TensorProto of a tensor attribute's value (nested lists of its dtype)."""
    assert attr.dtype is not None
    dims, elements = _flattened(value)
    setter, spell = _TENSOR_SETTER[attr.dtype]
    tensor = f"{var}->mutable_t()"
    return (
        [f"{tensor}->set_data_type({TENSOR_PROTO_NUMBER[attr.dtype]});"]
        + [f"{tensor}->add_dims({dim});" for dim in dims]
        + [f"{tensor}->{setter}({spell(_plain(element))});" for element in elements]
    )


def node_attribute_statements(
    node: str, attrs: dict[str, Attribute], values: dict[str, Any]
) -> list[str]:
    """C++ statements adding attribute values to an ONNX NodeProto (for the schema test)."""
    statements = []
    for name, value in values.items():
        kind = attrs[name].type
        enum = ATTR_PROTO[kind]
        var = Local.node_attribute(name)
        statements.append(f"auto* {var} = {node}->add_attribute();")
        statements.append(f"{var}->set_name({string_literal(name)});")
        statements.append(f"{var}->set_type(ONNX_NAMESPACE::AttributeProto::{enum});")
        if attrs[name].dtype is not None:
            statements += tensor_attribute_statements(var, attrs[name], value)
            continue
        setter, spell = _PROTO_SETTER[kind]
        for item in value if kind.is_list else [value]:
            statements.append(f"{var}->{setter}({spell(_plain(item))});")
    return statements
