"""Checks across definitions: unique ops and names, export targets that exist."""

from __future__ import annotations

from collections.abc import Mapping

from generator.errors import DefinitionError, ErrorCollector
from generator.model.nodes import EAGER_STANDARD_OPS, AttrRef, OnnxNode
from generator.model.op import OpDef, TorchApi
from generator.runtime._names import below_autograd_op, target_names

# What a definition defines (a file name, an ONNX op, a PyTorch overload), then the parts of
# its name: no two definitions may share one.
_Key = tuple[str | int | None, ...]


def onnx_op_index(ops: list[OpDef]) -> dict[tuple[str, str], OpDef]:
    """(domain, op type) -> the definition of that ONNX op."""
    # op.defines_onnx_op, spelled so that mypy narrows (OpDef.__post_init__: both or neither).
    return {
        (op.domain, op.op_type): op
        for op in ops
        if op.domain is not None and op.op_type is not None
    }


def export_targets(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> list[OpDef]:
    """The project's ops that the export nodes call (validated by check_project)."""
    return [index[(n.domain, n.op_type)] for rule in op.export for n in rule.nodes if n.domain]


def _absent_attribute_problems(op: OpDef, node: OnnxNode, target: OpDef | None) -> list[str]:
    """A node attribute `@a`, where `a` may be absent (optional without a default), is left
    out of the node when `a` is: only an optional attribute of a project op may be so."""
    may_be_absent = {a.name for a in op.attributes if a.optional_without_default}
    problems = []
    for attribute in node.attributes:
        if not (isinstance(attribute.value, AttrRef) and attribute.value.name in may_be_absent):
            continue
        if target is not None:
            called = target.attributes_by_name.get(attribute.name)
            if called is None or not called.required:
                continue
            whose = f"'{node.qualified}' requires '{attribute.name}'"
        elif node.domain:
            continue  # an undefined op: reported below
        else:
            whose = (
                f"opgen cannot tell whether ONNX's {node.op_type} may go without '{attribute.name}'"
            )
        problems.append(
            f"{attribute.name}=@{attribute.value.name}: attribute '{attribute.value.name}' may be "
            f"absent (optional without a default), and {whose}; give it a default"
        )
    return problems


def check_project(ops: list[OpDef]) -> None:
    """Cross-definition rules: unique op ids, ONNX names and PyTorch names; every custom op a
    node calls is defined in the project."""
    errors = ErrorCollector()
    _check_defined_once(ops, errors)
    _check_domain_idents(ops, errors)
    _check_nodes_called(ops, errors)
    errors.raise_if_any()


def _keys(op: OpDef) -> list[tuple[_Key, str, str]]:
    """What the op defines, each with the field that names it and what it is beside its name
    where the definition does not spell it ("" if it does)."""
    # The op id names output files; some file systems ignore case, so compare without it.
    keys: list[tuple[_Key, str, str]] = [
        (("file name (ignoring case)", op.op_id.lower()), "<file name>", "")
    ]
    if op.defines_onnx_op:
        # Every version in one definition (`version: [1, 2]`): one schema registration,
        # one kernel per name in ONNX Runtime.
        keys.append((("ONNX op (domain, type)", op.domain, op.op_type), "op", ""))
    if op.torch is not None:
        field_path = "torch.overrides" if op.torch.is_override else "torch.name"
        keys.append((("PyTorch overload", op.torch.overload_name), field_path, ""))
        if op.torch.api is TorchApi.native:  # the library defines the op below Autograd too
            below = f"{op.torch.namespace}::{below_autograd_op(op.torch.name)}.default"
            note = f" (the op below Autograd that native op {op.torch.qualified_name} defines)"
            keys.append((("PyTorch overload", below), field_path, note))
    return keys


def _check_defined_once(ops: list[OpDef], errors: ErrorCollector) -> None:
    """No two definitions define one file name, ONNX op or PyTorch overload."""
    seen: dict[_Key, tuple[OpDef, str]] = {}
    for op in ops:
        for key, field_path, here in _keys(op):
            if key in seen:
                first, there = seen[key]
                what = f"{key[0]} {', '.join(str(part) for part in key[1:])}"
                errors.add(
                    op.located(
                        field_path,
                        f"{what}{here} is also defined by {first.display_path}{there}",
                    )
                )
            seen.setdefault(key, (op, here))


def _check_domain_idents(ops: list[OpDef], errors: ErrorCollector) -> None:
    """generated/domains/<ident>/ and libopgen_<ident>.so: two domains must not meet in an
    identifier, nor in a CMake target's name."""
    by_domain_ident: dict[str, OpDef] = {}
    by_target: dict[str, OpDef] = {}
    for op in ops:
        if op.domain is None:
            continue
        other = by_domain_ident.setdefault(op.domain_ident, op)
        if other.domain != op.domain:
            errors.add(
                op.located(
                    "domain",
                    f"'{op.domain}' and '{other.domain}' ({other.display_path}) both "
                    f"become '{op.domain_ident}' in file and library names; rename one",
                )
            )
            continue
        # Each domain's CMake targets (`a` has opgen_a_kernels, and so would `a.kernels`).
        for target_name in target_names(op.domain_ident):
            other = by_target.setdefault(target_name, op)
            if other.domain != op.domain:
                errors.add(
                    op.located(
                        "domain",
                        f"'{op.domain}' and '{other.domain}' ({other.display_path}) both "
                        f"name the build target '{target_name}'; rename one",
                    )
                )
                break


def _check_nodes_called(ops: list[OpDef], errors: ErrorCollector) -> None:
    """Every custom op a function or export node calls is an op of the project that runs."""
    index = onnx_op_index(ops)
    for op in ops:
        for node in op.nodes_used:
            target = index.get((node.domain, node.op_type))
            path = "function" if op.function and node in op.function.nodes else "export"
            for message in _absent_attribute_problems(op, node, target):
                errors.add(DefinitionError(node.location, path, message))
            if node.domain and target is None:
                defined = sorted(f"{d}::{t}" for d, t in index)
                errors.add(
                    DefinitionError(
                        node.location,
                        path,
                        f"'{node.qualified}' is not defined by any op definition of this project "
                        f"(defined: {defined}); standard ONNX ops take no domain",
                    )
                )
            elif node.domain and target is not None and target.is_interface_only:
                errors.add(
                    DefinitionError(
                        node.location,
                        path,
                        f"'{node.qualified}' declares its ONNX interface only "
                        f"({target.display_path}): nothing runs it; give it a kernel, function "
                        "or provided_by",
                    )
                )
            elif target is op and path == "function":
                errors.add(DefinitionError(node.location, path, "a function cannot call itself"))
            elif op.new_torch_op and not op.defines_onnx_op:
                eager_ok = (
                    node.op_type in EAGER_STANDARD_OPS
                    if not node.domain
                    else target is not None and target.new_torch_op
                )
                if not eager_ok:
                    errors.add(
                        DefinitionError(
                            node.location,
                            path,
                            f"'{node.qualified}' cannot run in PyTorch: an export-only op runs its "
                            "nodes eagerly, so each must be an op of this project with a new "
                            f"PyTorch op, or one of {sorted(EAGER_STANDARD_OPS)}",
                        )
                    )
