"""The capability table: every feature of the operator model is carried or refused by name by
every target, and docs/capabilities.md is the table."""

import json
import os
import re
from pathlib import Path

import pytest

from generator.errors import DefinitionErrors
from generator.model.capabilities import (
    TABLE,
    Carried,
    Feature,
    NotApplicable,
    Target,
    matrix_markdown,
    targets_of,
    uses_of,
)
from generator.parse.op import parse_opdef

ROOT = Path(__file__).resolve().parent.parent
Accepted = Carried | NotApplicable


def test_the_published_matrix_is_the_table():
    path = ROOT / "docs" / "capabilities.md"
    if os.environ.get("OPGEN_WRITE_CAPABILITIES") == "1":
        path.write_text(matrix_markdown())
    assert path.read_text() == matrix_markdown(), (
        "docs/capabilities.md is stale: OPGEN_WRITE_CAPABILITIES=1 pytest "
        "tests/test_capabilities.py rewrites it"
    )


def test_every_feature_has_a_cell_for_every_target():
    assert set(TABLE) == set(Feature)
    for feature, row in TABLE.items():
        assert set(row) == set(Target), feature
        assert isinstance(row[Target.onnx_schema], Carried), feature


def _interface(**changes: object) -> dict:
    op: dict = {
        "op": "Probe",
        "domain": "probe.ops",
        "version": 1,
        "type_constraints": {"T": ["float32"]},
        "inputs": [{"name": "X", "type": "T"}],
        "outputs": [{"name": "Y", "type": "T"}],
    }
    op.update(changes)
    return op


def _with_kernel(op: dict) -> dict:
    if not op["inputs"]:  # an op without inputs: its output's shape from an attribute
        return _without_inputs(op, {"kernel": {"body": "return;"}})
    variadic = any(t.get("variadic") for t in op["inputs"])  # X: its values broadcast
    tests: dict = {"random": [{"shapes": {"X": [[2], [2]] if variadic else [2]}}]}
    floating = [
        t
        for t in op["type_constraints"]["T"]
        if t in ("float32", "float8e5m2fnuz", "complex64", "complex128")
    ]
    if floating:
        tests["tolerances"] = {t: {"rtol": 0.001, "atol": 0.001} for t in floating}
    shaped = {
        "inputs": [
            {"shape": ["..."], **t} if t["name"] == "X" and not variadic else t
            for t in op["inputs"]
        ],
        "outputs": [
            (
                {"same_shape_as": "X", **t}  # a variadic output pairs with X
                if not variadic or t.get("variadic")
                else {"shape": "broadcast(X)", **t}
            )
            for t in op["outputs"]
        ],
    }
    return {
        **op,
        **shaped,
        "torch": {"name": "probe::probe"},
        "reference": "X",
        "kernel": {"body": "return;"},
        "tests": tests,
    }


X_T = {"name": "X", "type": "T"}
Y_T = {"name": "Y", "type": "T"}


def _without_inputs(op: dict, implementation: dict) -> dict:
    """An op without inputs (as ONNX's Constant) of the implementation, complete but for what
    no target carries yet: Y of `n` float32 values, drawn and known."""
    return {
        **{k: v for k, v in op.items() if k != "type_constraints"},
        "inputs": [],
        "outputs": [{**Y_T, "type": "float32", "shape": ["n"]}],
        "attributes": [{"name": "n", "type": "int", "default": 2, "min": 0}],
        "torch": {"name": "probe::probe"},
        "reference": "torch.zeros(n)",
        **implementation,
        "tests": {
            "tolerances": {"float32": {"rtol": 0.001, "atol": 0.001}},
            "random": [{"shapes": {}, "attributes": {"n": 3}}],
            "known": [{"inputs": {}, "outputs": {"Y": [0, 0]}}],
        },
    }


def _typed(type_text: str) -> dict:
    return _interface(type_constraints={"T": [type_text]})


