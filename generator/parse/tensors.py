"""Type constraints, inputs, outputs and attributes."""

from __future__ import annotations

from typing import Any

from generator.errors import DefinitionError, ErrorCollector, Location
from generator.model.names import IDENTIFIER
from generator.model.tensors import (
    AnyDims,
    Arity,
    Attribute,
    Differentiation,
    ExpressionDim,
    LiteralDim,
    OptionalArity,
    PatternDim,
    ShapePattern,
    SingleArity,
    SymbolDim,
    TensorParam,
    VariadicArity,
)
from generator.model.types import (
    FROM_ONNX_NAME,
    TENSOR_ATTRIBUTE_DTYPES,
    TENSOR_PROTO_NUMBER,
    AttrType,
    DType,
    TensorType,
    TypeConstraint,
    float32,
    message_value,
    tensor_attribute_dtype_names,
)
from generator.parse import read
from generator.shapes.expressions import (
    DIM_EXPRESSION_SYNTAX,
    dim_expression_tree,
    shape_function_call,
)
from generator.source import Node


def attribute_value_problem(value: Any, attr_type: AttrType) -> str | None:
    """Why a value cannot be an attribute's (None if it can): the checks of a definition's
    values, for the scaffold's --attribute defaults."""
    where = Location("<value>", 1, 1)
    items = [Node(v, where, "") for v in value] if isinstance(value, list) else value
    try:
        attr_value(Node(items, where, ""), attr_type)
    except DefinitionError as error:
        return error.message
    return None


def parse_type_constraints(node: Node, errors: ErrorCollector) -> tuple[TypeConstraint, ...]:
    if not node.is_mapping:
        raise node.error(
            f"expected a mapping of type variable -> dtypes, found {read.kind_of(node)}"
        )
    result = []
    for name, child in node.value.items():
        key_node = Node(name, child.key_location or child.location, child.path)

        def parse_one(
            name: str = name, child: Node = child, key_node: Node = key_node
        ) -> TypeConstraint:
            read.name(key_node, "type variable")
            doc = ""
            types_node = child
            chosen_by = None
            if child.is_mapping:
                fields = read.mapping(child, {"types", "doc", "chosen_by"}, {"types"})
                types_node = fields["types"]
                doc = read.doc(fields, errors)
                if "chosen_by" in fields:
                    chosen_by = read.name(fields["chosen_by"], "attribute name")
            items = read.sequence(types_node)
            if not items:
                raise types_node.error("a type constraint needs at least one dtype")
            types = tuple(read.value_type(item) for item in items)
            if len(set(types)) != len(types):
                raise types_node.error("a type is listed twice")
            if chosen_by is not None and not all(isinstance(t, TensorType) for t in types):
                raise types_node.error(
                    "an attribute chooses among tensor dtypes only (it holds TensorProto's number)"
                )
            return TypeConstraint(name, types, doc, chosen_by)

        constraint = errors.attempt(parse_one)
        if constraint:
            result.append(constraint)
    return tuple(result)


def _parse_shape(node: Node, is_output: bool) -> ShapePattern:
    items = read.sequence(node)
    dims: list[PatternDim] = []
    for item in items:
        value = item.value
        if value == "...":
            dims.append(AnyDims())
        elif isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise item.error(f"a literal dimension must be >= 0, found {value}")
            dims.append(LiteralDim(read.in_int64(value, item)))
        elif isinstance(value, str) and IDENTIFIER.fullmatch(value):
            dims.append(SymbolDim(value))
        elif isinstance(value, str) and is_output:
            dim_expression_tree(value, item)  # syntax now; names when the rule is compiled
            dims.append(ExpressionDim(value.strip()))
        else:
            allowed = "'...', a dimension symbol such as N, an integer"
            if is_output:
                allowed += f", or an expression of {DIM_EXPRESSION_SYNTAX}"
            raise item.error(f"expected {allowed}, found {read.kind_of(item)}")
    if sum(1 for d in dims if isinstance(d, AnyDims)) > 1:
        raise node.error("a shape pattern may contain '...' at most once")
    return ShapePattern(tuple(dims))


