"""Test-only op definitions (tests/opdefs/) go through the whole pipeline in a temporary
project: generate, build with plain CMake via `python -m generator build`, then run their
generated parity tests in a fresh interpreter. Each definition covers a group of features
that the shipped ops do not exercise."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FEATURE_OPS = sorted((ROOT / "tests" / "opdefs").glob("*.yaml"))


@pytest.mark.parametrize("definition", FEATURE_OPS, ids=[p.stem for p in FEATURE_OPS])
def test_feature_op_pipeline(tmp_path, definition):
    (tmp_path / "opdefs").mkdir()
    shutil.copy(definition, tmp_path / "opdefs")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    env.pop("OPGEN_BUILD_DIR", None)

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    generate = run(sys.executable, "-m", "generator")
    assert generate.returncode == 0, generate.stdout + generate.stderr
    build = run(sys.executable, "-m", "generator", "build", "-q")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    tests = run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:warnings",
        "--rootdir",
        str(tmp_path),
        "generated",
    )
    assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
    assert " passed" in tests.stdout and "skipped" not in tests.stdout
