"""A compiled shape rule: the checks on inputs and attributes, and each output's shape as parts.

Each variant is its own class (a dim expression is a DimRef, a Constant, an AttributeValue or a
Binary; an output part is one of five parts), so a `match` over a union with `assert_never` in
its last case makes the type checker prove that every variant is handled."""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, assert_never

from generator.model.types import INT64_MAX, INT64_MIN, float32

BinaryOp = Literal["+", "-", "*", "//"]


@dataclass(frozen=True)
class DimRef:
    """Axis `axis` of input `input` (negative axes count from the end)."""

    input: str
    axis: int
    text: str = field(default="", compare=False, kw_only=True)  # as the definition writes it


@dataclass(frozen=True)
class Constant:
    value: int
    text: str = field(default="", compare=False, kw_only=True)


@dataclass(frozen=True)
class AttributeValue:
    """The value of an int (or, for keepdims, bool) attribute."""

    name: str
    text: str = field(default="", compare=False, kw_only=True)


@dataclass(frozen=True)
class Binary:
    """`left op right`; `//` floors, as in Python."""

    op: BinaryOp
    left: DimExpr
    right: DimExpr
    text: str = field(default="", compare=False, kw_only=True)


# An output dim, an axis or a keepdims flag, as a rule computes it from inputs and attributes.
DimExpr = DimRef | Constant | AttributeValue | Binary


def subexpressions(expr: DimExpr) -> Iterator[DimExpr]:
    """The expression and every expression inside it, parents first."""
    yield expr
    if isinstance(expr, Binary):
        yield from subexpressions(expr.left)
        yield from subexpressions(expr.right)


def dims_read(expr: DimExpr) -> list[DimRef]:
    return [e for e in subexpressions(expr) if isinstance(e, DimRef)]


def attributes_read(expr: DimExpr) -> list[str]:
    return [e.name for e in subexpressions(expr) if isinstance(e, AttributeValue)]


@dataclass(frozen=True)
class RankCheck:
    input: str
    exact: bool
    rank: int
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return (self.input,)


@dataclass(frozen=True)
class DimEqualCheck:
    a: DimRef
    b: DimRef
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.a.input, self.b.input)))


@dataclass(frozen=True)
class DimLiteralCheck:
    ref: DimRef
    value: int
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return (self.ref.input,)


@dataclass(frozen=True)
class ShapeEqualCheck:
    """Input `b` must have exactly the shape of input `a` (an input's `same_shape_as`)."""

    a: str
    b: str
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class SlicePart:
    """Dims `start:stop` of an input (Python slice bounds; None is open)."""

    input: str
    start: int | None = None
    stop: int | None = None


@dataclass(frozen=True)
class DimPart:
    """One dim computed from input dims, attributes and integers."""

    expr: DimExpr


@dataclass(frozen=True)
class DataDependentPart:
    """One dim only the kernel knows (a data-dependent size, named by its symbol)."""

    symbol: str


@dataclass(frozen=True)
class BroadcastPart:
    """The operands' shapes broadcast together (numpy rules)."""

    operands: tuple[str, ...]
    message: str  # what incompatible operands report, followed by what they were
    # Variadic operands: each stands for all its values (the only part that reads one).
    variadic: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReducePart:
    """The input's shape without `axis`, or with it as 1 when `keepdims`."""

    input: str
    axis: DimExpr  # a literal or an int attribute
    keepdims: DimExpr  # 0/1: a literal or a bool/int attribute


ShapePart = SlicePart | DimPart | DataDependentPart | BroadcastPart | ReducePart


def part_inputs(part: ShapePart) -> tuple[str, ...]:
    """The inputs whose shapes a part reads."""
    match part:
        case SlicePart() | ReducePart():
            return (part.input,)
        case DimPart():
            return tuple(ref.input for ref in dims_read(part.expr))
        case DataDependentPart():
            return ()
        case BroadcastPart():
            return part.operands
        case _:
            assert_never(part)


def part_expressions(part: ShapePart) -> tuple[DimExpr, ...]:
    match part:
        case DimPart():
            return (part.expr,)
        case ReducePart():
            return (part.axis, part.keepdims)
        case SlicePart() | DataDependentPart() | BroadcastPart():
            return ()
        case _:
            assert_never(part)


@dataclass(frozen=True)
class OutputShape:
    output: str
    parts: tuple[ShapePart, ...]
    # A variadic output's values pair with a variadic input's (`same_shape_as` it): one value
    # per value of that input, each with its value's shape; no parts.
    values_of: str | None = None

    @property
    def data_dependent(self) -> tuple[str, ...]:
        """The data-dependent sizes (symbols) of this output: only its kernel knows them."""
        return tuple(p.symbol for p in self.parts if isinstance(p, DataDependentPart))


@dataclass(frozen=True)
class ExprCheck:
    """A computed dim (or a divisor) that must be >= 0 (or > 0)."""

    expr: DimExpr
    strict: bool  # > 0 instead of >= 0
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(ref.input for ref in dims_read(self.expr)))


