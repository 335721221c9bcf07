"""Hypothesis strategies for whole op definitions: random valid ones (identity kernels with
random names, dtypes, optional inputs, attributes of every type with hostile text in docs,
defaults and allowed values) and ways to break them, each with the field it breaks."""

from __future__ import annotations

import copy
import keyword
from dataclasses import dataclass

import yaml
from hypothesis import strategies as st

from generator.api.names import Local
from generator.model.names import OP_NAMESPACE_NAMES, OPGEN_NAMESPACE_NAMES, is_reserved
from generator.model.types import (
    KERNEL_DTYPES,
    TENSOR_ATTRIBUTE_DTYPES,
    VALUE_ATTR_TYPES,
    AttrType,
    DType,
    dtype_range,
)
from generator.runtime._names import input_of

# The dtypes every kernel target carries (two float8 formats of the four: one of each family).
CARRIED_DTYPES = [
    d.value
    for d in KERNEL_DTYPES
    + (DType.uint16, DType.uint32, DType.uint64, DType.float8e4m3fn, DType.float8e5m2fnuz)
]

FLOATING = [d.value for d in DType if d.is_floating]
# What a random op's attribute may choose for an output: conversions that torch's `.to` and the
# scaffold's kernel (through float or double) round alike.
CHOSEN_DTYPES = ["float32", "float64", "int64", "bool"]

# Names the generated code itself uses near user names: drawn often, so that a missing entry
# in the reserved lists shows up as a build or import failure rather than going unnoticed.
NEAR_MISSES = sorted(OP_NAMESPACE_NAMES | OPGEN_NAMESPACE_NAMES) + [
    "X",
    "Y",
    "x",
    "y",
    "T",
    "N",
    "i",
    "n",
    "kernels",
    "inputs",
    "outputs",
    "result",
    "results",
    "session",
    "schema",
    "SCHEMA",
    "OP_TYPE",
    "DOMAIN",
    "VERSION",
    "self",
    "cls",
    "info",
    "api",
    "status",
    "std",
    "py",
    "ort",
    "Ort",
    "opgen",
    "Attributes",
    "OutputShapes",
    "compute",
    "infer_shapes",
    "fake",
    "_fake",
    "_cpu",
    "translation",
    "symbolic",
    "dims",
    "begin",
    "end",
    "value",
    "values",
    "context",
    "data",
    "numel",
    "grad",
    "ops",
    "kernel",
    "size",
    "sizes",
    "node",
    "graph",
    "model",
    "args",
    "kwargs",
    "other",
    "out",
    "input",
    "output",
    "axis",
    "Shape",
    "Error",
    "Input",
    "Output",
    "SymDim",
    "float16",
    "bfloat16",
    "int64_t",
    "size_t",
    "string",
    "vector",
    "assert",
    "check",
    "checks",
    "name",
    "type",
    "default",
    "none",
    "None_",
]

# Text that has broken code generators: quotes of every kind, comment and template markers,
# backslashes, control characters, non-ASCII (including beyond the BMP).
HOSTILE = [
    '"',
    "'",
    '"""',
    "'''",
    "*/",
    "/*",
    "//",
    "#",
    "{{",
    "}}",
    "{%",
    "%}",
    "\\",
    "\\n",
    "\\u00e9",
    "\n",
    "\t",
    "\r",
    "\r\n",
    "\x0b",
    "\x1b",
    "\x7f",
    "\u2028",
    "é",
    "ñ",
    "日本",
    "😀",
    "$",
    "%s",
    "{0}",
    "??=",
    'R"(',
    ')"',
    "\\\\",
    " ",
    "",
]


def _free(name: str) -> bool:
    return not is_reserved(name)


def _no_local_of_another(names: list[str]) -> bool:
    """No name is one the generated code gives a local of another (`X` and `X_shape`)."""
    return not any(a != b and a in Local.derived_from(b) for a in names for b in names)


IDENTIFIERS = st.one_of(
    st.sampled_from([name for name in NEAR_MISSES if _free(name)]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True).filter(_free),
)
TEXT = st.lists(
    st.one_of(
        st.sampled_from(HOSTILE),
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    ),
    max_size=4,
).map("".join)
INT64 = st.integers(-(2**63), 2**63 - 1)
FLOAT32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


def _attr_value(kind: AttrType):
    scalar = {
        AttrType.bool: st.booleans(),
        AttrType.int: INT64,
        AttrType.float: FLOAT32,
        AttrType.string: TEXT,
    }
    if kind.is_list:
        base = {AttrType.ints: INT64, AttrType.floats: FLOAT32, AttrType.strings: TEXT}[kind]
        # Not empty: the dynamo export types an empty list attribute as ints (docs/limitations.md).
        return st.lists(base, min_size=1, max_size=3)
    return scalar[kind]


