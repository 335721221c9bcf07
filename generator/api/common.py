"""Spelling helpers shared by the per-language modules."""

from __future__ import annotations

from generator.model.op import OpDef


def guard_absent_inputs(
    op: OpDef, entries: list[dict], checks, absent: str, either: str
) -> list[dict]:
    """Makes each rendered check (entries[i] renders checks[i]) pass when an optional input it
    reads is absent: `absent` spells "input {} is absent", `either` the language's `or`."""
    for entry, check in zip(entries, checks, strict=True):
        names = op.guards(check)
        if names:
            alternatives = [absent.format(name) for name in names]
            entry["condition"] = either.join(alternatives + [f"({entry['condition']})"])
    return entries
