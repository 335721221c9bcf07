"""Python expressions in definitions (dims, references, gradients, node attributes): parsed within
limits; references are checked to use only names they can see."""

from __future__ import annotations

import ast
import symtable
from collections.abc import Iterable
from keyword import kwlist

from generator.model.expressions import EXPRESSION_BUILTINS, EXPRESSION_MODULE_NAMES
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


def undefined_names(text: str, parameters: Iterable[str]) -> set[str]:
    """The names an expression reads that neither `parameters` (the generated function's, where
    it is evaluated) nor the expression binds (a lambda's parameters of every kind, a
    comprehension's variables, `:=`), and that EXPRESSION_MODULES and the builtins do not name:
    Python's own symbol table decides what is free. SyntaxError where Python's compiler refuses
    the expression (`yield` outside a lambda, `:=` rebinding a comprehension's variable, ...)."""
    compile(text, "<expression>", "eval", dont_inherit=True)  # the compiler's checks, yield's
    params = sorted({name for name in parameters if name.isidentifier()} - set(kwlist))
    source = f"def _expression({', '.join(params)}):\n    return (\n{text}\n    )\n"
    tables = symtable.symtable(source, "<expression>", "exec").get_children()
    free: set[str] = set()
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        free |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
    return free - EXPRESSION_MODULE_NAMES - EXPRESSION_BUILTINS


def pasteable_expression(text: str) -> str:
    """The expression as every generated module pastes it (after `return`, as a tuple's item, as
    a call's argument): Python's own unparse of its syntax tree, parenthesized. Comments, line
    continuations and line breaks are the source's, not the expression's, and unparse leaves them
    out; the parentheses keep a top-level tuple, lambda or conditional one value wherever it is
    pasted. SyntaxError for what is not one expression, or whose unparse Python would read
    differently (checked: the unparsed text parses back to the same tree)."""
    tree = parse_expression(text)
    try:
        unparsed = ast.unparse(tree)
        same = ast.dump(ast.parse(unparsed, mode="eval")) == ast.dump(tree)
    except (ValueError, SyntaxError, RecursionError):
        same = False
    if not same:
        raise SyntaxError("Python cannot write it back as one expression; simplify it")
    return f"({unparsed})"


def parse_reference(node: Node, names: set[str], described: str = "inputs and attributes") -> str:
    """A Python expression over `names` (described so in the error) and what every expression
    may name (generator/model/expressions.py), as generated modules paste it
    (pasteable_expression)."""
    text = read.string(node, "a Python expression").strip()
    try:
        pasted = pasteable_expression(text)
        unknown = undefined_names(text, names)
    except SyntaxError as exc:
        raise node.error(f"not a valid Python expression: {exc.msg}") from None
    if unknown:
        raise node.error(
            f"uses undefined name(s) {sorted(unknown)}; available: {described} "
            f"{sorted(names)}, {sorted(EXPRESSION_MODULE_NAMES)} and Python's builtins"
        )
    return pasted
