"""The shape rule in C++: generic over the dim type (op.h's infer_shapes<Dim>: int64_t in the
kernel wrappers, opgen::SymDim in ONNX Runtime's shape inference) and on TensorShapeProto (the
ONNX C++ schema's inference function)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generator.api.cpp import int_literal, schema_default, string_literal
from generator.api.names import Local
from generator.api.onnx import ATTR_TYPE as ONNX_ATTR_TYPE
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
    RangeCheck,
    RankCheck,
    ReducePart,
    ShapeEqualCheck,
    SlicePart,
    dims_read,
)
from generator.model.types import AttrType
from generator.shapes.spell import (
    PartSpelling,
    SpelledCheck,
    Test,
    fold,
    spell_all_checks,
    spell_attribute_checks,
    spell_checks,
    spell_input_checks,
    spell_parts,
)

# The checked arithmetic of opgen/shape_rule.h (int64_t and SymDim) and of
# opgen/onnx_schema_support.h (a model's dim values): overflow is an error, not a wrong size.
_DIM_FUNCTIONS: dict[BinaryOp, str] = {
    "+": "dim_add",
    "-": "dim_sub",
    "*": "dim_mul",
    "//": "dim_floor_div",
}


def _attribute_condition(check: AttributeCheck, value: str) -> str:
    """The condition an attribute check requires of `value` (a float attribute is a float
    here, as in every runtime; its bounds are float32 values, spelled exactly)."""
    if isinstance(check, AllowedValuesCheck):
        attribute_type = type(check.allowed[0])
        spell = string_literal if attribute_type is str else int_literal
        return " || ".join(f"{value} == {spell(v)}" for v in check.allowed)  # type: ignore[arg-type]
    spell_bound = (lambda v: f"{v!r}f") if check.is_float else int_literal
    return " && ".join(
        f"{value} {relation} {spell_bound(bound)}"  # type: ignore[arg-type]
        for relation, bound in check.comparisons
    )


class _CppSyntax:
    def constant(self, value: int) -> str:
        return str(value)

    def string_literal(self, text: str) -> str:
        return string_literal(text)

    def absent(self, input: str) -> str:
        return f"!{Local.present(input)}"

    def either(self, conditions: list[str]) -> str:
        return " || ".join(conditions)


@dataclass(frozen=True)
class ConcreteShapes(_CppSyntax):
    """infer_shapes<Dim>: shapes are vectors of Dim named `<input>_shape`, attributes the
    members of `attrs`; the output parts are statements on `target`."""

    optional_inputs: frozenset[str]
    target: str = ""  # the output shape a part's statement extends

    def input_dim(self, ref: DimRef) -> str:
        return f"opgen::axis_size({Local.shape(ref.input)}, {ref.axis})"

    def attribute(self, name: str) -> str:
        return Local.kernel_attribute(name)

    def binary(self, op: BinaryOp, left: str, right: str) -> str:
        return f"opgen::{_DIM_FUNCTIONS[op]}(kOpType, {left}, {right})"

    def _expr(self, expr: DimExpr) -> str:
        return fold(expr, self)

    def allowed_values(self, check: AllowedValuesCheck) -> Test:
        return self._attribute(check)

    def value_range(self, check: RangeCheck) -> Test:
        return self._attribute(check)

    def _attribute(self, check: AttributeCheck) -> Test:
        value = Local.kernel_attribute(check.attribute)
        return Test(_attribute_condition(check, value), f"opgen::quoted({value})")

    def rank(self, check: RankCheck) -> Test:
        relation = "==" if check.exact else ">="
        shape = Local.shape(check.input)
        return Test(
            f"static_cast<int64_t>({shape}.size()) {relation} {check.rank}",
            f"opgen::shape_to_string({shape})",
        )

    def dim_equal(self, check: DimEqualCheck) -> Test:
        a, b = self.input_dim(check.a), self.input_dim(check.b)
        return Test(
            f"{a} == {b}", f'opgen::dim_to_string({a}) + " and " + opgen::dim_to_string({b})'
        )

    def dim_literal(self, check: DimLiteralCheck) -> Test:
        a = self.input_dim(check.ref)
        return Test(f"{a} == {check.value}", f"opgen::dim_to_string({a})")

    def shape_equal(self, check: ShapeEqualCheck) -> Test:
        a, b = Local.shape(check.a), Local.shape(check.b)
        return Test(
            f"{a} == {b}", f'opgen::shape_to_string({a}) + " and " + opgen::shape_to_string({b})'
        )

    def axis(self, check: AxisCheck) -> Test:
        axis = self._expr(check.axis)
        rank = f"static_cast<int64_t>({Local.shape(check.input)}.size())"
        return Test(
            f"-{rank} <= {axis} && {axis} < {rank}",
            f'std::to_string({axis}) + " and rank " + std::to_string({rank})',
        )

    def expr(self, check: ExprCheck) -> Test:
        value = self._expr(check.expr)
        return Test(f"{value} {'>' if check.strict else '>='} 0", f"opgen::dim_to_string({value})")

    def slice_part(self, part: SlicePart) -> str:
        start = part.start if part.start is not None else 0
        stop = part.stop if part.stop is not None else "opgen::kShapeEnd"
        return f"opgen::append_dims({self.target}, {Local.shape(part.input)}, {start}, {stop});"

    def dim_part(self, part: DimPart) -> str:
        return f"{self.target}.push_back({self._expr(part.expr)});"

    def data_dependent_part(self, part: DataDependentPart) -> str:
        symbol = string_literal(part.symbol)
        return f"{self.target}.push_back(opgen::data_dependent_dim<Dim>({symbol}));"

    def broadcast_part(self, part: BroadcastPart) -> str:
        def group(name: str) -> str:
            """The operand's shapes: a variadic input's every value, an absent one's none."""
            if name in part.variadic:
                return f"opgen::each_shape({Local.shape(name)})"
            if name in self.optional_inputs:
                return f"{{{Local.present(name)} ? &{Local.shape(name)} : nullptr}}"
            return f"{{&{Local.shape(name)}}}"

        shapes = ", ".join(group(name) for name in part.operands)
        return f"{self.target} = opgen::broadcast_shapes<Dim>({string_literal(part.message)}, {{{shapes}}});"

    def reduce_part(self, part: ReducePart) -> str:
        return (
            f"{self.target} = opgen::reduced_shape({Local.shape(part.input)}, "
            f"{self._expr(part.axis)}, {self._expr(part.keepdims)});"
        )


