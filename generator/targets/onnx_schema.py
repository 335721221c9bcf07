"""The Python ONNX schema of an op: an onnx.defs.OpSchema registered from Python, with its
inference function (onnx_schema.py), so onnx.checker and shape inference know the op."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.api import python_shapes
from generator.api.names import Local
from generator.api.python_shapes import InferenceAttribute
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.capabilities import Target, targets_of
from generator.model.op import FixedDType, FromAttribute, FromInput, OpDef
from generator.model.tensors import TensorParam, VariadicArity
from generator.render import GeneratedFile, render
from generator.shapes.spell import SpelledCheck
from generator.view import view


@view
class KeywordView:
    keyword: str
    value: str  # a Python expression


@view
class SchemaInputView:
    name: str
    type_str: str
    doc_literal: str
    keywords: tuple[KeywordView, ...]  # FormalParameter's, where not its defaults


@view
class SchemaOutputView:
    name: str
    index: int
    type_str: str
    doc_literal: str
    keywords: tuple[KeywordView, ...]
    type_variable: str  # its TypeProto in the inference function
    elem_type_expr: str | None  # None: an interface-only op, which infers nothing
    optional: bool  # a node may leave it out (then inference must not set it)
    # A variadic output (type_variable is a list of its values' TypeProtos): the index of the
    # variadic input whose values its values pair with, and what another count raises
    paired_index: int | None = None
    count_message: str = ""


@view
class ReadInputView:
    """An input whose type the inference function reads (for its shape or its dtype)."""

    index: int
    optional: bool
    variadic: bool  # its values are the inputs from index on: type_variable is their list
    type_variable: str
    # variadic: its fewest values, and literals of what fewer or an absent ("") value raise
    min_arity: int = 1
    too_few_message: str = ""
    absent_message: str = ""


@view
class ShapedInputView:
    """An input whose dims the shape rule reads."""

    optional: bool
    variadic: bool  # dims_variable is a list of every value's dims
    type_variable: str
    dims_variable: str


@view
class InferredShapeView:
    type_variable: str  # the output's TypeProto
    expr: str  # its dims, over the inputs' dims
    # A variadic output: the dims variable of the input it pairs with (type_variable is a list,
    # value i takes that input's value i's dims); "" for others
    values_of: str = ""


@view
class SchemaAttributeView:
    name: str
    has_default: bool
    required_literal: str  # without a default: required or not (True / False)
    onnx_enum: str
    doc_literal: str
    python_default: str | None  # None: no default
    since: int  # the op version that added it


@view
class TypeConstraintView:
    name: str
    types: str  # a list literal
    doc_literal: str


@view
class OnnxSchemaView:
    """generated/<op>/onnx_schema.py: the op's ONNX schemas and shape inference in Python."""

    title: str
    domain: str
    op_type: str
    version: int
    provided_by: str | None  # the runtime that implements the op, if not us
    has_inference: bool  # False: an interface-only op, whose schema has no inference function
    infers_through_function: bool
    input_names: str  # a list literal
    output_names: str  # a list literal
    inference_attributes: tuple[InferenceAttribute, ...]
    attribute_checks: tuple[SpelledCheck, ...]
    read_inputs: tuple[ReadInputView, ...]
    infers_shapes: bool  # the shape rule checks or gives some output's shape
    shapes_known: str  # the condition that every shape the rule reads is known
    shaped_inputs: tuple[ShapedInputView, ...]
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[InferredShapeView, ...]
    inputs: tuple[SchemaInputView, ...]
    outputs: tuple[SchemaOutputView, ...]
    attributes: tuple[SchemaAttributeView, ...]
    type_constraints: tuple[TypeConstraintView, ...]
    doc_literal: str
    versions: str  # a list literal
    has_function: bool
    function_text_literal: str | None
    function_opset: int | None


def onnx_schema_view(op: OpDef) -> OnnxSchemaView:
    assert op.op_type is not None and op.domain is not None and op.version is not None
    inference = _schema_inference(op) if not op.is_interface_only else _NO_INFERENCE
    function_text = onnx_api.function_text(op) if op.function else None
    return OnnxSchemaView(
        title=op.title,
        domain=op.domain,
        op_type=op.op_type,
        version=op.version,
        provided_by=op.provided_by.value if op.provided_by else None,
        has_inference=not op.is_interface_only,
        infers_through_function=op.infers_through_function,
        input_names=py.literal([t.name for t in op.inputs]),
        output_names=py.literal([t.name for t in op.outputs]),
        inference_attributes=inference.attributes,
        attribute_checks=inference.attribute_checks,
        read_inputs=inference.read_inputs,
        infers_shapes=bool(inference.checks or inference.output_shapes),
        shapes_known=inference.shapes_known,
        shaped_inputs=inference.shaped_inputs,
        checks=inference.checks,
        output_shapes=inference.output_shapes,
        inputs=tuple(
            SchemaInputView(
                t.name, onnx_api.parameter_type_string(t), py.literal(t.doc), _keywords(t)
            )
            for t in op.inputs
        ),
        outputs=tuple(
            SchemaOutputView(
                name=t.name,
                index=i,
                type_str=onnx_api.parameter_type_string(t),
                doc_literal=py.literal(t.doc),
                keywords=_keywords(t),
                type_variable=Local.onnx_type(t.name),
                elem_type_expr=None if op.is_interface_only else _elem_type(op, t),
                optional=t.optional,
                paired_index=op.paired_input_index(t),
                count_message=(
                    py.literal(op.paired_count_message(t)) if op.paired_input(t) else ""
                ),
            )
            for i, t in enumerate(op.outputs)
        ),
        attributes=tuple(
            SchemaAttributeView(
                name=a.name,
                has_default=a.has_default,
                required_literal=str(a.required),
                onnx_enum=onnx_api.ATTR_TYPE[a.type],
                doc_literal=py.literal(a.doc),
                python_default=py.literal(_onnx_value(a.default)) if a.has_default else None,
                since=a.since_version or op.versions[0],
            )
            for a in op.attributes
        ),
        type_constraints=tuple(
            TypeConstraintView(
                tc.name,
                py.literal([onnx_api.value_type_string(t) for t in tc.types]),
                py.literal(tc.doc),
            )
            for tc in op.type_constraints
        ),
        doc_literal=py.literal(op.doc),
        versions=py.literal(list(op.versions)),
        has_function=function_text is not None,
        function_text_literal=py.literal(function_text) if function_text else None,
        function_opset=op.function.opset if op.function else None,
    )


