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


def run(output_dir: Path) -> int:
    sys.path.insert(0, str(output_dir.resolve().parent))
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    import onnx
    import torch

    package = importlib.import_module(output_dir.name)
    failures = 0
    print(
        f"{'op':28} {'dtype':8} {'exporter':11} {'shapes':26} {'max |torch-ref|':>16} {'max |ort-torch|':>16}"
    )
    with tempfile.TemporaryDirectory() as temp:
        for op in package.OPS:
            op_id = op.__name__.rsplit(".", 1)[-1]
            tests = importlib.import_module(f"{package.__name__}.{op_id}.test_{op_id}")
            case = tests.RANDOM_CASES[0]
            for dtype in tests.DTYPES:
                for exporter in tests.EXPORTERS:
                    path = Path(temp) / f"{op_id}-{exporter}.onnx"
                    first = tests.make_inputs(case, 0, dtype, seed=0)
                    with contextlib.redirect_stdout(io.StringIO()):  # exporter progress lines
                        package.export_model(
                            tests.Model(case["attributes"]),
                            tuple(first.values()),
                            path,
                            exporter=exporter,
                            input_names=tests.INPUTS,
                            output_names=tests.OUTPUTS,
                            dynamic_axes=tests.dynamic_axes(case),
                        )
                    session = tests._testing.session(onnx.load(str(path)), tests.LIBRARY)
                    sizes = len(next(iter(case["dynamic"].values()), [0]))
                    for size_index in range(max(sizes, 1)):
                        inputs = tests.make_inputs(case, size_index, dtype, seed=size_index + 1)
                        ref = tests.expected_outputs(inputs, case["attributes"], dtype)
                        got = tests.run_torch(inputs, case["attributes"])
                        ort = tests.run_ort(session, inputs)
                        d_ref = max(
                            float((g.double() - r.double()).abs().max())
                            for g, r in zip(got, ref, strict=True)
                        )
                        d_ort = max(
                            float((o.double() - g.double()).abs().max())
                            for o, g in zip(ort, got, strict=True)
                        )
                        rtol, atol = tests.TOLERANCES[dtype]
                        bad = not all(
                            torch.allclose(o.double(), r.double(), rtol=rtol, atol=atol)
                            for o, r in zip(ort, ref, strict=True)
                        )
                        failures += bad
                        shapes = " ".join(str(list(v.shape)) for v in inputs.values())
                        print(
                            f"{op.DOMAIN + '::' + op.OP_TYPE:28} {str(dtype)[6:]:8} {exporter:11} "
                            f"{shapes:26} {d_ref:16.3g} {d_ort:16.3g}{'  MISMATCH' if bad else ''}"
                        )
    print(
        "all ops agree within their declared tolerances"
        if not failures
        else f"{failures} mismatches"
    )
    return 0 if not failures else 1
