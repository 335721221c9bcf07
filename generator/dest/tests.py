"""The generated parity tests of an op."""

from __future__ import annotations

import re

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.dest import common
from generator.model.op import OpDef, TorchApi
from generator.model.types import AttrType, DType
from generator.parse.project import export_targets
from generator.render import GeneratedFile, render
from generator.shapes.evaluate import evaluate_output_shapes


def base_context(op: OpDef) -> dict:
    """The op's names (moved here from dest/python.py until the test view replaces it)."""
    torch = op.torch
    return {
        "op_id": op.op_id,
        "op_type": op.op_type,
        "domain": op.domain,
        "version": op.version,
        "title": op.title,
        "torch_namespace": torch.namespace if torch else None,
        "torch_name": torch.name if torch else None,
        "overload_expr": (
            f"torch.ops.{torch.namespace}.{torch.name}.{torch.overload}" if torch else None
        ),
        "is_override": bool(torch and torch.is_override),
        "new_torch_op": op.new_torch_op,
        "defines_onnx_op": op.defines_onnx_op,
        "has_export": bool(op.export),
    }


def _dtype_list(dtypes) -> str | None:
    if dtypes is None:
        return "None"
    return "(" + "".join(f"{py.TORCH_DTYPE[d]}, " for d in dtypes) + ")"


def _export_facts(op: OpDef, index: dict[tuple[str, str], OpDef]) -> dict:
    """What the export must produce: nodes per rule, the libraries and functions they need."""
    called = export_targets(op, index)
    libraries = sorted({t.domain_ident for t in called if t.kernel})
    bodies = {
        (t.domain, t.op_type): [("", n.op_type) for n in t.function.nodes]
        for t in called
        if t.function
    }
    rules = [(dict(rule.when), [(n.domain, n.op_type) for n in rule.nodes]) for rule in op.export]
    return {
        "overrides": py.literal([op.op_id] if op.torch.is_override else []),
        "export_libraries": py.literal(libraries),
        "export_rules": "[" + ", ".join(f"({py.literal_dict(w)}, {n!r})" for w, n in rules) + "]",
        "function_bodies": repr(bodies),
    }


