"""`torch.api: legacy` generates the older torch._custom_op registration (custom_op,
impl_abstract, impl("cpu")); it must run eagerly, export with both exporters, and match
in ONNX Runtime. The variant is generated into a temporary project that reuses this
project's build (same domain and kernel), and exercised in a fresh interpreter."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import torch
import onnx
import generated
from generated import _testing
from generated.inverse import torch_op

assert type(torch_op.inverse).__name__ == "CustomOp", type(torch_op.inverse)
x = torch.tensor([[4.0, 7.0], [2.0, 6.0]])
y = torch.ops.opgen_legacy.inverse(x)
torch.testing.assert_close(y, torch.tensor([[0.6, -0.7], [-0.2, 0.4]]))


class Model(torch.nn.Module):
    def forward(self, X):
        return torch.ops.opgen_legacy.inverse(X) * 2


batch = torch.randn(3, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
for exporter in ("dynamo", "torchscript"):
    path = f"legacy-{exporter}.onnx"
    generated.export_model(Model(), (batch,), path, exporter=exporter, input_names=["X"],
                           output_names=["Y"], dynamic_axes={"X": {0: "batch"}})
    model = onnx.load(path)
    assert ("ai.opgen", "Inverse") in [(n.domain, n.op_type) for n in model.graph.node]
    session = _testing.session(model, "ai_opgen")
    for size in (2, 5):
        x = torch.randn(size, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
        (got,) = session.run(None, {"X": x.numpy()})
        torch.testing.assert_close(torch.from_numpy(got), torch.linalg.inv(x) * 2)
print("legacy api ok")
"""


def test_legacy_custom_op_api(tmp_path, run_generator):
    shutil.copytree(ROOT / "opdefs", tmp_path / "opdefs")
    definition = tmp_path / "opdefs" / "inverse.yaml"
    text = definition.read_text()
    text = re.sub(r"\ngradients:\n(  .*\n)+", "\n", text)  # register_autograd is custom_op's
    assert "gradients" not in text
    definition.write_text(
        text.replace("name: opgen::inverse", "name: opgen_legacy::inverse\n  api: legacy")
    )
    assert run_generator(cwd=tmp_path).returncode == 0
    assert "_legacy_custom_op" in (tmp_path / "generated/inverse/torch_op.py").read_text()
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "OPGEN_BUILD_DIR": str(ROOT / "build")}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "legacy api ok" in result.stdout
