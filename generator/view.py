"""`@view`: what a template reads, a frozen dataclass without the comparison and repr methods
(nothing compares or prints a view, and Python builds those methods for each class at import:
about a hundred view classes made `--check` a fifth slower)."""

from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, eq_default=False)
def view(cls: type[T]) -> type[T]:
    return dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
