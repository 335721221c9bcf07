"""Variadic outputs in PyTorch's exporters (issue 28), on the shipped ClipByGlobalNorm: a call
giving the variadic output no value cannot be exported (ONNX has no list of no values without
its element type), and either exporter says so naming the op rather than failing inside torch;
the dynamo translation, which builds its node through the exporter's recorder, says so outside
an export. The generated parity tests (generated/clip_by_global_norm) export calls with values;
definitions whose exported test cases give it none are refused (test_definition_errors)."""

import pytest
from onnxscript.values import Opset

import generated
from generated import _support


def test_the_torchscript_symbolic_of_no_value_names_the_op():
    with pytest.raises(RuntimeError, match="^ClipByGlobalNorm: the TorchScript exporter exports"):
        _support.symbolic_node_with_values(
            None, "ClipByGlobalNorm", "ai.opgen::ClipByGlobalNorm", 1, 0
        )


def test_the_dynamo_translation_names_the_op():
    generated.register_all()  # the ONNX schemas onnxscript reads
    op = Opset("ai.opgen", 1).ClipByGlobalNorm
    with pytest.raises(RuntimeError, match="^ClipByGlobalNorm: the dynamo exporter exports"):
        _support.node_with_values("ClipByGlobalNorm", op, 1, 0, X=[], max_norm=1.0)
    with pytest.raises(RuntimeError, match="^ClipByGlobalNorm: its dynamo translation runs"):
        _support.node_with_values("ClipByGlobalNorm", op, 1, 2, X=["a", "b"], max_norm=1.0)