# One definition per feature, and the field at which each uses it.
EXAMPLES: dict[Feature, tuple[dict, str]] = {
    Feature.no_inputs: (_interface(inputs=[]), "inputs"),
    Feature.variadic_input: (_interface(inputs=[{**X_T, "variadic": True}]), "inputs[0].variadic"),
    Feature.heterogeneous_variadic: (
        _interface(inputs=[{**X_T, "variadic": {"homogeneous": False}}]),
        "inputs[0].variadic",
    ),
    Feature.variadic_output: (
        _interface(
            inputs=[{**X_T, "variadic": {"min": 2}}], outputs=[{**Y_T, "variadic": {"min": 2}}]
        ),
        "outputs[0].variadic",
    ),
    Feature.optional_output: (
        _interface(outputs=[Y_T, {**Y_T, "name": "Z", "optional": True}]),
        "outputs[1].optional",
    ),
    Feature.optional_input_first: (
        _interface(inputs=[{**X_T, "name": "A", "optional": True}, X_T]),
        "inputs[0].optional",
    ),
    Feature.sequence_type: (_typed("seq(float32)"), "type_constraints.T"),
    Feature.map_type: (_typed("map(int64, float32)"), "type_constraints.T"),
    Feature.optional_type: (_typed("optional(float32)"), "type_constraints.T"),
    Feature.sparse_tensor_type: (_typed("sparse_tensor(float32)"), "type_constraints.T"),
    Feature.unsigned_wide: (_typed("uint16"), "type_constraints.T"),
    Feature.complex: (_typed("complex128"), "type_constraints.T"),
    Feature.float8: (_typed("float8e5m2fnuz"), "type_constraints.T"),
    Feature.float8e8m0: (_typed("float8e8m0"), "type_constraints.T"),
    Feature.int4: (_typed("int4"), "type_constraints.T"),
    Feature.sub_byte: (_typed("float4e2m1"), "type_constraints.T"),
    Feature.float6: (_typed("float6e3m2"), "type_constraints.T"),
    Feature.string: (_typed("string"), "type_constraints.T"),
    Feature.unbound_type_variable: (
        _interface(
            type_constraints={"T": ["float32"], "U": ["int64"]},
            outputs=[{**Y_T, "type": "U"}],
        ),
        "type_constraints.U",
    ),
    Feature.type_chosen_by_attribute: (
        _interface(
            type_constraints={"T": ["float32"], "U": {"types": ["int64"], "chosen_by": "to"}},
            outputs=[{**Y_T, "type": "U"}],
            attributes=[{"name": "to", "type": "int", "default": "int64"}],
        ),
        "type_constraints.U.chosen_by",
    ),
    Feature.optional_attribute_without_default: (
        _interface(attributes=[{"name": "k", "type": "int", "required": False}]),
        "attributes[0].required",
    ),
    Feature.tensor_attribute: (
        _interface(
            attributes=[{"name": "k", "type": "tensor", "dtype": "float32", "required": False}]
        ),
        "attributes[0].type",
    ),
    Feature.tensor_list_attribute: (
        _interface(attributes=[{"name": "k", "type": "tensors"}]),
        "attributes[0].type",
    ),
    Feature.sparse_tensor_attribute: (
        _interface(attributes=[{"name": "k", "type": "sparse_tensors"}]),
        "attributes[0].type",
    ),
    Feature.graph_attribute: (
        _interface(attributes=[{"name": "k", "type": "graph"}]),
        "attributes[0].type",
    ),
    Feature.type_proto_attribute: (
        _interface(attributes=[{"name": "k", "type": "type_proto"}]),
        "attributes[0].type",
    ),
    Feature.differentiation: (
        _interface(inputs=[{**X_T, "differentiable": False}]),
        "inputs[0].differentiable",
    ),
}


def test_every_feature_has_an_example():
    assert set(EXAMPLES) == set(Feature)


def _parse(tmp_path: Path, op: dict):
    path = tmp_path / "probe.yaml"
    path.write_text(json.dumps(op, indent=1))  # JSON is YAML
    return parse_opdef(path, "probe.yaml")