def concrete_checks(op: OpDef) -> list[SpelledCheck]:
    """Each check: a C++ condition that must hold, the message, and the values to report."""
    return spell_all_checks(op.shape_rule, ConcreteShapes(op.optional_inputs), op.optional_inputs)


def dtype_attribute_checks(op: OpDef) -> list[SpelledCheck]:
    """The checks of the attributes that choose a dtype: where a wrapper finds no kernel for
    the arguments, one of those may be why (each allowed value has its kernels)."""
    checks = [c for c in op.shape_rule.attribute_checks if c.attribute in op.type_choosers]
    return spell_checks(checks, ConcreteShapes(op.optional_inputs))


@dataclass(frozen=True)
class OutputStatements:
    """The statements that build one output's shape, in order."""

    name: str
    index: int
    target: str  # what they build
    statements: tuple[str, ...]
    optional: bool  # an optional output: ONNX inference builds it only when the node has it
    # A variadic output paired with a variadic input: that input's shapes (a vector, one per
    # value), which its values take one for one; "" for other outputs
    values_of: str


def _output_statements(
    op: OpDef, spelling: Callable[[str], PartSpelling[str]], target: Callable[[str], str]
) -> tuple[OutputStatements, ...]:
    index = {o.name: i for i, o in enumerate(op.outputs)}
    return tuple(
        OutputStatements(
            out.output,
            index[out.output],
            target(out.output),
            (
                (f"{target(out.output)} = {Local.shape(out.values_of)};",)
                if out.values_of is not None
                else tuple(spell_parts(out, spelling(target(out.output))))
            ),
            op.outputs[index[out.output]].optional,
            Local.shape(out.values_of) if out.values_of is not None else "",
        )
        for out in op.shape_rule.outputs
    )


def concrete_output_shapes(op: OpDef) -> tuple[OutputStatements, ...]:
    return _output_statements(
        op, lambda target: ConcreteShapes(op.optional_inputs, target), Local.output_shape_member
    )


