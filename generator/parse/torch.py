"""The `torch` section (a new PyTorch op, or an override of an existing overload) and the
gradient formulas of a new op."""

from __future__ import annotations

import keyword

from generator.api.names import Local
from generator.model.names import (
    ATEN_OVERLOAD,
    PYTHON_BUILTINS_CALLED,
    TORCH_NAME,
    TORCH_NAMESPACES,
    TORCH_OP_MODULE_NAMES,
    TORCH_OP_NAMESPACE_ATTRIBUTES,
    TORCH_OPS_ATTRIBUTES,
)
from generator.model.op import TorchApi, TorchBinding
from generator.model.tensors import Attribute, TensorParam
from generator.model.types import TypeConstraint
from generator.parse import read
from generator.parse.expressions import parse_reference
from generator.source import Node


def parse_torch(
    node: Node, has_kernel: bool, kernel_api: TorchApi = TorchApi.native
) -> TorchBinding:
    """`has_kernel`: the definition has a C++ kernel, which alone can be registered natively.
    `kernel_api`: the registration of an op with a kernel whose definition names none (the
    project's `torch-api`); an op without a kernel is registered with `library` unless it says."""
    fields = read.mapping(node, {"name", "api", "overrides"}, set())
    if ("name" in fields) == ("overrides" in fields):
        raise node.error(
            "give exactly one of 'name' (a new PyTorch op 'namespace::name') or 'overrides' "
            "(an existing overload such as 'aten::add.Tensor')"
        )
    if "overrides" in fields:
        if "api" in fields:
            raise fields["api"].error("'api' applies to new ops only, not to 'overrides'")
        text = read.string(fields["overrides"])
        match = ATEN_OVERLOAD.fullmatch(text)
        if not match:
            raise fields["overrides"].error(
                f"'{text}' is not a PyTorch overload 'namespace::name.overload' "
                "(e.g. aten::add.Tensor; the overload defaults to 'default')"
            )
        return TorchBinding(
            match.group(1), match.group(2), TorchApi.library, match.group(3) or "default", True
        )
    qualified = read.string(fields["name"])
    # Native by default where there is a C++ kernel to register: no Python at call time.
    api = kernel_api if has_kernel else TorchApi.library
    if "api" in fields:
        api_name = read.string(fields["api"])
        if api_name not in TorchApi.__members__:
            raise fields["api"].error(
                f"expected one of {list(TorchApi.__members__)}, found '{api_name}'"
            )
        api = TorchApi[api_name]
        if api is TorchApi.native and not has_kernel:
            raise fields["api"].error(
                "'native' registers the C++ kernel with PyTorch, and this definition has no "
                "'kernel'; use 'library' (the default for ops without a kernel)"
            )
    problem = new_op_name_problem(qualified, api)
    if problem:
        raise fields["name"].error(problem)
    match = TORCH_NAME.fullmatch(qualified)
    assert match is not None
    return TorchBinding(match.group(1), match.group(2), api)


def new_op_name_problem(qualified: str, api: TorchApi) -> str | None:
    """Why a new PyTorch op, registered with `api`, cannot be named `qualified`, or None."""
    match = TORCH_NAME.fullmatch(qualified)
    if not match:
        return f"'{qualified}' is not a PyTorch qualified name 'namespace::name' (lower-case identifiers)"
    if match.group(1) in TORCH_NAMESPACES:
        return (
            f"'{qualified}': namespace '{match.group(1)}' belongs to PyTorch, so a new op there "
            f"would clash with its ops; did you mean 'overrides: {qualified}' (change how an "
            "existing PyTorch op exports)? A new op needs a namespace of your own, e.g. "
            f"'my_ops::{match.group(2)}'"
        )
    for part in (match.group(1), match.group(2)):
        if keyword.iskeyword(part):
            return (
                f"'{qualified}': '{part}' is a Python keyword, so torch.ops.{match.group(1)}."
                f"{match.group(2)} cannot be written in Python; choose another name"
            )
    if match.group(1) in TORCH_OPS_ATTRIBUTES:
        return (
            f"'{qualified}': torch.ops.{match.group(1)} is an attribute of torch.ops, not a "
            "namespace of ops; choose another namespace"
        )
    if match.group(2) in TORCH_OP_NAMESPACE_ATTRIBUTES | TORCH_OP_MODULE_NAMES:
        return (
            f"'{qualified}': '{match.group(2)}' is an attribute of PyTorch's op namespaces or a "
            "name the generated torch_op module defines itself; choose another name"
        )
    if api is TorchApi.legacy and match.group(2) in PYTHON_BUILTINS_CALLED:
        return (
            f"'{qualified}': the legacy registration defines a function of the op's name in the "
            f"generated torch_op module, which would hide Python's '{match.group(2)}' from its "
            "own code; choose another name (or another torch.api)"
        )
    if match.group(2).endswith("_"):
        return (
            f"'{qualified}' ends in '_', which PyTorch reads as an in-place variant (the "
            "TorchScript exporter looks the op up without it); choose a name without"
        )
    return None


def parse_gradients(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attributes: tuple[Attribute, ...],
    constraints: tuple[TypeConstraint, ...],
) -> dict[str, str]:
    """input -> a PyTorch expression of its gradient, over the inputs, attributes, outputs and
    `grad_<output>` (the incoming gradient of each output)."""
    by_name = {t.name: t for t in inputs}
    names = set(by_name) | {a.name for a in attributes} | {o.name for o in outputs}
    names |= {Local.incoming_gradient(o.name) for o in outputs}
    result = {}
    for name, child in read.mapping(node, set(by_name), set()).items():
        tensor = by_name[name]
        dtypes = (
            next((tc.dtypes for tc in constraints if tc.name == tensor.type_var), None)
            if tensor.type_var
            else (tensor.dtype,)
        )
        if dtypes is not None and not any(d is not None and d.is_floating for d in dtypes):
            raise child.error(
                f"input '{name}' has a gradient, so a floating dtype must be among its dtypes "
                "(a gradient flows through floating tensors only)"
            )
        result[name] = parse_reference(
            child, names, "inputs, attributes, outputs and outputs' incoming gradients"
        )
    if not result:
        raise node.error("give the gradient of at least one input")
    return result


def override_reference(
    binding: TorchBinding, inputs: tuple[TensorParam, ...], attributes: tuple[Attribute, ...]
) -> str:
    args = [t.name for t in inputs] + [f"{a.name}={a.name}" for a in attributes]
    return f"torch.ops.{binding.namespace}.{binding.name}.{binding.overload}({', '.join(args)})"
