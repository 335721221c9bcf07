"""Hypothesis strategies for interface-only op definitions (only `op`, `domain`, `version`,
`doc`, `type_constraints`, `inputs`, `outputs`, `attributes`), using every feature of ONNX's
interface: variadic and optional parameters, every element type, seq/map/optional/sparse
types nested up to 8 deep, differentiation categories, attributes of every type with and
without defaults, keyword names and hostile docs.

Each drawn op is a spec (plain dataclasses) from which both the definition text and the
SchemaRecord that its generated `onnx_schema.SCHEMA` must have are built, independently of
opgen's parser. `broken_ops` breaks specs in ways that must be definition errors, each with
the field the error must name.

They also draw what hit the generator bugs the test found (KNOWN_BUG_ERRORS in
tests/test_interface_fuzz.py has a minimal reproducer of each; all are fixed).
"""

from __future__ import annotations

import json
import keyword
import struct
from dataclasses import dataclass, field, replace
from typing import Any

import yaml
from hypothesis import strategies as st
from random_opdefs import NEAR_MISSES, TEXT

from generator.importer import AttributeRecord, ConstraintRecord, ParamRecord, SchemaRecord
from generator.model.names import ONNXSCRIPT_OPSET_ATTRIBUTES, is_reserved
from generator.parse.read import op_id_problem

# Every element type a definition may name (docs/opdef-format.md, "type_constraints"), and how
# ONNX's type strings name it (ONNX's float and double are float32 and float64 here).
DTYPES = (
    "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool uint16 uint32 uint64 "
    "complex64 complex128 string float8e4m3fn float8e4m3fnuz float8e5m2 float8e5m2fnuz "
    "float8e8m0 uint4 int4 float4e2m1 uint2 int2 float6e2m3 float6e3m2"
).split()
ONNX_DTYPE = {d: {"float32": "float", "float64": "double"}.get(d, d) for d in DTYPES}
# onnx.proto, TypeProto.Map.key_type: "MUST refer to an integral type ([U]INT{8|16|32|64}) or
# STRING".
MAP_KEYS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "string")
# Not dtypes (nor type variables' names: those would make them mean the variable).
BAD_DTYPES = ["float65", "flaot32", "float", "double", "int128", "Float32", "tensor", "f32"]
MAX_DEPTH = 8  # seq/optional/map wrappers around a tensor (docs: "nesting deeper than 8")
INT32_MAX = 2**31 - 1
INT64 = st.integers(-(2**63), 2**63 - 1)
FLOAT32_MAX = 3.4028234663852886e38
VALUE_ATTR_TYPES = ("bool", "int", "float", "string", "ints", "floats", "strings")
OTHER_ATTR_TYPES = (
    "tensor tensors sparse_tensor sparse_tensors graph graphs type_proto type_protos".split()
)


def float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


# --------------------------------------------------------------------------- types
# A type is a JSON-able list: ["tensor", dtype], ["sparse", dtype], ["seq", type],
# ["optional", type], ["map", key dtype, type].


def depth(t: list) -> int:
    """The wrappers around the innermost tensor (opgen allows MAX_DEPTH)."""
    if t[0] in ("tensor", "sparse"):
        return 0
    return 1 + depth(t[-1])


def onnx_spelling(t: list) -> str:
    """As ONNX's own schemas spell the type (ai.onnx.ml's `seq(map(string, float))`: a map's
    tensor value by its element type alone)."""
    match t:
        case ["tensor", dtype]:
            return f"tensor({ONNX_DTYPE[dtype]})"
        case ["sparse", dtype]:
            return f"sparse_tensor({ONNX_DTYPE[dtype]})"
        case ["map", key, ["tensor", dtype]]:
            return f"map({ONNX_DTYPE[key]}, {ONNX_DTYPE[dtype]})"
        case ["map", key, value]:
            return f"map({ONNX_DTYPE[key]}, {onnx_spelling(value)})"
        case [kind, inner]:
            return f"{kind}({onnx_spelling(inner)})"
    raise AssertionError(t)


def spelled(t: list) -> st.SearchStrategy[str]:
    """The type as a definition spells it, with spaces between tokens where bits of a drawn
    number are set."""
    return st.integers(0, 2**32 - 1).map(lambda mask: _spelled(t, iter(f"{mask:032b}" * 8)))


def _spelled(t: list, bits) -> str:
    def space() -> str:
        return " " if next(bits) == "1" else ""

    match t:
        case ["tensor", dtype]:
            return dtype
        case ["sparse", dtype]:
            return f"sparse_tensor({space()}{dtype}{space()})"
        case ["map", key, value]:
            return f"map({space()}{key}{space()},{space()}{_spelled(value, bits)}{space()})"
        case [kind, inner]:
            return f"{kind}({space()}{_spelled(inner, bits)}{space()})"
    raise AssertionError(t)


def plain(t: list) -> str:
    """The type as a definition spells it, without spaces."""
    match t:
        case ["tensor", dtype]:
            return dtype
        case ["sparse", dtype]:
            return f"sparse_tensor({dtype})"
        case ["map", key, value]:
            return f"map({key},{plain(value)})"
        case [kind, inner]:
            return f"{kind}({plain(inner)})"
    raise AssertionError(t)


