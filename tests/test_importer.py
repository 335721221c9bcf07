"""generator/importer.py: schemas of ONNX's and ONNX Runtime's registries as records, compared
field by field, and written as definitions that opgen's loader reads back as the record."""

from __future__ import annotations

import dataclasses
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator import importer
from generator.importer import (
    AttributeRecord,
    ConstraintRecord,
    ParamRecord,
    SchemaRecord,
    all_schemas,
    definition_text,
    differences,
    find_schema,
    opgen_type,
    record_from_onnx,
    stem_for,
)
from generator.source import load_definition_file

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


@pytest.fixture(scope="module")
def records() -> tuple[SchemaRecord, ...]:
    return all_schemas()


def by_key(records: tuple[SchemaRecord, ...], domain: str, name: str) -> SchemaRecord:
    return next(r for r in records if r.domain == domain and r.name == name)


def load_text(tmp_path: Path, text: str, stem: str) -> dict[str, Any]:
    path = tmp_path / f"{stem}.yaml"
    path.write_text(text, encoding="utf-8")
    node = load_definition_file(path, f"opdefs/{stem}.yaml")
    plain = node.plain()
    assert isinstance(plain, dict)
    return plain


# --- what a loaded definition must hold, spelled out from the record independently ----------


def expected_type(type_str: str, constraints: set[str]) -> str:
    return type_str if type_str in constraints else opgen_type(type_str)


def check_param(loaded: dict[str, Any], param: ParamRecord, constraints: set[str]) -> None:
    where = param.name
    assert loaded["name"] == param.name, where
    assert loaded["type"] == expected_type(param.type_str, constraints), where
    assert loaded.get("optional", False) is (param.option == "optional"), where
    if param.option == "variadic":
        if param.min_arity == 1 and param.homogeneous:
            assert loaded["variadic"] is True, where
        else:
            assert loaded["variadic"] == {"min": param.min_arity, "homogeneous": param.homogeneous}
    else:
        assert "variadic" not in loaded, where
    if param.differentiation in ("differentiable", "non_differentiable"):
        assert loaded["differentiable"] is (param.differentiation == "differentiable"), where
    else:
        assert "differentiable" not in loaded, where
    assert loaded.get("doc", "") == param.doc, where  # byte for byte


def same_default(loaded: object, default: object, attr_type: str) -> bool:
    if attr_type in ("ints", "floats", "strings"):
        assert isinstance(loaded, list) and isinstance(default, tuple)
        return len(loaded) == len(default) and all(
            same_default(a, b, attr_type[:-1]) for a, b in zip(loaded, default, strict=True)
        )
    if attr_type == "float":
        assert isinstance(loaded, float) and isinstance(default, float)
        return float32(loaded) == default or (math.isnan(loaded) and math.isnan(default))
    return type(loaded) is type(default) and loaded == default


def check_definition(loaded: dict[str, Any], record: SchemaRecord, *, provided_by: bool) -> None:
    assert loaded["op"] == record.name
    assert loaded["domain"] == record.domain
    assert loaded["version"] == record.since_version
    assert loaded.get("provided_by") == ("onnxruntime" if provided_by else None)
    assert loaded.get("doc", "") == record.doc
    assert "tests" not in loaded and "reference" not in loaded
    constraints = {c.name for c in record.type_constraints}
    if record.type_constraints:
        tcs = loaded["type_constraints"]
        assert list(tcs) == [c.name for c in record.type_constraints]
        for c in record.type_constraints:
            assert tcs[c.name]["types"] == [opgen_type(t) for t in c.allowed]
            assert tcs[c.name].get("doc", "") == c.doc
    else:
        assert "type_constraints" not in loaded
    for what in ("inputs", "outputs"):
        params = getattr(record, what)
        assert len(loaded[what]) == len(params)
        for loaded_param, param in zip(loaded[what], params, strict=True):
            check_param(loaded_param, param, constraints)
    if not record.attributes:
        assert "attributes" not in loaded
        return
    attrs = loaded["attributes"]
    # Required attributes first (the definitions' PyTorch argument order), each part by name.
    in_order = sorted(record.attributes, key=lambda a: not (a.required and not a.has_default))
    assert [a["name"] for a in attrs] == [a.name for a in in_order]
    assert [a["name"] for a in attrs if "default" in a or "required" in a] == [
        a.name for a in record.attributes if not (a.required and not a.has_default)
    ]
    for loaded_attr, attr in zip(attrs, in_order, strict=True):
        assert loaded_attr["type"] == attr.type
        assert loaded_attr.get("doc", "") == attr.doc
        if attr.has_default and attr.default is not None:
            assert same_default(loaded_attr["default"], attr.default, attr.type), attr
            assert "required" not in loaded_attr
        elif attr.required:
            assert "default" not in loaded_attr and "required" not in loaded_attr
        else:
            assert loaded_attr["required"] is False and "default" not in loaded_attr


