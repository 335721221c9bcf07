"""Compiling input patterns and output shapes into a ShapeRule: checks and output parts."""

from __future__ import annotations

import ast

from generator.model.shapes import (
    AllowedValuesCheck,
    AxisCheck,
    DimEqualCheck,
    DimExpr,
    DimLiteralCheck,
    DimRef,
    ExprCheck,
    OutputShape,
    RangeCheck,
    RankCheck,
    ShapeEqualCheck,
    ShapePart,
    ShapeRule,
)
from generator.model.tensors import Attribute, TensorParam
from generator.model.types import AttrType, message_value, message_values
from generator.parse import read
from generator.parse.expressions import dim_expression
from generator.parse.tensors import SHAPE_FUNCTIONS
from generator.source import Node


def _range_message(op_type: str, attr: Attribute) -> str:
    lo, hi = attr.minimum, attr.maximum
    if lo is not None and hi is not None:
        bound = f"between {message_value(lo)} and {message_value(hi)}"
    else:
        bound = (
            f"at least {message_value(lo)}" if lo is not None else f"at most {message_value(hi)}"
        )
    return f"{op_type}: attribute '{attr.name}' must be {bound}"


def compile_shape_rule(
    op_type: str,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    inputs_node: Node,
    node: Node,
    data_dependent: tuple[str, ...] = (),
) -> ShapeRule:
    """Turn the input patterns and output rules into checks and output shape parts."""
    rank_checks: list[RankCheck] = []
    dim_checks: list[DimEqualCheck | DimLiteralCheck] = []
    bound: dict[str, DimRef] = {}
    bound_by_optional: set[str] = set()  # symbols an output cannot use (the input may be absent)
    ellipsis_inputs: list[tuple[int, TensorParam]] = []
    for index, tensor in enumerate(inputs):
        pattern = tensor.shape
        if pattern is None:
            continue
        exact = pattern.ellipsis_index is None
        relation = "exactly" if exact else "at least"
        if exact or pattern.fixed_rank > 0:  # `[...]` accepts every rank
            rank_checks.append(
                RankCheck(
                    tensor.name,
                    index,
                    exact,
                    pattern.fixed_rank,
                    f"{op_type}: input '{tensor.name}' must have {relation} rank {pattern.fixed_rank} "
                    f"(shape {pattern})",
                )
            )
        if not exact and not tensor.optional:
            ellipsis_inputs.append((index, tensor))
        for position, dim in enumerate(pattern.dims):
            if dim.kind == "ellipsis":
                continue
            ref = DimRef(tensor.name, index, pattern.axis_of(position))
            if dim.kind == "literal":
                dim_checks.append(
                    DimLiteralCheck(
                        ref,
                        dim.value,
                        f"{op_type}: axis {ref.axis} of input '{tensor.name}' must be {dim.value} "
                        f"(shape {pattern})",
                    )
                )
            elif dim.symbol in bound:
                first = bound[dim.symbol]
                dim_checks.append(
                    DimEqualCheck(
                        first,
                        ref,
                        f"{op_type}: dimension {dim.symbol} must agree: axis {first.axis} of "
                        f"input '{first.input}' and axis {ref.axis} of input '{tensor.name}' "
                        f"differ (shape {pattern})",
                    )
                )
            else:
                bound[dim.symbol] = ref
                if tensor.optional:
                    bound_by_optional.add(dim.symbol)
    if len(ellipsis_inputs) > 1:
        raise node.error("only one input may use '...' for now (no broadcasting of batch dims yet)")
    by_name = {t.name: (i, t) for i, t in enumerate(inputs)}
    shape_checks = []
    for index, tensor in enumerate(inputs):
        if tensor.same_shape_as is None:
            continue
        if tensor.same_shape_as not in by_name or by_name[tensor.same_shape_as][0] >= index:
            raise inputs_node.value[index].error(
                f"input '{tensor.name}': same_shape_as '{tensor.same_shape_as}' must name an "
                "earlier input"
            )
        first = tensor.same_shape_as
        shape_checks.append(
            ShapeEqualCheck(
                first,
                by_name[first][0],
                tensor.name,
                index,
                f"{op_type}: input '{tensor.name}' must have the shape of input '{first}'",
            )
        )
    shapes = []
    expr_checks: list[ExprCheck] = []
    axis_checks: list[AxisCheck] = []
    output_nodes = node.value if node.is_sequence else []
    required_bound = {k: v for k, v in bound.items() if k not in bound_by_optional}
    for position, output in enumerate(outputs):
        where = output_nodes[position] if position < len(output_nodes) else node
        if output.same_shape_as is not None:
            if output.same_shape_as not in by_name or by_name[output.same_shape_as][1].optional:
                raise where.error(
                    f"output '{output.name}': same_shape_as '{output.same_shape_as}' is not a "
                    "required input"
                )
            index, _ = by_name[output.same_shape_as]
            parts = (ShapePart("slice", output.same_shape_as, index),)
        elif output.shape_function is not None:
            part = _shape_function_part(op_type, output, by_name, attrs, where)
            checked = {(c.input, c.axis) for c in axis_checks}
            if part.kind == "reduce" and (part.input, part.axis) not in checked:
                axis_checks.append(
                    AxisCheck(
                        part.input,
                        part.input_index,
                        part.axis,
                        f"{op_type}: reduction axis {part.axis.text} is out of range for input "
                        f"'{part.input}'",
                    )
                )
            parts = (part,)
        elif output.shape is None:
            continue  # no rule: allowed where nothing needs it (checked by the caller)
        else:
            parts_list = []
            for dim in output.shape.dims:
                if dim.kind == "ellipsis":
                    if not ellipsis_inputs:
                        raise where.error(
                            f"output '{output.name}' uses '...' but no input pattern has '...'"
                        )
                    index, source = ellipsis_inputs[0]
                    pattern = source.shape
                    ell = pattern.ellipsis_index
                    after = len(pattern.dims) - ell - 1
                    parts_list.append(
                        ShapePart(
                            "slice", source.name, index, ell or None, -after if after else None
                        )
                    )
                    continue
                if dim.kind == "literal":
                    expr = DimExpr("literal", value=dim.value)
                elif dim.kind == "symbol" and dim.symbol in data_dependent:
                    if dim.symbol in bound:
                        raise where.error(
                            f"output '{output.name}': '{dim.symbol}' is bound by an input shape "
                            "pattern, so it cannot be a data-dependent size"
                        )
                    expr = DimExpr("dynamic", text=dim.symbol)
                elif dim.kind == "symbol" and dim.symbol in required_bound:
                    expr = DimExpr("dim", ref=bound[dim.symbol])
                elif dim.kind == "symbol" and dim.symbol not in attrs:
                    raise where.error(
                        f"output '{output.name}': dimension symbol '{dim.symbol}' is not bound "
                        f"by any required input's shape pattern (bound: {sorted(required_bound)})"
                    )
                else:
                    expr = dim_expression(dim.symbol, where, required_bound, attrs)
                parts_list.append(ShapePart("expr", expr=expr))
                if expr.kind != "dim" and expr.kind != "literal":
                    expr_checks += _expression_checks(op_type, output.name, expr)
            parts = tuple(parts_list)
        shapes.append(OutputShape(output.name, parts))
    attribute_checks: tuple[AllowedValuesCheck | RangeCheck, ...] = tuple(
        AllowedValuesCheck(
            a.name,
            a.allowed,
            f"{op_type}: attribute '{a.name}' must be one of {message_values(a.allowed)}",
        )
        for a in attrs.values()
        if a.allowed is not None
    ) + tuple(
        RangeCheck(a.name, a.minimum, a.maximum, _range_message(op_type, a))
        for a in attrs.values()
        if a.minimum is not None or a.maximum is not None
    )
    return ShapeRule(
        attribute_checks,
        tuple(rank_checks),
        tuple(dim_checks),
        tuple(shape_checks),
        tuple(axis_checks),
        tuple(expr_checks),
        tuple(shapes),
    )