@st.composite
def _tensor_value(draw, dtype: DType):
    """A tensor attribute's value: nested lists of `dtype`'s numbers, of a random shape."""
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    if dtype is DType.float16:  # finite values only: an overflowing one is a definition error
        element = st.floats(allow_nan=False, allow_infinity=False, width=16)
    elif dtype.is_floating:
        element = FLOAT32
    else:
        low, high = dtype_range(dtype)
        element = st.integers(low, min(high, 2**63 - 1))  # test values are int64 at most

    def build(dims: list[int]):
        if not dims:
            return draw(element)
        return [build(dims[1:]) for _ in range(dims[0])]

    return build(shape)


@st.composite
def attributes(draw, name: str) -> dict:
    kind = draw(st.sampled_from(list(VALUE_ATTR_TYPES)))
    attr = {"name": name, "type": kind.value, "doc": draw(TEXT)}
    allowed = None
    if kind in (AttrType.int, AttrType.string) and draw(st.booleans()):
        allowed = draw(st.lists(_attr_value(kind), min_size=1, max_size=3, unique=True))
        attr["allowed"] = allowed
    value = st.sampled_from(allowed) if allowed else _attr_value(kind)
    if draw(st.booleans()):
        attr["default"] = draw(value)
    # Every test case must give a required attribute; optional ones sometimes get a value too.
    attr["_test_value"] = draw(value) if "default" not in attr or draw(st.booleans()) else None
    return attr


