"""`python -m generator run` (the README's main command after set-up) exports every shipped
op with both exporters and compares PyTorch with ONNX Runtime; it must succeed, and warn of
nothing (the exporters' and ONNX Runtime's warnings included)."""

import subprocess
import sys
from pathlib import Path

from output_warnings import warning_lines

ROOT = Path(__file__).resolve().parent.parent


def test_run_command_agrees_for_every_shipped_op():
    result = subprocess.run(
        [sys.executable, "-m", "generator", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "all ops agree within their declared tolerances" in result.stdout
    assert "MISMATCH" not in result.stdout
    # Nothing the user did not cause: no line that warns (what counts: output_warnings.py), such
    # as the TorchScript exporter's for an output its symbolic left untyped.
    found = warning_lines(result.stdout, result.stderr)
    assert not found, "\n".join(found[:20])
    for title in ("ai.opgen::Inverse", "mydomain::CustomGroupNorm", "aten::gelu.default"):
        assert title in result.stdout, title
    # An op without a PyTorch side (strings) runs its one-node model against the reference.
    rows = [line for line in result.stdout.splitlines() if "ai.opgen::StringReplace" in line]
    assert rows and all("one node" in row and row.endswith("equal") for row in rows), rows
    # A tensor attribute is shown as its dtype and shape, its row on one line.
    rows = [line for line in result.stdout.splitlines() if "CodebookDequantize" in line]
    assert rows and all("'codebook': float32[" in row and row.endswith("equal") for row in rows)
