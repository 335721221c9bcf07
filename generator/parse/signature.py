"""An op's signature: its type constraints, inputs, outputs and attributes read, and what no
single one of them shows checked (their order, names, versions and type choosers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from generator.api.names import Local
from generator.errors import ErrorCollector
from generator.model.tensors import Attribute, TensorParam, VariadicArity
from generator.model.types import TypeConstraint, type_choosers
from generator.parse import read
from generator.parse.definition import Definition, is_interface_only
from generator.parse.tensors import (
    MAX_MIN_ARITY,
    parse_attribute,
    parse_tensor,
    parse_type_constraints,
)
from generator.source import Node

R = TypeVar("R")


@dataclass(frozen=True)
class Signature:
    """The type constraints, inputs, outputs and attributes that parsed."""

    constraints: tuple[TypeConstraint, ...]
    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attributes: tuple[Attribute, ...]
    # Where each parsed item is written: an item that failed to parse is left out of the
    # tuples above, so a position there is not its position in the file.
    nodes: dict[str, tuple[Node, ...]]

    def node(self, key: str, index: int) -> Node:
        """The item `index` of the parsed inputs, outputs or attributes, as written."""
        return self.nodes[key][index]

    @property
    def attrs_by_name(self) -> dict[str, Attribute]:
        return {a.name: a for a in self.attributes}


def read_signature(d: Definition) -> Signature:
    """Every item that parses; each one that does not is reported and left out."""
    errors = d.errors
    constraints = d.get("type_constraints", parse_type_constraints, errors) or ()
    by_var = {tc.name: tc for tc in constraints}
    tc_node = d.fields.get("type_constraints")
    declared_vars = (
        frozenset(tc_node.value) if tc_node is not None and tc_node.is_mapping else frozenset()
    )

    nodes: dict[str, tuple[Node, ...]] = {}

    def parsed(key: str, parse: Callable[[Node], R | None]) -> tuple[R, ...]:
        pairs = [(item, parse(item)) for item in d.get(key, read.sequence) or []]
        nodes[key] = tuple(item for item, value in pairs if value is not None)
        return tuple(value for _, value in pairs if value is not None)

    inputs = parsed(
        "inputs",
        lambda item: errors.attempt(parse_tensor, item, by_var, False, declared_vars, errors),
    )
    outputs = parsed(
        "outputs",
        lambda item: errors.attempt(parse_tensor, item, by_var, True, declared_vars, errors),
    )
    choosers = type_choosers(constraints)
    attributes = parsed(
        "attributes", lambda item: errors.attempt(parse_attribute, item, errors, choosers)
    )
    return Signature(constraints, inputs, outputs, attributes, nodes)


def check_signature(d: Definition, signature: Signature, versions: tuple[int, ...]) -> None:
    """What no single input, output or attribute shows: their order, names and versions."""
    errors = d.errors
    interface_only = is_interface_only(d)
    if not interface_only:  # PyTorch's argument order; ONNX's attributes have none
        _check_attribute_order(d, signature)
    _check_since_versions(d, signature, versions)
    if "outputs" in d and not signature.outputs and not errors.errors:
        errors.add(d["outputs"].error("an op needs at least one output"))
    _check_unique_names(d.fields, errors, interface_only)
    _check_type_choosers(d, signature)
    for key in ("inputs", "outputs"):
        _check_min_arity(d, signature, key)
    for key in ("inputs", "outputs"):
        # The items as written: one that failed to parse still comes after a variadic one.
        items = d[key].value if key in d and d[key].is_sequence else []
        for item in items[:-1]:
            variadic = item.value.get("variadic") if item.is_mapping else None
            if variadic is not None and variadic.value not in (False, None):
                what = key[:-1]
                errors.add(
                    item.error(
                        f"only the last {what} may be variadic (ONNX matches {key} by position)"
                    )
                )


def check_code_names(d: Definition) -> None:
    """Names become identifiers of generated code in every target but the schemas'."""
    names = [
        Node(name, node.key_location or node.location, node.path)
        for name, node in (
            d["type_constraints"].value.items()
            if "type_constraints" in d and d["type_constraints"].is_mapping
            else []
        )
    ]
    for key in ("inputs", "outputs", "attributes"):
        names += _name_nodes(d, key)
    for node in names:
        d.errors.attempt(read.reserved_name, node, "name")
    # An attribute is a keyword argument of onnxscript's Op.__call__(self, ...) in the dynamo
    # translation (an input is positional: ATen's `self` is fine there).
    for name in _name_nodes(d, "attributes"):
        if name.value == "self":
            d.errors.add(
                name.error(
                    "attribute 'self' is reserved: the exporters' translation passes attributes "
                    "as keyword arguments of a call that takes its own `self`; choose another name"
                )
            )
    _check_derived_names({node.value: node for node in reversed(names)}, d.errors)


