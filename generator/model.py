"""The typed op model: frozen dataclasses parsed from a definition with strict validation.

Every fact that more than one emitter needs (dtype instantiations, shape checks, output
shapes, attribute defaults) is computed here once; emitters only render it.
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass
from enum import Enum
from itertools import product
from pathlib import Path
from typing import Any

from generator.errors import DefinitionError, ErrorCollector, Location
from generator.source import Node, load_definition_file

# --------------------------------------------------------------------------- dtypes and types


class DType(Enum):
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    bool = "bool"

    @property
    def is_floating(self) -> bool:
        return self in (DType.float16, DType.bfloat16, DType.float32, DType.float64)


class AttrType(Enum):
    int = "int"
    float = "float"
    string = "string"
    ints = "ints"
    floats = "floats"
    strings = "strings"

    @property
    def is_list(self) -> bool:
        return self in (AttrType.ints, AttrType.floats, AttrType.strings)


# C++ keywords and names our generated code defines; Python keywords come from `keyword`.
CPP_RESERVED = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
    co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit
    export extern false float for friend goto if inline int long mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq attrs ctx""".split()
)
# Names the generated Python/C++ uses next to user names.
GENERATED_RESERVED = frozenset({"torch", "np", "onnx", "op", "g", "gen", "shape", "dtype", "math"})

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DOMAIN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
TORCH_NAME = re.compile(r"^([a-z_][a-z0-9_]*)::([a-z_][a-z0-9_]*)$")


# --------------------------------------------------------------------------- model classes


@dataclass(frozen=True)
class TypeConstraint:
    name: str
    dtypes: tuple[DType, ...]
    doc: str


@dataclass(frozen=True)
class Dim:
    """One entry of a shape pattern: `...`, a symbol such as N, or an integer literal."""

    kind: str  # "ellipsis" | "symbol" | "literal"
    symbol: str | None = None
    value: int | None = None

    def __str__(self) -> str:
        if self.kind == "ellipsis":
            return "..."
        return self.symbol if self.kind == "symbol" else str(self.value)


@dataclass(frozen=True)
class ShapePattern:
    dims: tuple[Dim, ...]

    @property
    def ellipsis_index(self) -> int | None:
        for i, dim in enumerate(self.dims):
            if dim.kind == "ellipsis":
                return i
        return None

    @property
    def fixed_rank(self) -> int:
        return sum(1 for d in self.dims if d.kind != "ellipsis")

    def axis_of(self, position: int) -> int:
        """Axis of pattern entry `position`: from the start before `...`, from the end after."""
        ell = self.ellipsis_index
        if ell is None or position < ell:
            return position
        return position - len(self.dims)

    def __str__(self) -> str:
        return "[" + ", ".join(str(d) for d in self.dims) + "]"


@dataclass(frozen=True)
class TensorParam:
    name: str
    doc: str
    type_var: str | None  # a type constraint name, or None when dtype is concrete
    dtype: DType | None
    shape: ShapePattern | None  # inputs: the accepted pattern; outputs: see ShapeRule
    same_shape_as: str | None  # outputs only


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    doc: str
    required: bool
    default: Any  # None when required


@dataclass(frozen=True)
class DimRef:
    """Axis `axis` of input `input` (negative axes count from the end)."""

    input: str
    input_index: int
    axis: int


@dataclass(frozen=True)
class RankCheck:
    input: str
    input_index: int
    exact: bool
    rank: int
    message: str


@dataclass(frozen=True)
class DimEqualCheck:
    a: DimRef
    b: DimRef
    message: str


@dataclass(frozen=True)
class DimLiteralCheck:
    ref: DimRef
    value: int
    message: str


@dataclass(frozen=True)
class ShapeEqualCheck:
    """Input `b` must have exactly the shape of input `a` (an input's `same_shape_as`)."""

    a: str
    a_index: int
    b: str
    b_index: int
    message: str


@dataclass(frozen=True)
class ShapePart:
    """One piece of an output shape: a slice of an input's dims, one input dim, or a literal."""

    kind: str  # "slice" | "dim" | "literal"
    input: str | None = None
    input_index: int | None = None
    start: int | None = None  # slice bounds, Python semantics (None = open)
    stop: int | None = None
    axis: int | None = None
    value: int | None = None


@dataclass(frozen=True)
class OutputShape:
    output: str
    parts: tuple[ShapePart, ...]


