"""Where a configuration may be: the names and the folders searched. Its own module, so that a
`--check` answered from its record (generator/check_record.py) knows them without importing the
generator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

OPGEN_TOML = "opgen.toml"
PYPROJECT_TOML = "pyproject.toml"
CANDIDATES = (OPGEN_TOML, PYPROJECT_TOML)  # in the order they are tried in one folder


def search_folders(start: Path) -> Iterator[Path]:
    """`start` (absolute), then each parent, up to the repository's root (a folder holding
    .git) or the file system's root."""
    folder = start
    while True:
        yield folder
        if (folder / ".git").exists() or folder.parent == folder:
            return
        folder = folder.parent
