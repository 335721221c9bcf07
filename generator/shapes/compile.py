"""Compiling input patterns and output shapes into a ShapeRule: checks and output parts.

Every message a check reports is composed here, once: each target spells the check and appends
what it got."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import assert_never

from generator.model.shapes import (
    AllowedValuesCheck,
    AttributeCheck,
    AttributeValue,
    AxisCheck,
    Binary,
    BroadcastPart,
    Constant,
    DataDependentPart,
    DimEqualCheck,
    DimExpr,
    DimLiteralCheck,
    DimPart,
    DimRef,
    ExprCheck,
    OutputShape,
    RangeCheck,
    RankCheck,
    ReducePart,
    ShapeEqualCheck,
    ShapePart,
    ShapeRule,
    SlicePart,
    attributes_read,
    subexpressions,
)
from generator.model.tensors import (
    AnyDims,
    Attribute,
    ExpressionDim,
    LiteralDim,
    ShapePattern,
    SymbolDim,
    TensorParam,
    VariadicArity,
)
from generator.model.types import AttrType, TypeConstraint, message_value, message_values
from generator.parse import read
from generator.shapes.expressions import SHAPE_FUNCTIONS, dim_expression
from generator.source import Node


@dataclass
class _InputPatterns:
    """What the input patterns give the output shapes: bound symbols and checks."""

    rank_checks: list[RankCheck] = field(default_factory=list)
    dim_checks: list[DimEqualCheck | DimLiteralCheck] = field(default_factory=list)
    bound: dict[str, DimRef] = field(default_factory=dict)
    bound_by_optional: set[str] = field(default_factory=set)  # an output cannot use these
    ellipsis_inputs: list[TensorParam] = field(default_factory=list)  # required ones

    @property
    def required_bound(self) -> dict[str, DimRef]:
        return {k: v for k, v in self.bound.items() if k not in self.bound_by_optional}


@dataclass
class _OutputChecks:
    """Checks that output shapes add: axes in range, computed dims not negative."""

    expr_checks: list[ExprCheck] = field(default_factory=list)
    axis_checks: list[AxisCheck] = field(default_factory=list)


def compile_shape_rule(
    op_type: str,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    inputs_node: Node,
    node: Node,
    data_dependent: tuple[str, ...] = (),
    type_choosers: dict[str, TypeConstraint] | None = None,
) -> ShapeRule:
    """Turn the input patterns and output rules into checks and output shape parts.
    `type_choosers`: attribute -> the type variable it chooses (its values are dtype numbers)."""
    for index, tensor in enumerate(inputs):
        if tensor.variadic and (tensor.shape is not None or tensor.same_shape_as is not None):
            raise inputs_node.value[index].error(
                f"input '{tensor.name}': a variadic input takes no shape pattern or "
                "same_shape_as yet (its values may have any shape; broadcast(...) combines them)"
            )
    patterns = _input_patterns(op_type, inputs)
    if len(patterns.ellipsis_inputs) > 1:
        raise node.error("only one input may use '...' for now (no broadcasting of batch dims yet)")
    shape_checks = _same_shape_checks(op_type, inputs, inputs_node)
    added = _OutputChecks()
    output_nodes = node.value if node.is_sequence else []
    shapes = []
    for position, output in enumerate(outputs):
        where = output_nodes[position] if position < len(output_nodes) else node
        if output.variadic:
            ruled = output.same_shape_as or output.shape or output.shape_function
            if ruled:  # (none: an interface-only op's, or the caller says it needs one)
                shapes.append(_paired_values(output, inputs, where))
            continue
        parts = _output_parts(
            op_type, output, inputs, attrs, patterns, data_dependent, added, where
        )
        if parts is not None:
            shapes.append(OutputShape(output.name, parts))
    return ShapeRule(
        _attribute_checks(op_type, attrs, type_choosers or {}),
        tuple(patterns.rank_checks),
        tuple(patterns.dim_checks),
        shape_checks,
        tuple(added.axis_checks),
        tuple(added.expr_checks),
        tuple(shapes),
    )


def _input_patterns(op_type: str, inputs: tuple[TensorParam, ...]) -> _InputPatterns:
    result = _InputPatterns()
    for tensor in inputs:
        pattern = tensor.shape
        if pattern is None:
            continue
        exact = pattern.ellipsis_index is None
        relation = "exactly" if exact else "at least"
        if exact or pattern.fixed_rank > 0:  # `[...]` accepts every rank
            result.rank_checks.append(
                RankCheck(
                    tensor.name,
                    exact,
                    pattern.fixed_rank,
                    f"{op_type}: input '{tensor.name}' must have {relation} rank {pattern.fixed_rank} "
                    f"(shape {pattern})",
                )
            )
        if not exact and not tensor.optional:
            result.ellipsis_inputs.append(tensor)
        for position, dim in enumerate(pattern.dims):
            ref = DimRef(tensor.name, pattern.axis_of(position))
            match dim:
                case AnyDims():
                    pass
                case LiteralDim():
                    result.dim_checks.append(
                        DimLiteralCheck(
                            ref,
                            dim.value,
                            f"{op_type}: axis {ref.axis} of input '{tensor.name}' must be "
                            f"{dim.value} (shape {pattern})",
                        )
                    )
                case SymbolDim() if dim.symbol in result.bound:
                    first = result.bound[dim.symbol]
                    result.dim_checks.append(
                        DimEqualCheck(
                            first,
                            ref,
                            f"{op_type}: dimension {dim.symbol} must agree: axis {first.axis} of "
                            f"input '{first.input}' and axis {ref.axis} of input '{tensor.name}' "
                            f"differ (shape {pattern})",
                        )
                    )
                case SymbolDim():
                    result.bound[dim.symbol] = ref
                    if tensor.optional:
                        result.bound_by_optional.add(dim.symbol)
                case ExpressionDim():  # the parser allows expressions in outputs only
                    raise AssertionError(f"an expression in input '{tensor.name}'s pattern")
                case _:
                    assert_never(dim)
    return result


def _same_shape_checks(
    op_type: str, inputs: tuple[TensorParam, ...], inputs_node: Node
) -> tuple[ShapeEqualCheck, ...]:
    index_of = {t.name: i for i, t in enumerate(inputs)}
    checks = []
    for index, tensor in enumerate(inputs):
        first = tensor.same_shape_as
        if first is None:
            continue
        if first not in index_of or index_of[first] >= index or inputs[index_of[first]].variadic:
            raise inputs_node.value[index].error(
                f"input '{tensor.name}': same_shape_as '{first}' must name an earlier input "
                "(not a variadic one)"
            )
        checks.append(
            ShapeEqualCheck(
                first,
                tensor.name,
                f"{op_type}: input '{tensor.name}' must have the shape of input '{first}'",
            )
        )
    return tuple(checks)


def _paired_values(
    output: TensorParam, inputs: tuple[TensorParam, ...], where: Node
) -> OutputShape:
    """A variadic output pairs with the variadic input it has the shape of: one value per value,
    each with that value's shape (its only shape rule yet)."""
    source = next((t for t in inputs if t.name == output.same_shape_as), None)
    if source is None or not source.variadic:
        raise where.error(
            f"output '{output.name}': a variadic output takes 'same_shape_as: <the variadic "
            "input>' (one value per value of it, each with its value's shape; other shape "
            "rules for a variadic output are not carried yet)"
        )
    assert isinstance(output.arity, VariadicArity) and isinstance(source.arity, VariadicArity)
    if output.arity.min_arity != source.arity.min_arity:
        raise where.error(
            f"output '{output.name}': its minimum ({output.arity.min_arity}) must be that of "
            f"input '{source.name}' ({source.arity.min_arity}), whose values it pairs with"
        )
    return OutputShape(output.name, (), values_of=source.name)


