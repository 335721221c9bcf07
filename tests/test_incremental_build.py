"""Incremental builds are correct and minimal: after one op's kernel or definition changes, the
rebuild compiles what depends on that op and nothing that depends only on the others, and the
libraries then compute what the new kernel says.

Three element-wise ops of one domain (CustomOpOne renamed: inc_a and inc_c with the kernel in
the definition, inc_b with its kernel in a file beside it), built with unity batches of two
wrappers, so that the ops' wrappers fall into different batches (ONNX Runtime's: [the domain's
library file, inc_a], [inc_b, inc_c]), and CMake's global unity build on, which must leave the
kernels one unit each."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pybind11
import pytest

from generator.build import ort_include_dir

# One test process runs the whole module (pytest-xdist's loadgroup): its tests edit one project
# in turn, each after the one before.
pytestmark = pytest.mark.xdist_group("test_incremental_build")

ROOT = Path(__file__).resolve().parent.parent
OPS = ("inc_a", "inc_b", "inc_c")
SUM = "Z.data[i] = X.data[i] + Y.data[i];"
KERNEL_FILE = f"""namespace opgen::inc_b {{

template <typename T>
void compute(const opgen::Context& ctx, const opgen::Input<T>& X, const opgen::Input<T>& Y,
             const opgen::Output<T>& Z, const Attributes& attrs) {{
  (void)attrs;
  ctx.parallel_for(Z.numel(), [&](int64_t begin, int64_t end) {{
    for (int64_t i = begin; i < end; ++i) {SUM}
  }});
}}

}}  // namespace opgen::inc_b
"""
# The three ops on X = [1, 2], Y = [10, 20], through PyTorch (the native library) and ONNX
# Runtime (the custom-op library), printed as JSON.
RESULTS = """
import json, sys
import numpy as np, onnx, onnxruntime as ort, torch
from onnx import TensorProto, helper
import generated

x, y = torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])
options = ort.SessionOptions()
options.register_custom_ops_library(str(generated.get_library_path("inc.ops")))
results = {}
for op_id, op_type in [("inc_a", "IncA"), ("inc_b", "IncB"), ("inc_c", "IncC")]:
    graph = helper.make_graph(
        [helper.make_node(op_type, ["X", "Y"], ["Z"], domain="inc.ops")], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "XY"],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("inc.ops", 1)])
    session = ort.InferenceSession(model.SerializeToString(), options)
    (ort_z,) = session.run(None, {"X": x.numpy(), "Y": y.numpy()})
    torch_z = getattr(torch.ops.inc_ops, op_id)(x, y)
    results[op_id] = {"torch": torch_z.tolist(), "ort": ort_z.tolist()}
