"""A library never takes over an op it does not own: a kernel or a function in a domain ONNX
Runtime owns is refused at its field, unless a kernel says `replaces: onnxruntime`
(generator/model/onnxruntime_domains.py). A held-out user's imported com.microsoft::FastGelu
with a kernel added silently replaced ONNX Runtime's own in every session loading the library."""

import shutil
from pathlib import Path

import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import get_all_operator_schema

from generator.errors import DefinitionErrors
from generator.model.names import ONNX_DOMAINS
from generator.model.onnxruntime_domains import onnxruntime_owns
from generator.parse.op import parse_opdef

ROOT = Path(__file__).resolve().parent.parent
OPDEFS = ROOT / "opdefs"

# Every domain of the installed onnxruntime's schemas, and sub-domains of its roots that no
# schema names (yet): the rule is by domain, so a newer runtime's new ops are covered.
INSTALLED = sorted({s.domain for s in get_all_operator_schema()} - set(ONNX_DOMAINS))
OWNED = INSTALLED + ["com.microsoft.experimental", "com.microsoft.dml", "com.ms.next"]


def test_every_domain_of_the_installed_onnxruntime_is_owned():
    assert "com.microsoft" in INSTALLED and len(INSTALLED) >= 3, INSTALLED
    assert [d for d in INSTALLED if not onnxruntime_owns(d)] == []


@pytest.mark.parametrize(
    "domain", ["ai.opgen", "com.microsoftx", "com", "microsoft", "org.pytorch", "my.com.microsoft"]
)
def test_a_domain_of_ones_own_is_not_owned(domain):
    assert not onnxruntime_owns(domain)


def _errors(tmp_path: Path, stem: str, *edits: tuple[str, str]) -> list[str]:
    """The messages (field path: text) of opdefs/<stem>.yaml with each edit made, or []."""
    for file in OPDEFS.glob(f"{stem}*"):
        shutil.copy(file, tmp_path / file.name)
    path = tmp_path / f"{stem}.yaml"
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    try:
        parse_opdef(path, f"{stem}.yaml")
    except DefinitionErrors as errors:
        return [f"{e.field}: {e.message}" for e in errors.errors]
    return []


@pytest.mark.parametrize("domain", OWNED)
def test_a_kernel_in_onnxruntimes_domain_is_refused_unless_it_replaces(tmp_path, domain):
    moved = ("domain: ai.opgen", f"domain: {domain}")
    (error,) = _errors(tmp_path, "inverse", moved)
    assert error.startswith(f"kernel: '{domain}' is ONNX Runtime's domain"), error
    assert f"silently replace ONNX Runtime's own {domain}::Inverse" in error
    assert "'provided_by: onnxruntime'" in error and "'replaces: onnxruntime'" in error
    assert (
        _errors(tmp_path, "inverse", moved, ("version: 1\n", "version: 1\nreplaces: onnxruntime\n"))
        == []
    )


@pytest.mark.parametrize("domain", OWNED[:2])
def test_a_function_in_onnxruntimes_domain_is_refused(tmp_path, domain):
    """ONNX Runtime runs its own op and ignores a model-local function of that name (checked by
    test_onnxruntime_ignores_a_model_local_function_of_its_own_op)."""
    moved = ("domain: custom.aten", f"domain: {domain}")
    (error,) = _errors(tmp_path, "aten_add", moved)
    assert error.startswith(f"function: '{domain}' is ONNX Runtime's domain"), error
    replacing = ("version: 1\n", "version: 1\nreplaces: onnxruntime\n")
    errors = _errors(tmp_path, "aten_add", moved, replacing)
    assert any(
        e.startswith("replaces: only a kernel compiled into the ONNX Runtime") for e in errors
    )


def test_replaces_where_there_is_nothing_to_replace_is_refused(tmp_path):
    replacing = ("version: 1\n", "version: 1\nreplaces: onnxruntime\n")
    (error,) = _errors(tmp_path, "inverse", replacing)
    assert error.startswith("replaces: ONNX Runtime owns no domain 'ai.opgen'"), error
    pytorch_alone = _errors(
        tmp_path, "complex_rotate", ("domain: ai.opgen", "domain: com.microsoft"), replacing
    )
    assert any(e.startswith("replaces: only a kernel compiled into") for e in pytorch_alone)
    (error,) = _errors(tmp_path, "inverse", ("version: 1\n", "version: 1\nreplaces: onnx\n"))
    assert error == "replaces: expected one of ['onnxruntime'], found 'onnx'"


def test_onnxruntime_ignores_a_model_local_function_of_its_own_op():
    """Why a function there is refused: a com.microsoft::Gelu function whose body is Neg still
    runs ONNX Runtime's Gelu."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    body = [helper.make_node("Neg", ["X"], ["Y"])]
    function = helper.make_function(
        "com.microsoft", "Gelu", ["X"], ["Y"], body, [helper.make_opsetid("", 18)]
    )
    node = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=[function], ir_version=10)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.array([1.0, 2.0, -1.0], np.float32)})
    assert np.allclose(y, [0.8413447, 1.9544997, -0.15865526]), y