@pytest.mark.parametrize("feature", list(Feature), ids=lambda f: f.name)
def test_an_interface_only_op_carries_the_feature(tmp_path, feature):
    op_dict, field = EXAMPLES[feature]
    op = _parse(tmp_path, op_dict)
    assert op.is_interface_only
    assert targets_of(op) == (Target.onnx_schema,)
    assert any(use.feature is feature and use.field_path == field for use in uses_of(op))


@pytest.mark.parametrize("feature", list(Feature), ids=lambda f: f.name)
def test_a_kernel_op_carries_or_refuses_the_feature_by_target_and_field(tmp_path, feature):
    op_dict, field = EXAMPLES[feature]
    kernel_targets = (
        Target.onnx_schema,
        Target.cpp_schema,
        Target.ort_library,
        Target.pybind,
        Target.torch_native,
        Target.exporters,
        Target.parity_tests,
    )
    refusing = [t for t in kernel_targets if not isinstance(TABLE[feature][t], Accepted)]
    if not refusing:
        op = _parse(tmp_path, _with_kernel(op_dict))
        assert targets_of(op) == kernel_targets
        assert any(use.feature is feature and use.field_path == field for use in uses_of(op))
        return
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, _with_kernel(op_dict))
    refusals = [e for e in raised.value.errors if e.message.startswith(feature.value + ":")]
    assert len(refusals) == 1, [str(e) for e in raised.value.errors]
    error = refusals[0]
    assert error.field == field
    text = (tmp_path / "probe.yaml").read_text().splitlines()
    assert error.location.line >= 1 and error.location.line <= len(text)
    for target in kernel_targets:
        assert (target.value in error.message) == (target in refusing), (target, error.message)
    # Only the refusals: nothing else about the definition is wrong.
    others = [e for e in raised.value.errors if e not in refusals]
    assert all(": not carried by " in e.message for e in others), [str(e) for e in others]


# A definition of the new kinds that is wrong in itself: a located error, whatever the targets.
MALFORMED = [
    (
        _interface(inputs=[{**X_T, "variadic": True}, {**X_T, "name": "Z"}]),
        "inputs[0]",
        "only the last input may be variadic",
    ),
    (
        _interface(inputs=[{**X_T, "variadic": True, "optional": True}]),
        "inputs[0].variadic",
        "optional or variadic, not both",
    ),
    (
        _interface(inputs=[{**X_T, "variadic": {"min": -1}}]),
        "inputs[0].variadic.min",
        "expected a minimum number of values",
    ),
    (
        _interface(inputs=[{**X_T, "variadic": {"mn": 2}}]),
        "inputs[0].variadic.mn",
        "unknown field 'mn'",
    ),
    (_typed("tensor(float32)"), "type_constraints.T[0]", "write the dtype alone"),
    (_typed("float"), "type_constraints.T[0]", "did you mean 'float32'"),
    (_typed("map(seq(int64), float32)"), "type_constraints.T[0]", "map(<key dtype>"),
    (_typed("seq(float32"), "type_constraints.T[0]", "missing ')'"),
    (_typed("list(float32)"), "type_constraints.T[0]", "unknown type 'list(...)'"),
    (_typed("seq(float32))"), "type_constraints.T[0]", "unexpected ')'"),
    (
        _interface(attributes=[{"name": "k", "type": "int", "default": 1, "required": True}]),
        "attributes[0].required",
        "an attribute with a default is optional",
    ),
    (
        _interface(attributes=[{"name": "g", "type": "graph", "default": "x"}]),
        "attributes[0].default",
        "takes no default",
    ),
    (
        _interface(inputs=[{**X_T, "differentiable": "yes"}]),
        "inputs[0].differentiable",
        "",
    ),
    (_interface(reference="X"), "reference", "needs an implementation"),
    (
        _interface(
            inputs=[
                {**X_T, "variadic": True},
                {**X_T, "name": "Z", "type": "float65"},
            ]
        ),
        "inputs[0]",  # and the unknown dtype; the variadic one is not last as written
        "only the last input may be variadic",
    ),
    (
        _interface(inputs=[X_T, X_T | {"name": "Z", "variadic": {"min": 2**31 - 1}}]),
        "inputs[1]",
        "make more than ONNX counts",
    ),
    (_typed("map(float32, float32)"), "type_constraints.T[0]", "a map's key is a string"),
    (_typed("flo at32"), "type_constraints.T[0]", "unknown dtype 'flo'"),
    (_typed("seq(\x1b[31mred)"), "type_constraints.T[0]", "\\x1b[31mred"),
    (_interface(domain="ai.onnx.ml"), "domain", "is ONNX's own domain"),
    (
        _interface(inputs=[{**X_T, "shape": ["N"]}]),
        "inputs[0].shape",
        "an interface-only op has no shape inference",
    ),
    (
        _interface(outputs=[{**Y_T, "same_shape_as": "X"}]),
        "outputs[0].same_shape_as",
        "an interface-only op has no shape inference",
    ),
    (
        _interface(attributes=[{"name": "k", "type": "int", "default": 1, "min": 0}]),
        "attributes[0].min",
        "an interface-only op has no shape inference",
    ),
]