def _output_parts(
    op_type: str,
    output: TensorParam,
    inputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    patterns: _InputPatterns,
    data_dependent: tuple[str, ...],
    added: _OutputChecks,
    where: Node,
) -> tuple[ShapePart, ...] | None:
    """One output's shape as parts (None: the output has no rule, which the caller checks)."""
    by_name = {t.name: t for t in inputs}
    if output.same_shape_as is not None:
        source = by_name.get(output.same_shape_as)
        if source is None or source.optional or source.variadic:
            raise where.error(
                f"output '{output.name}': same_shape_as '{output.same_shape_as}' is not a "
                "required input (a variadic one: broadcast(...) its values)"
            )
        return (SlicePart(output.same_shape_as),)
    if output.shape_function is not None:
        part = _shape_function_part(op_type, output, by_name, attrs, where)
        checked = {(c.input, c.axis) for c in added.axis_checks}
        if isinstance(part, ReducePart) and (part.input, part.axis) not in checked:
            added.axis_checks.append(
                AxisCheck(
                    part.input,
                    part.axis,
                    f"{op_type}: reduction axis {part.axis.text} is out of range for input "
                    f"'{part.input}'",
                )
            )
        return (part,)
    if output.shape is None:
        return None
    return tuple(
        _pattern_part(op_type, output, dim, attrs, patterns, data_dependent, added, where)
        for dim in output.shape.dims
    )


