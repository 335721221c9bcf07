"""Values as YAML text, for the definitions `opgen new` and `opgen import` write: every scalar
goes through `value_text`, which reads what it wrote back with the loader definitions are read
with (generator.source) and raises if that is not the value it was given."""

from __future__ import annotations

import math
from collections.abc import Sequence

import yaml

from generator.model.types import float32
from generator.source import LOADER

# A value a definition spells: a bool, an int, a float, a string, or a list of them.
Value = bool | int | float | str | Sequence["Value"]


def is_printable(code: int) -> bool:
    """A character a YAML file may hold as it is, other than a tab, a BOM or a line break
    (YAML 1.1 breaks lines at U+0085, U+2028 and U+2029 too)."""
    if code in (0x2028, 0x2029, 0xFEFF):
        return False
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if is_printable(code):
        return char
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def quoted(text: str, indent: int = 0) -> str:
    """A YAML double-quoted scalar (JSON's escapes, and YAML's for what JSON leaves raw but
    YAML may not hold). A text of several lines continues after each `\\n` on a new line,
    `indent` spaces in (an escaped line break adds nothing; a leading space is escaped, as the
    continuation line's indentation is not content)."""
    pieces = ['"']
    for index, char in enumerate(text):
        if indent and index and text[index - 1] == "\n":
            pieces.append("\\\n" + " " * indent)
            if char == " ":
                pieces.append("\\ ")
                continue
        pieces.append(escaped(char))
    pieces.append('"')
    return "".join(pieces)


def _yaml_float(text: str) -> str:
    """A Python float's text in YAML 1.1's float syntax, which wants a dot in the mantissa and a
    signed exponent (PyYAML reads 1e-05 and 1.0e5 as strings)."""
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if exponent and exponent[0] not in "+-":
        exponent = "+" + exponent
    return mantissa + ("e" + exponent if exponent else "")


def float_text(value: float, *, as_float32: bool = False) -> str:
    """The shortest spelling that reads back as the same float (`as_float32`: as the same
    float32, for values that are float32's), in YAML 1.1's float syntax."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    if not as_float32:
        return _yaml_float(repr(value))
    value = float32(value)
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"
        if float32(float(text)) == value:
            break
    else:
        text = f"{value:.9g}"
    return _yaml_float(text)


def _spelling(value: Value, as_float32: bool) -> str:
    if isinstance(value, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):  # an undecodable byte of argv
            raise ValueError(f"{value!r} holds a lone surrogate, which no UTF-8 text holds")
        return quoted(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value, as_float32=as_float32)
    return "[" + ", ".join(_spelling(v, as_float32) for v in value) + "]"


def _same(read: object, value: object, as_float32: bool) -> bool:
    """Whether YAML read back the value: of the same type, the same float bit for bit (-0.0 is
    not 0.0; NaN is NaN), the same items."""
    if isinstance(value, list | tuple):
        return (
            isinstance(read, list)
            and len(read) == len(value)
            and all(_same(r, v, as_float32) for r, v in zip(read, value, strict=True))
        )
    if isinstance(value, float):
        if not isinstance(read, float):
            return False
        if as_float32:
            read, value = float32(read), float32(value)
        if math.isnan(value):
            return math.isnan(read)
        return read == value and math.copysign(1.0, read) == math.copysign(1.0, value)
    return type(read) is type(value) and read == value


def value_text(value: Value, *, as_float32: bool = False) -> str:
    """The value as YAML flow text (a string double-quoted and escaped, a float in YAML 1.1's
    syntax, a list in brackets), read back to prove it: raises ValueError where YAML would read
    something else (a string that is no Unicode text, such as a lone surrogate)."""
    text = _spelling(value, as_float32)
    try:
        (read,) = yaml.load(f"[{text}]", Loader=LOADER)
    except (yaml.YAMLError, ValueError, UnicodeError) as exc:
        raise ValueError(f"{value!r} cannot be written in YAML: {exc}") from None
    if not _same(read, value, as_float32):
        raise ValueError(f"{value!r} cannot be written in YAML: it reads back as {read!r}")
    return text