def parse_tensor(
    node: Node,
    constraints: dict[str, TypeConstraint],
    is_output: bool,
    declared_vars: frozenset[str],
    errors: ErrorCollector,
) -> TensorParam:
    allowed = {
        "name",
        "type",
        "doc",
        "shape",
        "same_shape_as",
        "optional",
        "variadic",
        "differentiable",
    }
    fields = read.mapping(node, allowed, {"name", "type"}, errors)
    name = read.name(fields["name"], "tensor name")
    type_name = read.string(fields["type"], "a type variable or dtype")
    type_var, concrete = None, None
    if type_name in constraints or type_name in declared_vars:
        type_var = type_name  # a declared variable (its own errors are reported there)
    elif IDENTIFIER.fullmatch(type_name) and type_name not in DType.__members__:
        raise fields["type"].error(
            f"'{read.shown(type_name)}' is neither a declared type variable {sorted(constraints)} "
            f"nor a dtype {[d.value for d in DType]}"
        )
    else:
        concrete = read.value_type(fields["type"])
    shape, function = None, None
    if "shape" in fields:
        if is_output and isinstance(fields["shape"].value, str):
            function = shape_function_call(fields["shape"])
        else:
            shape = _parse_shape(fields["shape"], is_output)
    # A reference: a reserved name is reported at its declaration, not again here (which would
    # drop this tensor, and cascade through every test case naming it).
    same = read.name(fields["same_shape_as"], "input name") if "same_shape_as" in fields else None
    if "shape" in fields and same is not None:
        raise node.error("give either 'shape' or 'same_shape_as', not both")
    doc = read.doc(fields, errors)
    # Kept whatever its error (no cascade): a `variadic` field that fails still says variadic,
    # with the least minimum, so that no test case is counted short.
    variadic = fields.get("variadic")
    fallback: Arity = SingleArity()
    if variadic is not None and variadic.value not in (False, None):
        fallback = VariadicArity(min_arity=0)
    arity = errors.attempt(_parse_arity, fields) or fallback
    differentiation = Differentiation.unknown
    differentiable = (
        errors.attempt(read.boolean, fields["differentiable"])
        if ("differentiable" in fields)
        else None
    )
    if differentiable is not None:
        differentiation = (
            Differentiation.differentiable if differentiable else Differentiation.non_differentiable
        )
    return TensorParam(name, doc, type_var, concrete, shape, same, function, arity, differentiation)


def _parse_arity(fields: dict[str, Node]) -> Arity:
    """`optional: true`, or `variadic: true` / `variadic: {min: 2, homogeneous: false}`."""
    optional = read.boolean(fields["optional"]) if "optional" in fields else False
    node = fields.get("variadic")
    variadic = node is not None and (node.is_mapping or read.boolean(node))
    if not variadic:
        return OptionalArity() if optional else SingleArity()
    assert node is not None
    if optional:
        raise node.error("a parameter is optional or variadic, not both (min: 0 for none)")
    if not node.is_mapping:
        return VariadicArity()
    given = read.mapping(node, {"min", "homogeneous"}, set())
    minimum = read.integer(given["min"]) if "min" in given else 1
    if minimum < 0 or minimum > MAX_MIN_ARITY:
        raise given["min"].error(
            f"expected a minimum number of values from 0 to {MAX_MIN_ARITY}, found {minimum}"
        )
    homogeneous = read.boolean(given["homogeneous"]) if "homogeneous" in given else True
    return VariadicArity(minimum, homogeneous)


# ONNX holds a minimum arity in a C++ int; no operator needs more than a few.
MAX_MIN_ARITY = 2**31 - 1


def attr_value(node: Node, attr_type: AttrType) -> Any:
    if not attr_type.takes_values:
        raise node.error(f"a definition cannot spell a value of a {attr_type.value} attribute")

    def scalar(item: Node, base: AttrType) -> Any:
        if base is AttrType.bool:
            return read.boolean(item)
        if base is AttrType.int:
            return read.integer(item)
        if base is AttrType.float:
            return read.in_float32(read.number(item), item)
        return read.string(item)

    if attr_type.is_list:
        base = {
            AttrType.ints: AttrType.int,
            AttrType.floats: AttrType.float,
            AttrType.strings: AttrType.string,
        }[attr_type]
        return tuple(scalar(item, base) for item in read.sequence(node))
    return scalar(node, attr_type)


_PLACEHOLDER = {
    AttrType.bool: False,
    AttrType.int: 0,
    AttrType.float: 0.0,
    AttrType.string: "",
    AttrType.ints: (),
    AttrType.floats: (),
    AttrType.strings: (),
}


