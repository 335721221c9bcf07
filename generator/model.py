"""The typed op model: frozen dataclasses parsed from a definition with strict validation.

Every fact that more than one emitter needs (dtype instantiations, shape checks, output
shapes, attribute defaults) is computed here once; emitters only render it.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import operator
import re
import struct
from dataclasses import dataclass, field
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
    bool = "bool"  # an ONNX int attribute (0 or 1); a PyTorch bool
    int = "int"
    float = "float"
    string = "string"
    ints = "ints"
    floats = "floats"
    strings = "strings"

    @property
    def is_list(self) -> bool:
        return self in (AttrType.ints, AttrType.floats, AttrType.strings)


# C++ keywords and names our generated code defines or uses in the signatures that hold user
# names (a parameter named like a type or namespace hides it), and the wrappers' locals and
# parameters in the scopes of user-named views and type variables (`context`, `kernel`, ...);
# Python's come from `keyword`.
CPP_RESERVED = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
    co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit
    export extern false float for friend goto if inline int long mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq attrs ctx
    context raw_context info raw_info kernel index types optional shapes pool serial release
    opgen std Ort py pybind11 Attributes OutputShapes OutputShapesOf int8_t int16_t int32_t
    int64_t uint8_t size_t""".split()
)
# Names the generated Python/C++ uses next to user names.
GENERATED_RESERVED = frozenset(
    {"torch", "np", "onnx", "op", "g", "gen", "shape", "dtype", "math", "module", "keyset"}
    | {"aligned"}  # the C++ adapters' opgen::AlignedCopies beside the input views
)

# An op id (the definition's file stem) names generated/<op_id>/, generated/docs/<op_id>.md and
# the C++ namespace opgen::<op_id>, so it must not be a shared output entry or a name the
# support headers declare in namespace opgen (tests/test_definition_errors.py checks both
# lists against the generated output).
SHARED_OUTPUT_NAMES = frozenset(
    {"CMakeLists", "__init__", "_support", "_testing", "docs", "domains", "include", "index"}
    | {"_names"}  # generated/_names.py, the artifact names' one owner
)
OPGEN_NAMESPACE_NAMES = frozenset(
    """AlignedCopies AllocatedOutput Context Error Input Output SerialContext Shape SymDim
    TensorView append_dims axis_size bfloat16 broadcast_dim broadcast_offsets broadcast_shapes
    check_extent checked_numel compute_type compute_type_of data_dependent_dim dim_add
    dim_floor_div dim_mul dim_sub dim_to_string fail fail_overflow float16 floor_div kShapeEnd ort
    py_support quoted reduced_shape schema shape_to_string""".split()
)

# Names the generated C++ declares in each op's namespace opgen::<op_id>, where user names
# are parameters, locals and template parameters (checked against the output the same way).
OP_NAMESPACE_NAMES = frozenset(
    """AttributeProto Attributes Dim FunctionNodes FunctionOpsets InferOutputShapes
    InferTypesAndShapes ModelProto OpSchema OrtKernel OrtOp OutputShapes OutputShapesOf
    RegisterSchema TensorProto_DataType add_ort_ops bind compute describe expect infer_shapes
    kOpType main make_model only_node run set_shape""".split()
)

# Validation patterns: \A and \Z, and always fullmatch(), because `$` also matches before a final
# "\n" ("Op\n" would pass and the newline reach the generated code).
IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
DOMAIN = re.compile(r"\A[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\Z")
TORCH_NAME = re.compile(r"\A([a-z_][a-z0-9_]*)::([a-z_][a-z0-9_]*)\Z")


def float32(value: float) -> float:
    """The float32 nearest to value (ONNX float attributes are float32 in every runtime)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def float32_text(value: float) -> str:
    """The shortest `%.<p>g` spelling that reads back as the same float32 (what the C++
    opgen::quoted and the Python _support.quoted print for a float)."""
    value = float32(value)
    if math.isnan(value):
        return "nan"
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"  # C's %.<p>g, as the C++ spelling uses
        if float32(float(text)) == value:
            return text
    return f"{value:.9g}"


def message_value(value: int | float | str) -> str:
    """How error messages of every runtime spell an attribute value: ints in decimal, floats as
    float32_text, strings as JSON does (double quotes; backslash, quote and control characters
    escaped). The C++ `opgen::quoted` and the Python `_support.quoted` spell them the same way."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return float32_text(value) if isinstance(value, float) else str(value)


def message_values(values: tuple) -> str:
    return "[" + ", ".join(message_value(v) for v in values) + "]"


# --------------------------------------------------------------------------- model classes


@dataclass(frozen=True)
class TypeConstraint:
    name: str
    dtypes: tuple[DType, ...]
    doc: str


@dataclass(frozen=True)
class Dim:
    """One entry of a shape pattern: `...`, a symbol such as N, an integer literal, or (in an
    output pattern) an expression such as `(L - window) // stride + 1`."""

    kind: str  # "ellipsis" | "symbol" | "literal" | "expr"
    symbol: str | None = None  # the symbol, or the expression's text
    value: int | None = None

    def __str__(self) -> str:
        if self.kind == "ellipsis":
            return "..."
        return str(self.value) if self.kind == "literal" else self.symbol


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
    same_shape_as: str | None
    # outputs only: `broadcast(A, B)` or `reduce(X, axis, keepdims)`, as (name, arguments)
    shape_function: tuple[str, tuple[str, ...]] | None = None
    optional: bool = False  # inputs only: may be absent (None in PyTorch, "" in ONNX)


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    doc: str
    required: bool
    default: Any  # None when required
    allowed: tuple | None = None  # the values it may take (None: any)
    since_version: int | None = None  # the op version that added it (None: the first)
    minimum: int | float | None = None  # int and float attributes: the smallest value allowed
    maximum: int | float | None = None  # ... and the largest (both inclusive; None: no bound)


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


_APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv}


@dataclass(frozen=True)
class DimExpr:
    """An output dim: an input dim, an integer, an int attribute, or `+ - * //` of two dims
    (`//` floors, as in Python)."""

    kind: str  # "dim" | "literal" | "attr" | "binary" | "dynamic" (a data-dependent size)
    ref: DimRef | None = None
    value: int | None = None
    attr: str | None = None
    op: str | None = None  # "+" | "-" | "*" | "//"
    left: DimExpr | None = None
    right: DimExpr | None = None
    text: str = field(default="", compare=False)  # as the definition writes it

    def walk(self):
        yield self
        for child in (self.left, self.right):
            if child is not None:
                yield from child.walk()

    @property
    def refs(self) -> list[DimRef]:
        return [e.ref for e in self.walk() if e.kind == "dim"]

    @property
    def attrs(self) -> list[str]:
        return [e.attr for e in self.walk() if e.kind == "attr"]

    def spell(self, dim, attr, binary) -> str:
        """The expression in a target language: `dim(ref)`, `attr(name)` spell the leaves and
        `binary(op, a, b)` each `+ - * //` (parenthesised as the target needs). (A
        data-dependent size has no expression: each target spells it itself.)"""
        if self.kind == "dim":
            return dim(self.ref)
        if self.kind == "literal":
            return str(self.value)
        if self.kind == "attr":
            return attr(self.attr)
        a = self.left.spell(dim, attr, binary)
        b = self.right.spell(dim, attr, binary)
        return binary(self.op, a, b)

    def evaluate(self, dim, attr) -> int:
        if self.kind == "dim":
            return dim(self.ref)
        if self.kind == "literal":
            return self.value
        if self.kind == "attr":
            return attr(self.attr)
        a, b = self.left.evaluate(dim, attr), self.right.evaluate(dim, attr)
        return _APPLY[self.op](a, b)


@dataclass(frozen=True)
class ShapePart:
    """One piece of an output shape."""

    kind: str  # "slice" | "expr" | "broadcast" | "reduce"
    input: str | None = None  # slice, reduce: the input whose dims are used
    input_index: int | None = None
    start: int | None = None  # slice bounds, Python semantics (None = open)
    stop: int | None = None
    expr: DimExpr | None = None  # expr: one dim
    operands: tuple[tuple[str, int], ...] = ()  # broadcast: (input, index) of every operand
    axis: DimExpr | None = None  # reduce: the axis (a literal or an int attribute)
    keepdims: DimExpr | None = None  # reduce: 0/1 (a literal or a bool/int attribute)
    message: str = ""  # broadcast: what incompatible operands report


@dataclass(frozen=True)
class OutputShape:
    output: str
    parts: tuple[ShapePart, ...]

    @property
    def data_dependent(self) -> tuple[str, ...]:
        """The data-dependent sizes (symbols) of this output: only its kernel knows them."""
        return tuple(
            p.expr.text for p in self.parts if p.kind == "expr" and p.expr.kind == "dynamic"
        )


@dataclass(frozen=True)
class ExprCheck:
    """A computed dim (or a divisor) that must be >= 0 (or > 0)."""

    expr: DimExpr
    strict: bool  # > 0 instead of >= 0
    message: str


@dataclass(frozen=True)
class AxisCheck:
    """An axis attribute (or literal) must index input `input`: -rank <= axis < rank."""

    input: str
    input_index: int
    axis: DimExpr
    message: str


@dataclass(frozen=True)
class AllowedValuesCheck:
    """An attribute with declared allowed values."""

    attribute: str
    allowed: tuple
    message: str


@dataclass(frozen=True)
class RangeCheck:
    """An int or float attribute with a declared range (inclusive; a float is compared as the
    float32 every runtime holds it in)."""

    attribute: str
    minimum: int | float | None
    maximum: int | float | None
    message: str

    @property
    def is_float(self) -> bool:
        return isinstance(self.minimum if self.minimum is not None else self.maximum, float)

    @property
    def comparisons(self) -> tuple[tuple[str, int | float], ...]:
        """What the value must satisfy: (">=", minimum) and/or ("<=", maximum)."""
        bounds = ((">=", self.minimum), ("<=", self.maximum))
        return tuple((relation, bound) for relation, bound in bounds if bound is not None)

    def outside(self) -> list[int | float]:
        """Values just outside the range, as the generated error cases use them."""
        values: list[int | float] = []
        if self.minimum is not None:
            below = _next_toward(self.minimum, -math.inf) if self.is_float else self.minimum - 1
            if below is not None and (self.is_float or below >= INT64_MIN):
                values.append(below)
        if self.maximum is not None:
            above = _next_toward(self.maximum, math.inf) if self.is_float else self.maximum + 1
            if above is not None and (self.is_float or above <= INT64_MAX):
                values.append(above)
        return values


