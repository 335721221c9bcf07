"""A shape rule applied to concrete or named dims, as ONNX shape inference does (tests, docs)."""

from __future__ import annotations

from typing import Any

from generator.model.op import OpDef
from generator.model.shapes import DimRef

UNKNOWN_DIM = "?"


def evaluate_output_shapes(
    op: OpDef,
    input_dims: dict[str, list[int | str]],
    attributes: dict[str, Any],
    mark_data_dependent: bool = False,
) -> dict[str, list[int | str]]:
    """Applies the shape rule to concrete dims or named (symbolic) ones, as ONNX shape
    inference does: a named dim is copied, a dim computed from a named one is unknown ("?"),
    broadcasting follows ONNX's multidirectional rule. With `mark_data_dependent`, a
    data-dependent size is "?" followed by its symbol ("?M"). For tests and docs."""
    values = {a.name: a.default for a in op.attributes if not a.required} | dict(attributes)

    def attr(name: str) -> int:
        return int(values[name])

    def dim(ref: DimRef) -> int:
        value = input_dims[ref.input][ref.axis]
        if isinstance(value, str):
            raise LookupError(value)
        return value

    result = {}
    for out in op.shape_rule.outputs:
        dims: list[int | str] = []
        for part in out.parts:
            if part.kind == "slice":
                dims.extend(input_dims[part.input][part.start : part.stop])
            elif part.kind == "expr" and part.expr.kind == "dim":
                dims.append(input_dims[part.expr.ref.input][part.expr.ref.axis])
            elif part.kind == "expr" and part.expr.kind == "dynamic":
                dims.append(UNKNOWN_DIM + (part.expr.text if mark_data_dependent else ""))
            elif part.kind == "expr":
                try:
                    dims.append(part.expr.evaluate(dim, attr))
                except LookupError:
                    dims.append(UNKNOWN_DIM)
            elif part.kind == "broadcast":
                present = [input_dims[name] for name, _ in part.operands if name in input_dims]
                dims.extend(_broadcast_named(present))
            else:
                source = list(input_dims[part.input])
                axis = part.axis.evaluate(dim, attr) % len(source)
                keep = part.keepdims.evaluate(dim, attr)
                dims.extend(source[:axis] + ([1] if keep else []) + source[axis + 1 :])
        result[out.output] = dims
    return result


def _broadcast_named(shapes: list[list[int | str]]) -> list[int | str]:
    rank = max(len(shape) for shape in shapes)
    result: list[int | str] = []
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
