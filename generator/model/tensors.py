"""Inputs, outputs and attributes of an op, and the shape patterns of its tensors."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from generator.model.types import (
    AttrType,
    DType,
    Instantiation,
    TensorType,
    ValueType,
    float32,
    message_value,
    message_values,
)
from generator.runtime._names import input_of as input_of
from generator.runtime._names import value_name as value_name
from generator.runtime._names import value_names as value_names


@dataclass(frozen=True)
class AnyDims:
    """`...`: any number of dims (at most one per pattern)."""

    def __str__(self) -> str:
        return "..."


@dataclass(frozen=True)
class SymbolDim:
    """A symbol such as N: the same size wherever it appears."""

    symbol: str

    def __str__(self) -> str:
        return self.symbol


@dataclass(frozen=True)
class LiteralDim:
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class ExpressionDim:
    """An output dim such as `(L - window) // stride + 1`, compiled with the shape rule."""

    text: str

    def __str__(self) -> str:
        return self.text


PatternDim = AnyDims | SymbolDim | LiteralDim | ExpressionDim


@dataclass(frozen=True)
class ShapePattern:
    dims: tuple[PatternDim, ...]

    @property
    def ellipsis_index(self) -> int | None:
        for i, dim in enumerate(self.dims):
            if isinstance(dim, AnyDims):
                return i
        return None

    @property
    def fixed_rank(self) -> int:
        return sum(1 for d in self.dims if not isinstance(d, AnyDims))

    def axis_of(self, position: int) -> int:
        """Axis of pattern entry `position`: from the start before `...`, from the end after."""
        ell = self.ellipsis_index
        if ell is None or position < ell:
            return position
        return position - len(self.dims)

    def __post_init__(self) -> None:
        if sum(isinstance(d, AnyDims) for d in self.dims) > 1:
            raise ValueError(f"{self}: '...' may appear once in a shape pattern")

    def __str__(self) -> str:
        return "[" + ", ".join(str(d) for d in self.dims) + "]"


@dataclass(frozen=True)
class SingleArity:
    """Exactly one value."""


@dataclass(frozen=True)
class OptionalArity:
    """One value or none (None in PyTorch; "" in ONNX for a missing input before others)."""


@dataclass(frozen=True)
class VariadicArity:
    """Any number of values, at least `min_arity`; the last parameter only. Homogeneous: all of
    one type (of the type variable's); heterogeneous: each its own."""

    min_arity: int = 1
    homogeneous: bool = True


Arity = SingleArity | OptionalArity | VariadicArity


class Differentiation(Enum):
    """ONNX's differentiation category of an input or output."""

    unknown = "unknown"
    differentiable = "differentiable"
    non_differentiable = "non_differentiable"


@dataclass(frozen=True)
class TensorParam:
    """An input or output: a tensor in most ops; a sequence, map or optional value where its
    type says so (the ONNX schemas carry those)."""

    name: str
    doc: str
    type_var: str | None  # a type constraint name, or None when the type is concrete
    concrete: ValueType | None
    shape: ShapePattern | None  # inputs: the accepted pattern; outputs: see ShapeRule
    same_shape_as: str | None
    # outputs only: `broadcast(A, B)` or `reduce(X, axis, keepdims)`, as (name, arguments)
    shape_function: tuple[str, tuple[str, ...]] | None = None
    arity: Arity = SingleArity()
    differentiation: Differentiation = Differentiation.unknown

    def __post_init__(self) -> None:
        if (self.type_var is None) == (self.concrete is None):
            raise ValueError(f"tensor {self.name!r}: give a type variable or a type, not both")

    @property
    def dtype(self) -> DType | None:
        """The concrete dtype of a tensor without a type variable (None otherwise)."""
        return self.concrete.dtype if isinstance(self.concrete, TensorType) else None

    @property
    def optional(self) -> bool:
        """May be absent (None in PyTorch, "" in ONNX)."""
        return isinstance(self.arity, OptionalArity)

    @property
    def variadic(self) -> bool:
        return isinstance(self.arity, VariadicArity)

    @property
    def may_be_absent(self) -> bool:
        """A call may give it no value: optional, or variadic with a minimum of 0."""
        return self.optional or (isinstance(self.arity, VariadicArity) and self.arity.min_arity < 1)

    def dtype_in(self, binding: Instantiation) -> DType:
        """The tensor's dtype where the type variables are bound as in `binding`."""
        if self.type_var is not None:
            return binding.dtype(self.type_var)
        if self.dtype is None:
            raise ValueError(f"{self.name} has type {self.concrete}, not a tensor's")
        return self.dtype


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    doc: str
    required: bool
    default: Any  # None when required or when optional without a default
    allowed: tuple[int | float | str, ...] | None = None  # the values it may take (None: any)
    since_version: int | None = None  # the op version that added it (None: the first)
    minimum: int | float | None = None  # int and float attributes: the smallest value allowed
    maximum: int | float | None = None  # ... and the largest (both inclusive; None: no bound)
    # A tensor attribute's element type, where the definition declares one (a kernel reads it
    # as opgen::TensorAttribute<its C++ type>); None for every other type.
    dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.required and self.default is not None:
            raise ValueError(f"attribute {self.name!r}: a default makes it optional")
        bounded = self.minimum is not None or self.maximum is not None
        if bounded and self.type not in (AttrType.int, AttrType.float):
            raise ValueError(f"attribute {self.name!r}: a range on a {self.type.value}")
        if self.dtype is not None and self.type is not AttrType.tensor:
            raise ValueError(f"attribute {self.name!r}: a dtype on a {self.type.value}")

    @property
    def has_default(self) -> bool:
        return self.default is not None

    def refusal(self, value: Any) -> str | None:
        """Why every runtime refuses this value ("is not one of [...]", "is outside min/max
        [a, b]"), or None where it takes it (a float compares as the float32 it becomes)."""
        if self.allowed is not None and value not in self.allowed:
            return f"is not one of {message_values(self.allowed)}"
        if self.minimum is None and self.maximum is None:
            return None
        number = float32(value) if self.type is AttrType.float else value
        low, high = self.minimum, self.maximum
        if (low is None or number >= low) and (high is None or number <= high):
            return None
        shown = ["" if bound is None else message_value(bound) for bound in (low, high)]
        return f"is outside min/max [{shown[0]}, {shown[1]}]"

    @property
    def optional_without_default(self) -> bool:
        """Optional, and absence means something of its own (ONNX's required=False with no
        default_value)."""
        return not self.required and self.default is None
