"""What a Python expression of a definition (a `reference`, a gradient formula, a test's
sampler) may name: one fact, which the validator checks expressions against (by Python's own
scoping, generator/parse/expressions.py) and from which every generated module that evaluates
expressions takes its import lines."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PythonImport:
    """One `import module [as alias]` line of a generated module."""

    module: str
    alias: str = ""
    # Why the module is imported though nothing generated calls it (the noqa comment).
    unused_because: str = ""

    @property
    def name(self) -> str:
        """The name the import binds."""
        return self.alias or self.module.split(".")[0]

    @property
    def line(self) -> str:
        alias = f" as {self.alias}" if self.alias and self.alias != self.module else ""
        comment = f"  # noqa: F401 ({self.unused_because})" if self.unused_because else ""
        return f"import {self.module}{alias}{comment}"


_NAMED_BY_EXPRESSIONS = "expressions of the definition may name it"

# The modules an expression may name, as it names them: what the generated modules import.
EXPRESSION_MODULES = (
    PythonImport("torch", "", _NAMED_BY_EXPRESSIONS),
    PythonImport("torch.nn.functional", "F", _NAMED_BY_EXPRESSIONS),
    PythonImport("math", "", _NAMED_BY_EXPRESSIONS),
    PythonImport("numpy", "np", _NAMED_BY_EXPRESSIONS),
)
EXPRESSION_MODULE_NAMES = frozenset(module.name for module in EXPRESSION_MODULES)

# And Python's builtins (no generated module that evaluates expressions binds one of their names
# at its top level: tests/test_expressions.py).
EXPRESSION_BUILTINS = frozenset(dir(builtins))

# A test's sampler is a function of these (generated test modules: `def _sample_...(shape, gen)`).
SAMPLER_PARAMETERS = ("shape", "gen")


def import_block(imports: Iterable[PythonImport]) -> str:
    """The `import` lines of a generated module, as isort (ruff's "I") orders them: the standard
    library's, a blank line, the others'; a module imported twice once (without a noqa comment
    where one of them uses it)."""
    chosen: dict[tuple[str, str], PythonImport] = {}
    for imported in imports:
        key = (imported.module, imported.name)
        if key not in chosen or not imported.unused_because:
            chosen[key] = imported
    ordered = sorted(chosen.values(), key=lambda i: (i.module.lower(), i.alias))
    standard = [i.line for i in ordered if i.module.split(".")[0] in sys.stdlib_module_names]
    others = [i.line for i in ordered if i.module.split(".")[0] not in sys.stdlib_module_names]
    return "\n\n".join("\n".join(group) for group in (standard, others) if group)