@pytest.mark.parametrize("op_dict, field, fragment", MALFORMED)
def test_a_malformed_new_kind_is_a_located_error(tmp_path, op_dict, field, fragment):
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, op_dict)
    found = [e for e in raised.value.errors if e.field == field]
    others = [e for e in raised.value.errors if e.field != field]
    assert len(found) == 1 and fragment in found[0].message, [str(e) for e in raised.value.errors]
    assert all("'float65'" in e.message for e in others), [str(e) for e in others]


def test_optional_and_not_variadic_is_optional(tmp_path):
    op = _parse(tmp_path, _interface(inputs=[{**X_T, "optional": True, "variadic": False}]))
    assert op.inputs[0].optional


def test_both_schemas_carry_differentiation_categories(tmp_path):
    """tests/opdefs/mul_add.yaml builds and runs its generated tests with these (in
    test_feature_ops); here, that both schemas say them."""
    from generator.targets.cpp_schema import onnx_schema_view as cpp_schema_view
    from generator.targets.onnx_schema import onnx_schema_view as python_schema_view

    op = parse_opdef(ROOT / "tests" / "opdefs" / "mul_add.yaml", "mul_add.yaml")
    cpp = cpp_schema_view(op)
    assert [i.arguments for i in cpp.inputs] == [
        ("OpSchema::Single", "true", "1", "OpSchema::Differentiable"),
        (),
        ("OpSchema::Optional", "true", "1", "OpSchema::NonDifferentiable"),
    ]
    assert [o.arguments for o in cpp.outputs] == [
        ("OpSchema::Single", "true", "1", "OpSchema::Differentiable")
    ]
    python = python_schema_view(op)
    category = "_Schema.DifferentiationCategory."
    assert [dict((k.keyword, k.value) for k in i.keywords) for i in python.inputs] == [
        {"differentiation_category": category + "Differentiable"},
        {},
        {
            "param_option": "_Schema.FormalParameterOption.Optional",
            "differentiation_category": category + "NonDifferentiable",
        },
    ]


def test_spacing_inside_a_type_is_free(tmp_path):
    op = _parse(tmp_path, _typed(" map( string ,seq( float32 ) ) "))
    assert [str(t) for t in op.type_constraints[0].types] == ["map(string, seq(float32))"]


def test_float32s_largest_value_in_its_shortest_spelling_is_a_default(tmp_path):
    """What ONNX's Clip-6 and the importer write: 3.4028235e+38 rounds to float32's largest."""
    attribute = {"name": "high", "type": "float", "default": 3.4028235e38}
    op = _parse(tmp_path, _interface(attributes=[attribute]))
    assert op.attributes[0].default == 3.4028234663852886e38