def _name_nodes(d: Definition, key: str) -> list[Node]:
    """The `name` of each input, output or attribute (`key`) the file lists, whether or not it
    parsed."""
    items = d[key].value if key in d and d[key].is_sequence else []
    return [
        item.value["name"]
        for item in items
        if item.is_mapping and "name" in item.value and isinstance(item.value["name"].value, str)
    ]


def _check_type_choosers(d: Definition, signature: Signature) -> None:
    """A type variable `chosen_by` an attribute: the attribute exists, chooses it alone, and no
    input has the variable (the attribute and the input could disagree)."""
    chosen: dict[str, str] = {}
    # Attributes the file names, parsed or not (one that failed has its own error already).
    written = {node.value for node in _name_nodes(d, "attributes")}
    for constraint in signature.constraints:
        if constraint.chosen_by is None:
            continue
        where = read.node_at(d.root, f"type_constraints.{constraint.name}.chosen_by")
        name = constraint.chosen_by
        if name not in written:  # (one written but not parsed has its own error)
            names = set(signature.attrs_by_name)
            hint = read.closest(name, names) if names else None
            suggestion = f" (did you mean '{hint}'?)" if hint else ""
            d.errors.add(where.error(f"no attribute '{name}' to choose it{suggestion}"))
        elif name in chosen:
            d.errors.add(where.error(f"attribute '{name}' already chooses {chosen[name]}"))
        chosen.setdefault(name, constraint.name)
        if not any(t.type_var == constraint.name and not t.optional for t in signature.outputs):
            d.errors.add(
                where.error(
                    f"no required output has type {constraint.name}: ONNX Runtime picks the "
                    "kernel by the outputs' types (a node may leave an optional one out), so the "
                    "attribute would choose nothing it can tell apart"
                )
            )
        if "function" in d:
            d.errors.add(
                where.error(
                    "an op defined as an ONNX function does not take a type variable an "
                    "attribute chooses yet (ONNX Runtime runs the body, which checks no dtype)"
                )
            )
        elif "torch" in d and "kernel" not in d:
            d.errors.add(
                where.error(
                    "a PyTorch op without a kernel does not take a type variable an attribute "
                    "chooses yet (its eager export nodes would get a torch.dtype)"
                )
            )
        attribute = signature.attrs_by_name.get(name)
        if attribute is not None and attribute.since_version is not None:
            index = signature.attributes.index(attribute)
            d.errors.add(
                signature.node("attributes", index).error(
                    f"attribute '{name}' chooses {constraint.name}, so it cannot be added in a "
                    "later version (not carried yet: nodes of earlier versions would get the "
                    "default's dtype)"
                )
            )
        for index, tensor in enumerate(signature.inputs):
            if tensor.type_var == constraint.name:
                d.errors.add(
                    signature.node("inputs", index).error(
                        f"input '{tensor.name}' has type {constraint.name}, which attribute "
                        f"'{name}' chooses: an input cannot have it (the two could disagree)"
                    )
                )


def _check_min_arity(d: Definition, signature: Signature, key: str) -> None:
    """ONNX counts the parameters before a variadic one into its minimum (OpSchema's
    min_input, a C++ int): the sum must fit."""
    params = signature.inputs if key == "inputs" else signature.outputs
    for index, param in enumerate(params):
        # Its position in the file: parameters that failed to parse count too.
        node = signature.node(key, index)
        position = d[key].value.index(node)
        if isinstance(param.arity, VariadicArity) and position + param.arity.min_arity > (
            MAX_MIN_ARITY
        ):
            d.errors.add(
                node.error(
                    f"{position} parameters before it and a minimum of {param.arity.min_arity} "
                    f"make more than ONNX counts ({MAX_MIN_ARITY})"
                )
            )