def _default(node: Node, attr_type: AttrType, name: str) -> Any:
    """An attribute's default; a dtype name for an int one says what it lacks."""
    value = node.value
    if attr_type is AttrType.int and isinstance(value, str) and _names_dtype(value):
        raise node.error(
            f"'{value}' is a dtype: an int attribute takes one as its default only where a type "
            f"variable is chosen_by it (chosen_by: {name})"
        )
    return attr_value(node, attr_type)


def _names_dtype(word: str) -> bool:
    try:
        DType(FROM_ONNX_NAME.get(word, word))
    except ValueError:
        return False
    return True


def parse_attribute(
    node: Node, errors: ErrorCollector, choosers: dict[str, TypeConstraint] | None = None
) -> Attribute:
    """`choosers`: attribute name -> the type constraint it chooses (its `chosen_by`)."""
    fields = read.mapping(
        node,
        {
            "name",
            "type",
            "dtype",
            "default",
            "required",
            "allowed",
            "min",
            "max",
            "since_version",
            "doc",
        },
        {"name", "type"},
        errors,
    )
    name = read.name(fields["name"], "attribute name")
    type_name = read.string(fields["type"])
    try:
        attr_type = AttrType(type_name)
    except ValueError:
        raise fields["type"].error(
            f"unknown attribute type '{type_name}'; expected one of {[t.value for t in AttrType]}"
        ) from None
    chosen = (choosers or {}).get(name)
    if chosen is not None:
        return _type_chooser(fields, name, attr_type, chosen, errors)
    required = "default" not in fields
    if "required" in fields:  # `required: false` without a default: absence means something
        if read.boolean(fields["required"]) and not required:
            raise fields["required"].error(
                "an attribute with a default is optional: drop 'required' or the default"
            )
        required = read.boolean(fields["required"])
    default: Any = None  # YAML data of the attribute's type (checked by attr_value)
    default_ok = False
    if "default" in fields and not attr_type.takes_values:
        # Reported without dropping the attribute (its absence would cascade into the
        # reference's and the tests' errors).
        errors.add(
            fields["default"].error(
                f"a {attr_type.value} attribute takes no default here; give 'required: false' "
                "for an optional one"
            )
        )
    elif "default" in fields:
        # A bad default is reported without dropping the attribute: its absence would cascade
        # into errors wherever it is used. (The definition fails anyway.)
        default = errors.attempt(_default, fields["default"], attr_type, name)
        default_ok = default is not None
        default = default if default_ok else _PLACEHOLDER[attr_type]
    # A bad 'allowed', 'min' or 'max' is reported and left out, keeping the attribute: its
    # absence would cascade into errors wherever it is used. (The definition fails anyway.)
    given_default = default if "default" in fields and default_ok else None
    allowed = None
    if "allowed" in fields:
        allowed = errors.attempt(_allowed_values, fields, attr_type, given_default)
    minimum, maximum = None, None
    bounds = errors.attempt(_bounds, fields, attr_type)
    if bounds and errors.attempt(_check_bounds, fields, attr_type, bounds, given_default, allowed):
        minimum, maximum = bounds.get("min"), bounds.get("max")
    doc = read.doc(fields, errors)
    since = read.version_number(fields["since_version"]) if "since_version" in fields else None
    dtype = None
    if "dtype" in fields:
        dtype = errors.attempt(_tensor_dtype, fields["dtype"], attr_type)
        if dtype is None and attr_type is AttrType.tensor:
            dtype = DType.float32  # reported above; a stand-in keeps the tests' values readable
    return Attribute(
        name, attr_type, doc, required, default, allowed, since, minimum, maximum, dtype
    )


def _allowed_values(
    fields: dict[str, Node], attr_type: AttrType, default: Any
) -> tuple[int | float | str, ...]:
    """An attribute's `allowed` values (`default`: its default, if it has a valid one)."""
    if attr_type not in (AttrType.int, AttrType.string):
        raise fields["allowed"].error(
            f"'allowed' applies to int and string attributes, not to {attr_type.value}"
        )
    items = read.sequence(fields["allowed"])
    if not items:
        raise fields["allowed"].error("list at least one allowed value")
    allowed = tuple(attr_value(item, attr_type) for item in items)
    if len(set(allowed)) != len(allowed):
        raise fields["allowed"].error("a value is listed twice")
    if default is not None and default not in allowed:
        raise fields["default"].error(f"the default {default!r} is not one of {list(allowed)}")
    return allowed


