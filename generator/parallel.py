"""Mapping a function over many items in forked worker processes, when that pays.

Forked workers inherit the parent's memory (imported modules, parsed op definitions, the
function itself, even a closure), so only the items and the results cross the process
boundary. Forking is safe only on Linux and from a process without other threads; elsewhere,
and for few items, everything runs in this process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# In a worker: the function map_forked was given. Any: one slot for functions of every type
# (map_forked's signature types each call: items in, results out).
_function: Callable[[Any], Any] | None = None


def worker_count(items: int, min_items_per_worker: int) -> int:
    """How many processes to share `items` among (1: this process alone)."""
    if _function is not None or sys.platform != "linux" or threading.active_count() != 1:
        return 1  # in a worker already, or where forking is unsafe
    return max(1, min(items // min_items_per_worker, len(os.sched_getaffinity(0))))


def _install(function: Callable[[Any], Any]) -> None:
    global _function
    _function = function


def _call(item: Any) -> Any:
    assert _function is not None  # _install ran first: the pool's initializer
    return _function(item)


def map_forked(
    function: Callable[[Item], Result], items: Sequence[Item], min_items_per_worker: int
) -> list[Result]:
    """[function(item) for item in items], in order; items and results must pickle."""
    workers = worker_count(len(items), min_items_per_worker)
    if workers == 1:
        return [function(item) for item in items]
    # Imported here: a run that does not fork (every warm --check of a small project) skips them.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_install,
        initargs=(function,),  # inherited through fork, never pickled
    ) as pool:
        # A few chunks per worker: fewer round trips, and a slow chunk does not leave one idle.
        return list(pool.map(_call, items, chunksize=max(1, len(items) // (4 * workers))))
