"""Hostile definition files: YAML tags, aliases, merge keys, deep nesting, huge files, files
that are not files. Each gets one located error line and exit code 2, in bounded time and
memory, never a traceback, and nothing is written (docs/cli.md: "A bad definition")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

# One test process runs the whole module (pytest-xdist's loadgroup): its tests read one
# generation of every hostile file.
pytestmark = pytest.mark.xdist_group("test_hostile_files")

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "opdefs" / "inverse.yaml").read_text()
TIMEOUT = 120  # seconds for one generator run: a hang fails instead of blocking the suite

LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(7)
)

# (file name in opdefs/, content, the error expected: "line:col: field: message fragment")
CONTENT_CASES: list[tuple[str, str | bytes, str]] = [
    ("tag_python.yaml", "op: !!python/name:os.system\n", "1:5: op: YAML tag !!python/name:os"),
    ("tag_local.yaml", "op: !mytag x\n", "1:5: op: YAML tag !mytag is not allowed"),
    ("tag_float.yaml", "version: !!float abc\n", "1:10: version: YAML tag !!float is not"),
    ("tag_int.yaml", "version: !!int 12abc\n", "1:10: version: YAML tag !!int is not"),
    ("tag_timestamp.yaml", "doc: !!timestamp 2024-99-99\n", "1:6: doc: YAML tag !!timestamp"),
    ("tag_binary.yaml", "doc: !!binary aGk=\n", "1:6: doc: YAML tag !!binary is not"),
    ("tag_set.yaml", "inputs: !!set {a, b}\n", "1:9: inputs: YAML tag !!set is not"),
    ("tag_omap.yaml", "inputs: !!omap [a: 1]\n", "1:9: inputs: YAML tag !!omap is not"),
    ("tag_key.yaml", "!!int 1: a\n", "1:1: <root>: YAML tag !!int is not allowed"),
    ("date.yaml", "op: X\ndoc: 2024-01-01\n", "2:6: doc: '2024-01-01': a date or time"),
    ("datetime.yaml", "doc: 2024-01-01 10:00:00\n", "1:6: doc: '2024-01-01 10:00:00': a date"),
    ("merge.yaml", "op: X\n<<: {doc: y}\n", "2:1: <root>: YAML merge key '<<' is not allowed"),
    ("int_key.yaml", "1: a\n", "1:1: <root>: key 1 is not a string"),
    ("null_key.yaml", "~: a\n", "1:1: <root>: key None is not a string"),
    ("list_key.yaml", "? [a]\n: b\n", "1:3: <root>: a key is a list, not a string"),
    ("huge_int.yaml", "version: " + "1" * 5000 + "\n", "1:10: version: cannot read '111"),
    ("laughs.yaml", LAUGHS, "1:4: a: YAML anchor &a is not allowed"),
    ("recursive_alias.yaml", "inputs: &a [*a]\n", "1:9: inputs: YAML anchor &a is not"),
    ("alias.yaml", "inputs: *a\n", "1:9: inputs: YAML alias *a is not allowed"),
    ("second_document.yaml", "op: X\n---\nop: Y\n", "2:1: <syntax>: a second YAML document"),
    ("deep_list.yaml", "inputs: " + "[" * 100_000, "1:72: inputs" + "[0]" * 63 + ": nested"),
    ("deep_map.yaml", "inputs: " + "{a: " * 10_000, "1:261: inputs" + ".a" * 63 + ": nested"),
    ("many_values.yaml", "inputs: [" + "0," * 200_000 + "]", "1:200004: inputs[99997]: more than"),
    ("too_big.yaml", "#" * (1 << 20) + "\n", "1:1: <file>: larger than 1048576 bytes"),
    ("control.yaml", "doc: a\x01\n", "1:7: <syntax>: not valid YAML: control characters"),
    ("not_utf8.yaml", b"op: X\ndoc: \xff\n", "2:6: <file>: not UTF-8 text"),
    ("deep_array.toml", "a = " + "[" * 10_000, "1:69: <syntax>: nested more than 64"),
    ("deep_inline.toml", "a = " + "{b = " * 5_000, "1:325: <syntax>: nested more than 64"),
    # tomllib took 1.5 GiB for a dotted key of 20,000 parts (found by tests/test_loader_fuzz.py).
    ("deep_dotted.toml", "a" + ".a" * 20_000 + " = 1\n", "1:1: <syntax>: a dotted key of more"),
    ("dotted_table.toml", "[a" + '."a"' * 100 + "]\n", "1:2: <syntax>: a dotted key of more"),
    ("dotted_63.toml", "a" + ".a" * 63 + " = 1\n", "1:1: a: unknown field 'a'"),
    ("date.toml", "doc = 2024-01-01\n", "1:1: doc: '2024-01-01': a date or time"),
    ("huge_int.toml", "version = " + "1" * 5000 + "\n", "1:1: <syntax>: not valid TOML: Exceeds"),
]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m generator` as the run_generator fixture runs it, with a timeout."""
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def assert_rejected(result: subprocess.CompletedProcess, project: Path) -> None:
    assert result.returncode == 2, result.stdout + result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert not (project / "generated").exists(), "nothing may be written"
    for line in result.stderr.splitlines():
        assert line.startswith("error: ") or line.endswith("nothing written"), line


