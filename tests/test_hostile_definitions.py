"""Hostile definitions: values that parse but cannot be represented or would break an emitter
are definition errors (one line each, exit 2, nothing written, never a traceback); whatever
happens past validation writes nothing; the output does not depend on the working directory."""

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INVERSE = (ROOT / "opdefs" / "inverse.yaml").read_text()
SLIDING = (ROOT / "tests" / "opdefs" / "sliding_window.yaml").read_text()


def project_with(tmp_path: Path, text: str, name: str = "inverse.yaml") -> Path:
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / name).write_text(text)
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.h", tmp_path / "opdefs")
    return tmp_path


def edited(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def assert_definition_error(result, file: str, field: str, fragment: str) -> None:
    """Exit 2, a one-line error at file:line:col: field: ...fragment..., no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    match = re.search(
        rf"^error: {re.escape(file)}:\d+:\d+: {re.escape(field)}: (.*)$", result.stderr, re.M
    )
    assert match, result.stderr
    assert fragment in match.group(1), result.stderr


def assert_nothing_written(project: Path) -> None:
    assert not (project / "generated").exists(), "nothing may be written on a bad definition"


# --------------------------------------------------------------------------- 14: trailing newlines

NEWLINE_CASES = [
    # (edit of inverse.yaml, message fragment)
    (("op: Inverse", 'op: "MalProbe\\n"'), "not a valid identifier"),
    (("domain: ai.opgen", 'domain: "mal.test\\n"'), "not a dotted lower-case domain"),
    (("name: opgen::inverse", 'name: "opgen::mal_probe\\n"'), "not a PyTorch qualified name"),
    (("shape: [..., N, N]", 'shape: [..., "N\\n", N]'), "expected '...'"),
    (("  T:\n    types:", '  "T\\n":\n    types:'), "not a valid identifier"),
]


@pytest.mark.parametrize("edit,fragment", NEWLINE_CASES, ids=[c[0][0][:12] for c in NEWLINE_CASES])
def test_trailing_newline_is_not_a_valid_name(tmp_path, run_generator, edit, fragment):
    project = project_with(tmp_path, edited(INVERSE, *edit))
    result = run_generator(cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr, result.stderr
    assert_nothing_written(project)


def test_every_validation_pattern_rejects_a_trailing_newline():
    from generator import model

    patterns = {
        model.IDENTIFIER: "Op",
        model.DOMAIN: "a.b",
        model.TORCH_NAME: "a::b",
        model.ATEN_OVERLOAD: "aten::add.Tensor",
    }
    for pattern, good in patterns.items():
        assert pattern.fullmatch(good) and pattern.match(good), pattern.pattern
        assert not pattern.match(good + "\n"), pattern.pattern  # even with match()
