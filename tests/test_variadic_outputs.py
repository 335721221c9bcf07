"""Variadic outputs in PyTorch's exporters (issue 28), on the shipped ClipByGlobalNorm: a call
giving the variadic output no value cannot be exported (ONNX has no node with a list of no
values there), and either exporter says so naming the op rather than failing in torch. The
generated parity tests (generated/clip_by_global_norm) export calls with values."""

import pytest
from onnxscript.values import Opset

import generated
from generated import _support


def test_the_torchscript_symbolic_of_no_value_names_the_op():
    with pytest.raises(RuntimeError, match="ai.opgen::ClipByGlobalNorm: the TorchScript exporter"):
        _support.symbolic_node_with_values(None, "ai.opgen::ClipByGlobalNorm", 1, 0)


def test_the_dynamo_translation_of_no_value_names_the_op():
    generated.register_all()  # the ONNX schemas onnxscript reads
    op = Opset("ai.opgen", 1).ClipByGlobalNorm
    with pytest.raises(RuntimeError, match="ClipByGlobalNorm: the dynamo exporter exports"):
        _support.node_with_values(op, 1, 0, X=[], max_norm=1.0)
