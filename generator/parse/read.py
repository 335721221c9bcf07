"""Field readers: one value of a definition, checked, or a DefinitionError at its location."""

from __future__ import annotations

import math
import re
import struct

from generator.errors import DefinitionError, ErrorCollector, Location
from generator.model.names import (
    IDENTIFIER,
    MAX_NAME_LENGTH,
    OPGEN_NAMESPACE_NAMES,
    PACKAGE_NAMES,
    SHARED_OUTPUT_NAMES,
    is_runtime_global_name,
    reserved_reason,
)
from generator.model.types import (
    FLOAT32_MAX,
    FROM_ONNX_NAME,
    INT64_MAX,
    INT64_MIN,
    VERSION_MAX,
    DType,
    MapType,
    OptionalType,
    SequenceType,
    SparseTensorType,
    TensorType,
    ValueType,
    float32,
)
from generator.source import Node


def mapping(
    node: Node, allowed: set[str], required: set[str], unknown_to: ErrorCollector | None = None
) -> dict[str, Node]:
    """The fields of a mapping; raises listing unknown and missing fields. With `unknown_to`,
    unknown fields are recorded there instead and the known ones returned, so that a typo
    does not drop the whole item (and every error that would cascade from its absence)."""
    if not node.is_mapping:
        raise node.error(f"expected a mapping with keys {sorted(allowed)}, found {kind_of(node)}")
    errors = ErrorCollector()
    unknown = unknown_to if unknown_to is not None else errors
    for key, child in node.value.items():
        if key not in allowed:
            loc = child.key_location or child.location
            hint = closest(key, allowed)
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


def closest(word: str, options: set[str]) -> str | None:
    import difflib

    match = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    return match[0] if match else None


def kind_of(node: Node) -> str:
    value = node.value
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


def string(node: Node, what: str = "a string") -> str:
    if not isinstance(node.value, str):
        raise node.error(f"expected {what}, found {kind_of(node)}")
    if "\0" in node.value:
        # Strings end up in C strings too (ONNX schema docs, defaults): a NUL would cut them.
        raise node.error(f"expected {what} without NUL characters, found one (\\0)")
    return node.value


def in_int64(value: int, node: Node) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise node.error(
            f"{value} is outside int64's range [-2**63, 2**63 - 1], which every target holds "
            "integers in"
        )
    return value


def in_float32(value: float, node: Node) -> float:
    """A float attribute value: finite and representable in float32."""
    if not math.isfinite(value):
        raise node.error(
            f"{value} cannot be a float attribute value: PyTorch schemas cannot hold an infinite "
            "or NaN default, so opgen rejects them everywhere rather than work in some runtimes "
            f"only; for an unbounded limit write float32's largest value, {FLOAT32_MAX!r}"
        )
    if abs(value) > FLOAT32_MAX and not math.isinf(float32(value)):
        value = math.copysign(FLOAT32_MAX, value)  # its shortest spelling, 3.4028235e+38
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


