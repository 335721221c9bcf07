"""The `torch.api` alternatives to the default native (C++) registration of a kernel op:
`library` (torch.library.Library from Python), `custom_op` (torch.library.custom_op, a
CustomOpDef) and `legacy` (the older torch._custom_op: custom_op, impl_abstract, impl("cpu")).
Each must run eagerly, pass opcheck, export with both exporters and match in ONNX Runtime;
`library` and `custom_op` also keep the gradient formula. The variant is generated into a temporary project that reuses this project's build
(same domain and kernel), and exercised in a fresh interpreter."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import sys
import torch
import onnx
import generated
from generated import _testing
from generated.inverse import torch_op

api, namespace, registered_type = sys.argv[1:]
op = getattr(torch.ops, namespace).inverse
assert type(torch_op.inverse).__name__ == registered_type, type(torch_op.inverse)
x = torch.tensor([[4.0, 7.0], [2.0, 6.0]])
torch.testing.assert_close(op(x), torch.tensor([[0.6, -0.7], [-0.2, 0.4]]))
batch = torch.randn(3, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
torch.library.opcheck(op.default, (batch,))
if api in ("library", "custom_op"):
    assert torch.autograd.gradcheck(op, (batch.clone().requires_grad_(),))


class Model(torch.nn.Module):
    def forward(self, X):
        return op(X) * 2


for exporter in ("dynamo", "torchscript"):
    path = f"{api}-{exporter}.onnx"
    generated.export_model(Model().eval(), (batch,), path, exporter=exporter, input_names=["X"],
                           output_names=["Y"], dynamic_axes={"X": {0: "batch"}})
    model = onnx.load(path)
    assert ("ai.opgen", "Inverse") in [(n.domain, n.op_type) for n in model.graph.node]
    session = _testing.session(model, "ai_opgen")
    for size in (2, 5):
        x = torch.randn(size, 4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
        (got,) = session.run(None, {"X": x.numpy()})
        torch.testing.assert_close(torch.from_numpy(got), torch.linalg.inv(x) * 2)
print(api, "api ok")
"""

# api -> (the registration call the generated torch_op.py makes, the type it binds the op to)
APIS = {
    "library": ("_LIBRARY.define(", "OpOverload"),
    "custom_op": ("torch.library.custom_op(", "CustomOpDef"),
    "legacy": ("_legacy_custom_op", "CustomOp"),
}


@pytest.mark.parametrize("api", APIS)
def test_torch_api(api, tmp_path, run_generator):
    registration, registered_type = APIS[api]
    namespace = f"opgen_{api}"
    shutil.copytree(ROOT / "opdefs", tmp_path / "opdefs")
    definition = tmp_path / "opdefs" / "inverse.yaml"
    text = definition.read_text()
    if api != "native":  # (a CUDA kernel is registered natively only, yet)
        text = text.replace("  cuda: inverse_kernel.cuh\n", "")
    if api == "legacy":  # the legacy API takes no gradient formulas
        text = re.sub(r"\ngradients:\n(  .*\n)+", "\n", text)
        assert "gradients" not in text
    definition.write_text(
        text.replace("name: opgen::inverse", f"name: {namespace}::inverse\n  api: {api}")
    )
    assert run_generator(cwd=tmp_path).returncode == 0
    assert registration in (tmp_path / "generated/inverse/torch_op.py").read_text()
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "OPGEN_BUILD_DIR": str(ROOT / "build")}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, api, namespace, registered_type],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert f"{api} api ok" in result.stdout