def test_every_registered_schema_becomes_a_definition_that_loads_as_the_record(
    records: tuple[SchemaRecord, ...], tmp_path: Path
) -> None:
    onnx_count = sum(r.source == "onnx" for r in records)
    ort_count = sum(r.source == "onnxruntime" for r in records)
    print(f"{onnx_count} ONNX schemas + {ort_count} ONNX Runtime com.microsoft schemas")
    assert onnx_count == len(onnx.defs.get_all_schemas())
    assert ort_count >= 100 and {r.domain for r in records if r.source == "onnxruntime"} == {
        "com.microsoft"
    }
    assert len({(r.domain, r.name) for r in records}) == len(records)
    for record in records:
        provided_by = record.source == "onnxruntime"
        stem = stem_for(record.name)
        text = definition_text(record, domain=record.domain, stem=stem, provided_by=provided_by)
        folder = tmp_path / (record.domain or "ai.onnx")
        folder.mkdir(exist_ok=True)
        loaded = load_text(folder, text, stem)
        check_definition(loaded, record, provided_by=provided_by)
        assert text.startswith("# Imported by `opgen import` from ")
        assert ("an implementation" in text) is not provided_by


def test_the_definition_takes_the_domain_asked_for(records: tuple[SchemaRecord, ...]) -> None:
    record = by_key(records, "com.microsoft", "Attention")
    text = definition_text(record, domain="ai.opgen", stem="attention", provided_by=False)
    assert "\ndomain: ai.opgen\n" in text
    assert "com.microsoft::Attention, version 1." in text.splitlines()[0]
    assert "kernel: {source: attention_kernel.h}" in text
    assert "# TODO: M is bound by no required input" in text  # mask_index is optional


def test_an_op_of_onnxruntimes_domain_is_pointed_at_provided_by(
    records: tuple[SchemaRecord, ...], tmp_path: Path
) -> None:
    """Imported in its own domain, ONNX Runtime's op gets 'provided_by: onnxruntime' as the
    implementation to add; a kernel added as the other ops' TODO says is refused at the field
    (a library never takes over an op it does not own)."""
    from generator.errors import DefinitionErrors
    from generator.parse.op import parse_opdef

    record = by_key(records, "com.microsoft", "FastGelu")
    text = definition_text(record, domain="com.microsoft", stem="fast_gelu", provided_by=False)
    assert "# TODO: an implementation: 'provided_by: onnxruntime' (com.microsoft is ONNX" in text
    assert "kernel: {source:" not in text
    (tmp_path / "fast_gelu_kernel.h").write_text("// the user's kernel\n")
    path = tmp_path / "fast_gelu.yaml"
    path.write_text(text + "kernel: {source: fast_gelu_kernel.h}\n")
    with pytest.raises(DefinitionErrors) as raised:
        parse_opdef(path, "fast_gelu.yaml")
    kernel_errors = [e for e in raised.value.errors if e.field == "kernel"]
    assert kernel_errors and "is ONNX Runtime's domain" in kernel_errors[0].message


def test_a_type_variable_bound_by_no_required_input_gets_a_todo(
    records: tuple[SchemaRecord, ...],
) -> None:
    cast = by_key(records, "", "Cast")
    text = definition_text(cast, domain="", stem="cast", provided_by=True)
    assert "# TODO: T2 is bound by no required input" in text
    assert "T1 is bound" not in text
    assert '\ndomain: ""\n' in text


