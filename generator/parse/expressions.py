"""Python expressions in definitions (dims, references, gradients): parsed within limits."""

from __future__ import annotations

import ast

from generator.model.shapes import APPLY, DimExpr, DimRef
from generator.model.tensors import Attribute
from generator.model.types import INT64_MAX, INT64_MIN, AttrType
from generator.parse import read
from generator.source import Node

DIM_EXPRESSION_SYNTAX = (
    "dim symbols bound by the inputs, int attributes and integers with + - * // and parentheses"
)


_BINARY_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}


# Python's parser, ast.unparse and our own tree walks recurse: a few thousand unary minuses
# exhaust the stack. Expressions in definitions (dims, references, gradients, node attributes)
# are short and shallow, so anything beyond these limits is refused before it is walked.
MAX_EXPRESSION_LENGTH = 2000  # characters


MAX_EXPRESSION_DEPTH = 64  # levels of the syntax tree


def parse_expression(text: str) -> ast.Expression:
    """ast.parse(text, mode="eval") within the limits; SyntaxError for anything else."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise SyntaxError(
            f"{len(text)} characters long; an expression may have {MAX_EXPRESSION_LENGTH}"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError, ValueError):  # last resort; the length bounds these
        raise SyntaxError("nested too deeply") from None
    level = [tree]  # breadth first, level by level: no recursion
    for _ in range(MAX_EXPRESSION_DEPTH):
        level = [child for parent in level for child in ast.iter_child_nodes(parent)]
        if not level:
            return tree
    raise SyntaxError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep")


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
        allowed = (
            isinstance(sub, ast.Name | ast.Load | ast.BinOp)
            or type(sub) in _BINARY_OPS
            or (isinstance(sub, ast.Constant) and type(sub.value) is int)
        )
        if not allowed:
            raise node.error(f"'{text}': a dim expression uses {DIM_EXPRESSION_SYNTAX}")
        if isinstance(sub, ast.Constant):
            read.in_int64(sub.value, node)
    return tree


def dim_expression(
    text: str, node: Node, bound: dict[str, DimRef], attrs: dict[str, Attribute]
) -> DimExpr:
    def build(sub: ast.expr) -> DimExpr:
        if isinstance(sub, ast.Constant):
            return DimExpr("literal", value=sub.value, text=str(sub.value))
        if isinstance(sub, ast.Name):
            if sub.id in bound:
                return DimExpr("dim", ref=bound[sub.id], text=sub.id)
            if sub.id in attrs and attrs[sub.id].type is AttrType.int:
                return DimExpr("attr", attr=sub.id, text=sub.id)
            ints = sorted(name for name, a in attrs.items() if a.type is AttrType.int)
            raise node.error(
                f"'{sub.id}' in '{text}' is neither a dim symbol bound by an input shape "
                f"pattern {sorted(bound)} nor an int attribute {ints}"
            )
        expr = DimExpr(
            "binary",
            op=_BINARY_OPS[type(sub.op)],
            left=build(sub.left),
            right=build(sub.right),
            text=ast.unparse(sub),
        )
        # Constant parts are checked here, with the position: every emitter and runtime would
        # otherwise divide by zero (or overflow int64) on every call.
        divisor = _constant(expr.right)
        if expr.op == "//" and divisor is not None and divisor <= 0:
            always = "" if expr.right.kind == "literal" else f", which is always {divisor}"
            raise node.error(
                f"'{text}' divides by {expr.right.text}{always}; a divisor must be positive"
            )
        value = _constant(expr)
        if value is not None and not INT64_MIN <= value <= INT64_MAX:
            raise node.error(f"'{text}': {expr.text} = {value} is outside int64's range")
        return expr

    expr = build(dim_expression_tree(text, node))
    if (_constant(expr) or 0) < 0:
        raise node.error(f"'{text}' is always negative ({_constant(expr)}), so it is not a size")
    return expr


def _constant(expr: DimExpr) -> int | None:
    """The value of a part of a dim expression that reads no dim and no attribute."""
    if expr.kind == "literal":
        return expr.value
    if expr.kind != "binary":
        return None
    left, right = _constant(expr.left), _constant(expr.right)
    if left is None or right is None:
        return None
    return APPLY[expr.op](left, right)  # a zero divisor was rejected when it was built


REFERENCE_GLOBALS = {"torch", "F", "math"}


PYTHON_BUILTINS = frozenset(dir(__import__("builtins")))


def parse_reference(node: Node, names: set[str]) -> str:
    text = read.string(node, "a Python expression").strip()
    try:
        tree = parse_expression(text)
    except SyntaxError as exc:
        raise node.error(f"not a valid Python expression: {exc.msg}") from None
    free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    local = {
        target.id
        for comp in ast.walk(tree)
        if isinstance(comp, ast.comprehension)
        for target in ast.walk(comp.target)
        if isinstance(target, ast.Name)
    }
    lambda_args = {
        arg.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for arg in n.args.args
    }
    unknown = free - names - REFERENCE_GLOBALS - PYTHON_BUILTINS - local - lambda_args
    if unknown:
        raise node.error(
            f"uses undefined name(s) {sorted(unknown)}; available: inputs and attributes "
            f"{sorted(names)} and {sorted(REFERENCE_GLOBALS)}"
        )
    return text