@dataclass(frozen=True)
class ShapeRule:
    rank_checks: tuple[RankCheck, ...]
    dim_checks: tuple[DimEqualCheck | DimLiteralCheck, ...]
    shape_checks: tuple[ShapeEqualCheck, ...]
    outputs: tuple[OutputShape, ...]

    @property
    def shaped_inputs(self) -> frozenset[str]:
        """Inputs whose shape the rule reads."""
        used = {c.input for c in self.rank_checks}
        used |= {name for c in self.shape_checks for name in (c.a, c.b)}
        for out in self.outputs:
            used |= {p.input for p in out.parts if p.input}
        return frozenset(used)


@dataclass(frozen=True)
class Instantiation:
    """One concrete binding of every type variable: what a C++ kernel is compiled for."""

    bindings: tuple[tuple[str, DType], ...]

    def dtype(self, type_var: str) -> DType:
        return dict(self.bindings)[type_var]

    @property
    def suffix(self) -> str:
        return "_".join(dtype.value for _, dtype in self.bindings)


@dataclass(frozen=True)
class Kernel:
    source_file: Path | None  # a file beside the definition holding the full definition
    body: str | None  # or the body of `compute`, inline


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True)
class KnownCase:
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    attributes: dict[str, Any]
    dtypes: tuple[DType, ...] | None  # restrict to these instantiations' first type var


@dataclass(frozen=True)
class RandomCase:
    shapes: dict[str, tuple[int | str, ...]]
    dynamic: dict[str, tuple[int, ...]]  # dynamic dim symbol -> sizes to run at (first: export)
    samples: dict[str, str]  # input -> Python expression of `shape` and `gen`
    attributes: dict[str, Any]


@dataclass(frozen=True)
class ErrorCase:
    """Inputs the op must reject: `shapes` (filled with ones; a shape error, caught by every
    shape rule) or `inputs` with values (a data error, caught by the kernel at run time)."""

    shapes: dict[str, tuple[int, ...]]
    values: dict[str, Any] | None
    message: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class BuiltinEquivalent:
    domain: str
    op_type: str
    version: int


@dataclass(frozen=True)
class Tests:
    tolerances: dict[DType, Tolerance]
    known: tuple[KnownCase, ...]
    random: tuple[RandomCase, ...]
    errors: tuple[ErrorCase, ...]
    builtin_equivalents: tuple[BuiltinEquivalent, ...]


@dataclass(frozen=True)
class TorchBinding:
    namespace: str
    name: str
    api: str  # "custom_op" (torch.library.custom_op) | "legacy" (torch._custom_op)

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}"


@dataclass(frozen=True)
class OpDef:
    op_id: str  # file stem: names generated/<op_id>/ and the C++ namespace
    definition_path: str  # as shown in headers and errors (relative to the project)
    op_type: str
    domain: str
    version: int
    doc: str
    torch: TorchBinding
    type_constraints: tuple[TypeConstraint, ...]
    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attributes: tuple[Attribute, ...]
    shape_rule: ShapeRule
    reference: str
    reference_upcast: bool
    kernel: Kernel
    tests: Tests

    @property
    def instantiations(self) -> tuple[Instantiation, ...]:
        names = [tc.name for tc in self.type_constraints]
        combos = product(*(tc.dtypes for tc in self.type_constraints))
        return tuple(Instantiation(tuple(zip(names, combo, strict=True))) for combo in combos)

    @property
    def type_var_dtypes(self) -> dict[str, tuple[DType, ...]]:
        return {tc.name: tc.dtypes for tc in self.type_constraints}

    def dtype_source(self, output: TensorParam) -> str | None:
        """The first input whose dtype an output follows (None for a concrete dtype)."""
        if output.type_var is None:
            return None
        return next(i.name for i in self.inputs if i.type_var == output.type_var)

    @property
    def exporters(self) -> tuple[str, ...]:
        """The PyTorch exporters that can export this op. The TorchScript tracer cannot
        record a list-of-strings argument ("unsupported input list type: str")."""
        if any(a.type is AttrType.strings for a in self.attributes):
            return ("dynamo",)
        return ("dynamo", "torchscript")

    @property
    def domain_ident(self) -> str:
        return self.domain.replace(".", "_")

    @property
    def all_dtypes(self) -> tuple[DType, ...]:
        """Every dtype the tests parametrize over (the first type variable's list)."""
        if not self.type_constraints:
            return ()
        return self.type_constraints[0].dtypes


# --------------------------------------------------------------------------- parsing helpers


