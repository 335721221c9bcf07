"""Operator schemas registered in the process (ONNX's, ONNX Runtime's) as neutral records, and
a record as the text of an opgen definition.

A record (SchemaRecord) holds what a schema says about its interface, field by field, with None
for what a registry does not say (ONNX Runtime's Python binding gives no min arity and no
differentiation category). `differences` compares two records, so that the schema a generated
definition builds can be checked against the one it was imported from.

onnx and onnxruntime are imported inside the functions that read their registries: importing
this module (and `python -m generator --check`) needs neither.
"""

from __future__ import annotations

import difflib
import importlib
import keyword
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from generator.model.names import ONNX_DOMAINS, reserved_reason
from generator.model.onnxruntime_domains import onnxruntime_owns
from generator.model.types import FROM_ONNX_NAME, float32
from generator.source import LOADER
from generator.yaml_text import escaped, is_printable, quoted, value_text

# An attribute default: int, float (a float32's value), str, or a tuple of one of them.
DefaultValue = int | float | str | tuple[int, ...] | tuple[float, ...] | tuple[str, ...]

SOURCE_ONNX = "onnx"
SOURCE_ORT = "onnxruntime"
_SOURCE_NAMES = {SOURCE_ONNX: "ONNX", SOURCE_ORT: "ONNX Runtime"}


@dataclass(frozen=True)
class ParamRecord:
    """An input or output (ONNX's FormalParameter)."""

    name: str
    type_str: str  # as the registry spells it: a type variable or e.g. "tensor(float)"
    option: str  # "single" | "optional" | "variadic"
    homogeneous: bool
    min_arity: int | None  # None: the registry does not say
    differentiation: str | None  # "unknown" | "differentiable" | "non_differentiable" | None
    doc: str


@dataclass(frozen=True)
class ConstraintRecord:
    """A type variable and the type strings it may take, in the registry's order."""

    name: str
    allowed: tuple[str, ...]
    doc: str


@dataclass(frozen=True)
class AttributeRecord:
    name: str
    type: str  # ONNX's AttrType name lower-cased: "int", "floats", "sparse_tensor", ...
    required: bool
    default: DefaultValue | None  # None: no default, or one the registry does not give
    has_default: bool | None  # None: the registry does not say
    doc: str


@dataclass(frozen=True)
class SchemaRecord:
    name: str
    domain: str
    since_version: int
    doc: str
    inputs: tuple[ParamRecord, ...]
    outputs: tuple[ParamRecord, ...]
    type_constraints: tuple[ConstraintRecord, ...]
    attributes: tuple[AttributeRecord, ...]  # by name (the registries keep them in a hash map)
    source: str  # SOURCE_ONNX or SOURCE_ORT: the registry it was read from


# --- reading schemas ------------------------------------------------------------------------

_OPTIONS = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}
_DIFFERENTIATION = {
    "Unknown": "unknown",
    "Differentiable": "differentiable",
    "NonDifferentiable": "non_differentiable",
}
# AttributeProto.AttributeType's numbers, which both bindings' AttrType enums share (ONNX
# Runtime's names TYPE_PROTO and TYPE_PROTOS "???").
_ATTR_TYPES = {
    1: "float",
    2: "int",
    3: "string",
    4: "tensor",
    5: "graph",
    6: "floats",
    7: "ints",
    8: "strings",
    9: "tensors",
    10: "graphs",
    11: "sparse_tensor",
    12: "sparse_tensors",
    13: "type_proto",
    14: "type_protos",
}


def _attr_type(attr: Any) -> str:
    number = int(attr.type)
    if number not in _ATTR_TYPES:
        raise ValueError(f"attribute {attr.name!r} has an unknown type {attr.type} ({number})")
    return _ATTR_TYPES[number]


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def _default_of(proto: Any, attr_type: str) -> tuple[DefaultValue | None, bool]:
    """(default, has_default) of an AttributeProto holding a schema's default (an empty proto,
    no name and no type, when the attribute has none). A default of a type a definition cannot
    spell (a tensor, a graph) is (None, True)."""
    if not proto.name and not proto.type:
        return None, False
    if attr_type == "int":
        return int(proto.i), True
    if attr_type == "float":
        return float32(proto.f), True
    if attr_type == "string":
        return _decode(proto.s), True
    if attr_type == "ints":
        return tuple(int(v) for v in proto.ints), True
    if attr_type == "floats":
        return tuple(float32(v) for v in proto.floats), True
    if attr_type == "strings":
        return tuple(_decode(v) for v in proto.strings), True
    return None, True


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _attributes(
    schema: Any, default_of: Callable[[Any, str], tuple[DefaultValue | None, bool | None]]
) -> tuple[AttributeRecord, ...]:
    """A schema's attributes, by name (both registries hand them back in hash order)."""
    records = []
    for name, attr in sorted(schema.attributes.items()):
        kind = _attr_type(attr)
        default, has_default = default_of(attr, kind)
        records.append(
            AttributeRecord(
                name=name,
                type=kind,
                required=bool(attr.required),
                default=default,
                has_default=has_default,
                doc=_text(attr.description),
            )
        )
    return tuple(records)