def _check_attribute_order(d: Definition, signature: Signature) -> None:
    seen_default = None
    for index, attr in enumerate(signature.attributes):
        if attr.required and seen_default is not None:
            d.errors.add(
                signature.node("attributes", index).error(
                    f"required attribute '{attr.name}' comes after '{seen_default}', which is "
                    "optional; list required attributes first (PyTorch argument order)"
                )
            )
        if not attr.required:
            seen_default = seen_default or attr.name


def _check_since_versions(d: Definition, signature: Signature, versions: tuple[int, ...]) -> None:
    for index, attr in enumerate(signature.attributes):
        if attr.since_version is None:
            continue
        where = signature.node("attributes", index)
        if "version" in d and not versions:
            pass  # the version is bad: reported there
        elif attr.since_version not in versions[1:]:
            d.errors.add(
                where.error(
                    f"attribute '{attr.name}': since_version {attr.since_version} is not one of "
                    f"the op's later versions {list(versions[1:])} (see 'version')"
                )
            )
        elif attr.required:
            d.errors.add(
                where.error(
                    f"attribute '{attr.name}' was added in version {attr.since_version}, so it "
                    "needs a default (nodes of earlier versions do not have it)"
                )
            )


def _check_unique_names(
    fields: dict[str, Node], errors: ErrorCollector, interface_only: bool
) -> None:
    """Type variables, inputs, outputs and attributes share one namespace: they are the
    arguments of the PyTorch op and of the C++ kernel, and its template parameters. A repeated
    name is reported where it repeats. (In ONNX alone, inputs, outputs and attributes each have a
    namespace of their own: an interface-only op may reuse a name across those three, as ONNX
    Runtime's MatMulNBitsQkv and BatchNormalization-9 do; never a type variable's, which no
    schema of ONNX or ONNX Runtime reuses.)"""
    type_variables: dict[str, Node] = {}
    if "type_constraints" in fields and fields["type_constraints"].is_mapping:
        for name, node in fields["type_constraints"].value.items():
            type_variables[name] = Node(name, node.key_location or node.location, node.path)
    seen = dict(type_variables)
    for key in ("inputs", "outputs", "attributes"):
        items = fields[key].value if key in fields and fields[key].is_sequence else []
        if interface_only:  # ONNX's names: inputs, outputs and attributes each their own
            seen = dict(type_variables)
        for item in items:
            name = item.value.get("name") if item.is_mapping else None
            if name is None or not isinstance(name.value, str):
                continue
            first = seen.setdefault(name.value, name)
            if first is not name:
                errors.add(
                    name.error(
                        f"'{name.value}' is already the name of "
                        f"{read.owner(first.path)} (line {first.location.line}); type variables, "
                        "inputs, outputs and attributes need distinct names (they all become "
                        "names in the kernel's C++ signature)"
                    )
                )
    items = fields["data_dependent_sizes"].value if "data_dependent_sizes" in fields else []
    for item in items if isinstance(items, list) else []:
        named = seen.get(item.value) if isinstance(item.value, str) else None
        if named is not None:
            errors.add(
                item.error(
                    f"size symbol '{item.value}' is already the name of {read.owner(named.path)} "
                    f"(line {named.location.line}); the fake kernel declares it beside them, so "
                    "choose another"
                )
            )


def _check_derived_names(names: dict[str, Node], errors: ErrorCollector) -> None:
    """The generated code declares locals named after the user's names (`X_shape`, `attr_k`,
    ...): a name that is one of another name's locals would be declared twice."""
    owner = {local: name for name in names for local in Local.derived_from(name)}
    for name, node in names.items():
        other = owner.get(name)
        if other is not None and other != name:
            errors.add(
                node.error(
                    f"'{name}' is the name of a local the generated code declares for "
                    f"'{other}' ({Local.describe(name, other)}); choose another name"
                )
            )