def _mapping(node: Node, allowed: set[str], required: set[str]) -> dict[str, Node]:
    if not node.is_mapping:
        raise node.error(f"expected a mapping with keys {sorted(allowed)}, found {_kind(node)}")
    errors = ErrorCollector()
    for key, child in node.value.items():
        if key not in allowed:
            loc = child.key_location or child.location
            hint = _closest(key, allowed)
            errors.add(
                DefinitionError(
                    loc,
                    child.path,
                    f"unknown field '{key}'"
                    + (f" (did you mean '{hint}'?)" if hint else "")
                    + f"; expected one of {sorted(allowed)}",
                )
            )
    for key in sorted(required - node.value.keys()):
        errors.add(node.error(f"missing required field '{key}'"))
    errors.raise_if_any()
    return node.value


def _closest(word: str, options: set[str]) -> str | None:
    import difflib

    match = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    return match[0] if match else None


def _kind(node: Node) -> str:
    value = node.value
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


def _str(node: Node, what: str = "a string") -> str:
    if not isinstance(node.value, str):
        raise node.error(f"expected {what}, found {_kind(node)}")
    return node.value


def _int(node: Node, minimum: int | None = None) -> int:
    if isinstance(node.value, bool) or not isinstance(node.value, int):
        raise node.error(f"expected an integer, found {_kind(node)}")
    if minimum is not None and node.value < minimum:
        raise node.error(f"expected an integer >= {minimum}, found {node.value}")
    return node.value


def _number(node: Node) -> float:
    if isinstance(node.value, str) and re.fullmatch(r"[-+]?\d+[eE][-+]?\d+", node.value):
        raise node.error(
            f"YAML reads {node.value!r} as a string; write it with a decimal point, "
            f"e.g. {node.value.replace('e', '.0e').replace('E', '.0E')}"
        )
    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise node.error(f"expected a number, found {_kind(node)}")
    return float(node.value)


def _bool(node: Node) -> bool:
    if not isinstance(node.value, bool):
        raise node.error(f"expected true or false, found {_kind(node)}")
    return node.value


def _list(node: Node) -> list[Node]:
    if not node.is_sequence:
        raise node.error(f"expected a list, found {_kind(node)}")
    return node.value


