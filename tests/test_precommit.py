"""The pre-commit hooks, run by the real pre-commit in a temporary git repository holding a copy
of this project: the project's own configuration (.pre-commit-config.yaml) and the hook other
repositories use (.pre-commit-hooks.yaml, through `pre-commit try-repo`, from an environment
without opgen: pre-commit installs it from this repository)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIED = [
    "opdefs",
    "generated",
    "generator",
    "pyproject.toml",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
]


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    return repo


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        # `python` in the hooks' entries is this interpreter (with black, ruff and the generator).
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"),
    }
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_project_hooks_pass_then_catch_a_stale_file(repo):
    clean = pre_commit(repo, "run", "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    for hook in ("opgen generated files are in sync", "black", "ruff", "mypy --strict"):
        assert any(
            line.startswith(hook) and line.endswith("Passed") for line in clean.stdout.splitlines()
        ), clean.stdout

    stale = repo / "generated" / "inverse" / "torch_op.py"
    text = stale.read_text()
    assert '"opgen", "FRAGMENT")' in text
    stale.write_text(text.replace('"opgen", "FRAGMENT")', '"opgen", "DEF")'))
    git(repo, "add", "-A")
    failed = pre_commit(repo, "run")
    assert failed.returncode == 1, failed.stdout
    assert "opgen generated files are in sync" in failed.stdout and "Failed" in failed.stdout
    # A readable message: which file, what differs, and what to do.
    assert "changed: generated/inverse/torch_op.py" in failed.stdout, failed.stdout
    assert '+_LIBRARY = torch.library.Library("opgen", "FRAGMENT")' in failed.stdout, failed.stdout
    assert "run `python -m generator`" in failed.stdout, failed.stdout

    regenerate = subprocess.run(
        [sys.executable, "-m", "generator", "-q"], cwd=repo, capture_output=True, text=True
    )
    assert regenerate.returncode == 0, regenerate.stderr
    git(repo, "add", "-A")
    fixed = pre_commit(repo, "run")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def opgen_here(repo: Path) -> subprocess.CompletedProcess:
    """`opgen` in a repository, run by this project's generator."""
    return subprocess.run(
        [sys.executable, "-m", "generator", "-q"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_hook_for_other_repositories(tmp_path):
    """.pre-commit-hooks.yaml as another repository uses it: the real pre-commit, run from a
    Python environment without opgen, installs opgen itself (`language: python`) through
    `try-repo` of this repository, and checks a user's repository with its own configuration."""
    tools = tmp_path / "tools"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
    install = subprocess.run(
        [tools / "bin" / "pip", "install", "-q", "pre-commit==4.7.0"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    bare = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]}  # no PYTHONPATH
    no_opgen = subprocess.run(
        [tools / "bin" / "python", "-c", "import generator"], cwd=tmp_path, env=bare
    )
    assert no_opgen.returncode == 1, "the tools' environment must not have opgen"

    user = tmp_path / "user-repo"
    (user / "defs").mkdir(parents=True)
    for name in ("inverse.yaml", "inverse_kernel.h", "inverse_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / name, user / "defs" / name)
    (user / "opgen.toml").write_text('definitions = "defs"\npackage = "userops"\n')
    git(user, "init", "-q")
    # The user's earlier `opgen` run (with their own opgen; here, this project's).
    generated = opgen_here(user)
    assert generated.returncode == 0, generated.stderr
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "ops")

    def try_repo() -> subprocess.CompletedProcess:
        env = {
            "PATH": f"{tools / 'bin'}{os.pathsep}/usr/bin:/bin",
            "HOME": os.environ["HOME"],
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        }
        return subprocess.run(
            [tools / "bin" / "pre-commit", "try-repo", str(ROOT), "opgen-check", "--all-files"],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "opgen generated files are in sync" in passed.stdout and "Passed" in passed.stdout

    stale = user / "userops" / "inverse" / "torch_op.py"
    stale.write_text(stale.read_text().replace('"FRAGMENT")', '"DEF")'))
    orphan = user / "userops" / "old_op" / "torch_op.py"
    orphan.parent.mkdir()
    orphan.write_text("# Generated by opgen from defs/old_op.yaml.\nX = 1\n")
    git(user, "add", "-A")
    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "changed: userops/inverse/torch_op.py" in failed.stdout, failed.stdout
    assert '+_LIBRARY = torch.library.Library("opgen", "FRAGMENT")' in failed.stdout
    assert "orphaned: userops/old_op/torch_op.py" in failed.stdout, failed.stdout

    regenerate = opgen_here(user)
    assert regenerate.returncode == 0, regenerate.stderr
    git(user, "add", "-A")
    assert try_repo().returncode == 0