def _leaf() -> st.SearchStrategy[list]:
    dtypes = st.sampled_from(DTYPES)
    return st.one_of(
        dtypes.map(lambda d: ["tensor", d]),
        dtypes.map(lambda d: ["tensor", d]),
        dtypes.map(lambda d: ["sparse", d]),
    )


def value_types(max_depth: int = MAX_DEPTH) -> st.SearchStrategy[list]:
    """Any type nesting at most `max_depth` wrappers, mostly shallow."""
    keys = st.sampled_from(MAP_KEYS)

    @st.composite
    def nested(draw, room: int) -> list:
        if room == 0 or draw(st.integers(0, 9)) < 6:
            return draw(_leaf())
        kind = draw(st.sampled_from(["seq", "optional", "map"]))
        inner = draw(nested(room - 1))
        return ["map", draw(keys), inner] if kind == "map" else [kind, inner]

    @st.composite
    def deep(draw) -> list:  # a chain of exactly max_depth wrappers, now and then
        t = draw(_leaf())
        for _ in range(max_depth):
            kind = draw(st.sampled_from(["seq", "optional", "map"]))
            t = ["map", draw(keys), t] if kind == "map" else [kind, t]
        return t

    return st.one_of(nested(max_depth), nested(max_depth), nested(max_depth), deep())


# --------------------------------------------------------------------------- names

# Python's keywords (soft ones too), C++'s, names the generated schema module and the generated
# code use, and locals the generated code derives from a user's name (`X_shape`, `attr_X`):
# an interface-only op's names are only ever spelled as strings, so all of them must work.
HOSTILE_NAMES = sorted(
    set(keyword.kwlist)
    | set(keyword.softkwlist)
    | {"class", "global", "new", "delete", "template", "this", "auto", "register", "int"}
    | {"std", "ctx", "attrs", "torch", "np", "onnx", "op", "g", "shape", "dtype", "module"}
    | {"_Schema", "_schema", "schema", "SCHEMA", "SCHEMAS", "VERSIONS", "ATTRIBUTES"}
    | {"register_schema", "_registered", "_support", "_infer", "version", "since", "attribute"}
    | {"FUNCTION_TEXT", "function_proto", "onnx_schema", "inputs", "outputs", "type_constraints"}
    | {"yes", "no", "on", "off", "null", "NaN", "inf", "y", "n"}  # YAML 1.1 reads some as values
    | {"__init__", "__name__", "__", "seq", "map", "optional", "sparse_tensor", "tensor_type"}
    | {name for name in NEAR_MISSES if name.isidentifier()}
)
DERIVED = ["{}_shape", "{}_present", "attr_{}", "{}_type", "{}_dims", "grad_{}", "{}_value"]
_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
SHORT_IDENTIFIERS = st.builds(
    str.__add__, st.sampled_from(_FIRST), st.text(_FIRST + "0123456789", max_size=10)
)
IDENTIFIERS = st.one_of(
    st.sampled_from(HOSTILE_NAMES),
    SHORT_IDENTIFIERS,
    st.builds(lambda base, size: (base * 140)[:size], SHORT_IDENTIFIERS, st.integers(100, 140)),
)


