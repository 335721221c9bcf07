"""The project configuration ([tool.opgen] in pyproject.toml, or opgen.toml): every command
finds it from the working directory up, flags override it, a bad one is refused with located
errors before anything is written, and `opgen new` writes one where there is none."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD_INVERSE = (ROOT / "opdefs" / "inverse.yaml").read_text()


def opgen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )


def python_in(repo: Path, code: str) -> subprocess.CompletedProcess:
    """Python code run in the repository, its package importable from there."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)},
    )


def project_with(tmp_path: Path, config: str, name: str = "pyproject.toml") -> Path:
    """A repository holding the Inverse definition in defs/ and the given configuration."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # where the search for a configuration stops
    (repo / "defs").mkdir()
    for file in ("inverse.yaml", "inverse_kernel.h", "inverse_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / file, repo / "defs" / file)
    (repo / name).write_text(config)
    return repo


CONFIG = """\
[project]
name = "someone-elses-project"

[tool.opgen]
definitions = "defs"
package = "myops"
package-dir = "src/myops"
build-dir = "out/build"
version = "2.1.0rc1"
"""


def test_configuration_names_the_package_and_its_folders(tmp_path):
    repo = project_with(tmp_path, CONFIG)
    (repo / "src" / "deep").mkdir(parents=True)
    result = opgen("-q", cwd=repo / "src" / "deep")  # found from a subfolder
    assert result.returncode == 0, result.stderr
    package = repo / "src" / "myops"
    assert (package / "inverse" / "inverse_kernel.cc").is_file()
    info = (package / "_package.py").read_text()
    assert 'NAME = "myops"' in info and 'VERSION = "2.1.0rc1"' in info
    assert 'BUILD_DIR = "../../out/build"' in info
    assert (
        "import myops  # registers the PyTorch ops" in (package / "docs" / "inverse.md").read_text()
    )
    assert "import myops\n" in (package / "__init__.py").read_text()
    pyproject = (package / "pyproject.toml").read_text()
    assert 'name = "myops"' in pyproject and 'version = "2.1.0rc1"' in pyproject
    assert "project(myops VERSION 2.1.0 " in (package / "CMakeLists.txt").read_text()
    # Headers name the definitions relative to the project root, as always.
    assert "defs/inverse.yaml" in (package / "inverse" / "torch_op.py").read_text()
    assert opgen("--check", cwd=repo).returncode == 0


def test_flags_override_the_configuration(tmp_path):
    repo = project_with(tmp_path, CONFIG)
    result = opgen("-q", "--package", "other", "--output-dir", "elsewhere/other", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert 'NAME = "other"' in (repo / "elsewhere" / "other" / "_package.py").read_text()
    assert not (repo / "src").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--output-dir", "elsewhere/pkg"],
            "the package folder elsewhere/pkg must be named myops, as the package",
        ),
        (["--package", "os"], "--package os: 'os' is the name of a module it would shadow"),
        (["--package", "my-ops"], "'my-ops' is not a Python identifier"),
    ],
)
def test_a_package_python_cannot_import_is_refused(tmp_path, args, message):
    repo = project_with(tmp_path, CONFIG)
    result = opgen(*args, cwd=repo)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (repo / "src").exists() and not (repo / "elsewhere").exists()


def test_every_configuration_error_is_located_in_one_run(tmp_path):
    repo = project_with(
        tmp_path,
        """\