@pytest.fixture(scope="module")
def hostile_project(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, float]:
    """One project holding every hostile file, generated once: every problem of every file
    is reported in one run."""
    project = tmp_path_factory.mktemp("hostile")
    opdefs = project / "opdefs"
    opdefs.mkdir()
    for name, content, _ in CONTENT_CASES:
        if isinstance(content, bytes):
            (opdefs / name).write_bytes(content)
        else:
            (opdefs / name).write_text(content)
    for name, _ in EXPRESSION_CASES:
        (opdefs / name).write_text(EXPRESSIONS[name])
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.h", opdefs)
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.cuh", opdefs)
    make_file_cases(opdefs)
    started = time.monotonic()
    result = run([], project)
    return project, result, time.monotonic() - started


@pytest.mark.parametrize("name,content,expected", CONTENT_CASES, ids=[c[0] for c in CONTENT_CASES])
def test_hostile_content_is_a_located_error(hostile_project, name, content, expected):
    project, result, _ = hostile_project
    assert_rejected(result, project)
    assert f"error: opdefs/{name}:{expected}" in result.stderr, result.stderr[-3000:]


def test_hostile_files_take_bounded_time(hostile_project):
    # A billion laughs alone took 20 s and 1.7 GiB; every file here together takes about 1 s.
    project, result, seconds = hostile_project
    assert_rejected(result, project)
    assert seconds < 30


# ----------------------------------------------------------------- expressions nested deeply


def _with_output_dim(dim: str) -> str:
    old = "    shape: [..., N, N]\n    doc: The inverse"
    assert old in GOOD
    return GOOD.replace(old, f'    shape: [..., N, "{dim}"]\n    doc: The inverse')


def _with_reference(expression: str) -> str:
    old = "reference: torch.linalg.inv(X)"
    assert old in GOOD
    return GOOD.replace(old, f'reference: "{expression}"')


EXPRESSIONS = {
    # Found by tests/test_loader_fuzz.py: is_file() raised ENAMETOOLONG (an OSError traceback).
    "kernel_name_too_long.yaml": GOOD.replace("source: inverse_kernel.h", "source: " + "k" * 300),
    "minus_3000_dim.yaml": _with_output_dim("-" * 3000 + "N"),
    "minus_1000_dim.yaml": _with_output_dim("-" * 1000 + "N"),
    "minus_10000_reference.yaml": _with_reference("-" * 10_000 + "torch.linalg.inv(X)"),
    "minus_1900_reference.yaml": _with_reference("-" * 1900 + "torch.linalg.inv(X)"),
    "attribute_chain_reference.yaml": _with_reference("X" + ".T" * 500),
}
EXPRESSION_CASES = [
    ("kernel_name_too_long.yaml", "kernel.source: kernel file: File name too long"),
    ("minus_3000_dim.yaml", "outputs[0].shape[2]: '-----"),
    ("minus_3000_dim.yaml", "characters long; an expression may have 2000"),
    ("minus_1000_dim.yaml", "is not a valid dim expression: nested more than 64 levels deep"),
    ("minus_10000_reference.yaml", "reference: not a valid Python expression: 10019 characters"),
    ("minus_1900_reference.yaml", "reference: not a valid Python expression: nested more than"),
    ("attribute_chain_reference.yaml", "reference: not a valid Python expression: nested more"),
]