@st.composite
def names(draw, count: int, avoid: frozenset[str] = frozenset()) -> list[str]:
    """`count` distinct names, some of them another's generated local (`X` and `X_shape`)."""
    found = draw(
        st.lists(
            IDENTIFIERS.filter(lambda name: name not in avoid),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    for index in range(1, count):
        if draw(st.integers(0, 3)) == 0:
            other = found[draw(st.integers(0, index - 1))]
            local = draw(st.sampled_from(DERIVED)).format(other)
            if local not in found and local not in avoid:
                found[index] = local
    return found


DOCS = st.one_of(
    st.none(),
    TEXT,
    st.sampled_from(['"""', "'''", "\\", 'a """ b \\ c', 'é\n\t"""\\u0041', "\r\n  x  \n"]),
)


# --------------------------------------------------------------------------- the spec


@dataclass
class Constraint:
    name: str
    types: list[list]
    spellings: list[str]
    doc: str | None
    short_form: bool  # `T: [float32, ...]`

    def definition(self) -> Any:
        if self.short_form:
            return list(self.spellings)
        return {"types": list(self.spellings), **({} if self.doc is None else {"doc": self.doc})}


@dataclass
class Param:
    name: str
    type_var: str | None
    type: list | None  # a concrete type (None with a type variable)
    spelling: str  # what `type:` says
    option: str  # single | optional | variadic
    min_arity: int = 1
    homogeneous: bool = True
    arity_fields: dict = field(default_factory=dict)  # optional / variadic as written
    differentiable: bool | None = None
    doc: str | None = None

    def definition(self) -> dict:
        out: dict = {"name": self.name, "type": self.spelling, **self.arity_fields}
        if self.differentiable is not None:
            out["differentiable"] = self.differentiable
        if self.doc is not None:
            out["doc"] = self.doc
        return out

    def record(self) -> ParamRecord:
        return ParamRecord(
            name=self.name,
            type_str=self.type_var if self.type_var is not None else onnx_spelling(self.type),
            option=self.option,
            homogeneous=self.homogeneous,
            min_arity=self.min_arity,
            differentiation={None: "unknown", True: "differentiable"}.get(
                self.differentiable, "non_differentiable"
            ),
            doc=self.doc or "",
        )


@dataclass
class Attr:
    name: str
    type: str
    has_default: bool
    default: Any = None  # as written (a list for list types)
    required_field: bool | None = None  # `required:` as written (None: left out)
    doc: str | None = None
    extra: dict = field(default_factory=dict)  # other fields (to break the definition)

    def definition(self) -> dict:
        out: dict = {"name": self.name, "type": self.type}
        if self.has_default:
            out["default"] = self.default
        if self.required_field is not None:
            out["required"] = self.required_field
        if self.doc is not None:
            out["doc"] = self.doc
        return {**out, **self.extra}

    def record(self) -> AttributeRecord:
        default: Any = None
        if self.has_default:
            if self.type == "bool":
                default = int(self.default)  # ONNX has no bool attributes: an INT of 0 or 1
            elif self.type == "float":
                default = float32(self.default)
            elif self.type == "floats":
                default = tuple(float32(v) for v in self.default)
            elif self.type in ("ints", "strings"):
                default = tuple(self.default)
            else:
                default = self.default
        return AttributeRecord(
            name=self.name,
            type="int" if self.type == "bool" else self.type,
            required=not self.has_default and self.required_field is not False,
            default=default,
            has_default=self.has_default,
            doc=self.doc or "",
        )


@dataclass
class Op:
    stem: str
    op: str
    domain: str
    version: int
    doc: str | None
    constraints: list[Constraint]
    inputs: list[Param]
    outputs: list[Param]
    attributes: list[Attr]
    style: str  # "block", "flow", "mixed" (YAML) or "json"
    ext: str  # ".yaml" or ".yml"

    def __repr__(self) -> str:  # failures show the texts; a whole spec is tens of kB
        return f"Op({self.file_name!r})"

    @property
    def file_name(self) -> str:
        return self.stem + self.ext

    def definition(self) -> dict:
        out: dict = {"op": self.op, "domain": self.domain, "version": self.version}
        if self.doc is not None:
            out["doc"] = self.doc
        if self.constraints:
            out["type_constraints"] = {c.name: c.definition() for c in self.constraints}
        out["inputs"] = [p.definition() for p in self.inputs]
        out["outputs"] = [p.definition() for p in self.outputs]
        if self.attributes:
            out["attributes"] = [a.definition() for a in self.attributes]
        return out

    def record(self) -> SchemaRecord:
        """The record that the generated SCHEMA must give (importer.record_from_onnx)."""
        return SchemaRecord(
            name=self.op,
            domain=self.domain,
            since_version=self.version,
            doc=(self.doc or "").strip(),  # opgen strips the op's doc (only that one)
            inputs=tuple(p.record() for p in self.inputs),
            outputs=tuple(p.record() for p in self.outputs),
            type_constraints=tuple(
                ConstraintRecord(c.name, tuple(onnx_spelling(t) for t in c.types), c.doc or "")
                for c in self.constraints
            ),
            attributes=tuple(sorted((a.record() for a in self.attributes), key=lambda a: a.name)),
            source="onnx",
        )

    def arity_bounds(self) -> dict[str, int]:
        """min/max input and output counts, as ONNX's OpSchema::Finalize derives them."""
        bounds = {}
        for what, params in (("input", self.inputs), ("output", self.outputs)):
            low = high = 0
            for p in params:
                if p.option == "single":
                    high += 1
                    low = high
                elif p.option == "optional":
                    high += 1
                else:
                    low, high = high + p.min_arity, INT32_MAX
            bounds[f"min_{what}"], bounds[f"max_{what}"] = low, high
        return bounds

    def text(self) -> str:
        return dump(self.definition(), self.style)


# --------------------------------------------------------------------------- writing


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data) -> bool:
        return True


def _json_string(text: str) -> str:
    """A JSON string that YAML reads back the same: every character a YAML file may not hold
    raw (controls, U+0085, U+2028/9, BOM, ...) as a \\u escape (astral characters stay raw:
    JSON's surrogate pairs would be two lone surrogates to YAML)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif (
            0x20 <= code <= 0x7E
            or 0xA0 <= code <= 0xD7FF
            or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
            or code >= 0x10000
        ) and code not in (0x2028, 0x2029):
            out.append(char)
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


def _json(value: Any, indent: int) -> str:
    pad = " " * indent
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)  # YAML 1.1 reads 1e-05 as a string: 1.0e-05 (as PyYAML writes)
        if "e" in text and "." not in text:
            text = text.replace("e", ".0e")
        return text
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_json(v, indent) for v in value) + "]"
    items = [f"{pad} {_json_string(k)}: {_json(v, indent + 1)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + f"\n{pad}}}"


def dump(definition: dict, style: str) -> str:
    """The definition as YAML text (block, flow or both) or as JSON (which YAML reads)."""
    if style == "json":
        text = _json(definition, 0) + "\n"
        assert json.loads(text) == definition
    else:
        flow = {"block": False, "flow": True, "mixed": None}[style]
        for allow_unicode in (True, False):
            text = yaml.dump(
                definition,
                Dumper=_PlainDumper,
                allow_unicode=allow_unicode,
                sort_keys=False,
                default_flow_style=flow,
                width=4096,
            )
            # PyYAML writes U+0085 (a YAML line break) raw into single-quoted flow scalars,
            # where reading folds it: then every character outside ASCII is escaped.
            if yaml.load(text, Loader=yaml.SafeLoader) == definition:
                break
    assert yaml.load(text, Loader=yaml.SafeLoader) == definition, text
    return text


# --------------------------------------------------------------------------- drawing ops

# Doubles, mostly not exactly a float32 (0.1, a float32 subnormal such as 1e-40); a value that
# float32 makes 0 is an error.
FLOATS = st.one_of(
    st.floats(-FLOAT32_MAX, FLOAT32_MAX, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, -0.0, 1e-40, 1e-45, 1.4e-45, 3.4028234e38, FLOAT32_MAX, 1 / 3, 1e-05]),
).filter(lambda v: v == 0 or float32(v) != 0)
VALUES = {
    "bool": st.booleans(),
    "int": INT64,
    "float": st.one_of(FLOATS, st.integers(-(2**70), 2**70)),  # an integer is a float too
    "string": TEXT,
}


def attribute_values(kind: str) -> st.SearchStrategy:
    if kind in VALUES:
        return VALUES[kind]
    return st.lists(VALUES[kind[:-1]], max_size=4)  # ints, floats, strings; [] too


@st.composite
def attributes(draw, name: str) -> Attr:
    kind = draw(st.sampled_from(VALUE_ATTR_TYPES + tuple(OTHER_ATTR_TYPES)))
    doc = draw(DOCS)
    if kind in VALUE_ATTR_TYPES and draw(st.booleans()):
        return Attr(
            name,
            kind,
            True,
            draw(attribute_values(kind)),
            draw(st.sampled_from([None, False])),
            doc,
        )
    return Attr(name, kind, False, None, draw(st.sampled_from([None, True, False])), doc)


@st.composite
def params(draw, names_: list[str], constraints: list[Constraint]) -> list[Param]:
    found = []
    for index, name in enumerate(names_):
        if constraints and draw(st.booleans()):
            constraint = draw(st.sampled_from(constraints))
            type_var, t, spelling = constraint.name, None, constraint.name
        else:
            t = draw(value_types())
            type_var, spelling = None, draw(spelled(t))
        last = index == len(names_) - 1
        option = draw(st.sampled_from(["single", "optional"] + ["variadic"] * last))
        param = Param(name, type_var, t, spelling, option)
        if option == "single":
            param.arity_fields = draw(
                st.sampled_from([{}, {}, {"optional": False}, {"variadic": False}])
            )
        elif option == "optional":
            param.arity_fields = draw(
                st.sampled_from([{"optional": True}, {"optional": True, "variadic": False}])
            )
        else:
            # ONNX adds the parameters before it to the min arity in a C++ int.
            room = INT32_MAX - index
            param.min_arity = draw(
                st.one_of(st.integers(0, 3), st.integers(0, 3), st.integers(0, room), st.just(room))
            )
            param.homogeneous = draw(st.booleans())
            spec: dict = {}
            if param.min_arity != 1 or draw(st.booleans()):
                spec["min"] = param.min_arity
            if not param.homogeneous or draw(st.booleans()):
                spec["homogeneous"] = param.homogeneous
            variadic: Any = spec
            if not spec:
                variadic = draw(st.sampled_from([True, {}]))
            param.arity_fields = {"variadic": variadic}
            if draw(st.integers(0, 3)) == 0:
                param.arity_fields = {"optional": False, **param.arity_fields}
        param.differentiable = draw(st.sampled_from([None, True, False]))
        param.doc = draw(DOCS)
        found.append(param)
    return found


@st.composite
def ops(draw, stem: str) -> Op:
    n_vars = draw(st.integers(0, 3))
    n_inputs = draw(st.integers(0, 5))
    n_outputs = draw(st.integers(1, 4))
    # Type variables, inputs and outputs share one namespace; a type variable named like a
    # dtype would make that dtype mean the variable.
    var_names = draw(names(n_vars, frozenset(DTYPES + BAD_DTYPES)))
    # In ONNX (so in an interface-only op) inputs, outputs and attributes each have names of
    # their own: an output may be named like an input.
    input_names = draw(names(n_inputs, frozenset(var_names)))
    output_names = draw(names(n_outputs, frozenset(var_names)))
    if input_names and draw(st.booleans()):
        shared = draw(st.sampled_from(input_names))
        if shared not in output_names:
            output_names[draw(st.integers(0, n_outputs - 1))] = shared
    param_names = input_names + output_names
    constraints = []
    for name in var_names:
        types = draw(st.lists(value_types(), min_size=1, max_size=4, unique_by=onnx_spelling))
        constraints.append(
            Constraint(
                name,
                types,
                [draw(spelled(t)) for t in types],
                draw(DOCS),
                short_form=draw(st.booleans()),
            )
        )
        if constraints[-1].short_form:
            constraints[-1].doc = None
    inputs = draw(params(param_names[:n_inputs], constraints))
    outputs = draw(params(param_names[n_inputs:], constraints))
    # Attributes may repeat a parameter's name.
    # A type variable's name is its own in opgen (it names the kernel's template parameter).
    attr_names = draw(names(draw(st.integers(0, 6)), frozenset(var_names)))
    if param_names and attr_names and draw(st.booleans()):
        attr_names[0] = draw(st.sampled_from(param_names))
        attr_names = list(dict.fromkeys(attr_names))
    op_type = draw(
        st.one_of(
            st.from_regex(r"[A-Z][A-Za-z0-9_]{0,15}", fullmatch=True),
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
        ).filter(
            # onnxscript's Opset would find its own attribute first (generator/parse/op.py)
            lambda name: not is_reserved(name)
            and name[0] != "_"
            and name not in ONNXSCRIPT_OPSET_ATTRIBUTES
        )
    )
    return Op(
        stem=stem,
        op=op_type,
        domain=draw(st.from_regex(r"fz(\.[a-z][a-z0-9]{0,3}){1,2}", fullmatch=True)),
        version=draw(st.one_of(st.integers(1, 30), st.just(INT32_MAX))),
        doc=draw(DOCS),
        constraints=constraints,
        inputs=inputs,
        outputs=outputs,
        attributes=[draw(attributes(name)) for name in attr_names],
        style=draw(st.sampled_from(["block", "flow", "mixed", "json"])),
        ext=draw(st.sampled_from([".yaml", ".yaml", ".yml"])),
    )


@st.composite
def batches(draw, min_size: int, max_size: int) -> list[Op]:
    """Ops for one project: distinct file names and distinct ONNX ops."""
    count = draw(st.integers(min_size, max_size))
    found: list[Op] = []
    seen: set[tuple[str, str]] = set()
    for index in range(count):
        suffix = draw(
            st.from_regex(r"[a-z0-9_]{0,12}", fullmatch=True).filter(
                lambda s, index=index: op_id_problem(f"i{index}_{s}") is None  # no '__'
            )
        )
        op = draw(ops(f"i{index}_{suffix}"))
        if (op.domain, op.op) in seen:
            op.op += f"_{index}"
        seen.add((op.domain, op.op))
        found.append(op)
    return found


# --------------------------------------------------------------------------- one-node models


@st.composite
def node_plan(draw, op: Op) -> dict:
    """A node of the op for a one-node model: the type of each value it passes (None: an
    absent optional input, ""), binding each type variable once, and its attributes."""
    bound: dict[str, list] = {}
    by_name = {c.name: c for c in op.constraints}

    def type_of(p: Param, fresh: bool = False) -> list:
        if p.type_var is None:
            return p.type
        # A heterogeneous variadic value: any type the variable allows. (Not for an output
        # whose variable is bound: ONNX's type check gives every output without a type its
        # variable's binding, heterogeneous or not, and the declared type must agree.)
        if fresh and not (p in op.outputs and p.type_var in bound):
            return draw(st.sampled_from(by_name[p.type_var].types))
        if p.type_var not in bound:
            bound[p.type_var] = draw(st.sampled_from(by_name[p.type_var].types))
        return bound[p.type_var]

    def values(params_: list[Param], some: bool = False) -> list:
        """`some`: at least one value (ONNX refuses a node without inputs and outputs)."""
        found: list = []
        for p in params_:
            if p.option == "single":
                found.append(type_of(p))
            elif p.option == "optional":
                found.append(type_of(p) if some or draw(st.booleans()) else None)
            else:
                count = max(p.min_arity + draw(st.integers(0, 2)), int(some))
                found += [type_of(p, fresh=not p.homogeneous) for _ in range(count)]
        # Trailing absent values are left out, except before a variadic parameter: ONNX's
        # min count counts every parameter before it, so they are "" there.
        while found and found[-1] is None and not (params_ and params_[-1].option == "variadic"):
            found.pop()
        return found

    inputs = values(op.inputs)
    outputs = values(op.outputs, some=not inputs)
    attrs = {}
    for a in op.attributes:
        if a.record().required or draw(st.booleans()):
            value = draw(attribute_values(a.type)) if a.type in VALUE_ATTR_TYPES else None
            if a.type == "float" and isinstance(value, int):
                value = float(value)
            if a.type == "floats" and value is not None:
                value = [float(v) for v in value]
            attrs[a.name] = [a.type, value]
    return {"inputs": inputs, "outputs": outputs, "attributes": attrs}


def model_plannable(op: Op) -> bool:
    """A node can be built: its variadic parameters need few values."""
    return all(p.min_arity <= 4 for p in op.inputs + op.outputs)


# --------------------------------------------------------------------------- breaking them


@dataclass(frozen=True)
class Breakage:
    """A change that must be a definition error, at `field` (a prefix of it for `prefix`).
    `anchor`: text the error's line:column must point at (None: not checked)."""

    description: str
    field: str
    anchor: str | None = None
    prefix: bool = False
    known_bug: str | None = None  # the known bug it hits (KNOWN_BUG_ERRORS)


def _too_deep(draw, t: list) -> list:
    for _ in range(MAX_DEPTH + 1 - depth(t) + draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["seq", "optional", "map"]))
        t = ["map", draw(st.sampled_from(MAP_KEYS)), t] if kind == "map" else [kind, t]
    return t