def _identifier(node: Node, what: str) -> str:
    name = _str(node)
    if not IDENTIFIER.match(name):
        raise node.error(f"{what} '{name}' is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if keyword.iskeyword(name) or name in CPP_RESERVED or name in GENERATED_RESERVED:
        raise node.error(
            f"{what} '{name}' is reserved in Python, C++ or the generated code; choose another name"
        )
    return name


def _dtype(node: Node) -> DType:
    name = _str(node, "a dtype name")
    try:
        return DType(name)
    except ValueError:
        raise node.error(
            f"unknown dtype '{name}'; expected one of {[d.value for d in DType]}"
        ) from None


# --------------------------------------------------------------------------- sections


def _parse_torch(node: Node) -> TorchBinding:
    fields = _mapping(node, {"name", "api"}, {"name"})
    qualified = _str(fields["name"])
    match = TORCH_NAME.match(qualified)
    if not match:
        raise fields["name"].error(
            f"'{qualified}' is not a PyTorch qualified name 'namespace::name' (lower-case identifiers)"
        )
    api = "custom_op"
    if "api" in fields:
        api = _str(fields["api"])
        if api not in ("custom_op", "legacy"):
            raise fields["api"].error(f"expected 'custom_op' or 'legacy', found '{api}'")
    return TorchBinding(match.group(1), match.group(2), api)


def _parse_type_constraints(node: Node, errors: ErrorCollector) -> tuple[TypeConstraint, ...]:
    if not node.is_mapping:
        raise node.error(f"expected a mapping of type variable -> dtypes, found {_kind(node)}")
    result = []
    for name, child in node.value.items():
        key_node = Node(name, child.key_location or child.location, child.path)

        def parse_one(name=name, child=child, key_node=key_node) -> TypeConstraint:
            _identifier(key_node, "type variable")
            doc = ""
            types_node = child
            if child.is_mapping:
                fields = _mapping(child, {"types", "doc"}, {"types"})
                types_node = fields["types"]
                doc = _str(fields["doc"]) if "doc" in fields else ""
            items = _list(types_node)
            if not items:
                raise types_node.error("a type constraint needs at least one dtype")
            dtypes = tuple(_dtype(item) for item in items)
            if len(set(dtypes)) != len(dtypes):
                raise types_node.error("a dtype is listed twice")
            return TypeConstraint(name, dtypes, doc)

        constraint = errors.attempt(parse_one)
        if constraint:
            result.append(constraint)
    return tuple(result)


def _parse_shape(node: Node, symbols_allowed: bool) -> ShapePattern:
    items = _list(node)
    dims = []
    for item in items:
        value = item.value
        if value == "...":
            dims.append(Dim("ellipsis"))
        elif isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise item.error(f"a literal dimension must be >= 0, found {value}")
            dims.append(Dim("literal", value=value))
        elif isinstance(value, str) and IDENTIFIER.match(value) and symbols_allowed:
            dims.append(Dim("symbol", symbol=value))
        else:
            raise item.error(
                f"expected '...', a dimension symbol such as N, or an integer, found {_kind(item)}"
            )
    if sum(1 for d in dims if d.kind == "ellipsis") > 1:
        raise node.error("a shape pattern may contain '...' at most once")
    return ShapePattern(tuple(dims))


def _parse_tensor(
    node: Node,
    constraints: dict[str, TypeConstraint],
    is_output: bool,
    declared_vars: frozenset[str] = frozenset(),
) -> TensorParam:
    allowed = {"name", "type", "doc", "shape", "same_shape_as"}
    fields = _mapping(node, allowed, {"name", "type"})
    name = _identifier(fields["name"], "tensor name")
    type_name = _str(fields["type"], "a type variable or dtype")
    type_var, dtype = None, None
    if type_name in constraints or type_name in declared_vars:
        type_var = type_name  # a declared variable (its own errors are reported there)
    else:
        try:
            dtype = DType(type_name)
        except ValueError:
            raise fields["type"].error(
                f"'{type_name}' is neither a declared type variable {sorted(constraints)} "
                f"nor a dtype {[d.value for d in DType]}"
            ) from None
    shape = _parse_shape(fields["shape"], True) if "shape" in fields else None
    same = _identifier(fields["same_shape_as"], "input name") if "same_shape_as" in fields else None
    if shape is not None and same is not None:
        raise node.error("give either 'shape' or 'same_shape_as', not both")
    if is_output and shape is None and same is None:
        raise node.error("an output needs a shape rule: 'shape: [...]' or 'same_shape_as: <input>'")
    doc = _str(fields["doc"]) if "doc" in fields else ""
    return TensorParam(name, doc, type_var, dtype, shape, same)


def _attr_value(node: Node, attr_type: AttrType) -> Any:
    def scalar(item: Node, base: AttrType) -> Any:
        if base is AttrType.int:
            return _int(item)
        if base is AttrType.float:
            return _number(item)
        return _str(item)

    if attr_type.is_list:
        base = {
            AttrType.ints: AttrType.int,
            AttrType.floats: AttrType.float,
            AttrType.strings: AttrType.string,
        }[attr_type]
        return tuple(scalar(item, base) for item in _list(node))
    return scalar(node, attr_type)


def _parse_attribute(node: Node) -> Attribute:
    fields = _mapping(node, {"name", "type", "default", "doc"}, {"name", "type"})
    name = _identifier(fields["name"], "attribute name")
    type_name = _str(fields["type"])
    try:
        attr_type = AttrType(type_name)
    except ValueError:
        raise fields["type"].error(
            f"unknown attribute type '{type_name}'; expected one of {[t.value for t in AttrType]}"
        ) from None
    required = "default" not in fields
    default = None if required else _attr_value(fields["default"], attr_type)
    doc = _str(fields["doc"]) if "doc" in fields else ""
    return Attribute(name, attr_type, doc, required, default)


def _compile_shape_rule(
    op_type: str,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    inputs_node: Node,
    node: Node,
) -> ShapeRule:
    """Turn the input patterns and output rules into checks and output shape parts."""
    rank_checks: list[RankCheck] = []
    dim_checks: list[DimEqualCheck | DimLiteralCheck] = []
    bound: dict[str, DimRef] = {}
    ellipsis_inputs: list[tuple[int, TensorParam]] = []
    for index, tensor in enumerate(inputs):
        pattern = tensor.shape
        if pattern is None:
            continue
        exact = pattern.ellipsis_index is None
        relation = "exactly" if exact else "at least"
        rank_checks.append(
            RankCheck(
                tensor.name,
                index,
                exact,
                pattern.fixed_rank,
                f"{op_type}: input '{tensor.name}' must have {relation} rank {pattern.fixed_rank} "
                f"(shape {pattern})",
            )
        )
        if not exact:
            ellipsis_inputs.append((index, tensor))
        for position, dim in enumerate(pattern.dims):
            if dim.kind == "ellipsis":
                continue
            ref = DimRef(tensor.name, index, pattern.axis_of(position))
            if dim.kind == "literal":
                dim_checks.append(
                    DimLiteralCheck(
                        ref,
                        dim.value,
                        f"{op_type}: axis {ref.axis} of input '{tensor.name}' must be {dim.value} "
                        f"(shape {pattern})",
                    )
                )
            elif dim.symbol in bound:
                first = bound[dim.symbol]
                dim_checks.append(
                    DimEqualCheck(
                        first,
                        ref,
                        f"{op_type}: dimension {dim.symbol} must agree: axis {first.axis} of "
                        f"input '{first.input}' and axis {ref.axis} of input '{tensor.name}' "
                        f"differ (shape {pattern})",
                    )
                )
            else:
                bound[dim.symbol] = ref
    if len(ellipsis_inputs) > 1:
        raise node.error("only one input may use '...' for now (no broadcasting of batch dims yet)")
    by_name = {t.name: (i, t) for i, t in enumerate(inputs)}
    shape_checks = []
    for index, tensor in enumerate(inputs):
        if tensor.same_shape_as is None:
            continue
        if tensor.same_shape_as not in by_name or by_name[tensor.same_shape_as][0] >= index:
            raise inputs_node.value[index].error(
                f"input '{tensor.name}': same_shape_as '{tensor.same_shape_as}' must name an "
                "earlier input"
            )
        first = tensor.same_shape_as
        shape_checks.append(
            ShapeEqualCheck(
                first,
                by_name[first][0],
                tensor.name,
                index,
                f"{op_type}: input '{tensor.name}' must have the shape of input '{first}'",
            )
        )
    shapes = []
    for output in outputs:
        if output.same_shape_as is not None:
            if output.same_shape_as not in by_name:
                raise node.error(
                    f"output '{output.name}': same_shape_as '{output.same_shape_as}' is not an input"
                )
            index, _ = by_name[output.same_shape_as]
            parts = (ShapePart("slice", output.same_shape_as, index, None, None),)
        else:
            parts_list = []
            for dim in output.shape.dims:
                if dim.kind == "ellipsis":
                    if not ellipsis_inputs:
                        raise node.error(
                            f"output '{output.name}' uses '...' but no input pattern has '...'"
                        )
                    index, source = ellipsis_inputs[0]
                    pattern = source.shape
                    ell = pattern.ellipsis_index
                    after = len(pattern.dims) - ell - 1
                    parts_list.append(
                        ShapePart(
                            "slice", source.name, index, ell or None, -after if after else None
                        )
                    )
                elif dim.kind == "literal":
                    parts_list.append(ShapePart("literal", value=dim.value))
                else:
                    if dim.symbol not in bound:
                        raise node.error(
                            f"output '{output.name}': dimension symbol '{dim.symbol}' is not bound "
                            f"by any input shape pattern (bound: {sorted(bound)})"
                        )
                    ref = bound[dim.symbol]
                    parts_list.append(ShapePart("dim", ref.input, ref.input_index, axis=ref.axis))
            parts = tuple(parts_list)
        shapes.append(OutputShape(output.name, parts))
    return ShapeRule(tuple(rank_checks), tuple(dim_checks), tuple(shape_checks), tuple(shapes))


REFERENCE_GLOBALS = {"torch", "F", "math"}
PYTHON_BUILTINS = frozenset(dir(__import__("builtins")))


def _parse_reference(node: Node, names: set[str]) -> str:
    text = _str(node, "a Python expression").strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise node.error(f"not a valid Python expression: {exc.msg}") from None
    free = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    local = {
        target.id
        for comp in ast.walk(tree)
        if isinstance(comp, ast.comprehension)
        for target in ast.walk(comp.target)
        if isinstance(target, ast.Name)
    }
    lambda_args = {
        arg.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for arg in n.args.args
    }
    unknown = free - names - REFERENCE_GLOBALS - PYTHON_BUILTINS - local - lambda_args
    if unknown:
        raise node.error(
            f"uses undefined name(s) {sorted(unknown)}; available: inputs and attributes "
            f"{sorted(names)} and {sorted(REFERENCE_GLOBALS)}"
        )
    return text


def _parse_kernel(node: Node, definition_dir: Path) -> Kernel:
    fields = _mapping(node, {"source", "body"}, set())
    if ("source" in fields) == ("body" in fields):
        raise node.error("give exactly one of 'source' (a file beside the definition) or 'body'")
    if "body" in fields:
        return Kernel(None, _str(fields["body"]))
    relative = _str(fields["source"])
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise fields["source"].error("must be a file name beside the definition (no '..')")
    path = definition_dir / relative
    if not path.is_file():
        raise fields["source"].error(f"kernel file '{relative}' not found beside the definition")
    return Kernel(path, None)


def _tensor_literal(node: Node) -> Any:
    def check(value, where: Node):
        if isinstance(value, list):
            for v in value:
                check(v, where)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise where.error(f"expected a number or nested lists of numbers, found {value!r}")

    value = node.plain()
    check(value, node)
    return value


def _parse_case_attributes(
    fields: dict[str, Node], attrs: dict[str, Attribute], case: Node
) -> dict[str, Any]:
    required = {name for name, attr in attrs.items() if attr.required}
    if "attributes" not in fields:
        if required:
            raise case.error(
                f"give the required attribute(s) {sorted(required)} under 'attributes'"
            )
        return {}
    node = fields["attributes"]
    values = _mapping(node, set(attrs), required)
    return {name: _attr_value(child, attrs[name].type) for name, child in values.items()}


def _parse_tests(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    dtypes: tuple[DType, ...],
    errors: ErrorCollector,
) -> Tests:
    fields = _mapping(
        node, {"tolerances", "known", "random", "errors", "builtin_equivalents"}, {"tolerances"}
    )
    input_names = {t.name for t in inputs}
    output_names = {t.name for t in outputs}

    tolerances: dict[DType, Tolerance] = {}
    tol_node = fields["tolerances"]
    for name, child in _mapping(tol_node, {d.value for d in DType}, set()).items():
        tf = _mapping(child, {"rtol", "atol"}, {"rtol", "atol"})
        tolerances[DType(name)] = Tolerance(_number(tf["rtol"]), _number(tf["atol"]))
    missing = [d.value for d in dtypes if d not in tolerances]
    if missing:
        errors.add(tol_node.error(f"declare tolerances for every tested dtype; missing {missing}"))

    def tensor_map(n: Node, names: set[str]) -> dict[str, Node]:
        return _mapping(n, names, names) if names else {}

    known = []
    for item in _list(fields["known"]) if "known" in fields else []:

        def parse_known(item=item) -> KnownCase:
            kf = _mapping(
                item, {"inputs", "outputs", "attributes", "dtypes"}, {"inputs", "outputs"}
            )
            ins = {k: _tensor_literal(v) for k, v in tensor_map(kf["inputs"], input_names).items()}
            outs = {
                k: _tensor_literal(v) for k, v in tensor_map(kf["outputs"], output_names).items()
            }
            only = tuple(_dtype(d) for d in _list(kf["dtypes"])) if "dtypes" in kf else None
            return KnownCase(ins, outs, _parse_case_attributes(kf, attrs, item), only)

        case = errors.attempt(parse_known)
        if case:
            known.append(case)

    random = []
    for item in _list(fields["random"]) if "random" in fields else []:

        def parse_random(item=item) -> RandomCase:
            rf = _mapping(item, {"shapes", "dynamic", "sample", "attributes"}, {"shapes"})
            shapes = {}
            for name, shape_node in tensor_map(rf["shapes"], input_names).items():
                dims = []
                for d in _list(shape_node):
                    if isinstance(d.value, int) and not isinstance(d.value, bool) and d.value >= 0:
                        dims.append(d.value)
                    elif isinstance(d.value, str) and IDENTIFIER.match(d.value):
                        dims.append(d.value)
                    else:
                        raise d.error(f"expected a size or a dynamic dim name, found {_kind(d)}")
                shapes[name] = tuple(dims)
            dynamic = {}
            if "dynamic" in rf:
                for sym, sizes in _mapping(rf["dynamic"], set(_symbols(shapes)), set()).items():
                    values = tuple(_int(s, minimum=2) for s in _list(sizes))
                    if len(values) < 2:
                        raise sizes.error("give at least two sizes so the dynamic dim is exercised")
                    dynamic[sym] = values
            unbound = set(_symbols(shapes)) - dynamic.keys()
            if unbound:
                raise item.error(f"dynamic dims {sorted(unbound)} need sizes under 'dynamic'")
            samples = {}
            if "sample" in rf:
                for name, expr in _mapping(rf["sample"], set(shapes), set()).items():
                    samples[name] = _parse_reference(expr, {"shape", "gen"})
            return RandomCase(shapes, dynamic, samples, _parse_case_attributes(rf, attrs, item))

        case = errors.attempt(parse_random)
        if case:
            random.append(case)

    if "random" not in fields or not fields["random"].value:
        errors.add(node.error("give at least one case under 'random' (it drives the export tests)"))
    error_cases = []
    for item in _list(fields["errors"]) if "errors" in fields else []:

        def parse_error(item=item) -> ErrorCase:
            ef = _mapping(item, {"shapes", "inputs", "message", "attributes"}, {"message"})
            if ("shapes" in ef) == ("inputs" in ef):
                raise item.error(
                    "give exactly one of 'shapes' (a shape error) or 'inputs' (values)"
                )
            values = None
            if "inputs" in ef:
                values = {
                    k: _tensor_literal(v) for k, v in tensor_map(ef["inputs"], input_names).items()
                }
                shapes = {}
            else:
                shapes = {
                    name: tuple(_int(d, minimum=0) for d in _list(s))
                    for name, s in tensor_map(ef["shapes"], input_names).items()
                }
            message = _str(ef["message"])
            return ErrorCase(shapes, values, message, _parse_case_attributes(ef, attrs, item))

        case = errors.attempt(parse_error)
        if case:
            error_cases.append(case)

    builtins = []
    for item in _list(fields["builtin_equivalents"]) if "builtin_equivalents" in fields else []:
        bf = _mapping(item, {"domain", "op", "version"}, {"domain", "op", "version"})
        builtins.append(
            BuiltinEquivalent(_str(bf["domain"]), _str(bf["op"]), _int(bf["version"], minimum=1))
        )
    return Tests(tolerances, tuple(known), tuple(random), tuple(error_cases), tuple(builtins))


def _symbols(shapes: dict[str, tuple[int | str, ...]]) -> list[str]:
    return [d for dims in shapes.values() for d in dims if isinstance(d, str)]


# --------------------------------------------------------------------------- entry point

TOP_LEVEL = {
    "op",
    "domain",
    "version",
    "doc",
    "torch",
    "type_constraints",
    "inputs",
    "outputs",
    "attributes",
    "reference",
    "reference_upcast",
    "kernel",
    "tests",
}
TOP_LEVEL_REQUIRED = {"op", "domain", "version", "torch", "inputs", "outputs", "reference", "tests"}


def parse_opdef(path: Path, display_name: str) -> OpDef:
    """Parse and validate one definition file; raises DefinitionErrors listing every problem."""
    errors = ErrorCollector()
    root = errors.attempt(load_definition_file, path, display_name)
    if root is None:
        errors.raise_if_any()
    fields = errors.attempt(_mapping, root, TOP_LEVEL, TOP_LEVEL_REQUIRED)
    if fields is None:
        # Unknown or missing top-level keys: keep going with what is there, to report more.
        fields = root.value if root.is_mapping else {}
        if not root.is_mapping:
            errors.raise_if_any()

    op_id_node = Node(path.stem, root.location, "<file name>")
    op_id = errors.attempt(_identifier, op_id_node, "op definition file name")

    def get(key, fn, *args):
        return errors.attempt(fn, fields[key], *args) if key in fields else None

    op_type = get("op", _identifier, "op type")
    domain = get("domain", _str)
    if domain is not None and not DOMAIN.match(domain):
        errors.add(fields["domain"].error(f"'{domain}' is not a dotted lower-case domain name"))
    version = get("version", _int, 1)
    doc = get("doc", _str) or ""
    torch_binding = get("torch", _parse_torch)
    constraints = (
        errors.attempt(_parse_type_constraints, fields["type_constraints"], errors)
        if "type_constraints" in fields
        else ()
    ) or ()
    by_var = {tc.name: tc for tc in constraints}
    tc_node = fields.get("type_constraints")
    declared_vars = (
        frozenset(tc_node.value) if tc_node is not None and tc_node.is_mapping else frozenset()
    )

    def tensors(key: str, is_output: bool) -> tuple[TensorParam, ...]:
        if key not in fields:
            return ()
        items = errors.attempt(_list, fields[key])
        parsed = [
            errors.attempt(_parse_tensor, item, by_var, is_output, declared_vars)
            for item in items or []
        ]
        return tuple(p for p in parsed if p)

    inputs = tensors("inputs", False)
    outputs = tensors("outputs", True)
    attributes: tuple[Attribute, ...] = ()
    if "attributes" in fields:
        items = errors.attempt(_list, fields["attributes"]) or []
        attributes = tuple(a for a in (errors.attempt(_parse_attribute, i) for i in items) if a)

    # Cross-field validation.
    seen_default = None
    for index, attr in enumerate(attributes):
        if attr.required and seen_default is not None:
            errors.add(
                fields["attributes"]
                .value[index]
                .error(
                    f"required attribute '{attr.name}' comes after '{seen_default}', which has a "
                    "default; list required attributes first (PyTorch argument order)"
                )
            )
        if not attr.required:
            seen_default = seen_default or attr.name
    if "inputs" in fields and not inputs and not errors.errors:
        errors.add(fields["inputs"].error("an op needs at least one input"))
    if "outputs" in fields and not outputs and not errors.errors:
        errors.add(fields["outputs"].error("an op needs at least one output"))
    seen: dict[str, str] = {}
    for kind, items in (("input", inputs), ("output", outputs), ("attribute", attributes)):
        for item in items:
            if item.name in seen:
                errors.add(
                    root.error(f"name '{item.name}' is used by an {seen[item.name]} and an {kind}")
                )
            seen[item.name] = kind
    input_vars = {t.type_var for t in inputs if t.type_var}
    for tc in constraints:
        if tc.name not in input_vars:
            errors.add(
                fields["type_constraints"].error(
                    f"type variable '{tc.name}' is not used by any input, so it cannot be bound"
                )
            )

    shape_rule = None
    if inputs and outputs and "outputs" in fields:
        shape_rule = errors.attempt(
            _compile_shape_rule, op_type, inputs, outputs, fields["inputs"], fields["outputs"]
        )

    names = {t.name for t in inputs} | {a.name for a in attributes}
    reference = get("reference", _parse_reference, names)
    upcast = get("reference_upcast", _bool)
    kernel = get("kernel", _parse_kernel, path.parent)
    if "kernel" not in fields:
        errors.add(root.error("missing required field 'kernel' (source: <file> or body: ...)"))
    tested = constraints[0].dtypes if constraints else ()
    tests = (
        errors.attempt(
            _parse_tests,
            fields["tests"],
            inputs,
            outputs,
            {a.name: a for a in attributes},
            tested,
            errors,
        )
        if "tests" in fields
        else None
    )
    errors.raise_if_any()
    return OpDef(
        op_id=op_id,
        definition_path=display_name,
        op_type=op_type,
        domain=domain,
        version=version,
        doc=doc.strip(),
        torch=torch_binding,
        type_constraints=constraints,
        inputs=inputs,
        outputs=outputs,
        attributes=attributes,
        shape_rule=shape_rule,
        reference=reference,
        reference_upcast=True if upcast is None else upcast,
        kernel=kernel,
        tests=tests,
    )


def check_project(ops: list[OpDef]) -> None:
    """Cross-definition rules: unique op ids, ONNX names and PyTorch names."""
    errors = ErrorCollector()
    seen: dict[tuple, OpDef] = {}
    for op in ops:
        for key, what in (
            (("id", op.op_id), "file name"),
            (("onnx", op.domain, op.op_type, op.version), "ONNX op (domain, type, version)"),
            (("torch", op.torch.qualified_name), "PyTorch name"),
        ):
            if key in seen:
                errors.add(
                    DefinitionError(
                        Location(op.definition_path, 1, 1),
                        "<root>",
                        f"{what} {key[1:]} is also defined by {seen[key].definition_path}",
                    )
                )
            seen[key] = op
    errors.raise_if_any()


def evaluate_output_shapes(
    rule: ShapeRule, input_dims: dict[str, list[int | str]]
) -> dict[str, list[int | str]]:
    """Applies the shape rule to concrete or named dims (for tests and docs)."""
    result = {}
    for out in rule.outputs:
        dims: list[int | str] = []
        for part in out.parts:
            if part.kind == "slice":
                dims.extend(input_dims[part.input][part.start : part.stop])
            elif part.kind == "dim":
                dims.append(input_dims[part.input][part.axis])
            else:
                dims.append(part.value)
        result[out.output] = dims
    return result