@dataclass(frozen=True)
class SymbolicShapes(_CppSyntax):
    """ONNX's C++ inference: input shapes are TensorShapeProto named `<input>_shape`, whose
    dims may be unknown (a check passes on what it cannot know); attributes are locals."""

    optional_inputs: frozenset[str]
    target: str = ""  # the TensorShapeProto* a part's statement extends

    def _proto_dim(self, ref: DimRef) -> str:
        shape = Local.shape(ref.input)
        index = str(ref.axis) if ref.axis >= 0 else f"{shape}.dim_size() - {-ref.axis}"
        return f"{shape}.dim({index})"

    def input_dim(self, ref: DimRef) -> str:
        return f"{self._proto_dim(ref)}.dim_value()"

    def attribute(self, name: str) -> str:
        return Local.schema_attribute(name)

    def binary(self, op: BinaryOp, left: str, right: str) -> str:
        return f"opgen::schema::{_DIM_FUNCTIONS[op]}(kOpType, {left}, {right})"

    def _known_and_value(self, expr: DimExpr) -> tuple[str, str]:
        """(the condition that every dim the expression reads is known, its value)."""
        refs = dict.fromkeys(f"{self._proto_dim(r)}.has_dim_value()" for r in dims_read(expr))
        return " && ".join(refs) or "true", fold(expr, self)

    def allowed_values(self, check: AllowedValuesCheck) -> Test:
        return self._attribute(check)

    def value_range(self, check: RangeCheck) -> Test:
        return self._attribute(check)

    def _attribute(self, check: AttributeCheck) -> Test:
        value = Local.schema_attribute(check.attribute)
        return Test(_attribute_condition(check, value), f"opgen::quoted({value})")

    def rank(self, check: RankCheck) -> Test:
        relation = "==" if check.exact else ">="
        shape = Local.shape(check.input)
        return Test(
            f"{shape}.dim_size() {relation} {check.rank}", f"opgen::schema::shape_text({shape})"
        )

    def dim_equal(self, check: DimEqualCheck) -> Test:
        a, b = self._proto_dim(check.a), self._proto_dim(check.b)
        return Test(
            f"!{a}.has_dim_value() || !{b}.has_dim_value() || "
            f"{a}.dim_value() == {b}.dim_value()",
            f'opgen::schema::dim_text({a}), " and ", opgen::schema::dim_text({b})',
        )

    def dim_literal(self, check: DimLiteralCheck) -> Test:
        a = self._proto_dim(check.ref)
        return Test(
            f"!{a}.has_dim_value() || {a}.dim_value() == {check.value}",
            f"opgen::schema::dim_text({a})",
        )

    def shape_equal(self, check: ShapeEqualCheck) -> Test:
        a, b = Local.shape(check.a), Local.shape(check.b)
        # Ranks must agree; dims only where both are known.
        return Test(
            f"{a}.dim_size() == {b}.dim_size() && [&] {{ for (int i = 0; i < {a}.dim_size(); ++i) "
            f"if ({a}.dim(i).has_dim_value() && {b}.dim(i).has_dim_value() && "
            f"{a}.dim(i).dim_value() != {b}.dim(i).dim_value()) return false; return true; }}()",
            f'opgen::schema::shape_text({a}), " and ", opgen::schema::shape_text({b})',
        )

    def axis(self, check: AxisCheck) -> Test:
        _, axis = self._known_and_value(check.axis)
        rank = f"{Local.shape(check.input)}.dim_size()"
        return Test(f"-{rank} <= {axis} && {axis} < {rank}", f'{axis}, " and rank ", {rank}')

    def expr(self, check: ExprCheck) -> Test:
        known, value = self._known_and_value(check.expr)
        relation = ">" if check.strict else ">="
        return Test(f"!({known}) || {value} {relation} 0", value)

    def slice_part(self, part: SlicePart) -> str:
        source = Local.shape(part.input)
        start = part.start if part.start is not None else 0
        start_expr = f"{source}.dim_size() - {-start}" if start < 0 else str(start)
        stop_expr = (
            f"{source}.dim_size()"
            if part.stop is None
            else (f"{source}.dim_size() - {-part.stop}" if part.stop < 0 else str(part.stop))
        )
        return f"for (int i = {start_expr}; i < {stop_expr}; ++i) *{self.target}->add_dim() = {source}.dim(i);"

    def dim_part(self, part: DimPart) -> str:
        if isinstance(part.expr, DimRef):  # a named dim stays named
            return f"*{self.target}->add_dim() = {self._proto_dim(part.expr)};"
        known, value = self._known_and_value(part.expr)
        return (
            f"{{ auto* dim = {self.target}->add_dim(); if ({known}) dim->set_dim_value({value}); }}"
        )

    def data_dependent_part(self, part: DataDependentPart) -> str:
        return f"{self.target}->add_dim();  // data-dependent: unknown"

    def broadcast_part(self, part: BroadcastPart) -> str:
        def added(name: str) -> str:
            shape = Local.shape(name)
            if name in part.variadic:  # a vector of every value's shape
                return f" shapes.insert(shapes.end(), {shape}.begin(), {shape}.end());"
            if name in self.optional_inputs:
                return f" if ({Local.present(name)}) shapes.push_back(&{shape});"
            return f" shapes.push_back(&{shape});"

        adding = "".join(added(name) for name in part.operands)
        return (
            f"{{ std::vector<const ONNX_NAMESPACE::TensorShapeProto*> shapes;{adding} "
            f"try {{ ONNX_NAMESPACE::multidirectionalBroadcastShapeInference(shapes, *{self.target}); }} "
            "catch (const ONNX_NAMESPACE::InferenceError&) { std::string got; "
            'for (const auto* shape : shapes) got += (got.empty() ? "" : " and ") + '
            f"opgen::schema::shape_text(*shape); fail_shape_inference({string_literal(part.message)}, got); }} }}"
        )

    def reduce_part(self, part: ReducePart) -> str:
        source = Local.shape(part.input)
        _, axis = self._known_and_value(part.axis)
        _, keep = self._known_and_value(part.keepdims)
        target = self.target
        return (
            f"{{ const int rank = {source}.dim_size(); const int64_t axis = ({axis} + rank) % rank; "
            f"for (int i = 0; i < rank; ++i) {{ if (i != axis) *{target}->add_dim() = {source}.dim(i); "
            f"else if ({keep}) {target}->add_dim()->set_dim_value(1); }} }}"
        )


