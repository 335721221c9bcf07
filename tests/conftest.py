import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from compiler_cache import share_compiled_objects
from run_once import exclusive

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """torch.compile's on-disk cache (torch 2.13) does not key on a custom op's schema: code
    compiled for an op of the same name in an earlier run (another signature) would be reused.
    Every test, and every process it starts, compiles into a cache of this run's own. (C++
    objects, on the contrary, are shared: see tests/compiler_cache.py.)"""
    share_compiled_objects()
    # A pytest the tests start (a generated package's tests, in a project of their own) is a
    # session of its own, not a worker of this run: inheriting xdist's variables, it took itself
    # for one (pytest-benchmark, where installed, then warned that it was off: an error here).
    for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
        del os.environ[name]
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        config.opgen_inductor_cache = tempfile.mkdtemp(prefix="opgen-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = config.opgen_inductor_cache


def pytest_unconfigure(config):
    cache = getattr(config, "opgen_inductor_cache", None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def run_generator():
    """Runs `python -m generator` in a directory; returns the CompletedProcess."""

    def run(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "generator", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(env or {})},
        )

    return run


SANITIZE_BUILD_DIR = ROOT / "build-sanitize"


@pytest.fixture(scope="session")
def sanitizer_env(tmp_path_factory) -> dict[str, str]:
    """The environment that runs Python on the ASan + UBSan build of generated/ (built here,
    incrementally, by `python -m generator build --sanitize`): OPGEN_BUILD_DIR, LD_PRELOAD,
    ASAN_OPTIONS, UBSAN_OPTIONS. Without the sanitizer runtimes the tests that use it skip,
    except under CI=true, where that is a failure."""
    from generator.build import BuildError, sanitizer_env

    try:
        env = sanitizer_env(SANITIZE_BUILD_DIR)
    except BuildError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no sanitizer runtime under CI: {error}")
        pytest.skip(f"no sanitizer runtime: {error}")
    with exclusive(tmp_path_factory, "build-sanitize"):  # one build; the other workers wait
        build = subprocess.run(
            # (the CUDA kernels only compile here: nothing would run them under the sanitizers)
            [
                sys.executable,
                "-m",
                "generator",
                "build",
                "--sanitize",
                "-q",
                "--jobs",
                "2",
                "--cuda",
                "off",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    env["PYTHONPATH"] = str(ROOT)
    return env