def _keywords(param: TensorParam) -> tuple[KeywordView, ...]:
    return tuple(KeywordView(k, v) for k, v in onnx_api.formal_parameter_keywords(param))


@dataclass(frozen=True)
class _SchemaInference:
    """The parts of the schema's inference function (the shape rule, spelled in Python)."""

    attributes: tuple[InferenceAttribute, ...]
    attribute_checks: tuple[SpelledCheck, ...]
    read_inputs: tuple[ReadInputView, ...]
    shapes_known: str
    shaped_inputs: tuple[ShapedInputView, ...]
    checks: tuple[SpelledCheck, ...]
    output_shapes: tuple[InferredShapeView, ...]


_NO_INFERENCE = _SchemaInference((), (), (), "True", (), (), ())


def _schema_inference(op: OpDef) -> _SchemaInference:
    shaped = common.shaped_inputs(op)
    shaped_names = {s.name for s in shaped}
    dtype_sources = {
        source.input for o in op.outputs if isinstance(source := op.dtype_source(o), FromInput)
    }
    return _SchemaInference(
        attributes=tuple(python_shapes.onnx_inference_attributes(op)),
        attribute_checks=tuple(python_shapes.onnx_attribute_checks(op)),
        read_inputs=tuple(
            _read_input(op, i, t)
            for i, t in enumerate(op.inputs)
            if t.name in shaped_names or t.name in dtype_sources
        ),
        shapes_known=" and ".join(_shape_known(op, s.name) for s in shaped) or "True",
        shaped_inputs=tuple(
            ShapedInputView(s.optional, s.variadic, _onnx_type(op, s.name), Local.onnx_dims(s.name))
            for s in shaped
        ),
        checks=tuple(python_shapes.onnx_checks(op)),
        output_shapes=tuple(
            InferredShapeView(Local.onnx_type(shape.output), shape.expr, shape.values_of)
            for shape in python_shapes.onnx_output_shapes(op)
        ),
    )


def _read_input(op: OpDef, index: int, tensor: TensorParam) -> ReadInputView:
    if not isinstance(tensor.arity, VariadicArity):
        return ReadInputView(index, tensor.optional, False, _onnx_type(op, tensor.name))
    return ReadInputView(
        index,
        False,
        True,
        _onnx_type(op, tensor.name),
        tensor.arity.min_arity,
        py.literal(op.too_few_values_message(tensor)),
        py.literal(op.absent_value_message(tensor)),
    )


def _onnx_type(op: OpDef, tensor: str) -> str:
    """The inference function's TypeProto of an input (a list of them for a variadic one)."""
    return Local.onnx_types(tensor) if tensor in op.variadic_inputs else Local.onnx_type(tensor)


def _shape_known(op: OpDef, tensor: str) -> str:
    """The condition that an input's shape is known to the inference function (an absent
    optional input's counts as known; a variadic one's, every value's)."""
    if tensor in op.variadic_inputs:
        types = Local.onnx_types(tensor)
        return f'all(value.tensor_type.HasField("shape") for value in {types})'
    has_shape = f'{Local.onnx_type(tensor)}.tensor_type.HasField("shape")'
    if tensor in op.optional_inputs:
        return f"({Local.onnx_type(tensor)} is None or {has_shape})"
    return has_shape


def _elem_type(op: OpDef, output: TensorParam) -> str:
    """The output's element type in the inference function: its dtype source's, or fixed."""
    match op.dtype_source(output):
        case FromInput(name) if name in op.variadic_inputs:
            return f"{Local.onnx_types(name)}[0].tensor_type.elem_type"
        case FromInput(name):
            return f"{Local.onnx_type(name)}.tensor_type.elem_type"
        case FromAttribute(name):  # read, and checked against the allowed dtypes, above
            return f"int({Local.onnx_attribute(name)})"  # a FLOAT 7.0 passes that check
        case FixedDType(dtype):
            return f"onnx.TensorProto.{onnx_api.TENSOR_PROTO[dtype]}"
        case source:
            assert_never(source)


def _onnx_value(value: object) -> object:
    """ONNX has no bool attributes: a PyTorch bool is an int 0/1."""
    return int(value) if isinstance(value, bool) else value


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if Target.onnx_schema not in targets_of(op):
        return []
    path = f"{op.op_id}/onnx_schema.py"
    return [render("python/onnx_schema.py.j2", path, common.sources(op), onnx_schema_view(op))]