json.dump(results, sys.stdout)
"""


def _definition(op_id: str, kernel_in_file: bool) -> str:
    text = (ROOT / "opdefs" / "custom_op_one.yaml").read_text()
    op_type = "".join(part.capitalize() for part in op_id.split("_"))
    text = (
        text.replace("op: CustomOpOne", f"op: {op_type}")
        .replace("test_customop::custom_op_one", f"inc_ops::{op_id}")
        .replace("domain: test.customop", "domain: inc.ops")
        .replace("  cuda: custom_op_one_kernel.cuh\n", "")  # (its namespace is the op's)
    )
    if kernel_in_file:
        body = text[text.index("kernel:\n") : text.index("\ntests:")]
        text = text.replace(body, f"kernel:\n  source: {op_id}_kernel.h\n")
    return text


class Project:
    def __init__(self, root: Path):
        self.root = root
        self.opdefs = root / "opdefs"
        self.build_dir = root / "build"

    def generate(self) -> list[str]:
        """Regenerates; the generated files that changed."""
        done = subprocess.run(
            [sys.executable, "-m", "generator", "--opdefs-dir", "opdefs"],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return re.findall(r"^(?:new|changed): (?:\S*/)?generated/(\S+)$", done.stdout, re.M)

    def build(self) -> tuple[set[str], set[str]]:
        """Rebuilds; the objects compiled and the artifacts linked."""
        done = subprocess.run(
            ["cmake", "--build", str(self.build_dir)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        compiled = set(re.findall(r"Building CXX object (\S+)", done.stdout))
        linked = set(re.findall(r"Linking CXX \S+ (?:\S+ )*?(\S+)$", done.stdout, re.M))
        return compiled, linked

    def results(self) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", RESULTS],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, "OPGEN_BUILD_DIR": str(self.build_dir)},
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def units_with(self, op_id: str) -> set[str]:
        """The objects (as ninja names them) whose unit compiles a source file of the op: its
        kernel, and the unity batches that include one of its wrappers."""
        units = {f"CMakeFiles/opgen_inc_ops_kernel_objects.dir/{op_id}/{op_id}_kernel.cc.o"}
        for batch in self.build_dir.glob("CMakeFiles/*.dir/Unity/unity_*_cxx.cxx"):
            if f"/{op_id}/" in batch.read_text():
                units.add(f"{batch.relative_to(self.build_dir)}.o")
        return units


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    root = tmp_path_factory.mktemp("incremental")
    (root / "opdefs").mkdir()
    for op_id in OPS:
        in_file = op_id == "inc_b"
        (root / "opdefs" / f"{op_id}.yaml").write_text(_definition(op_id, in_file))
    (root / "opdefs" / "inc_b_kernel.h").write_text(KERNEL_FILE)
    made = Project(root)
    made.generate()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = subprocess.run(
        [
            "cmake", "-S", str(root / "generated"), "-B", str(made.build_dir), *generator,
            f"-DORT_INCLUDE_DIR={ort_include_dir(lambda message: None)}",
            f"-DPython_EXECUTABLE={sys.executable}", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            # A global unity build (as a parent project might ask) must not batch the kernels.
            "-DOPGEN_UNITY_BATCH_SIZE=2", "-DCMAKE_UNITY_BUILD=ON",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stdout + configure.stderr
    made.build()
    return made


def test_a_fresh_build_computes_what_the_kernels_say(project):
    assert project.results() == {
        op_id: {"torch": [11.0, 22.0], "ort": [11.0, 22.0]} for op_id in OPS
    }
    compiled, linked = project.build()
    assert (compiled, linked) == (set(), set()), "a rebuild with nothing changed did work"


def _libraries(linked: set[str]) -> set[str]:
    return {Path(artifact).name.split(".")[0] for artifact in linked}


def test_editing_a_kernel_in_a_definition_rebuilds_that_kernel_only(project):
    definition = project.opdefs / "inc_a.yaml"
    original = definition.read_text()
    definition.write_text(original.replace(SUM, "Z.data[i] = X.data[i] + 2 * Y.data[i];"))
    try:
        assert project.generate() == ["inc_a/inc_a_kernel.cc"]
        compiled, linked = project.build()
        assert compiled == {"CMakeFiles/opgen_inc_ops_kernel_objects.dir/inc_a/inc_a_kernel.cc.o"}
        # The three libraries linking the kernels, and not the schema tests.
        assert _libraries(linked) == {
            "libopgen_inc_ops", "opgen_inc_ops_kernels", "libopgen_inc_ops_torch"
        }  # fmt: skip
        results = project.results()
        assert results["inc_a"] == {"torch": [21.0, 42.0], "ort": [21.0, 42.0]}
        assert results["inc_b"] == results["inc_c"] == {"torch": [11.0, 22.0], "ort": [11.0, 22.0]}
    finally:
        definition.write_text(original)
        project.generate()
        project.build()
    assert project.results()["inc_a"] == {"torch": [11.0, 22.0], "ort": [11.0, 22.0]}


def test_editing_a_kernel_file_rebuilds_that_kernel_only(project):
    kernel = project.opdefs / "inc_b_kernel.h"
    kernel.write_text(KERNEL_FILE.replace(SUM, "Z.data[i] = X.data[i] * Y.data[i];"))
    try:
        assert project.generate() == [], "the kernel file is #included, never copied"
        compiled, linked = project.build()
        assert compiled == {"CMakeFiles/opgen_inc_ops_kernel_objects.dir/inc_b/inc_b_kernel.cc.o"}
        assert len(linked) == 3
        results = project.results()
        assert results["inc_b"] == {"torch": [10.0, 40.0], "ort": [10.0, 40.0]}
        assert results["inc_a"] == {"torch": [11.0, 22.0], "ort": [11.0, 22.0]}
    finally:
        kernel.write_text(KERNEL_FILE)
        project.build()


def test_editing_a_definition_rebuilds_the_batches_holding_that_op(project):
    """A change to an op's definition regenerates some of its wrappers: their batches recompile
    (with the other wrappers in them: the trade-off of unity builds), the other batches and
    every kernel do not. (An input's doc reaches the C++ schema: here inc_c's schema batch.)"""
    definition = project.opdefs / "inc_c.yaml"
    original = definition.read_text()
    definition.write_text(original.replace("doc: The shape of X", "doc: X's shape"))
    try:
        changed = project.generate()
        assert changed and all(path.startswith(("inc_c/", "docs/")) for path in changed), changed
        compiled, _ = project.build()
        assert compiled, "the changed wrappers were not rebuilt"
        assert compiled <= project.units_with("inc_c"), compiled - project.units_with("inc_c")
        untouched = (
            project.units_with("inc_a") | project.units_with("inc_b")
        ) - project.units_with("inc_c")
        assert untouched and not compiled & untouched
    finally:
        definition.write_text(original)
        project.generate()
        project.build()
