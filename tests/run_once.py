"""What the suite's processes share in one run. Under pytest-xdist each worker is a process of
its own with its own session fixtures: a build they all need is made by the first to ask, in a
folder of the run's (the workers' common temporary folder), while the others wait for it."""

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Read when conftest.py imports this module, before pytest_configure takes xdist's variables out
# of the environment (the pytest sessions the tests start are sessions of their own).
IN_A_WORKER = "PYTEST_XDIST_WORKER" in os.environ


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every process of this run sees (xdist's workers each get a
    subfolder of it as their own base)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if IN_A_WORKER else base


@contextmanager
def exclusive(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """Holds the run's lock called name: one process at a time runs the block."""
    with open(run_folder(tmp_path_factory) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def made_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder called name, made by make(folder) in the first process that asks; the others
    wait and get the same folder. A make that fails leaves nothing marked done: the next process
    to ask tries again (and fails the same way, each test saying so)."""
    folder = run_folder(tmp_path_factory) / name
    with exclusive(tmp_path_factory, name):
        done = folder / ".made"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
