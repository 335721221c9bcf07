"""Test-only op definitions (tests/opdefs/) go through the whole pipeline in a temporary
project: generate, build with plain CMake via `python -m generator build` (once, for all of
them), then run each op's generated parity tests in a fresh interpreter. Each definition
covers a group of features that the shipped ops do not exercise (see its first lines)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FEATURE_OPS = sorted((ROOT / "tests" / "opdefs").glob("*.yaml"))


def _run(project: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}"}
    env.pop("OPGEN_BUILD_DIR", None)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """Every feature definition, generated and built together (one CMake build)."""
    root = tmp_path_factory.mktemp("feature_ops")
    (root / "opdefs").mkdir()
    for definition in (ROOT / "tests" / "opdefs").iterdir():
        shutil.copy(definition, root / "opdefs")
    generate = _run(root, sys.executable, "-m", "generator")
    assert generate.returncode == 0, generate.stdout + generate.stderr
    build = _run(root, sys.executable, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return root


@pytest.mark.parametrize("definition", FEATURE_OPS, ids=[p.stem for p in FEATURE_OPS])
def test_feature_op_pipeline(project, definition):
    tests = _run(
        project,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:warnings",
        "--rootdir",
        str(project),
        f"generated/{definition.stem}",
    )
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout
