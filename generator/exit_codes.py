"""The exit statuses of every `python -m generator` command, defined once here (each command's
--help epilog and docs/cli.md list them)."""

from __future__ import annotations

EXIT_OK = 0
# The command ran and the answer is no: generated files out of date (--check), a build that
# failed (build), an op that disagrees with its reference (run).
EXIT_STALE = 1
EXIT_FAILED = 1
# Bad usage, a bad op definition, or an internal error (a bug in opgen; nothing written).
EXIT_BAD_INPUT = 2
