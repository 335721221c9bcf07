"""ONNX spellings: type strings, TensorProto names and attribute types."""

from __future__ import annotations

import json
from typing import TypeAlias

from generator.model.nodes import AttrRef, NodeAttribute, OnnxNode
from generator.model.op import OpDef
from generator.model.types import AttrType, DType

_TYPE_NAME = {
    DType.float16: "float16",
    DType.bfloat16: "bfloat16",
    DType.float32: "float",
    DType.float64: "double",
    DType.int8: "int8",
    DType.int16: "int16",
    DType.int32: "int32",
    DType.int64: "int64",
    DType.uint8: "uint8",
    DType.bool: "bool",
}
TENSOR_PROTO = {
    DType.float16: "FLOAT16",
    DType.bfloat16: "BFLOAT16",
    DType.float32: "FLOAT",
    DType.float64: "DOUBLE",
    DType.int8: "INT8",
    DType.int16: "INT16",
    DType.int32: "INT32",
    DType.int64: "INT64",
    DType.uint8: "UINT8",
    DType.bool: "BOOL",
}
# TensorProto.DataType numbers (what a model stores as elem_type).
TENSOR_PROTO_NUMBER = {
    DType.float32: 1,
    DType.uint8: 2,
    DType.int8: 3,
    DType.int16: 5,
    DType.int32: 6,
    DType.int64: 7,
    DType.bool: 9,
    DType.float16: 10,
    DType.float64: 11,
    DType.bfloat16: 16,
}
ATTR_TYPE = {
    AttrType.bool: "INT",  # ONNX has no bool attributes
    AttrType.int: "INT",
    AttrType.float: "FLOAT",
    AttrType.string: "STRING",
    AttrType.ints: "INTS",
    AttrType.floats: "FLOATS",
    AttrType.strings: "STRINGS",
}


def onnx_type_string(dtype: DType) -> str:
    """The type string of ONNX schemas: tensor(float), tensor(float16), ..."""
    return f"tensor({_TYPE_NAME[dtype]})"


# ---- nodes in ONNX's textual syntax (onnx.parser in Python, OnnxParser in C++)

_TEXT_ATTR_TYPE = {
    AttrType.bool: "int",
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "string",
    AttrType.ints: "ints",
    AttrType.floats: "floats",
    AttrType.strings: "strings",
}


# A literal value of a node attribute or an attribute default: a number (bools are ints), a
# string, a dtype (an int attribute given by a dtype's name), or a list of them.
_TextLiteral: TypeAlias = (
    "int | float | str | DType | tuple[_TextLiteral, ...] | list[_TextLiteral]"
)


def text_value(value: _TextLiteral) -> str:
    """A literal in ONNX's text syntax. Its strings know only two escapes, \\ and \" (a
    backslash before anything else is dropped), so every other character stays as it is."""
    if isinstance(value, DType):
        return str(TENSOR_PROTO_NUMBER[value])
    if isinstance(value, tuple | list):
        return "[" + ", ".join(text_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _text_attribute(attr: NodeAttribute) -> str:
    if isinstance(attr.value, AttrRef):
        return f"{attr.name}: {_TEXT_ATTR_TYPE[attr.type]} = @{attr.value.name}"
    return f"{attr.name} = {text_value(attr.value)}"


def node_text(node: OnnxNode) -> str:
    """`Z = custom.aten.Op <alpha: float = @alpha> (X, Y)`"""
    op = f"{node.domain}.{node.op_type}" if node.domain else node.op_type
    attrs = ", ".join(_text_attribute(a) for a in node.attributes)
    return (
        f"{', '.join(node.outputs)} = {op}"
        + (f" <{attrs}>" if attrs else "")
        + f" ({', '.join(node.inputs)})"
    )


def function_text(op: OpDef) -> str:
    """The whole function, for onnx.parser.parse_function."""
    function = op.function
    if function is None:
        raise ValueError(f"{op.op_id} is not an ONNX function")
    opsets = f'"": {function.opset}'  # bodies use standard ops only (generator/parse/nodes.py)
    attrs = ", ".join(
        f"{a.name}: {_TEXT_ATTR_TYPE[a.type]}"
        + ("" if a.required else f" = {text_value(a.default)}")
        for a in op.attributes
    )
    signature = (
        f"{op.op_type}"
        + (f" <{attrs}>" if attrs else "")
        + f" ({', '.join(t.name for t in op.inputs)}) => ({', '.join(t.name for t in op.outputs)})"
    )
    body = "\n".join(f"  {node_text(n)}" for n in function.nodes)
    return (
        f"<\n  domain: {json.dumps(op.domain)},\n  opset_import: [{opsets}]\n>\n"
        f"{signature}\n{{\n{body}\n}}\n"
    )
