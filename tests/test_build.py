"""The build: plain CMake works outside our tool, and rebuilding after a regeneration that
changed nothing does no work; neither warns (CMake, the compilers, the generator)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from compiler_cache import without_compiler_cache
from output_warnings import warning_lines

from generator.build import ort_include_dir

ROOT = Path(__file__).resolve().parent.parent


def test_plain_cmake_builds_and_ctest_passes(tmp_path):
    """The suite's one truly cold build: the compiler cache the other tests share is off."""
    env = without_compiler_cache(dict(os.environ))
    include = ort_include_dir(lambda message: None)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT / "generated"),
            "-B",
            str(tmp_path),
            *generator,
            f"-DORT_INCLUDE_DIR={include}",
            "-DOPGEN_BUILD_PYTHON=OFF",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run(
        ["cmake", "--build", str(tmp_path), "--parallel", "2"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert (tmp_path / "lib" / "libopgen_ai_opgen.so").is_file()
    # __FILE__ (expanded in torch's and ONNX's registration macros) names sources relative to
    # generated/: no library holds the path of the folder it was built from.
    libraries = sorted((tmp_path / "lib").glob("*.so"))
    assert len(libraries) >= 3, libraries
    holding_the_path = [
        p.name for p in libraries if str(ROOT / "generated").encode() in p.read_bytes()
    ]
    assert not holding_the_path, holding_the_path
    # The whole configuration and compilation (every compiler's messages: nvcc's too where it is
    # found) warns of nothing (what counts: output_warnings.py).
    found = warning_lines(configure.stdout, configure.stderr, build.stdout, build.stderr)
    assert not found, "\n".join(found[:20])
    ctest = subprocess.run(
        ["ctest", "--test-dir", str(tmp_path), "--output-on-failure"],
        capture_output=True,
        text=True,
    )
    assert ctest.returncode == 0, ctest.stdout + ctest.stderr
    assert "100% tests passed" in ctest.stdout


@pytest.mark.parametrize(
    "variable,value,message",
    [
        *(
            ("OPGEN_UNITY_BATCH_SIZE", size, f"OPGEN_UNITY_BATCH_SIZE='{size}' is no number")
            for size in ["abc", "-1", "2.5", ""]
        ),
        # Checked up front, CUDA off too (CMake's own 'native' would not get through the check
        # of nvcc's architectures either).
        ("OPGEN_CUDA_ARCHITECTURES", "80;native", "'native' is no CUDA architecture"),
    ],
)
def test_a_bad_cache_variable_is_refused_by_name(tmp_path, variable, value, message):
    configure = subprocess.run(
        [
            "cmake", "-S", ROOT / "generated", "-B", tmp_path,
            f"-DORT_INCLUDE_DIR={ort_include_dir(lambda message: None)}",
            "-DOPGEN_BUILD_PYTHON=OFF", "-DOPGEN_BUILD_SCHEMA_TESTS=OFF", "-DOPGEN_BUILD_TORCH=OFF",
            "-DOPGEN_CUDA=OFF", f"-D{variable}={value}",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert configure.returncode != 0
    assert message in configure.stderr, configure.stderr


def test_rebuild_after_noop_regeneration_does_no_work():
    """`./dev run`'s generation and build, as it runs them: neither warns."""

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "generator", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=without_compiler_cache(dict(os.environ)),
        )

    first = run("build")  # brings the build up to date, whatever ran before
    assert first.returncode == 0, first.stdout + first.stderr
    generate = run()
    assert generate.returncode == 0, generate.stdout + generate.stderr
    second = run("build")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "no work to do" in second.stdout, second.stdout
    found = warning_lines(*(r.stdout + r.stderr for r in (first, generate, second)))
    assert not found, "\n".join(found[:20])


def test_compiler_errors_name_the_op(tmp_path):
    shutil.copytree(ROOT / "opdefs", tmp_path / "opdefs")
    shutil.copytree(
        ROOT / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__")
    )
    kernel = tmp_path / "opdefs" / "inverse_kernel.h"
    kernel.write_text(
        kernel.read_text().replace(
            "const int64_t n = X.dim(-1);", "const int64_t n = X.no_such_member;"
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--build-dir", str(tmp_path / "build")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 1
    assert "no_such_member" in result.stdout, "the compiler's own message is shown"
    assert "build failed in op(s): inverse (opdefs/inverse.yaml)" in result.stderr, result.stderr


def test_build_info_reads_the_headers_api_version_however_it_is_spelled(tmp_path):
    """build_info.json takes ONNX Runtime's API version from the headers in use; a define with
    a trailing comment once gave invalid JSON."""
    import json

    headers = tmp_path / "headers"
    shutil.copytree(ort_include_dir(lambda message: None), headers)
    c_api = headers / "onnxruntime_c_api.h"
    text = c_api.read_text()
    assert "#define ORT_API_VERSION 29\n" in text
    c_api.write_text(
        text.replace("#define ORT_API_VERSION 29\n", "#define ORT_API_VERSION 29 // v\n")
    )
    configure = subprocess.run(
        [
            "cmake", "-S", ROOT / "generated", "-B", tmp_path / "build",
            f"-DORT_INCLUDE_DIR={headers}", "-DOPGEN_BUILD_PYTHON=OFF",
            "-DOPGEN_BUILD_SCHEMA_TESTS=OFF", "-DOPGEN_BUILD_TORCH=OFF",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stdout[-3000:] + configure.stderr[-3000:]
    info = json.loads((tmp_path / "build" / "lib" / "build_info.json").read_text())
    assert info["onnxruntime_api_version"] == 29 and info["package"] == "generated"


def test_the_schema_test_executable_takes_op_ids():
    """One executable per domain runs its ops' schema tests: all, or those named (each once);
    an unknown id runs nothing and exits 2; --help lists the ops."""
    from generator.runtime._names import schema_tests_name

    binary = ROOT / "build" / "bin" / schema_tests_name("test_customop")
    assert binary.is_file(), f"{binary} is missing; run `python -m generator build`"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)

    every = run()
    assert every.returncode == 0 and "2 op(s) tested, 0 check(s) failed" in every.stdout
    twice = run("custom_op_two", "custom_op_two")
    assert twice.returncode == 0 and "1 op(s) tested" in twice.stdout, twice.stdout
    assert "custom_op_one:" not in twice.stdout
    unknown = run("custom_op_two", "")
    assert unknown.returncode == 2 and "custom_op_two:" not in unknown.stdout
    assert "its ops: custom_op_one custom_op_two" in unknown.stderr, unknown.stderr
    usage = run("--help")
    assert usage.returncode == 0 and "custom_op_one custom_op_two" in usage.stdout