def _next_toward(value: float, direction: float) -> float | None:
    """The float32 next to float32(value) toward direction, or None past float32's range."""
    bits = struct.unpack("<i", struct.pack("<f", float32(value)))[0]
    if value == 0:
        bits = 1 if direction > 0 else -(2**31) + 1  # the smallest subnormal of either sign
    else:
        bits += 1 if (direction > 0) == (bits >= 0) else -1
    result = struct.unpack("<f", struct.pack("<i", bits))[0]
    return None if math.isinf(result) or math.isnan(result) else result


@dataclass(frozen=True)
class ShapeRule:
    attribute_checks: tuple[AllowedValuesCheck | RangeCheck, ...]
    rank_checks: tuple[RankCheck, ...]
    dim_checks: tuple[DimEqualCheck | DimLiteralCheck, ...]
    shape_checks: tuple[ShapeEqualCheck, ...]
    axis_checks: tuple[AxisCheck, ...]
    expr_checks: tuple[ExprCheck, ...]
    outputs: tuple[OutputShape, ...]

    @property
    def data_dependent_sizes(self) -> tuple[str, ...]:
        """Every data-dependent size symbol, in order of first use."""
        symbols = [s for out in self.outputs for s in out.data_dependent]
        return tuple(dict.fromkeys(symbols))

    @property
    def kernel_allocated(self) -> frozenset[str]:
        """Outputs whose shape depends on the data: the kernel allocates them."""
        return frozenset(out.output for out in self.outputs if out.data_dependent)

    @property
    def input_checks(self) -> tuple:
        """The checks on input shapes, in the order every runtime runs them."""
        return (
            self.rank_checks
            + self.dim_checks
            + self.shape_checks
            + self.axis_checks
            + self.expr_checks
        )

    @property
    def scalar_inputs(self) -> frozenset[str]:
        """Inputs the rule requires to be scalars (rank exactly 0)."""
        return frozenset(c.input for c in self.rank_checks if c.exact and c.rank == 0)

    @property
    def shaped_inputs(self) -> frozenset[str]:
        """Inputs whose shape the rule reads."""
        used = {c.input for c in self.rank_checks}
        used |= {name for c in self.shape_checks for name in (c.a, c.b)}
        used |= {c.input for c in self.axis_checks}
        used |= {ref.input for c in self.expr_checks for ref in c.expr.refs}
        for out in self.outputs:
            for part in out.parts:
                used |= {part.input} if part.input else set()
                used |= {name for name, _ in part.operands}
                used |= {ref.input for ref in (part.expr.refs if part.expr else ())}
        return frozenset(used)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Attributes the rule reads: allowed-value checks, int attributes in dims, reduce axes
        and keepdims."""
        names: list[str] = [c.attribute for c in self.attribute_checks]
        exprs = [c.expr for c in self.expr_checks] + [c.axis for c in self.axis_checks]
        for out in self.outputs:
            exprs += [e for p in out.parts for e in (p.expr, p.axis, p.keepdims) if e]
        for expr in exprs:
            names += [name for name in expr.attrs if name not in names]
        return tuple(names)


def inputs_read(check) -> tuple[str, ...]:
    """The inputs whose shapes a check reads."""
    if isinstance(check, RankCheck | AxisCheck):
        return (check.input,)
    if isinstance(check, DimEqualCheck):
        return tuple(dict.fromkeys((check.a.input, check.b.input)))
    if isinstance(check, DimLiteralCheck):
        return (check.ref.input,)
    if isinstance(check, ShapeEqualCheck):
        return (check.a, check.b)
    return tuple(dict.fromkeys(ref.input for ref in check.expr.refs))


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
    """A new PyTorch op (`name`), or an existing ATen overload whose export the definition
    overrides (`overrides`; no new PyTorch op)."""

    namespace: str
    name: str
    api: str  # one of TORCH_APIS
    overload: str = "default"
    is_override: bool = False

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}"

    @property
    def takes_gradients(self) -> bool:
        """A new op whose registration can carry gradient formulas (not the legacy API)."""
        return not self.is_override and self.api != "legacy"

    @property
    def overload_name(self) -> str:
        """As in the ONNX exporters' tables: `aten::add.Tensor`."""
        return f"{self.qualified_name}.{self.overload}"


@dataclass(frozen=True)
class AttrRef:
    """`@name` in a node: the value of the definition's attribute `name`."""

    name: str


@dataclass(frozen=True)
class NodeAttribute:
    name: str
    type: AttrType
    value: Any  # a literal, a DType (an int attribute given as a dtype name), or an AttrRef


@dataclass(frozen=True)
class OnnxNode:
    """One node of a function body or an export: `Z, W = domain::Op<attr=value>(X, Y)`."""

    outputs: tuple[str, ...]
    domain: str  # "" for the standard ONNX domain
    op_type: str
    inputs: tuple[str, ...]
    attributes: tuple[NodeAttribute, ...]
    location: Location

    @property
    def qualified(self) -> str:
        return f"{self.domain}::{self.op_type}" if self.domain else self.op_type


@dataclass(frozen=True)
class Function:
    """The op is an ONNX function: a body of nodes (standard ops, at `opset`)."""

    opset: int
    nodes: tuple[OnnxNode, ...]


@dataclass(frozen=True)
class ExportRule:
    """How the PyTorch op exports: these nodes, when every attribute in `when` has its value."""

    when: tuple[tuple[str, Any], ...]
    nodes: tuple[OnnxNode, ...]


@dataclass(frozen=True)
class OpDef:
    op_id: str  # file stem: names generated/<op_id>/ and the C++ namespace
    # As generated files name it: relative to the project root (the opdefs directory's parent),
    # so that the output is the same bytes whatever the working directory.
    definition_path: str
    op_type: str | None  # the ONNX op it defines; None for an export-only definition
    domain: str | None
    version: int | None
    doc: str
    torch: TorchBinding | None
    type_constraints: tuple[TypeConstraint, ...]
    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attributes: tuple[Attribute, ...]
    shape_rule: ShapeRule
    reference: str
    reference_upcast: bool
    kernel: Kernel | None
    function: Function | None
    provided_by: str | None  # "onnxruntime": the runtime already has this op
    export: tuple[ExportRule, ...]  # empty without a PyTorch side
    tests: Tests
    # Every version of the op, oldest first (`version` is the newest); one for most ops.
    versions: tuple[int, ...] = ()
    # input -> backward formula for its gradient (register_autograd); empty: no autograd
    gradients: dict[str, str] = field(default_factory=dict)
    # Where each top-level field (and "torch.name") is, for errors found across definitions.
    locations: dict[str, Location] = field(default_factory=dict, compare=False)
    # As messages on the terminal name it: relative to the working directory (or absolute).
    display_path: str = field(default="", compare=False)

    def located(self, field_path: str, message: str) -> DefinitionError:
        root = Location(self.display_path, 1, 1)
        return DefinitionError(self.locations.get(field_path, root), field_path, message)

    @property
    def defines_onnx_op(self) -> bool:
        return self.op_type is not None

    @property
    def has_cpp_schema(self) -> bool:
        """Ops we implement get an ONNX C++ schema; ops a runtime provides do not."""
        return self.kernel is not None or self.function is not None

    @property
    def infers_through_function(self) -> bool:
        """A function op with outputs that have no shape rule: ONNX infers through its body."""
        return self.function is not None and len(self.shape_rule.outputs) < len(self.outputs)

    @property
    def new_torch_op(self) -> bool:
        return self.torch is not None and not self.torch.is_override

    @property
    def nodes_used(self) -> tuple[OnnxNode, ...]:
        """Every node of the export rules and the function body."""
        nodes = [n for rule in self.export for n in rule.nodes]
        return tuple(nodes + list(self.function.nodes if self.function else ()))

    @property
    def instantiations(self) -> tuple[Instantiation, ...]:
        names = [tc.name for tc in self.type_constraints]
        combos = product(*(tc.dtypes for tc in self.type_constraints))
        return tuple(Instantiation(tuple(zip(names, combo, strict=True))) for combo in combos)

    @property
    def error_cases(self) -> tuple[ErrorCase, ...]:
        """The definition's error cases, then one for each value just outside a declared
        attribute range, on the first random case's shapes: every runtime must reject it, with
        the same message."""
        cases = list(self.tests.errors)
        ranges = [c for c in self.shape_rule.attribute_checks if isinstance(c, RangeCheck)]
        if ranges and self.tests.random:
            first = self.tests.random[0]
            shapes = {
                name: tuple(d if isinstance(d, int) else first.dynamic[d][0] for d in dims)
                for name, dims in first.shapes.items()
            }
            for check in ranges:
                for value in check.outside():
                    message = f"{check.message}, got {message_value(value)}"
                    attributes = {**first.attributes, check.attribute: value}
                    cases.append(ErrorCase(shapes, None, message, attributes))
        return tuple(cases)

    @property
    def raises_without_gradients(self) -> bool:
        """Backward through it raises our own error: a new op registered with the `library`
        api and no gradient formulas (`custom_op` raises PyTorch's; `legacy` takes none)."""
        return self.new_torch_op and self.torch.api == "library" and not self.gradients

    @property
    def differentiable(self) -> bool:
        """Some dtype binding makes an input and an output floating: a gradient can flow
        through the op (whether or not the definition gives formulas for it)."""

        def floating(tensor: TensorParam, binding: Instantiation) -> bool:
            dtype = binding.dtype(tensor.type_var) if tensor.type_var else tensor.dtype
            return dtype.is_floating

        return any(
            any(floating(t, binding) for t in self.inputs)
            and any(floating(t, binding) for t in self.outputs)
            for binding in self.instantiations
        )

    @property
    def type_var_dtypes(self) -> dict[str, tuple[DType, ...]]:
        return {tc.name: tc.dtypes for tc in self.type_constraints}

    def dtype_source(self, output: TensorParam) -> str | None:
        """The first input whose dtype an output follows (None for a concrete dtype)."""
        if output.type_var is None:
            return None
        return next(i.name for i in self.inputs if i.type_var == output.type_var and not i.optional)

    def attributes_at(self, version: int) -> tuple[Attribute, ...]:
        """The attributes the op has at one of its versions."""
        return tuple(a for a in self.attributes if (a.since_version or 0) <= version)

    @property
    def earlier_versions(self) -> tuple[int, ...]:
        return self.versions[:-1]

    @property
    def optional_inputs(self) -> frozenset[str]:
        return frozenset(t.name for t in self.inputs if t.optional)

    def guards(self, check) -> list[str]:
        """The optional inputs a shape check reads: it applies only when they are present."""
        return [name for name in inputs_read(check) if name in self.optional_inputs]

    @property
    def exporters(self) -> tuple[str, ...]:
        """The PyTorch exporters that can export this op. The TorchScript tracer cannot
        record a list-of-strings argument ("unsupported input list type: str")."""
        if self.torch is None:
            return ()
        if any(a.type is AttrType.strings for a in self.attributes):
            return ("dynamo",)
        return ("dynamo", "torchscript")

    @property
    def domain_ident(self) -> str:
        return self.domain.replace(".", "_")


