"""The cases the generated tests choose by what they check: the gradient tests run each optional
input given and left out, the wrong-dtype test retypes each input in a case that gives it, and
a gradient formula's value for an absent input becomes None. Random definitions (optional
inputs anywhere, cases giving any subset of them), parsed without building anything."""

import random
from pathlib import Path

import pytest

from generator.dest import python as python_dest
from generator.dest import tests as tests_dest
from generator.errors import DefinitionErrors
from generator.parse.op import parse_opdef


def definition(
    optional: list[str], order: list[str], cases: list[set[str]], x_formula: bool = True
) -> str:
    """Y = X + each optional input (all [3]); gradient formulas for every optional input, and X
    (`x_formula`); one random case per entry of `cases`, giving those optional inputs."""
    inputs = "".join(
        (
            f"  - {{name: {name}, type: T, optional: true, shape: [3]}}\n"
            if name in optional
            else f"  - {{name: {name}, type: T, shape: [rows, 3]}}\n"
        )
        for name in order
    )
    reference = " + ".join(["X"] + [f"({n} if {n} is not None else 0)" for n in optional])
    gradients = "".join(f"  {n}: grad_Y.sum(0)\n" for n in optional)
    gradients += "  X: grad_Y\n" if x_formula else ""
    random_cases = "".join(
        "    - shapes: {X: [rows, 3]"
        + "".join(f", {n}: [3]" for n in optional if n in given)
        + "}\n      dynamic: {rows: [2, 3]}\n"
        for given in cases
    )
    return (
        "op: OptionalBiasAdd\ndomain: test.optional\nversion: 1\n"
        "torch: {name: test_optional::optional_bias_add}\n"
        "type_constraints:\n  T: [float32, float16]\n"
        f"inputs:\n{inputs}"
        "outputs:\n  - {name: Y, type: T, same_shape_as: X}\n"
        f"reference: {reference}\nreference_upcast: false\n"
        f"gradients:\n{gradients}"
        "kernel:\n  body: |\n    (void)ctx;\n"
        "tests:\n  tolerances:\n    float16: {rtol: 1.0e-2, atol: 1.0e-2}\n"
        "    float32: {rtol: 1.0e-6, atol: 1.0e-6}\n"
        f"  random:\n{random_cases}"
    )


def parse(tmp_path: Path, text: str):
    path = tmp_path / "optional_bias_add.yaml"
    path.write_text(text)
    return parse_opdef(path, "optional_bias_add.yaml")


def draw(rng: random.Random) -> tuple[list[str], list[str], list[set[str]]]:
    optional = ["B", "C", "D"][: rng.randint(1, 3)]
    order = optional + ["X"]
    rng.shuffle(order)
    cases = [{n for n in optional if rng.random() < 0.5} for _ in range(rng.randint(1, 4))]
    for name in optional:  # some case gives each (else a definition error, tested below)
        if not any(name in given for given in cases):
            rng.choice(cases).add(name)
    return optional, order, cases


@pytest.mark.parametrize("seed", range(40))
def test_gradient_cases_give_and_leave_out_each_optional_input(tmp_path, seed):
    optional, order, cases = draw(random.Random(seed))
    x_formula = seed % 4 != 3  # now and then only the optional inputs have formulas
    op = parse(tmp_path, definition(optional, order, cases, x_formula))
    chosen = op.gradient_cases
    assert chosen and len(set(chosen)) == len(chosen), chosen
    for index, left_out in chosen:
        assert set(left_out) <= cases[index], (cases, chosen)  # leaves out only what it gives
        # something to differentiate: gradcheck refuses a call where nothing requires grad
        assert x_formula or cases[index] - set(left_out), (cases, chosen)
    for name in optional:
        given = [name in cases[index] and name not in out for index, out in chosen]
        assert any(given), (name, cases, chosen)
        if x_formula:  # absent beside X, whose gradient still flows
            assert chosen[0] == (0, ()) and not all(given), (name, cases, chosen)
    # The wrong-dtype test: every input, each in a case that gives it.
    wrong = tests_dest._wrong_dtypes(op)
    assert [name for name, _, _ in wrong] == order
    for name, index, _ in wrong:
        assert name == "X" or name in cases[index], (name, index, cases)


def test_a_gradient_formula_of_an_absent_input_gives_none(tmp_path):
    op = parse(tmp_path, definition(["B"], ["B", "X"], [set(), {"B"}]))
    returned = python_dest._gradient_formulas(op).returned_gradients
    assert returned == "(None if B is None else (grad_Y.sum(0)), (grad_Y), )", returned


def test_gradients_need_a_case_giving_each_optional_input(tmp_path):
    text = definition(["B", "C"], ["B", "X", "C"], [{"B"}])
    with pytest.raises(DefinitionErrors) as raised:
        parse(tmp_path, text)
    message = str(raised.value)
    assert "tests.random" in message and "give optional input 'C' in some random case" in message
    assert "'B'" not in message, message


def test_a_float64_kernel_is_not_needed_for_gradients(tmp_path):
    """float32 and float16 only: the formulas' gradcheck runs over the float64 reference, the
    kernel's backward is compared in each of its dtypes."""
    op = parse(tmp_path, definition(["B"], ["X", "B"], [{"B"}, set()]))
    assert tests_dest._gradient_bindings(op) == ([0, 1], False)