def _wrap(draw, inner: str) -> str:
    """`inner` where a dtype goes, alone or inside a type constructor."""
    return draw(
        st.sampled_from(
            [
                inner,
                f"seq({inner})",
                f"optional({inner})",
                f"map(int64,{inner})",
                f"map({inner},int64)",
            ]
        )
    )


@st.composite
def _bad_type(draw) -> tuple[str, str, str | None]:
    """(kind, spelling, known bug or None) of a type that must be an error."""
    kinds = ["tensor()", "unknown dtype", "too deep", "map key", "space in a dtype"]
    kind = draw(st.sampled_from(kinds))
    if kind == "tensor()":
        inner = f"tensor({draw(st.sampled_from(DTYPES))})"
        return kind, draw(st.sampled_from([inner, f"seq({inner})", f"map(string,{inner})"])), None
    if kind == "unknown dtype":
        bad = draw(st.sampled_from(BAD_DTYPES))
        return kind, (bad if bad in ("tensor", "f32") else _wrap(draw, bad)), None
    if kind == "too deep":
        t = _too_deep(draw, draw(_leaf()))
        return kind, plain(t), None
    if kind == "map key":
        key = draw(st.sampled_from([d for d in DTYPES if d not in MAP_KEYS]))
        return kind, f"map({key},int64)", "map-key"
    dtype = draw(st.sampled_from([d for d in DTYPES if len(d) > 2]))
    cut = draw(st.integers(1, len(dtype) - 1))
    return kind, dtype[:cut] + " " + dtype[cut:], "space-in-dtype"