def test_names_opgen_cannot_take_as_they_are_get_a_todo(
    records: tuple[SchemaRecord, ...],
) -> None:
    longformer = by_key(records, "com.microsoft", "LongformerAttention")
    text = definition_text(longformer, domain="com.microsoft", stem="x", provided_by=True)
    assert "# TODO: input 'global' is reserved in Python, C++ or the generated code" in text
    assert "  - name: global\n" in text
    qkv = by_key(records, "com.microsoft", "MatMulNBitsQkv")
    text = definition_text(qkv, domain="com.microsoft", stem="x", provided_by=True)
    assert "# TODO: 'K' names an output and an attribute" in text


def test_names_that_are_macros_of_the_generated_codes_headers_get_a_todo() -> None:
    OpSchema = onnx.defs.OpSchema
    schema = OpSchema(
        "MacroNames",
        "ai.test",
        1,
        "",
        inputs=[OpSchema.FormalParameter("EOF", "T"), OpSchema.FormalParameter("_Bias", "T")],
        outputs=[OpSchema.FormalParameter("stdout", "T")],
        type_constraints=[("T", ["tensor(float)"], "")],
        attributes=[OpSchema.Attribute("errno", OpSchema.AttrType.INT, "")],
    )
    text = definition_text(record_from_onnx(schema), domain="ai.test", stem="x", provided_by=True)
    for kind, name in (("input", "EOF"), ("output", "stdout"), ("attribute", "errno")):
        assert f"# TODO: {kind} '{name}' is a macro of the headers the generated C++" in text
    assert "# TODO: input '_Bias' is reserved to the C++ implementation" in text
    assert "  - name: EOF\n" in text  # the schema's own name stays


def test_ort_records_derive_min_arity_and_read_defaults(
    records: tuple[SchemaRecord, ...],
) -> None:
    concat = by_key(records, "com.microsoft", "QLinearConcat")
    assert concat.inputs[2].option == "variadic" and concat.inputs[2].min_arity == 1
    assert not concat.inputs[2].homogeneous
    assert concat.inputs[0].min_arity is None and concat.inputs[0].differentiation is None
    attention = {a.name: a for a in by_key(records, "com.microsoft", "Attention").attributes}
    assert attention["unidirectional"].default == 0 and attention["unidirectional"].has_default
    assert attention["num_heads"].required and attention["num_heads"].has_default is False
    assert attention["scale"].has_default is False and not attention["scale"].required


def test_ort_records_agree_with_onnx_where_both_registries_hold_a_schema() -> None:
    """ONNX Runtime's registry holds ONNX's schemas too: its records, with what its binding does
    not say left out, must agree with ONNX's (min arities derived, defaults read)."""
    from onnxruntime.capi import onnxruntime_pybind11_state

    onnx_schemas = {
        (s.domain, s.name, s.since_version): s for s in onnx.defs.get_all_schemas_with_history()
    }
    compared = defaults = 0
    for schema in onnxruntime_pybind11_state.get_all_operator_schema():
        twin = onnx_schemas.get((schema.domain, schema.name, schema.since_version))
        if twin is None:
            continue
        ort_record, onnx_record = importer.record_from_ort(schema), record_from_onnx(twin)
        assert differences(ort_record, onnx_record) == [], (schema.name, schema.since_version)
        compared += 1
        defaults += sum(a.has_default is True for a in ort_record.attributes)
    assert compared > 500 and defaults > 500


# --- odd text survives -----------------------------------------------------------------------

ODD_DOCS = [
    "trailing spaces   \nand a tab\there\n",
    '  leading spaces, "quotes", back\\slashes\\n and \\"',
    "Windows\r\nline\r\nends\r\n",
    "a lone\rcarriage return",
    "non-ASCII: ünïcødé € 漢字 \U0001f600\n",
    "YAML's other line breaks: \x85 \u2028 \u2029, a BOM \ufeff, DEL \x7f, bell \x07",
    "\n\n\nleading and trailing blank lines\n\n\n",
    "   \n  \n",
    " ",
    "\t",
    "- a list?\n# a comment?\nkey: value\n---\n...\n",
    "ends without a newline\n  indented  ",
    "\n    indented first line\n  less indented\n",
    "{flow: [mapping]}, 'single', `back`",
    "&anchor *alias !tag %directive @at",
    "null",
    "true",
    "1.5",
]


