"""Dtypes, attribute types, type constraints and their instantiations; the numeric limits every
target shares and how messages spell values."""

from __future__ import annotations

import builtins
import json
import math
import struct
from dataclasses import dataclass
from enum import Enum


class DType(Enum):
    """ONNX's tensor element types (TensorProto.DataType), in ONNX's names except float32 and
    float64 (ONNX's float and double). The first ten are the kernel dtypes: the ones every
    kernel target carries (see model/capabilities.py for the rest)."""

    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    bool = "bool"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"
    complex64 = "complex64"
    complex128 = "complex128"
    string = "string"
    float8e4m3fn = "float8e4m3fn"
    float8e4m3fnuz = "float8e4m3fnuz"
    float8e5m2 = "float8e5m2"
    float8e5m2fnuz = "float8e5m2fnuz"
    float8e8m0 = "float8e8m0"
    uint4 = "uint4"
    int4 = "int4"
    float4e2m1 = "float4e2m1"
    uint2 = "uint2"
    int2 = "int2"
    float6e2m3 = "float6e2m3"
    float6e3m2 = "float6e3m2"

    @property
    def is_floating(self) -> builtins.bool:
        """A floating dtype PyTorch has, complex included (a gradient may flow through it; its
        outputs are compared within a tolerance)."""
        return self in (DType.float16, DType.bfloat16, DType.float32, DType.float64) or (
            self in FLOAT8_DTYPES or self.is_complex
        )

    @property
    def is_complex(self) -> builtins.bool:
        return self in (DType.complex64, DType.complex128)

    @property
    def is_copied_by_ort(self) -> builtins.bool:
        """ONNX Runtime holds its elements otherwise than a kernel sees them: strings as its own
        objects, 4-bit integers two per byte (see op.elements_copied)."""
        return self in (DType.string, DType.int4, DType.uint4)

    @property
    def is_kernel_dtype(self) -> builtins.bool:
        """One of the ten dtypes every kernel target carries."""
        return self in KERNEL_DTYPES

    @property
    def in_torch(self) -> builtins.bool:
        """PyTorch has it, as torch.<TORCH_NAME> (a dtype argument may name it)."""
        return self in TORCH_NAMED_DTYPES


KERNEL_DTYPES = tuple(DType)[:10]
FLOAT8_DTYPES = (DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz)
# The kernel dtypes, uint16/32/64, complex and the float8 formats ONNX and PyTorch share.
TORCH_NAMED_DTYPES = tuple(DType)[:15] + FLOAT8_DTYPES
# PyTorch's name of each dtype it has (torch.<name>): ours but for the float8 formats.
TORCH_NAME = {
    d: d.value.replace("float8", "float8_") if d in FLOAT8_DTYPES else d.value
    for d in TORCH_NAMED_DTYPES
}

# Element types the TorchScript exporter cannot export (torch 2.13: "ScalarType UInt32 is an
# unexpected tensor scalar type"); the dynamo exporter carries them.
TORCHSCRIPT_MISSING_DTYPES = (DType.uint16, DType.uint32, DType.uint64)

# TensorProto.DataType: each dtype's name and number (what a model stores as elem_type).
TENSOR_PROTO_NUMBER = {
    DType.float32: 1,
    DType.uint8: 2,
    DType.int8: 3,
    DType.uint16: 4,
    DType.int16: 5,
    DType.int32: 6,
    DType.int64: 7,
    DType.string: 8,
    DType.bool: 9,
    DType.float16: 10,
    DType.float64: 11,
    DType.uint32: 12,
    DType.uint64: 13,
    DType.complex64: 14,
    DType.complex128: 15,
    DType.bfloat16: 16,
    DType.float8e4m3fn: 17,
    DType.float8e4m3fnuz: 18,
    DType.float8e5m2: 19,
    DType.float8e5m2fnuz: 20,
    DType.uint4: 21,
    DType.int4: 22,
    DType.float4e2m1: 23,
    DType.float8e8m0: 24,
    DType.uint2: 25,
    DType.int2: 26,
    DType.float6e2m3: 27,
    DType.float6e3m2: 28,
}
DTYPE_OF_NUMBER = {number: dtype for dtype, number in TENSOR_PROTO_NUMBER.items()}
# ONNX's name of each dtype (its type strings say tensor(float)); ours differ for two.
ONNX_NAME = {d: {DType.float32: "float", DType.float64: "double"}.get(d, d.value) for d in DType}
# A definition that says ONNX's name where ours differs: what it means.
FROM_ONNX_NAME = {name: d.value for d, name in ONNX_NAME.items() if name != d.value}


@dataclass(frozen=True)
class TensorType:
    """tensor(<dtype>): what a definition spells as the bare dtype name."""

    dtype: DType

    def __str__(self) -> str:
        return self.dtype.value


@dataclass(frozen=True)
class SparseTensorType:
    dtype: DType

    def __str__(self) -> str:
        return f"sparse_tensor({self.dtype.value})"


@dataclass(frozen=True)
class SequenceType:
    element: ValueType

    def __str__(self) -> str:
        return f"seq({self.element})"


@dataclass(frozen=True)
class MapType:
    key: DType
    value: ValueType

    def __str__(self) -> str:
        return f"map({self.key.value}, {self.value})"


@dataclass(frozen=True)
class OptionalType:
    element: ValueType

    def __str__(self) -> str:
        return f"optional({self.element})"


# An ONNX value type: what a type constraint allows and what a parameter without a type
# variable has. Kernel targets carry TensorType only (model/capabilities.py).
ValueType = TensorType | SparseTensorType | SequenceType | MapType | OptionalType


