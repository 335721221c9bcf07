"""Writing generated files: only when changed, atomically, and comparing for --check."""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from generator.render import GeneratedFile


@dataclass(frozen=True)
class Change:
    path: Path
    kind: str  # "new" | "changed" | "orphaned"
    diff: str


def plan_changes(output_dir: Path, files: list[GeneratedFile]) -> list[Change]:
    changes = []
    for file in files:
        target = output_dir / file.path
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old == file.content:
            continue
        diff = "".join(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                file.content.splitlines(keepends=True),
                fromfile=f"{target} (on disk)",
                tofile=f"{target} (generated)",
                n=2,
            )
        )
        changes.append(Change(target, "new" if old is None else "changed", diff))
    return changes


def write_atomic(path: Path, content: str) -> None:
    """Write via a temporary file and rename, so no reader ever sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_files(output_dir: Path, files: list[GeneratedFile]) -> list[Change]:
    """Write the files whose content differs; untouched files keep their mtime (for make)."""
    changes = plan_changes(output_dir, files)
    by_path = {output_dir / f.path: f for f in files}
    for change in changes:
        write_atomic(change.path, by_path[change.path].content)
    return changes
