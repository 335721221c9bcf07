"""C++ per op: kernel API header, kernel instantiations, ONNX Runtime wrapper, pybind11
binding, ONNX C++ schema and its test. Each template reads one view, built here from the op."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.api import cpp, cpp_shapes
from generator.api import onnx as onnx_api
from generator.api.cpp_shapes import OutputStatements, SchemaAttributeRead
from generator.api.names import Local
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.api.onnx import TENSOR_PROTO_NUMBER, onnx_type_string
from generator.dest import common
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.op import OpDef
from generator.model.tensors import Attribute, TensorParam
from generator.model.tests import ErrorCase, RandomCase
from generator.model.types import DType
from generator.render import render
from generator.shapes.evaluate import evaluate_output_shapes
from generator.shapes.spell import SpelledCheck

# ---------------------------------------------------------------- pieces several views share


@dataclass(frozen=True)
class CppAttribute:
    name: str
    cpp_type: str
    initializer: str  # ` = <default>`, or "" for a required attribute
    comment: str
    required: bool
    required_literal: str  # "true" / "false"
    onnx_enum: str  # AttributeProto's enum value name
    name_literal: str
    doc_literal: str
    schema_default: str | None  # as ONNX's C++ schema holds it; None when required

    @classmethod
    def of(cls, attr: Attribute) -> CppAttribute:
        return cls(
            name=attr.name,
            cpp_type=cpp.ATTR_TYPE[attr.type],
            initializer="" if attr.required else f" = {cpp.attr_literal(attr)}",
            comment=" ".join(cpp.comment(attr.doc)) or attr.type.value,
            required=attr.required,
            required_literal=cpp.bool_literal(attr.required),
            onnx_enum=ATTR_PROTO[attr.type],
            name_literal=cpp.string_literal(attr.name),
            doc_literal=cpp.string_literal(attr.doc),
            schema_default=None if attr.required else cpp.schema_default(attr),
        )


@dataclass(frozen=True)
class KernelInput:
    """An input as the kernel wrappers hold it: its shape, its view, where its data is."""

    name: str
    index: int
    cpp_type: str
    optional: bool
    shape: str
    present: str
    optional_view: str
    runtime_value: str  # ONNX Runtime
    array: str  # pybind11
    dtype_name: str  # pybind11
    data: str  # where the wrapper at hand finds its elements

    @classmethod
    def of(cls, tensor: TensorParam, index: int, data: str) -> KernelInput:
        name = tensor.name
        return cls(
            name=name,
            index=index,
            cpp_type=common.tensor_cpp_type(tensor),
            optional=tensor.optional,
            shape=Local.shape(name),
            present=Local.present(name),
            optional_view=Local.optional_view(name),
            runtime_value=Local.runtime_value(name),
            array=Local.array(name),
            dtype_name=Local.dtype_name(name),
            data=data,
        )


@dataclass(frozen=True)
class KernelOutput:
    name: str
    index: int
    cpp_type: str
    kernel_allocated: bool  # a data-dependent size: the kernel allocates it
    runtime_value: str
    array: str
    shape: str  # in infer_shapes' result

    @classmethod
    def of(cls, op: OpDef, tensor: TensorParam, index: int) -> KernelOutput:
        return cls(
            name=tensor.name,
            index=index,
            cpp_type=common.tensor_cpp_type(tensor),
            kernel_allocated=tensor.name in op.shape_rule.kernel_allocated,
            runtime_value=Local.runtime_value(tensor.name),
            array=Local.array(tensor.name),
            shape=Local.output_shape_member(tensor.name),
        )


@dataclass(frozen=True)
class KernelInstantiation:
    """compute<...> for one binding of the type variables."""

    suffix: str
    template_args: str
    compute_params: str
    numpy_condition: str  # the pybind11 binding takes this kernel when it holds


def _inputs(
    op: OpDef, data: Callable[[TensorParam], str] = lambda tensor: ""
) -> tuple[KernelInput, ...]:
    return tuple(KernelInput.of(t, i, data(t)) for i, t in enumerate(op.inputs))


def _ort_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    return f"opgen::ort::data<{cpp_type}>({Local.runtime_value(tensor.name)}, aligned)"


def _numpy_data(tensor: TensorParam) -> str:
    array = ("*" if tensor.optional else "") + Local.array(tensor.name)
    return f"opgen::py_support::data<{common.tensor_cpp_type(tensor)}>({array}, aligned)"


def _outputs(op: OpDef) -> tuple[KernelOutput, ...]:
    return tuple(KernelOutput.of(op, t, i) for i, t in enumerate(op.outputs))


def _instantiations(op: OpDef) -> tuple[KernelInstantiation, ...]:
    result = []
    for inst in op.instantiations:
        binding = {var: cpp.KERNEL_TYPE[dtype] for var, dtype in inst.bindings}
        conditions = []
        for tensor in op.inputs:
            # The numpy dtypes live in one place: dtype_of<T>() of pybind_support.h.
            has_dtype = f"opgen::py_support::has_dtype<{cpp.KERNEL_TYPE[tensor.dtype_in(inst)]}>"
            array = Local.array(tensor.name)
            conditions.append(
                f"(!{array} || {has_dtype}(*{array}))"
                if tensor.optional
                else f"{has_dtype}({array})"
            )
        result.append(
            KernelInstantiation(
                suffix=inst.suffix or "only",
                template_args=common.template_args(op, binding),
                compute_params=common.compute_params(op, binding),
                numpy_condition=" && ".join(conditions),
            )
        )
    return tuple(result)


def _shape_args(op: OpDef) -> str:
    """The arguments of infer_shapes: each input's shape (and presence), then the attributes."""
    args = [
        Local.shape(t.name) + (f", {Local.present(t.name)}" if t.optional else "")
        for t in op.inputs
    ]
    return ", ".join(args) + ", attrs"


