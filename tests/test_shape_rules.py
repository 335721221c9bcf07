"""Which checks a computed output dim implies (the parity tests of tests/opdefs prove that the
checks run in every runtime; here, that the model asks for them)."""

from pathlib import Path

from generator.parse.op import parse_opdef

DEFINITION = """
op: Repeat
domain: test.rules
version: 1
torch: {name: test_rules::repeat}
inputs: [{name: X, type: float32, shape: [N]}]
outputs: [{name: Y, type: float32, shape: ["%s"]}]
attributes: [{name: k, type: int, default: 2}]
reference: X.repeat(k)
kernel: {body: "(void)ctx;"}
tests:
  tolerances: {float32: {rtol: 0.0, atol: 0.0}}
  random: [{shapes: {X: [3]}}]
"""


def checks_for(tmp_path: Path, dim: str) -> list[tuple[str, bool]]:
    path = tmp_path / "repeat.yaml"
    path.write_text(DEFINITION % dim)
    op = parse_opdef(path, "repeat.yaml")
    return [(check.expr.text, check.strict) for check in op.shape_rule.expr_checks]


def test_a_product_with_an_attribute_is_checked_for_a_negative_dim(tmp_path):
    assert checks_for(tmp_path, "N * k") == [("N * k", False)]


def test_a_divisor_must_be_positive_and_a_difference_non_negative(tmp_path):
    assert checks_for(tmp_path, "(N - 1) // k") == [("k", True), ("(N - 1) // k", False)]


def test_dims_and_literals_alone_need_no_check(tmp_path):
    assert checks_for(tmp_path, "N * 2 + 1") == []
