"""The compiler cache the test suite's builds share (ccache), and the switch that turns it off."""

import os
import shutil
import tempfile

import pytest

# Set for every CMake build the tests start (CMake reads these variables from the environment).
COMPILER_CACHE = {
    "CMAKE_CXX_COMPILER_LAUNCHER": "ccache",
    "CMAKE_CUDA_COMPILER_LAUNCHER": "ccache",
    # Paths under the temporary folder are hashed relative to the build folder, and the build
    # folder itself is not hashed: two copies of a project in two temporary folders share their
    # objects (precompiled headers included, which need the sloppiness below).
    "CCACHE_BASEDIR": os.path.realpath(tempfile.gettempdir()),
    "CCACHE_NOHASHDIR": "1",
    "CCACHE_SLOPPINESS": "pch_defines,time_macros,include_file_mtime,include_file_ctime",
}


def without_compiler_cache(env: dict[str, str]) -> dict[str, str]:
    """env for a build that must not use the cache: the suite's cold build, and the builds of
    the checkout's own build/, which `./dev test` configured without a launcher (one set at a
    later configure would enter CMake's cache and recompile everything)."""
    return {
        **{name: value for name, value in env.items() if name not in COMPILER_CACHE},
        "CCACHE_DISABLE": "1",
    }


def share_compiled_objects() -> None:
    """The tests build dozens of temporary projects that compile the same sources again (a copy
    of generated/, the runtime headers, the feature ops, the scaffold's sample): ccache compiles
    each unit once per run. The cache cannot hide a build bug from the suite: the main build of
    `./dev test` runs outside it, and test_build.py's plain CMake build turns it off. A launcher
    the caller set is kept; under CI=true a missing ccache is a failure (`./dev setup` installs
    it), elsewhere the builds run uncached."""
    if any(name in os.environ for name in ("CMAKE_CXX_COMPILER_LAUNCHER", "CCACHE_DISABLE")):
        return
    if shutil.which("ccache") is None:
        if os.environ.get("CI") == "true":
            raise pytest.UsageError("no ccache under CI=true: `./dev setup` installs it")
        return
    os.environ.update(COMPILER_CACHE)