def with_docs(record: SchemaRecord, doc: str) -> SchemaRecord:
    """The record with every doc replaced by doc."""
    return dataclasses.replace(
        record,
        doc=doc,
        inputs=tuple(dataclasses.replace(p, doc=doc) for p in record.inputs),
        outputs=tuple(dataclasses.replace(p, doc=doc) for p in record.outputs),
        type_constraints=tuple(dataclasses.replace(c, doc=doc) for c in record.type_constraints),
        attributes=tuple(dataclasses.replace(a, doc=doc) for a in record.attributes),
    )


@pytest.mark.parametrize("doc", ODD_DOCS)
def test_odd_docs_survive_byte_for_byte(
    records: tuple[SchemaRecord, ...], tmp_path: Path, doc: str
) -> None:
    record = with_docs(by_key(records, "com.microsoft", "Attention"), doc)
    text = definition_text(record, domain="com.microsoft", stem="attention", provided_by=True)
    check_definition(load_text(tmp_path, text, "attention"), record, provided_by=True)


@settings(max_examples=150, deadline=None)
@given(doc=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_any_doc_survives_byte_for_byte(tmp_path_factory: pytest.TempPathFactory, doc: str) -> None:
    base = find_schema("LeakyRelu", "", None)
    record = with_docs(base, doc)
    text = definition_text(record, domain="", stem="leaky_relu", provided_by=False)
    loaded = load_text(tmp_path_factory.mktemp("doc"), text, "leaky_relu")
    check_definition(loaded, record, provided_by=False)


@pytest.mark.parametrize(
    "name", ["yes", "null", "on", "1", "~", "a b", "x: y", "#c", "-", "é", "a\nb"]
)
def test_names_yaml_would_read_otherwise_are_quoted(tmp_path: Path, name: str) -> None:
    base = find_schema("LeakyRelu", "", None)
    record = dataclasses.replace(
        base,
        name=name,
        domain=name,
        inputs=replace_at(base.inputs, 0, name=name),
        type_constraints=(dataclasses.replace(base.type_constraints[0], name=name),),
        attributes=replace_at(base.attributes, 0, name=name, default="x", type="string"),
    )
    record = dataclasses.replace(
        record,
        inputs=replace_at(record.inputs, 0, type_str=name),
        outputs=replace_at(record.outputs, 0, type_str=name),
    )
    text = definition_text(record, domain=name, stem="odd", provided_by=True)
    loaded = load_text(tmp_path, text, "odd")
    check_definition(loaded, record, provided_by=True)
    assert loaded["inputs"][0]["type"] == name  # a type variable's name, kept


FLOAT_DEFAULTS = [0.01, 1e-5, -0.0, 1.0, 3.4028234663852886e38, 1e-45, 123456.789, 1e10]


def test_float_defaults_are_written_shortest_and_read_back_as_the_same_float32(
    tmp_path: Path,
) -> None:
    base = find_schema("LeakyRelu", "", None)
    alpha = base.attributes[0]
    attrs = [
        dataclasses.replace(alpha, name=f"a{i}", default=float32(v))
        for i, v in enumerate(FLOAT_DEFAULTS)
    ]
    attrs.append(
        dataclasses.replace(
            alpha, name="fs", type="floats", default=tuple(float32(v) for v in FLOAT_DEFAULTS)
        )
    )
    record = dataclasses.replace(base, attributes=tuple(attrs))
    text = definition_text(record, domain="", stem="leaky_relu", provided_by=False)
    check_definition(load_text(tmp_path, text, "leaky_relu"), record, provided_by=False)
    assert "default: 0.01\n" in text and "default: 1.0e-05\n" in text
    assert "default: -0.0\n" in text and "default: 1.0\n" in text


def test_nan_and_inf_defaults_are_yaml_special_floats(tmp_path: Path) -> None:
    base = find_schema("LeakyRelu", "", None)
    alpha = base.attributes[0]
    values = [math.nan, math.inf, -math.inf]
    record = dataclasses.replace(
        base,
        attributes=tuple(
            dataclasses.replace(alpha, name=f"a{i}", default=v) for i, v in enumerate(values)
        ),
    )
    text = definition_text(record, domain="", stem="leaky_relu", provided_by=False)
    assert "default: .nan\n" in text and "default: .inf\n" in text and "default: -.inf\n" in text
    check_definition(load_text(tmp_path, text, "leaky_relu"), record, provided_by=False)


# --- spelling ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "type_str,expected",
    [
        ("tensor(float)", "float32"),
        ("tensor(double)", "float64"),
        ("tensor(float16)", "float16"),
        ("tensor(uint4)", "uint4"),
        ("tensor(float8e4m3fn)", "float8e4m3fn"),
        ("seq(tensor(double))", "seq(float64)"),
        ("map(string, int64)", "map(string, int64)"),
        ("map(int64, float)", "map(int64, float32)"),
        ("map(int64, double)", "map(int64, float64)"),
        ("optional(seq(tensor(float)))", "optional(seq(float32))"),
        ("optional(tensor(bool))", "optional(bool)"),
        ("sparse_tensor(float)", "sparse_tensor(float32)"),
        ("seq(map(string, float))", "seq(map(string, float32))"),
    ],
)
def test_type_strings_are_spelled_as_opgen_spells_them(type_str: str, expected: str) -> None:
    assert opgen_type(type_str) == expected


