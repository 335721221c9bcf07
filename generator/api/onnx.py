"""ONNX spellings: type strings, TensorProto names and attribute types."""

from __future__ import annotations

from generator.model import AttrType, DType

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
