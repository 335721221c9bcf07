"""Python expressions in definitions (dims, references, gradients, node attributes): parsed within
limits; references are checked to use only names they can see."""

from __future__ import annotations

import ast

from generator.parse import read
from generator.source import Node

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
    level: list[ast.AST] = [tree]  # breadth first, level by level: no recursion
    for _ in range(MAX_EXPRESSION_DEPTH):
        level = [child for parent in level for child in ast.iter_child_nodes(parent)]
        if not level:
            return tree
    raise SyntaxError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep")


REFERENCE_GLOBALS = {"torch", "F", "math", "np"}
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
