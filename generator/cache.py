"""The user's opgen cache ($XDG_CACHE_HOME/opgen or ~/.cache/opgen): ONNX Runtime headers, compiled
templates and formatted Python. Everything in it is keyed by content, so a stale entry is never
used; OPGEN_NO_CACHE=1 bypasses the template and formatting caches and the records of passed checks
(generator/check_record.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "opgen"


def enabled() -> bool:
    return os.environ.get("OPGEN_NO_CACHE", "") in ("", "0")


def content_key(*parts: str) -> str:
    """(surrogateescape: a part may be a path, and a path any bytes the system allows)"""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def read(kind: str, key: str) -> str | None:
    if not enabled():
        return None
    try:
        # os.path rather than pathlib: a generation of many ops reads thousands of entries.
        with open(os.path.join(cache_root(), kind, key), encoding="utf-8", newline="") as handle:
            return handle.read()
    except OSError:
        return None


def write(kind: str, key: str, text: str) -> None:
    """Best effort: an unwritable cache only costs time."""
    if not enabled():
        return
    from generator.writer import write_atomic

    try:
        write_atomic(cache_root() / kind / key, text)
    except OSError:
        pass