@pytest.mark.parametrize(
    "name,fragment", EXPRESSION_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(EXPRESSION_CASES)]
)
def test_deep_expressions_are_located_errors(hostile_project, name, fragment):
    project, result, _ = hostile_project
    assert_rejected(result, project)
    lines = [line for line in result.stderr.splitlines() if f"opdefs/{name}:" in line]
    assert any(fragment in line for line in lines), "\n".join(lines)


# ----------------------------------------------------------------------- files, not contents

# (file name in opdefs/, the error expected after "<name>:1:1: <file>: ")
FILE_CASES = [
    ("fifo.yaml", "a named pipe (FIFO), not a definition file"),
    ("zero.yaml", "a device, not a definition file"),
    ("loop_a.yaml", "cannot read: Too many levels of symbolic links (a symbolic link to 'loop_b"),
    ("dangling.yaml", "cannot read: No such file or directory (a symbolic link to '/nonexistent"),
    ("directory.yaml", "a directory, not a definition file"),
]


def make_file_cases(opdefs: Path) -> None:
    os.mkfifo(opdefs / "fifo.yaml")  # reading it used to wait for a writer forever
    (opdefs / "zero.yaml").symlink_to("/dev/zero")  # used to read until memory ran out
    (opdefs / "loop_a.yaml").symlink_to("loop_b.yaml")
    (opdefs / "loop_b.yaml").symlink_to("loop_a.yaml")
    (opdefs / "dangling.yaml").symlink_to("/nonexistent/target.yaml")
    (opdefs / "directory.yaml").mkdir()
    # Unreadable: as root it is read anyway (and its content is what is wrong).
    (opdefs / "unreadable.yaml").write_text("op: [\n")
    (opdefs / "unreadable.yaml").chmod(0)


@pytest.mark.parametrize("name,message", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_files_that_are_not_definitions(hostile_project, name, message):
    # Named as they appear in opdefs/, not as their targets.
    project, result, _ = hostile_project
    assert_rejected(result, project)
    assert f"error: opdefs/{name}:1:1: <file>: {message}" in result.stderr, result.stderr[-3000:]


def test_unreadable_file(hostile_project):
    project, result, _ = hostile_project
    expected = (
        "error: opdefs/unreadable.yaml:2:1: <syntax>: not valid YAML"
        if os.geteuid() == 0  # root reads it regardless of its mode
        else "error: opdefs/unreadable.yaml:1:1: <file>: cannot read: Permission denied"
    )
    assert expected in result.stderr, result.stderr[-3000:]


# ------------------------------------------------------------------------------------ output


def small_project(tmp_path: Path, stem: str = "inverse") -> Path:
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / f"{stem}.yaml").write_text(GOOD)
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.h", tmp_path / "opdefs")
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.cuh", tmp_path / "opdefs")
    return tmp_path


@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
def test_output_names_too_long_are_checked_before_writing(tmp_path, mode):
    # A 250-character op id is a valid file name, but "<op id>_schema_test.cc" is not: the
    # run used to write 4 files and then fail with a traceback. Op ids (and domains) now have
    # at most 128 characters, which leaves room for every name derived from them; the output
    # path check behind it covers deep output directories (below).
    stem = "a" * 250
    project = small_project(tmp_path, stem)
    result = run(mode, project)
    assert_rejected(result, project)
    assert f"error: opdefs/{stem}.yaml:" in result.stderr
    assert "may have at most 128 characters (file names are derived from it), found 250" in (
        result.stderr
    )


def test_output_dir_too_deep_is_an_error_before_writing(tmp_path):
    project = small_project(tmp_path)
    deep = "/".join(["d" * 200] * 20) + "/generated"  # 4030 bytes: no generated path fits
    result = run(["--output-dir", deep], project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "paths have fewer than 4096" in result.stderr
    assert not (project / ("d" * 200)).exists()


@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
@pytest.mark.parametrize(
    "output_dir,message",
    [
        ("a_file", "the package folder a_file exists and is not a folder"),
        ("a_file/generated", "the package folder a_file/generated cannot be made: "),
    ],
)
def test_output_dir_that_cannot_be_made(tmp_path, mode, output_dir, message):
    project = small_project(tmp_path)
    (project / "a_file").write_text("not a directory\n")
    result = run([*mode, "--output-dir", output_dir], project)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {message}"), result.stderr
    assert "Traceback" not in result.stderr
    assert (project / "a_file").read_text() == "not a directory\n"