def _expression_checks(op_type: str, output: str, expr: DimExpr) -> list[ExprCheck]:
    """Every divisor must be positive, and the dim itself must not be negative."""
    checks = []
    for sub in expr.walk():
        if sub.op == "//" and not (sub.right.kind == "literal" and sub.right.value > 0):
            checks.append(
                ExprCheck(
                    sub.right,
                    True,
                    f"{op_type}: the divisor {sub.right.text} in the shape of "
                    f"output '{output}' must be positive",
                )
            )
    if any(sub.op == "-" for sub in expr.walk()) or expr.attrs:  # an attribute may be negative
        checks.append(
            ExprCheck(
                expr,
                False,
                f"{op_type}: output '{output}' would have a negative dim {expr.text}",
            )
        )
    return checks


def _shape_function_part(
    op_type: str,
    output: TensorParam,
    by_name: dict[str, tuple[int, TensorParam]],
    attrs: dict[str, Attribute],
    where: Node,
) -> ShapePart:
    kind, args = output.shape_function
    if kind == "broadcast":
        if len(args) < 2 or any(a not in by_name for a in args) or len(set(args)) != len(args):
            raise where.error(
                f"output '{output.name}': broadcast(...) takes two or more distinct input names "
                f"(inputs: {sorted(by_name)})"
            )
        return ShapePart(
            "broadcast",
            operands=tuple((name, by_name[name][0]) for name in args),
            message=f"{op_type}: inputs {', '.join(repr(a) for a in args)} cannot be broadcast "
            "together, got ",
        )
    if len(args) != 3 or args[0] not in by_name or by_name[args[0]][1].optional:
        raise where.error(
            f"output '{output.name}': expected {SHAPE_FUNCTIONS['reduce']} with X a required input"
        )

    def attribute_or_literal(text: str, types: tuple[AttrType, ...], what: str) -> DimExpr:
        if text in attrs and attrs[text].type in types:
            return DimExpr("attr", attr=text, text=f"'{text}'")
        try:
            value = int(ast.literal_eval(text))
        except ValueError:
            names = sorted(n for n, a in attrs.items() if a.type in types)
            raise where.error(
                f"output '{output.name}': {what} '{text}' must be a literal or an attribute of "
                f"type {'/'.join(t.value for t in types)} {names}"
            ) from None
        return DimExpr("literal", value=read.in_int64(value, where), text=text)

    axis = attribute_or_literal(args[1], (AttrType.int,), "axis")
    keepdims = attribute_or_literal(args[2], (AttrType.bool, AttrType.int), "keepdims")
    return ShapePart("reduce", args[0], by_name[args[0]][0], axis=axis, keepdims=keepdims)
