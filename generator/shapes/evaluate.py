"""A shape rule applied to concrete or named dims, as ONNX shape inference does (tests, docs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.model.op import OpDef
from generator.model.shapes import (
    BinaryOp,
    BroadcastPart,
    DataDependentPart,
    DimPart,
    DimRef,
    ReducePart,
    SlicePart,
)
from generator.model.tensors import value_name, value_names
from generator.shapes.arithmetic import apply
from generator.shapes.spell import fold, spell_parts

UNKNOWN_DIM = "?"
Dims = list[int | str]


class _NamedDim(LookupError):
    """An expression read a named (unknown) dim: its value is unknown too."""


@dataclass(frozen=True)
class _Evaluator:
    input_dims: dict[str, Dims]
    attributes: dict[str, Any]
    mark_data_dependent: bool

    # ExprAlgebra[int]
    def input_dim(self, ref: DimRef) -> int:
        value = self.input_dims[ref.input][ref.axis]
        if isinstance(value, str):
            raise _NamedDim(value)
        return value

    def constant(self, value: int) -> int:
        return value

    def attribute(self, name: str) -> int:
        return int(self.attributes[name])

    def binary(self, op: BinaryOp, left: int, right: int) -> int:
        return apply(op, left, right)

    # PartSpelling[Dims]
    def slice_part(self, part: SlicePart) -> Dims:
        return self.input_dims[part.input][part.start : part.stop]

    def dim_part(self, part: DimPart) -> Dims:
        if isinstance(part.expr, DimRef):  # copied: a named dim stays named
            return [self.input_dims[part.expr.input][part.expr.axis]]
        try:
            return [fold(part.expr, self)]
        except LookupError:  # a named dim (or a value the case does not give): unknown
            return [UNKNOWN_DIM]

    def data_dependent_part(self, part: DataDependentPart) -> Dims:
        return [UNKNOWN_DIM + (part.symbol if self.mark_data_dependent else "")]

    def broadcast_part(self, part: BroadcastPart) -> Dims:
        names = [
            value
            for name in part.operands
            for value in (value_names(name, self.input_dims) if name in part.variadic else [name])
        ]
        return _broadcast_named(
            [self.input_dims[name] for name in names if name in self.input_dims]
        )

    def reduce_part(self, part: ReducePart) -> Dims:
        source = list(self.input_dims[part.input])
        axis = fold(part.axis, self) % len(source)
        keep = fold(part.keepdims, self)
        return source[:axis] + ([1] if keep else []) + source[axis + 1 :]


def evaluate_output_shapes(
    op: OpDef,
    input_dims: dict[str, Dims],
    attributes: dict[str, Any],
    mark_data_dependent: bool = False,
) -> dict[str, Dims]:
    """Applies the shape rule to concrete dims or named (symbolic) ones, as ONNX shape
    inference does: a named dim is copied, a dim computed from a named one is unknown ("?"),
    broadcasting follows ONNX's multidirectional rule. With `mark_data_dependent`, a
    data-dependent size is "?" followed by its symbol ("?M"). For tests and docs."""
    values = {a.name: a.default for a in op.attributes if not a.required} | dict(attributes)
    evaluator = _Evaluator(input_dims, values, mark_data_dependent)
    result: dict[str, Dims] = {}
    for shape in op.shape_rule.outputs:
        if shape.values_of is None:
            result[shape.output] = [d for dims in spell_parts(shape, evaluator) for d in dims]
            continue
        # A variadic output by its values (Y_0, Y_1, ...), each its paired input value's dims.
        for index, value in enumerate(value_names(shape.values_of, input_dims)):
            result[value_name(shape.output, index)] = list(input_dims[value])
    return result


def _broadcast_named(shapes: list[Dims]) -> Dims:
    rank = max(len(shape) for shape in shapes)
    result: Dims = []
    for i in range(rank):
        column = [shape[i - rank + len(shape)] for shape in shapes if i >= rank - len(shape)]
        known = {d for d in column if isinstance(d, int) and d != 1}
        named = {d for d in column if isinstance(d, str)}
        if known or not named:
            result.append(known.pop() if known else 1)
        else:
            result.append(
                named.pop() if len(named) == 1 and UNKNOWN_DIM not in named else UNKNOWN_DIM
            )
    return result