def _compute_args(op: OpDef, context: str) -> str:
    return ", ".join(
        [context] + [t.name for t in op.inputs] + [t.name for t in op.outputs] + ["attrs"]
    )


# ---------------------------------------------------------------- one view per template


@dataclass(frozen=True)
class KernelApiView:
    """op.h (the kernel's API: attributes, the shape rule, compute's signature) and kernel.cc
    (the kernel compiled for each dtype)."""

    op_id: str
    op_type: str
    domain: str
    kernel_origin: str
    doc_lines: tuple[str, ...]
    attributes: tuple[CppAttribute, ...]
    inputs: tuple[KernelInput, ...]
    outputs: tuple[KernelOutput, ...]
    shape_params: str
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[OutputStatements, ...]
    template_decl: str
    compute_params: str
    kernel_include: str | None  # the kernel's source file, or None for an inline body
    kernel_body: str
    instantiations: tuple[KernelInstantiation, ...]


def kernel_api_view(op: OpDef, output_dir: Path) -> KernelApiView:
    kernel = op.kernel
    assert kernel is not None and op.op_type is not None and op.domain is not None
    kernel_include = None
    if kernel.source_file is not None:
        kernel_include = common.relative_include(
            output_dir.resolve() / op.op_id, kernel.source_file.resolve()
        )
    shape_params = ", ".join(
        f"const std::vector<Dim>& {Local.shape(t.name)}"
        + (f", bool {Local.present(t.name)}" if t.optional else "")
        for t in op.inputs
    )
    return KernelApiView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        kernel_origin=(
            f"in {kernel.source_file.name}" if kernel.source_file else "inline in the definition"
        ),
        doc_lines=tuple(cpp.comment(op.doc)),
        attributes=tuple(CppAttribute.of(a) for a in op.attributes),
        inputs=_inputs(op),
        outputs=_outputs(op),
        shape_params=shape_params + ", const Attributes& attrs",
        checks=tuple(cpp_shapes.concrete_checks(op)),
        output_shapes=cpp_shapes.concrete_output_shapes(op),
        template_decl=common.template_decl(op),
        compute_params=common.compute_params(op),
        kernel_include=kernel_include,
        kernel_body=kernel.body or "",
        instantiations=_instantiations(op),
    )


@dataclass(frozen=True)
class RuleAttribute:
    """An attribute ONNX Runtime's shape inference reads (the shape rule uses it)."""

    name: str
    required_literal: str


@dataclass(frozen=True)
class InferredOutput:
    name: str
    index: int
    element_type: str  # how ONNX Runtime's shape inference gets its element type
    shape: str


