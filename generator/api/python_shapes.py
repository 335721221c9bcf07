"""The shape rule in Python: on torch tensors (the fake kernel and the eager checks, with
torch._check-friendly expressions so symbolic sizes stay symbolic), on ONNX
TensorShapeProto dims (the Python OpSchema's inference function) and on the TorchScript
exporter's values (the output types of the symbolic, its parts only)."""

from __future__ import annotations

from dataclasses import dataclass

from generator.api.names import Local
from generator.api.onnx import ATTR_TYPE as ONNX_ATTR_TYPE
from generator.api.python import literal
from generator.model.op import OpDef
from generator.model.shapes import (
    AllowedValuesCheck,
    AttributeCheck,
    AxisCheck,
    BinaryOp,
    BroadcastPart,
    DataDependentPart,
    DimEqualCheck,
    DimExpr,
    DimLiteralCheck,
    DimPart,
    DimRef,
    ExprCheck,
    OutputShape,
    RangeCheck,
    RankCheck,
    ReducePart,
    ShapeEqualCheck,
    SlicePart,
    dims_read,
)
from generator.shapes.spell import (
    SpelledCheck,
    Test,
    fold,
    spell_all_checks,
    spell_attribute_checks,
    spell_input_checks,
    spell_parts,
)


def _slice(part: SlicePart) -> str:
    start = "" if part.start is None else str(part.start)
    stop = "" if part.stop is None else str(part.stop)
    return f"{start}:{stop}"


def _attribute_condition(check: AttributeCheck, value: str) -> str:
    """The condition an attribute check requires of `value` (a float range compares the
    float32 every runtime holds the value in)."""
    if isinstance(check, AllowedValuesCheck):  # (templates negate it: `not (x in y)` lints)
        return f"any({value} == allowed for allowed in {literal(list(check.allowed))})"
    if check.is_float:
        value = f"_support.float32({value})"
    return " and ".join(
        f"{value} {relation} {literal(bound)}" for relation, bound in check.comparisons
    )


class _PythonSyntax:
    """What both Python spellings share."""

    def binary(self, op: BinaryOp, left: str, right: str) -> str:
        return f"({left} {op} {right})"  # Python's ints do not overflow and // floors

    def constant(self, value: int) -> str:
        return str(value)

    def string_literal(self, text: str) -> str:
        return literal(text)

    def either(self, conditions: list[str]) -> str:
        return " or ".join(conditions)


@dataclass(frozen=True)
class TorchShapes(_PythonSyntax):
    """On torch tensors named as the inputs; attributes are Python values named as themselves."""

    optional_inputs: frozenset[str]

    def input_dim(self, ref: DimRef) -> str:
        return f"{ref.input}.shape[{ref.axis}]"

    def attribute(self, name: str) -> str:
        return name

    def _expr(self, expr: DimExpr) -> str:
        return fold(expr, self)

    def absent(self, input: str) -> str:
        return f"{input} is None"

    def allowed_values(self, check: AllowedValuesCheck) -> Test:
        return self._attribute(check)

    def value_range(self, check: RangeCheck) -> Test:
        return self._attribute(check)

    def _attribute(self, check: AttributeCheck) -> Test:
        return Test(
            _attribute_condition(check, check.attribute), f"_support.quoted({check.attribute})"
        )

    def rank(self, check: RankCheck) -> Test:
        relation = "==" if check.exact else ">="
        return Test(f"{check.input}.dim() {relation} {check.rank}", f"list({check.input}.shape)")

    def dim_equal(self, check: DimEqualCheck) -> Test:
        a, b = self.input_dim(check.a), self.input_dim(check.b)
        return Test(f"{a} == {b}", f'f"{{{a}}} and {{{b}}}"')

    def dim_literal(self, check: DimLiteralCheck) -> Test:
        a = self.input_dim(check.ref)
        return Test(f"{a} == {check.value}", a)

    def shape_equal(self, check: ShapeEqualCheck) -> Test:
        a, b = f"list({check.a}.shape)", f"list({check.b}.shape)"
        return Test(f"{a} == {b}", f'f"{{{a}}} and {{{b}}}"')

    def axis(self, check: AxisCheck) -> Test:
        axis = self._expr(check.axis)
        return Test(
            f"-{check.input}.dim() <= {axis} < {check.input}.dim()",
            f'f"{{{axis}}} and rank {{{check.input}.dim()}}"',
        )

    def expr(self, check: ExprCheck) -> Test:
        value = self._expr(check.expr)
        return Test(f"{value} {'>' if check.strict else '>='} 0", value)

    def slice_part(self, part: SlicePart) -> str:
        return f"*{part.input}.shape[{_slice(part)}]"

    def dim_part(self, part: DimPart) -> str:
        return self._expr(part.expr)

    def data_dependent_part(self, part: DataDependentPart) -> str:
        return part.symbol  # from new_dynamic_size() (see torch_op.py)

    def broadcast_part(self, part: BroadcastPart) -> str:
        def shapes_of(name: str) -> str:
            if name in part.variadic:  # every value's
                return f"*(value.shape for value in {name})"
            if name in self.optional_inputs:
                return f"None if {name} is None else {name}.shape"
            return f"{name}.shape"

        shapes = ", ".join(shapes_of(name) for name in part.operands)
        return f"*_support.broadcast_sizes({literal(part.message)}, {shapes})"

    def reduce_part(self, part: ReducePart) -> str:
        return (
            f"*_support.reduced_sizes(list({part.input}.shape), "
            f"{self._expr(part.axis)}, {self._expr(part.keepdims)}, 1)"
        )


