"""The ONNX C++ schema of an op we implement (kernel or function), in ONNX Runtime's
contrib_defs.cc style, and the C++ test that registers it and checks its inference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, assert_never

from generator.api import cpp, cpp_shapes
from generator.api import onnx as onnx_api
from generator.api.cpp_shapes import OutputStatements, SchemaAttributeRead
from generator.api.names import Local
from generator.api.onnx import ATTR_TYPE as ONNX_ATTR_TYPE
from generator.api.onnx import onnx_type_string
from generator.dest import common
from generator.dest.cpp import CppAttribute, concrete_dtype
from generator.dest.emission import Emission
from generator.dest.tests import ParityTestPieces
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef
from generator.model.tensors import TensorParam, VariadicArity, value_name, value_names
from generator.model.tests import ErrorCase, RandomCase
from generator.model.types import TENSOR_PROTO_NUMBER, AttrType, DType, Instantiation
from generator.render import render
from generator.shapes.evaluate import evaluate_output_shapes
from generator.shapes.spell import SpelledCheck
from generator.view import view


@view
class SchemaTensor:
    name: str
    index: int
    optional: bool
    name_literal: str
    doc_literal: str
    type_literal: str  # a type variable or an ONNX type string
    arguments: tuple[str, ...]  # after the type: option, homogeneity, min arity, category


@view
class SchemaOutput(SchemaTensor):
    # Gives it its element type: from an input's, or its TensorProto type (a variadic one's
    # values each, at `index`)
    type_statement: str
    # A variadic output: the index of the variadic input whose values its values pair with,
    # and what a node with another count of them fails with (then "<outputs> for <inputs>")
    paired_index: int | None
    count_message: str


@view
class SchemaConstraint:
    name_literal: str
    types: str
    doc_literal: str


def _constraint_types(dtypes: Sequence[DType]) -> str:
    """A type constraint's type strings, as a C++ expression: an element type newer than the
    oldest ONNX the C++ schemas build against (Debian's libonnx-dev, ONNX 1.12) goes through
    opgen::schema::known_types, which leaves out what the linked ONNX does not know."""
    types = "{" + ", ".join(cpp.string_literal(onnx_type_string(d)) for d in dtypes) + "}"
    if all(cpp.in_every_onnx(d) for d in dtypes):
        return types
    return f"opgen::schema::known_types({types})"


@view
class SchemaShapedInput:
    """An input whose shape the inference function reads."""

    name: str
    index: int
    optional: bool
    variadic: bool  # its values are the inputs from index on: `shape` is a vector of them
    min_arity: int  # variadic: the fewest values
    too_few_message: str  # variadic: a literal, what fewer values raise (then the count)
    absent_message: str  # variadic: a literal, what an absent ("") value raises (then its index)
    present: str
    shape: str
    absent_shape: str


@view
class SchemaVersion:
    """One registration of the schema: a version and the attributes it had then."""

    version: int
    attributes: tuple[CppAttribute, ...]


@view
class OnnxSchemaView:
    """onnx_schema.cc: the ONNX C++ schema (contrib_defs.cc style), with its inference."""

    op_id: str
    op_type: str
    domain: str
    domain_literal: str
    doc_literal: str
    inputs: tuple[SchemaTensor, ...]
    outputs: tuple[SchemaOutput, ...]
    type_constraints: tuple[SchemaConstraint, ...]
    shaped_inputs: tuple[SchemaShapedInput, ...]
    inference_attributes: tuple[SchemaAttributeRead, ...]
    attribute_checks: tuple[SpelledCheck, ...]
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[OutputStatements, ...]
    function_body_literal: str | None
    function_opset: int | None
    schema_versions: tuple[SchemaVersion, ...]
    infer_through_body: bool  # a function whose outputs have no shape rule


def onnx_schema_view(op: OpDef) -> OnnxSchemaView:
    assert op.op_type is not None and op.domain is not None
    input_names = [t.name for t in op.inputs]

    def tensor(t: TensorParam, i: int) -> SchemaTensor:
        return SchemaTensor(
            name=t.name,
            index=i,
            optional=t.optional,
            name_literal=cpp.string_literal(t.name),
            doc_literal=cpp.string_literal(t.doc),
            type_literal=cpp.string_literal(t.type_var or onnx_type_string(concrete_dtype(t))),
            arguments=cpp.formal_parameter_arguments(t),
        )

    def output(t: TensorParam, i: int) -> SchemaOutput:
        paired = op.paired_input_index(t)
        index = "index" if paired is not None else str(i)
        match op.dtype_source(t):
            case FromInput(name):
                source = input_names.index(name)
                statement = f"propagateElemTypeFromInputToOutput(ctx, {source}, {index});"
            case FromAttribute(name):  # read, and checked against the allowed dtypes, above
                elem_type = f"static_cast<int32_t>({Local.schema_attribute(name)})"
                statement = f"updateOutputElemType(ctx, {index}, {elem_type});"
            case FixedDType(dtype):
                statement = f"updateOutputElemType(ctx, {index}, {cpp.onnx_proto_enum(dtype)});"
            case source:
                assert_never(source)
        return SchemaOutput(
            **vars(tensor(t, i)),
            type_statement=f"ONNX_NAMESPACE::{statement}",
            paired_index=paired,
            count_message=(
                cpp.string_literal(op.paired_count_message(t)) if paired is not None else ""
            ),
        )

    function = op.function
    return OnnxSchemaView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        domain_literal=cpp.string_literal(op.domain),
        doc_literal=cpp.string_literal(op.doc),
        inputs=tuple(tensor(t, i) for i, t in enumerate(op.inputs)),
        outputs=tuple(output(t, i) for i, t in enumerate(op.outputs)),
        type_constraints=tuple(
            SchemaConstraint(
                cpp.string_literal(tc.name),
                _constraint_types(tc.dtypes),
                cpp.string_literal(tc.doc),
            )
            for tc in op.type_constraints
        ),
        shaped_inputs=tuple(_shaped_input(op, i) for i in common.shaped_inputs(op)),
        inference_attributes=cpp_shapes.schema_attributes(op),
        attribute_checks=tuple(cpp_shapes.symbolic_attribute_checks(op)),
        checks=tuple(cpp_shapes.symbolic_checks(op)),
        output_shapes=cpp_shapes.symbolic_output_shapes(op),
        function_body_literal=(
            cpp.string_literal(
                "{\n" + "".join(f"  {onnx_api.node_text(n)}\n" for n in function.nodes) + "}"
            )
            if function
            else None
        ),
        function_opset=function.opset if function else None,
        schema_versions=tuple(
            SchemaVersion(v, tuple(CppAttribute.of(a) for a in op.attributes_at(v)))
            for v in op.versions
        ),
        infer_through_body=op.infers_through_function,
    )


@view
class TestTensor:
    name: str
    index: int
    name_literal: str
    dtype_expr: str  # its TensorProto type in the test's models (the first instantiation)
    value_info: str
    variadic: bool  # its values are the model's inputs (outputs) from index on
    value_name_prefix_literal: str  # variadic: its values' names but their numbers
    paired_index: int | None  # a variadic output: one value per value of the input at this index


@view
class ExpectedOutput:
    name: str
    index: int
    inferred_type: str
    expected_literal: str | None  # its whole inferred type; None: only the element type known
    expected_prefix: str


@view
class ValidCase:
    attribute_statements: tuple[str, ...]
    label: str
    input_shapes: str
    outputs: tuple[ExpectedOutput, ...]
    # ONNX 1.12's checker refuses an empty list attribute ("expected to have field 'floats'"),
    # which ONNX allows (the Python tests check such models with today's checker)
    runs_checker: bool


@view
class ErrorCaseView:
    attribute_statements: tuple[str, ...]
    label: str
    input_shapes: str
    message_literal: str


@view
class WrongTypeCase:
    """An attribute the inference reads, given as another type: inference must refuse it in
    ONNX Runtime's words (never read a FLOAT as the INT 0)."""

    attribute_statements: tuple[str, ...]
    label: str
    input_shapes: str
    message_literal: str


# A value of another type for each type the inference reads (as the Python tests' table).
_WRONG_TYPE: dict[AttrType, tuple[AttrType, Any]] = {
    AttrType.int: (AttrType.float, 1.5),
    AttrType.bool: (AttrType.float, 1.5),
    AttrType.float: (AttrType.int, 1),
    AttrType.string: (AttrType.int, 1),
}


def _wrong_type_cases(op: OpDef) -> tuple[WrongTypeCase, ...]:
    if not op.tests.random:
        return ()
    case = op.tests.random[0]
    given = _explicit_attributes(op, op.case_attributes(case.attributes, _test_binding(op)))
    cases = []
    for name in op.shape_rule.attributes:
        attr = op.attributes_by_name[name]
        wrong_type, value = _WRONG_TYPE[attr.type]
        others = {k: v for k, v in given.items() if k != name}
        wrong = replace(attr, type=wrong_type, default=None, allowed=None)
        statements = cpp.node_attribute_statements(
            "node", {**op.attributes_by_name, name: wrong}, {**others, name: value}
        )
        cases.append(
            WrongTypeCase(
                attribute_statements=tuple(statements),
                label=f"attribute '{name}' of type {ONNX_ATTR_TYPE[wrong_type]}",
                input_shapes=_input_shapes_literal(op, case.shapes),
                message_literal=cpp.string_literal(
                    f"{op.op_type}: attribute '{name}' must be of type "
                    f"{ONNX_ATTR_TYPE[attr.type]}, got {ONNX_ATTR_TYPE[wrong_type]}"
                ),
            )
        )
    return tuple(cases)


@view
class SchemaTestView:
    """schema_test.cc: checks inference on the test cases' shapes (the domain's schema_tests.cc
    registers the schemas and runs it)."""

    op_id: str
    op_type: str
    domain: str
    version: int
    domain_literal: str
    op_type_literal: str
    earlier_versions: tuple[int, ...]
    inputs: tuple[TestTensor, ...]
    outputs: tuple[TestTensor, ...]
    valid_cases: tuple[ValidCase, ...]
    error_cases: tuple[ErrorCaseView, ...]
    wrong_type_cases: tuple[WrongTypeCase, ...]
    # The test binding's type strings that not every ONNX the C++ schemas build against has:
    # where the linked ONNX lacks one, no model of the op can be built, and the test checks
    # the registration only (saying so).
    unknown_test_types: str


def _shaped_input(op: OpDef, shaped: common.ShapedInput) -> SchemaShapedInput:
    tensor = op.inputs[shaped.index]
    variadic = isinstance(tensor.arity, VariadicArity)
    return SchemaShapedInput(
        shaped.name,
        shaped.index,
        shaped.optional,
        shaped.variadic,
        tensor.arity.min_arity if isinstance(tensor.arity, VariadicArity) else 1,
        cpp.string_literal(op.too_few_values_message(tensor)) if variadic else "",
        cpp.string_literal(op.absent_value_message(tensor)) if variadic else "",
        Local.present(shaped.name),
        Local.shape(shaped.name),
        Local.absent_shape(shaped.name),
    )


def _explicit_attributes(op: OpDef, given: dict[str, Any]) -> dict[str, Any]:
    """A function op's test nodes spell out every attribute: ONNX 1.12's C++ inference does not
    apply schema defaults to attribute references (@name) in a function body."""
    if op.function is None:
        return given
    return {**{a.name: a.default for a in op.attributes if a.has_default}, **given}


def _dims_literal(dims: list[int | str]) -> str:
    entries = [f'{{0, "{d}"}}' if isinstance(d, str) else f'{{{d}, ""}}' for d in dims]
    return "{" + ", ".join(entries) + "}"


def test_types_not_in_every_onnx(op: OpDef) -> list[DType]:
    """The C++ test models' dtypes that not every ONNX the C++ schemas build against has: none
    unless every binding has one (an op on int4 only). Where the linked ONNX lacks one, no model
    of the op is valid there, and the test checks the registration alone."""
    unknown = {d for _, d in _test_binding(op).bindings if not cpp.in_every_onnx(d)}
    return sorted(unknown, key=TENSOR_PROTO_NUMBER.__getitem__)


def _test_binding(op: OpDef) -> Instantiation:
    """The dtype binding the C++ test models use: the first whose dtypes every ONNX the C++
    schemas build against knows (ONNX 1.12 refuses a float8 model: "Invalid tensor data type
    17"), else the first."""
    known = (b for b in op.instantiations if all(cpp.in_every_onnx(d) for _, d in b.bindings))
    return next(known, op.instantiations[0])


def _testconcrete_dtype(op: OpDef, tensor: TensorParam) -> DType:
    """The tensor's dtype at the C++ test models' binding."""
    return tensor.dtype_in(_test_binding(op))


def _input_shapes_literal(op: OpDef, shapes: Mapping[str, Sequence[int | str]]) -> str:
    """The shapes of the inputs a case gives, in order, as make_model's argument: up to the
    last one given, an optional input it leaves out is std::nullopt; a variadic input's values
    each (it comes last)."""
    given = [i for i, t in enumerate(op.inputs) if t.name in shapes or t.variadic]
    spelled = [
        (
            "std::vector<Dim>" + _dims_literal(list(shapes[name]))
            if name in shapes
            else "std::nullopt"
        )
        for t in op.inputs[: given[-1] + 1 if given else 0]
        for name in (value_names(t.name, shapes) if t.variadic else [t.name])
    ]
    return "{" + ", ".join(spelled) + "}"


def _valid_case(op: OpDef, index: int, case: RandomCase) -> ValidCase:
    named = {name: list(dims) for name, dims in case.shapes.items()}
    expected = evaluate_output_shapes(op, named, case.attributes)  # outputs with a rule
    outputs: list[ExpectedOutput] = []
    for t in op.outputs:
        prefix = f"{TENSOR_PROTO_NUMBER[_testconcrete_dtype(op, t)]} ["
        # A variadic output by its values, one per value of its paired input.
        for name in value_names(t.name, expected) if t.variadic else [t.name]:
            whole = None
            if name in expected:
                whole = cpp.string_literal(prefix + ", ".join(str(d) for d in expected[name]) + "]")
            outputs.append(
                ExpectedOutput(
                    name, len(outputs), Local.inferred_type(name), whole, cpp.string_literal(prefix)
                )
            )
    attributes = _explicit_attributes(op, op.case_attributes(case.attributes, _test_binding(op)))
    return ValidCase(
        attribute_statements=tuple(
            cpp.node_attribute_statements("node", op.attributes_by_name, attributes)
        ),
        label=f"random case {index} {named}".replace('"', "'"),
        input_shapes=_input_shapes_literal(op, named),
        outputs=tuple(outputs),
        runs_checker=not any(value in ([], ()) for value in attributes.values()),
    )


def _error_case(op: OpDef, index: int, case: ErrorCase) -> ErrorCaseView:
    return ErrorCaseView(
        attribute_statements=tuple(
            cpp.node_attribute_statements(
                "node",
                op.attributes_by_name,
                op.case_attributes(case.attributes, _test_binding(op)),
            )
        ),
        label=f"error case {index} {dict(case.shapes)}".replace('"', "'"),
        input_shapes=_input_shapes_literal(op, case.shapes),
        message_literal=cpp.string_literal(case.message),
    )


def schema_test_view(op: OpDef) -> SchemaTestView:
    assert op.op_type is not None and op.domain is not None and op.version is not None

    def test_tensor(t: TensorParam, i: int) -> TestTensor:
        return TestTensor(
            t.name,
            i,
            cpp.string_literal(t.name),
            cpp.onnx_proto_enum(_testconcrete_dtype(op, t)),
            Local.value_info(t.name),
            t.variadic,
            cpp.string_literal(value_name(t.name, 0).removesuffix("0")),
            op.paired_input_index(t),
        )

    return SchemaTestView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        version=op.version,
        domain_literal=cpp.string_literal(op.domain),
        op_type_literal=cpp.string_literal(op.op_type),
        earlier_versions=op.earlier_versions,
        unknown_test_types=", ".join(
            cpp.string_literal(onnx_type_string(d)) for d in test_types_not_in_every_onnx(op)
        ),
        inputs=tuple(test_tensor(t, i) for i, t in enumerate(op.inputs)),
        outputs=tuple(test_tensor(t, i) for i, t in enumerate(op.outputs)),
        valid_cases=tuple(_valid_case(op, i, case) for i, case in enumerate(op.tests.random)),
        error_cases=tuple(
            _error_case(op, i, case)
            for i, case in enumerate(op.error_cases)
            if case.values is None  # a shape error; value errors show only when a kernel runs
        ),
        wrong_type_cases=_wrong_type_cases(op),
    )


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    """Kernel and function ops (ops ONNX Runtime provides and export-only definitions have no
    schema of ours)."""
    if Target.cpp_schema not in targets_of(op):
        return []
    base = f"{op.op_id}/{op.op_id}"
    srcs = common.sources(op)
    return [
        render("cpp/onnx_schema.cc.j2", f"{base}_schema.cc", srcs, onnx_schema_view(op)),
        render("cpp/schema_test.cc.j2", f"{base}_schema_test.cc", srcs, schema_test_view(op)),
    ]


@view
class CppSchemaTestsView:
    """What the generated tests read of the C++ schema (its own test, and the bad shapes'
    message from ONNX's C++ inference)."""

    # The C++ schema test may find its models' types unknown to the linked ONNX (int4 in 1.12)
    # and check the registration alone (test_types_not_in_every_onnx).
    models_may_not_run: bool


def parity_test_pieces(op: OpDef) -> ParityTestPieces:
    """This target's parts of the generated tests (generator/templates/python/test_parity/):
    whether the op's test module has each, and what they read."""
    parts = {"test_cpp_schema_with_onnx_library": Target.cpp_schema in targets_of(op)}
    view = CppSchemaTestsView(op.has_cpp_schema and bool(test_types_not_in_every_onnx(op)))
    return ParityTestPieces(Target.cpp_schema, parts, view)