def record_from_onnx(schema: Any) -> SchemaRecord:
    """The record of an onnx.defs.OpSchema: one from the registry or one built in Python."""

    def param(p: Any) -> ParamRecord:
        return ParamRecord(
            name=p.name,
            type_str=p.type_str,
            option=_OPTIONS[p.option.name],
            homogeneous=bool(p.is_homogeneous),
            min_arity=int(p.min_arity),
            differentiation=_DIFFERENTIATION[p.differentiation_category.name],
            doc=_text(p.description),
        )

    attributes = _attributes(schema, lambda attr, kind: _default_of(attr.default_value, kind))
    return SchemaRecord(
        name=schema.name,
        domain=schema.domain,
        since_version=int(schema.since_version),
        doc=_text(schema.doc),
        inputs=tuple(param(p) for p in schema.inputs),
        outputs=tuple(param(p) for p in schema.outputs),
        type_constraints=tuple(
            ConstraintRecord(c.type_param_str, tuple(c.allowed_type_strs), _text(c.description))
            for c in schema.type_constraints
        ),
        attributes=attributes,
        source=SOURCE_ONNX,
    )


def _ort_default(attr: Any, attr_type: str) -> tuple[DefaultValue | None, bool | None]:
    """ONNX Runtime's binding documents no default, but carries ONNX's `_default_value` (the
    serialized AttributeProto, b"" when there is none), as onnx's own binding does. Without it
    (another build), or without onnx to read it, the default is unknown."""
    raw = getattr(attr, "_default_value", None)
    if not isinstance(raw, bytes):
        return None, None
    if not raw:
        return None, False
    try:
        proto = _module("onnx").AttributeProto()
    except ImportError:
        return None, None
    proto.ParseFromString(raw)
    return _default_of(proto, attr_type)


def _ort_params(params: Sequence[Any], min_count: int) -> tuple[ParamRecord, ...]:
    """ONNX Runtime's parameters. The variadic one (always the last) has the min arity ONNX's
    OpSchema::Finalize folded into min_input: min_input = the number of parameters before it
    (single or optional) + its min arity."""
    records = []
    for index, p in enumerate(params):
        option = _OPTIONS[p.option.name]
        min_arity = None
        if option == "variadic" and min_count - index >= 0:
            min_arity = min_count - index
        records.append(
            ParamRecord(
                name=p.name,
                type_str=p.typeStr,
                option=option,
                homogeneous=bool(p.isHomogeneous),
                min_arity=min_arity,
                differentiation=None,
                doc=_text(p.description),
            )
        )
    return tuple(records)


def record_from_ort(schema: Any) -> SchemaRecord:
    """The record of a schema of ONNX Runtime's registry (onnxruntime_pybind11_state's
    get_all_operator_schema)."""
    attributes = _attributes(schema, _ort_default)
    return SchemaRecord(
        name=schema.name,
        domain=schema.domain,
        since_version=int(schema.since_version),
        doc=_text(schema.doc),
        inputs=_ort_params(schema.inputs, int(schema.min_input)),
        outputs=_ort_params(schema.outputs, int(schema.min_output)),
        type_constraints=tuple(
            ConstraintRecord(c.type_param_str, tuple(c.allowed_type_strs), _text(c.description))
            for c in schema.type_constraints
        ),
        attributes=attributes,
        source=SOURCE_ORT,
    )


def _module(name: str) -> Any:
    """onnx's or onnxruntime's module, imported when a registry is first read (the
    generator itself needs neither; untyped here, as onnxruntime has no type information)."""
    return importlib.import_module(name)