def test_names_may_repeat_across_inputs_outputs_and_attributes_of_an_interface(tmp_path):
    """As in ONNX's BatchNormalization-9 (input and output 'mean') and ONNX Runtime's
    MatMulNBitsQkv (output and attribute 'K')."""
    op = _parse(
        tmp_path,
        _interface(
            outputs=[{**Y_T, "name": "X"}],
            attributes=[{"name": "X", "type": "int", "default": 1}],
        ),
    )
    assert [t.name for t in op.inputs + op.outputs] == ["X", "X"]


def _project_errors(tmp_path: Path, definitions: dict[str, dict]) -> list[str]:
    from generator.parse.project import check_project

    ops = []
    for stem, op_dict in definitions.items():
        path = tmp_path / f"{stem}.yaml"
        path.write_text(json.dumps(op_dict, indent=1))
        try:
            ops.append(parse_opdef(path, path.name))
        except DefinitionErrors as errors:
            return [str(e) for e in errors.errors]
    try:
        check_project(ops)
    except DefinitionErrors as errors:
        return [str(e) for e in errors.errors]
    return []


def test_an_op_file_named_like_a_python_builtin_is_refused(tmp_path):
    """The package's __init__ imports every op module by its name: `max` would hide the builtin
    its own code calls."""
    errors = _project_errors(tmp_path, {"max": _interface()})
    assert len(errors) == 1 and "max.yaml:1:1: <file name>:" in errors[0], errors
    from generator.scaffold import import_stem

    assert import_stem("Max") == "max_op"


def test_an_export_cannot_call_an_op_that_declares_its_interface_only(tmp_path):
    caller = {
        "torch": {"overrides": "aten::relu"},
        "type_constraints": {"T": ["float32"]},
        "inputs": [{"name": "X", "type": "T"}],
        "outputs": [{"name": "Y", "type": "T"}],
        "export": [{"nodes": ["Y = probe.ops::Probe(X)"]}],
        "tests": {
            "tolerances": {"float32": {"rtol": 0.001, "atol": 0.001}},
            "random": [{"shapes": {"X": [2]}}],
        },
    }
    errors = _project_errors(tmp_path, {"probe": _interface(), "caller": caller})
    assert len(errors) == 1 and "declares its ONNX interface only" in errors[0], errors


def test_one_onnx_op_is_one_definition_whatever_the_versions(tmp_path):
    errors = _project_errors(tmp_path, {"probe": _interface(), "probe3": _interface(version=3)})
    assert len(errors) == 1 and "ONNX op (domain, type) probe.ops, Probe" in errors[0], errors


@pytest.mark.parametrize(
    "feature, torch, hint",
    [
        (Feature.int4, True, "without 'torch' the op runs in ONNX Runtime alone"),
        (Feature.complex, True, "with 'kernel: {onnxruntime: false}' the op runs in PyTorch alone"),
        (Feature.string, True, "without 'torch' the op runs in ONNX Runtime alone"),
        (Feature.sub_byte, True, "gets the ONNX schema alone"),
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_a_refusal_says_what_to_drop_and_each_reason_once(tmp_path, feature, torch, hint):
    """The refusal names what the definition can leave out to keep the feature, and targets
    refusing for one reason share it (the PyTorch targets' int4 reason is said once)."""
    op_dict, _ = EXAMPLES[feature]
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, _with_kernel(op_dict))
    (refusal,) = [e for e in raised.value.errors if e.message.startswith(feature.value + ":")]
    assert refusal.message.endswith(hint + " (docs/capabilities.md)"), refusal.message
    reasons = re.findall(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\)", refusal.message)
    assert len(reasons) == len(set(reasons)), refusal.message


def test_a_complex_kernel_op_for_pytorch_alone_is_carried(tmp_path):
    op_dict, _ = EXAMPLES[Feature.complex]
    kernel_op = _with_kernel(op_dict)
    kernel_op["kernel"] = {**kernel_op["kernel"], "onnxruntime": False}
    op = _parse(tmp_path, kernel_op)
    assert Target.ort_library not in targets_of(op) and Target.exporters not in targets_of(op)
    assert Target.torch_native in targets_of(op) and Target.cpp_schema in targets_of(op)


def _complex_kernel_op(**changes: object) -> dict:
    op_dict, _ = EXAMPLES[Feature.complex]
    kernel_op = _with_kernel(op_dict)
    kernel_op["kernel"] = {**kernel_op["kernel"], "onnxruntime": False}
    kernel_op.update(changes)
    return kernel_op


@pytest.mark.parametrize(
    "changes, field, message",
    [
        (
            {"export": [{"nodes": ["Y = Identity(X)"]}]},
            "export",
            "an op whose kernel runs in PyTorch alone (kernel: {onnxruntime: false}) is not "
            "exported",
        ),
        (
            {"gradients": {"X": "grad_Y"}},
            "gradients",
            "gradient formulas on complex tensors: not yet",
        ),
    ],
    ids=["export", "gradients"],
)
def test_what_an_op_for_pytorch_alone_cannot_have_is_refused_at_its_field(
    tmp_path, changes, field, message
):
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, _complex_kernel_op(**changes))
    assert any(e.field == field and e.message.startswith(message) for e in raised.value.errors), [
        str(e) for e in raised.value.errors
    ]


