"""One walk of a shape rule for every target. A target (PyTorch, ONNX inference in Python, C++ on
concrete or on symbolic dims, the evaluator) implements the protocols below, one method per
variant; the walkers here do the rest: the order of the checks, each check's message, and which
checks an absent optional input turns off. A new check or part kind is a new method in every
target, and the type checker lists the targets that lack it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar, assert_never

from generator.model.shapes import (
    AllowedValuesCheck,
    AttributeCheck,
    AttributeValue,
    AxisCheck,
    Binary,
    BinaryOp,
    BroadcastPart,
    Constant,
    DataDependentPart,
    DimEqualCheck,
    DimExpr,
    DimLiteralCheck,
    DimPart,
    DimRef,
    ExprCheck,
    InputCheck,
    OutputShape,
    RangeCheck,
    RankCheck,
    ReducePart,
    ShapeEqualCheck,
    ShapePart,
    ShapeRule,
    SlicePart,
)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ExprAlgebra(Protocol[T]):
    """What a dim expression's leaves and operators are in one target."""

    def input_dim(self, ref: DimRef) -> T: ...

    def constant(self, value: int) -> T: ...

    def attribute(self, name: str) -> T: ...

    def binary(self, op: BinaryOp, left: T, right: T) -> T: ...


def fold(expr: DimExpr, algebra: ExprAlgebra[T]) -> T:
    match expr:
        case DimRef():
            return algebra.input_dim(expr)
        case Constant():
            return algebra.constant(expr.value)
        case AttributeValue():
            return algebra.attribute(expr.name)
        case Binary():
            return algebra.binary(expr.op, fold(expr.left, algebra), fold(expr.right, algebra))
        case _:
            assert_never(expr)


@dataclass(frozen=True)
class Test:
    """A check in a target's syntax: the condition that must hold and the expression of what
    the check got (appended to its message)."""

    condition: str
    got: str


@dataclass(frozen=True)
class SpelledCheck:
    """What templates render: `if not condition: fail(message + got)`, in the target's syntax."""

    condition: str
    message: str  # a string literal
    got: str


class CheckSpelling(Protocol):
    def allowed_values(self, check: AllowedValuesCheck) -> Test: ...

    def value_range(self, check: RangeCheck) -> Test: ...

    def rank(self, check: RankCheck) -> Test: ...

    def dim_equal(self, check: DimEqualCheck) -> Test: ...

    def dim_literal(self, check: DimLiteralCheck) -> Test: ...

    def shape_equal(self, check: ShapeEqualCheck) -> Test: ...

    def axis(self, check: AxisCheck) -> Test: ...

    def expr(self, check: ExprCheck) -> Test: ...

    def string_literal(self, text: str) -> str: ...

    def absent(self, input: str) -> str:
        """The condition that optional input `input` is absent."""
        ...

    def either(self, conditions: list[str]) -> str:
        """The language's `or` of conditions."""
        ...


def _test_and_got_label(
    check: AttributeCheck | InputCheck, spelling: CheckSpelling
) -> tuple[Test, str]:
    """The check in the spelling, and how its message introduces what it got (the same in every
    target: messages are compared across runtimes)."""
    match check:
        case AllowedValuesCheck():
            return spelling.allowed_values(check), ", got "
        case RangeCheck():
            return spelling.value_range(check), ", got "
        case RankCheck():
            return spelling.rank(check), ", got shape "
        case DimEqualCheck():
            return spelling.dim_equal(check), ", got "
        case DimLiteralCheck():
            return spelling.dim_literal(check), ", got "
        case ShapeEqualCheck():
            return spelling.shape_equal(check), ", got "
        case AxisCheck():
            return spelling.axis(check), ", got axis "
        case ExprCheck():
            return spelling.expr(check), ", got "
        case _:
            assert_never(check)


def _spelled(check: AttributeCheck | InputCheck, spelling: CheckSpelling) -> SpelledCheck:
    test, label = _test_and_got_label(check, spelling)
    return SpelledCheck(test.condition, spelling.string_literal(check.message + label), test.got)


def spell_attribute_checks(rule: ShapeRule, spelling: CheckSpelling) -> list[SpelledCheck]:
    """The checks on attribute values, in the order every runtime runs them."""
    return spell_checks(rule.attribute_checks, spelling)


def spell_checks(checks: Iterable[AttributeCheck], spelling: CheckSpelling) -> list[SpelledCheck]:
    return [_spelled(check, spelling) for check in checks]


def spell_input_checks(
    rule: ShapeRule, spelling: CheckSpelling, optional_inputs: frozenset[str]
) -> list[SpelledCheck]:
    """The checks on input shapes, in the order every runtime runs them; a check that reads an
    optional input passes when that input is absent."""
    result = []
    for check in rule.input_checks:
        spelled = _spelled(check, spelling)
        absent = [spelling.absent(name) for name in check.inputs_read if name in optional_inputs]
        if absent:
            condition = spelling.either(absent + [f"({spelled.condition})"])
            spelled = SpelledCheck(condition, spelled.message, spelled.got)
        result.append(spelled)
    return result


def spell_all_checks(
    rule: ShapeRule, spelling: CheckSpelling, optional_inputs: frozenset[str]
) -> list[SpelledCheck]:
    """The attribute checks, then the input checks: what a kernel runs before it computes."""
    return spell_attribute_checks(rule, spelling) + spell_input_checks(
        rule, spelling, optional_inputs
    )


class PartSpelling(Protocol[T_co]):
    """What each part of an output shape is in one target."""

    def slice_part(self, part: SlicePart) -> T_co: ...

    def dim_part(self, part: DimPart) -> T_co: ...

    def data_dependent_part(self, part: DataDependentPart) -> T_co: ...

    def broadcast_part(self, part: BroadcastPart) -> T_co: ...

    def reduce_part(self, part: ReducePart) -> T_co: ...


def spell_part(part: ShapePart, spelling: PartSpelling[T]) -> T:
    match part:
        case SlicePart():
            return spelling.slice_part(part)
        case DimPart():
            return spelling.dim_part(part)
        case DataDependentPart():
            return spelling.data_dependent_part(part)
        case BroadcastPart():
            return spelling.broadcast_part(part)
        case ReducePart():
            return spelling.reduce_part(part)
        case _:
            assert_never(part)


def spell_parts(shape: OutputShape, spelling: PartSpelling[T]) -> list[T]:
    return [spell_part(part, spelling) for part in shape.parts]
