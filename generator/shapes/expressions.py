"""The syntax of dim expressions (`(L - window) // stride + 1`) and of shape functions
(`broadcast(A, B)`, `reduce(X, axis, keepdims)`), read into the model's DimExpr."""

from __future__ import annotations

import ast
import dataclasses
from typing import assert_never

from generator.model.shapes import (
    AttributeValue,
    Binary,
    BinaryOp,
    Constant,
    DimExpr,
    DimRef,
)
from generator.model.tensors import Attribute
from generator.model.types import INT64_MAX, INT64_MIN, AttrType
from generator.parse import read
from generator.parse.expressions import parse_expression
from generator.shapes.arithmetic import apply
from generator.source import Node

DIM_EXPRESSION_SYNTAX = (
    "dim symbols bound by the inputs, int attributes and integers with + - * // and parentheses"
)
SHAPE_FUNCTIONS = {
    "broadcast": (
        "broadcast(A, B, ...): the inputs' shapes broadcast together (numpy rules; a variadic "
        "input stands for all its values)"
    ),
    "reduce": "reduce(X, axis, keepdims): X's shape without `axis` (kept as 1 when keepdims)",
}

_BINARY_OPS: dict[type[ast.operator], BinaryOp] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
}


def _shown(text: str, limit: int = 80) -> str:
    """A quoted expression for a message, shortened if long."""
    return f"'{text}'" if len(text) <= limit else f"'{text[:limit]}...'"


def dim_expression_tree(text: str, node: Node) -> ast.expr:
    """Parses a dim expression and checks that it uses only the allowed syntax."""
    try:
        tree = parse_expression(text.strip()).body
    except SyntaxError as exc:
        raise node.error(f"{_shown(text)} is not a valid dim expression: {exc.msg}") from None
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Constant) and type(sub.value) is int:  # not bool, str or float
            read.in_int64(sub.value, node)
        elif not (isinstance(sub, ast.Name | ast.Load | ast.BinOp) or type(sub) in _BINARY_OPS):
            raise node.error(f"'{text}': a dim expression uses {DIM_EXPRESSION_SYNTAX}")
    return tree


def dim_expression(
    text: str, node: Node, bound: dict[str, DimRef], attrs: dict[str, Attribute]
) -> DimExpr:
    """The expression `text` of an output dim, over the dim symbols `bound` and int attributes;
    its constant parts are checked here (a divisor must be positive, values fit in int64)."""

    def build(sub: ast.expr) -> DimExpr:
        if isinstance(sub, ast.Constant) and type(sub.value) is int:  # the only constants allowed
            return Constant(sub.value, text=str(sub.value))
        if isinstance(sub, ast.Name):
            if sub.id in bound:
                return dataclasses.replace(bound[sub.id], text=sub.id)
            if sub.id in attrs and attrs[sub.id].type is AttrType.int:
                return AttributeValue(sub.id, text=sub.id)
            ints = sorted(name for name, a in attrs.items() if a.type is AttrType.int)
            raise node.error(
                f"'{sub.id}' in '{text}' is neither a dim symbol bound by an input shape "
                f"pattern {sorted(bound)} nor an int attribute {ints}"
            )
        assert isinstance(sub, ast.BinOp)  # dim_expression_tree allows nothing else
        expr = Binary(
            _BINARY_OPS[type(sub.op)], build(sub.left), build(sub.right), text=ast.unparse(sub)
        )
        # Constant parts are checked here, with the position: every emitter and runtime would
        # otherwise divide by zero (or overflow int64) on every call.
        divisor = constant_value(expr.right)
        if expr.op == "//" and divisor is not None and divisor <= 0:
            always = "" if isinstance(expr.right, Constant) else f", which is always {divisor}"
            raise node.error(
                f"'{text}' divides by {expr.right.text}{always}; a divisor must be positive"
            )
        value = constant_value(expr)
        if value is not None and not INT64_MIN <= value <= INT64_MAX:
            raise node.error(f"'{text}': {expr.text} = {value} is outside int64's range")
        return expr

    expr = build(dim_expression_tree(text, node))
    value = constant_value(expr)
    if value is not None and value < 0:
        raise node.error(f"'{text}' is always negative ({value}), so it is not a size")
    return expr


def constant_value(expr: DimExpr) -> int | None:
    """The value of a part of a dim expression that reads no dim and no attribute."""
    match expr:
        case Constant():
            return expr.value
        case DimRef() | AttributeValue():
            return None
        case Binary():
            left, right = constant_value(expr.left), constant_value(expr.right)
            if left is None or right is None:
                return None
            return apply(expr.op, left, right)  # a zero divisor was rejected when it was built
        case _:
            assert_never(expr)


def shape_function_call(node: Node) -> tuple[str, tuple[str, ...]]:
    """`broadcast(A, B)` or `reduce(X, axis, keepdims)` as (function, arguments as written)."""
    text = read.string(node)
    forms = "; ".join(SHAPE_FUNCTIONS.values())
    try:
        call = parse_expression(text.strip()).body
    except SyntaxError:
        call = None
    if (
        not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Name)
        or call.func.id not in SHAPE_FUNCTIONS
        or call.keywords
    ):
        raise node.error(f"'{text}' is not a shape; expected a list of dims, or one of: {forms}")
    args = []
    for arg in call.args:
        if isinstance(arg, ast.Name):
            args.append(arg.id)
        elif isinstance(arg, ast.Constant) and type(arg.value) in (int, bool):
            args.append(repr(arg.value))
        elif (
            isinstance(arg, ast.UnaryOp)
            and isinstance(arg.op, ast.USub)
            and isinstance(arg.operand, ast.Constant)
            and type(arg.operand.value) is int
        ):
            args.append(repr(-arg.operand.value))
        else:
            raise node.error(f"'{text}': arguments are names or integer/boolean literals")
    return call.func.id, tuple(args)
