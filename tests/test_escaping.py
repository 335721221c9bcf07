"""String values reach every target intact: PyTorch schema defaults and ONNX's text syntax
(export nodes, function bodies), for any text (hypothesis), including quotes, backslashes,
control characters and non-ASCII. (C++ literals and whole generated projects with such text:
tests/opdefs/odd_text.yaml, built and run by test_feature_ops.)"""

import onnx.parser
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.api.onnx import text_value
from generator.api.python import schema_value

# Any Unicode text except NUL and surrogates (neither survives a C string or UTF-8).
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_pytorch_schema_default_round_trips(value):
    schema = torch._C.parse_schema(f"f(str a={schema_value(value)}) -> ()")
    assert schema.arguments[0].default_value == value


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_onnx_text_syntax_round_trips(value):
    node = onnx.parser.parse_node(f"Y = Op <s = {text_value(value)}> (X)")
    assert node.attribute[0].s.decode("utf-8") == value