@st.composite
def definitions(draw) -> tuple[str, dict]:
    """(file stem, definition as plain data) of a valid identity op."""
    stem = draw(st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(_free))
    type_var, *names = draw(
        st.lists(IDENTIFIERS, min_size=3, max_size=9, unique=True).filter(_no_local_of_another)
    )
    n_inputs = draw(st.integers(1, max(1, min(3, len(names) - 1))))
    n_outputs = draw(st.integers(1, min(2, len(names) - n_inputs)))
    inputs, outputs = names[:n_inputs], names[n_inputs : n_inputs + n_outputs]
    # 'self' is a fine tensor name but a reserved attribute one (a definition error).
    attr_names = [n for n in names[n_inputs + n_outputs :] if n != "self"]
    dtypes = draw(st.lists(st.sampled_from(CARRIED_DTYPES), min_size=1, unique=True))
    n_optional = draw(st.integers(0, n_inputs - 1))

    tensors_in = []
    for index, name in enumerate(inputs):
        tensor = {"name": name, "type": type_var, "doc": draw(TEXT)}
        if index == 0:
            tensor["shape"] = draw(st.sampled_from([["..."], ["...", "K"]]))
        elif draw(st.booleans()):
            tensor["type"] = draw(st.sampled_from(CARRIED_DTYPES))
        if index >= n_inputs - n_optional:
            tensor["optional"] = True
        tensors_in.append(tensor)
    attrs = [draw(attributes(name)) for name in attr_names]
    attrs.sort(key=lambda a: "default" in a)  # required attributes first, as PyTorch wants
    test_attrs = {a["name"]: a.pop("_test_value") for a in attrs}
    test_attrs = {k: v for k, v in test_attrs.items() if v is not None}

    # Not ending in "_" (PyTorch's in-place spelling, a definition error).
    torch_name = draw(
        st.from_regex(r"[a-z_][a-z0-9_]{0,10}[a-z0-9]", fullmatch=True).filter(
            lambda name: not keyword.iskeyword(name)  # torch.ops.ns.or is not Python
        )
    )
    first = inputs[0]
    copies = [f"{first}.clone()"] * len(outputs)
    known_value = [[1, 0], [0, 1]]
    definition = {
        "op": draw(st.from_regex(r"[A-Z][A-Za-z0-9_]{0,12}", fullmatch=True)),
        "domain": "x."
        + draw(st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[a-z][a-z0-9_]{0,6}){0,2}", fullmatch=True)),
        "version": draw(st.integers(1, 40)),
        "doc": draw(TEXT),
        "torch": {"name": f"t_{stem}::{torch_name}"},
        "type_constraints": {type_var: {"types": dtypes, "doc": draw(TEXT)}},
        "inputs": tensors_in,
        "outputs": [
            {"name": name, "type": type_var, "same_shape_as": first, "doc": draw(TEXT)}
            for name in outputs
        ],
        "reference": copies[0] if len(copies) == 1 else f"({', '.join(copies)})",
        "kernel": {"source": f"{stem}_kernel.h"},
        "tests": {
            "tolerances": {d: {"rtol": 0.0, "atol": 0.0} for d in dtypes if d in FLOATING},
            "known": [
                {
                    "inputs": {name: known_value for name in inputs},
                    "outputs": {name: known_value for name in outputs},
                }
            ],
            "random": [
                {
                    "shapes": {name: ["batch", 2] for name in inputs},
                    "dynamic": {"batch": [2, 3]},
                }
            ],
        },
    }
    if draw(st.integers(0, 4)) == 0:  # a kernel op may run in ONNX Runtime only
        del definition["torch"]
    if draw(st.integers(0, 3)) == 0:
        chosen = f"{type_var}c"  # a variable an attribute chooses, for the last output
        clear = chosen not in names and _free(chosen) and _no_local_of_another([*names, chosen])
        if attrs and clear:
            chosen_dtypes = draw(st.lists(st.sampled_from(CHOSEN_DTYPES), min_size=1, unique=True))
            chooser = {"name": attrs[-1]["name"], "type": "int", "doc": draw(TEXT)}
            if draw(st.booleans()):
                chooser["default"] = draw(st.sampled_from(chosen_dtypes))
            attrs[-1] = chooser
            attrs.sort(key=lambda a: "default" in a)  # required first, as PyTorch wants
            test_attrs.pop(chooser["name"], None)
            definition["type_constraints"][chosen] = {
                "types": chosen_dtypes,
                "chosen_by": chooser["name"],
            }
            definition["outputs"][-1]["type"] = chosen
            copies[-1] = f"{first}.to({chosen})"
            definition["reference"] = copies[0] if len(copies) == 1 else f"({', '.join(copies)})"
            floating = [d for d in (*dtypes, *chosen_dtypes) if d in FLOATING]
            definition["tests"]["tolerances"] = {d: {"rtol": 0.0, "atol": 0.0} for d in floating}
    chosen_last = any("chosen_by" in c for c in definition["type_constraints"].values())
    if n_inputs >= 2 and not chosen_last and draw(st.integers(0, 3)) == 0:
        _make_variadic(definition, names, draw(st.booleans()))
    if "torch" not in definition and attrs and draw(st.integers(0, 2)) == 0:
        # A tensor attribute (kernel ops without a PyTorch side carry them), any dtype, shape
        # and values, in place of the first attribute that chooses no dtype.
        chooser_names = {c.get("chosen_by") for c in definition["type_constraints"].values()}
        index = next((i for i, a in enumerate(attrs) if a["name"] not in chooser_names), None)
        if index is not None:
            name = attrs[index]["name"]
            dtype = draw(st.sampled_from([d.value for d in TENSOR_ATTRIBUTE_DTYPES]))
            tensor_attr = {"name": name, "type": "tensor", "dtype": dtype, "doc": draw(TEXT)}
            if draw(st.booleans()):
                tensor_attr["required"] = False
            attrs[index] = tensor_attr
            attrs.sort(key=lambda a: "default" in a or a.get("required") is False)
            test_attrs.pop(name, None)
            if "required" not in tensor_attr or draw(st.booleans()):
                test_attrs[name] = draw(_tensor_value(DType(dtype)))
    if attrs:
        definition["attributes"] = attrs
    if test_attrs:
        definition["tests"]["known"][0]["attributes"] = test_attrs
        definition["tests"]["random"][0]["attributes"] = test_attrs
    if not definition["tests"]["tolerances"]:
        del definition["tests"]["tolerances"]
    return stem, definition


def _make_variadic(definition: dict, names: list[str], with_output: bool) -> None:
    """The last input variadic (two values in the tests), and with `with_output` the last
    output too, one value per value of it: lists in PyTorch, the node's last inputs and
    outputs in ONNX. Not where another name is one of their values' (X_0, X_1, ...)."""
    inputs, outputs = definition["inputs"], definition["outputs"]
    variadic = [inputs[-1]["name"]] + ([outputs[-1]["name"]] if with_output else [])
    if any(name != v and input_of(name, v) == v for name in names for v in variadic):
        return
    first, last = inputs[0]["name"], inputs[-1]
    for tensor in inputs:  # a required input after an optional one is another feature
        tensor.pop("optional", None)
    last.update(variadic=True, type=definition["outputs"][0]["type"])
    tests = definition["tests"]
    tests["known"][0]["inputs"][last["name"]] = [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]
    tests["random"][0]["shapes"][last["name"]] = [["batch", 2], ["batch", 2]]
    copies = [f"{first}.clone()"] * len(outputs)
    if with_output:
        outputs[-1].update(variadic=True, same_shape_as=last["name"])
        tests["known"][0]["outputs"][outputs[-1]["name"]] = [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]
        copies[-1] = f"[value.clone() for value in {last['name']}]"
    definition["reference"] = copies[0] if len(copies) == 1 else f"({', '.join(copies)})"