def torch_checks(op: OpDef) -> list[SpelledCheck]:
    return spell_all_checks(op.shape_rule, TorchShapes(op.optional_inputs), op.optional_inputs)


@dataclass(frozen=True)
class ShapeExpression:
    """An output's shape as a Python list expression."""

    output: str
    expr: str
    # A variadic output: the dims variable of the input whose values' dims its values take
    # ("" for others, whose shape is `expr`)
    values_of: str = ""


def torch_output_shapes(op: OpDef) -> list[ShapeExpression]:
    """Each output's shape as a Python list expression over the (fake) input tensors."""
    spelling = TorchShapes(op.optional_inputs)
    return [
        ShapeExpression(
            out.output, "[" + ", ".join(spell_parts(out, spelling)) + "]", out.values_of or ""
        )
        for out in op.shape_rule.outputs
    ]


@dataclass(frozen=True)
class OnnxShapes(_PythonSyntax):
    """On lists of TensorShapeProto.Dimension named `<input>_dims` (None when absent); known
    dims are compared by value, unknown ones pass. `_support.value` raises _support.Unknown
    for an unknown dim, which the callers (computed_dim, known_true) catch."""

    def _dims(self, input: str) -> str:
        return Local.onnx_dims(input)

    def _proto_dim(self, ref: DimRef) -> str:
        return f"{self._dims(ref.input)}[{ref.axis}]"

    def input_dim(self, ref: DimRef) -> str:
        return f"_support.value({self._proto_dim(ref)})"

    def attribute(self, name: str) -> str:
        return Local.onnx_attribute(name)

    def _expr(self, expr: DimExpr) -> str:
        return fold(expr, self)

    def absent(self, input: str) -> str:
        return f"{self._dims(input)} is None"

    def allowed_values(self, check: AllowedValuesCheck) -> Test:
        return self._attribute(check)

    def value_range(self, check: RangeCheck) -> Test:
        return self._attribute(check)

    def _attribute(self, check: AttributeCheck) -> Test:
        value = Local.onnx_attribute(check.attribute)
        return Test(_attribute_condition(check, value), f"_support.quoted({value})")

    def rank(self, check: RankCheck) -> Test:
        relation = "==" if check.exact else ">="
        dims = self._dims(check.input)
        return Test(f"len({dims}) {relation} {check.rank}", f"_support.shape_text({dims})")

    def dim_equal(self, check: DimEqualCheck) -> Test:
        a, b = self._proto_dim(check.a), self._proto_dim(check.b)
        return Test(
            f"_support.known_equal({a}, {b})",
            f'_support.dim_text({a}) + " and " + _support.dim_text({b})',
        )

    def dim_literal(self, check: DimLiteralCheck) -> Test:
        a = self._proto_dim(check.ref)
        return Test(
            f"_support.known_equal({a}, _support.fixed_dim({check.value}))",
            f"_support.dim_text({a})",
        )

    def shape_equal(self, check: ShapeEqualCheck) -> Test:
        a, b = self._dims(check.a), self._dims(check.b)
        return Test(
            f"len({a}) == len({b}) and all(_support.known_equal(d, e) "
            f"for d, e in zip({a}, {b}, strict=True))",
            f'_support.shape_text({a}) + " and " + _support.shape_text({b})',
        )

    def axis(self, check: AxisCheck) -> Test:
        axis, dims = self._expr(check.axis), self._dims(check.input)
        return Test(
            f"-len({dims}) <= {axis} < len({dims})",
            f'str({axis}) + " and rank " + str(len({dims}))',
        )

    def expr(self, check: ExprCheck) -> Test:
        relation = ">" if check.strict else ">="
        value = self._expr(check.expr)
        # known: the check failed on it
        return Test(f"_support.known_true(lambda: {value} {relation} 0)", f"str({value})")

    def slice_part(self, part: SlicePart) -> str:
        return f"*{self._dims(part.input)}[{_slice(part)}]"

    def dim_part(self, part: DimPart) -> str:
        if isinstance(part.expr, DimRef):
            return self._proto_dim(part.expr)  # copied: a named dim stays named
        return f"_support.computed_dim(lambda: {self._expr(part.expr)})"

    def data_dependent_part(self, part: DataDependentPart) -> str:
        return "onnx.TensorShapeProto.Dimension()"  # data-dependent: unknown

    def broadcast_part(self, part: BroadcastPart) -> str:
        # A variadic input's dims are a list of every value's.
        dims = ", ".join(
            ("*" if name in part.variadic else "") + self._dims(name) for name in part.operands
        )
        return f"*_support.broadcast_dims({literal(part.message)}, {dims})"

    def reduce_part(self, part: ReducePart) -> str:
        return (
            f"*_support.reduced_sizes({self._dims(part.input)}, {self._expr(part.axis)}, "
            f"{self._expr(part.keepdims)}, _support.fixed_dim(1))"
        )


