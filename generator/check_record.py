"""The record of the last `--check` that passed, so that the next one answers in milliseconds
when nothing it reads has changed (the pre-commit hook runs it on every commit).

A record is kept per working directory, interpreter and command line, in the user's opgen cache
(generator/cache.py), for the plain check only (`--check`, with or without `-q`). It holds the
folders the check compared and one digest of everything that decides its answer:
- the generator itself: every file of this package (code, templates, runtime sources);
- the definitions folder and the package folder: every name and every byte in them;
- the configuration: each file a configuration could be in, from the working directory up to
  the repository's root, present or not;
- the interpreter and what it imports: its version, its search path and the names in each
  folder of it (an installed package's version is in its distribution folder's name).
Bytecode caches are left out: Python writes them when the generated package is imported. A
symbolic link, a special file, a temporary file of a run in progress and trees over
MAX_BYTES are never recorded: the full check runs. A record is only a shortcut: anything that
cannot be read, or does not match, runs the full check, and OPGEN_NO_CACHE=1 turns it off.

This module imports no more than the standard library and the small modules the check needs
to agree with (the cache, where a configuration may be, the project lock, the exit codes)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from generator import cache
from generator.config_files import CANDIDATES, search_folders
from generator.exit_codes import EXIT_OK
from generator.project_lock import project_lock

FORMAT = "opgen-check-record-1"
RECORDED_FLAGS = frozenset({"--check", "-q", "--quiet"})
MAX_BYTES = 64 * 1024 * 1024  # read at most this much for one digest, else run the full check
_GENERATOR = Path(__file__).parent
# What in the working directory could be imported (`python -m` puts it first on the path); the
# rest of it (editors' files, build output) changes too often to be part of the digest.
_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pth")


class Unrecordable(Exception):
    """Something the digest cannot vouch for: the full check runs, and records nothing."""


class Pending:
    """A check under way that may be recorded: its folders and the digest before it ran. (A
    plain class: the dataclasses module alone would double this module's import time.)"""

    __slots__ = ("record", "definitions", "output", "digest")

    def __init__(self, record: Path, definitions: str, output: str, digest: str) -> None:
        self.record = record
        self.definitions = definitions
        self.output = output
        self.digest = digest


def recorded(argv: list[str]) -> bool:
    """Whether this command line's check is recorded (and may be answered from a record)."""
    return "--check" in argv and set(argv) <= RECORDED_FLAGS and cache.enabled()


def answer(argv: list[str]) -> int | None:
    """EXIT_OK (after the usual line) when a passed check of the same command, in the same
    folder and interpreter, read exactly what is there now; None when the full check must run."""
    if not recorded(argv):
        return None
    try:
        text = _record_path(argv).read_text(encoding="utf-8")
        record = json.loads(text)
        definitions, output = record["definitions"], record["output"]
        digest, files = record["digest"], record["files"]
        texts = (record["format"], definitions, output, digest)
        if record["format"] != FORMAT or not all(isinstance(text, str) for text in texts):
            return None
        if type(files) is not int:
            return None
        with project_lock(Path(definitions), exclusive=False):
            if _digest(definitions, output) != digest:
                return None
    except (OSError, ValueError, KeyError, TypeError, Unrecordable):
        return None
    if not (set(argv) & {"-q", "--quiet"}):
        print(f"{files} generated files up to date")
    return EXIT_OK


def start(argv: list[str], definitions: Path, output: Path) -> Pending | None:
    """Before a recorded check compares anything (holding the project lock): the digest of
    what it is about to read, or None when it cannot be recorded."""
    if not recorded(argv):
        return None
    try:
        definitions_path, output_path = str(definitions.absolute()), str(output.absolute())
        digest = _digest(definitions_path, output_path)
    except (OSError, Unrecordable):
        return None
    return Pending(_record_path(argv), definitions_path, output_path, digest)


def save(pending: Pending, files: int) -> None:
    """After the check passed: the record, if nothing changed while it ran (someone editing a
    definition meanwhile would otherwise be recorded as checked)."""
    try:
        if _digest(pending.definitions, pending.output) != pending.digest:
            return
    except (OSError, Unrecordable):
        return
    record = {
        "format": FORMAT,
        "definitions": pending.definitions,
        "output": pending.output,
        "digest": pending.digest,
        "files": files,
    }
    cache.write("check", pending.record.name, json.dumps(record, indent=1) + "\n")


def _record_path(argv: list[str]) -> Path:
    key = cache.content_key(FORMAT, sys.executable, sys.prefix, os.getcwd(), *argv)
    return cache.cache_root() / "check" / key


def _digest(definitions: str, output: str) -> str:
    digest = _Digest()
    digest.add("python", sys.version, *sys.path)
    working_directory = os.getcwd()
    for entry in sys.path:
        folder = os.path.abspath(entry or working_directory)
        if os.path.isdir(folder):
            digest.add("path entry", folder, *_importable_names(folder, working_directory))
    for searched in search_folders(Path(working_directory)):
        for name in CANDIDATES:
            digest.file_or_absence(str(searched / name))
    digest.tree("generator", str(_GENERATOR))
    digest.tree("definitions", definitions)
    digest.tree("output", output)
    return digest.hexdigest()


def _importable_names(folder: str, working_directory: str) -> list[str]:
    with os.scandir(folder) as entries:
        if folder != working_directory:
            return sorted(entry.name for entry in entries)
        return sorted(
            entry.name
            for entry in entries
            if entry.name.endswith(_MODULE_SUFFIXES) or entry.is_dir(follow_symlinks=True)
        )


class _Digest:
    """sha256 over length-prefixed fields (so that no two inputs run together alike), reading
    at most MAX_BYTES."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._left = MAX_BYTES

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def add(self, *fields: str | bytes) -> None:
        for field in fields:
            data = field.encode("utf-8", "surrogateescape") if isinstance(field, str) else field
            self._hash.update(b"%d:" % len(data))
            self._hash.update(data)

    def file_or_absence(self, path: str) -> None:
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            self.add("absent", path)
            return
        self._file(path, status)

    def tree(self, role: str, root: str) -> None:
        """Every folder's and file's name and every file's bytes, in a fixed order."""
        self.add(role, root)
        self._file_or_folder(root, os.lstat(root))

    def _file_or_folder(self, path: str, status: os.stat_result) -> None:
        if not stat.S_ISDIR(status.st_mode):
            self._file(path, status)
            return
        with os.scandir(path) as scanned:
            entries = sorted(
                (entry for entry in scanned if entry.name != "__pycache__"),
                key=lambda entry: entry.name,
            )
        self.add("folder", path, str(len(entries)))
        for entry in entries:
            self._file_or_folder(entry.path, entry.stat(follow_symlinks=False))

    def _file(self, path: str, status: os.stat_result) -> None:
        name = os.path.basename(path)
        if not stat.S_ISREG(status.st_mode) or (".opgen-" in name and name.endswith(".tmp")):
            raise Unrecordable(path)
        self._left -= status.st_size
        if self._left < 0:
            raise Unrecordable(path)
        with open(path, "rb") as handle:
            self.add("file", path, handle.read(status.st_size + 1))
