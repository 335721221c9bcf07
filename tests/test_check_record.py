"""A plain `--check` that passed is recorded, and the next one answers from the record only while
nothing the check reads has changed (generator/check_record.py). Each test changes one kind of
input after a record was made and proves that the full check ran and gave its own answer; one
test watches every file a full check opens and fails when one lies outside what the record's
digest covers (the next input someone adds to the generator)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FULL_CHECK_MARK = "generator.cli"  # imported by the full check only (seen with -X importtime)


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory) -> Path:
    """One opgen cache for the module's projects (records are kept per working directory)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def project(tmp_path: Path, cache_home: Path) -> Path:
    """Two shipped ops, generated, in a project of their own."""
    project = tmp_path / "project"
    (tmp_path / "cache").symlink_to(cache_home)
    (project / "opdefs").mkdir(parents=True)
    for name in ("inverse.yaml", "inverse_kernel.h", "inverse_kernel.cuh", "ms_gelu.yaml"):
        shutil.copy(ROOT / "opdefs" / name, project / "opdefs" / name)
    (project / ".git").mkdir()  # the configuration search stops here
    assert _run(project).returncode == 0
    return project


def _env(project: Path, **extra: str) -> dict[str, str]:
    return {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "XDG_CACHE_HOME": str(project.parent / "cache"),
        **extra,
    }


def _run(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "generator", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(project, **env),
    )


def _check(project: Path, *args: str, **env: str) -> tuple[int, str, bool]:
    """Exit status, what was printed, and whether the full check ran."""
    result = _run(project, "--check", *args, **env)
    full = FULL_CHECK_MARK in result.stderr
    shown = result.stdout + "\n".join(
        line for line in result.stderr.splitlines() if not line.startswith("import time:")
    )
    return result.returncode, shown, full


def _recorded(project: Path) -> None:
    """A passing full check, then one answered from its record."""
    status, shown, full = _check(project)
    assert (status, full) == (0, True), shown
    status, shown, full = _check(project)
    assert (status, full) == (0, False), shown
    assert shown.endswith(" generated files up to date\n"), shown


def test_a_passed_check_answers_the_next_one_and_says_the_same(project):
    status, first, full = _check(project)
    assert (status, full) == (0, True)
    status, second, full = _check(project)
    assert (status, full) == (0, False)
    assert first == second and first.endswith("generated files up to date\n")
    status, quiet, full = _check(project, "-q")  # another command line: its own record
    assert (status, quiet, full) == (0, "", True)
    assert _check(project, "-q") == (0, "", False)


def test_a_changed_generated_file_runs_the_full_check(project):
    _recorded(project)
    target = project / "generated" / "inverse" / "torch_op.py"
    target.write_text(target.read_text() + "# edited\n")
    status, shown, full = _check(project)
    assert (status, full) == (1, True)
    assert "changed: generated/inverse/torch_op.py" in shown


def test_a_changed_definition_runs_the_full_check(project):
    _recorded(project)
    definition = project / "opdefs" / "ms_gelu.yaml"
    definition.write_text(definition.read_text().replace("doc: |\n", "doc: |\n  Edited.\n", 1))
    status, shown, full = _check(project)
    assert (status, full) == (1, True), shown
    assert "out of date" in shown


def test_a_file_added_to_either_folder_runs_the_full_check(project):
    _recorded(project)
    (project / "generated" / "notes.txt").write_text("mine\n")
    assert _check(project)[::2] == (0, True)  # left alone: the check still passes, in full
    assert _check(project)[::2] == (0, False)
    (project / "opdefs" / "late.yaml").write_text("name: [\n")
    status, shown, full = _check(project)
    assert (status, full) == (2, True)
    assert "late.yaml" in shown


def test_a_changed_configuration_runs_the_full_check(project):
    _recorded(project)
    (project / "opgen.toml").write_text('package = "elsewhere"\n')
    status, shown, full = _check(project)
    assert full and status != 0, shown
    (project / "opgen.toml").unlink()
    assert _check(project)[::2] == (0, False)  # exactly the recorded state again
    # a configuration in a parent folder, above the repository's root, is not searched
    (project / ".git").rmdir()
    (project.parent / "opgen.toml").write_text('package = "elsewhere"\n')
    status, shown, full = _check(project)
    assert full and status != 0, shown