# How ONNX's C++ AttributeProto holds the attributes a shape rule reads (a bool is an int).
_SCHEMA_ATTRIBUTE = {
    AttrType.string: ("std::string", "s()"),
    AttrType.float: ("float", "f()"),
    AttrType.int: ("int64_t", "i()"),
    AttrType.bool: ("int64_t", "i()"),
}


@dataclass(frozen=True)
class SchemaAttributeRead:
    """An attribute the inference function reads, and how."""

    variable: str
    proto: str  # the AttributeProto* it is read from
    name_literal: str
    cpp_type: str
    getter: str
    default: str | None  # None: required
    missing_message: str
    proto_type: str  # the AttributeProto type it must have
    wrong_type_message: str  # a literal; the type it has follows, as ONNX Runtime's says


def schema_attributes(op: OpDef) -> tuple[SchemaAttributeRead, ...]:
    """The attributes the inference function reads: allowed-value checks and the shape rule."""
    attrs = {a.name: a for a in op.attributes}
    result = []
    for name in op.shape_rule.attributes:
        attr = attrs[name]
        cpp_type, getter = _SCHEMA_ATTRIBUTE[attr.type]
        result.append(
            SchemaAttributeRead(
                variable=Local.schema_attribute(name),
                proto=Local.attribute_proto(name),
                name_literal=string_literal(name),
                cpp_type=cpp_type,
                getter=getter,
                default=None if attr.required else schema_default(attr),
                missing_message=string_literal(
                    f"{op.op_type}: required attribute '{name}' is missing"
                ),
                proto_type=f"ONNX_NAMESPACE::AttributeProto::{ONNX_ATTR_TYPE[attr.type]}",
                wrong_type_message=string_literal(
                    f"{op.op_type}: attribute '{name}' must be of type "
                    f"{ONNX_ATTR_TYPE[attr.type]}, got "
                ),
            )
        )
    return tuple(result)


def symbolic_attribute_checks(op: OpDef) -> list[SpelledCheck]:
    return spell_attribute_checks(op.shape_rule, SymbolicShapes(op.optional_inputs))


def symbolic_checks(op: OpDef) -> list[SpelledCheck]:
    """The checks of ONNX's C++ inference; each message reports what it got as the kernels' do
    (known dims by value, others by name)."""
    spelling = SymbolicShapes(op.optional_inputs)
    return spell_input_checks(op.shape_rule, spelling, op.optional_inputs)


def symbolic_output_shapes(op: OpDef) -> tuple[OutputStatements, ...]:
    return _output_statements(
        op, lambda target: SymbolicShapes(op.optional_inputs, target), Local.output_shape
    )
