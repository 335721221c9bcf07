"""Loading op definition files into a tree of values that remember where they came from.

YAML keeps exact line and column for every key and value. TOML (read with the standard
library's tomllib, which keeps no positions) gets the line of the key's first appearance.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generator.errors import DefinitionError, Location


@dataclass
class Node:
    """A value from a definition file with its position and dotted field path."""

    value: Any  # dict[str, Node] | list[Node] | scalar
    location: Location
    path: str
    key_location: Location | None = None

    def error(self, message: str) -> DefinitionError:
        return DefinitionError(self.location, self.path or "<root>", message)

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_sequence(self) -> bool:
        return isinstance(self.value, list)

    def plain(self) -> Any:
        """The value with positions stripped (for free-form data such as test tensors)."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


_STR_TAG = "tag:yaml.org,2002:str"


class _YamlBuilder:
    def __init__(self, text: str, file: str):
        self.file = file
        # libyaml's loader when PyYAML has it (several times faster), with the same marks.
        self.loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)

    def location(self, mark) -> Location:
        return Location(self.file, mark.line + 1, mark.column + 1)

    def build(self) -> Node:
        try:
            root = self.loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            loc = self.location(mark) if mark else Location(self.file, 1, 1)
            raise DefinitionError(loc, "<syntax>", f"not valid YAML: {exc.problem}") from None
        except yaml.YAMLError as exc:
            raise DefinitionError(Location(self.file, 1, 1), "<syntax>", str(exc)) from None
        if root is None:
            raise DefinitionError(Location(self.file, 1, 1), "<root>", "the file is empty")
        return self.convert(root, "")

    def convert(self, node, path: str) -> Node:
        loc = self.location(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            items: dict[str, Node] = {}
            for key_node, value_node in node.value:
                key_loc = self.location(key_node.start_mark)
                key = self.scalar(key_node)
                if not isinstance(key, str):
                    raise DefinitionError(key_loc, path or "<root>", f"key {key!r} is not a string")
                if key in items:
                    raise DefinitionError(key_loc, _join(path, key), "appears twice")
                child = self.convert(value_node, _join(path, key))
                child.key_location = key_loc
                items[key] = child
            return Node(items, loc, path)
        if isinstance(node, yaml.SequenceNode):
            return Node(
                [self.convert(item, _join(path, i)) for i, item in enumerate(node.value)], loc, path
            )
        return Node(self.scalar(node), loc, path)

    def scalar(self, node):
        # Most scalars are strings, which need no constructor call (about 7% of the parse).
        if node.tag == _STR_TAG:
            return node.value
        return self.loader.construct_object(node, deep=True)


class _TomlBuilder:
    def __init__(self, text: str, file: str):
        self.file = file
        self.lines = text.splitlines()
        self.text = text

    def line_of(self, key: str, after: int) -> int:
        pattern = re.compile(rf"^\s*(\[\[?\s*)?([\w.\"-]*\.)?\"?{re.escape(key)}\"?\s*(=|\]|\.)")
        for number in range(after, len(self.lines)):
            if pattern.search(self.lines[number]):
                return number + 1
        return after + 1

    def build(self) -> Node:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            match = re.search(r"line (\d+), column (\d+)", str(exc))
            line, col = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
            raise DefinitionError(
                Location(self.file, line, col), "<syntax>", f"not valid TOML: {exc}"
            ) from None
        return self.convert(data, "", 0)

    def convert(self, value: Any, path: str, line_index: int) -> Node:
        loc = Location(self.file, line_index + 1, 1)
        if isinstance(value, dict):
            items = {}
            for key, child in value.items():
                line = self.line_of(key, line_index)
                node = self.convert(child, _join(path, key), line - 1)
                node.key_location = Location(self.file, line, 1)
                items[key] = node
            return Node(items, loc, path)
        if isinstance(value, list):
            return Node(
                [self.convert(v, _join(path, i), line_index) for i, v in enumerate(value)],
                loc,
                path,
            )
        return Node(value, loc, path)


def load_definition_file(path: Path, display_name: str) -> Node:
    """Read a .yaml/.yml/.toml op definition into a located tree."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError(
            Location(display_name, 1, 1), "<file>", f"not UTF-8 text ({exc.reason})"
        ) from None
    except OSError as exc:
        raise DefinitionError(
            Location(display_name, 1, 1), "<file>", f"cannot read: {exc.strerror}"
        ) from None
    if path.suffix == ".toml":
        return _TomlBuilder(text, display_name).build()
    if path.suffix in (".yaml", ".yml"):
        return _YamlBuilder(text, display_name).build()
    raise DefinitionError(
        Location(display_name, 1, 1), "<file>", "expected a .yaml, .yml or .toml file"
    )