def integer(node: Node, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(node.value, bool) or not isinstance(node.value, int):
        raise node.error(f"expected an integer, found {kind_of(node)}")
    if minimum is not None and node.value < minimum:
        raise node.error(f"expected an integer >= {minimum}, found {node.value}")
    if maximum is not None and node.value > maximum:
        raise node.error(f"expected an integer <= {maximum}, found {node.value}")
    return in_int64(node.value, node)


def version_number(node: Node) -> int:
    """An op, opset or since version: >= 1 and held in a C++ int by ONNX."""
    return integer(node, minimum=1, maximum=VERSION_MAX)


def number(node: Node) -> float:
    if isinstance(node.value, str) and re.fullmatch(r"[-+]?\d+[eE][-+]?\d+", node.value):
        raise node.error(
            f"YAML reads {node.value!r} as a string; write it with a decimal point, "
            f"e.g. {node.value.replace('e', '.0e').replace('E', '.0E')}"
        )
    if isinstance(node.value, bool) or not isinstance(node.value, int | float):
        raise node.error(f"expected a number, found {kind_of(node)}")
    try:
        return float(node.value)
    except OverflowError:  # an integer of hundreds of digits
        raise node.error(f"{node.value} is too large for a float") from None


def finite(node: Node) -> float:
    """A tolerance: a finite number >= 0 (inf and NaN would make a comparison meaningless)."""
    value = number(node)
    if not math.isfinite(value) or value < 0:
        raise node.error(f"expected a finite number >= 0, found {value}")
    return value


def boolean(node: Node) -> bool:
    if not isinstance(node.value, bool):
        raise node.error(f"expected true or false, found {kind_of(node)}")
    return node.value


def sequence(node: Node) -> list[Node]:
    if not isinstance(node.value, list):  # node.is_sequence, spelled so that mypy narrows
        raise node.error(f"expected a list, found {kind_of(node)}")
    return node.value


def name(node: Node, what: str) -> str:
    """A name that is an identifier, reserved or not: the names of an interface-only op, which
    only ONNX schemas spell (as strings). `reserved_name` checks the rest where code uses it."""
    text = string(node)
    if not IDENTIFIER.fullmatch(text):
        raise node.error(f"{what} '{text}' is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*)")
    return text


def reserved_name(node: Node, what: str) -> None:
    """Refuses a name that generated code cannot declare."""
    reason = reserved_reason(node.value)
    if reason is not None:
        raise node.error(f"{what} '{node.value}' {reason}; choose another name")


def identifier(node: Node, what: str) -> str:
    name = string(node)
    if not IDENTIFIER.fullmatch(name):
        raise node.error(f"{what} '{name}' is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*)")
    reserved_name(node, what)
    return name


def too_long(what: str, name: str) -> str:
    return (
        f"{what} may have at most {MAX_NAME_LENGTH} characters (file names are derived from "
        f"it), found {len(name)}"
    )


def op_id_field(node: Node) -> str:
    """The definition's file stem: it names generated/<op_id>/ and namespace opgen::<op_id>."""
    op_id = identifier(node, "op definition file name")
    if (
        op_id in SHARED_OUTPUT_NAMES
        or op_id in OPGEN_NAMESPACE_NAMES
        or op_id in PACKAGE_NAMES
        or is_runtime_global_name(op_id)
    ):
        raise node.error(
            f"'{op_id}' is taken by the generated code's own files, C++ names or package "
            "functions; rename the definition file"
        )
    if len(op_id) > MAX_NAME_LENGTH:
        raise node.error(too_long("an op definition file name", op_id))
    return op_id


def op_id_problem(op_id: str) -> str | None:
    """Why a file stem cannot be an op id (None if it can), for the scaffold."""
    try:
        op_id_field(Node(op_id, Location("<name>", 1, 1), "<file name>"))
    except DefinitionError as error:
        return error.message
    return None


def doc(fields: dict[str, Node], errors: ErrorCollector) -> str:
    """A bad doc is reported without dropping what it documents (which would cascade)."""
    return (errors.attempt(string, fields["doc"]) or "") if "doc" in fields else ""


def dtype(node: Node) -> DType:
    name = string(node, "a dtype name")
    try:
        return DType(name)
    except ValueError:
        hint = _dtype_hint(name)
        known = f" (did you mean '{hint}'?)" if hint else f"; expected one of {DTYPE_NAMES}"
        raise node.error(f"unknown dtype '{shown(name)}'{known}") from None


DTYPE_NAMES = [d.value for d in DType]


VALUE_TYPE_SYNTAX = (
    "a dtype such as float32, or seq(<type>), map(<key dtype>, <type>), optional(<type>), "
    "sparse_tensor(<dtype>)"
)


def value_type(node: Node) -> ValueType:
    """A type as a type constraint lists it or a parameter has it: `float32` (a tensor),
    `seq(float32)`, `map(string, int64)`, `optional(seq(float32))`, `sparse_tensor(float32)`."""
    text = string(node, "a type")
    try:
        parsed, rest = _value_type(re.sub(r"\s*([(),])\s*", r"\1", text.strip()))
    except ValueError as problem:
        if "(" not in text:  # a word: say which dtypes there are
            raise node.error(
                f"{problem}; expected one of {[d.value for d in DType]}, or seq(<type>), "
                "map(<key dtype>, <type>), optional(<type>), sparse_tensor(<dtype>)"
            ) from None
        raise node.error(f"'{shown(text)}': {problem}; expected {VALUE_TYPE_SYNTAX}") from None
    if rest:
        raise node.error(
            f"'{shown(text)}': unexpected '{shown(rest)}' at the end; expected {VALUE_TYPE_SYNTAX}"
        )
    return parsed


def shown(text: str) -> str:
    """A type as messages quote it: a hostile one shortened, on one line."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:81])
    return text if len(text) <= 80 else text[:77] + "..."


def _dtype_name(word: str) -> DType:
    try:
        return DType(word)
    except ValueError:
        hint = _dtype_hint(word)
        raise ValueError(
            f"unknown dtype '{shown(word)}'" + (f" (did you mean '{hint}'?)" if hint else "")
        ) from None


def _dtype_hint(word: str) -> str | None:
    """Our name for ONNX's (float: float32), or the closest dtype name."""
    return FROM_ONNX_NAME.get(word) or (
        closest(word, {d.value for d in DType}) if len(word) <= 64 else None
    )


# ONNX's map keys.
MAP_KEY_DTYPES = (
    DType.string,
    DType.int8,
    DType.int16,
    DType.int32,
    DType.int64,
    DType.uint8,
    DType.uint16,
    DType.uint32,
    DType.uint64,
)
MAP_KEY_NAMES = tuple(d.value for d in MAP_KEY_DTYPES)


# ONNX nests at most three deep (optional(seq(tensor(float)))); a bound keeps a hostile
# definition from exhausting the stack.
MAX_TYPE_DEPTH = 8


def _value_type(text: str, depth: int = 0) -> tuple[ValueType, str]:
    """The type at the start of `text` (spaces removed), and what follows it."""
    if depth > MAX_TYPE_DEPTH:
        raise ValueError(f"types nest at most {MAX_TYPE_DEPTH} deep")
    word = re.match(r"[a-z0-9_]*", text)
    head = word.group(0) if word else ""
    rest = text[len(head) :]
    if not rest.startswith("("):
        return TensorType(_dtype_name(head)), rest
    rest = rest[1:]
    if head in ("tensor", "sparse_tensor"):
        inner = re.match(r"[a-z0-9_]*", rest)
        dtype = _dtype_name(inner.group(0) if inner else "")
        rest = rest[len(dtype.value) :]
        if head == "tensor":
            raise ValueError(f"write the dtype alone ('{dtype.value}') for a tensor")
        parsed: ValueType = SparseTensorType(dtype)
    elif head in ("seq", "optional"):
        element, rest = _value_type(rest, depth + 1)
        parsed = SequenceType(element) if head == "seq" else OptionalType(element)
    elif head == "map":
        key, rest = _value_type(rest, depth + 1)
        if not isinstance(key, TensorType) or not rest.startswith(","):
            raise ValueError("a map is map(<key dtype>, <value type>)")
        if key.dtype not in MAP_KEY_DTYPES:
            raise ValueError(
                f"a map's key is a string or an integer ({', '.join(MAP_KEY_NAMES)}), "
                f"not {key.dtype.value}"
            )
        value, rest = _value_type(rest[1:], depth + 1)
        parsed = MapType(key.dtype, value)
    else:
        raise ValueError(f"unknown type '{shown(head)}(...)'")
    if not rest.startswith(")"):
        raise ValueError(f"missing ')' after {head}(...")
    return parsed, rest[1:]


def node_at(root: Node, field_path: str) -> Node:
    """The node a field path such as `inputs[1].variadic` names, or the deepest one of its
    parents that the file has (a default left out: the item that leaves it out)."""
    node = root
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field_path):
        if part.startswith("[") and node.is_sequence and int(part[1:-1]) < len(node.value):
            node = node.value[int(part[1:-1])]
        elif node.is_mapping and part in node.value:
            node = node.value[part]
        else:
            break
    return node


def field_locations(fields: dict[str, Node]) -> dict[str, Location]:
    locations = {key: node.location for key, node in fields.items()}
    torch_node = fields.get("torch")
    if torch_node is not None and torch_node.is_mapping:
        for key, node in torch_node.value.items():
            locations[f"torch.{key}"] = node.location
    return locations


def owner(path: str) -> str:
    """'inputs[0].name' -> 'inputs[0]'; 'type_constraints.T' -> 'type variable T'."""
    if path.startswith("type_constraints."):
        return f"type variable {path.split('.', 1)[1]}"
    return path.rsplit(".", 1)[0]
