"""Property tests over whole random op definitions (strategies in random_opdefs.py).

- Valid ones generate, every generated Python file compiles, and `--check` agrees with what
  was written; on a sample, the generated C++ builds and the generated tests pass (which
  imports the generated Python and runs it in PyTorch and ONNX Runtime).
- Broken ones give definition errors only: exit 2, every error line names the file, line,
  column and field, the breakage's field among them, every breakage reported in one run,
  nothing written, never a traceback.
"""

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from random_opdefs import bad_names, broken, definitions, dump, mutated
from scratch_cache import scratch_cache

from generator import cli, scaffold
from generator.build import torch_flags
from generator.parse.op import parse_opdef

ROOT = Path(__file__).resolve().parent.parent
ERROR_LINE = re.compile(r"error: (opdefs/[\w.]+):(\d+):(\d+): ([^:]+): (.+)")
SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # The same examples on every run, so that CI stays reproducible; set OPGEN_EXPLORE=1 to
    # draw new ones (and find the next hole) locally.
    derandomize=not os.environ.get("OPGEN_EXPLORE"),
)


def _write_project(root: Path, stem: str, definition: dict, stub_kernel: bool) -> None:
    opdefs = root / "opdefs"
    opdefs.mkdir()
    path = opdefs / f"{stem}.yaml"
    path.write_text(dump(definition), encoding="utf-8")
    kernel = opdefs / f"{stem}_kernel.h"
    kernel.write_text("", encoding="utf-8")
    if stub_kernel:
        op = parse_opdef(path, f"opdefs/{path.name}")
        kernel.write_text(
            scaffold.kernel_stub(op, f"opdefs/{path.name}", "generated"), encoding="utf-8"
        )


def _generate(root: Path, *args: str) -> tuple[int, str, str]:
    """The generator in this process (hundreds of examples; a subprocess each is too slow)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(args))
    return status, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _project(stem: str, definition: dict, stub_kernel: bool = False):
    with tempfile.TemporaryDirectory(prefix="opgen-random-") as tmp:
        root = Path(tmp)
        _write_project(root, stem, definition, stub_kernel)
        yield root


def _scratch_cache():
    return mock.patch.dict(os.environ, {"XDG_CACHE_HOME": scratch_cache()})


def _assert_definition_errors_only(root: Path, status: int, err: str, stem: str) -> list:
    assert status == 2, err
    lines = err.strip().splitlines()
    assert lines, "no error message"
    *errors, summary = lines
    assert re.fullmatch(r"\d+ errors? in op definitions; nothing written", summary), err
    parsed = []
    for line in errors:
        match = ERROR_LINE.fullmatch(line)
        if match is None:  # a message may go on over several lines (a quoted newline)
            assert parsed, f"not a definition error line: {line!r}\n{err}"
            continue
        assert match.group(1) == f"opdefs/{stem}.yaml", line
        assert int(match.group(2)) >= 1 and int(match.group(3)) >= 1, line
        parsed.append(match)
    assert len(parsed) == int(summary.split()[0]), err
    assert not (root / "generated").exists(), "nothing may be written on a bad definition"
    return parsed


@settings(max_examples=60, **SETTINGS)
@given(definitions())
def test_random_valid_definitions_generate_and_compile(example):
    stem, definition = example
    with _scratch_cache(), _project(stem, definition, stub_kernel=True) as root:
        status, out, err = _generate(root)
        assert status == 0, err
        written = sorted((root / "generated").rglob("*.py"))
        assert any(p.name == f"test_{stem}.py" for p in written)
        for path in written:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        status, out, err = _generate(root, "--check", "-q")
        assert status == 0, out + err


def _compile_flags() -> list[str]:
    import sysconfig

    import pybind11

    from generator.build import ort_include_dir

    return [
        "-std=c++17",
        "-fsyntax-only",
        "-DONNX_NAMESPACE=onnx",  # as libonnx-dev's CMake target defines them
        "-DONNX_ML=1",
        "-DORT_API_MANUAL_INIT",  # as the generated CMakeLists defines it for the library
        f"-I{ort_include_dir(lambda message: None)}",
        f"-I{pybind11.get_include()}",
        f"-I{sysconfig.get_paths()['include']}",
    ]


# Every C++ file that holds the op's names, checked by the compiler (syntax and types, no
# code generation: about 5 s an example); the build test below links and runs a sample.
@settings(max_examples=10, phases=[Phase.explicit, Phase.generate], **SETTINGS)
@given(definitions())
def test_random_definitions_compile_as_cpp(example):
    stem, definition = example
    flags = _compile_flags()  # the ONNX Runtime headers from the user's cache, not the scratch one
    with _scratch_cache(), _project(stem, definition, stub_kernel=True) as root:
        assert _generate(root, "-q")[0] == 0
        generated = root / "generated"
        sources = sorted((generated / stem).glob("*.cc")) + sorted(generated.glob("domains/*/*.cc"))
        assert len(sources) >= 5, sources
        flags = [*flags, f"-I{generated / 'include'}"]
        # torch's include directory (only for the native library, as in the CMakeLists) carries
        # its own protobuf headers, which must not meet the ONNX schema's.
        compilers = [
            subprocess.Popen(
                [
                    "g++",
                    *flags,
                    *(torch_flags() if source.stem.endswith("_torch") else []),
                    str(source),
                ],
                stderr=subprocess.PIPE,
                text=True,
            )
            for source in sources
        ]
        failures = []
        for source, compiler in zip(sources, compilers, strict=True):
            errors = compiler.communicate()[1]  # every pipe read and closed
            if compiler.returncode != 0:
                failures.append(f"{source.name}:\n{errors[-3000:]}")
        assert not failures, "\n".join(failures)
    # Nothing under the scratch cache fetched what only the user's holds (the ONNX Runtime headers).
    assert not list(Path(scratch_cache()).glob("onnxruntime-headers*"))


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPGEN_NO_CACHE": "1"}
    env.pop("OPGEN_BUILD_DIR", None)
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200
    )


# A sample: each example is a cold C++ build (about a minute on two cores), so a failing one
# is reported as found rather than shrunk build by build.
@settings(max_examples=2, phases=[Phase.explicit, Phase.generate], **SETTINGS)
@given(definitions())
def test_random_definitions_build_and_pass_their_generated_tests(example):
    stem, definition = example
    with _project(stem, definition, stub_kernel=True) as root:
        assert _run(root, "-m", "generator", "-q").returncode == 0
        build = _run(root, "-m", "generator", "build", "-q")
        assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
        tests = _run(root, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "generated")
        assert tests.returncode == 0, tests.stdout[-6000:] + tests.stderr[-3000:]
        assert " passed" in tests.stdout and "skipped" not in tests.stdout


@settings(max_examples=250, **SETTINGS)
@given(st.one_of(broken(), bad_names()))
def test_broken_definitions_report_every_breakage(example):
    stem, definition, breakages = example
    with _project(stem, definition) as root:
        status, out, err = _generate(root)
        errors = _assert_definition_errors_only(root, status, err, stem)
        fields = {match.group(4) for match in errors}
        for breakage in breakages:
            assert breakage.field in fields, f"{breakage}: {err}"


@settings(max_examples=150, **SETTINGS)
@given(mutated())
def test_arbitrary_values_anywhere_give_definition_errors_or_output(example):
    stem, definition = example
    with _scratch_cache(), _project(stem, definition) as root:
        status, out, err = _generate(root)
        event(f"exit status {status}")  # both outcomes occur (--hypothesis-show-statistics)
        if status != 0:
            _assert_definition_errors_only(root, status, err, stem)