@pytest.mark.parametrize("bad", ["tensor()", "tensor(Float)", "seq(a, b)", "vector(float)", ""])
def test_unreadable_type_strings_are_errors(bad: str) -> None:
    with pytest.raises(ValueError, match="type string"):
        opgen_type(bad)


@pytest.mark.parametrize(
    "op,stem",
    [
        ("LayerNormalization", "layer_normalization"),
        ("LSTM", "lstm"),
        ("MatMulInteger16", "mat_mul_integer16"),
        ("QLinearConv", "q_linear_conv"),
        ("DynamicQuantizeLSTM", "dynamic_quantize_lstm"),
        ("Gelu", "gelu"),
        ("MatMulNBits", "mat_mul_n_bits"),
        ("ROIAlign", "roi_align"),
        ("If", "if_op"),
        ("And", "and_op"),
        ("Xor", "xor_op"),
    ],
)
def test_stems(op: str, stem: str) -> None:
    assert stem_for(op) == stem


def test_every_stem_is_an_identifier(records: tuple[SchemaRecord, ...]) -> None:
    for record in records:
        stem = stem_for(record.name)
        assert stem.isidentifier() and stem == stem.lower(), record.name


# --- find_schema -----------------------------------------------------------------------------


def test_find_schema_finds_onnx_and_onnxruntime_ops() -> None:
    cast = find_schema("Cast", "", None)
    assert (cast.name, cast.domain, cast.source) == ("Cast", "", "onnx")
    assert cast.since_version == onnx.defs.get_schema("Cast", "").since_version
    assert find_schema("Cast", "ai.onnx", None) == cast
    assert find_schema("Cast", None, None) == cast
    attention = find_schema("Attention", "com.microsoft", None)
    assert (attention.domain, attention.source, attention.since_version) == (
        "com.microsoft",
        "onnxruntime",
        1,
    )
    zipmap = find_schema("ZipMap", None, None)
    assert zipmap.domain == "ai.onnx.ml"
    assert find_schema("Attention", None, None).domain == ""  # ONNX's default domain first


def test_find_schema_finds_a_given_version() -> None:
    cast13 = find_schema("Cast", "", 13)
    assert cast13.since_version == 13
    assert cast13 == record_from_onnx(onnx.defs.get_schema("Cast", 13, ""))
    with pytest.raises(LookupError, match=r"no version 14: .*13.*at opset 14 the op is version 13"):
        find_schema("Cast", "", 14)


def test_find_schema_says_what_exists() -> None:
    with pytest.raises(LookupError, match=r"did you mean 'Attention'"):
        find_schema("Attenton", "com.microsoft", None)
    with pytest.raises(LookupError, match=r"did you mean 'Cast'"):
        find_schema("cast", "", None)
    with pytest.raises(LookupError, match=r"no op 'Attenton' in any domain; did you mean"):
        find_schema("Attenton", None, None)
    with pytest.raises(LookupError, match=r"no domain 'com.nowhere'.*com\.microsoft"):
        find_schema("Attention", "com.nowhere", None)


