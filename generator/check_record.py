"""The record of the last `--check` that passed, so that the next one answers in milliseconds
when nothing it reads has changed (the pre-commit hook runs it on every commit).

A record is kept per working directory, interpreter and command line, in the user's opgen cache
(generator/cache.py), for the plain check only (`--check`, with or without `-q`). It holds the
folders the check compared and one digest of everything that decides its answer:
- the generator itself: every file of this package (code, templates, runtime sources);
- the definitions folder and the package folder: every name, and every file's bytes, size and
  modification and change times (so a file changed and put back while a check ran is seen),
  and each folder's real path (a link on the way to it may be pointed elsewhere);
- the configuration: each file a configuration could be in, from the working directory up to
  the repository's root, present or not;
- the interpreter and what it imports: its version, its search path, the names in each folder
  of it and which of them are regular packages (an installed package's version is in its
  distribution folder's name), a zip file's size and times.
Bytecode caches are left out of the generator and the package folder: Python writes them as
they are imported. A symbolic link, a special file, a temporary file of a run in progress and
trees over MAX_BYTES are never recorded: the full check runs. A record is only a shortcut:
anything that cannot be read, or does not match, runs the full check, and OPGEN_NO_CACHE=1
turns it off.

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
_RECORD_LIMIT = 64 * 1024  # a record is a few hundred bytes
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


# A record is only a shortcut: whatever goes wrong in using or making one (a damaged or
# tampered record, an odd file system, no home folder) runs the full check, which reports
# what is really wrong. Hence the broad catches below.


def answer(argv: list[str]) -> int | None:
    """EXIT_OK (after the usual line) when a passed check of the same command, in the same
    folder and interpreter, read exactly what is there now; None when the full check must run."""
    try:
        if not recorded(argv):
            return None
        record = json.loads(_read_record(_record_path(argv)))
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
    except Exception:  # see above
        return None
    if not (set(argv) & {"-q", "--quiet"}):
        print(f"{files} generated files up to date")
    return EXIT_OK


def start(argv: list[str], definitions: Path, output: Path) -> Pending | None:
    """Before a recorded check compares anything (holding the project lock): the digest of
    what it is about to read, or None when it cannot be recorded."""
    try:
        if not recorded(argv):
            return None
        definitions_path, output_path = str(definitions.absolute()), str(output.absolute())
        digest = _digest(definitions_path, output_path)
        return Pending(_record_path(argv), definitions_path, output_path, digest)
    except Exception:  # see above
        return None


def save(pending: Pending, files: int) -> None:
    """After the check passed: the record, if nothing changed while it ran (someone editing a
    definition meanwhile would otherwise be recorded as checked: the digest holds each file's
    change time, so even a file changed and put back is seen)."""
    try:
        if _digest(pending.definitions, pending.output) != pending.digest:
            return
    except Exception:  # see above
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


def _read_record(path: Path) -> bytes:
    """The record's bytes: of a regular file only (a FIFO put there must not hang the check),
    and of a small one."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _RECORD_LIMIT:
            raise Unrecordable(str(path))
        return os.read(descriptor, _RECORD_LIMIT + 1)
    finally:
        os.close(descriptor)


def _digest(definitions: str, output: str) -> str:
    digest = _Digest()
    digest.add("python", sys.version, *sys.path)
    working_directory = os.getcwd()
    for entry in sys.path:
        digest.import_path_entry(os.path.abspath(entry or working_directory), working_directory)
    for searched in search_folders(Path(working_directory)):
        for name in CANDIDATES:
            digest.file_or_absence(str(searched / name))
    # Bytecode caches are Python's, written as the generator and the package are imported;
    # the definitions folder is the user's own, all of it (a kernel may be anywhere in it).
    digest.tree("generator", str(_GENERATOR), skipped=("__pycache__",))
    digest.tree("definitions", definitions, skipped=())
    digest.tree("output", output, skipped=("__pycache__",))
    return digest.hexdigest()


class _Digest:
    """sha256 over length-prefixed fields (so that no two inputs run together alike), reading
    at most MAX_BYTES. A file counts with its bytes and its modification and change times."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._left = MAX_BYTES

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def add(self, *fields: str | bytes) -> None:
        for field in fields:
            data = os.fsencode(field) if isinstance(field, str) else field
            self._hash.update(b"%d:" % len(data))
            self._hash.update(data)

    def import_path_entry(self, entry: str, working_directory: str) -> None:
        """What an import could find there: each name in a folder, and whether a folder in it
        is a regular package (an __init__.py turns a namespace folder into one); a zip file's
        size and times. In the working directory, only what could be imported: the rest of it
        (editors' files, build output) changes too often."""
        self.add("import path", entry, os.path.realpath(entry))
        try:
            status = os.stat(entry)
        except FileNotFoundError:
            self.add("absent")
            return
        if not stat.S_ISDIR(status.st_mode):
            self.add(*_times(status))
            return
        with os.scandir(entry) as scanned:
            names = sorted((item.name, item.is_dir()) for item in scanned)
        for name, is_folder in names:
            if entry == working_directory and not (is_folder or name.endswith(_MODULE_SUFFIXES)):
                continue
            package = is_folder and os.path.exists(os.path.join(entry, name, "__init__.py"))
            self.add(name, "package" if package else "")

    def file_or_absence(self, path: str) -> None:
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            self.add("absent", path)
            return
        self._file(path, status)

    def tree(self, role: str, root: str, skipped: tuple[str, ...]) -> None:
        """Every folder's and file's name and every file's bytes, in a fixed order; the root's
        real path too (a link on the way to it may be pointed elsewhere)."""
        self.add(role, root, os.path.realpath(root))
        # The root itself may be reached through a link (its real path is in the digest).
        pending = [(root, os.stat(root))]  # a stack, not recursion: folders may nest deeply
        while pending:
            path, status = pending.pop()
            if not stat.S_ISDIR(status.st_mode):
                self._file(path, status)
                continue
            with os.scandir(path) as scanned:
                entries = sorted(
                    (entry for entry in scanned if entry.name not in skipped),
                    key=lambda entry: entry.name,
                )
            self.add("folder", path, str(len(entries)))
            pending.extend(
                (entry.path, entry.stat(follow_symlinks=False)) for entry in reversed(entries)
            )

    def _file(self, path: str, status: os.stat_result) -> None:
        name = os.path.basename(path)
        # (a looser match than writer.py's name of its temporary files, so it never misses one)
        if not stat.S_ISREG(status.st_mode) or (".opgen-" in name and name.endswith(".tmp")):
            raise Unrecordable(path)
        self._left -= status.st_size
        if self._left < 0:
            raise Unrecordable(path)
        with open(path, "rb") as handle:
            self.add("file", path, *_times(status), handle.read(status.st_size + 1))


def _times(status: os.stat_result) -> tuple[str, str, str]:
    return str(status.st_size), str(status.st_mtime_ns), str(status.st_ctime_ns)
