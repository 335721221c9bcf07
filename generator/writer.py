"""Writing generated files: only when changed, atomically, and comparing for --check."""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from generator.generated_file import GENERATED_MARK, GeneratedFile


@dataclass(frozen=True)
class Change:
    path: Path
    kind: str  # "new" | "changed" | "orphaned"
    old: str = ""
    new: str = ""

    @property
    def diff(self) -> str:
        """Computed only when shown: most runs never print it (empty for an orphan)."""
        return _diff(self.old, self.new, self.path)


def plan_changes(output_dir: Path, files: list[GeneratedFile]) -> list[Change]:
    changes = []
    for file in files:
        try:
            # Bytes decoded as is: read_text would turn a "\r" the content holds into "\n"; an
            # undecodable file is simply different. A string path: this runs for every file.
            with open(os.path.join(output_dir, file.path), "rb") as handle:
                old = handle.read().decode("utf-8", "replace")
        except FileNotFoundError:
            old = None
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            old = None  # no such file can exist; project.generate reports the name
        if old == file.content:
            continue
        kind = "new" if old is None else "changed"
        changes.append(Change(output_dir / file.path, kind, old or "", file.content))
    return changes


def _diff(old: str, new: str, target: Path) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{target} (on disk)",
            tofile=f"{target} (generated)",
            n=2,
        )
    )


def find_orphans(output_dir: Path, produced_paths: list[str]) -> list[Change]:
    """Files in the output directory that no definition produces (the output of a deleted or
    renamed definition, or something put there by hand). Caches (__pycache__, dotfiles) are
    not output."""
    produced = set(produced_paths)
    orphans = []
    # os.walk rather than Path.rglob: plain strings, one scandir per directory (thousands of
    # files with many ops).
    for directory, subdirectories, names in os.walk(output_dir):
        subdirectories[:] = [
            d for d in subdirectories if d != "__pycache__" and not d.startswith(".")
        ]
        prefix = os.path.relpath(directory, output_dir).replace(os.sep, "/") + "/"
        prefix = "" if prefix == "./" else prefix
        for name in names:
            if not name.startswith(".") and prefix + name not in produced:
                orphans.append(Change(output_dir / (prefix + name), "orphaned"))
    return sorted(orphans, key=lambda change: change.path)


# _replace's temporary files: ".<name>.<pid>.tmp".
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]{1,10})\.tmp")


def _alive(pid: int) -> bool:
    """Whether a process with that id exists (if in doubt, yes: its file is then kept)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such process id)
        return False
    except PermissionError:  # another user's process
        return True
    return True


def find_leftovers(output_dir: Path) -> list[Path]:
    """Our temporary files whose process is gone: a run killed between writing one and
    renaming it (the file it was to replace is whole, old or new). A live process's are
    being written right now."""
    leftovers = []
    for directory, subdirectories, names in os.walk(output_dir):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        for name in names:
            match = _TEMPORARY.fullmatch(name)
            if match and not _alive(int(match.group("pid"))):
                leftovers.append(Path(directory, name))
    return sorted(leftovers)


def remove_leftovers(leftovers: list[Path]) -> None:
    for path in leftovers:
        with contextlib.suppress(FileNotFoundError):  # another run's cleanup was first
            path.unlink()


def is_generated(path: Path) -> bool:
    """Whether a file carries our do-not-edit header (only such files are ever deleted)."""
    try:
        with path.open(encoding="utf-8") as handle:
            return GENERATED_MARK in handle.readline()
    except (OSError, UnicodeDecodeError):
        return False


def remove_orphans(output_dir: Path, orphans: list[Change]) -> list[Change]:
    """Deletes the orphans that are generated files, and directories left empty; returns the
    ones left alone (not ours to delete)."""
    kept = []
    for orphan in orphans:
        if is_generated(orphan.path):
            orphan.path.unlink()
        else:
            kept.append(orphan)
    for directory in sorted((d for d in output_dir.rglob("*") if d.is_dir()), reverse=True):
        leftovers = [p for p in directory.iterdir() if p.name != "__pycache__"]
        if not leftovers:
            for cache in directory.glob("__pycache__"):
                for item in cache.iterdir():
                    item.unlink()
                cache.rmdir()
            directory.rmdir()
    return kept


def write_changes(changes: list[Change]) -> None:
    """Writes new and changed files, each atomically; untouched files keep their mtime (for
    make). Each directory is made once, not once per file: thousands of files share a few."""
    for directory in sorted({change.path.parent for change in changes}):
        directory.mkdir(parents=True, exist_ok=True)
    for change in changes:
        _replace(os.fspath(change.path), change.new)


def write_atomic(path: Path, content: str) -> None:
    """One file, atomically, making its directory if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(os.fspath(path), content)


def _replace(path: str, content: str) -> None:
    """Write via a temporary file and rename, so no reader ever sees half a file. The temporary
    name is a dotfile (never taken for an orphan) with the process id, which no other live
    process has: cheaper than mkstemp's random names, which took a third of the time of writing
    12,000 new files."""
    directory, name = os.path.split(path)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        # "wb" truncates what a dead process with the same id may have left; bytes, so that no
        # newline is translated.
        with open(temp, "wb") as handle:
            handle.write(content.encode("utf-8"))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
