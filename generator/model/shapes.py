"""A compiled shape rule: the checks on inputs and attributes, and each output's shape as parts."""

from __future__ import annotations

import math
import operator
import struct
from dataclasses import dataclass, field

from generator.model.types import INT64_MAX, INT64_MIN, float32


@dataclass(frozen=True)
class DimRef:
    """Axis `axis` of input `input` (negative axes count from the end)."""

    input: str
    input_index: int
    axis: int


@dataclass(frozen=True)
class RankCheck:
    input: str
    input_index: int
    exact: bool
    rank: int
    message: str


@dataclass(frozen=True)
class DimEqualCheck:
    a: DimRef
    b: DimRef
    message: str


@dataclass(frozen=True)
class DimLiteralCheck:
    ref: DimRef
    value: int
    message: str


@dataclass(frozen=True)
class ShapeEqualCheck:
    """Input `b` must have exactly the shape of input `a` (an input's `same_shape_as`)."""

    a: str
    a_index: int
    b: str
    b_index: int
    message: str


APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv}


@dataclass(frozen=True)
class DimExpr:
    """An output dim: an input dim, an integer, an int attribute, or `+ - * //` of two dims
    (`//` floors, as in Python)."""

    kind: str  # "dim" | "literal" | "attr" | "binary" | "dynamic" (a data-dependent size)
    ref: DimRef | None = None
    value: int | None = None
    attr: str | None = None
    op: str | None = None  # "+" | "-" | "*" | "//"
    left: DimExpr | None = None
    right: DimExpr | None = None
    text: str = field(default="", compare=False)  # as the definition writes it

    def walk(self):
        yield self
        for child in (self.left, self.right):
            if child is not None:
                yield from child.walk()

    @property
    def refs(self) -> list[DimRef]:
        return [e.ref for e in self.walk() if e.kind == "dim"]

    @property
    def attrs(self) -> list[str]:
        return [e.attr for e in self.walk() if e.kind == "attr"]

    def spell(self, dim, attr, binary) -> str:
        """The expression in a target language: `dim(ref)`, `attr(name)` spell the leaves and
        `binary(op, a, b)` each `+ - * //` (parenthesised as the target needs). (A
        data-dependent size has no expression: each target spells it itself.)"""
        if self.kind == "dim":
            return dim(self.ref)
        if self.kind == "literal":
            return str(self.value)
        if self.kind == "attr":
            return attr(self.attr)
        a = self.left.spell(dim, attr, binary)
        b = self.right.spell(dim, attr, binary)
        return binary(self.op, a, b)

    def evaluate(self, dim, attr) -> int:
        if self.kind == "dim":
            return dim(self.ref)
        if self.kind == "literal":
            return self.value
        if self.kind == "attr":
            return attr(self.attr)
        a, b = self.left.evaluate(dim, attr), self.right.evaluate(dim, attr)
        return APPLY[self.op](a, b)


@dataclass(frozen=True)
class ShapePart:
    """One piece of an output shape."""

    kind: str  # "slice" | "expr" | "broadcast" | "reduce"
    input: str | None = None  # slice, reduce: the input whose dims are used
    input_index: int | None = None
    start: int | None = None  # slice bounds, Python semantics (None = open)
    stop: int | None = None
    expr: DimExpr | None = None  # expr: one dim
    operands: tuple[tuple[str, int], ...] = ()  # broadcast: (input, index) of every operand
    axis: DimExpr | None = None  # reduce: the axis (a literal or an int attribute)
    keepdims: DimExpr | None = None  # reduce: 0/1 (a literal or a bool/int attribute)
    message: str = ""  # broadcast: what incompatible operands report


@dataclass(frozen=True)
class OutputShape:
    output: str
    parts: tuple[ShapePart, ...]

    @property
    def data_dependent(self) -> tuple[str, ...]:
        """The data-dependent sizes (symbols) of this output: only its kernel knows them."""
        return tuple(
            p.expr.text for p in self.parts if p.kind == "expr" and p.expr.kind == "dynamic"
        )


@dataclass(frozen=True)
class ExprCheck:
    """A computed dim (or a divisor) that must be >= 0 (or > 0)."""

    expr: DimExpr
    strict: bool  # > 0 instead of >= 0
    message: str


@dataclass(frozen=True)
class AxisCheck:
    """An axis attribute (or literal) must index input `input`: -rank <= axis < rank."""

    input: str
    input_index: int
    axis: DimExpr
    message: str


@dataclass(frozen=True)
class AllowedValuesCheck:
    """An attribute with declared allowed values."""

    attribute: str
    allowed: tuple
    message: str


@dataclass(frozen=True)
class RangeCheck:
    """An int or float attribute with a declared range (inclusive; a float is compared as the
    float32 every runtime holds it in)."""

    attribute: str
    minimum: int | float | None
    maximum: int | float | None
    message: str

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


@dataclass(frozen=True)
class ShapeRule:
    attribute_checks: tuple[AllowedValuesCheck | RangeCheck, ...]
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
    def input_checks(self) -> tuple:
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
        used |= {ref.input for c in self.expr_checks for ref in c.expr.refs}
        for out in self.outputs:
            for part in out.parts:
                used |= {part.input} if part.input else set()
                used |= {name for name, _ in part.operands}
                used |= {ref.input for ref in (part.expr.refs if part.expr else ())}
        return frozenset(used)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Attributes the rule reads: allowed-value checks, int attributes in dims, reduce axes
        and keepdims."""
        names: list[str] = [c.attribute for c in self.attribute_checks]
        exprs = [c.expr for c in self.expr_checks] + [c.axis for c in self.axis_checks]
        for out in self.outputs:
            exprs += [e for p in out.parts for e in (p.expr, p.axis, p.keepdims) if e]
        for expr in exprs:
            names += [name for name in expr.attrs if name not in names]
        return tuple(names)


def inputs_read(check) -> tuple[str, ...]:
    """The inputs whose shapes a check reads."""
    if isinstance(check, RankCheck | AxisCheck):
        return (check.input,)
    if isinstance(check, DimEqualCheck):
        return tuple(dict.fromkeys((check.a.input, check.b.input)))
    if isinstance(check, DimLiteralCheck):
        return (check.ref.input,)
    if isinstance(check, ShapeEqualCheck):
        return (check.a, check.b)
    return tuple(dict.fromkeys(ref.input for ref in check.expr.refs))