def _index(field_path: str) -> int:
    """3 of `attributes[3]`."""
    return int(field_path.split("[")[1].split("]")[0])


@st.composite
def broken_ops(draw, stem: str) -> tuple[Op, list[Breakage]]:
    """A valid op with one to three breakages, each in an item of its own (a variadic parameter
    before the last that is also optional is two problems).

    Among them what hit the bugs the test found: a map key ONNX forbids, a space inside a dtype
    name, a shape rule with a problem of its own (reported beside the refusal of a shape in an
    interface-only op), and an error that a check of the parsed items located by their index
    among the parsed ones (since_version, min arity) while an item before it failed to
    parse."""
    op = draw(ops(stem))
    breakages: list[Breakage] = []
    touched: set[tuple[str, int]] = set()  # items (list, index) broken already
    dropped: dict[str, list[int]] = {"inputs": [], "outputs": [], "attributes": []}
    # Errors located by an index among the parsed items: list -> breakage positions.
    by_parsed_index: dict[str, list[int]] = {"inputs": [], "outputs": [], "attributes": []}
    kinds = ["variadic not last", "optional and variadic", "bad type", "bad constraint type"]
    kinds += ["non-value default", "required with default", "since_version", "min arity overflow"]
    kinds += ["unchecked parameter field", "unchecked attribute field", "shape rule problem"]
    shape_rule_broken = False  # the shape rule compiles what it can: one breakage of it an op

    def shifted(what: str, index: int) -> bool:
        """An item before `index` fails to parse, so parsed index != written index."""
        return any(d < index for d in dropped[what])

    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("variadic not last", "optional and variadic", "bad type", "min arity overflow"):
            what = draw(st.sampled_from(["inputs", "outputs"]))
            items: list[Param] = getattr(op, what)
            free = [i for i in range(len(items)) if (what, i) not in touched]
            if kind == "variadic not last":
                free = [i for i in free if i < len(items) - 1]
            elif kind == "min arity overflow":
                free = [i for i in free if i == len(items) - 1 and i >= 1]
            if not free:
                continue
            index = draw(st.sampled_from(free))
            param = items[index]
            where = f"{what}[{index}]"
            last = index == len(items) - 1
            if kind == "variadic not last":
                param.arity_fields = {
                    "variadic": draw(st.sampled_from([True, {"min": 0}, {"homogeneous": False}]))
                }
                breakages.append(Breakage(kind, where))
            elif kind == "optional and variadic":
                param.arity_fields = {
                    "optional": True,
                    "variadic": draw(st.sampled_from([True, {"min": 0}, {"homogeneous": False}])),
                }
                breakages.append(Breakage(kind, f"{where}.variadic"))
                if not last:
                    breakages.append(Breakage("variadic not last", where))
            elif kind == "min arity overflow":
                # ONNX adds the parameters before it to the min arity in a C++ int.
                param.option = "variadic"
                param.min_arity = INT32_MAX - index + draw(st.integers(1, index))
                param.arity_fields = {"variadic": {"min": param.min_arity}}
                known = "misplaced-item-error" if shifted(what, index) else None
                breakages.append(Breakage(kind, where, known_bug=known))
                by_parsed_index[what].append(len(breakages) - 1)
            else:
                bad_kind, spelling, known = draw(_bad_type())
                param.spelling = spelling
                anchor = None if known else spelling
                breakages.append(
                    Breakage(f"{bad_kind} {spelling!r}", f"{where}.type", anchor, known_bug=known)
                )
                if not known:
                    dropped[what].append(index)
            touched.add((what, index))
        elif kind in ("unchecked parameter field", "shape rule problem"):
            # An interface-only op has no inference function to check a shape with.
            what = draw(st.sampled_from(["inputs", "outputs"]))
            items = getattr(op, what)
            free = [i for i in range(len(items)) if (what, i) not in touched]
            if not free or shape_rule_broken:
                continue
            index = draw(st.sampled_from(free))
            value: Any
            if kind == "shape rule problem":
                # The rule is compiled too, so its own problem is a second error (known bug):
                # a name no (earlier, required) input has, a symbol or `...` no input binds.
                field_name, value = draw(
                    st.sampled_from(
                        [("same_shape_as", "a_input")]
                        + [("shape", v) for v in (["..."], ["N", 2], "broadcast(a_input)")]
                        * (what == "outputs")
                    )
                )
                known = "shape-rule-compiled"
            else:
                field_name = "shape"
                inputs_ = [["N"], [2, "N"], ["..."], ["N", "N", "..."]]
                value = draw(st.sampled_from(inputs_ if what == "inputs" else [[2], [0, 3]]))
                known = None
            items[index].arity_fields = {**items[index].arity_fields, field_name: value}
            anchor = value if isinstance(value, str) else None
            breakages.append(
                Breakage(kind, f"{what}[{index}].{field_name}", anchor, known_bug=known)
            )
            touched.add((what, index))
            shape_rule_broken = True
        elif kind == "bad constraint type":
            free = [c for c in op.constraints if ("type_constraints", id(c)) not in touched]
            if not free:
                continue
            constraint = draw(st.sampled_from(free))
            position = draw(st.integers(0, len(constraint.spellings)))
            bad_kind, spelling, known = draw(_bad_type())
            constraint.spellings.insert(position, spelling)
            where = f"type_constraints.{constraint.name}"
            where += f"[{position}]" if constraint.short_form else f".types[{position}]"
            anchor = None if known else spelling
            breakages.append(Breakage(f"{bad_kind} {spelling!r}", where, anchor, known_bug=known))
            touched.add(("type_constraints", id(constraint)))
        else:
            free = [i for i in range(len(op.attributes)) if ("attributes", i) not in touched]
            if not free:
                continue
            index = draw(st.sampled_from(free))
            attr = op.attributes[index]
            where = f"attributes[{index}]"
            if kind == "unchecked attribute field":
                attr.type = draw(st.sampled_from(["int", "float", "string"]))
                attr.has_default = draw(st.booleans())
                attr.default = draw(attribute_values(attr.type)) if attr.has_default else None
                if attr.type == "float" and attr.has_default:
                    attr.default = float(attr.default)
                attr.required_field = None if attr.has_default else draw(st.booleans())
                # Values that fit the default: the range or the list is the one problem.
                sample = (
                    attr.default
                    if attr.has_default
                    else {"int": 0, "float": 0.5, "string": ""}[attr.type]
                )
                field_name = draw(
                    st.sampled_from(
                        {"int": ["allowed", "min", "max"], "float": ["min", "max"]}.get(
                            attr.type, ["allowed"]
                        )
                    )
                )
                attr.extra = {field_name: [sample] if field_name == "allowed" else sample}
                breakages.append(Breakage(kind, f"{where}.{field_name}"))
            elif kind == "non-value default":
                attr.type = draw(st.sampled_from(OTHER_ATTR_TYPES))
                attr.has_default, attr.required_field = True, None
                attr.default = draw(st.sampled_from([1, "x", 0.5, [1, 2], True]))
                anchor = None
                if not isinstance(attr.default, list):
                    anchor = str(attr.default)
                    anchor = anchor.lower() if isinstance(attr.default, bool) else anchor
                breakages.append(Breakage(f"{kind} ({attr.type})", f"{where}.default", anchor))
                dropped["attributes"].append(index)
            elif kind == "required with default":
                attr.type = draw(st.sampled_from(VALUE_ATTR_TYPES))
                attr.has_default, attr.required_field = True, True
                attr.default = draw(attribute_values(attr.type))
                breakages.append(Breakage(kind, f"{where}.required", "true"))
                dropped["attributes"].append(index)
            else:
                # An interface-only op has one version: no attribute can come later.
                attr.type, attr.has_default, attr.default = "int", True, 0
                attr.required_field = None
                attr.extra = {"since_version": draw(st.integers(2, 5))}
                breakages.append(Breakage(kind, where))
                by_parsed_index["attributes"].append(len(breakages) - 1)
            touched.add(("attributes", index))
    # An error located by its index among the parsed items lands on another item when one
    # before it fails to parse (known bug).
    for what, positions in by_parsed_index.items():
        for position in positions:
            if shifted(what, _index(breakages[position].field)):
                breakages[position] = replace(breakages[position], known_bug="misplaced-item-error")
    if not breakages:  # nothing applied: an unknown dtype for the first output
        bad = draw(st.sampled_from(BAD_DTYPES[:2]))
        op.outputs[0].spelling = bad
        op.outputs[0].arity_fields = {}
        breakages.append(Breakage(f"unknown dtype {bad!r}", "outputs[0].type", anchor=bad))
    return op, breakages