def _pattern_part(
    op_type: str,
    output: TensorParam,
    dim: AnyDims | SymbolDim | LiteralDim | ExpressionDim,
    attrs: dict[str, Attribute],
    patterns: _InputPatterns,
    data_dependent: tuple[str, ...],
    added: _OutputChecks,
    where: Node,
) -> ShapePart:
    """The part one entry of an output's pattern stands for."""
    expr: DimExpr
    match dim:
        case AnyDims():
            if not patterns.ellipsis_inputs:
                raise where.error(
                    f"output '{output.name}' uses '...' but no input pattern has '...'"
                )
            source = patterns.ellipsis_inputs[0]
            pattern: ShapePattern | None = source.shape
            assert pattern is not None and pattern.ellipsis_index is not None
            ell = pattern.ellipsis_index
            after = len(pattern.dims) - ell - 1
            return SlicePart(source.name, ell or None, -after if after else None)
        case LiteralDim():
            return DimPart(Constant(dim.value))
        case SymbolDim() if dim.symbol in data_dependent:
            if dim.symbol in patterns.bound:
                raise where.error(
                    f"output '{output.name}': '{dim.symbol}' is bound by an input shape "
                    "pattern, so it cannot be a data-dependent size"
                )
            return DataDependentPart(dim.symbol)
        case SymbolDim() if dim.symbol in patterns.required_bound:
            return DimPart(patterns.bound[dim.symbol])
        case SymbolDim() if dim.symbol not in attrs:
            raise where.error(
                f"output '{output.name}': dimension symbol '{dim.symbol}' is not bound "
                f"by any required input's shape pattern (bound: {sorted(patterns.required_bound)})"
            )
        case SymbolDim():
            expr = dim_expression(dim.symbol, where, patterns.required_bound, attrs)
        case ExpressionDim():
            expr = dim_expression(dim.text, where, patterns.required_bound, attrs)
        case _:
            assert_never(dim)
    if not isinstance(expr, DimRef | Constant):
        added.expr_checks += _expression_checks(op_type, output.name, expr)
    return DimPart(expr)


