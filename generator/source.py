"""Loading op definition files into a tree of values that remember where they came from.

YAML keeps exact line and column for every key and value. TOML (read with the standard
library's tomllib, which keeps no positions) gets the line of the key's first appearance.

A definition file may come from anywhere (a checkout, a download, a fuzzer), so reading one is
bounded: at most MAX_FILE_BYTES bytes of a regular file, at most MAX_NODES values nested at
most MAX_DEPTH deep, and only plain YAML (no tags, anchors, aliases or merge keys, which a
definition never needs and which make PyYAML build arbitrary objects or expand a small file
exponentially). Anything else is a DefinitionError with a position, never a traceback.
"""

from __future__ import annotations

import datetime
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from generator.errors import DefinitionError, Location

MAX_FILE_BYTES = 1 << 20  # the largest definition is under 4 KiB
MAX_NODES = 100_000  # keys and values; the largest definition has under 400
MAX_DEPTH = 64  # nesting of lists and mappings; definitions use under 10


# libyaml's parser when PyYAML has it (several times faster), with the same marks: what every
# definition is read with, and what opgen new and import read back what they write with.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def _preview(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


_YAML_TAG = "tag:yaml.org,2002:"
_STR_TAG = _YAML_TAG + "str"
_MERGE_TAG = _YAML_TAG + "merge"
_TIMESTAMP_TAG = _YAML_TAG + "timestamp"
_SCALAR_KINDS = {_YAML_TAG + kind: kind for kind in ("null", "bool", "int", "float")}
_TAG_POLICY = "definitions take plain YAML values; only !!str is allowed"
_DATE_POLICY = "a date or time is not a value of any field; quote it to make it a string"


class _Mark(Protocol):
    """Where the YAML parser is (PyYAML's Mark, or libyaml's, which has the same fields)."""

    line: int  # from 0
    column: int  # from 0


def _shown_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag


@dataclass
class _Open:
    """A mapping or list being built; for a mapping, the key waiting for its value."""

    node: Node
    key: str | None = None
    key_location: Location | None = None
    keys: set[str] = field(default_factory=set)