@dataclass(frozen=True)
class KernelWrapperView:
    """What both kernel wrappers (ONNX Runtime, pybind11) read: they check the shapes, make
    the views and outputs, and call compute."""

    op_id: str
    op_type: str
    domain: str
    template_decl: str
    template_args: str
    attributes: tuple[CppAttribute, ...]
    inputs: tuple[KernelInput, ...]
    outputs: tuple[KernelOutput, ...]
    shape_args: str
    compute_args: str
    instantiations: tuple[KernelInstantiation, ...]


def _kernel_wrapper_view(
    op: OpDef, data: Callable[[TensorParam], str], context: str
) -> KernelWrapperView:
    """`data` spells where the wrapper finds an input's elements, `context` is what it passes
    compute as its opgen::Context."""
    assert op.op_type is not None and op.domain is not None
    return KernelWrapperView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        template_decl=common.template_decl(op),
        template_args=common.template_args(op),
        attributes=tuple(CppAttribute.of(a) for a in op.attributes),
        inputs=_inputs(op, data),
        outputs=_outputs(op),
        shape_args=_shape_args(op),
        compute_args=_compute_args(op, context),
        instantiations=_instantiations(op),
    )


@dataclass(frozen=True)
class OrtOpView(KernelWrapperView):
    """ort_op.cc: the ONNX Runtime custom op (kernel, shape inference, registration)."""

    version: int
    versions_text: str
    first_version: int
    rank_ambiguous_indices: str  # inputs whose rank 0 could mean "unknown rank" (not scalars)
    rule_attributes: tuple[RuleAttribute, ...]
    inferred_outputs: tuple[InferredOutput, ...]
    has_optional_inputs: bool
    optional_flags: str


def ort_op_view(op: OpDef) -> OrtOpView:
    assert op.op_type is not None and op.domain is not None and op.version is not None
    input_index = {t.name: i for i, t in enumerate(op.inputs)}
    attrs = {a.name: a for a in op.attributes}

    def element_type(output: TensorParam) -> str:
        source = op.dtype_source(output)
        if source is None:
            return f"opgen::ort::element_type<{common.tensor_cpp_type(output)}>()"
        return f"context.element_type({input_index[source]})"

    return OrtOpView(
        **vars(_kernel_wrapper_view(op, _ort_data, "pool")),
        version=op.version,
        versions_text=", ".join(str(v) for v in op.versions),
        first_version=op.versions[0],
        rank_ambiguous_indices=", ".join(
            str(i.index)
            for i in common.shaped_inputs(op)
            if i.name not in op.shape_rule.scalar_inputs
        ),
        rule_attributes=tuple(
            RuleAttribute(name, cpp.bool_literal(attrs[name].required))
            for name in op.shape_rule.attributes
        ),
        inferred_outputs=tuple(
            InferredOutput(t.name, i, element_type(t), Local.output_shape_member(t.name))
            for i, t in enumerate(op.outputs)
        ),
        has_optional_inputs=any(t.optional for t in op.inputs),
        optional_flags=", ".join(cpp.bool_literal(t.optional) for t in op.inputs),
    )


@dataclass(frozen=True)
class PybindOpView(KernelWrapperView):
    """pybind_op.cc: the kernel bound for numpy arrays."""

    pybind_params: str
    binding_params: str
    binding_arg_specs: tuple[str, ...]
    run_args: str
    output_arrays: str
    dtype_list_expr: str
    supported_dtypes: str
    doc_literal: str


def pybind_op_view(op: OpDef) -> PybindOpView:
    assert op.op_type is not None and op.domain is not None
    array_params = [
        (
            f"const std::optional<py::array>& {Local.array(t.name)}"
            if t.optional
            else f"const py::array& {Local.array(t.name)}"
        )
        for t in op.inputs
    ]
    attr_params = [f"{cpp.ATTR_TYPE[a.type]} {a.name}" for a in op.attributes]
    supported = "; ".join(
        f"{t.name}: "
        + "|".join(
            d.value for d in (op.type_var_dtypes[t.type_var] if t.type_var else (_dtype(t),))
        )
        for t in op.inputs
    )
    return PybindOpView(
        **vars(_kernel_wrapper_view(op, _numpy_data, "serial")),
        pybind_params=", ".join(array_params),
        binding_params=", ".join(array_params + attr_params),
        binding_arg_specs=tuple(
            [f'py::arg("{t.name}")' + (" = py::none()" if t.optional else "") for t in op.inputs]
            + [f'py::arg("{a.name}")' for a in op.attributes]
        ),
        run_args=", ".join(Local.array(t.name) for t in op.inputs),
        output_arrays=", ".join(Local.array(t.name) for t in op.outputs),
        dtype_list_expr=' + ", " + '.join(Local.dtype_name(t.name) for t in op.inputs),
        supported_dtypes=supported,
        doc_literal=cpp.string_literal(op.doc),
    )