def _expression_checks(op_type: str, output: str, expr: AttributeValue | Binary) -> list[ExprCheck]:
    """Every divisor must be positive, and the dim itself must not be negative."""
    checks = []
    binaries = [sub for sub in subexpressions(expr) if isinstance(sub, Binary)]
    for sub in binaries:
        if sub.op == "//" and not (isinstance(sub.right, Constant) and sub.right.value > 0):
            checks.append(
                ExprCheck(
                    sub.right,
                    True,
                    f"{op_type}: the divisor {sub.right.text} in the shape of "
                    f"output '{output}' must be positive",
                )
            )
    if any(sub.op == "-" for sub in binaries) or attributes_read(expr):  # an attribute may be < 0
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
    by_name: dict[str, TensorParam],
    attrs: dict[str, Attribute],
    where: Node,
) -> BroadcastPart | ReducePart:
    assert output.shape_function is not None
    kind, args = output.shape_function
    if kind == "broadcast":
        # A variadic input stands for all its values: broadcast(X) alone is enough.
        operands = sum(2 if a in by_name and by_name[a].variadic else 1 for a in args)
        if operands < 2 or any(a not in by_name for a in args) or len(set(args)) != len(args):
            raise where.error(
                f"output '{output.name}': broadcast(...) takes two or more distinct input names, "
                f"or a variadic one (inputs: {sorted(by_name)})"
            )
        if all(by_name[a].may_be_absent for a in args):
            raise where.error(
                f"output '{output.name}': broadcast(...) needs an input that always has a value "
                "(a required one, or a variadic one of min 1 or more): with none, the output "
                "would have no shape"
            )
        return BroadcastPart(
            args,
            f"{op_type}: inputs {', '.join(repr(a) for a in args)} cannot be broadcast "
            "together, got ",
            frozenset(a for a in args if by_name[a].variadic),
        )
    if len(args) != 3 or args[0] not in by_name or not _single(by_name[args[0]]):
        raise where.error(
            f"output '{output.name}': expected {SHAPE_FUNCTIONS['reduce']} with X a required input"
        )

    def attribute_or_literal(text: str, types: tuple[AttrType, ...], what: str) -> DimExpr:
        if text in attrs and attrs[text].type in types:
            return AttributeValue(text, text=f"'{text}'")
        try:
            value = int(ast.literal_eval(text))
        except ValueError:
            names = sorted(n for n, a in attrs.items() if a.type in types)
            raise where.error(
                f"output '{output.name}': {what} '{text}' must be a literal or an attribute of "
                f"type {'/'.join(t.value for t in types)} {names}"
            ) from None
        return Constant(read.in_int64(value, where), text=text)

    axis = attribute_or_literal(args[1], (AttrType.int,), "axis")
    keepdims = attribute_or_literal(args[2], (AttrType.bool, AttrType.int), "keepdims")
    return ReducePart(args[0], axis, keepdims)


def _single(tensor: TensorParam) -> bool:
    return not tensor.optional and not tensor.variadic


def _attribute_checks(
    op_type: str, attrs: dict[str, Attribute], type_choosers: dict[str, TypeConstraint]
) -> tuple[AttributeCheck, ...]:
    def dtypes_named(name: str) -> str:
        """How the message names the dtypes of a chooser's numbers."""
        constraint = type_choosers.get(name)
        if constraint is None:
            return ""
        return f" ({constraint.name}: {', '.join(d.value for d in constraint.dtypes)})"

    allowed: tuple[AttributeCheck, ...] = tuple(
        AllowedValuesCheck(
            a.name,
            a.allowed,
            f"{op_type}: attribute '{a.name}' must be one of {message_values(a.allowed)}"
            + dtypes_named(a.name),
        )
        for a in attrs.values()
        if a.allowed is not None
    )
    ranges = tuple(
        RangeCheck(a.name, a.minimum, a.maximum, _range_message(op_type, a))
        for a in attrs.values()
        if a.minimum is not None or a.maximum is not None
    )
    return allowed + ranges


def _range_message(op_type: str, attr: Attribute) -> str:
    lo, hi = attr.minimum, attr.maximum
    if lo is not None and hi is not None:
        bound = f"between {message_value(lo)} and {message_value(hi)}"
    elif lo is not None:
        bound = f"at least {message_value(lo)}"
    elif hi is not None:
        bound = f"at most {message_value(hi)}"
    else:  # _attribute_checks makes a RangeCheck only for an attribute with a bound
        raise ValueError(f"attribute {attr.name!r} has no min or max")
    return f"{op_type}: attribute '{attr.name}' must be {bound}"