def test_builtin_equivalent_of_an_op_for_pytorch_alone_is_refused(tmp_path):
    op = _complex_kernel_op()
    op["tests"] = {
        **op["tests"],
        "builtin_equivalents": [{"domain": "", "op": "Identity", "version": 21}],
    }
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, op)
    (error,) = raised.value.errors
    assert error.field == "tests.builtin_equivalents" and "not run in ONNX Runtime" in error.message


@pytest.mark.parametrize("implementation", ["function", "provided_by"])
def test_onnx_runtime_running_an_op_on_complex_itself_is_refused(tmp_path, implementation):
    """A function or ONNX Runtime's own op on complex tensors would run in ONNX Runtime, which
    has none: refused as its custom-op library is."""
    op_dict, field = EXAMPLES[Feature.complex]
    op = {**op_dict, "outputs": [{"name": "Y", "type": "T", "same_shape_as": "X"}]}
    op["inputs"] = [{"name": "X", "type": "T", "shape": ["..."]}]
    op["reference"] = "X"
    op["tests"] = {
        "tolerances": {"complex128": {"rtol": 0.0, "atol": 0.0}},
        "random": [{"shapes": {"X": [2]}}],
    }
    if implementation == "function":
        op["function"] = {"opset": 18, "nodes": ["Y = Identity(X)"]}
    else:
        op["provided_by"] = "onnxruntime"
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, op)
    (error,) = raised.value.errors
    assert error.field == field and "ONNX Runtime 1.31 has no complex tensors" in error.message


NO_INPUTS_IMPLEMENTATIONS = {
    "kernel": {"kernel": {"body": "return;"}},
    "kernel_without_torch": {"kernel": {"body": "return;"}, "torch": None},
    "kernel_for_pytorch_alone": {"kernel": {"body": "return;", "onnxruntime": False}},
    "function": {"function": {"opset": 18, "nodes": ["Y = Constant<value_floats=[0.0, 0.0]>()"]}},
}


@pytest.mark.parametrize("implementation", NO_INPUTS_IMPLEMENTATIONS)
def test_an_op_without_inputs_is_refused_at_its_inputs_naming_what_works(tmp_path, implementation):
    """ONNX's Constant has no inputs, so a definition may have none; what opgen generates
    beside the ONNX schema does not carry it yet, which the capability table says at 'inputs',
    whatever the implementation, and the test cases of such an op are not the error."""
    op_dict = _without_inputs(_interface(), NO_INPUTS_IMPLEMENTATIONS[implementation])
    op_dict = {k: v for k, v in op_dict.items() if v is not None}
    with pytest.raises(DefinitionErrors) as raised:
        _parse(tmp_path, op_dict)
    errors = [str(e) for e in raised.value.errors]
    assert len(errors) == 1, errors
    error = raised.value.errors[0]
    assert error.field == "inputs", errors
    assert error.message.startswith(Feature.no_inputs.value + ": not carried by "), errors
    assert Target.parity_tests.value in error.message
    assert "gets the ONNX schema alone" in error.message