# --- differences -----------------------------------------------------------------------------


def replace_at(items: tuple[Any, ...], index: int, **changes: Any) -> tuple[Any, ...]:
    return items[:index] + (dataclasses.replace(items[index], **changes),) + items[index + 1 :]


def test_a_record_has_no_differences_with_itself(records: tuple[SchemaRecord, ...]) -> None:
    for record in records:
        assert differences(record, record) == []
    record = by_key(records, "com.microsoft", "Attention")
    assert differences(record, with_docs(record, "other")) == []  # docs are not compared


def test_differences_finds_each_changed_field(records: tuple[SchemaRecord, ...]) -> None:
    attention = by_key(records, "com.microsoft", "Attention")
    past = attention.inputs.index(next(p for p in attention.inputs if p.name == "past"))
    changed = dataclasses.replace(
        attention, inputs=replace_at(attention.inputs, past, option="single")
    )
    assert differences(attention, changed) == [f"inputs[{past}] 'past': option optional != single"]

    changed = dataclasses.replace(
        attention, outputs=replace_at(attention.outputs, 0, type_str="tensor(float)")
    )
    assert differences(attention, changed) == ["outputs[0] 'output': type_str T != tensor(float)"]

    concat = by_key(records, "", "Concat")
    changed = dataclasses.replace(concat, inputs=replace_at(concat.inputs, 0, min_arity=2))
    assert differences(concat, changed) == ["inputs[0] 'inputs': min_arity 1 != 2"]
    changed = dataclasses.replace(concat, inputs=replace_at(concat.inputs, 0, homogeneous=False))
    assert differences(concat, changed) == ["inputs[0] 'inputs': homogeneous True != False"]
    changed = dataclasses.replace(
        concat, inputs=replace_at(concat.inputs, 0, differentiation="unknown")
    )
    assert differences(concat, changed) == [
        "inputs[0] 'inputs': differentiation differentiable != unknown"
    ]

    leaky = by_key(records, "", "LeakyRelu")
    changed = dataclasses.replace(
        leaky, attributes=replace_at(leaky.attributes, 0, default=float32(0.02))
    )
    assert differences(leaky, changed) == [
        f"attributes 'alpha': default {float32(0.01)!r} != {float32(0.02)!r}"
    ]
    changed = dataclasses.replace(
        leaky, attributes=replace_at(leaky.attributes, 0, default=None, has_default=False)
    )
    assert differences(leaky, changed) == [
        f"attributes 'alpha': default {float32(0.01)!r} != no default"
    ]
    changed = dataclasses.replace(leaky, attributes=())
    assert differences(leaky, changed) == ["attributes 'alpha': missing from the generated schema"]
    assert differences(changed, leaky) == ["attributes 'alpha': not in the original schema"]
    changed = dataclasses.replace(leaky, attributes=replace_at(leaky.attributes, 0, type="int"))
    assert differences(leaky, changed)[0] == "attributes 'alpha': type float != int"

    changed = dataclasses.replace(leaky, outputs=())
    assert differences(leaky, changed) == [
        "outputs: 1 != 0 parameters",
        "outputs[0] 'Y': missing from the generated schema",
    ]


def test_differences_compares_domain_version_and_type_constraints(
    records: tuple[SchemaRecord, ...],
) -> None:
    cast = by_key(records, "", "Cast")
    assert differences(cast, dataclasses.replace(cast, domain="ai.opgen")) == [
        "domain: '' != 'ai.opgen'"
    ]
    assert differences(cast, dataclasses.replace(cast, domain="ai.opgen"), domain="ai.opgen") == []
    assert differences(cast, cast, domain="ai.opgen") == ["domain: 'ai.opgen' != ''"]
    assert differences(cast, dataclasses.replace(cast, since_version=1)) == [
        f"since_version: {cast.since_version} != 1"
    ]
    t1, t2 = cast.type_constraints
    swapped = dataclasses.replace(cast, type_constraints=(t2, t1))
    assert differences(cast, swapped) == ["type_constraints: order ['T1', 'T2'] != ['T2', 'T1']"]
    reordered_types = dataclasses.replace(t1, allowed=tuple(reversed(t1.allowed)))
    assert (
        differences(cast, dataclasses.replace(cast, type_constraints=(reordered_types, t2))) == []
    )
    fewer = dataclasses.replace(t1, allowed=t1.allowed[1:])
    assert differences(cast, dataclasses.replace(cast, type_constraints=(fewer, t2))) == [
        f"type_constraints 'T1': allowed types differ: missing {[t1.allowed[0]]}, extra []"
    ]
    assert differences(cast, dataclasses.replace(cast, type_constraints=(t1,))) == [
        "type_constraints 'T2': missing from the generated schema"
    ]


