"""The generated package's export helpers work alone, as a user calls them with PyTorch's own
`torch.onnx.export` in a fresh process: `custom_translation_table()` for the dynamo exporter and
`custom_opsets()` for the TorchScript one, with no `register_all()` or `export_model` before.
(The table once failed with "No schema registered for 'Inverse' version '1'" unless
`register_all()` had run.)"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys, numpy as np, onnx, torch
import generated
from generated import _testing

class Model(torch.nn.Module):
    def forward(self, X):
        return torch.ops.opgen.inverse(X) * 2

x = torch.randn(3, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
path = "model.onnx"
if sys.argv[1] == "dynamo":
    torch.onnx.export(Model().eval(), (x,), path, dynamo=True, input_names=["X"],
                      custom_translation_table=generated.custom_translation_table())
else:
    torch.onnx.export(Model().eval(), (x,), path, dynamo=False, input_names=["X"],
                      custom_opsets=generated.custom_opsets())
model = onnx.load(path)
assert ("ai.opgen", "Inverse") in [(n.domain, n.op_type) for n in model.graph.node]
(got,) = _testing.session(model, "ai_opgen").run(None, {"X": x.numpy()})
torch.testing.assert_close(torch.from_numpy(got), torch.linalg.inv(x) * 2)
print("exported alone")
"""


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_the_export_helpers_work_without_register_all(tmp_path, exporter):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, exporter],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "exported alone" in result.stdout
