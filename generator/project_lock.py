"""The project lock every run of opgen takes: its own module, so that a `--check` answered from
its record (generator/check_record.py) takes it without importing the generator."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

_held_locks: dict[str, tuple[int, int]] = {}  # folder -> (descriptor, depth), this process's


@contextlib.contextmanager
def project_lock(definitions: Path, *, exclusive: bool) -> Iterator[None]:
    """Holds a lock on the project root (the definitions folder's parent) for a run: writing
    runs (generation, `new`) one at a time, so that one never deletes as orphans what another
    is adding; --check shares it, so that it never compares half a run. Waits for another run,
    saying so; re-entrant within a process (`new` generates while holding it)."""
    root = os.path.dirname(os.path.abspath(definitions))
    if root in _held_locks:
        fd, depth = _held_locks[root]
        _held_locks[root] = (fd, depth + 1)
        try:
            yield
        finally:
            _held_locks[root] = (fd, depth)
        return
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # no root yet: nothing there for another run to race over
        yield
        return
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"[opgen] waiting for another opgen run in {root}", file=sys.stderr, flush=True)
            fcntl.flock(fd, mode)
        _held_locks[root] = (fd, 1)
        try:
            yield
        finally:
            del _held_locks[root]
    finally:
        os.close(fd)  # releases the lock
