"""opgen used as a user uses it, from nothing: its wheel installed into a fresh virtual
environment, a new repository made with `opgen new`, generated, built and tested, the ops' wheel
built and installed into another fresh environment, and the op run from there (PyTorch, the
ONNX export, ONNX Runtime) with no source tree in sight. Every command after building opgen's
wheel is one that docs/own-repository.md and docs/wheel.md show (the README's five-minute path
is their start); nothing but that wheel comes from this checkout."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What the generated code runs on, as opgen's `runtime` extra pins it for this machine.
pytestmark = pytest.mark.slow


def run(command: list, cwd: Path, env: dict, timeout: int = 1200) -> str:
    result = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))} failed in {cwd}:\n"
        + result.stdout[-6000:]
        + result.stderr[-6000:]
    )
    return result.stdout


def fresh_venv(path: Path) -> dict:
    """A new virtual environment, and the environment variables of a shell that activated it
    (pip's configuration, such as this machine's package indexes, is kept; PYTHONPATH is not)."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PATH"] = f"{path / 'bin'}{os.pathsep}/usr/bin:/bin"
    env["VIRTUAL_ENV"] = str(path)
    return env


def test_opgen_from_its_wheel_to_a_deployed_wheel_of_ops(tmp_path):
    # opgen's wheel, as `pip wheel` of this repository (or an index) gives it.
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, ROOT],
        check=True,
        capture_output=True,
    )
    (opgen_wheel,) = wheels.glob("opgen-*.whl")

    # The developer's environment: opgen with what the generated code runs on, and pytest.
    dev = fresh_venv(tmp_path / "dev-env")
    run(["pip", "install", "-q", f"{opgen_wheel}[runtime]", "pytest"], tmp_path, dev)

    # A new repository: the op, its configuration, its generated package, built and tested.
    repo = tmp_path / "myops"
    repo.mkdir()
    run(["git", "init", "-q"], repo, dev)
    new = run(["opgen", "new", "MyScale", "--domain", "my.ops"], repo, dev)
    assert "new: opgen.toml" in new
    assert 'package = "myops"' in (repo / "opgen.toml").read_text()
    kernel = repo / "opdefs" / "my_scale_kernel.h"
    assert kernel.is_file() and (repo / "myops" / "my_scale" / "torch_op.py").is_file()
    run(["opgen", "build"], repo, dev)
    tests = run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "myops"], repo, dev)
    assert " passed" in tests and "skipped" not in tests and "failed" not in tests
    run(["opgen", "--check"], repo, dev)

    # The ops' wheel.
    built = run(["opgen", "wheel"], repo, dev)
    (ops_wheel,) = (repo / "dist").glob("myops-0.1.0-*.whl")
    assert str(ops_wheel) in built
    for library in ("libopgen_my_ops.so", "libopgen_my_ops_torch.so", "build_info.json"):
        assert f"myops/_lib/{library}" in built, built

    # From source, pip builds the package folder itself (in this environment's torch).
    run(["pip", "install", "-q", "--no-build-isolation", "./myops"], repo, dev)
    where = run(["python", "-c", "import myops; print(myops.get_library_path())"], tmp_path, dev)
    assert str(tmp_path / "dev-env") in where and "site-packages/myops/_lib/" in where, where

    # Deployment: another fresh environment, the wheel alone, no source tree.
    deploy = fresh_venv(tmp_path / "deploy-env")
    run(["pip", "install", "-q", ops_wheel], tmp_path, deploy)
    elsewhere = tmp_path / "service"
    elsewhere.mkdir()
    script = elsewhere / "serve.py"
    script.write_text(textwrap.dedent("""\
        import json

        import numpy as np
        import onnxruntime as ort
        import torch

        import myops

        assert "site-packages" in myops.__file__, myops.__file__
        print("version", myops.__version__)
        print("build", json.dumps(myops.build_info()))
        x = torch.randn(3, 5)
        y = torch.ops.my_ops.my_scale(x)
        assert torch.equal(y, x), "the scaffolded op is an identity"


        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.ops.my_ops.my_scale(x) * 2


        myops.export_model(
            Model().eval(), (x,), "model.onnx", input_names=["x"],
            dynamic_axes={"x": {0: "batch"}},
        )
        options = ort.SessionOptions()
        options.register_custom_ops_library(myops.get_library_path("my.ops"))
        assert myops.get_library_path() == myops.get_library_path("my.ops")
        session = ort.InferenceSession("model.onnx", options)
        batch = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
        (out,) = session.run(None, {"x": batch})
        np.testing.assert_array_equal(out, batch * 2)
        print("library", myops.get_library_path("my.ops"))
        print("ok")
    """))
    served = run(["python", script], elsewhere, deploy)
    assert served.splitlines()[-1] == "ok", served
    assert "version 0.1.0" in served
    assert '"onnxruntime_api_version": 29' in served and '"package": "myops"' in served
    library = next(line for line in served.splitlines() if line.startswith("library "))
    assert str(tmp_path / "deploy-env") in library and "site-packages/myops/_lib/" in library
    # Nothing outside the environment was read: not the repository, not its build folder.
    shutil.rmtree(repo)
    assert run(["python", script], elsewhere, deploy).splitlines()[-1] == "ok"
