"""String tensors in ONNX Runtime (issue 28), on the shipped StringReplace: hostile strings (bytes
that are not UTF-8, NULs in data and attributes, empty and huge strings, empty and 0-d tensors,
many threads on one session) on the normal and on the sanitizer build, and agreement with
onnxruntime-extensions' StringRegexReplace, which users compare it with. The generated parity
tests (generated/string_replace) cover the reference on random strings."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from generated import _testing
from tests.test_sanitizers import SANITIZER_REPORT

ROOT = Path(__file__).resolve().parent.parent
STRING = TensorProto.STRING


def replace_model(pattern: bytes, rewrite: bytes, x: list[bytes] | None = None) -> onnx.ModelProto:
    """StringReplace of the input X, or of a constant holding `x` (bytes the Python API cannot
    feed: it encodes every str as UTF-8 and refuses bytes)."""
    node = helper.make_node(
        "StringReplace", ["X"], ["Y"], domain="ai.opgen", pattern=pattern, rewrite=rewrite
    )
    nodes, inputs = [node], [helper.make_tensor_value_info("X", STRING, None)]
    if x is not None:
        constant = helper.make_tensor("x", STRING, [len(x)], x)
        nodes, inputs = [helper.make_node("Constant", [], ["X"], value=constant), node], []
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_tensor_value_info("Y", STRING, None)]
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("ai.opgen", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)


def _python_replace(x: np.ndarray, pattern: str, rewrite: str) -> np.ndarray:
    return np.vectorize(lambda s: s.replace(pattern, rewrite), otypes=[object])(x)


# Run in a subprocess per build, so that a crash or a sanitizer report fails these tests only.
_HOSTILE = r"""
import threading
import numpy as np
from generated import _testing
from tests.test_string_ops import _python_replace, replace_model

def session(model, threads=1):
    return _testing.session(model, "ai_opgen", threads=threads)

def run(model, x, threads=1):
    return session(model, threads).run(None, {"X": x})[0]

strings = lambda *values: np.array(values, dtype=object)

# Bytes that are not UTF-8, in the data and in the attributes: replaced as bytes.
y = session(replace_model(b"\xff", b"-", [b"a\xffb\xff", b"\xff", b""])).run(None, {})[0]
assert list(y) == ["a-b-", "-", ""], y
# A result that is not UTF-8: ONNX Runtime's Python API cannot decode it (its error, no crash).
try:
    session(replace_model(b"q", b"\xfe", [b"q"])).run(None, {})
except UnicodeDecodeError as error:
    print("not UTF-8:", error)
else:
    raise AssertionError("a result that is not UTF-8 decoded")

# NULs: in the data, the pattern and the rewrite (ONNX attributes are bytes too).
y = run(replace_model(b"\0", b"\0\0"), strings("a\0b", "\0", "", "no nul"))
assert list(y) == ["a\0\0b", "\0\0", "", "no nul"], y
y = run(replace_model(b"b\0", b""), strings("ab\0c", "b\0b\0", "b"))
assert list(y) == ["ac", "", "b"], y

# Empty tensors and a 0-d one.
for shape in [(0,), (3, 0), (0, 2, 0)]:
    y = run(replace_model(b"a", b"b"), np.empty(shape, dtype=object))
    assert y.shape == shape, y.shape
y = run(replace_model(b"a", b"bb"), np.array("aXa", dtype=object))
assert y.shape == () and y[()] == "bbXbb", y

# A huge string (16 Mi characters grow to 24 Mi), and one huge occurrence.
big = "ab" * (1 << 23)
y = run(replace_model(b"b", b"cc"), strings(big, "b"))
assert len(y[0]) == 3 << 23 and y[0][:6] == "acca" + "cc" and y[1] == "cc", len(y[0])
y = run(replace_model(big.encode(), b"!"), strings(big + big, big[:-1]))
assert list(y) == ["!!", big[:-1]], [len(v) for v in y]

# Many strings, two intra-op threads, eight Python threads on one session at once.
rng = np.random.default_rng(0)
alphabet = list("ab\0é😀 ")
many = np.array(["".join(rng.choice(alphabet, rng.integers(0, 20))) for _ in range(50000)],
                dtype=object).reshape(500, 100)
