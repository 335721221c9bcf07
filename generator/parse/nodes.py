"""ONNX nodes (`Y = domain::Op<attr=value>(X)`): function bodies and export rules."""

from __future__ import annotations

import ast
import re
from typing import Any

from generator.errors import Location
from generator.model.names import DOMAIN, IDENTIFIER
from generator.model.nodes import AttrRef, ExportRule, Function, NodeAttribute, OnnxNode
from generator.model.tensors import Attribute, TensorParam
from generator.model.types import AttrType, DType
from generator.parse import read
from generator.parse.expressions import MAX_EXPRESSION_LENGTH, parse_expression
from generator.parse.tensors import attr_value
from generator.source import Node

NODE = re.compile(
    r"\A\s*(?P<outputs>[^=]+?)\s*=\s*(?:(?P<domain>[A-Za-z0-9_.]+)::)?(?P<op>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*(?:<(?P<attributes>.*)>)?\s*\((?P<inputs>[^()]*)\)\s*\Z"
)


NODE_SYNTAX = "'Y = Op(X)', 'Y = domain::Op<attr=value, other=@attribute>(X, Z)'"


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside brackets and quotes."""
    parts: list[str] = []
    current: list[str] = []  # characters of the part being read
    depth = 0
    quote: str | None = None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _literal_attr_type(value: Any) -> AttrType | None:
    if isinstance(value, DType):
        return AttrType.int
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return AttrType.int
    if isinstance(value, float):
        return AttrType.float
    if isinstance(value, str):
        return AttrType.string
    if isinstance(value, list) and value:
        kinds = {_literal_attr_type(v) for v in value}
        if kinds <= {AttrType.int, AttrType.float} and AttrType.float in kinds:
            return AttrType.floats
        if kinds == {AttrType.int}:
            return AttrType.ints
        if kinds == {AttrType.string}:
            return AttrType.strings
    return None


def _parse_node_attribute(text: str, item: Node, attrs: dict[str, Attribute]) -> NodeAttribute:
    name, sep, value_text = text.partition("=")
    name, value_text = name.strip(), value_text.strip()
    if not sep or not IDENTIFIER.fullmatch(name) or not value_text:
        raise item.error(f"node attribute '{text}' is not 'name=value'")
    if value_text.startswith("@"):
        ref = value_text[1:]
        if ref not in attrs:
            raise item.error(
                f"'@{ref}' names no attribute of this definition; declared: {sorted(attrs)}"
            )
        return NodeAttribute(name, attrs[ref].type, AttrRef(ref))
    if IDENTIFIER.fullmatch(value_text):
        try:
            return NodeAttribute(name, AttrType.int, DType(value_text))
        except ValueError:
            raise item.error(
                f"node attribute {name}={value_text}: a bare word must be a dtype name "
                f"{[d.value for d in DType]}; quote a string, write '@{value_text}' for an attribute"
            ) from None
    try:
        value = ast.literal_eval(parse_expression(value_text))
    except (ValueError, SyntaxError):
        raise item.error(
            f"node attribute {name}={value_text}: expected a number, a quoted string, a list, "
            "a dtype name or @attribute"
        ) from None
    kind = _literal_attr_type(value)
    if kind is None:
        raise item.error(
            f"node attribute {name}={value_text}: expected a number, a string or a non-empty "
            "list of one of them"
        )
    for scalar in value if isinstance(value, list) else [value]:
        if isinstance(scalar, int):
            read.in_int64(scalar, item)
        if isinstance(scalar, float) or kind is AttrType.floats:
            read.in_float32(float(scalar), item)
    if isinstance(value, list):
        value = tuple(float(v) if kind is AttrType.floats else v for v in value)
    return NodeAttribute(name, kind, value)


def _parse_nodes(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> tuple[OnnxNode, ...]:
    """Parses a node list; every name must be an input or an earlier node's output, and the
    nodes must produce every output."""
    items = read.sequence(node)
    if not items:
        raise node.error("give at least one node")
    available = {t.name for t in inputs}
    result = []
    for item in items:
        text = read.string(item, f"a node such as {NODE_SYNTAX}")
        if len(text) > MAX_EXPRESSION_LENGTH:  # NODE's backtracking is quadratic in the length
            raise item.error(
                f"a node of {len(text)} characters; the limit is {MAX_EXPRESSION_LENGTH}"
            )
        match = NODE.fullmatch(text)
        if not match:
            raise item.error(f"'{text}' is not a node; expected {NODE_SYNTAX}")
        outs = tuple(o.strip() for o in match.group("outputs").split(","))
        for name in outs:
            if not IDENTIFIER.fullmatch(name):
                raise item.error(f"node output '{name}' is not an identifier")
            if name in available:
                raise item.error(f"'{name}' is already defined; each name is assigned once")
        domain = match.group("domain") or ""
        if domain and not DOMAIN.fullmatch(domain):
            raise item.error(f"'{domain}' is not a dotted lower-case domain name")
        ins = tuple(i.strip() for i in _split_top_level(match.group("inputs")))
        for name in ins:
            if name not in available:
                raise item.error(
                    f"node input '{name}' is neither an input of the op nor an output of an "
                    f"earlier node (defined so far: {sorted(available)})"
                )
        attributes = tuple(
            _parse_node_attribute(part, item, attrs)
            for part in _split_top_level(match.group("attributes") or "")
        )
        names = [a.name for a in attributes]
        if len(set(names)) != len(names):
            raise item.error("a node attribute is given twice")
        available |= set(outs)
        result.append(OnnxNode(outs, domain, match.group("op"), ins, attributes, item.location))
    missing = [t.name for t in outputs if t.name not in available]
    if missing:
        raise node.error(f"the nodes never assign the op's output(s) {missing}")
    return tuple(result)


def parse_function(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> Function:
    fields = read.mapping(node, {"opset", "nodes"}, {"opset", "nodes"})
    opset = read.version_number(fields["opset"])
    nodes = _parse_nodes(fields["nodes"], inputs, outputs, attrs)
    for item, parsed in zip(fields["nodes"].value, nodes, strict=True):
        if parsed.domain:
            raise item.error(
                f"a function body uses standard ONNX ops only; '{parsed.qualified}' has a domain"
            )
    return Function(opset, nodes)


def parse_export(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> tuple[ExportRule, ...]:
    rules: list[ExportRule] = []
    seen_when: set[tuple[tuple[str, Any], ...]] = set()
    for item in read.sequence(node):
        fields = read.mapping(item, {"when", "nodes"}, {"nodes"})
        when = []
        if "when" in fields:
            for name, value in read.mapping(fields["when"], set(attrs), set()).items():
                when.append((name, attr_value(value, attrs[name].type)))
        key = tuple(when)
        if rules and not rules[-1].when:
            raise item.error("unreachable: an earlier export rule has no 'when' and always applies")
        if key in seen_when:
            raise item.error("another export rule has the same 'when'")
        seen_when.add(key)
        rules.append(ExportRule(key, _parse_nodes(fields["nodes"], inputs, outputs, attrs)))
    if not rules:
        raise node.error("give at least one export rule")
    return tuple(rules)


def default_export(
    op_type: str,
    domain: str,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attributes: tuple[Attribute, ...],
    location: Location,
) -> tuple[ExportRule, ...]:
    """One node of the op itself, every attribute passed through."""
    node = OnnxNode(
        tuple(t.name for t in outputs),
        domain,
        op_type,
        tuple(t.name for t in inputs),
        tuple(NodeAttribute(a.name, a.type, AttrRef(a.name)) for a in attributes),
        location,
    )
    return (ExportRule((), (node,)),)