def _ort_schemas() -> Any:
    return _module("onnxruntime.capi.onnxruntime_pybind11_state").get_all_operator_schema()


# domain -> op name -> (source, {since_version: schema object})
_Registry = dict[str, dict[str, tuple[str, dict[int, Any]]]]


def _add(registry: _Registry, schemas: Iterable[Any], source: str) -> None:
    """Indexes `schemas` into `registry`, replacing the ops it holds already (an op's versions
    all come from one registry)."""
    found: _Registry = {}
    for schema in schemas:
        ops = found.setdefault(schema.domain, {})
        ops.setdefault(schema.name, (source, {}))[1][int(schema.since_version)] = schema
    for domain, ops in found.items():
        held = registry.setdefault(domain, {})
        for name, entry in ops.items():
            held[name] = entry


def _registry() -> tuple[_Registry, str]:
    """Every schema registered in the process now (read at each call: a schema registered
    after an earlier look-up is found), and why ONNX Runtime's are missing, if they are.
    ONNX's domains come from ONNX's registry; in the others (com.microsoft, a user's), an op
    ONNX Runtime defines comes from ONNX Runtime's, one only registered with onnx.defs (by a
    generated package's register_all, say) from ONNX's."""
    registry: _Registry = {}
    onnx_schemas = _module("onnx.defs").get_all_schemas_with_history()
    _add(registry, onnx_schemas, SOURCE_ONNX)
    try:
        ort_schemas = _ort_schemas()
    except ImportError as exc:
        return registry, f" (ONNX Runtime's registry is not available: {exc})"
    _add(registry, (s for s in ort_schemas if s.domain not in ONNX_DOMAINS), SOURCE_ORT)
    return registry, ""


def _shown_domain(domain: str) -> str:
    return domain if domain else "ai.onnx"


def find_schema(op: str, domain: str | None = None, version: int | None = None) -> SchemaRecord:
    """The schema of `op` in `domain` ('' or 'ai.onnx' for ONNX's default domain) at
    since_version `version` (None: the latest), from the schemas registered now (_registry).
    Without a domain, the op's domain is looked for: ONNX's default domain first, then ONNX's
    others, then the rest by name. A LookupError says what exists: the ops of that name's
    domain that come close, or its versions."""
    if domain == "ai.onnx":
        domain = ""
    registry, ort_problem = _registry()
    if domain is None:
        order = sorted(registry, key=lambda d: (d not in ONNX_DOMAINS, d != "", d))
        holding = [d for d in order if op in registry[d]]
        if not holding:
            names = {name for ops in registry.values() for name in ops}
            raise LookupError(f"no op {op!r} in any domain{_did_you_mean(op, names)}{ort_problem}")
        domain = holding[0]
    elif domain not in registry:
        known = sorted(_shown_domain(d) for d in registry)
        raise LookupError(
            f"no domain {domain!r}{_did_you_mean(domain, known)} (the registries hold "
            f"{', '.join(known)}){ort_problem}"
        )
    elif op not in registry[domain]:
        elsewhere = [_shown_domain(d) for d in registry if op in registry[d]]
        raise LookupError(
            f"no op {op!r} in domain {_shown_domain(domain)!r}"
            f"{_did_you_mean(op, registry[domain])}"
            + (f" ({op} is in {', '.join(elsewhere)})" if elsewhere else "")
            + ort_problem
        )
    source, versions = registry[domain][op]
    if version is None:
        version = max(versions)
    elif version not in versions:
        listed = ", ".join(str(v) for v in sorted(versions))
        earlier = [v for v in versions if v <= version]
        effective = (
            f"; at opset {version} the op is version {max(earlier)}"
            if earlier
            else f"; the op appears at version {min(versions)}"
        )
        raise LookupError(
            f"{_shown_domain(domain)}::{op} has no version {version}: its versions are "
            f"{listed}{effective}"
        )
    schema = versions[version]
    return record_from_onnx(schema) if source == SOURCE_ONNX else record_from_ort(schema)