class _YamlBuilder:
    """Builds the tree from libyaml's event stream, iteratively: PyYAML's composer and
    constructor recurse (a deep file overflows the stack) and expand aliases (a small file
    becomes gigabytes). Every limit is checked before the value it concerns is built."""

    def __init__(self, text: str, file: str):
        self.file = file
        self.text = text
        self.loader = LOADER(text)
        self.nodes = 0

    def location(self, mark: _Mark) -> Location:
        return Location(self.file, mark.line + 1, mark.column + 1)

    def build(self) -> Node:
        try:
            return self._document()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            loc = self.location(mark) if mark else Location(self.file, 1, 1)
            problem = exc.problem or str(exc)
            raise DefinitionError(loc, "<syntax>", f"not valid YAML: {problem}") from None
        except yaml.reader.ReaderError as exc:
            # A character YAML forbids (control characters): placed by its index in the text.
            position = min(max(exc.position, 0), len(self.text))
            line = self.text.count("\n", 0, position) + 1
            column = position - self.text.rfind("\n", 0, position)
            char = (
                exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
            )
            raise DefinitionError(
                Location(self.file, line, column),
                "<syntax>",
                f"not valid YAML: {exc.reason} (U+{char:04X})",
            ) from None
        except yaml.YAMLError as exc:
            raise DefinitionError(Location(self.file, 1, 1), "<syntax>", str(exc)) from None

    def _document(self) -> Node:
        loader = self.loader
        loader.get_event()  # stream start
        if loader.check_event(yaml.StreamEndEvent):
            raise DefinitionError(Location(self.file, 1, 1), "<root>", "the file is empty")
        loader.get_event()  # document start
        root = self._tree()
        loader.get_event()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            second = loader.get_event()
            raise DefinitionError(
                self.location(second.start_mark),
                "<syntax>",
                "a second YAML document ('---'); a definition file holds one",
            )
        return root

    def _tree(self) -> Node:
        loader = self.loader
        stack: list[_Open] = []
        while True:
            event = loader.get_event()
            if isinstance(event, yaml.CollectionEndEvent):
                done = stack.pop().node
            else:
                parent = stack[-1] if stack else None
                is_key = parent is not None and parent.node.is_mapping and parent.key is None
                if parent is None:
                    path = ""
                elif is_key:
                    path = parent.node.path
                elif parent.node.is_sequence:
                    path = _join(parent.node.path, len(parent.node.value))
                else:
                    assert parent.key is not None  # a mapping's value: its key came first
                    path = _join(parent.node.path, parent.key)
                loc = self.location(event.start_mark)
                self._check_node(event, loc, path)
                if isinstance(event, yaml.ScalarEvent):
                    value = self._scalar(event, loc, path, is_key)
                    if is_key:
                        assert parent is not None
                        if not isinstance(value, str):
                            raise DefinitionError(
                                loc, path or "<root>", f"key {value!r} is not a string"
                            )
                        if value in parent.keys:
                            raise DefinitionError(loc, _join(path, value), "appears twice")
                        parent.keys.add(value)
                        parent.key, parent.key_location = value, loc
                        continue
                    done = Node(value, loc, path)
                else:
                    if is_key:
                        kind = "mapping" if isinstance(event, yaml.MappingStartEvent) else "list"
                        raise DefinitionError(
                            loc, path or "<root>", f"a key is a {kind}, not a string"
                        )
                    if len(stack) >= MAX_DEPTH:
                        raise DefinitionError(
                            loc, path or "<root>", f"nested more than {MAX_DEPTH} levels deep"
                        )
                    empty: Any = {} if isinstance(event, yaml.MappingStartEvent) else []
                    stack.append(_Open(Node(empty, loc, path)))
                    continue
            if not stack:
                return done
            parent = stack[-1]
            if parent.node.is_sequence:
                parent.node.value.append(done)
            else:
                assert parent.key is not None
                done.key_location = parent.key_location
                parent.node.value[parent.key] = done
                parent.key = None

    def _check_node(
        self,
        event: yaml.AliasEvent | yaml.ScalarEvent | yaml.CollectionStartEvent,
        loc: Location,
        path: str,
    ) -> None:
        """The limits and the YAML features definitions do without, checked before a value is
        built."""
        where = path or "<root>"
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise DefinitionError(loc, where, f"more than {MAX_NODES} values in one file")
        if isinstance(event, yaml.AliasEvent):
            raise DefinitionError(
                loc, where, f"YAML alias *{event.anchor} is not allowed; write the value out"
            )
        if event.anchor is not None:
            raise DefinitionError(
                loc, where, f"YAML anchor &{event.anchor} is not allowed (nor are aliases)"
            )
        tag = event.tag
        if tag is not None and not (isinstance(event, yaml.ScalarEvent) and tag == _STR_TAG):
            raise DefinitionError(
                loc, where, f"YAML tag {_shown_tag(tag)} is not allowed; {_TAG_POLICY}"
            )

    def _scalar(self, event: yaml.ScalarEvent, loc: Location, path: str, is_key: bool) -> Any:
        if event.tag == _STR_TAG:
            return event.value
        tag = self.loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        # Most scalars are strings, which need no constructor call (about 7% of the parse).
        if tag == _STR_TAG:
            return event.value
        where = path or "<root>"
        if tag == _MERGE_TAG:
            what = "merge key '<<'" if is_key else "'<<'"
            raise DefinitionError(
                loc, where, f"YAML {what} is not allowed; write the fields out (or quote '<<')"
            )
        if tag == _TIMESTAMP_TAG:
            raise DefinitionError(loc, where, f"{_preview(event.value)}: {_DATE_POLICY}")
        kind = _SCALAR_KINDS.get(tag)
        if kind is None:  # e.g. '=' (YAML's "value" key): nothing a definition uses
            raise DefinitionError(loc, where, f"{_preview(event.value)} is not a plain YAML value")
        # The stubs type a node's marks as PyYAML's Mark only; libyaml's events carry its own
        # Mark class (same fields), which nodes take at run time.
        node = yaml.ScalarNode(
            tag, event.value, event.start_mark, event.end_mark, event.style  # type: ignore[arg-type]
        )
        try:
            return self.loader.construct_object(node, deep=True)
        except Exception as exc:  # a constructor's own error: too many digits, say
            raise DefinitionError(
                loc, where, f"cannot read {_preview(event.value)} as {kind}: {exc}"
            ) from None