@dataclass(frozen=True)
class AxisCheck:
    """An axis attribute (or literal) must index input `input`: -rank <= axis < rank."""

    input: str
    axis: DimExpr
    message: str

    @property
    def inputs_read(self) -> tuple[str, ...]:
        return (self.input,)


@dataclass(frozen=True)
class AllowedValuesCheck:
    """An attribute with declared allowed values."""

    attribute: str
    allowed: tuple[int | float | str, ...]
    message: str


@dataclass(frozen=True)
class RangeCheck:
    """An int or float attribute with a declared range (inclusive; a float is compared as the
    float32 every runtime holds it in)."""

    attribute: str
    minimum: int | float | None
    maximum: int | float | None
    message: str

    def __post_init__(self) -> None:
        if self.minimum is None and self.maximum is None:
            raise ValueError(f"attribute {self.attribute!r}: a range check without a bound")

    @property
    def is_float(self) -> bool:
        return isinstance(self.minimum if self.minimum is not None else self.maximum, float)

    @property
    def comparisons(self) -> tuple[tuple[str, int | float], ...]:
        """What the value must satisfy: (">=", minimum) and/or ("<=", maximum)."""
        bounds = ((">=", self.minimum), ("<=", self.maximum))
        return tuple((relation, bound) for relation, bound in bounds if bound is not None)

    def outside(self) -> list[int | float]:
        """Values just outside the range, as the generated error cases use them."""
        values: list[int | float] = []
        if self.minimum is not None:
            below = _next_toward(self.minimum, -math.inf) if self.is_float else self.minimum - 1
            if below is not None and (self.is_float or below >= INT64_MIN):
                values.append(below)
        if self.maximum is not None:
            above = _next_toward(self.maximum, math.inf) if self.is_float else self.maximum + 1
            if above is not None and (self.is_float or above <= INT64_MAX):
                values.append(above)
        return values


def _next_toward(value: float, direction: float) -> float | None:
    """The float32 next to float32(value) toward direction, or None past float32's range."""
    bits = struct.unpack("<i", struct.pack("<f", float32(value)))[0]
    if value == 0:
        bits = 1 if direction > 0 else -(2**31) + 1  # the smallest subnormal of either sign
    else:
        bits += 1 if (direction > 0) == (bits >= 0) else -1
    result = struct.unpack("<f", struct.pack("<i", bits))[0]
    return None if math.isinf(result) or math.isnan(result) else result


AttributeCheck = AllowedValuesCheck | RangeCheck
InputCheck = RankCheck | DimEqualCheck | DimLiteralCheck | ShapeEqualCheck | AxisCheck | ExprCheck


@dataclass(frozen=True)
class ShapeRule:
    attribute_checks: tuple[AttributeCheck, ...]
    rank_checks: tuple[RankCheck, ...]
    dim_checks: tuple[DimEqualCheck | DimLiteralCheck, ...]
    shape_checks: tuple[ShapeEqualCheck, ...]
    axis_checks: tuple[AxisCheck, ...]
    expr_checks: tuple[ExprCheck, ...]
    outputs: tuple[OutputShape, ...]

    @property
    def data_dependent_sizes(self) -> tuple[str, ...]:
        """Every data-dependent size symbol, in order of first use."""
        symbols = [s for out in self.outputs for s in out.data_dependent]
        return tuple(dict.fromkeys(symbols))

    @property
    def kernel_allocated(self) -> frozenset[str]:
        """Outputs whose shape depends on the data: the kernel allocates them."""
        return frozenset(out.output for out in self.outputs if out.data_dependent)

    @property
    def input_checks(self) -> tuple[InputCheck, ...]:
        """The checks on input shapes, in the order every runtime runs them."""
        return (
            self.rank_checks
            + self.dim_checks
            + self.shape_checks
            + self.axis_checks
            + self.expr_checks
        )

    @property
    def scalar_inputs(self) -> frozenset[str]:
        """Inputs the rule requires to be scalars (rank exactly 0)."""
        return frozenset(c.input for c in self.rank_checks if c.exact and c.rank == 0)

    @property
    def shaped_inputs(self) -> frozenset[str]:
        """Inputs whose shape the rule reads."""
        used = {c.input for c in self.rank_checks}
        used |= {name for c in self.shape_checks for name in (c.a, c.b)}
        used |= {c.input for c in self.axis_checks}
        used |= {name for c in self.expr_checks for name in c.inputs_read}
        used |= {name for out in self.outputs for p in out.parts for name in part_inputs(p)}
        used |= {out.values_of for out in self.outputs if out.values_of is not None}
        return frozenset(used)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Attributes the rule reads: allowed-value checks, int attributes in dims, reduce axes
        and keepdims."""
        names: list[str] = [c.attribute for c in self.attribute_checks]
        exprs = [c.expr for c in self.expr_checks] + [c.axis for c in self.axis_checks]
        exprs += [e for out in self.outputs for p in out.parts for e in part_expressions(p)]
        for expr in exprs:
            names += [name for name in attributes_read(expr) if name not in names]
        return tuple(names)