def onnx_checks(op: OpDef) -> list[SpelledCheck]:
    """Checks on shapes (run when every input shape is known); see onnx_attribute_checks. Each
    message reports what it got as the kernels' do (known dims by value, others by name)."""
    return spell_input_checks(op.shape_rule, OnnxShapes(), op.optional_inputs)


def onnx_attribute_checks(op: OpDef) -> list[SpelledCheck]:
    return spell_attribute_checks(op.shape_rule, OnnxShapes())


@dataclass(frozen=True)
class InferenceAttribute:
    """An attribute the inference function reads: `variable = _support.attribute(ctx, name,
    default{missing_message})`."""

    variable: str
    name: str
    default: str  # a Python literal; "None" for a required attribute
    proto_type: str  # the AttributeProto type it must have, as onnx.AttributeProto.<name>
    wrong_type_message: str  # a literal; the type it has follows, as ONNX Runtime's says
    missing_message: str  # ", <message literal>" for a required attribute, else ""


def onnx_inference_attributes(op: OpDef) -> list[InferenceAttribute]:
    """The attributes the inference function reads, with their defaults (None: required)."""
    attrs = {a.name: a for a in op.attributes}
    return [
        InferenceAttribute(
            variable=Local.onnx_attribute(name),
            name=name,
            default="None" if attrs[name].required else literal(attrs[name].default),
            proto_type=f"onnx.AttributeProto.{ONNX_ATTR_TYPE[attrs[name].type]}",
            wrong_type_message=literal(
                f"{op.op_type}: attribute '{name}' must be of type "
                f"{ONNX_ATTR_TYPE[attrs[name].type]}, got "
            ),
            missing_message=(
                f", {literal(f'{op.op_type}: required attribute {name!r} is missing')}"
                if attrs[name].required
                else ""
            ),
        )
        for name in op.shape_rule.attributes
    ]


def onnx_output_shapes(op: OpDef) -> list[ShapeExpression]:
    """Each output's shape as a Python list expression over the inputs' `<input>_dims`."""
    spelling = OnnxShapes()
    return [
        ShapeExpression(
            out.output,
            "[" + ", ".join(spell_parts(out, spelling)) + "]",
            Local.onnx_dims(out.values_of) if out.values_of is not None else "",
        )
        for out in op.shape_rule.outputs
    ]


@dataclass(frozen=True)
class TorchScriptShapes(_PythonSyntax):
    """On the TorchScript symbolic's input values: an output's sizes as a list of ints and None
    (unknown), for its type (`_support.symbolic_type`). `_support.symbolic_sizes` is None for an
    absent optional input and raises _support.Unknown where a rank is unknown, as
    `_support.known` does for an unknown size; `computed_size` and `symbolic_type` catch it.
    Attributes are the symbolic's arguments, named as themselves. Only parts: the checks ran in
    PyTorch when the model was traced."""

    def _sizes(self, input: str) -> str:
        return f"_support.symbolic_sizes({input})"

    def input_dim(self, ref: DimRef) -> str:
        return f"_support.known({self._sizes(ref.input)}[{ref.axis}])"

    def attribute(self, name: str) -> str:
        return name

    def slice_part(self, part: SlicePart) -> str:
        return f"*{self._sizes(part.input)}[{_slice(part)}]"

    def dim_part(self, part: DimPart) -> str:
        if isinstance(part.expr, DimRef):  # copied: an unknown size stays unknown
            return f"{self._sizes(part.expr.input)}[{part.expr.axis}]"
        if not dims_read(part.expr):  # integers and attributes: always known
            return fold(part.expr, self)
        return f"_support.computed_size(lambda: {fold(part.expr, self)})"

    def data_dependent_part(self, part: DataDependentPart) -> str:
        return "None"  # only the kernel knows it

    def broadcast_part(self, part: BroadcastPart) -> str:
        def sizes_of(name: str) -> str:
            if name in part.variadic:  # every value's
                return f"*map(_support.symbolic_sizes, symbolic_helper._unpack_list({name}))"
            return self._sizes(name)

        sizes = ", ".join(sizes_of(name) for name in part.operands)
        return f"*_support.broadcast_symbolic_sizes({sizes})"

    def reduce_part(self, part: ReducePart) -> str:
        return (
            f"*_support.reduced_sizes({self._sizes(part.input)}, {fold(part.axis, self)}, "
            f"{fold(part.keepdims, self)}, 1)"
        )


def torchscript_output_sizes(shape: OutputShape) -> str:
    """An output's sizes (not a variadic one's) in the TorchScript symbolic, as a Python list
    expression over its input values (see TorchScriptShapes)."""
    assert shape.values_of is None, "a variadic output's values take its paired input's types"
    return "[" + ", ".join(spell_parts(shape, TorchScriptShapes())) + "]"
