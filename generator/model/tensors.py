"""Inputs, outputs and attributes of an op, and the shape patterns of its tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.model.types import AttrType, DType, Instantiation


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
class TensorParam:
    name: str
    doc: str
    type_var: str | None  # a type constraint name, or None when dtype is concrete
    dtype: DType | None
    shape: ShapePattern | None  # inputs: the accepted pattern; outputs: see ShapeRule
    same_shape_as: str | None
    # outputs only: `broadcast(A, B)` or `reduce(X, axis, keepdims)`, as (name, arguments)
    shape_function: tuple[str, tuple[str, ...]] | None = None
    optional: bool = False  # inputs only: may be absent (None in PyTorch, "" in ONNX)

    def __post_init__(self) -> None:
        if (self.type_var is None) == (self.dtype is None):
            raise ValueError(f"tensor {self.name!r}: give a type variable or a dtype, not both")

    def dtype_in(self, binding: Instantiation) -> DType:
        """The tensor's dtype where the type variables are bound as in `binding`."""
        if self.type_var is not None:
            return binding.dtype(self.type_var)
        assert self.dtype is not None  # __post_init__
        return self.dtype


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    doc: str
    required: bool
    default: Any  # None when required
    allowed: tuple[int | float | str, ...] | None = None  # the values it may take (None: any)
    since_version: int | None = None  # the op version that added it (None: the first)
    minimum: int | float | None = None  # int and float attributes: the smallest value allowed
    maximum: int | float | None = None  # ... and the largest (both inclusive; None: no bound)

    def __post_init__(self) -> None:
        if self.required != (self.default is None):
            raise ValueError(f"attribute {self.name!r}: a default exactly when not required")
        bounded = self.minimum is not None or self.maximum is not None
        if bounded and self.type not in (AttrType.int, AttrType.float):
            raise ValueError(f"attribute {self.name!r}: a range on a {self.type.value}")
