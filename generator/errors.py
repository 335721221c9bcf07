"""Definition errors: every message names the file, line, column and field path."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, ParamSpec, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")


class Location(NamedTuple):
    """Where a value is in a definition file (a tuple: a definition makes hundreds of them, and a
    tuple is built three times faster than a frozen dataclass)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class DefinitionError(Exception):
    """One problem in one field of an op definition."""

    def __init__(self, location: Location, field: str, message: str):
        self.location = location
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.location}: {self.field}: {self.message}"

    def __reduce__(self) -> tuple[type[DefinitionError], tuple[Location, str, str]]:
        # Pickled by its fields (parsing may run in a worker process).
        return DefinitionError, (self.location, self.field, self.message)


class DefinitionErrors(Exception):
    """All problems found in a run, reported together."""

    def __init__(self, errors: list[DefinitionError]):
        self.errors = sorted(
            errors, key=lambda e: (e.location.file, e.location.line, e.location.column, e.field)
        )
        super().__init__("\n".join(str(e) for e in self.errors))


class ErrorCollector:
    """Collects errors so that one run reports every problem of a file, not only the first."""

    def __init__(self) -> None:
        self.errors: list[DefinitionError] = []

    def add(self, error: DefinitionError) -> None:
        self.errors.append(error)

    def attempt(
        self, fn: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
    ) -> Result | None:
        """Run fn; on a DefinitionError record it and return None."""
        try:
            return fn(*args, **kwargs)
        except DefinitionError as error:
            self.add(error)
            return None
        except DefinitionErrors as many:
            self.errors.extend(many.errors)
            return None

    def raise_if_any(self) -> None:
        if self.errors:
            raise DefinitionErrors(self.errors)