@dataclass(frozen=True)
class SchemaTensor:
    name: str
    index: int
    optional: bool
    name_literal: str
    doc_literal: str
    type_literal: str  # a type variable or an ONNX type string


@dataclass(frozen=True)
class SchemaOutput(SchemaTensor):
    dtype_from_input: int | None  # the input whose element type it has, if any
    proto_enum: str | None  # else its TensorProto type


@dataclass(frozen=True)
class SchemaConstraint:
    name_literal: str
    types: str
    doc_literal: str


@dataclass(frozen=True)
class SchemaShapedInput:
    """An input whose shape the inference function reads."""

    name: str
    index: int
    optional: bool
    present: str
    shape: str
    absent_shape: str


@dataclass(frozen=True)
class SchemaVersion:
    """One registration of the schema: a version and the attributes it had then."""

    version: int
    attributes: tuple[CppAttribute, ...]


@dataclass(frozen=True)
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
            type_literal=cpp.string_literal(t.type_var or onnx_type_string(_dtype(t))),
        )

    def output(t: TensorParam, i: int) -> SchemaOutput:
        source = op.dtype_source(t)
        return SchemaOutput(
            **vars(tensor(t, i)),
            dtype_from_input=None if source is None else input_names.index(source),
            proto_enum=None if t.dtype is None else cpp.onnx_proto_enum(t.dtype),
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
                ", ".join(cpp.string_literal(onnx_type_string(d)) for d in tc.dtypes),
                cpp.string_literal(tc.doc),
            )
            for tc in op.type_constraints
        ),
        shaped_inputs=tuple(
            SchemaShapedInput(
                i.name,
                i.index,
                i.optional,
                Local.present(i.name),
                Local.shape(i.name),
                Local.absent_shape(i.name),
            )
            for i in common.shaped_inputs(op)
        ),
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


def _dtype(tensor: TensorParam) -> DType:
    assert tensor.dtype is not None
    return tensor.dtype


@dataclass(frozen=True)
class TestTensor:
    name: str
    index: int
    name_literal: str
    dtype_expr: str  # its TensorProto type in the test's models (the first instantiation)
    value_info: str


@dataclass(frozen=True)
class ExpectedOutput:
    name: str
    index: int
    inferred_type: str
    expected_literal: str | None  # its whole inferred type; None: only the element type known
    expected_prefix: str


@dataclass(frozen=True)
class ValidCase:
    attribute_statements: tuple[str, ...]
    label: str
    input_shapes: str
    outputs: tuple[ExpectedOutput, ...]


@dataclass(frozen=True)
class ErrorCaseView:
    attribute_statements: tuple[str, ...]
    label: str
    input_shapes: str
    message_literal: str


@dataclass(frozen=True)
class SchemaTestView:
    """schema_test.cc: registers the schema and checks inference on the test cases' shapes."""

    op_id: str
    op_type: str
    domain: str
    version: int
    domain_literal: str
    op_type_literal: str
    register_function: str
    earlier_versions: tuple[int, ...]
    inputs: tuple[TestTensor, ...]
    outputs: tuple[TestTensor, ...]
    valid_cases: tuple[ValidCase, ...]
    error_cases: tuple[ErrorCaseView, ...]


def _explicit_attributes(op: OpDef, given: dict[str, Any]) -> dict[str, Any]:
    """A function op's test nodes spell out every attribute: ONNX 1.12's C++ inference does not
    apply schema defaults to attribute references (@name) in a function body."""
    if op.function is None:
        return given
    return {**{a.name: a.default for a in op.attributes if not a.required}, **given}