def test_differences_skips_what_the_original_does_not_know(
    records: tuple[SchemaRecord, ...],
) -> None:
    attention = by_key(records, "com.microsoft", "Attention")  # ONNX Runtime's: no categories
    changed = dataclasses.replace(
        attention,
        inputs=tuple(
            dataclasses.replace(p, differentiation="differentiable", min_arity=1)
            for p in attention.inputs
        ),
    )
    assert differences(attention, changed) == []
    # homogeneity means something for variadic parameters only
    changed = dataclasses.replace(
        attention, inputs=replace_at(attention.inputs, 0, homogeneous=False)
    )
    assert differences(attention, changed) == []
    unknown = dataclasses.replace(
        attention, attributes=replace_at(attention.attributes, 0, has_default=None, default=None)
    )
    assert differences(unknown, attention) == []


# --- schemas built in Python, as generated code builds them ----------------------------------


def test_record_of_a_schema_built_in_python() -> None:
    OpSchema = onnx.defs.OpSchema
    schema = OpSchema(
        "MyOp",
        "ai.test",
        3,
        "the doc",
        inputs=[
            OpSchema.FormalParameter(
                "X",
                "T",
                "x doc",
                differentiation_category=OpSchema.DifferentiationCategory.Differentiable,
            ),
            OpSchema.FormalParameter(
                "bias", "tensor(float)", param_option=OpSchema.FormalParameterOption.Optional
            ),
            OpSchema.FormalParameter(
                "rest",
                "T",
                "",
                param_option=OpSchema.FormalParameterOption.Variadic,
                is_homogeneous=False,
                min_arity=0,
                differentiation_category=OpSchema.DifferentiationCategory.NonDifferentiable,
            ),
        ],
        outputs=[OpSchema.FormalParameter("Y", "seq(map(string, float))")],
        type_constraints=[("T", ["tensor(float)", "tensor(double)"], "T doc")],
        attributes=[
            OpSchema.Attribute("mode", OpSchema.AttrType.STRING, "mode doc", required=False),
            OpSchema.Attribute("axis", OpSchema.AttrType.INT, "axis doc"),
            OpSchema.Attribute("alpha", onnx.helper.make_attribute("alpha", 1.5), "alpha doc"),
            OpSchema.Attribute("eps", onnx.helper.make_attribute("eps", 1e-5), ""),
            OpSchema.Attribute(
                "axes",
                onnx.helper.make_attribute("axes", [], attr_type=onnx.AttributeProto.INTS),
            ),
            OpSchema.Attribute("names", onnx.helper.make_attribute("names", ["a", "b"])),
        ],
    )
    record = record_from_onnx(schema)
    unknown = "unknown"
    assert record == SchemaRecord(
        name="MyOp",
        domain="ai.test",
        since_version=3,
        doc="the doc",
        inputs=(
            ParamRecord("X", "T", "single", True, 1, "differentiable", "x doc"),
            ParamRecord("bias", "tensor(float)", "optional", True, 1, unknown, ""),
            ParamRecord("rest", "T", "variadic", False, 0, "non_differentiable", ""),
        ),
        outputs=(ParamRecord("Y", "seq(map(string, float))", "single", True, 1, unknown, ""),),
        type_constraints=(ConstraintRecord("T", ("tensor(float)", "tensor(double)"), "T doc"),),
        attributes=(
            AttributeRecord("alpha", "float", False, 1.5, True, "alpha doc"),
            AttributeRecord("axes", "ints", False, (), True, ""),
            AttributeRecord("axis", "int", True, None, False, "axis doc"),
            AttributeRecord("eps", "float", False, float32(1e-5), True, ""),
            AttributeRecord("mode", "string", False, None, False, "mode doc"),
            AttributeRecord("names", "strings", False, ("a", "b"), True, ""),
        ),
        source="onnx",
    )