class AttrType(Enum):
    bool = "bool"  # an ONNX int attribute (0 or 1); a PyTorch bool
    int = "int"
    float = "float"
    string = "string"
    ints = "ints"
    floats = "floats"
    strings = "strings"
    # Carried by the ONNX schemas only (model/capabilities.py); they take no default.
    tensor = "tensor"
    tensors = "tensors"
    sparse_tensor = "sparse_tensor"
    sparse_tensors = "sparse_tensors"
    graph = "graph"
    graphs = "graphs"
    type_proto = "type_proto"
    type_protos = "type_protos"

    @property
    def is_list(self) -> builtins.bool:
        return self in (AttrType.ints, AttrType.floats, AttrType.strings)

    @property
    def takes_values(self) -> builtins.bool:
        """A definition can spell a value of it (a default, an allowed value, a test's)."""
        return self in VALUE_ATTR_TYPES


VALUE_ATTR_TYPES = tuple(AttrType)[:7]


def tensor_attribute_dtype_names() -> str:
    """The element types a tensor attribute may declare, for messages."""
    return ", ".join(d.value for d in TENSOR_ATTRIBUTE_DTYPES)


# The element types a tensor attribute may declare (`dtype:`): plain numbers numpy and ONNX
# Runtime's C++ API both hold, so a kernel copies them as they are and a test builds them
# from nested lists. Not yet: bool, strings, bfloat16, float8, 4-bit and complex ones.
TENSOR_ATTRIBUTE_DTYPES = (
    DType.float16,
    DType.float32,
    DType.float64,
    DType.int8,
    DType.int16,
    DType.int32,
    DType.int64,
    DType.uint8,
    DType.uint16,
    DType.uint32,
    DType.uint64,
)


def float32(value: float) -> float:
    """The float32 nearest to value (ONNX float attributes are float32 in every runtime)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def float32_text(value: float) -> str:
    """The shortest `%.<p>g` spelling that reads back as the same float32 (what the C++
    opgen::quoted and the Python _support.quoted print for a float)."""
    value = float32(value)
    if math.isnan(value):
        return "nan"
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"  # C's %.<p>g, as the C++ spelling uses
        if float32(float(text)) == value:
            return text
    return f"{value:.9g}"


def message_value(value: int | float | str) -> str:
    """How error messages of every runtime spell an attribute value: ints in decimal, floats as
    float32_text, strings as JSON does (double quotes; backslash, quote and control characters
    escaped). The C++ `opgen::quoted` and the Python `_support.quoted` spell them the same way."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return float32_text(value) if isinstance(value, float) else str(value)


def message_values(values: tuple[int | float | str, ...]) -> str:
    return "[" + ", ".join(message_value(v) for v in values) + "]"


@dataclass(frozen=True)
class TypeConstraint:
    name: str
    types: tuple[ValueType, ...]
    doc: str
    # The int attribute that picks the variable's dtype, as TensorProto.DataType's number (as
    # Cast's `to` does); None: the inputs of the variable bind it.
    chosen_by: str | None = None

    @property
    def is_tensor_only(self) -> builtins.bool:
        return all(isinstance(t, TensorType) for t in self.types)

    @property
    def dtypes(self) -> tuple[DType, ...]:
        """The element types of a constraint that allows tensors only (what kernels are compiled
        for); the capability check keeps other constraints away from the targets that ask."""
        if not self.is_tensor_only:
            raise ValueError(f"type variable {self.name} allows types that are not tensors")
        return tuple(t.dtype for t in self.types if isinstance(t, TensorType))


def type_choosers(constraints: tuple[TypeConstraint, ...]) -> dict[str, TypeConstraint]:
    """Each attribute that chooses a type variable's dtype, and that variable's constraint (the
    first, where a definition wrongly has one attribute choose two: the parser reports it)."""
    choosers: dict[str, TypeConstraint] = {}
    for constraint in constraints:
        if constraint.chosen_by is not None:
            choosers.setdefault(constraint.chosen_by, constraint)
    return choosers


@dataclass(frozen=True)
class Instantiation:
    """One concrete binding of every type variable: what a C++ kernel is compiled for."""

    bindings: tuple[tuple[str, DType], ...]

    def dtype(self, type_var: str) -> DType:
        return dict(self.bindings)[type_var]

    @property
    def suffix(self) -> str:
        return "_".join(dtype.value for _, dtype in self.bindings)


# Every target holds an integer in an int64 (C++ int64_t, ONNX INT/INTS, PyTorch int, torch
# int64 tensors) and a float attribute in a float32 (ONNX FLOAT/FLOATS, C++ float): a value
# outside them would not compile, would be rejected at import or would silently change. These
# two functions are the one place that checks it, for every field that holds such a value.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


_INTEGER_BITS = {
    DType.int8: 8,
    DType.int16: 16,
    DType.int32: 32,
    DType.int64: 64,
    DType.uint8: 8,
    DType.uint16: 16,
    DType.uint32: 32,
    DType.uint64: 64,
}


def dtype_range(dtype: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype of 8 bits or more. (A definition's
    integers stop at int64's largest anyway: see read.in_int64.)"""
    bits = _INTEGER_BITS[dtype]
    if dtype.value.startswith("u"):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


FLOAT32_MAX = 3.4028234663852886e38


# ONNX holds op and opset versions in a C++ int (OpSchema::SinceVersion, ONNX Runtime's
# custom-op start version).
VERSION_MAX = 2**31 - 1
