"""`python -m generator run`: exports every shipped op with both exporters and runs it in
PyTorch and ONNX Runtime, printing how far apart they are. Uses the generated test module's
inputs and oracle, so the demo and the tests cannot drift."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from generator.exit_codes import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:  # imported by run() only: `python -m generator` itself imports no PyTorch
    import torch


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference (0 for empty tensors)."""
    import torch

    wide = torch.complex128 if a.is_complex() or b.is_complex() else torch.float64
    return float((a.to(wide) - b.to(wide)).abs().max()) if a.numel() else 0.0


def _compare(
    tests: ModuleType,
    case: dict[str, Any],
    types: dict[str, torch.dtype],
    exporter: str,
    session: object,
    inputs: dict[str, torch.Tensor],
) -> int:
    """Prints one row; returns 1 when ONNX Runtime misses the reference's tolerance. `tests` is
    the op's generated test module (its functions and tables: attributes mypy cannot know),
    `case` one of its RANDOM_CASES, `session` what its run_ort takes."""
    import torch

    ref = tests.expected_outputs(inputs, case["attributes"], types)
    got = tests.run_torch(inputs, case["attributes"])
    ort = tests.run_ort(session, inputs)
    d_ref = max(_distance(g, r) for g, r in zip(got, ref, strict=True))
    d_ort = max(_distance(o, g) for o, g in zip(ort, got, strict=True))
    bad = not all(
        o.shape == r.shape
        and torch.allclose(o.double(), r.double(), *tests.TOLERANCES.get(r.dtype, (0.0, 0.0)))
        for o, r in zip(ort, ref, strict=True)
    )
    _row(tests, case, types, exporter, inputs, f"{d_ref:12.3g} {d_ort:12.3g}", bad)
    return int(bad)


def _shown(attributes: dict[str, Any]) -> str:
    """A case's attributes on one line: a tensor attribute as its dtype and shape."""
    spelled = (
        (
            f"{name!r}: {value.dtype}{list(value.shape)}"
            if type(value).__name__ == "ndarray"  # (numpy's dtypes have a shape too)
            else f"{name!r}: {value!r}"
        )
        for name, value in attributes.items()
    )
    return "{" + ", ".join(spelled) + "}"


def _row(
    tests: ModuleType,
    case: dict[str, Any],
    types: dict[str, Any],
    how: str,
    inputs: dict[str, Any],
    figures: str,
    bad: bool,
) -> None:
    """One line of the table: the op and case, how it ran, the input shapes, the figures."""
    shapes = " ".join(str(list(v.shape)) for v in inputs.values())
    name = tests.TITLE + (f" {_shown(case['attributes'])}" if case["attributes"] else "")
    print(
        f"{name:44} {tests.types_id(types):8} {how:11} {shapes:30} {figures}"
        f"{'  MISMATCH' if bad else ''}"
    )


def _typed(tests: ModuleType, case: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """The case at a dtype binding: attributes that choose a dtype name the binding's."""
    if not hasattr(tests, "typed"):
        return case
    return {**case, "attributes": tests.typed(case["attributes"], types)}


def _mismatch(tests: ModuleType, got: list[Any], ref: tuple[Any, ...]) -> int:
    """1 where an output misses the reference by more than its tolerance (the tests' own
    comparison: strings and 4-bit values exactly, complex part by part), else 0."""
    for g, r in zip(got, ref, strict=True):  # (a variadic output: each of its values)
        try:
            tests._testing.assert_close(g, r, tests.TOLERANCES, "output")
        except AssertionError:
            return 1
    return 0


def _compare_pytorch_alone(
    tests: ModuleType, case: dict[str, Any], types: dict[str, Any], inputs: dict[str, Any]
) -> int:
    """A kernel op that runs in PyTorch alone (complex tensors): the PyTorch op against the
    reference; prints one row, returns 1 on a mismatch."""
    ref = tests.expected_outputs(inputs, case["attributes"], types)
    got = tests.run_torch(inputs, case["attributes"])
    bad = _mismatch(tests, got, ref)
    d_ref = max(_distance(g, r) for g, r in zip(got, ref, strict=True))
    _row(tests, case, types, "PyTorch", inputs, f"{d_ref:12.3g} {'-':>12}", bool(bad))
    return bad


def _compare_one_node(
    tests: ModuleType, case: dict[str, Any], types: dict[str, Any], inputs: dict[str, Any]
) -> int:
    """A kernel op without a PyTorch side: its one-node model in ONNX Runtime against the
    reference (string outputs compare exactly); prints one row, returns 1 on a mismatch."""
    case = _typed(tests, case, types)
    session = tests._testing.session(tests.single_node(inputs, case["attributes"]), tests.LIBRARY)
    ref = tests.expected_outputs(inputs, case["attributes"], types)
    got = tests.run_ort(session, inputs)
    bad = _mismatch(tests, got, ref)
    verdict = "differ" if bad else "equal"
    _row(tests, case, types, "one node", inputs, f"{'-':>12} {verdict:>12}", bool(bad))
    return bad


def run(output_dir: Path) -> int:
    sys.path.insert(0, str(output_dir.resolve().parent))
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    package = importlib.import_module(output_dir.name)
    failures = 0
    print(
        f"{'op (attributes)':44} {'dtypes':8} {'exporter':11} {'input shapes':30} "
        f"{'|torch-ref|':>12} {'|ort-torch|':>12}"
    )
    print(
        "(an op without a PyTorch side runs its one-node model: ONNX Runtime against the "
        "reference; one for PyTorch alone, the PyTorch op against it)"
    )
    with tempfile.TemporaryDirectory() as temp:
        for op in package.OPS:
            op_id = op.__name__.rsplit(".", 1)[-1]
            tests = importlib.import_module(f"{package.__name__}.{op_id}.test_{op_id}")
            if op.translation is None and tests.LIBRARY is not None:
                for case in tests.RANDOM_CASES:  # a kernel op for ONNX Runtime only
                    for types in tests.TYPES:
                        for size_index in range(tests.sizes(case)):
                            inputs = tests.make_inputs(case, size_index, types, seed=size_index + 1)
                            failures += _compare_one_node(tests, case, types, inputs)
            if op.translation is None and tests.LIBRARY is None and hasattr(tests, "run_torch"):
                for case in tests.RANDOM_CASES:  # a kernel op for PyTorch only
                    for types in tests.TYPES:
                        for size_index in range(tests.sizes(case)):
                            inputs = tests.make_inputs(case, size_index, types, seed=size_index + 1)
                            failures += _compare_pytorch_alone(tests, case, types, inputs)
            if op.translation is None:
                continue  # not exported
            for case in tests.RANDOM_CASES:
                for types, exporters in zip(tests.TYPES, tests.TYPE_EXPORTERS, strict=True):
                    for exporter in exporters:
                        path = Path(temp) / f"{op_id}-{exporter}.onnx"
                        with contextlib.redirect_stdout(io.StringIO()):  # exporter progress
                            model = tests.export(case, types, exporter, path)
                        session = tests._testing.session(model, tests.EXPORT_LIBRARIES)
                        for size_index in range(tests.sizes(case)):
                            inputs = tests.make_inputs(case, size_index, types, seed=size_index + 1)
                            typed = _typed(tests, case, types)
                            failures += _compare(tests, typed, types, exporter, session, inputs)
    print(
        "all ops agree within their declared tolerances"
        if not failures
        else f"{failures} mismatches"
    )
    return EXIT_OK if not failures else EXIT_FAILED