shared = session(replace_model("é".encode(), "<ab>".encode()), threads=2)
want = _python_replace(many, "é", "<ab>")
failures = []

def worker():
    for _ in range(3):
        got = shared.run(None, {"X": many})[0]
        if not (got.shape == want.shape and (got == want).all()):
            failures.append("mismatch")

threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not failures, failures

# The empty pattern: an error status naming the op, then the session works on.
try:
    run(replace_model(b"", b"x"), strings("abc"))
except Exception as error:
    assert "StringReplace: attribute 'pattern' must not be empty" in str(error), error
else:
    raise AssertionError("an empty pattern ran")
print("hostile strings ok")
"""


@pytest.mark.parametrize("build", ["normal", "sanitized"])
def test_hostile_strings(build, request):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if build == "sanitized":
        env = request.getfixturevalue("sanitizer_env")
    result = subprocess.run(
        [sys.executable, "-c", _HOSTILE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    output = result.stdout + result.stderr
    assert not SANITIZER_REPORT.findall(output), output[-20000:]
    assert result.returncode == 0 and "hostile strings ok" in result.stdout, output[-8000:]
    assert "not UTF-8: 'utf-8' codec can't decode byte 0xfe" in result.stdout, result.stdout


def _extensions_session():
    """onnxruntime-extensions' StringRegexReplace (text, pattern, rewrite: all tensors)."""
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    node = helper.make_node("StringRegexReplace", ["X", "P", "R"], ["Y"], domain="ai.onnx.contrib")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", STRING, None),
            helper.make_tensor_value_info("P", STRING, [1]),
            helper.make_tensor_value_info("R", STRING, [1]),
        ],
        [helper.make_tensor_value_info("Y", STRING, None)],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("ai.onnx.contrib", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION)
    options = ort.SessionOptions()
    options.register_custom_ops_library(get_library_path())
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


@pytest.mark.parametrize(
    "pattern, rewrite", [("a", "<é>"), ("é", ""), ("ab", "ba"), ("😀", "x"), (" ", "  ")]
)
def test_agrees_with_onnxruntime_extensions(pattern, rewrite):
    """On strings without NUL: extensions' StringRegexReplace (RE2, a literal pattern) cuts a
    string at its first NUL (found here: "x\\0-y" gives "x"), ours keeps every byte."""
    gen = torch.Generator().manual_seed(len(pattern) * 31 + len(rewrite))
    x = _testing.random_strings([64, 33], gen)
    x = np.vectorize(lambda s: s.replace("\0", ""), otypes=[object])(x)
    theirs = _extensions_session().run(
        None,
        {
            "X": x,
            "P": np.array([re.escape(pattern)], dtype=object),
            "R": np.array([rewrite], dtype=object),
        },
    )[0]
    ours = _testing.session(replace_model(pattern.encode(), rewrite.encode()), "ai_opgen").run(
        None, {"X": x}
    )[0]
    want = _python_replace(x, pattern, rewrite)
    assert (ours == want).all()
    assert (theirs == want).all()


def test_the_tests_cast_never_converts_in_silence():
    """What a reference or sampler gives reaches the comparison as it is, or fails naming
    itself: once, an object array of numbers for an int64 output became zeros (a wrong kernel
    passed), and numpy's fixed-width strings dropped trailing NULs."""
    numbers = _testing.cast(np.array([1, 2], dtype=object), torch.int64, "output L")
    assert numbers.tolist() == [1, 2] and numbers.dtype == torch.int64
    for value, dtype, message in [
        (np.array(["ab", "c"], dtype=object), torch.int64, "output L: strings"),
        (np.array(["a\0"]), _testing.STRING, "output Y: a numpy array of dtype <U"),
        (np.array([1.5], dtype=object), _testing.STRING, "output Y: a string tensor holds a float"),
    ]:
        with pytest.raises(AssertionError, match=re.escape(message)):
            _testing.cast(value, dtype, message.split(":")[0])
    strings = np.array(["a\0", ""], dtype=object)
    assert _testing.cast(strings, _testing.STRING, "output Y") is not None
    assert _testing.retyped(strings, torch.int32).tolist() == [0, 0]