# --------------------------------------------------------------------------- every feature once

_FIXED_VALUES = {
    "bool": True,
    "int": 3,
    "float": 0.5,
    "string": "s",
    "ints": [1],
    "floats": [0.5],
    "strings": ["s"],
}


def fixed_plan(op: Op) -> dict:
    """A node of the op passing every parameter (optional ones too, variadic ones their min
    count + 1) and every attribute, with each type variable's first type."""
    by_name = {c.name: c for c in op.constraints}

    def type_of(p: Param) -> list:
        return p.type if p.type_var is None else by_name[p.type_var].types[0]

    def values(params_: list[Param]) -> list:
        found = []
        for p in params_:
            found += [type_of(p)] * ((p.min_arity + 1) if p.option == "variadic" else 1)
        return found

    return {
        "inputs": values(op.inputs),
        "outputs": values(op.outputs),
        "attributes": {a.name: [a.type, _FIXED_VALUES.get(a.type)] for a in op.attributes},
    }


def _deep(dtype: str) -> list:
    t: list = ["tensor", dtype]
    for kind in ["seq", "optional", "map", "seq", "map", "optional", "seq", "seq"]:
        t = ["map", "uint64", t] if kind == "map" else [kind, t]
    assert depth(t) == MAX_DEPTH
    return t


