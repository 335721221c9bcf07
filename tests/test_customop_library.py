"""Our library for domain test.customop stands in for ONNX Runtime's test custom-op library
(onnxruntime/test/testdata/custom_op_library): the model its Python test uses, two nodes
CustomOpOne(x, y) -> CustomOpTwo -> int32 output, built here by hand, runs with our library
and gives C's round of x + y."""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import generated


def two_node_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("CustomOpOne", ["x", "y"], ["sum"], domain="test.customop"),
        helper.make_node("CustomOpTwo", ["sum"], ["out"], domain="test.customop"),
    ]
    graph = helper.make_graph(
        nodes,
        "custom_op_test",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.INT32, [3, 5])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("test.customop", 1)],
        ir_version=10,
    )


def run(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.register_custom_ops_library(generated.ort_library("test.customop"))
    session = ort.InferenceSession(
        two_node_model().SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    (out,) = session.run(None, {"x": x, "y": y})
    return out


def test_the_upstream_example_inputs():
    # ONNX Runtime's own test feeds ones and zeros and expects ones.
    out = run(np.ones((3, 5), np.float32), np.zeros((3, 5), np.float32))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.ones((3, 5), np.int32))


def test_rounds_halves_away_from_zero_like_c():
    x = np.array([[0.25, 1.0, 2.0, -0.25, -1.0]] * 3, np.float32)
    y = np.array([[0.25, 0.5, 0.5, -0.25, -0.5]] * 3, np.float32)
    out = run(x, y)
    np.testing.assert_array_equal(out, np.array([[1, 2, 3, -1, -2]] * 3, np.int32))


def test_random_inputs():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5)) * 50).astype(np.float32)
    y = (rng.standard_normal((3, 5)) * 50).astype(np.float32)
    total = x + y
    want = (np.sign(total) * np.floor(np.abs(total) + 0.5)).astype(np.int32)
    np.testing.assert_array_equal(run(x, y), want)


def test_an_onnxruntime_older_than_the_headers_is_refused_naming_both(tmp_path):
    """The libraries are built against ONNX Runtime 1.29's headers (API version 29): loaded
    into onnxruntime 1.20, a real install of it in a fresh environment, registration fails with
    a message naming what is needed and what runs, and the process lives on."""
    import subprocess
    import sys

    env_dir = tmp_path / "old-ort"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    install = subprocess.run(
        [env_dir / "bin" / "pip", "install", "-q", "onnxruntime==1.20.0", "numpy<2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    script = (
        "import onnxruntime as ort, sys\n"
        "options = ort.SessionOptions()\n"
        "try:\n"
        "    options.register_custom_ops_library(sys.argv[1])\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error)\n"
        "print('alive', ort.__version__)\n"
    )
    result = subprocess.run(
        [env_dir / "bin" / "python", "-c", script, generated.ort_library("test.customop")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "libopgen_test_customop.so needs ONNX Runtime API version 29 (onnxruntime 1.29 or "
        "later), and this process runs onnxruntime 1.20.0: upgrade onnxruntime, or rebuild "
        "the library against older headers (ORT_INCLUDE_DIR)"
    ) in result.stdout, result.stdout
    assert result.stdout.splitlines()[-1] == "alive 1.20.0"