class _PlainDumper(yaml.SafeDumper):
    """Writes a value used twice out twice: definitions are plain YAML, without anchors and
    aliases (the loader refuses them)."""

    def ignore_aliases(self, data) -> bool:
        return True


def dump(definition: dict) -> str:
    return yaml.dump(definition, Dumper=_PlainDumper, allow_unicode=True, sort_keys=False, width=80)


# --------------------------------------------------------------------------- breaking them


@dataclass(frozen=True)
class Breakage:
    """A change that makes a valid definition invalid, and the field the error must name."""

    description: str
    field: str


def _set(definition: dict, path: list, value) -> None:
    target = definition
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _field(path: list) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def _name_paths(definition: dict) -> list[list]:
    paths = [["inputs", i, "name"] for i in range(len(definition["inputs"]))]
    paths += [["outputs", i, "name"] for i in range(len(definition["outputs"]))]
    paths += [["attributes", i, "name"] for i in range(len(definition.get("attributes", [])))]
    return paths


BAD_IDENTIFIERS = ["1x", "a-b", "a/b", "..", "", "a b", "ñ", "class", "torch", "ctx", "new"] + [
    "errno", "EOF", "stdin", "assert", "_Tp", "a__b"  # header macros, the C++ implementation's
]  # fmt: skip


@st.composite
def broken(draw) -> tuple[str, dict, list[Breakage]]:
    """A valid definition with one to three independent breakages."""
    stem, definition = draw(definitions())
    definition = copy.deepcopy(definition)
    choices = {
        "version": [(0, "version"), (-3, "version"), ("one", "version"), ([2, 1], "version")],
        "domain": [("Ai.Opgen", "domain"), ("a..b", "domain"), (7, "domain")],
        "doc": [(["a"], "doc"), ({"a": 1}, "doc"), ("a\x00b", "doc")],
        "torch": [
            ("nope", "torch"),
            ({"name": "nope"}, "torch.name"),
            ({"nmae": "a::b"}, "torch.nmae"),
        ],
        "type_constraints": [
            ({"T": {"types": ["float65"]}}, "type_constraints.T.types[0]"),
            ({"T": {"types": []}}, "type_constraints.T.types"),
            ({"T": "float32"}, "type_constraints.T"),
        ],
        "reference": [(None, "reference"), (3, "reference")],
        "kernel": [({"source": "missing_kernel.h"}, "kernel.source"), ({}, "kernel")],
        "tests": [({**definition["tests"], "known": "no"}, "tests.known")],
    }
    keys = draw(st.lists(st.sampled_from(sorted(choices)), min_size=1, max_size=3, unique=True))
    breakages = []
    for key in keys:
        value, field = draw(st.sampled_from(choices[key]))
        definition[key] = value
        breakages.append(Breakage(f"{key} = {value!r}", field))
    return stem, definition, breakages


@st.composite
def bad_names(draw) -> tuple[str, dict, list[Breakage]]:
    """A valid definition with one invalid, reserved or duplicated tensor/attribute name."""
    stem, definition = draw(definitions())
    definition = copy.deepcopy(definition)
    paths = _name_paths(definition)  # in document order
    path = draw(st.sampled_from(paths))
    if draw(st.booleans()):
        value = draw(st.sampled_from(BAD_IDENTIFIERS))
        reported = path
    else:  # a repeated name is reported where it repeats
        other = draw(st.sampled_from([p for p in paths if p != path]))
        value = _get(definition, other)
        reported = max(path, other, key=paths.index)
    _set(definition, path, value)
    return stem, definition, [Breakage(f"{_field(path)} = {value!r}", _field(reported))]


def _get(definition: dict, path: list):
    target = definition
    for key in path:
        target = target[key]
    return target


def leaf_paths(value, path=()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaf_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaf_paths(v, (*path, i))] or [path]
    return [path]


ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False),
    TEXT,
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "name", "type"]), st.integers(0, 2), max_size=2),
)


@st.composite
def mutated(draw) -> tuple[str, dict]:
    """A valid definition with one to three leaves replaced by arbitrary values: it may still
    be valid; if not, it must give definition errors and nothing else."""
    stem, definition = draw(definitions())
    definition = copy.deepcopy(definition)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(leaf_paths(definition)))
        if path:
            _set(definition, list(path), draw(ANY_VALUE))
    return stem, definition