# For _TomlBuilder.check_nesting: strings and comments (whose brackets do not nest), a dotted
# key of more than MAX_DEPTH parts (tomllib takes memory quadratic in their number: 1.5 GiB
# for 20,000), or a bracket. Possessive and anchored at word starts: linear in the text.
_TOML_PART = r"""(?:[\w-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_TOML_TOKEN = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
    rf"|(?<![\w-])(?:[\w-]++)?(?:[ \t]*\.[ \t]*{_TOML_PART}){{{MAX_DEPTH},}}"
    r"|[\[\]{}]",
    re.DOTALL,
)
# Looking up keys' lines costs lines x keys: beyond this many line matches (a hostile file; a
# definition takes a few thousand), keys get their parent's line.
_TOML_LINE_BUDGET = 1_000_000


class _TomlBuilder:
    def __init__(self, text: str, file: str):
        self.file = file
        self.lines = text.splitlines()
        self.text = text
        self.budget = _TOML_LINE_BUDGET
        self.nodes = 0

    def line_of(self, key: str, after: int) -> int:
        pattern = re.compile(rf"^\s*(\[\[?\s*)?([\w.\"-]*\.)?\"?{re.escape(key)}\"?\s*(=|\]|\.)")
        for number in range(after, len(self.lines)):
            self.budget -= 1
            if self.budget < 0:
                break
            if pattern.search(self.lines[number]):
                return number + 1
        return after + 1

    def check_nesting(self) -> None:
        """tomllib recurses into nested arrays and inline tables: too deep a nesting is found
        here first, by counting brackets outside strings and comments."""
        depth = 0
        for match in _TOML_TOKEN.finditer(self.text):
            token = match.group()
            if token in "[{":
                depth += 1
                problem = f"nested more than {MAX_DEPTH} levels deep" if depth > MAX_DEPTH else ""
            elif token in "]}":
                depth = max(0, depth - 1)
                continue
            else:  # a string, a comment or a dotted key too long
                problem = (
                    "" if token[0] in "\"'#" else f"a dotted key of more than {MAX_DEPTH} parts"
                )
            if problem:
                start = match.start()
                line = self.text.count("\n", 0, start) + 1
                column = start - self.text.rfind("\n", 0, start)
                raise DefinitionError(Location(self.file, line, column), "<syntax>", problem)

    def build(self) -> Node:
        self.check_nesting()
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            match = re.search(r"line (\d+), column (\d+)", str(exc))
            line, col = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
            raise DefinitionError(
                Location(self.file, line, col), "<syntax>", f"not valid TOML: {exc}"
            ) from None
        except (ValueError, RecursionError) as exc:
            # tomllib's int() refuses over 4300 digits; the recursion is a last resort, should
            # the bracket count above ever be fooled.
            raise DefinitionError(
                Location(self.file, 1, 1), "<syntax>", f"not valid TOML: {exc}"
            ) from None
        return self.convert(data, "", 0, 0)

    def convert(self, value: Any, path: str, line_index: int, depth: int) -> Node:
        loc = Location(self.file, line_index + 1, 1)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise DefinitionError(
                loc, path or "<root>", f"more than {MAX_NODES} values in one file"
            )
        if isinstance(value, dict | list) and depth >= MAX_DEPTH:
            # Dotted keys (a.b.c...) nest without brackets.
            raise DefinitionError(
                loc, path or "<root>", f"nested more than {MAX_DEPTH} levels deep"
            )
        if isinstance(value, dict):
            items = {}
            for key, child in value.items():
                line = self.line_of(key, line_index)
                node = self.convert(child, _join(path, key), line - 1, depth + 1)
                node.key_location = Location(self.file, line, 1)
                items[key] = node
            return Node(items, loc, path)
        if isinstance(value, list):
            return Node(
                [
                    self.convert(v, _join(path, i), line_index, depth + 1)
                    for i, v in enumerate(value)
                ],
                loc,
                path,
            )
        if isinstance(value, datetime.date | datetime.time):
            raise DefinitionError(loc, path or "<root>", f"{value.isoformat()!r}: {_DATE_POLICY}")
        return Node(value, loc, path)


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bounded(path: Path) -> bytes:
    """A regular file's bytes, at most MAX_FILE_BYTES; OSError or ValueError (too big, not a
    regular file) otherwise. Opened without blocking (a FIFO would wait for a writer forever)
    and checked on the open descriptor, so that what is read is what was checked."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{file_kind(mode)}, not a definition file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:  # the size stat gives may lie (/proc) or change
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes, the limit for a definition")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_error(path: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if os.path.islink(path):
        target = os.readlink(path)
        return f"cannot read: {reason} (a symbolic link to {target!r})"
    return f"cannot read: {reason}"


def load_definition_file(path: Path, display_name: str) -> Node:
    """Read a .yaml/.yml/.toml op definition into a located tree."""
    start = Location(display_name, 1, 1)
    if path.suffix not in (".toml", ".yaml", ".yml"):
        raise DefinitionError(start, "<file>", "expected a .yaml, .yml or .toml file")
    try:
        data = read_bounded(path)
    except ValueError as exc:
        raise DefinitionError(start, "<file>", str(exc)) from None
    except OSError as exc:
        raise DefinitionError(start, "<file>", _read_error(path, exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = (
            len(data[data.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode("utf-8", "replace"))
            + 1
        )
        raise DefinitionError(
            Location(display_name, line, column), "<file>", f"not UTF-8 text ({exc.reason})"
        ) from None
    # What read_text's universal newlines did: "\r\n" and "\r" end lines as "\n" does.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if path.suffix == ".toml":
        return _TomlBuilder(text, display_name).build()
    return _YamlBuilder(text, display_name).build()