def _did_you_mean(op: str, names: Iterable[str]) -> str:
    by_lower: dict[str, str] = {}
    for name in sorted(names):
        by_lower.setdefault(name.lower(), name)
    close = difflib.get_close_matches(op.lower(), list(by_lower), n=5, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + ", ".join(repr(by_lower[c]) for c in close) + "?"


def all_schemas() -> tuple[SchemaRecord, ...]:
    """Every latest ONNX schema (onnx.defs.get_all_schemas) and the latest version of every
    com.microsoft schema of ONNX Runtime, ONNX's first, each sorted by domain and name."""
    onnx_records = sorted(
        (record_from_onnx(s) for s in _module("onnx.defs").get_all_schemas()),
        key=lambda r: (r.domain, r.name),
    )
    latest: dict[str, Any] = {}
    for schema in _ort_schemas():
        if schema.domain != "com.microsoft":
            continue
        seen = latest.get(schema.name)
        if seen is None or schema.since_version > seen.since_version:
            latest[schema.name] = schema
    ort_records = [record_from_ort(latest[name]) for name in sorted(latest)]
    return tuple(onnx_records) + tuple(ort_records)


# --- comparing records ----------------------------------------------------------------------


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _param_differences(
    what: str, original: Sequence[ParamRecord], generated: Sequence[ParamRecord]
) -> list[str]:
    found = []
    if len(original) != len(generated):
        found.append(f"{what}: {len(original)} != {len(generated)} parameters")
    for index, (a, b) in enumerate(zip(original, generated, strict=False)):
        where = f"{what}[{index}] {a.name!r}"
        if a.name != b.name:
            found.append(f"{where}: name {a.name!r} != {b.name!r}")
        if a.type_str != b.type_str:
            found.append(f"{where}: type_str {a.type_str} != {b.type_str}")
        if a.option != b.option:
            found.append(f"{where}: option {a.option} != {b.option}")
        if a.option == "variadic" and a.homogeneous != b.homogeneous:
            # ONNX keeps is_homogeneous for every parameter; it means something for a variadic one.
            found.append(f"{where}: homogeneous {a.homogeneous} != {b.homogeneous}")
        if a.min_arity is not None and a.min_arity != b.min_arity:
            found.append(f"{where}: min_arity {a.min_arity} != {b.min_arity}")
        if a.differentiation is not None and a.differentiation != b.differentiation:
            found.append(f"{where}: differentiation {a.differentiation} != {b.differentiation}")
    for index in range(len(generated), len(original)):
        found.append(f"{what}[{index}] {original[index].name!r}: missing from the generated schema")
    for index in range(len(original), len(generated)):
        found.append(f"{what}[{index}] {generated[index].name!r}: not in the original schema")
    return found


def _shown_default(attr: AttributeRecord) -> str:
    if attr.has_default is False:
        return "no default"
    if attr.has_default is None:
        return "unknown"
    return repr(attr.default)


def differences(
    original: SchemaRecord, generated: SchemaRecord, *, domain: str | None = None
) -> list[str]:
    """What differs between two schemas' interfaces, one line each (empty: none). With
    `domain`, the generated schema must have that domain instead of the original's. Fields
    the original's registry does not know (None) and docs are not compared."""
    found = []
    if original.name != generated.name:
        found.append(f"name: {original.name!r} != {generated.name!r}")
    expected_domain = original.domain if domain is None else domain
    if expected_domain != generated.domain:
        found.append(f"domain: {expected_domain!r} != {generated.domain!r}")
    if original.since_version != generated.since_version:
        found.append(f"since_version: {original.since_version} != {generated.since_version}")
    found += _param_differences("inputs", original.inputs, generated.inputs)
    found += _param_differences("outputs", original.outputs, generated.outputs)

    a_constraints = {c.name: c for c in original.type_constraints}
    b_constraints = {c.name: c for c in generated.type_constraints}
    for name in sorted(a_constraints.keys() - b_constraints.keys()):
        found.append(f"type_constraints {name!r}: missing from the generated schema")
    for name in sorted(b_constraints.keys() - a_constraints.keys()):
        found.append(f"type_constraints {name!r}: not in the original schema")
    for name, a_constraint in a_constraints.items():
        b_constraint = b_constraints.get(name)
        if b_constraint is None:
            continue
        a_types, b_types = set(a_constraint.allowed), set(b_constraint.allowed)
        if a_types != b_types:
            found.append(
                f"type_constraints {name!r}: allowed types differ: missing "
                f"{sorted(a_types - b_types)}, extra {sorted(b_types - a_types)}"
            )
    a_order = [c.name for c in original.type_constraints]
    b_order = [c.name for c in generated.type_constraints]
    if set(a_order) == set(b_order) and a_order != b_order:
        found.append(f"type_constraints: order {a_order} != {b_order}")

    a_attrs = {a.name: a for a in original.attributes}
    b_attrs = {a.name: a for a in generated.attributes}
    for name, a_attr in a_attrs.items():
        b_attr = b_attrs.get(name)
        if b_attr is None:
            found.append(f"attributes {name!r}: missing from the generated schema")
            continue
        where = f"attributes {name!r}"
        if a_attr.type != b_attr.type:
            found.append(f"{where}: type {a_attr.type} != {b_attr.type}")
        if a_attr.required != b_attr.required:
            found.append(f"{where}: required {a_attr.required} != {b_attr.required}")
        if a_attr.has_default is not None and (
            a_attr.has_default != b_attr.has_default
            or (a_attr.default is not None and not _same_value(a_attr.default, b_attr.default))
        ):
            found.append(f"{where}: default {_shown_default(a_attr)} != {_shown_default(b_attr)}")
    for name in sorted(b_attrs.keys() - a_attrs.keys()):
        found.append(f"attributes {name!r}: not in the original schema")
    return found


# --- spelling types and names ---------------------------------------------------------------

_DTYPE = re.compile(r"[a-z][a-z0-9]*")


def _dtype(name: str, type_str: str) -> str:
    name = name.strip()
    if not _DTYPE.fullmatch(name):
        raise ValueError(f"cannot read the type string {type_str!r}: {name!r} is no element type")
    return FROM_ONNX_NAME.get(name, name)


def _split_arguments(inner: str) -> list[str]:
    """The comma-separated arguments of a type constructor, at the top level of parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(inner):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:index])
            start = index + 1
    parts.append(inner[start:])
    return [part.strip() for part in parts]


def opgen_type(type_str: str) -> str:
    """An ONNX type string as a definition spells it: tensor(float) -> float32,
    seq(tensor(double)) -> seq(float64), map(int64, float) -> map(int64, float32),
    sparse_tensor(float) -> sparse_tensor(float32), optional(...) -> optional(...). A bare
    element type (a map's value) is a tensor of it. ValueError for anything else."""
    text = type_str.strip()
    match = re.fullmatch(r"([a-z_]+)\((.*)\)", text, re.DOTALL)
    if match is None:
        return _dtype(text, type_str)
    kind, inner = match.groups()
    arguments = _split_arguments(inner)
    if kind == "tensor" and len(arguments) == 1:
        return _dtype(arguments[0], type_str)
    if kind == "sparse_tensor" and len(arguments) == 1:
        return f"sparse_tensor({_dtype(arguments[0], type_str)})"
    if kind in ("seq", "optional") and len(arguments) == 1:
        return f"{kind}({opgen_type(arguments[0])})"
    if kind == "map" and len(arguments) == 2:
        return f"map({_dtype(arguments[0], type_str)}, {opgen_type(arguments[1])})"
    raise ValueError(f"cannot read the type string {type_str!r}")


# C++'s keywords and alternative tokens: names, stems (C++ namespaces) and files must avoid them.
CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)


def _is_reserved(name: str) -> bool:
    return keyword.iskeyword(name) or name in CPP_KEYWORDS


def stem_for(op_name: str) -> str:
    """A definition file's stem for an op type: CamelCase to snake_case (LayerNormalization ->
    layer_normalization, QLinearConv -> q_linear_conv, MatMulInteger16 -> mat_mul_integer16,
    LSTM -> lstm). A stem that Python or C++ reserves (If, And, Not, Xor) gets `_op`."""
    text = re.sub(r"[^0-9A-Za-z]+", "_", op_name)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    stem = re.sub(r"_+", "_", text).strip("_").lower() or "op"
    if stem[0].isdigit():
        stem = "op_" + stem
    return stem + "_op" if _is_reserved(stem) else stem


# --- writing a definition -------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.()]*")


def _scalar(text: str) -> str:
    """A name or type string: plain where YAML reads it back as that string (in flow context
    too), else double-quoted."""
    if _PLAIN.fullmatch(text) and yaml.load(f"[{text}]", Loader=LOADER) == [text]:
        return text
    return quoted(text)


def _comment(text: str) -> str:
    """Text for a YAML comment, which ends at any line break: those (and what a YAML file
    cannot hold) escaped."""
    return "".join(c if c == "\t" or is_printable(ord(c)) else escaped(c) for c in text)


def _literal(text: str, indent: int) -> str | None:
    """`|` and the text's lines, `indent` spaces in, when a YAML literal block reads back as the
    same text in a definition file (which turns "\\r\\n" and "\\r" into "\\n"); else None."""
    if not text or "\r" in text or not text.strip():
        return None
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomping = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    indicator = "2" if body.lstrip("\n")[:1] == " " else ""
    lines = [(" " * indent + line) if line else "" for line in body.split("\n")]
    lines += [""] * (trailing - 1)
    block = f"|{indicator}{chomping}\n" + "".join(line + "\n" for line in lines)
    # Checked where it will stand: the value of a key `indent - 2` in, and another key after.
    pad = " " * (indent - 2)
    try:
        loaded = yaml.load(f"{pad}x: {block}{pad}y: 0\n", Loader=LOADER)
    except yaml.YAMLError:
        return None
    return block if loaded == {"x": text, "y": 0} else None


def _doc_value(text: str, indent: int) -> str:
    """The text after `doc: ` (ending in a newline): a literal block for a text of several
    lines where one can hold it, else a double-quoted scalar. `indent`: the key's column."""
    if "\n" in text.rstrip("\n"):
        block = _literal(text, indent + 2)
        if block is not None:
            return block
    return quoted(text, indent + 2) + "\n"


def _flow_list(items: Sequence[str], column: int, indent: int, width: int = 100) -> str:
    """[a, b, ...] starting at `column`, wrapped before `width` onto lines `indent` in."""
    if not items:
        return "[]"
    lines: list[str] = []
    line, start = "[", column
    for index, item in enumerate(items):
        piece = item + ("]" if index == len(items) - 1 else ",")
        fresh = line == "[" or not line.strip()
        if not fresh and start + len(line) + 1 + len(piece) > width:
            lines.append(line)
            line, start, fresh = " " * indent, 0, True
        line += piece if fresh else " " + piece
    return "\n".join([*lines, line])


def _binds(param: ParamRecord) -> bool:
    """Whether every node has this input, so that its dtype binds its type variable."""
    if param.option == "single":
        return True
    return param.option == "variadic" and (param.min_arity is None or param.min_arity >= 1)


def _name_todos(record: SchemaRecord) -> list[str]:
    todos = []
    kinds: dict[str, list[str]] = {}
    named = [
        *(("type variable", c.name) for c in record.type_constraints),
        *(("input", p.name) for p in record.inputs),
        *(("output", p.name) for p in record.outputs),
        *(("attribute", a.name) for a in record.attributes),
    ]
    for kind, name in named:
        kinds.setdefault(name, []).append(kind)
    for name, found in kinds.items():
        if not name.isidentifier():
            todos.append(f"{found[0]} {name!r} is not an identifier")
        elif (reason := reserved_reason(name)) is not None:
            todos.append(
                f"{found[0]} {name!r} {reason}: generated code cannot name a variable so, and "
                f"the schema's name must stay {name!r}"
            )
        if len(found) > 1:
            kinds_named = " and ".join(("an " if k[0] in "aeiou" else "a ") + k for k in found)
            todos.append(
                f"{name!r} names {kinds_named}: opgen gives type variables, inputs, outputs "
                f"and attributes one namespace"
            )
    return todos


def definition_text(record: SchemaRecord, *, domain: str, stem: str, provided_by: bool) -> str:
    """The text of an opgen definition declaring the op of `record` in `domain` (the file
    `<stem>.yaml`), with `provided_by: onnxruntime` when `provided_by`. What a schema does not
    hold (a reference, tests, shapes, an implementation) is left as TODO comments."""
    source = _SOURCE_NAMES.get(record.source, record.source)
    out = [
        "# Imported by `opgen import` from "
        + _comment(
            f"{source}'s schema {_shown_domain(record.domain)}::{record.name}, "
            f"version {record.since_version}."
        )
        + "\n"
    ]
    todos = [
        "reference (a PyTorch expression)",
        "tests (known values, random cases)",
        "shapes (shape: or same_shape_as:): the schema's shape inference is not imported",
    ]
    if not provided_by and onnxruntime_owns(domain):
        todos.append(
            f"an implementation: 'provided_by: onnxruntime' ({domain} is ONNX Runtime's domain: "
            "a kernel there needs 'replaces: onnxruntime', which replaces ONNX Runtime's own op "
            "in every session that loads the library; import with --domain for an op of your own)"
        )
    elif not provided_by:
        todos.append(
            f"an implementation (kernel: {{source: {stem}_kernel.h}}, function: or provided_by:)"
        )
    bound = {p.type_str for p in record.inputs if _binds(p)}
    for constraint in record.type_constraints:
        if constraint.name not in bound:
            todos.append(
                f"{constraint.name} is bound by no required input: an attribute (say, 'to') "
                f"or the outputs choose it"
            )
    todos += _name_todos(record)
    out += [f"# TODO: {_comment(todo)}\n" for todo in todos]

    out.append(f"op: {_scalar(record.name)}\n")
    out.append(f"domain: {_scalar(domain)}\n")
    out.append(f"version: {record.since_version}\n")
    if provided_by:
        out.append("provided_by: onnxruntime\n")
    if record.doc:
        out.append(f"doc: {_doc_value(record.doc, 0)}")

    constraints = {c.name for c in record.type_constraints}
    if record.type_constraints:
        out.append("type_constraints:\n")
        for constraint in record.type_constraints:
            out.append(f"  {_scalar(constraint.name)}:\n")
            try:
                types = [_scalar(opgen_type(t)) for t in constraint.allowed]
            except ValueError as exc:
                raise ValueError(
                    f"{record.name}: type constraint {constraint.name}: {exc}"
                ) from None
            out.append(f"    types: {_flow_list(types, 11, 6)}\n")
            if constraint.doc:
                out.append(f"    doc: {_doc_value(constraint.doc, 4)}")

    for what, params in (("inputs", record.inputs), ("outputs", record.outputs)):
        if not params:
            out.append(f"{what}: []\n")
            continue
        out.append(f"{what}:\n")
        for index, param in enumerate(params):
            try:
                out += _param_lines(param, constraints)
            except ValueError as exc:
                raise ValueError(f"{record.name}: {what}[{index}] {param.name!r}: {exc}") from None

    if record.attributes:
        out.append("attributes:\n")
        # Required ones first, as definitions list them (the order of a PyTorch signature, the
        # op's if it gets one); ONNX's attributes have no order.
        for attr in sorted(record.attributes, key=lambda a: not _written_required(a)):
            out += _attribute_lines(attr, source)
    return "".join(out)


def _type_text(type_str: str, constraints: set[str]) -> str:
    return type_str if type_str in constraints else opgen_type(type_str)


def _param_lines(param: ParamRecord, constraints: set[str]) -> list[str]:
    lines = [f"  - name: {_scalar(param.name)}\n"]
    lines.append(f"    type: {_scalar(_type_text(param.type_str, constraints))}\n")
    if param.option == "optional":
        lines.append("    optional: true\n")
    elif param.option == "variadic":
        if param.min_arity == 1 and param.homogeneous:
            lines.append("    variadic: true\n")
        elif param.min_arity is None:
            lines.append(
                f"    variadic: {{homogeneous: {str(param.homogeneous).lower()}}}"
                "  # TODO: min arity not in the registry\n"
            )
        else:
            lines.append(
                f"    variadic: {{min: {param.min_arity}, "
                f"homogeneous: {str(param.homogeneous).lower()}}}\n"
            )
    if param.differentiation in ("differentiable", "non_differentiable"):
        lines.append(
            f"    differentiable: {str(param.differentiation == 'differentiable').lower()}\n"
        )
    if param.doc:
        lines.append(f"    doc: {_doc_value(param.doc, 4)}")
    return lines


def _written_required(attr: AttributeRecord) -> bool:
    """Whether the definition declares the attribute required (no default, no `required:
    false`)."""
    return attr.required and not attr.has_default


def _attribute_lines(attr: AttributeRecord, source: str) -> list[str]:
    lines = [f"  - name: {_scalar(attr.name)}\n", f"    type: {_scalar(attr.type)}\n"]
    if attr.has_default and attr.default is not None:
        lines.append(f"    default: {value_text(attr.default, as_float32=True)}\n")
    elif attr.has_default:
        lines.append(
            f"    required: false  # TODO: the registry's default (of type {attr.type}) is not "
            "imported\n"
        )
    elif attr.has_default is None and not attr.required:
        lines.append(f"    required: false  # TODO: default not in {source}'s registry\n")
    elif not attr.required:
        lines.append("    required: false\n")
    if attr.doc:
        lines.append(f"    doc: {_doc_value(attr.doc, 4)}")
    return lines
