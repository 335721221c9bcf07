"""The project configuration ([tool.opgen] in pyproject.toml, or opgen.toml): every command
finds it from the working directory up, flags override it, a bad one is refused with located
errors before anything is written, and `opgen new` writes one where there is none."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
    for file in ("inverse.yaml", "inverse_kernel.h"):
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
    assert "import myops  # registers the ops" in (package / "docs" / "inverse.md").read_text()
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
        "'package'?); expected one of ['build-dir', 'definitions', 'package', 'package-dir', "
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
    result = opgen("-q", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert not (repo / "generated" / "inverse" / "inverse_torch.cc").exists()
    assert "torch.library.Library" in (repo / "generated" / "inverse" / "torch_op.py").read_text()


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
    assert sorted(p.name for p in (repo / "defs").iterdir()) == ["inverse.yaml", "inverse_kernel.h"]


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
    for name in ("inverse.yaml", "inverse_kernel.h"):
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