# --------------------------------------------------------------------------- parsing helpers


def _mapping(
    node: Node, allowed: set[str], required: set[str], unknown_to: ErrorCollector | None = None
) -> dict[str, Node]:
    """The fields of a mapping; raises listing unknown and missing fields. With `unknown_to`,
    unknown fields are recorded there instead and the known ones returned, so that a typo
    does not drop the whole item (and every error that would cascade from its absence)."""
    if not node.is_mapping:
        raise node.error(f"expected a mapping with keys {sorted(allowed)}, found {_kind(node)}")
    errors = ErrorCollector()
    unknown = unknown_to if unknown_to is not None else errors
    for key, child in node.value.items():
        if key not in allowed:
            loc = child.key_location or child.location
            hint = _closest(key, allowed)
            unknown.add(
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
    return {key: child for key, child in node.value.items() if key in allowed}


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
    if "\0" in node.value:
        # Strings end up in C strings too (ONNX schema docs, defaults): a NUL would cut them.
        raise node.error(f"expected {what} without NUL characters, found one (\\0)")
    return node.value


# Every target holds an integer in an int64 (C++ int64_t, ONNX INT/INTS, PyTorch int, torch
# int64 tensors) and a float attribute in a float32 (ONNX FLOAT/FLOATS, C++ float): a value
# outside them would not compile, would be rejected at import or would silently change. These
# two functions are the one place that checks it, for every field that holds such a value.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT32_MAX = 3.4028234663852886e38
# ONNX holds op and opset versions in a C++ int (OpSchema::SinceVersion, ONNX Runtime's
# custom-op start version).
VERSION_MAX = 2**31 - 1


def _in_int64(value: int, node: Node) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise node.error(
            f"{value} is outside int64's range [-2**63, 2**63 - 1], which every target holds "
            "integers in"
        )
    return value


def _in_float32(value: float, node: Node) -> float:
    """A float attribute value: finite and representable in float32."""
    if not math.isfinite(value):
        raise node.error(
            f"{value} cannot be a float attribute value: PyTorch schemas cannot hold an infinite "
            "or NaN default, so opgen rejects them everywhere rather than work in some runtimes "
            f"only; for an unbounded limit write float32's largest value, {FLOAT32_MAX!r}"
        )
    if abs(value) > FLOAT32_MAX:
        raise node.error(
            f"{value} is outside float32's range (largest {FLOAT32_MAX!r}): ONNX float "
            "attributes are float32, where it would become infinite"
        )
    if value != 0 and struct.unpack("f", struct.pack("f", value))[0] == 0:
        raise node.error(
            f"{value} is too small for float32 (ONNX float attributes are float32): it would "
            "become 0.0; the smallest is 1.4e-45"
        )
    return value


def _int(node: Node, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(node.value, bool) or not isinstance(node.value, int):
        raise node.error(f"expected an integer, found {_kind(node)}")
    if minimum is not None and node.value < minimum:
        raise node.error(f"expected an integer >= {minimum}, found {node.value}")
    if maximum is not None and node.value > maximum:
        raise node.error(f"expected an integer <= {maximum}, found {node.value}")
    return _in_int64(node.value, node)


def _version(node: Node) -> int:
    """An op, opset or since version: >= 1 and held in a C++ int by ONNX."""
    return _int(node, minimum=1, maximum=VERSION_MAX)


def _number(node: Node) -> float:
    if isinstance(node.value, str) and re.fullmatch(r"[-+]?\d+[eE][-+]?\d+", node.value):
        raise node.error(
            f"YAML reads {node.value!r} as a string; write it with a decimal point, "
            f"e.g. {node.value.replace('e', '.0e').replace('E', '.0E')}"
        )
    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise node.error(f"expected a number, found {_kind(node)}")
    try:
        return float(node.value)
    except OverflowError:  # an integer of hundreds of digits
        raise node.error(f"{node.value} is too large for a float") from None


def _finite(node: Node) -> float:
    """A tolerance: a finite number >= 0 (inf and NaN would make a comparison meaningless)."""
    value = _number(node)
    if not math.isfinite(value) or value < 0:
        raise node.error(f"expected a finite number >= 0, found {value}")
    return value


def _bool(node: Node) -> bool:
    if not isinstance(node.value, bool):
        raise node.error(f"expected true or false, found {_kind(node)}")
    return node.value


def _list(node: Node) -> list[Node]:
    if not node.is_sequence:
        raise node.error(f"expected a list, found {_kind(node)}")
    return node.value


def is_reserved(name: str) -> bool:
    """Whether a tensor, attribute or type variable name is taken in some target."""
    return (
        keyword.iskeyword(name)
        or name in CPP_RESERVED
        or name in GENERATED_RESERVED
        or name in OP_NAMESPACE_NAMES
    )


def _identifier(node: Node, what: str) -> str:
    name = _str(node)
    if not IDENTIFIER.fullmatch(name):
        raise node.error(f"{what} '{name}' is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if is_reserved(name):
        raise node.error(
            f"{what} '{name}' is reserved in Python, C++ or the generated code; choose another name"
        )
    return name


# An op id and a domain become parts of file names (generated/<op_id>/<op_id>_schema_test.cc,
# libopgen_<domain>.so), and tools derive longer ones from those: `.<name>.<pid>.tmp` while
# writing, CMake's `<op_id>_schema_test.cc.o.d`, Python's
# `test_<op_id>.cpython-311-pytest-8.3.4.pyc`. 128 characters leaves room for every one of
# them within the usual 255-byte limit of a file name.
MAX_NAME_LENGTH = 128


def _too_long(what: str, name: str) -> str:
    return (
        f"{what} may have at most {MAX_NAME_LENGTH} characters (file names are derived from "
        f"it), found {len(name)}"
    )


def _op_id(node: Node) -> str:
    """The definition's file stem: it names generated/<op_id>/ and namespace opgen::<op_id>."""
    op_id = _identifier(node, "op definition file name")
    if op_id in SHARED_OUTPUT_NAMES or op_id in OPGEN_NAMESPACE_NAMES:
        raise node.error(
            f"'{op_id}' is taken by the generated code's own files or C++ names; rename "
            "the definition file"
        )
    if len(op_id) > MAX_NAME_LENGTH:
        raise node.error(_too_long("an op definition file name", op_id))
    return op_id


def op_id_problem(op_id: str) -> str | None:
    """Why a file stem cannot be an op id (None if it can), for the scaffold."""
    try:
        _op_id(Node(op_id, Location("<name>", 1, 1), "<file name>"))
    except DefinitionError as error:
        return error.message
    return None


def attribute_value_problem(value: Any, attr_type: AttrType) -> str | None:
    """Why a value cannot be an attribute's (None if it can): the checks of a definition's
    values, for the scaffold's --attribute defaults."""
    where = Location("<value>", 1, 1)
    items = [Node(v, where, "") for v in value] if isinstance(value, list) else value
    try:
        _attr_value(Node(items, where, ""), attr_type)
    except DefinitionError as error:
        return error.message
    return None


def _doc(fields: dict[str, Node], errors: ErrorCollector) -> str:
    """A bad doc is reported without dropping what it documents (which would cascade)."""
    return (errors.attempt(_str, fields["doc"]) or "") if "doc" in fields else ""


def _dtype(node: Node) -> DType:
    name = _str(node, "a dtype name")
    try:
        return DType(name)
    except ValueError:
        raise node.error(
            f"unknown dtype '{name}'; expected one of {[d.value for d in DType]}"
        ) from None


# --------------------------------------------------------------------------- sections


# How a new PyTorch op is registered (torch.name's `api`):
TORCH_APIS = {
    # torch.library.Library define/impl + register_fake + an autograd kernel: the least
    # Python per call (custom_op adds about 5 µs of wrapping, see the README's Performance).
    "library": "torch.library.Library",
    "custom_op": "torch.library.custom_op",  # a CustomOpDef, for its register_* methods
    "legacy": "torch._custom_op",  # older PyTorch releases' API; no gradients
}
DEFAULT_TORCH_API = "library"

ATEN_OVERLOAD = re.compile(
    r"\A([a-z_][a-z0-9_]*)::([a-z_][a-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\Z"
)


# Namespaces PyTorch defines ops in (torch 2.13: the namespaces of
# torch._C._dispatch_get_all_op_names() and torch._C._jit_get_all_schemas() after `import
# torch`, plus Python-only `higher_order` and the `torchvision` package's). A new op there
# clashes with PyTorch's own, or would pass for one. torch is too slow to import here:
# tests/test_hostile_definitions.py checks this list against the installed torch.
TORCH_NAMESPACES = frozenset(
    """_c10d_functional _c10d_functional_autograd _dtensor _native _quantized _test aten c10d
    debug_mode_ops debugprims export higher_order inductor inductor_prims mkl mkldnn
    mkldnn_prepacked onednn onnx prim prims profiler quantization quantized rngprims sparse
    static_runtime symm_mem torchvision""".split()
)


def _parse_torch(node: Node) -> TorchBinding:
    fields = _mapping(node, {"name", "api", "overrides"}, set())
    if ("name" in fields) == ("overrides" in fields):
        raise node.error(
            "give exactly one of 'name' (a new PyTorch op 'namespace::name') or 'overrides' "
            "(an existing overload such as 'aten::add.Tensor')"
        )
    if "overrides" in fields:
        if "api" in fields:
            raise fields["api"].error("'api' applies to new ops only, not to 'overrides'")
        text = _str(fields["overrides"])
        match = ATEN_OVERLOAD.fullmatch(text)
        if not match:
            raise fields["overrides"].error(
                f"'{text}' is not a PyTorch overload 'namespace::name.overload' "
                "(e.g. aten::add.Tensor; the overload defaults to 'default')"
            )
        return TorchBinding(
            match.group(1), match.group(2), DEFAULT_TORCH_API, match.group(3) or "default", True
        )
    qualified = _str(fields["name"])
    match = TORCH_NAME.fullmatch(qualified)
    if not match:
        raise fields["name"].error(
            f"'{qualified}' is not a PyTorch qualified name 'namespace::name' (lower-case identifiers)"
        )
    if match.group(1) in TORCH_NAMESPACES:
        raise fields["name"].error(
            f"'{qualified}': namespace '{match.group(1)}' belongs to PyTorch, so a new op there "
            f"would clash with its ops; did you mean 'overrides: {qualified}' (change how an "
            "existing PyTorch op exports)? A new op needs a namespace of your own, e.g. "
            f"'my_ops::{match.group(2)}'"
        )
    api = DEFAULT_TORCH_API
    if "api" in fields:
        api = _str(fields["api"])
        if api not in TORCH_APIS:
            raise fields["api"].error(f"expected one of {list(TORCH_APIS)}, found '{api}'")
    for part in (match.group(1), match.group(2)):
        if keyword.iskeyword(part):
            raise fields["name"].error(
                f"'{qualified}': '{part}' is a Python keyword, so torch.ops.{match.group(1)}."
                f"{match.group(2)} cannot be written in Python; choose another name"
            )
    if match.group(2).endswith("_"):
        raise fields["name"].error(
            f"'{qualified}' ends in '_', which PyTorch reads as an in-place variant (the "
            "TorchScript exporter looks the op up without it); choose a name without"
        )
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
                doc = _doc(fields, errors)
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


DIM_EXPRESSION_SYNTAX = (
    "dim symbols bound by the inputs, int attributes and integers with + - * // and parentheses"
)


def _parse_shape(node: Node, is_output: bool) -> ShapePattern:
    items = _list(node)
    dims = []
    for item in items:
        value = item.value
        if value == "...":
            dims.append(Dim("ellipsis"))
        elif isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise item.error(f"a literal dimension must be >= 0, found {value}")
            dims.append(Dim("literal", value=_in_int64(value, item)))
        elif isinstance(value, str) and IDENTIFIER.fullmatch(value):
            dims.append(Dim("symbol", symbol=value))
        elif isinstance(value, str) and is_output:
            _dim_expression_tree(value, item)  # syntax now; names when the rule is compiled
            dims.append(Dim("expr", symbol=value.strip()))
        else:
            allowed = "'...', a dimension symbol such as N, an integer"
            if is_output:
                allowed += f", or an expression of {DIM_EXPRESSION_SYNTAX}"
            raise item.error(f"expected {allowed}, found {_kind(item)}")
    if sum(1 for d in dims if d.kind == "ellipsis") > 1:
        raise node.error("a shape pattern may contain '...' at most once")
    return ShapePattern(tuple(dims))


_BINARY_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}

# Python's parser, ast.unparse and our own tree walks recurse: a few thousand unary minuses
# exhaust the stack. Expressions in definitions (dims, references, gradients, node attributes)
# are short and shallow, so anything beyond these limits is refused before it is walked.
MAX_EXPRESSION_LENGTH = 2000  # characters
MAX_EXPRESSION_DEPTH = 64  # levels of the syntax tree


def parse_expression(text: str) -> ast.Expression:
    """ast.parse(text, mode="eval") within the limits; SyntaxError for anything else."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise SyntaxError(
            f"{len(text)} characters long; an expression may have {MAX_EXPRESSION_LENGTH}"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError, ValueError):  # last resort; the length bounds these
        raise SyntaxError("nested too deeply") from None
    level = [tree]  # breadth first, level by level: no recursion
    for _ in range(MAX_EXPRESSION_DEPTH):
        level = [child for parent in level for child in ast.iter_child_nodes(parent)]
        if not level:
            return tree
    raise SyntaxError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep")


def _shown(text: str, limit: int = 80) -> str:
    """A quoted expression for a message, shortened if long."""
    return f"'{text}'" if len(text) <= limit else f"'{text[:limit]}...'"


def _dim_expression_tree(text: str, node: Node) -> ast.expr:
    """Parses a dim expression and checks that it uses only the allowed syntax."""
    try:
        tree = parse_expression(text.strip()).body
    except SyntaxError as exc:
        raise node.error(f"{_shown(text)} is not a valid dim expression: {exc.msg}") from None
    for sub in ast.walk(tree):
        allowed = (
            isinstance(sub, ast.Name | ast.Load | ast.BinOp)
            or type(sub) in _BINARY_OPS
            or (isinstance(sub, ast.Constant) and type(sub.value) is int)
        )
        if not allowed:
            raise node.error(f"'{text}': a dim expression uses {DIM_EXPRESSION_SYNTAX}")
        if isinstance(sub, ast.Constant):
            _in_int64(sub.value, node)
    return tree


def _dim_expression(
    text: str, node: Node, bound: dict[str, DimRef], attrs: dict[str, Attribute]
) -> DimExpr:
    def build(sub: ast.expr) -> DimExpr:
        if isinstance(sub, ast.Constant):
            return DimExpr("literal", value=sub.value, text=str(sub.value))
        if isinstance(sub, ast.Name):
            if sub.id in bound:
                return DimExpr("dim", ref=bound[sub.id], text=sub.id)
            if sub.id in attrs and attrs[sub.id].type is AttrType.int:
                return DimExpr("attr", attr=sub.id, text=sub.id)
            ints = sorted(name for name, a in attrs.items() if a.type is AttrType.int)
            raise node.error(
                f"'{sub.id}' in '{text}' is neither a dim symbol bound by an input shape "
                f"pattern {sorted(bound)} nor an int attribute {ints}"
            )
        expr = DimExpr(
            "binary",
            op=_BINARY_OPS[type(sub.op)],
            left=build(sub.left),
            right=build(sub.right),
            text=ast.unparse(sub),
        )
        # Constant parts are checked here, with the position: every emitter and runtime would
        # otherwise divide by zero (or overflow int64) on every call.
        divisor = _constant(expr.right)
        if expr.op == "//" and divisor is not None and divisor <= 0:
            always = "" if expr.right.kind == "literal" else f", which is always {divisor}"
            raise node.error(
                f"'{text}' divides by {expr.right.text}{always}; a divisor must be positive"
            )
        value = _constant(expr)
        if value is not None and not INT64_MIN <= value <= INT64_MAX:
            raise node.error(f"'{text}': {expr.text} = {value} is outside int64's range")
        return expr

    expr = build(_dim_expression_tree(text, node))
    if (_constant(expr) or 0) < 0:
        raise node.error(f"'{text}' is always negative ({_constant(expr)}), so it is not a size")
    return expr


def _constant(expr: DimExpr) -> int | None:
    """The value of a part of a dim expression that reads no dim and no attribute."""
    if expr.kind == "literal":
        return expr.value
    if expr.kind != "binary":
        return None
    left, right = _constant(expr.left), _constant(expr.right)
    if left is None or right is None:
        return None
    return _APPLY[expr.op](left, right)  # a zero divisor was rejected when it was built


SHAPE_FUNCTIONS = {
    "broadcast": "broadcast(A, B, ...): the inputs' shapes broadcast together (numpy rules)",
    "reduce": "reduce(X, axis, keepdims): X's shape without `axis` (kept as 1 when keepdims)",
}


def _parse_shape_function(node: Node) -> tuple[str, tuple[str, ...]]:
    text = _str(node)
    forms = "; ".join(SHAPE_FUNCTIONS.values())
    try:
        call = parse_expression(text.strip()).body
    except SyntaxError:
        call = None
    if (
        not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Name)
        or call.func.id not in SHAPE_FUNCTIONS
        or call.keywords
    ):
        raise node.error(f"'{text}' is not a shape; expected a list of dims, or one of: {forms}")
    args = []
    for arg in call.args:
        if isinstance(arg, ast.Name):
            args.append(arg.id)
        elif isinstance(arg, ast.Constant) and type(arg.value) in (int, bool):
            args.append(repr(arg.value))
        elif (
            isinstance(arg, ast.UnaryOp)
            and isinstance(arg.op, ast.USub)
            and isinstance(arg.operand, ast.Constant)
            and type(arg.operand.value) is int
        ):
            args.append(repr(-arg.operand.value))
        else:
            raise node.error(f"'{text}': arguments are names or integer/boolean literals")
    return call.func.id, tuple(args)


def _parse_tensor(
    node: Node,
    constraints: dict[str, TypeConstraint],
    is_output: bool,
    declared_vars: frozenset[str],
    errors: ErrorCollector,
) -> TensorParam:
    allowed = {"name", "type", "doc", "shape", "same_shape_as"} | (
        set() if is_output else {"optional"}
    )
    fields = _mapping(node, allowed, {"name", "type"}, errors)
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
    shape, function = None, None
    if "shape" in fields:
        if is_output and isinstance(fields["shape"].value, str):
            function = _parse_shape_function(fields["shape"])
        else:
            shape = _parse_shape(fields["shape"], is_output)
    same = _identifier(fields["same_shape_as"], "input name") if "same_shape_as" in fields else None
    if "shape" in fields and same is not None:
        raise node.error("give either 'shape' or 'same_shape_as', not both")
    doc = _doc(fields, errors)
    optional = _bool(fields["optional"]) if "optional" in fields else False
    return TensorParam(name, doc, type_var, dtype, shape, same, function, optional)


def _attr_value(node: Node, attr_type: AttrType) -> Any:
    def scalar(item: Node, base: AttrType) -> Any:
        if base is AttrType.bool:
            return _bool(item)
        if base is AttrType.int:
            return _int(item)
        if base is AttrType.float:
            return _in_float32(_number(item), item)
        return _str(item)

    if attr_type.is_list:
        base = {
            AttrType.ints: AttrType.int,
            AttrType.floats: AttrType.float,
            AttrType.strings: AttrType.string,
        }[attr_type]
        return tuple(scalar(item, base) for item in _list(node))
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


def _parse_attribute(node: Node, errors: ErrorCollector) -> Attribute:
    fields = _mapping(
        node,
        {"name", "type", "default", "allowed", "min", "max", "since_version", "doc"},
        {"name", "type"},
        errors,
    )
    name = _identifier(fields["name"], "attribute name")
    type_name = _str(fields["type"])
    try:
        attr_type = AttrType(type_name)
    except ValueError:
        raise fields["type"].error(
            f"unknown attribute type '{type_name}'; expected one of {[t.value for t in AttrType]}"
        ) from None
    required = "default" not in fields
    default = None
    if not required:
        # A bad default is reported without dropping the attribute: its absence would cascade
        # into errors wherever it is used. (The definition fails anyway.)
        default = errors.attempt(_attr_value, fields["default"], attr_type)
        default_ok = default is not None
        default = default if default_ok else _PLACEHOLDER[attr_type]
    allowed = None
    if "allowed" in fields:
        if attr_type not in (AttrType.int, AttrType.string):
            raise fields["allowed"].error(
                f"'allowed' applies to int and string attributes, not to {attr_type.value}"
            )
        items = _list(fields["allowed"])
        if not items:
            raise fields["allowed"].error("list at least one allowed value")
        allowed = tuple(_attr_value(item, attr_type) for item in items)
        if len(set(allowed)) != len(allowed):
            raise fields["allowed"].error("a value is listed twice")
        if not required and default_ok and default not in allowed:
            raise fields["default"].error(f"the default {default!r} is not one of {list(allowed)}")
    bounds: dict[str, int | float] = {}
    for key in ("min", "max"):
        if key not in fields:
            continue
        if attr_type not in (AttrType.int, AttrType.float):
            raise fields[key].error(
                f"'{key}' applies to int and float attributes, not to {attr_type.value}"
            )
        bound = _attr_value(fields[key], attr_type)
        bounds[key] = float32(bound) if attr_type is AttrType.float else bound
    minimum, maximum = bounds.get("min"), bounds.get("max")
    if minimum is not None and maximum is not None and minimum > maximum:
        raise fields["max"].error(
            f"max {message_value(maximum)} is below min {message_value(minimum)}"
        )

    def inside(value: float) -> bool:
        return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)

    shown = [("" if bound is None else message_value(bound)) for bound in (minimum, maximum)]
    range_text = f"[{shown[0]}, {shown[1]}]"
    if bounds and not required and default_ok:
        value = float32(default) if attr_type is AttrType.float else default
        if not inside(value):
            raise fields["default"].error(
                f"the default {message_value(value)} is outside min/max {range_text}"
            )
    if bounds and allowed is not None:
        for value, item in zip(allowed, _list(fields["allowed"]), strict=True):
            if not inside(value):
                raise item.error(
                    f"allowed value {message_value(value)} is outside min/max {range_text}"
                )
    doc = _doc(fields, errors)
    since = _version(fields["since_version"]) if "since_version" in fields else None
    return Attribute(name, attr_type, doc, required, default, allowed, since, minimum, maximum)


def _range_message(op_type: str, attr: Attribute) -> str:
    lo, hi = attr.minimum, attr.maximum
    if lo is not None and hi is not None:
        bound = f"between {message_value(lo)} and {message_value(hi)}"
    else:
        bound = (
            f"at least {message_value(lo)}" if lo is not None else f"at most {message_value(hi)}"
        )
    return f"{op_type}: attribute '{attr.name}' must be {bound}"


def _compile_shape_rule(
    op_type: str,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
    inputs_node: Node,
    node: Node,
    data_dependent: tuple[str, ...] = (),
) -> ShapeRule:
    """Turn the input patterns and output rules into checks and output shape parts."""
    rank_checks: list[RankCheck] = []
    dim_checks: list[DimEqualCheck | DimLiteralCheck] = []
    bound: dict[str, DimRef] = {}
    bound_by_optional: set[str] = set()  # symbols an output cannot use (the input may be absent)
    ellipsis_inputs: list[tuple[int, TensorParam]] = []
    for index, tensor in enumerate(inputs):
        pattern = tensor.shape
        if pattern is None:
            continue
        exact = pattern.ellipsis_index is None
        relation = "exactly" if exact else "at least"
        if exact or pattern.fixed_rank > 0:  # `[...]` accepts every rank
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
        if not exact and not tensor.optional:
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
                if tensor.optional:
                    bound_by_optional.add(dim.symbol)
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
    expr_checks: list[ExprCheck] = []
    axis_checks: list[AxisCheck] = []
    output_nodes = node.value if node.is_sequence else []
    required_bound = {k: v for k, v in bound.items() if k not in bound_by_optional}
    for position, output in enumerate(outputs):
        where = output_nodes[position] if position < len(output_nodes) else node
        if output.same_shape_as is not None:
            if output.same_shape_as not in by_name or by_name[output.same_shape_as][1].optional:
                raise where.error(
                    f"output '{output.name}': same_shape_as '{output.same_shape_as}' is not a "
                    "required input"
                )
            index, _ = by_name[output.same_shape_as]
            parts = (ShapePart("slice", output.same_shape_as, index),)
        elif output.shape_function is not None:
            part = _shape_function_part(op_type, output, by_name, attrs, where)
            checked = {(c.input, c.axis) for c in axis_checks}
            if part.kind == "reduce" and (part.input, part.axis) not in checked:
                axis_checks.append(
                    AxisCheck(
                        part.input,
                        part.input_index,
                        part.axis,
                        f"{op_type}: reduction axis {part.axis.text} is out of range for input "
                        f"'{part.input}'",
                    )
                )
            parts = (part,)
        elif output.shape is None:
            continue  # no rule: allowed where nothing needs it (checked by the caller)
        else:
            parts_list = []
            for dim in output.shape.dims:
                if dim.kind == "ellipsis":
                    if not ellipsis_inputs:
                        raise where.error(
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
                    continue
                if dim.kind == "literal":
                    expr = DimExpr("literal", value=dim.value)
                elif dim.kind == "symbol" and dim.symbol in data_dependent:
                    if dim.symbol in bound:
                        raise where.error(
                            f"output '{output.name}': '{dim.symbol}' is bound by an input shape "
                            "pattern, so it cannot be a data-dependent size"
                        )
                    expr = DimExpr("dynamic", text=dim.symbol)
                elif dim.kind == "symbol" and dim.symbol in required_bound:
                    expr = DimExpr("dim", ref=bound[dim.symbol])
                elif dim.kind == "symbol" and dim.symbol not in attrs:
                    raise where.error(
                        f"output '{output.name}': dimension symbol '{dim.symbol}' is not bound "
                        f"by any required input's shape pattern (bound: {sorted(required_bound)})"
                    )
                else:
                    expr = _dim_expression(dim.symbol, where, required_bound, attrs)
                parts_list.append(ShapePart("expr", expr=expr))
                if expr.kind != "dim" and expr.kind != "literal":
                    expr_checks += _expression_checks(op_type, output.name, expr)
            parts = tuple(parts_list)
        shapes.append(OutputShape(output.name, parts))
    attribute_checks: tuple[AllowedValuesCheck | RangeCheck, ...] = tuple(
        AllowedValuesCheck(
            a.name,
            a.allowed,
            f"{op_type}: attribute '{a.name}' must be one of {message_values(a.allowed)}",
        )
        for a in attrs.values()
        if a.allowed is not None
    ) + tuple(
        RangeCheck(a.name, a.minimum, a.maximum, _range_message(op_type, a))
        for a in attrs.values()
        if a.minimum is not None or a.maximum is not None
    )
    return ShapeRule(
        attribute_checks,
        tuple(rank_checks),
        tuple(dim_checks),
        tuple(shape_checks),
        tuple(axis_checks),
        tuple(expr_checks),
        tuple(shapes),
    )


def _expression_checks(op_type: str, output: str, expr: DimExpr) -> list[ExprCheck]:
    """Every divisor must be positive, and the dim itself must not be negative."""
    checks = []
    for sub in expr.walk():
        if sub.op == "//" and not (sub.right.kind == "literal" and sub.right.value > 0):
            checks.append(
                ExprCheck(
                    sub.right,
                    True,
                    f"{op_type}: the divisor {sub.right.text} in the shape of "
                    f"output '{output}' must be positive",
                )
            )
    if any(sub.op == "-" for sub in expr.walk()) or expr.attrs:  # an attribute may be negative
        checks.append(
            ExprCheck(
                expr,
                False,
                f"{op_type}: output '{output}' would have a negative dim {expr.text}",
            )
        )
    return checks


def _shape_function_part(
    op_type: str,
    output: TensorParam,
    by_name: dict[str, tuple[int, TensorParam]],
    attrs: dict[str, Attribute],
    where: Node,
) -> ShapePart:
    kind, args = output.shape_function
    if kind == "broadcast":
        if len(args) < 2 or any(a not in by_name for a in args) or len(set(args)) != len(args):
            raise where.error(
                f"output '{output.name}': broadcast(...) takes two or more distinct input names "
                f"(inputs: {sorted(by_name)})"
            )
        return ShapePart(
            "broadcast",
            operands=tuple((name, by_name[name][0]) for name in args),
            message=f"{op_type}: inputs {', '.join(repr(a) for a in args)} cannot be broadcast "
            "together, got ",
        )
    if len(args) != 3 or args[0] not in by_name or by_name[args[0]][1].optional:
        raise where.error(
            f"output '{output.name}': expected {SHAPE_FUNCTIONS['reduce']} with X a required input"
        )

    def attribute_or_literal(text: str, types: tuple[AttrType, ...], what: str) -> DimExpr:
        if text in attrs and attrs[text].type in types:
            return DimExpr("attr", attr=text, text=f"'{text}'")
        try:
            value = int(ast.literal_eval(text))
        except ValueError:
            names = sorted(n for n, a in attrs.items() if a.type in types)
            raise where.error(
                f"output '{output.name}': {what} '{text}' must be a literal or an attribute of "
                f"type {'/'.join(t.value for t in types)} {names}"
            ) from None
        return DimExpr("literal", value=_in_int64(value, where), text=text)

    axis = attribute_or_literal(args[1], (AttrType.int,), "axis")
    keepdims = attribute_or_literal(args[2], (AttrType.bool, AttrType.int), "keepdims")
    return ShapePart("reduce", args[0], by_name[args[0]][0], axis=axis, keepdims=keepdims)


REFERENCE_GLOBALS = {"torch", "F", "math"}
PYTHON_BUILTINS = frozenset(dir(__import__("builtins")))


def _parse_reference(node: Node, names: set[str]) -> str:
    text = _str(node, "a Python expression").strip()
    try:
        tree = parse_expression(text)
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


def _parse_versions(node: Node) -> tuple[int, ...]:
    """`version: 2`, or every version of the op: `version: [1, 2]` (increasing)."""
    if not node.is_sequence:
        return (_version(node),)
    versions = tuple(_version(item) for item in _list(node))
    if not versions or list(versions) != sorted(set(versions)):
        raise node.error(f"expected increasing versions such as [1, 2], found {list(versions)}")
    return versions


def _parse_gradients(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attributes: tuple[Attribute, ...],
    constraints: tuple[TypeConstraint, ...],
) -> dict[str, str]:
    """input -> a PyTorch expression of its gradient, over the inputs, attributes, outputs and
    `grad_<output>` (the incoming gradient of each output)."""
    by_name = {t.name: t for t in inputs}
    names = set(by_name) | {a.name for a in attributes} | {o.name for o in outputs}
    names |= {f"grad_{o.name}" for o in outputs}
    result = {}
    for name, child in _mapping(node, set(by_name), set()).items():
        tensor = by_name[name]
        dtypes = (
            next((tc.dtypes for tc in constraints if tc.name == tensor.type_var), None)
            if tensor.type_var
            else (tensor.dtype,)
        )
        if dtypes is not None and DType.float64 not in dtypes:  # None: reported elsewhere
            raise child.error(
                f"input '{name}' has a gradient, so float64 must be among its dtypes "
                "(torch.autograd.gradcheck runs in float64)"
            )
        result[name] = _parse_reference(child, names)
    if not result:
        raise node.error("give the gradient of at least one input")
    return result


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
    try:
        found = path.is_file()
    except OSError as exc:  # is_file() raises for a name too long, for one
        raise fields["source"].error(f"kernel file: {exc.strerror}") from None
    if not found:
        raise fields["source"].error(f"kernel file '{relative}' not found beside the definition")
    return Kernel(path, None)


def _tensor_literal(node: Node) -> Any:
    def check(value, where: Node):
        if isinstance(value, list):
            for v in value:
                check(v, where)
        elif not isinstance(value, int | float):  # bools are ints: bool tensors
            raise where.error(
                f"expected a number, a boolean, or nested lists of them, found {value!r}"
            )
        elif isinstance(value, int):
            _in_int64(value, where)  # the widest integer dtype

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
        node, {"tolerances", "known", "random", "errors", "builtin_equivalents"}, set()
    )
    input_names = {t.name for t in inputs}
    output_names = {t.name for t in outputs}

    # Required only where an output is floating (integer and bool outputs compare exactly).
    tolerances: dict[DType, Tolerance] = {}
    tol_node = fields.get("tolerances")
    for name, child in (
        _mapping(tol_node, {d.value for d in DType}, set()).items() if tol_node else ()
    ):
        tf = _mapping(child, {"rtol", "atol"}, {"rtol", "atol"})
        tolerances[DType(name)] = Tolerance(_finite(tf["rtol"]), _finite(tf["atol"]))
    missing = [d.value for d in dtypes if d not in tolerances]
    if missing:
        errors.add(
            (tol_node or node).error(
                f"declare tolerances for every floating output dtype; missing {missing}"
            )
        )

    optional = [t.name for t in inputs if t.optional]

    def tensor_map(n: Node, names: set[str]) -> dict[str, Node]:
        """Every required input (or output) by name; optional inputs may be left out (absent),
        but only trailing ones, as ONNX omits them."""
        values = _mapping(n, names, names - set(optional)) if names else {}
        given = [name in values for name in optional]
        if names is input_names and given != sorted(given, reverse=True):
            raise n.error(
                f"optional inputs {optional} may be left out only from the end (ONNX omits "
                "trailing optional inputs)"
            )
        return values

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
            shape_nodes = tensor_map(rf["shapes"], input_names)
            for name, shape_node in shape_nodes.items():
                dims = []
                for d in _list(shape_node):
                    if isinstance(d.value, int) and not isinstance(d.value, bool):
                        dims.append(_int(d, minimum=0))
                    elif isinstance(d.value, str) and IDENTIFIER.fullmatch(d.value):
                        dims.append(d.value)
                    else:
                        raise d.error(f"expected a size or a dynamic dim name, found {_kind(d)}")
                shapes[name] = tuple(dims)
            dynamic = {}
            if "dynamic" in rf:
                for sym, sizes in _mapping(rf["dynamic"], set(_symbols(shapes)), set()).items():
                    values = tuple(_dynamic_size(s) for s in _list(sizes))
                    if len(values) < 2:
                        raise sizes.error("give at least two sizes so the dynamic dim is exercised")
                    dynamic[sym] = values
                if len({len(sizes) for sizes in dynamic.values()}) > 1:
                    counts = {sym: len(sizes) for sym, sizes in dynamic.items()}
                    raise rf["dynamic"].error(
                        "every dynamic dim of a case needs the same number of sizes (the tests "
                        f"run the first sizes together, then the second, ...); found {counts}"
                    )
            unbound = set(_symbols(shapes)) - dynamic.keys()
            if unbound:
                raise item.error(f"dynamic dims {sorted(unbound)} need sizes under 'dynamic'")
            for name, dims in shapes.items():
                _check_test_tensor_size(shape_nodes[name], f"input '{name}'", dims, dynamic)
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
                shapes = {}
                for name, s in tensor_map(ef["shapes"], input_names).items():
                    shapes[name] = tuple(_int(d, minimum=0) for d in _list(s))
                    _check_test_tensor_size(s, f"input '{name}'", shapes[name], {})
            message = _str(ef["message"])
            return ErrorCase(shapes, values, message, _parse_case_attributes(ef, attrs, item))

        case = errors.attempt(parse_error)
        if case:
            error_cases.append(case)

    builtins = []
    for item in _list(fields["builtin_equivalents"]) if "builtin_equivalents" in fields else []:
        bf = _mapping(item, {"domain", "op", "version"}, {"domain", "op", "version"})
        builtins.append(
            BuiltinEquivalent(_str(bf["domain"]), _str(bf["op"]), _version(bf["version"]))
        )
    return Tests(tolerances, tuple(known), tuple(random), tuple(error_cases), tuple(builtins))


# A generated test allocates every random (or error) case's tensors, in several dtypes, copies
# and runtimes: 2**20 elements (8 MiB in float64) per tensor at every size is plenty to test
# with, and stops a typo such as 10**12 from allocating terabytes.
MAX_TEST_ELEMENTS = 2**20


def _dynamic_size(node: Node) -> int:
    size = _int(node)
    if size < 2:
        raise node.error(
            f"a dynamic dim's sizes must be >= 2, found {size}: the exporters (torch.export) "
            "specialise sizes 0 and 1 to constants, so the dim would not stay dynamic"
        )
    return size


def _check_test_tensor_size(
    node: Node, what: str, dims: tuple[int | str, ...], dynamic: dict[str, tuple[int, ...]]
) -> None:
    """A test tensor must stay below MAX_TEST_ELEMENTS at each of the case's sizes."""
    for index in range(max((len(sizes) for sizes in dynamic.values()), default=1)):
        shape = [d if isinstance(d, int) else dynamic[d][index] for d in dims]
        if math.prod(shape) > MAX_TEST_ELEMENTS:
            raise node.error(
                f"{what} would have {math.prod(shape)} elements (shape {shape}); a generated "
                f"test tensor may have at most {MAX_TEST_ELEMENTS} (2**20)"
            )


def _symbols(shapes: dict[str, tuple[int | str, ...]]) -> list[str]:
    return [d for dims in shapes.values() for d in dims if isinstance(d, str)]


# --------------------------------------------------------------------------- ONNX nodes

NODE = re.compile(
    r"\A\s*(?P<outputs>[^=]+?)\s*=\s*(?:(?P<domain>[A-Za-z0-9_.]+)::)?(?P<op>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*(?:<(?P<attributes>.*)>)?\s*\((?P<inputs>[^()]*)\)\s*\Z"
)
NODE_SYNTAX = "'Y = Op(X)', 'Y = domain::Op<attr=value, other=@attribute>(X, Z)'"


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _literal_attr_type(value: Any) -> AttrType | None:
    if isinstance(value, DType):
        return AttrType.int
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return AttrType.int
    if isinstance(value, float):
        return AttrType.float
    if isinstance(value, str):
        return AttrType.string
    if isinstance(value, list) and value:
        kinds = {_literal_attr_type(v) for v in value}
        if kinds <= {AttrType.int, AttrType.float} and AttrType.float in kinds:
            return AttrType.floats
        if kinds == {AttrType.int}:
            return AttrType.ints
        if kinds == {AttrType.string}:
            return AttrType.strings
    return None


def _parse_node_attribute(text: str, item: Node, attrs: dict[str, Attribute]) -> NodeAttribute:
    name, sep, value_text = text.partition("=")
    name, value_text = name.strip(), value_text.strip()
    if not sep or not IDENTIFIER.fullmatch(name) or not value_text:
        raise item.error(f"node attribute '{text}' is not 'name=value'")
    if value_text.startswith("@"):
        ref = value_text[1:]
        if ref not in attrs:
            raise item.error(
                f"'@{ref}' names no attribute of this definition; declared: {sorted(attrs)}"
            )
        return NodeAttribute(name, attrs[ref].type, AttrRef(ref))
    if IDENTIFIER.fullmatch(value_text):
        try:
            return NodeAttribute(name, AttrType.int, DType(value_text))
        except ValueError:
            raise item.error(
                f"node attribute {name}={value_text}: a bare word must be a dtype name "
                f"{[d.value for d in DType]}; quote a string, write '@{value_text}' for an attribute"
            ) from None
    try:
        value = ast.literal_eval(parse_expression(value_text))
    except (ValueError, SyntaxError):
        raise item.error(
            f"node attribute {name}={value_text}: expected a number, a quoted string, a list, "
            "a dtype name or @attribute"
        ) from None
    kind = _literal_attr_type(value)
    if kind is None:
        raise item.error(
            f"node attribute {name}={value_text}: expected a number, a string or a non-empty "
            "list of one of them"
        )
    for scalar in value if isinstance(value, list) else [value]:
        if isinstance(scalar, int):
            _in_int64(scalar, item)
        if isinstance(scalar, float) or kind is AttrType.floats:
            _in_float32(float(scalar), item)
    if isinstance(value, list):
        value = tuple(float(v) if kind is AttrType.floats else v for v in value)
    return NodeAttribute(name, kind, value)


def _parse_nodes(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> tuple[OnnxNode, ...]:
    """Parses a node list; every name must be an input or an earlier node's output, and the
    nodes must produce every output."""
    items = _list(node)
    if not items:
        raise node.error("give at least one node")
    available = {t.name for t in inputs}
    result = []
    for item in items:
        text = _str(item, f"a node such as {NODE_SYNTAX}")
        if len(text) > MAX_EXPRESSION_LENGTH:  # NODE's backtracking is quadratic in the length
            raise item.error(
                f"a node of {len(text)} characters; the limit is {MAX_EXPRESSION_LENGTH}"
            )
        match = NODE.fullmatch(text)
        if not match:
            raise item.error(f"'{text}' is not a node; expected {NODE_SYNTAX}")
        outs = tuple(o.strip() for o in match.group("outputs").split(","))
        for name in outs:
            if not IDENTIFIER.fullmatch(name):
                raise item.error(f"node output '{name}' is not an identifier")
            if name in available:
                raise item.error(f"'{name}' is already defined; each name is assigned once")
        domain = match.group("domain") or ""
        if domain and not DOMAIN.fullmatch(domain):
            raise item.error(f"'{domain}' is not a dotted lower-case domain name")
        ins = tuple(i.strip() for i in _split_top_level(match.group("inputs")))
        for name in ins:
            if name not in available:
                raise item.error(
                    f"node input '{name}' is neither an input of the op nor an output of an "
                    f"earlier node (defined so far: {sorted(available)})"
                )
        attributes = tuple(
            _parse_node_attribute(part, item, attrs)
            for part in _split_top_level(match.group("attributes") or "")
        )
        names = [a.name for a in attributes]
        if len(set(names)) != len(names):
            raise item.error("a node attribute is given twice")
        available |= set(outs)
        result.append(OnnxNode(outs, domain, match.group("op"), ins, attributes, item.location))
    missing = [t.name for t in outputs if t.name not in available]
    if missing:
        raise node.error(f"the nodes never assign the op's output(s) {missing}")
    return tuple(result)


def _parse_function(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> Function:
    fields = _mapping(node, {"opset", "nodes"}, {"opset", "nodes"})
    opset = _version(fields["opset"])
    nodes = _parse_nodes(fields["nodes"], inputs, outputs, attrs)
    for item, parsed in zip(fields["nodes"].value, nodes, strict=True):
        if parsed.domain:
            raise item.error(
                f"a function body uses standard ONNX ops only; '{parsed.qualified}' has a domain"
            )
    return Function(opset, nodes)


def _parse_export(
    node: Node,
    inputs: tuple[TensorParam, ...],
    outputs: tuple[TensorParam, ...],
    attrs: dict[str, Attribute],
) -> tuple[ExportRule, ...]:
    rules = []
    seen_when: set[tuple] = set()
    for item in _list(node):
        fields = _mapping(item, {"when", "nodes"}, {"nodes"})
        when = []
        if "when" in fields:
            for name, value in _mapping(fields["when"], set(attrs), set()).items():
                when.append((name, _attr_value(value, attrs[name].type)))
        key = tuple(when)
        if rules and not rules[-1].when:
            raise item.error("unreachable: an earlier export rule has no 'when' and always applies")
        if key in seen_when:
            raise item.error("another export rule has the same 'when'")
        seen_when.add(key)
        rules.append(ExportRule(key, _parse_nodes(fields["nodes"], inputs, outputs, attrs)))
    if not rules:
        raise node.error("give at least one export rule")
    return tuple(rules)


def _default_export(
    op_type: str, domain: str, inputs, outputs, attributes, location: Location
) -> tuple[ExportRule, ...]:
    """One node of the op itself, every attribute passed through."""
    node = OnnxNode(
        tuple(t.name for t in outputs),
        domain,
        op_type,
        tuple(t.name for t in inputs),
        tuple(NodeAttribute(a.name, a.type, AttrRef(a.name)) for a in attributes),
        location,
    )
    return (ExportRule((), (node,)),)


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
    "gradients",
    "data_dependent_sizes",
    "reference_upcast",
    "kernel",
    "function",
    "provided_by",
    "export",
    "tests",
}
TOP_LEVEL_REQUIRED = {"inputs", "outputs", "tests"}
IMPLEMENTATIONS = ("kernel", "function", "provided_by")
PROVIDERS = ("onnxruntime",)


def parse_opdef(path: Path, display_name: str, definition_path: str | None = None) -> OpDef:
    """Parse and validate one definition file; raises DefinitionErrors listing every problem.
    Errors name the file `display_name` (for the terminal); generated files name it
    `definition_path` (relative to the project root; default: `display_name`)."""
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
    op_id = errors.attempt(_op_id, op_id_node)

    def get(key, fn, *args):
        return errors.attempt(fn, fields[key], *args) if key in fields else None

    op_type = get("op", _identifier, "op type")
    domain = get("domain", _str)
    if domain is not None and not DOMAIN.fullmatch(domain):
        errors.add(fields["domain"].error(f"'{domain}' is not a dotted lower-case domain name"))
    elif domain is not None and len(domain) > MAX_NAME_LENGTH:
        errors.add(fields["domain"].error(_too_long("a domain", domain)))
    versions = get("version", _parse_versions) or ()
    version = versions[-1] if versions else None
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
            errors.attempt(_parse_tensor, item, by_var, is_output, declared_vars, errors)
            for item in items or []
        ]
        return tuple(p for p in parsed if p)

    inputs = tensors("inputs", False)
    outputs = tensors("outputs", True)
    attributes: tuple[Attribute, ...] = ()
    if "attributes" in fields:
        items = errors.attempt(_list, fields["attributes"]) or []
        attributes = tuple(
            a for a in (errors.attempt(_parse_attribute, i, errors) for i in items) if a
        )

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
    for index, attr in enumerate(attributes):
        if attr.since_version is None:
            continue
        where = fields["attributes"].value[index]
        if "version" in fields and not versions:
            pass  # the version is bad: reported there
        elif attr.since_version not in versions[1:]:
            errors.add(
                where.error(
                    f"attribute '{attr.name}': since_version {attr.since_version} is not one of "
                    f"the op's later versions {list(versions[1:])} (see 'version')"
                )
            )
        elif attr.required:
            errors.add(
                where.error(
                    f"attribute '{attr.name}' was added in version {attr.since_version}, so it "
                    "needs a default (nodes of earlier versions do not have it)"
                )
            )
    if "inputs" in fields and not inputs and not errors.errors:
        errors.add(fields["inputs"].error("an op needs at least one input"))
    if "outputs" in fields and not outputs and not errors.errors:
        errors.add(fields["outputs"].error("an op needs at least one output"))
    _check_unique_names(fields, errors)
    for index, tensor in enumerate(inputs):
        if not tensor.optional and any(t.optional for t in inputs[:index]):
            errors.add(
                fields["inputs"]
                .value[index]
                .error(
                    f"required input '{tensor.name}' comes after an optional input; list optional "
                    "inputs last (ONNX omits trailing optional inputs, PyTorch defaults them)"
                )
            )
    input_vars = {t.type_var for t in inputs if t.type_var and not t.optional}
    for tc in constraints:
        if tc.name not in input_vars:
            errors.add(
                fields["type_constraints"].error(
                    f"type variable '{tc.name}' is not used by any required input, so it cannot "
                    "be bound"
                )
            )

    # What implements the op: a kernel, an ONNX function, the runtime itself, or nothing (an
    # export-only definition, which lowers a PyTorch op onto other ONNX ops).
    given = [key for key in IMPLEMENTATIONS if key in fields]
    if len(given) > 1:
        errors.add(root.error(f"give at most one of {list(IMPLEMENTATIONS)}; found {given}"))
    implementation = given[0] if len(given) == 1 else None
    onnx_keys = [key for key in ("op", "domain", "version") if key in fields]
    if implementation is not None:
        for key in sorted({"op", "domain", "version"} - set(onnx_keys)):
            errors.add(
                root.error(
                    f"missing required field '{key}' (the ONNX op this {implementation} defines)"
                )
            )
    elif onnx_keys:
        errors.add(
            fields[onnx_keys[0]].error(
                "an export-only definition (no 'kernel', 'function' or 'provided_by') defines no "
                f"ONNX op; remove {onnx_keys} or give an implementation"
            )
        )
    elif "torch" in fields and "export" not in fields:
        errors.add(
            root.error(
                "give an implementation ('kernel', 'function' or 'provided_by') or the "
                "'export' nodes that a PyTorch op lowers to"
            )
        )
    if len(versions) > 1 and implementation != "kernel":
        errors.add(
            fields["version"].error(
                "several versions are supported for ops with a kernel only (one kernel serves "
                "every version)"
            )
        )
    if "torch" not in fields and implementation in (None, "kernel"):
        errors.add(root.error("missing required field 'torch' (the PyTorch side of the op)"))
    if "export" in fields and "torch" not in fields:
        errors.add(fields["export"].error("'export' needs a PyTorch op ('torch') to export"))
    title = op_type or (torch_binding.qualified_name if torch_binding else op_id)

    data_dependent: tuple[str, ...] = ()
    if "data_dependent_sizes" in fields:
        items = get("data_dependent_sizes", _list) or []
        data_dependent = tuple(
            n for n in (errors.attempt(_identifier, i, "size symbol") for i in items) if n
        )
    shape_rule = None
    if inputs and outputs and "outputs" in fields:
        shape_rule = errors.attempt(
            _compile_shape_rule,
            title,
            inputs,
            outputs,
            {a.name: a for a in attributes},
            fields["inputs"],
            fields["outputs"],
            data_dependent,
        )
    if shape_rule is not None:
        unused = sorted(set(data_dependent) - set(shape_rule.data_dependent_sizes))
        if unused:
            errors.add(
                fields["data_dependent_sizes"].error(
                    f"{unused} appear in no output shape (a data-dependent size names a dim of "
                    "an output, e.g. shape: [M])"
                )
            )
    new_torch_op = torch_binding is not None and not torch_binding.is_override
    needs_output_shapes = new_torch_op or implementation in ("kernel", "provided_by")
    if shape_rule is not None and needs_output_shapes:
        ruled = {o.output for o in shape_rule.outputs}
        for index, output in enumerate(outputs):
            if output.name not in ruled:
                errors.add(
                    fields["outputs"]
                    .value[index]
                    .error(
                        "an output needs a shape rule ('shape: [...]' or 'same_shape_as: "
                        "<input>'); only a function's or an override's outputs may omit it"
                    )
                )

    attrs_by_name = {a.name: a for a in attributes}
    names = {t.name for t in inputs} | set(attrs_by_name)
    reference = get("reference", _parse_reference, names)
    if "reference" not in fields and not (torch_binding and torch_binding.is_override):
        errors.add(root.error("missing required field 'reference' (the parity tests' oracle)"))
    upcast = get("reference_upcast", _bool)
    gradients = {}
    if "gradients" in fields:
        gradients = (
            get("gradients", _parse_gradients, inputs, outputs, attributes, constraints) or {}
        )
        torch_unusable = torch_binding is None and "torch" not in fields  # else reported there
        if gradients and (torch_unusable or (torch_binding and not torch_binding.takes_gradients)):
            errors.add(
                fields["gradients"].error(
                    "gradients need a new PyTorch op (torch.name) registered with the "
                    "'library' or 'custom_op' api"
                )
            )
    kernel = get("kernel", _parse_kernel, path.parent)
    function = get("function", _parse_function, inputs, outputs, attrs_by_name)
    provided_by = get("provided_by", _str)
    if provided_by is not None and provided_by not in PROVIDERS:
        errors.add(
            fields["provided_by"].error(f"expected one of {list(PROVIDERS)}, found '{provided_by}'")
        )
    export: tuple[ExportRule, ...] = ()
    if "export" in fields:
        export = get("export", _parse_export, inputs, outputs, attrs_by_name) or ()
    elif torch_binding is not None and op_type is not None and domain is not None:
        export = _default_export(op_type, domain, inputs, outputs, attributes, root.location)
    # Outputs are compared with a tolerance per dtype: every floating dtype they can have.
    output_dtypes = {
        d
        for o in outputs
        for d in (by_var[o.type_var].dtypes if o.type_var in by_var else (o.dtype,))
        if d is not None
    }
    tested = tuple(d for d in DType if d in output_dtypes and d.is_floating)
    tests = (
        errors.attempt(
            _parse_tests,
            fields["tests"],
            inputs,
            outputs,
            attrs_by_name,
            tested,
            errors,
        )
        if "tests" in fields
        else None
    )
    errors.raise_if_any()
    if reference is None:  # an override: the overload itself is the oracle
        reference = _override_reference(torch_binding, inputs, attributes)
    op = OpDef(
        op_id=op_id,
        definition_path=definition_path or display_name,
        display_path=display_name,
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
        gradients=gradients,
        kernel=kernel,
        function=function,
        provided_by=provided_by,
        export=export,
        tests=tests,
        versions=versions,
        locations=_field_locations(fields),
    )
    # The emitters apply the shape rule to every random case: what it cannot apply to (a
    # divisor of 0) is an error here, before anything is rendered or written.
    for case, item in zip(tests.random, fields["tests"].value["random"].value, strict=True):
        errors.attempt(_check_random_case_outputs, op, case, item)
    errors.raise_if_any()
    return op


def _check_random_case_outputs(op: OpDef, case: RandomCase, node: Node) -> None:
    """The shape rule at each of a random case's sizes gives outputs of sane sizes."""
    for index in range(max((len(sizes) for sizes in case.dynamic.values()), default=1)):
        dims: dict[str, list[int | str]] = {
            name: [d if isinstance(d, int) else case.dynamic[d][index] for d in shape]
            for name, shape in case.shapes.items()
        }
        where = f"inputs of shapes {dims}" + (
            f", attributes {case.attributes}" * bool(case.attributes)
        )
        try:
            outputs = evaluate_output_shapes(op, dims, case.attributes)
        except ZeroDivisionError:
            raise node.error(f"the shape rule divides by zero for {where}") from None
        except LookupError:
            raise node.error(
                f"the shape rule cannot be applied to {where}: do the shapes match the inputs' "
                "shape patterns?"
            ) from None
        for name, shape in outputs.items():
            sizes = [d for d in shape if isinstance(d, int)]  # "?": a data-dependent size
            if any(d < 0 for d in sizes):
                raise node.error(f"output '{name}' would have a negative dim {shape} for {where}")
            if math.prod(sizes) > MAX_TEST_ELEMENTS:
                raise node.error(
                    f"output '{name}' would have {math.prod(sizes)} elements (shape {shape}) for "
                    f"{where}; a generated test tensor may have at most {MAX_TEST_ELEMENTS} (2**20)"
                )


def _field_locations(fields: dict[str, Node]) -> dict[str, Location]:
    locations = {key: node.location for key, node in fields.items()}
    torch_node = fields.get("torch")
    if torch_node is not None and torch_node.is_mapping:
        for key, node in torch_node.value.items():
            locations[f"torch.{key}"] = node.location
    return locations


def _check_unique_names(fields: dict[str, Node], errors: ErrorCollector) -> None:
    """Inputs, outputs and attributes share one namespace: they are the arguments of the
    PyTorch op and of the C++ kernel. A repeated name is reported where it repeats."""
    seen: dict[str, Node] = {}
    if "type_constraints" in fields and fields["type_constraints"].is_mapping:
        # Type variables name the kernel's template parameters.
        for name, node in fields["type_constraints"].value.items():
            seen[name] = Node(name, node.key_location or node.location, node.path)
    for key in ("inputs", "outputs", "attributes"):
        items = fields[key].value if key in fields and fields[key].is_sequence else []
        for item in items:
            name = item.value.get("name") if item.is_mapping else None
            if name is None or not isinstance(name.value, str):
                continue
            first = seen.setdefault(name.value, name)
            if first is not name:
                errors.add(
                    name.error(
                        f"'{name.value}' is already the name of "
                        f"{_owner(first.path)} (line {first.location.line}); type variables, "
                        "inputs, outputs and attributes need distinct names (they all become "
                        "names in the kernel's C++ signature)"
                    )
                )


def _owner(path: str) -> str:
    """'inputs[0].name' -> 'inputs[0]'; 'type_constraints.T' -> 'type variable T'."""
    if path.startswith("type_constraints."):
        return f"type variable {path.split('.', 1)[1]}"
    return path.rsplit(".", 1)[0]


def _override_reference(
    binding: TorchBinding, inputs: tuple[TensorParam, ...], attributes: tuple[Attribute, ...]
) -> str:
    args = [t.name for t in inputs] + [f"{a.name}={a.name}" for a in attributes]
    return f"torch.ops.{binding.namespace}.{binding.name}.{binding.overload}({', '.join(args)})"


# Standard ONNX ops an export-only op's PyTorch implementation can run eagerly (spelled in
# api/python.py); other nodes of such an op must be ops of this project with a PyTorch op.
EAGER_STANDARD_OPS = frozenset({"Add", "Sub", "Mul", "Neg", "Identity", "Cast", "CastLike"})


def onnx_op_index(ops: list[OpDef]) -> dict[tuple[str, str], OpDef]:
    """(domain, op type) -> the definition of that ONNX op."""
    return {(op.domain, op.op_type): op for op in ops if op.defines_onnx_op}


def export_targets(op: OpDef, index: dict[tuple[str, str], OpDef]) -> list[OpDef]:
    """The project's ops that the export nodes call (validated by check_project)."""
    return [index[(n.domain, n.op_type)] for rule in op.export for n in rule.nodes if n.domain]


def check_project(ops: list[OpDef]) -> None:
    """Cross-definition rules: unique op ids, ONNX names and PyTorch names; every custom op a
    node calls is defined in the project."""
    errors = ErrorCollector()
    seen: dict[tuple, OpDef] = {}
    by_domain_ident: dict[str, OpDef] = {}
    for op in ops:
        # The op id names output files; some file systems ignore case, so compare without it.
        keys = [(("file name (ignoring case)", op.op_id.lower()), "<file name>")]
        if op.defines_onnx_op:
            keys.append(
                (("ONNX op (domain, type, version)", op.domain, op.op_type, op.version), "op")
            )
        if op.torch is not None:
            field_path = "torch.overrides" if op.torch.is_override else "torch.name"
            keys.append((("PyTorch overload", op.torch.overload_name), field_path))
        for key, field_path in keys:
            if key in seen:
                what = f"{key[0]} {', '.join(str(part) for part in key[1:])}"
                errors.add(
                    op.located(field_path, f"{what} is also defined by {seen[key].display_path}")
                )
            seen.setdefault(key, op)
        if op.domain is not None:
            # generated/domains/<ident>/ and libopgen_<ident>.so: two domains must not meet.
            other = by_domain_ident.setdefault(op.domain_ident, op)
            if other.domain != op.domain:
                errors.add(
                    op.located(
                        "domain",
                        f"'{op.domain}' and '{other.domain}' ({other.display_path}) both "
                        f"become '{op.domain_ident}' in file and library names; rename one",
                    )
                )
    index = onnx_op_index(ops)
    for op in ops:
        for node in op.nodes_used:
            target = index.get((node.domain, node.op_type))
            path = "function" if op.function and node in op.function.nodes else "export"
            if node.domain and target is None:
                defined = sorted(f"{d}::{t}" for d, t in index)
                errors.add(
                    DefinitionError(
                        node.location,
                        path,
                        f"'{node.qualified}' is not defined by any op definition of this project "
                        f"(defined: {defined}); standard ONNX ops take no domain",
                    )
                )
            elif target is op and path == "function":
                errors.add(DefinitionError(node.location, path, "a function cannot call itself"))
            elif op.new_torch_op and not op.defines_onnx_op:
                eager_ok = (
                    node.op_type in EAGER_STANDARD_OPS
                    if not node.domain
                    else target is not None and target.new_torch_op
                )
                if not eager_ok:
                    errors.add(
                        DefinitionError(
                            node.location,
                            path,
                            f"'{node.qualified}' cannot run in PyTorch: an export-only op runs its "
                            "nodes eagerly, so each must be an op of this project with a new "
                            f"PyTorch op, or one of {sorted(EAGER_STANDARD_OPS)}",
                        )
                    )
    errors.raise_if_any()


UNKNOWN_DIM = "?"


def evaluate_output_shapes(
    op: OpDef,
    input_dims: dict[str, list[int | str]],
    attributes: dict[str, Any],
    mark_data_dependent: bool = False,
) -> dict[str, list[int | str]]:
    """Applies the shape rule to concrete dims or named (symbolic) ones, as ONNX shape
    inference does: a named dim is copied, a dim computed from a named one is unknown ("?"),
    broadcasting follows ONNX's multidirectional rule. With `mark_data_dependent`, a
    data-dependent size is "?" followed by its symbol ("?M"). For tests and docs."""
    values = {a.name: a.default for a in op.attributes if not a.required} | dict(attributes)

    def attr(name: str) -> int:
        return int(values[name])

    def dim(ref: DimRef) -> int:
        value = input_dims[ref.input][ref.axis]
        if isinstance(value, str):
            raise LookupError(value)
        return value

    result = {}
    for out in op.shape_rule.outputs:
        dims: list[int | str] = []
        for part in out.parts:
            if part.kind == "slice":
                dims.extend(input_dims[part.input][part.start : part.stop])
            elif part.kind == "expr" and part.expr.kind == "dim":
                dims.append(input_dims[part.expr.ref.input][part.expr.ref.axis])
            elif part.kind == "expr" and part.expr.kind == "dynamic":
                dims.append(UNKNOWN_DIM + (part.expr.text if mark_data_dependent else ""))
            elif part.kind == "expr":
                try:
                    dims.append(part.expr.evaluate(dim, attr))
                except LookupError:
                    dims.append(UNKNOWN_DIM)
            elif part.kind == "broadcast":
                present = [input_dims[name] for name, _ in part.operands if name in input_dims]
                dims.extend(_broadcast_named(present))
            else:
                source = list(input_dims[part.input])
                axis = part.axis.evaluate(dim, attr) % len(source)
                keep = part.keepdims.evaluate(dim, attr)
                dims.extend(source[:axis] + ([1] if keep else []) + source[axis + 1 :])
        result[out.output] = dims
    return result


def _broadcast_named(shapes: list[list[int | str]]) -> list[int | str]:
    rank = max(len(shape) for shape in shapes)
    result: list[int | str] = []
    for i in range(rank):
        column = [shape[i - rank + len(shape)] for shape in shapes if i >= rank - len(shape)]
        known = {d for d in column if isinstance(d, int) and d != 1}
        named = {d for d in column if isinstance(d, str)}
        if known or not named:
            result.append(known.pop() if known else 1)
        else:
            result.append(
                named.pop() if len(named) == 1 and UNKNOWN_DIM not in named else UNKNOWN_DIM
            )
    return result