def test_a_changed_generator_runs_the_full_check(project, tmp_path):
    """The generator's own files are part of the digest: a template edited after a record
    makes the check fail."""
    copy = tmp_path / "copy"
    shutil.copytree(
        ROOT / "generator", copy / "generator", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {"PYTHONPATH": str(copy)}
    assert _check(project, **env)[::2] == (0, True)
    assert _check(project, **env)[::2] == (0, False)
    template = copy / "generator" / "templates" / "python" / "torch_op.py.j2"
    template.write_text(template.read_text() + "\n# a new last line\n")
    status, shown, full = _check(project, **env)
    assert (status, full) == (1, True), shown


def test_a_new_module_on_the_import_path_runs_the_full_check(project, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": f"{ROOT}:{site}"}
    assert _check(project, **env)[::2] == (0, True)
    assert _check(project, **env)[::2] == (0, False)
    (site / "yaml.py").write_text("raise ImportError('a shadowing module')\n")
    status, shown, full = _check(project, **env)
    assert full and status != 0, shown


@pytest.mark.parametrize("kind", ["temporary file", "symbolic link", "named pipe"])
def test_what_the_digest_cannot_vouch_for_is_never_recorded(project, kind):
    output = project / "generated"
    if kind == "temporary file":
        (output / ".notes.txt.opgen-12-0123456789abcdef.tmp").write_text("unmarked\n")
    elif kind == "symbolic link":
        (output / "link.txt").symlink_to(project / "opdefs" / "ms_gelu.yaml")
    else:
        os.mkfifo(output / "pipe")
    for _ in range(2):
        status, shown, full = _check(project)
        assert (status, full) == (0, True), shown


def test_a_failed_check_and_other_flags_are_never_answered_from_a_record(project):
    target = project / "generated" / "inverse" / "torch_op.py"
    text = target.read_text()
    target.write_text(text + "# edited\n")
    for _ in range(2):
        assert _check(project)[::2] == (1, True)
    target.write_text(text)
    _recorded(project)
    for flags in (("--check", "-v"), ("--dry-run",), ("--check", "--opdefs-dir", "opdefs")):
        result = _run(project, *flags)
        assert FULL_CHECK_MARK in result.stderr, flags


def _records(project: Path) -> list[Path]:
    """The records of checks in this project."""
    folder = project.parent / "cache" / "opgen" / "check"
    mine = json.dumps(str(project / "opdefs"))
    return (
        [path for path in folder.glob("*") if mine in path.read_text()] if folder.exists() else []
    )


def test_no_record_is_used_or_kept_with_the_cache_off(project):
    assert _check(project, OPGEN_NO_CACHE="1")[::2] == (0, True)
    assert _records(project) == []  # not kept
    assert _check(project)[::2] == (0, True)
    assert len(_records(project)) == 1
    assert _check(project, OPGEN_NO_CACHE="1")[::2] == (0, True)  # not used


def test_a_damaged_record_runs_the_full_check(project):
    _recorded(project)
    (record,) = _records(project)
    good = json.loads(record.read_text())
    damaged = [
        "",
        "{",
        "[]",
        json.dumps({**good, "files": "many"}),
        json.dumps({**good, "format": "opgen-check-record-0"}),
        json.dumps({**good, "definitions": str(project / "nowhere")}),
        json.dumps({**good, "output": 7}),
        json.dumps({key: value for key, value in good.items() if key != "digest"}),
        "\udcff".encode("utf-8", "surrogateescape").decode("latin-1"),
        "[" * 100_000 + "]" * 100_000,  # deeper than the JSON decoder goes
        "x" * 200_000,
    ]
    for text in damaged:
        record.write_text(text, encoding="latin-1")
        status, shown, full = _check(project)
        assert (status, full) == (0, True), (text[:80], shown)
    record.unlink()
    os.mkfifo(record)  # a record that would never end: not read at all
    status, shown, full = _check(project)
    assert (status, full) == (0, True), shown


def test_every_file_a_full_check_opens_is_covered_by_the_digest(project, tmp_path):
    """Watches a full check's file opens and folder listings (Python's audit events): each must
    lie in what the digest reads (the generator, the definitions, the package folder, a
    configuration candidate), on the import path (whose folders' names it reads), or in the
    cache (keyed by content)."""
    script = textwrap.dedent("""
        import json, os, sys
        seen = []
        def watch(event, args):
            if event in ("open", "os.listdir", "os.scandir") and isinstance(args[0], (str, bytes, os.PathLike)):
                seen.append(os.path.abspath(os.fsdecode(args[0])))
        sys.addaudithook(watch)
        from generator import check_record, cli
        status = cli.main(["--check"], record_checks=True)
        print(json.dumps({"status": status, "seen": seen, "path": sys.path, "cache": str(check_record.cache.cache_root())}))
        """)
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(project),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["status"] == 0
    import_path = {os.path.abspath(entry or project) for entry in report["path"]}
    covered = [
        str(ROOT / "generator"),
        str(project / "opdefs"),
        str(project / "generated"),
        report["cache"],
        *(folder for folder in import_path if folder != str(project)),  # the project: below
    ]
    candidates = {
        str(folder / name) for folder in (project,) for name in ("opgen.toml", "pyproject.toml")
    }
    outside = [
        path
        for path in report["seen"]
        if path != str(project)  # the project lock opens the project's folder
        and path not in candidates
        and not any(path == root or path.startswith(root + os.sep) for root in covered)
    ]
    assert outside == [], f"files a check reads that its record does not cover: {outside}"
    assert any(path.startswith(str(project / "opdefs")) for path in report["seen"])


def test_a_link_on_the_way_to_a_folder_pointed_elsewhere_runs_the_full_check(tmp_path):
    """The same definitions, reached through a link that now leads to a copy at another depth:
    the generated CUDA includes name the definitions' real place, so the package is stale."""
    project = tmp_path / "linked"
    (project / "a").mkdir(parents=True)
    (project / "deep" / "er" / "b").mkdir(parents=True)
    for name in ("complex_rotate.yaml", "complex_rotate_kernel.h", "complex_rotate_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / name, project / "a" / name)
        shutil.copy(ROOT / "opdefs" / name, project / "deep" / "er" / "b" / name)
    (project / "src").symlink_to("a")
    (project / ".git").mkdir()
    (project / "opgen.toml").write_text('definitions = "src"\npackage = "myops"\n')
    assert _run(project).returncode == 0
    _recorded(project)
    (project / "src").unlink()
    (project / "src").symlink_to("deep/er/b")
    status, shown, full = _check(project)
    assert (status, full) == (1, True), shown
    assert "deep/er/b/complex_rotate_kernel.cuh" in shown


def test_a_working_directory_not_named_in_utf8_is_checked_and_recorded(project):
    odd = project / os.fsdecode(b"w\xff")
    odd.mkdir()
    (odd / "opgen.toml").write_text(
        'definitions = "../opdefs"\npackage-dir = "../generated"\nbuild-dir = "../build"\n'
    )
    assert _check(odd)[::2] == (0, True)
    assert _check(odd)[::2] == (0, False)


def test_a_folder_on_the_import_path_becoming_a_package_runs_the_full_check(project, tmp_path):
    """The generated package's name taken by a regular package on the import path is an error:
    a namespace folder of that name turning into one must be seen."""
    site = tmp_path / "site"
    (site / "generated").mkdir(parents=True)
    env = {"PYTHONPATH": f"{site}:{ROOT}"}  # (before the checkout's own package "generated")
    assert _check(project, **env)[::2] == (0, True)
    assert _check(project, **env)[::2] == (0, False)
    (site / "generated" / "__init__.py").write_text("")
    status, shown, full = _check(project, **env)
    assert (status, full) == (2, True), shown
    assert "installed" in shown


def test_a_kernel_in_a_bytecode_folder_of_the_definitions_is_part_of_the_digest(project):
    """Bytecode caches are skipped in the package folder only: a definitions folder is all the
    user's, and a kernel may be kept in a folder of any name."""
    opdefs = project / "opdefs"
    (opdefs / "__pycache__").mkdir()
    (opdefs / "inverse_kernel.h").rename(opdefs / "__pycache__" / "inverse_kernel.h")
    definition = opdefs / "inverse.yaml"
    text = definition.read_text()
    assert "source: inverse_kernel.h" in text
    definition.write_text(
        text.replace("source: inverse_kernel.h", "source: __pycache__/inverse_kernel.h")
    )
    assert _run(project).returncode == 0
    _recorded(project)
    (opdefs / "__pycache__" / "inverse_kernel.h").unlink()
    status, shown, full = _check(project)
    assert (status, full) == (2, True), shown
