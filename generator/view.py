"""`@view`: what a template reads, a dataclass without the comparison and repr methods (nothing
compares or prints a view, and Python builds those methods for each class at import: about a
hundred view classes made `--check` a fifth slower). A view is frozen for mypy
(`frozen_default`) but not at run time: nothing assigns to a view once built, and a frozen
class gets two more generated methods (__setattr__, __delattr__), which cost `--check` as much
again."""

from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, eq_default=False)
def view(cls: type[T]) -> type[T]:
    return dataclasses.dataclass(eq=False, repr=False)(cls)
