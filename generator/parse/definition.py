"""A definition file opened: its top-level fields, which the section readers of parse/op.py
and parse/signature.py read, and every error found in them so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from generator.errors import ErrorCollector
from generator.parse import read
from generator.source import Node, load_definition_file

TOP_LEVEL = {
    "op",
    "domain",
    "version",
    "doc",
    "torch",
    "type_constraints",
    "inputs",
    "outputs",
    "attributes",
    "reference",
    "gradients",
    "data_dependent_sizes",
    "reference_upcast",
    "kernel",
    "function",
    "provided_by",
    "replaces",
    "export",
    "tests",
}
TOP_LEVEL_REQUIRED = {"inputs", "outputs"}
IMPLEMENTATIONS = ("kernel", "function", "provided_by")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class Definition:
    """A definition's top-level fields, and every error found in them so far."""

    path: Path
    root: Node
    fields: dict[str, Node]
    errors: ErrorCollector

    def __contains__(self, key: str) -> bool:
        return key in self.fields

    def __getitem__(self, key: str) -> Node:
        return self.fields[key]

    def get(
        self,
        key: str,
        read_field: Callable[Concatenate[Node, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R | None:
        """The field read by `read_field`; None if it is absent or wrong (then reported)."""
        if key not in self.fields:
            return None
        return self.errors.attempt(read_field, self.fields[key], *args, **kwargs)


def is_interface_only(d: Definition) -> bool:
    """The definition declares an ONNX op's interface and nothing implements or exports it:
    it gets the ONNX schema alone (what `opgen import` writes)."""
    return "op" in d and "torch" not in d and not any(key in d for key in IMPLEMENTATIONS)


def open_definition(path: Path, display_name: str) -> Definition:
    """The file read and its top-level keys checked; raises DefinitionErrors only where nothing
    more can be read (the file does not load, or holds no mapping)."""
    errors = ErrorCollector()
    root = errors.attempt(load_definition_file, path, display_name)
    if root is None:
        errors.raise_if_any()
    assert root is not None
    fields = errors.attempt(read.mapping, root, TOP_LEVEL, TOP_LEVEL_REQUIRED)
    if fields is None:
        # Unknown or missing top-level keys: keep going with what is there, to report more.
        if not root.is_mapping:
            errors.raise_if_any()
        fields = root.value
    return Definition(path, root, fields, errors)
