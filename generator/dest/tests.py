"""The generated parity tests of an op."""

from __future__ import annotations

from generator.api import python as py
from generator.dest import common
from generator.dest.python import base_context, output_dtype_expr
from generator.model import DType, OpDef, evaluate_output_shapes
from generator.render import GeneratedFile, render


def _dtype_list(dtypes) -> str | None:
    if dtypes is None:
        return "None"
    return "(" + "".join(f"{py.TORCH_DTYPE[d]}, " for d in dtypes) + ")"


def emit(op: OpDef) -> list[GeneratedFile]:
    tests = op.tests
    random_cases = []
    ranks = []
    for index, case in enumerate(tests.random):
        random_cases.append(
            {
                "index": index,
                "shapes": py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
                "dynamic": py.literal_dict({k: tuple(v) for k, v in case.dynamic.items()}),
                "samples": [{"input": k, "expr": v} for k, v in case.samples.items()],
                "attributes": py.literal_dict(case.attributes),
            }
        )
        named = {k: list(v) for k, v in case.shapes.items()}
        ranks.append([len(dims) for dims in evaluate_output_shapes(op.shape_rule, named).values()])
    context = {
        **base_context(op),
        "dtypes": [{"torch": py.TORCH_DTYPE[d]} for d in op.all_dtypes],
        "tolerances": [
            {"torch": py.TORCH_DTYPE[d], "rtol": t.rtol, "atol": t.atol}
            for d, t in sorted(tests.tolerances.items(), key=lambda item: item[0].value)
        ],
        "input_names": py.literal([t.name for t in op.inputs]),
        "input_dtypes": "{"
        + ", ".join(f"{t.name!r}: {_input_dtype(op, t)}" for t in op.inputs)
        + "}",
        "output_names": py.literal([t.name for t in op.outputs]),
        "input_params": ", ".join(t.name for t in op.inputs),
        "reference_params": ", ".join(
            [t.name for t in op.inputs]
            + [a.name if a.required else f"{a.name}={py.literal(a.default)}" for a in op.attributes]
        ),
        "exporters": py.literal(list(op.exporters)),
        "reference": op.reference,
        "reference_upcast": op.reference_upcast,
        "outputs": [{"dtype_expr": _expected_dtype(op, o)} for o in op.outputs],
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
        "expected_output_ranks": py.literal(ranks),
        "error_cases": [
            {
                "shapes": py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
                "attributes": py.literal_dict(case.attributes),
                "message": case.message,
            }
            for case in tests.errors
            if case.values is None
        ],
        "value_error_cases": [
            {
                "inputs": py.literal_dict(case.values),
                "attributes": py.literal_dict(case.attributes),
                "message": case.message,
            }
            for case in tests.errors
            if case.values is not None
        ],
        "unsupported_dtype": _unsupported_dtype(op),
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


def _expected_dtype(op: OpDef, output) -> str:
    """The expected dtype of an output: the input dtype under test, or the concrete one."""
    return "dtype" if op.dtype_source(output) else output_dtype_expr(op, output)


def _unsupported_dtype(op: OpDef) -> str | None:
    """A dtype the first input does not accept, to prove it is rejected (not misread)."""
    first = op.inputs[0]
    accepted = op.type_var_dtypes[first.type_var] if first.type_var else (first.dtype,)
    for candidate in (DType.int32, DType.float64, DType.float32, DType.int64):
        if candidate not in accepted:
            return py.TORCH_DTYPE[candidate]
    return None


def _input_dtype(op: OpDef, tensor) -> str:
    """None when the input follows the dtype under test (the first type variable); otherwise
    its fixed dtype (a concrete dtype, or another variable's first dtype)."""
    if tensor.type_var is None:
        return py.TORCH_DTYPE[tensor.dtype]
    if tensor.type_var == op.type_constraints[0].name:
        return "None"
    return py.TORCH_DTYPE[op.type_var_dtypes[tensor.type_var][0]]
