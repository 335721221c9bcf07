"""The four operators of dim expressions on Python ints (`//` floors, as every target's does)."""

from __future__ import annotations

from typing import assert_never

from generator.model.shapes import BinaryOp


def apply(op: BinaryOp, left: int, right: int) -> int:
    match op:
        case "+":
            return left + right
        case "-":
            return left - right
        case "*":
            return left * right
        case "//":
            return left // right
        case _:
            assert_never(op)