def emit(op: OpDef, index: dict[tuple[str, str], OpDef]) -> list[GeneratedFile]:
    tests = op.tests
    random_cases = []
    for case_index, case in enumerate(tests.random):
        named = {k: list(v) for k, v in case.shapes.items()}
        shapes = evaluate_output_shapes(op, named, case.attributes, mark_data_dependent=True)
        random_cases.append(
            {
                "index": case_index,
                "shapes": py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
                "dynamic": py.literal_dict({k: tuple(v) for k, v in case.dynamic.items()}),
                "samples": [{"input": k, "expr": v} for k, v in case.samples.items()],
                "attributes": py.literal_dict(case.attributes),
                # Each output's dims as ONNX infers them from the case's named input dims:
                # numbers, names, "?" (unknown), "?M" (data-dependent size M); None: the output
                # has no shape rule (shapes come through a function body).
                "output_dims": py.literal([shapes.get(o.name) for o in op.outputs]),
            }
        )
    context = {
        **base_context(op),
        **(_export_facts(op, index) if op.export else {}),
        "library": op.domain_ident if op.kernel else None,
        "has_kernel": op.kernel is not None,
        "is_function": op.function is not None,
        "gradients": bool(op.gradients),
        # Tested where some dtypes let a gradient reach the op.
        "no_gradient_message": (
            py.literal(re.escape(py.no_gradient_message(op)))
            if op.raises_without_gradients and op.differentiable
            else None
        ),
        # Forward-mode AD through a differentiable op registered by our own Autograd kernel.
        "forward_mode_message": (
            py.literal(re.escape(py.forward_mode_message(op)))
            if op.new_torch_op and op.torch.api is TorchApi.library and op.differentiable
            else None
        ),
        "functorch_gradients": bool(op.gradients) and op.torch.api is TorchApi.library,
        "bool_attribute_names": py.literal(
            [a.name for a in op.attributes if a.type is AttrType.bool]
        ),
        "earlier_versions": (
            "{"
            + ", ".join(
                f"{v}: {py.literal([a.name for a in op.attributes_at(v)])}"
                for v in op.earlier_versions
            )
            + "}"
            if op.earlier_versions
            else None
        ),
        "gradient_inputs": py.literal(list(op.gradients)),
        "has_cpp_schema": op.has_cpp_schema,
        "defaults": py.literal_dict({a.name: a.default for a in op.attributes if not a.required}),
        "attribute_names": py.literal([a.name for a in op.attributes]),
        "attribute_types": "{"
        + ", ".join(
            f"{py.literal(a.name)}: onnx.AttributeProto.{onnx_api.ATTR_TYPE[a.type]}"
            for a in op.attributes
        )
        + "}",
        "type_combinations": [
            "{" + ", ".join(f"{var!r}: {py.TORCH_DTYPE[d]}" for var, d in inst.bindings) + "}"
            for inst in op.instantiations
        ],
        "first_type_var": op.type_constraints[0].name if op.type_constraints else None,
        "tolerances": [
            {"torch": py.TORCH_DTYPE[d], "rtol": t.rtol, "atol": t.atol}
            for d, t in sorted(tests.tolerances.items(), key=lambda item: item[0].value)
        ],
        "input_names": py.literal([t.name for t in op.inputs]),
        "input_types": _declared_types(op.inputs),
        "output_types": _declared_types(op.outputs),
        "output_names": py.literal([t.name for t in op.outputs]),
        "data_dependent_outputs": py.literal(
            [t.name for t in op.outputs if t.name in op.shape_rule.kernel_allocated]
        ),
        "input_params": ", ".join(t.name for t in op.inputs),
        "forward_params": ", ".join(f"{t.name}=None" if t.optional else t.name for t in op.inputs),
        "reference_params": ", ".join(
            [f"{t.name}=None" if t.optional else t.name for t in op.inputs]
            + [a.name if a.required else f"{a.name}={py.literal(a.default)}" for a in op.attributes]
        ),
        "exporters": py.literal(list(op.exporters)),
        "reference": op.reference,
        "reference_upcast": op.reference_upcast,
        "known_cases": [
            {
                "inputs": py.literal_dict(case.inputs),
                "outputs": py.literal_dict(case.outputs),
                "attributes": py.literal_dict(case.attributes),
                "dtypes": _dtype_list(case.dtypes),
            }
            for case in tests.known
        ],
        "random_cases": random_cases,
        "error_cases": [
            {
                "shapes": py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
                "attributes": py.literal_dict(case.attributes),
                "message": case.message,
            }
            for case in op.error_cases
            if case.values is None
        ],
        "value_error_cases": [
            {
                "inputs": py.literal_dict(case.values),
                "attributes": py.literal_dict(case.attributes),
                "message": case.message,
            }
            for case in op.error_cases
            if case.values is not None
        ],
        "unsupported_dtype": _unsupported_dtype(op) if op.defines_onnx_op else None,
        "unsupported_inputs": _unsupported_inputs(op),
        "required_attributes": [a.name for a in op.attributes if a.required],
        "builtin_equivalents": [
            {
                "domain": b.domain,
                "op_type": b.op_type,
                "version": b.version,
                "ident": f"{b.domain.replace('.', '_')}_{b.op_type}".lower(),
            }
            for b in tests.builtin_equivalents
        ],
    }
    return [
        render(
            "python/test_parity.py.j2",
            f"{op.op_id}/test_{op.op_id}.py",
            common.sources(op),
            **context,
        )
    ]


def _unsupported_inputs(op: OpDef) -> list[str]:
    """The first input and every input sharing its type variable (they change dtype together)."""
    first = op.inputs[0]
    return [
        t.name for t in op.inputs if t is first or (first.type_var and t.type_var == first.type_var)
    ]


def _unsupported_dtype(op: OpDef) -> str | None:
    """A dtype the first input does not accept, to prove it is rejected (not misread)."""
    first = op.inputs[0]
    accepted = op.type_var_dtypes[first.type_var] if first.type_var else (first.dtype,)
    for candidate in (DType.int32, DType.float64, DType.float32, DType.int64, DType.uint8):
        if candidate not in accepted:
            return py.TORCH_DTYPE[candidate]
    return None


def _declared_types(tensors) -> str:
    """{tensor: its type variable's name, or its fixed torch dtype}"""
    return (
        "{"
        + ", ".join(
            (
                f"{t.name!r}: {t.type_var!r}"
                if t.type_var
                else f"{t.name!r}: {py.TORCH_DTYPE[t.dtype]}"
            )
            for t in tensors
        )
        + "}"
    )
