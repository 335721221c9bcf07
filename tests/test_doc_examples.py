"""The example on each op's reference page (generated/docs/<op>.md) runs as written: its
inputs (drawn as the op's tests draw them, in the first dtype binding), the PyTorch call and the
ONNX node, which the ONNX checker accepts with the op's schema registered. Pages that once
called torch.randn() for a 0-d input, passed a uint8 op float32 values, or gave a Tensor[] op
its values one by one, failed when copied."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p for p in (ROOT / "generated" / "docs").glob("*.md") if p.name != "index.md")


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_the_reference_page_example_runs(page):
    (example,) = re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)
    check = (
        "\nimport onnx\n"
        "version = onnx.defs.get_schema(node.op_type, domain=node.domain).since_version\n"
        "context = onnx.checker.C.CheckerContext()\n"
        "context.ir_version = 10\n"
        "context.opset_imports = {'': 21, node.domain: version}\n"
        "onnx.checker.check_node(node, context)\n"
    )
    script = example + (check if "node = " in example else "")
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{page.name}:\n{example}\n{result.stderr[-3000:]}"