def _bounds(fields: dict[str, Node], attr_type: AttrType) -> dict[str, int | float]:
    """An attribute's `min` and `max`, as given (a float's as the float32 it becomes)."""
    bounds: dict[str, int | float] = {}
    for key in ("min", "max"):
        if key not in fields:
            continue
        if attr_type not in (AttrType.int, AttrType.float):
            raise fields[key].error(
                f"'{key}' applies to int and float attributes, not to {attr_type.value}"
            )
        bound = attr_value(fields[key], attr_type)
        bounds[key] = float32(bound) if attr_type is AttrType.float else bound
    return bounds


def _check_bounds(
    fields: dict[str, Node],
    attr_type: AttrType,
    bounds: dict[str, int | float],
    default: Any,
    allowed: tuple[int | float | str, ...] | None,
) -> bool:
    """The range is one, and holds the default and every allowed value."""
    minimum, maximum = bounds.get("min"), bounds.get("max")
    if minimum is not None and maximum is not None and minimum > maximum:
        raise fields["max"].error(
            f"max {message_value(maximum)} is below min {message_value(minimum)}"
        )

    def inside(value: float) -> bool:
        return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)

    shown = [("" if bound is None else message_value(bound)) for bound in (minimum, maximum)]
    range_text = f"[{shown[0]}, {shown[1]}]"
    if default is not None:
        value = float32(default) if attr_type is AttrType.float else default
        if not inside(value):
            raise fields["default"].error(
                f"the default {message_value(value)} is outside min/max {range_text}"
            )
    if allowed is not None:
        for value, item in zip(allowed, read.sequence(fields["allowed"]), strict=True):
            assert isinstance(value, int | float)  # _allowed_values: ints where bounded
            if not inside(value):
                raise item.error(
                    f"allowed value {message_value(value)} is outside min/max {range_text}"
                )
    return True


def _tensor_dtype(node: Node, attr_type: AttrType) -> DType:
    """A tensor attribute's declared element type."""
    if attr_type is not AttrType.tensor:
        raise node.error(f"'dtype' applies to tensor attributes, not to {attr_type.value}")
    dtype = read.dtype(node)
    if dtype not in TENSOR_ATTRIBUTE_DTYPES:
        raise node.error(
            f"a tensor attribute of {dtype.value} is not carried yet; its dtype is one of "
            f"{tensor_attribute_dtype_names()}"
        )
    return dtype


def _chosen_default(node: Node, constraint: TypeConstraint) -> DType:
    dtype = read.dtype(node)
    if dtype not in constraint.dtypes:
        raise node.error(
            f"the default {dtype.value} is not one of {constraint.name}'s dtypes "
            f"{[d.value for d in constraint.dtypes]}"
        )
    return dtype


def _type_chooser(
    fields: dict[str, Node],
    name: str,
    attr_type: AttrType,
    constraint: TypeConstraint,
    errors: ErrorCollector,
) -> Attribute:
    """An attribute that picks a type variable's dtype: an int holding TensorProto.DataType's
    number, whose values are the variable's dtypes; its default is written as a dtype name."""
    where = f"type variable {constraint.name} is chosen_by it"
    if attr_type is not AttrType.int:
        raise fields["type"].error(
            f"{where}, so it must be an int attribute (ONNX holds an element type as "
            f"TensorProto.DataType's number), not {attr_type.value}"
        )
    for key in ("allowed", "min", "max"):
        if key in fields:
            raise fields[key].error(f"{where}: its values are {constraint.name}'s dtypes")
    dtypes = constraint.dtypes
    required = "default" not in fields
    if "required" in fields:
        if read.boolean(fields["required"]) != required:
            raise fields["required"].error(
                f"{where}: give it a default (a dtype) or make it required; absent, it would "
                "leave the dtype unknown"
            )
    default = None
    if "default" in fields:
        # A bad one is reported without dropping the attribute (its absence would cascade).
        dtype = errors.attempt(_chosen_default, fields["default"], constraint)
        default = TENSOR_PROTO_NUMBER[dtype if dtype is not None else dtypes[0]]
    doc = read.doc(fields, errors)
    since = read.version_number(fields["since_version"]) if "since_version" in fields else None
    allowed = tuple(TENSOR_PROTO_NUMBER[d] for d in dtypes)
    return Attribute(name, AttrType.int, doc, required, default, allowed, since)