def _dims_literal(dims: list[int | str]) -> str:
    entries = [f'{{0, "{d}"}}' if isinstance(d, str) else f'{{{d}, ""}}' for d in dims]
    return "{" + ", ".join(entries) + "}"


def _test_dtype(op: OpDef, tensor: TensorParam) -> DType:
    """The tensor's dtype in the first instantiation (what the C++ test models use)."""
    return tensor.dtype_in(op.instantiations[0])


def _input_shapes_literal(op: OpDef, shapes: Mapping[str, Sequence[int | str]]) -> str:
    """The shapes of the inputs a case gives, in order, as make_model's argument."""
    return (
        "{"
        + ", ".join(_dims_literal(list(shapes[t.name])) for t in op.inputs if t.name in shapes)
        + "}"
    )


def _valid_case(op: OpDef, index: int, case: RandomCase) -> ValidCase:
    named = {name: list(dims) for name, dims in case.shapes.items()}
    expected = evaluate_output_shapes(op, named, case.attributes)  # outputs with a rule
    outputs = []
    for i, t in enumerate(op.outputs):
        prefix = f"{TENSOR_PROTO_NUMBER[_test_dtype(op, t)]} ["
        whole = None
        if t.name in expected:
            whole = cpp.string_literal(prefix + ", ".join(str(d) for d in expected[t.name]) + "]")
        outputs.append(
            ExpectedOutput(
                t.name, i, Local.inferred_type(t.name), whole, cpp.string_literal(prefix)
            )
        )
    attributes = _explicit_attributes(op, case.attributes)
    return ValidCase(
        attribute_statements=tuple(
            cpp.node_attribute_statements("node", op.attributes_by_name, attributes)
        ),
        label=f"random case {index} {named}".replace('"', "'"),
        input_shapes=_input_shapes_literal(op, named),
        outputs=tuple(outputs),
    )


def _error_case(op: OpDef, index: int, case: ErrorCase) -> ErrorCaseView:
    return ErrorCaseView(
        attribute_statements=tuple(
            cpp.node_attribute_statements("node", op.attributes_by_name, case.attributes)
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
            cpp.onnx_proto_enum(_test_dtype(op, t)),
            Local.value_info(t.name),
        )

    return SchemaTestView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        version=op.version,
        domain_literal=cpp.string_literal(op.domain),
        op_type_literal=cpp.string_literal(op.op_type),
        register_function=f"Register_{op.domain_ident}_Schemas",
        earlier_versions=op.earlier_versions,
        inputs=tuple(test_tensor(t, i) for i, t in enumerate(op.inputs)),
        outputs=tuple(test_tensor(t, i) for i, t in enumerate(op.outputs)),
        valid_cases=tuple(_valid_case(op, i, case) for i, case in enumerate(op.tests.random)),
        error_cases=tuple(
            _error_case(op, i, case)
            for i, case in enumerate(op.error_cases)
            if case.values is None  # a shape error; value errors show only when a kernel runs
        ),
    )


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    """Kernel ops: kernel API, instantiations, ONNX Runtime and pybind11 wrappers, C++ schema
    and its test. Function ops: the C++ schema (with its body) and its test. Nothing else has
    C++ (ops ONNX Runtime provides, export-only definitions)."""
    if not op.has_cpp_schema:
        return []
    base = f"{op.op_id}/{op.op_id}"
    srcs = common.sources(op)
    files = []
    if op.kernel is not None:
        api = kernel_api_view(op, emission.output_dir)
        files += [
            render("cpp/op.h.j2", f"{base}_op.h", srcs, api),
            render("cpp/kernel.cc.j2", f"{base}_kernel.cc", srcs, api),
            render("cpp/ort_op.cc.j2", f"{base}_ort.cc", srcs, ort_op_view(op)),
            render("cpp/pybind_op.cc.j2", f"{base}_pybind.cc", srcs, pybind_op_view(op)),
        ]
    return files + [
        render("cpp/onnx_schema.cc.j2", f"{base}_schema.cc", srcs, onnx_schema_view(op)),
        render("cpp/schema_test.cc.j2", f"{base}_schema_test.cc", srcs, schema_test_view(op)),
    ]
