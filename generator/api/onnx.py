"""ONNX spellings: type strings, TensorProto names and attribute types."""

from __future__ import annotations

import json
from typing import TypeAlias, assert_never

from generator.model.nodes import AttrRef, NodeAttribute, OnnxNode
from generator.model.op import OpDef
from generator.model.tensors import (
    Differentiation,
    OptionalArity,
    SingleArity,
    TensorParam,
    VariadicArity,
)
from generator.model.types import (
    ONNX_NAME,
    TENSOR_PROTO_NUMBER,
    AttrType,
    DType,
    MapType,
    OptionalType,
    SequenceType,
    SparseTensorType,
    TensorType,
    ValueType,
)

_TYPE_NAME = ONNX_NAME
TENSOR_PROTO = {d: name.upper() for d, name in _TYPE_NAME.items()}
ATTR_TYPE = {
    AttrType.bool: "INT",  # ONNX has no bool attributes
    AttrType.int: "INT",
    AttrType.float: "FLOAT",
    AttrType.string: "STRING",
    AttrType.ints: "INTS",
    AttrType.floats: "FLOATS",
    AttrType.strings: "STRINGS",
    AttrType.tensor: "TENSOR",
    AttrType.tensors: "TENSORS",
    AttrType.sparse_tensor: "SPARSE_TENSOR",
    AttrType.sparse_tensors: "SPARSE_TENSORS",
    AttrType.graph: "GRAPH",
    AttrType.graphs: "GRAPHS",
    AttrType.type_proto: "TYPE_PROTO",
    AttrType.type_protos: "TYPE_PROTOS",
}


def onnx_type_string(dtype: DType) -> str:
    """The type string of ONNX schemas: tensor(float), tensor(float16), ..."""
    return f"tensor({_TYPE_NAME[dtype]})"


def value_type_string(value_type: ValueType) -> str:
    """As ONNX schemas spell a type: tensor(float), seq(tensor(float)), map(int64, float) (a
    map's tensor value by its dtype alone), optional(...), sparse_tensor(float)."""
    match value_type:
        case TensorType(dtype):
            return onnx_type_string(dtype)
        case SparseTensorType(dtype):
            return f"sparse_tensor({_TYPE_NAME[dtype]})"
        case SequenceType(element):
            return f"seq({value_type_string(element)})"
        case MapType(key, TensorType(value)):
            return f"map({_TYPE_NAME[key]}, {_TYPE_NAME[value]})"
        case MapType(key, value):
            return f"map({_TYPE_NAME[key]}, {value_type_string(value)})"
        case OptionalType(element):
            return f"optional({value_type_string(element)})"
        case _:
            assert_never(value_type)


def parameter_type_string(param: TensorParam) -> str:
    """The parameter's type as an ONNX schema names it: its type variable or a fixed type."""
    if param.type_var is not None:
        return param.type_var
    assert param.concrete is not None  # TensorParam: a type variable or a type
    return value_type_string(param.concrete)


_DIFFERENTIATION = {
    Differentiation.unknown: None,
    Differentiation.differentiable: "Differentiable",
    Differentiation.non_differentiable: "NonDifferentiable",
}


def formal_parameter_keywords(param: TensorParam) -> tuple[tuple[str, str], ...]:
    """The keyword arguments of onnx.defs.OpSchema.FormalParameter that differ from its
    defaults (Single, homogeneous, min arity 1, Unknown), as (keyword, Python expression)."""
    keywords: list[tuple[str, str]] = []
    match param.arity:
        case SingleArity():
            pass
        case OptionalArity():
            keywords.append(("param_option", "_Schema.FormalParameterOption.Optional"))
        case VariadicArity(min_arity, homogeneous):
            keywords.append(("param_option", "_Schema.FormalParameterOption.Variadic"))
            if not homogeneous:
                keywords.append(("is_homogeneous", "False"))
            if min_arity != 1:
                keywords.append(("min_arity", str(min_arity)))
        case _:
            assert_never(param.arity)
    category = _DIFFERENTIATION[param.differentiation]
    if category is not None:
        keywords.append(("differentiation_category", f"_Schema.DifferentiationCategory.{category}"))
    return tuple(keywords)


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