[tool.opgen]
definitions = "defs"
packge = "myops"
package = "import"
torch-api = "nativ"
version = "one"
build-dir = 3
""",
    )
    result = opgen(cwd=repo)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: pyproject.toml:3:1: tool.opgen.packge: unknown field 'packge' (did you mean "
        "'package'?); expected one of ['build-dir', 'cuda-architectures', 'definitions', 'package', 'package-dir', "
        "'torch-api', 'version']",
        "error: pyproject.toml:4:1: tool.opgen.package: 'import' is a Python keyword",
        "error: pyproject.toml:5:1: tool.opgen.torch-api: 'nativ' is not one of ['native', "
        "'library', 'custom_op', 'legacy'] (did you mean 'native'?)",
        "error: pyproject.toml:6:1: tool.opgen.version: 'one' is not a PEP 440 version (such "
        "as 1.0.2)",
        "error: pyproject.toml:7:1: tool.opgen.build-dir: expected a string, found int 3",
    ], result.stderr
    assert not (repo / "generated").exists() and not (repo / "import").exists()


def test_opgen_toml_holds_the_keys_themselves(tmp_path):
    repo = project_with(tmp_path, '[tool.opgen]\npackage = "myops"\n', name="opgen.toml")
    result = opgen(cwd=repo)
    assert result.returncode == 2
    assert "error: opgen.toml:1:1: tool: opgen.toml holds the keys themselves" in result.stderr


def test_malformed_configuration_is_a_located_error(tmp_path):
    repo = project_with(tmp_path, 'package = "myops\n', name="opgen.toml")
    result = opgen(cwd=repo)
    assert result.returncode == 2
    assert result.stderr.startswith("error: opgen.toml:1:17: <syntax>: "), result.stderr
    assert "not valid TOML" in result.stderr


def test_two_configurations_in_one_folder_are_refused(tmp_path):
    repo = project_with(tmp_path, CONFIG)
    (repo / "opgen.toml").write_text('package = "myops"\n')
    result = opgen(cwd=repo)
    assert result.returncode == 2
    assert "configure opgen; keep one" in result.stderr, result.stderr


def test_torch_api_default_applies_to_ops_with_a_kernel(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\ntorch-api = "library"\n', "opgen.toml")
    definition = repo / "defs" / "inverse.yaml"
    text = definition.read_text()
    (repo / "defs" / "plain_inverse.yaml").write_text(
        text.replace("  cuda: inverse_kernel.cuh\n", "")
        .replace("op: Inverse", "op: PlainInverse")
        .replace("opgen::inverse", "opgen::plain_inverse")
    )
    result = opgen("-q", cwd=repo)
    assert result.returncode == 0, result.stderr
    plain = repo / "generated" / "plain_inverse"
    assert not (plain / "plain_inverse_torch.cc").exists()
    assert "torch.library.Library" in (plain / "torch_op.py").read_text()
    # A CUDA kernel is registered natively, the one registration of CUDA kernels yet.
    assert (repo / "generated" / "inverse" / "inverse_torch.cc").exists()
    assert "native=(" in (repo / "generated" / "inverse" / "torch_op.py").read_text()


def test_new_in_an_empty_repository_writes_a_configuration(tmp_path):
    repo = tmp_path / "my-ops"
    (repo / ".git").mkdir(parents=True)
    result = opgen("new", "MyScale", "--domain", "my.ops", cwd=repo)
    assert result.returncode == 0, result.stderr
    config = (repo / "opgen.toml").read_text()
    assert 'package = "my_ops"' in config and 'definitions = "opdefs"' in config
    assert (repo / "my_ops" / "my_scale" / "torch_op.py").is_file()
    assert opgen("--check", "-q", cwd=repo).returncode == 0


def test_new_appends_the_configuration_to_an_existing_pyproject(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    original = '[project]\nname = "theirs"\nversion = "1"\n\n[tool.black]\nline-length = 99'
    (repo / "pyproject.toml").write_text(original)
    result = opgen("new", "MyScale", "--package", "theirops", cwd=repo)
    assert result.returncode == 0, result.stderr
    text = (repo / "pyproject.toml").read_text()
    assert text.startswith(original + "\n\n[tool.opgen]\n"), text
    assert not (repo / "opgen.toml").exists()
    assert (repo / "theirops" / "my_scale" / "__init__.py").is_file()
    # The domain defaults to the package's name: one library per domain in a process.
    definition = (repo / "opdefs" / "my_scale.yaml").read_text()
    assert 'domain: "theirops"\n' in definition and 'name: "theirops::my_scale"' in definition
    assert opgen("--check", "-q", cwd=repo).returncode == 0


def test_new_refuses_a_folder_name_that_is_no_package_name(tmp_path):
    repo = tmp_path / "3d"
    (repo / ".git").mkdir(parents=True)
    result = opgen("new", "MyScale", cwd=repo)
    assert result.returncode == 2
    assert "cannot name the package after the folder '3d'" in result.stderr, result.stderr
    assert "give --package NAME" in result.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"], "nothing may be written"


@pytest.mark.parametrize(
    "config,message",
    [
        (
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "pk/build"\n',
            "the package folder pk and the build folder pk/build overlap",
        ),
        (
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "defs"\n',
            "the definitions folder defs and the build folder defs overlap",
        ),
        ('definitions = "defs"\npackage = "jinja2"\n', "'jinja2' is the name of a module"),
        ('definitions = "defs"\npackage = "pytest"\n', "'pytest' is the name of a module"),
        ('definitions = "defs"\npackage = "mypy"\n', "'mypy' is the name of a module installed"),
        ('definitions = "defs"\npackage = "_ops"\n', "starts or ends with '_'"),
    ],
)
def test_folders_that_overlap_and_names_that_shadow_are_refused(tmp_path, config, message):
    repo = project_with(tmp_path, config, "opgen.toml")
    for command in ([], ["build"], ["wheel"], ["new", "Foo"]):
        result = opgen(*command, cwd=repo)
        assert result.returncode == 2, (command, result.stderr)
        assert message in result.stderr, (command, result.stderr)
    assert sorted(p.name for p in repo.iterdir()) == [".git", "defs", "opgen.toml"]
    assert sorted(p.name for p in (repo / "defs").iterdir()) == [
        "inverse.yaml",
        "inverse_kernel.cuh",
        "inverse_kernel.h",
    ]


@pytest.mark.parametrize(
    "config,flags,message",
    [
        (
            'definitions = "build-sanitize"\npackage = "pk"\n',
            [],
            "the definitions folder build-sanitize and the sanitizer build folder build-sanitize",
        ),
        (
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "pk/b"\n',
            [],
            "the package folder pk and the sanitizer build folder pk/b-sanitize overlap",
        ),
        (
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "out"\n',
            ["--build-dir", "defs/b"],
            "the definitions folder defs and the build folder defs/b overlap",
        ),
        (  # beside the repository: no overlap, and no traceback (it has a name once resolved)
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "."\n',
            [],
            "CMakeLists.txt not found",
        ),
        (
            'definitions = "defs"\npackage = "pk"\nbuild-dir = "/"\n',
            [],
            "the build folder / is the root",
        ),
    ],
    ids=["configured-definitions", "package-holds-it", "flag", "dot", "root"],
)
def test_the_folder_a_sanitizer_build_writes_is_kept_apart(tmp_path, config, flags, message):
    """`build --sanitize` writes <build-dir>-sanitize (or --build-dir): that folder, not the
    configured build folder, is the one that must not overlap the others."""
    repo = project_with(tmp_path, config, "opgen.toml")
    before = sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))
    result = opgen("build", "--sanitize", *flags, cwd=repo)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*")) == before


def test_new_checks_the_folders_before_writing(tmp_path):
    repo = tmp_path / "fresh"
    (repo / ".git").mkdir(parents=True)
    result = opgen("new", "Foo", "--opdefs-dir", ".", cwd=repo)
    assert result.returncode == 2 and "overlap" in result.stderr, result.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"], "nothing may be written"


def test_new_reports_a_broken_pyproject_that_mentions_opgen(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\ndependencies = ["opgen"]\n[tool.black\n')
    result = opgen("new", "Foo", cwd=repo)
    assert result.returncode == 2
    assert result.stderr.startswith("error: pyproject.toml:3:"), result.stderr
    assert "Traceback" not in result.stderr


def test_a_build_folder_of_another_package_is_refused(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\n', "opgen.toml")
    assert opgen("-q", cwd=repo).returncode == 0
    (repo / "build").mkdir()
    (repo / "build" / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={tmp_path / 'other' / 'pk'}\n"
    )
    result = opgen("build", cwd=repo)
    assert result.returncode == 2
    assert f"was configured for {tmp_path / 'other' / 'pk'}, not for this package" in result.stderr


def test_a_package_folder_behind_a_symbolic_link_finds_its_build_folder(tmp_path):
    real = tmp_path / "elsewhere" / "pk"
    real.mkdir(parents=True)
    repo = project_with(tmp_path, 'definitions = "defs"\npackage = "pk"\n', "opgen.toml")
    (repo / "pk").symlink_to(real)
    assert opgen("-q", cwd=repo).returncode == 0
    # Not built: the error names where the package looks, which is the link's side.
    result = python_in(repo, "import pk")
    assert f"{repo / 'build' / 'lib' / 'libopgen_ai_opgen_torch.so'} does not exist" in (
        result.stderr
    ), result.stderr


def test_get_library_path_of_a_package_without_libraries_says_so(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\npackage = "pk"\n', "opgen.toml")
    for name in ("inverse.yaml", "inverse_kernel.h", "inverse_kernel.cuh"):
        (repo / "defs" / name).unlink()
    shutil.copy(ROOT / "opdefs" / "aten_add.yaml", repo / "defs")
    assert opgen("-q", cwd=repo).returncode == 0
    result = python_in(repo, "import pk; pk.get_library_path()")
    assert "ValueError: pk has no custom-op library: ONNX Runtime runs its ops without one" in (
        result.stderr
    ), result.stderr


def test_versions_are_normalized_and_config_must_be_toml(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\nversion = "v1.0"\n', "opgen.toml")
    assert opgen("-q", cwd=repo).returncode == 0
    assert 'VERSION = "1.0"' in (repo / "generated" / "_package.py").read_text()
    (repo / "c.yaml").write_text("tool: {opgen: {package: x}}\n")
    result = opgen("--config", "c.yaml", cwd=repo)
    assert result.returncode == 2
    assert "--config c.yaml: expected an opgen.toml or a pyproject.toml" in result.stderr


def test_a_relative_ort_include_dir_is_made_absolute(tmp_path):
    """CMake runs elsewhere (pip builds in the package folder): the headers' folder must not
    depend on the working directory."""
    from generator.build import ort_include_dir

    headers = Path(ort_include_dir(lambda message: None))
    (tmp_path / "ortinc").symlink_to(headers)
    result = subprocess.run(
        [sys.executable, "-m", "generator", "headers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "ORT_INCLUDE_DIR": "ortinc"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "ortinc")


# ------------------------------------------------ issue 27: bad input, kept bytes, shadowing


def test_new_keeps_a_crlf_pyproject_byte_for_byte_and_the_same_file(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    original = b'[project]\r\nname = "theirs"\r\n\r\n[tool.black]\r\nline-length = 99\r\n'
    real = repo / "config" / "pyproject.toml"
    real.parent.mkdir()
    real.write_bytes(original)
    real.chmod(0o640)
    (repo / "pyproject.toml").symlink_to("config/pyproject.toml")
    inode = real.stat().st_ino
    result = opgen("new", "MyScale", "--package", "theirops", "-q", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = real.read_bytes()
    assert data.startswith(original), "every byte it had, in place"
    added = data[len(original) :]
    assert added.startswith(b"\r\n[tool.opgen]\r\n") and b"\n" not in added.replace(b"\r\n", b"")
    assert (repo / "pyproject.toml").is_symlink(), "the link stays a link"
    assert real.stat().st_ino == inode and real.stat().st_mode & 0o777 == 0o640
    assert opgen("--check", "-q", cwd=repo).returncode == 0


@pytest.mark.parametrize(
    "content, location",
    [
        (b'[project]\nname = "caf\xe9"\n', "error: pyproject.toml:2:"),
        (b"[project\nname = 1\n", "error: pyproject.toml:1:"),
    ],
    ids=["not-utf8", "not-toml"],
)
def test_new_refuses_a_pyproject_it_cannot_extend_with_a_located_error(tmp_path, content, location):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_bytes(content)
    result = opgen("new", "Foo", "--package", "fooops", cwd=repo)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(location), result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git", "pyproject.toml"]
    assert (repo / "pyproject.toml").read_bytes() == content


def test_a_read_only_file_system_is_an_error_before_anything(tmp_path):
    """A tmpfs mounted read-only (the suite runs as root, as CI does)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    try:
        repo = project_with(mount, 'definitions = "defs"\n', "opgen.toml")
        assert opgen("-q", cwd=repo).returncode == 0
        (repo / "opdefs").mkdir()
        (repo / "defs" / "inverse.yaml").write_text(
            GOOD_INVERSE.replace("doc: |", "doc: |\n  Changed.", 1)
        )
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        assert opgen("--check", "-q", cwd=repo).returncode == 1, "--check only reads"
        for command, message in (
            ([], "the package folder generated cannot be written: "),
            (["new", "Foo"], "the definitions folder defs cannot be written: "),
            (["new", "Foo", "--opdefs-dir", "opdefs"], "the definitions folder opdefs cannot be"),
            (["build"], "cannot be written: "),
            (["wheel"], "cannot be written: "),
        ):
            result = opgen(*command, cwd=repo)
            assert result.returncode == 2, (command, result.stderr)
            assert message in result.stderr and "read-only file system" in result.stderr, (
                command,
                result.stderr,
            )
            assert "Traceback" not in result.stderr
        fresh = opgen("new", "Foo", cwd=mount)
        assert fresh.returncode == 2 and "read-only file system" in fresh.stderr, fresh.stderr
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_deleted_working_directory_is_a_clear_error(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\n', "opgen.toml")
    gone = tmp_path / "gone"
    code = (
        "import os, sys\n"
        f"os.mkdir({str(gone)!r}); os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "from generator.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    for command in ([], ["new", "Foo"], ["build"], ["wheel"], ["run"]):
        result = subprocess.run(
            [sys.executable, "-c", code, *command, "--config", str(repo / "opgen.toml")],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: the working directory no longer exists"), (
            command,
            result.stderr,
        )


@pytest.mark.parametrize(
    "folder, problem",
    [
        ("de\nfs", "the control character '\\n'"),
        ('de"fs', "a double quote, which ends a C++ #include path"),
        ("de;fs", "a semicolon, which CMake takes as a list separator"),
        ("de\\fs", "a backslash"),
    ],
)
def test_folders_generated_files_cannot_spell_are_refused_naming_the_key(tmp_path, folder, problem):
    repo = project_with(tmp_path, "", "opgen.toml")
    (repo / "defs").rename(repo / folder)
    config = f"definitions = {json.dumps(folder)}\n"
    (repo / "opgen.toml").write_text(config)
    for command in ([], ["new", "Foo"], ["build"], ["wheel"]):
        result = opgen(*command, cwd=repo)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: opgen.toml:1:"), (command, result.stderr)
        assert "definitions: its path" in result.stderr and problem in result.stderr
    (repo / "opgen.toml").write_text("")
    flag = opgen("--opdefs-dir", folder, cwd=repo)
    assert flag.returncode == 2
    assert flag.stderr.startswith("error: --opdefs-dir: its path"), flag.stderr
    assert sorted(p.name for p in repo.iterdir()) == sorted([".git", folder, "opgen.toml"])


@pytest.mark.parametrize("command", ["build", "wheel"])
@pytest.mark.parametrize("jobs", ["0", "-3", "two", "99999999999999999999"])
def test_jobs_must_be_a_positive_number(tmp_path, command, jobs):
    repo = project_with(tmp_path, 'definitions = "defs"\n', "opgen.toml")
    result = opgen(command, "--jobs", jobs, cwd=repo)
    assert result.returncode == 2, result.stderr
    assert "argument --jobs:" in result.stderr and "build failed" not in result.stderr


def test_a_version_packaging_cannot_read_is_a_located_error(tmp_path):
    version = "9" * 4301  # int() refuses more than 4300 digits
    repo = project_with(tmp_path, f'definitions = "defs"\nversion = "{version}"\n', "opgen.toml")
    result = opgen("--check", cwd=repo)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: opgen.toml:2:"), result.stderr


def test_a_build_folder_that_is_a_dangling_link_is_refused(tmp_path):
    repo = project_with(tmp_path, 'definitions = "defs"\nbuild-dir = "out"\n', "opgen.toml")
    assert opgen("-q", cwd=repo).returncode == 0
    (repo / "out").symlink_to(tmp_path / "nowhere" / "build")
    result = opgen("build", cwd=repo)
    assert result.returncode == 2, result.stderr
    assert "is a symbolic link to nothing" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_version_too_long_for_a_wheel_name_is_refused_up_front(tmp_path):
    version = "1.0." + "1" * 255
    repo = project_with(tmp_path, f'definitions = "defs"\nversion = "{version}"\n', "opgen.toml")
    for command in ([], ["build"], ["wheel"], ["new", "Foo"]):
        result = opgen(*command, cwd=repo)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: opgen.toml:2:"), result.stderr
        assert "version: the version '1.0.1111" in result.stderr
        assert "is 259 characters; a wheel's file name has room for 200" in result.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git", "defs", "opgen.toml"]


@pytest.mark.parametrize("how", ["flag", "file"])
def test_a_package_that_would_hide_an_installed_namespace_package_is_refused(tmp_path, how):
    config = 'definitions = "defs"\n' + ('package = "google"\n' if how == "file" else "")
    repo = project_with(tmp_path, config, "opgen.toml")
    args = ["--package", "google"] if how == "flag" else []
    result = opgen(*args, cwd=repo)
    assert result.returncode == 2, result.stderr
    assert "'google' is the name of a module installed here (a namespace package in" in (
        result.stderr
    )
    assert not (repo / "google").exists()
