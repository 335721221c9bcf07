"""`python -m generator` and the `opgen` command. A plain `--check` whose record shows that
nothing it reads changed since it last passed answers before the generator is imported
(generator/check_record.py)."""

import sys

from generator import check_record


def main() -> int:
    argv = sys.argv[1:]
    answered = check_record.answer(argv)
    if answered is not None:
        return answered
    from generator.cli import main as run_command

    return run_command(argv, record_checks=True)


if __name__ == "__main__":
    sys.exit(main())