def _constraint(name: str, types: list[list], doc: str | None, short: bool = False) -> Constraint:
    return Constraint(name, types, [_spelled(t, iter("01" * 200)) for t in types], doc, short)


def _param(name: str, t: str | list, option: str = "single", **keywords: Any) -> Param:
    arity = {
        "single": {},
        "optional": {"optional": True},
        "variadic": {"variadic": True},
    }[option]
    if isinstance(t, str):
        return Param(name, t, None, t, option, arity_fields=arity, **keywords)
    return Param(
        name, None, t, _spelled(t, iter("1" * 200)), option, arity_fields=arity, **keywords
    )


def kitchen_sink() -> list[Op]:
    """Ops that use every feature at least once (the property test runs them every time)."""
    hostile_doc = " \t\"\"\"\\ \\n \\u00e9 é 日本 😀 \u2028 \r\n ''' {{ }} %s */ trailing  "
    heterogeneous = _param(
        "lambda", "T", "variadic", min_arity=0, homogeneous=False, doc=hostile_doc
    )
    heterogeneous.arity_fields = {"variadic": {"min": 0, "homogeneous": False}}
    sink = Op(
        stem="kitchen_sink",
        op="KitchenSink",
        domain="fz.all",
        version=1,
        doc=hostile_doc,
        constraints=[
            _constraint("T", [["tensor", d] for d in DTYPES], '"""\\'),
            _constraint("S", [["sparse", d] for d in DTYPES], None, short=True),
            _constraint(
                "class",
                [
                    ["seq", ["tensor", "float32"]],
                    ["optional", ["seq", ["tensor", "int64"]]],
                    ["optional", ["tensor", "bfloat16"]],
                    ["map", "string", ["tensor", "float32"]],
                    ["map", "int64", ["seq", ["map", "uint8", ["optional", ["tensor", "bool"]]]]],
                    *[["map", key, ["sparse", "float64"]] for key in MAP_KEYS],
                    _deep("float6e3m2"),
                ],
                "é",
            ),
            _constraint("T_shape", [["tensor", "float32"], ["tensor", "float64"]], ""),
        ],
        inputs=[],
        outputs=[
            _param("global", "class", "optional", differentiable=True, doc='"""'),
            _param("X", "T_shape", differentiable=False),
            _param("S_present", "S"),
            _param("attr_X", ["map", "string", ["seq", ["tensor", "float64"]]], doc="\\"),
            heterogeneous,
        ],
        attributes=[
            Attr("def", "bool", True, True),  # a type variable's name is its own: not class
            Attr("global", "int", True, -(2**63), False),
            Attr("None", "int", False, None, False),
            Attr("True", "float", True, 0.1, doc=hostile_doc),
            Attr("X", "float", True, FLOAT32_MAX),
            Attr("X_shape", "float", True, 1e-45),
            Attr("attr_X", "float", False, None, True),
            Attr("import", "string", True, '"""\\ é\n'),
            Attr("lambda", "ints", True, []),
            Attr("int64_t", "ints", True, [2**63 - 1, -1]),
            Attr("_schema", "floats", True, [0.1, 1 / 3, 2**70]),
            Attr("SCHEMA", "strings", True, ["", "a\nb", "😀"]),
            Attr("tensor", "tensor", False, None, False),
            Attr("tensors", "tensors", False),
            Attr("sparse", "sparse_tensor", False, None, True),
            Attr("sparses", "sparse_tensors", False, None, False),
            Attr("graph", "graph", False, None, False),
            Attr("graphs", "graphs", False),
            Attr("type", "type_proto", False, None, False),
            Attr("types", "type_protos", False, None, True),
        ],
        style="json",
        ext=".yaml",
    )
    variadic = _param("rest", "U", "variadic", min_arity=2, differentiable=False)
    variadic.arity_fields = {"optional": False, "variadic": {"min": 2}}
    optional_first = Op(
        stem="optional_first",
        op="OptionalFirst",
        domain="fz.all",
        version=INT32_MAX,
        doc=None,
        constraints=[
            _constraint(
                "U", [["tensor", "bfloat16"], ["tensor", "string"], ["tensor", "complex128"]], None
            ),
        ],
        inputs=[
            _param("opt_first", ["tensor", "float16"], "optional"),
            _param("single", "U", differentiable=True),
            _param("opt_mid", ["sparse", "int4"], "optional"),
            variadic,
        ],
        outputs=[
            _param("single", "U"),  # an output may be named like an input
            _param("v", ["seq", ["optional", ["tensor", "float8e4m3fn"]]], "variadic"),
        ],
        attributes=[],
        style="block",
        ext=".yml",
    )
    return [sink, optional_first]