def rebuilt(record: SchemaRecord) -> Any:
    """The onnx.defs.OpSchema a generated definition builds from what the record holds."""
    OpSchema = onnx.defs.OpSchema
    options = {
        "single": OpSchema.FormalParameterOption.Single,
        "optional": OpSchema.FormalParameterOption.Optional,
        "variadic": OpSchema.FormalParameterOption.Variadic,
    }
    categories = {
        None: OpSchema.DifferentiationCategory.Unknown,
        "unknown": OpSchema.DifferentiationCategory.Unknown,
        "differentiable": OpSchema.DifferentiationCategory.Differentiable,
        "non_differentiable": OpSchema.DifferentiationCategory.NonDifferentiable,
    }

    def param(p: ParamRecord) -> Any:
        return OpSchema.FormalParameter(
            p.name,
            p.type_str,
            p.doc,
            param_option=options[p.option],
            is_homogeneous=p.homogeneous,
            min_arity=1 if p.min_arity is None else p.min_arity,
            differentiation_category=categories[p.differentiation],
        )

    def attribute(a: AttributeRecord) -> Any:
        if a.has_default and a.default is not None:
            attr_type = getattr(onnx.AttributeProto, a.type.upper())
            value = list(a.default) if isinstance(a.default, tuple) else a.default
            proto = onnx.helper.make_attribute(a.name, value, attr_type=attr_type)
            return OpSchema.Attribute(a.name, proto, a.doc)
        attr_type = getattr(OpSchema.AttrType, a.type.upper())
        return OpSchema.Attribute(a.name, attr_type, a.doc, required=a.required)

    return OpSchema(
        record.name,
        record.domain,
        record.since_version,
        record.doc,
        inputs=[param(p) for p in record.inputs],
        outputs=[param(p) for p in record.outputs],
        type_constraints=[(c.name, list(c.allowed), c.doc) for c in record.type_constraints],
        attributes=[attribute(a) for a in record.attributes],
    )


def test_every_schema_rebuilt_in_python_has_no_differences(
    records: tuple[SchemaRecord, ...],
) -> None:
    for record in records:
        again = record_from_onnx(rebuilt(record))
        assert differences(record, again) == [], record.name
        if record.source == "onnx":
            assert again == record, record.name


def test_importing_the_module_imports_neither_onnx_nor_onnxruntime() -> None:
    import subprocess
    import sys

    code = (
        "import sys, generator.importer; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'onnxruntime')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.strip() == "[]"


def test_schemas_are_looked_up_where_they_are_when_asked() -> None:
    """A com.microsoft schema registered with onnx.defs (as a generated package's register_all
    registers com.microsoft::Gelu) hides none of ONNX Runtime's com.microsoft ops, and a schema
    registered after a first look-up is found: the registries are read at each look-up."""
    gelu = find_schema("Gelu", "com.microsoft", None)
    assert gelu.source == "onnxruntime"
    probe = dataclasses.replace(gelu, name="OpgenLookupProbe", domain="opgen.lookup.probe")
    with pytest.raises(LookupError, match="no domain 'opgen.lookup.probe'"):
        find_schema(probe.name, probe.domain, None)
    registered = [rebuilt(gelu), rebuilt(probe)]
    for schema in registered:
        onnx.defs.register_schema(schema)
    try:
        attention = find_schema("Attention", "com.microsoft", None)
        assert attention.domain == "com.microsoft" and attention.source == "onnxruntime"
        assert find_schema("Gelu", "com.microsoft", None) == gelu  # ONNX Runtime's, as before
        found = find_schema(probe.name, None, None)
        assert (found.domain, found.source) == (probe.domain, "onnx")
        assert differences(probe, found) == []
    finally:
        for schema in registered:
            onnx.defs.deregister_schema(schema.name, schema.since_version, schema.domain)
    with pytest.raises(LookupError, match="no domain 'opgen.lookup.probe'"):
        find_schema(probe.name, probe.domain, None)
