"""The test cases of a definition: known values, random inputs, error cases, tolerances."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.model.types import DType


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


# The dtypes a case or comparison runs at (`dtypes:`), by type variable: it runs at each of the
# op's dtype combinations whose variables named here take one of their dtypes listed (None: all).
DTypeChoice = dict[str, tuple[DType, ...]]


# Test cases name inputs by their values: a variadic input X's are X_0, X_1, ... (value_name).


@dataclass(frozen=True)
class KnownCase:
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    attributes: dict[str, Any]
    dtypes: DTypeChoice | None


@dataclass(frozen=True)
class RandomCase:
    shapes: dict[str, tuple[int | str, ...]]
    dynamic: dict[str, tuple[int, ...]]  # dynamic dim symbol -> sizes to run at (first: export)
    samples: dict[
        str, str
    ]  # input (each of a variadic one's values) -> an expression of `shape` and `gen`
    attributes: dict[str, Any]


@dataclass(frozen=True)
class ErrorCase:
    """Inputs the op must reject: `shapes` (filled with ones; a shape error, caught by every
    shape rule) or `inputs` with values (a data error, caught by the kernel at run time)."""

    shapes: dict[str, tuple[int, ...]]
    values: dict[str, Any] | None
    message: str
    attributes: dict[str, Any]
    dtypes: DTypeChoice | None = None


@dataclass(frozen=True)
class BuiltinEquivalent:
    domain: str
    op_type: str
    version: int
    dtypes: DTypeChoice | None = None


@dataclass(frozen=True)
class Tests:
    tolerances: dict[DType, Tolerance]
    known: tuple[KnownCase, ...]
    random: tuple[RandomCase, ...]
    errors: tuple[ErrorCase, ...]
    builtin_equivalents: tuple[BuiltinEquivalent, ...]


# An interface-only op (the ONNX schema alone) has no tests.
NO_TESTS = Tests({}, (), (), (), ())
