"""CUDA kernels without a GPU (issue 29): every generated CUDA source compiles with nvcc for the
configured architectures and links into the CUDA libraries; a CPU-only process builds, loads
and runs everything as before and never loads a CUDA library; asking for CUDA where there is
none is a clear error; a definition asking CUDA for what it cannot carry is refused at its
field. (What needs a GPU runs through `./dev test-gpu`, never here.)

nvcc is part of the machine (CUDA 13): without it these tests skip, except under CI=true,
where that is a failure."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
LIB = BUILD / "lib"
GENERATED = ROOT / "generated"
# The shipped ops with a CUDA kernel, and the domains holding them (each gets both CUDA libraries).
CUDA_OPS = {p.stem for p in (ROOT / "opdefs").glob("*.yaml") if "\n  cuda: " in p.read_text()}
CUDA_DOMAINS = ("ai_opgen", "mydomain", "test_customop")


def _nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no nvcc under CI: the CUDA sources must compile there")
        pytest.skip("no nvcc on this machine")
    return nvcc


def python(script: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def test_each_op_page_says_whether_cuda_runs_the_op():
    """The reference page's table names the CUDA kernel and what runs it, and only where the
    definition has one."""
    pages = {page.stem: page.read_text() for page in (GENERATED / "docs").glob("*.md")}
    with_cuda = {name for name, text in pages.items() if "\n| CUDA | " in text}
    assert with_cuda == CUDA_OPS
    assert (
        "| CUDA | `inverse_kernel.cuh`, run by PyTorch's CUDA dispatch key "
        "(`libopgen_ai_opgen_torch_cuda.so`) and ONNX Runtime's CUDA provider "
        '(`libopgen_ai_opgen_cuda.so`: `get_library_path("ai.opgen", device="cuda")`) |'
    ) in pages["inverse"]


def test_every_cuda_source_is_compiled_for_the_configured_architectures():
    _nvcc()
    info = json.loads((LIB / "build_info.json").read_text())
    assert info["cuda"].startswith("13."), info
    assert info["cuda_architectures"] == "80;90", info
    sources = sorted(GENERATED.glob("*/*_cuda.cu"))
    assert {s.parent.name for s in sources} == CUDA_OPS
    assert {"inverse", "custom_op_one", "layer_norm", "sum_op"} <= CUDA_OPS
    objects = {o.name for o in BUILD.rglob("*_cuda.cu.o")}
    assert objects == {f"{s.name}.o" for s in sources}, objects
    for ident in CUDA_DOMAINS:
        for library in (f"libopgen_{ident}_cuda.so", f"libopgen_{ident}_torch_cuda.so"):
            sections = subprocess.run(
                ["readelf", "-S", "-W", str(LIB / library)], capture_output=True, text=True
            ).stdout
            assert ".nv_fatbin" in sections, library  # the device code
            names = set(re.findall(rb"sm_\d+", (LIB / library).read_bytes()))
            assert names == {b"sm_80", b"sm_90"}, (library, names)


def test_the_cuda_kernels_round_products_and_sums_as_written():
    """The kernel objects build with --fmad=false, as the C++ ones with -ffp-contract=off, so
    nvcc fuses no product into a sum: proven on LayerNorm's device code (x * rstd * gamma +
    beta), compiled to PTX exactly as the build compiles it, which then holds no fma."""
    _nvcc()
    objects = [
        line.split(":")[0]
        for line in subprocess.run(
            ["ninja", "-C", str(BUILD), "-t", "targets", "all"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        if line.split(":")[0].endswith("_cuda.cu.o")
    ]
    assert {Path(o).name for o in objects} == {f"{op}_cuda.cu.o" for op in CUDA_OPS}
    commands = {}
    for target in objects:
        command = subprocess.run(
            ["ninja", "-C", str(BUILD), "-t", "commands", target],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()[-1]
        assert "--fmad=false" in command.split() and "-Xcompiler=-ffp-contract=off" in command
        commands[Path(target).name] = command.split()
    command = commands["layer_norm_cuda.cu.o"]
    kept = [arg for arg in command[: command.index("-MD")] if not arg.startswith("--generate-code")]
    source = str(GENERATED / "layer_norm" / "layer_norm_cuda.cu")
    for fmad in ("--fmad=true", None):  # nvcc's default fuses (the check can fail)
        flags = kept if fmad is None else [arg for arg in kept if arg != "--fmad=false"] + [fmad]
        ptx = subprocess.run(
            [*flags, "-arch=sm_90", "-ptx", "-x", "cu", source, "-o", "-"],
            capture_output=True,
            text=True,
            cwd=BUILD,
            timeout=300,
        )
        assert ptx.returncode == 0, ptx.stderr[-3000:]
        assert ("fma.rn" in ptx.stdout) == (fmad is not None), fmad


def test_the_cuda_onnxruntime_library_links_its_cuda_runtime_statically():
    """It needs no libcudart of its own beside the driver, so it loads on a machine without
    CUDA: every symbol is resolved (linked with --no-undefined) but the driver's, loaded at the
    first CUDA call."""
    _nvcc()
    for ident in CUDA_DOMAINS:
        needed = subprocess.run(
            ["readelf", "-d", str(LIB / f"libopgen_{ident}_cuda.so")],
            capture_output=True,
            text=True,
        ).stdout
        assert "libcudart" not in needed and "libcuda.so" not in needed, needed


def test_a_cpu_only_process_runs_everything_and_never_loads_a_cuda_library():
    _nvcc()
    result = python("""
        import numpy as np, onnxruntime as ort, torch
        import generated
        from generated import _testing
        assert torch.version.cuda is None
        x = torch.randn(4, 3, 3, dtype=torch.float64) + 4 * torch.eye(3, dtype=torch.float64)
        torch.testing.assert_close(torch.ops.opgen.inverse(x), torch.linalg.inv(x))
        a, b = torch.randn(2, 5), torch.randn(2, 5)
        torch.testing.assert_close(torch.ops.test_customop.custom_op_one(a, b), a + b)
        for domain in ("ai.opgen", "test.customop"):
            options = ort.SessionOptions()
            options.register_custom_ops_library(generated.get_library_path(domain))
        maps = open("/proc/self/maps").read()
        loaded = sorted({line.split()[-1] for line in maps.splitlines() if "cuda" in line.split("/")[-1]})
        print("loaded:", loaded)
        """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "loaded: []" in result.stdout, result.stdout


def test_the_cuda_onnxruntime_library_serves_the_cpu_provider_too():
    """A session with the CUDA provider takes one library per domain: the CUDA library carries
    every op of the domain on the CPU as well, and loads (and runs them) without a GPU."""
    _nvcc()
    result = python("""
        import numpy as np, onnxruntime as ort
        from onnx import TensorProto, helper
        import generated

        def run(library, op, inputs, output_type):
            names = list(inputs)
            node = helper.make_node(op, names, ["Z"], domain="test.customop")
            graph = helper.make_graph(
                [node], "g",
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in names],
                [helper.make_tensor_value_info("Z", output_type, [2, 3])])
            model = helper.make_model(graph, ir_version=9, opset_imports=[
                helper.make_opsetid("", 17), helper.make_opsetid("test.customop", 1)])
            options = ort.SessionOptions()
            options.register_custom_ops_library(library)
            session = ort.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
            return session.run(None, inputs)[0]

        cpu = generated.get_library_path("test.customop")
        cuda = generated.get_library_path("test.customop", device="cuda")
        assert cuda.endswith("libopgen_test_customop_cuda.so"), cuda
        x = np.array([[0.5, 1.5, -2.5], [3.25, -0.5, 7.0]], np.float32)
        y = np.ones((2, 3), np.float32)
        for op, inputs, kind in (("CustomOpOne", {"X": x, "Y": y}, TensorProto.FLOAT),
                                 ("CustomOpTwo", {"X": x}, TensorProto.INT32)):
            np.testing.assert_array_equal(run(cuda, op, inputs, kind), run(cpu, op, inputs, kind))
        print("same")
        """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "same" in result.stdout


def test_asking_for_cuda_where_there_is_none_is_a_clear_error(tmp_path):
    _nvcc()
    import generated
    from generated._support import NotBuiltError

    with pytest.raises(ValueError, match="^device must be 'cpu' or 'cuda', got 'gpu'$"):
        generated.get_library_path("ai.opgen", device="gpu")
    with pytest.raises(ValueError, match=r"^device must be 'cpu' or 'cuda', got \['cuda'\]$"):
        generated.get_library_path("ai.opgen", device=["cuda"])
    # The package's way to a device's module takes only a device's: never another module of it.
    assert generated._support.device_module("cuda").DEVICE == "cuda"
    for device in ("gpu", "support", "names", "testing", "", "../cuda", "cuda.x"):
        message = f"^generated has no kernels for device {re.escape(repr(device))}$"
        with pytest.raises(ValueError, match=message):
            generated._support.device_module(device)
    # A package whose one op has no CUDA kernel (ClipBelow, for ONNX Runtime alone).
    project = tmp_path / "plain"
    (project / "opdefs").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "opdefs" / "clip_below.yaml", project / "opdefs")
    (project / "pyproject.toml").write_text('[tool.opgen]\npackage = "plainops"\n')
    assert (
        subprocess.run(
            [sys.executable, "-m", "generator", "-q"],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).returncode
        == 0
    )
    plain = subprocess.run(
        [sys.executable, "-c", "import plainops; plainops.get_library_path(device='cuda')"],
        cwd=project, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}"},
    )  # fmt: skip
    assert (
        "ValueError: plainops has no CUDA kernels for domain 'test.ortonly': no op definition of "
        "it names a CUDA kernel (kernel: {cuda: <file>})"
    ) in plain.stderr, plain.stderr
    # A build without the CUDA libraries (no nvcc where it ran): the path says so.
    (tmp_path / "lib").mkdir()
    for library in LIB.iterdir():
        if "_cuda" not in library.name:
            (tmp_path / "lib" / library.name).symlink_to(library)
    result = python(
        """
        import generated
        try:
            generated.get_library_path("ai.opgen", device="cuda")
        except generated._support.NotBuiltError as error:
            print(error)
        print(generated.get_library_path("ai.opgen"))
        """,
        OPGEN_BUILD_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"{tmp_path}/lib/libopgen_ai_opgen_cuda.so does not exist: the CUDA libraries were not "
        "built (`opgen build` builds them where CMake finds nvcc; `opgen build --cuda on` makes "
        "its absence an error)"
    ) in result.stdout, result.stdout
    assert NotBuiltError.__name__ == "NotBuiltError"


def test_the_pytorch_cuda_library_does_not_load_into_a_cpu_only_torch():
    """Why the CUDA kernels are libraries of their own: PyTorch's current-stream function is
    libtorch_cuda's, which a CPU-only torch lacks."""
    _nvcc()
    result = python("""
        import torch
        assert torch.version.cuda is None
        try:
            torch.ops.load_library("build/lib/libopgen_ai_opgen_torch_cuda.so")
        except OSError as error:
            print("refused:", error)
        """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused: Could not load this library" in result.stdout, result.stdout
    undefined = subprocess.run(
        ["nm", "-D", "--undefined-only", str(LIB / "libopgen_ai_opgen_torch_cuda.so")],
        capture_output=True,
        text=True,
    ).stdout
    assert "aoti_torch_get_current_cuda_stream" in undefined


def test_the_cuda_kernels_arithmetic_on_the_host_gives_the_cpu_kernels_bits(tmp_path):
    """What CI can check of the device code without a GPU: tests/cuda_on_host.cu runs the
    CUDA kernels' __host__ __device__ parts on the host (nvcc compiles them for both) against
    the CPU kernels, bit for bit: the element conversions (float16, bfloat16, float8), Inverse's
    per-matrix elimination for N <= 8, Sum's merged broadcast layout and per-element sums, and
    Quantize's and Dequantize's per-element conversions. (The device's own instructions and
    NaNs wait for a GPU: `./dev test-gpu`.)"""
    nvcc = _nvcc()
    program = tmp_path / "cuda_on_host"
    compiled = subprocess.run(
        [
            nvcc,
            "-std=c++17",
            "-O2",
            "-arch=sm_80",
            "--expt-relaxed-constexpr",
            # As the kernel objects are built: products and sums rounded as written.
            *("-Xcompiler", "-ffp-contract=off"),
            *("-I", str(GENERATED / "include"), "-I", str(GENERATED), "-I", str(ROOT)),
            str(ROOT / "tests" / "cuda_on_host.cu"),
            *("-o", str(program)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    # nvcc turns a host call of a device-only function inside a template into exit(1) at run
    # time, not a compile error: the lines below prove every check ran.
    ran = subprocess.run([str(program)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert ran.stdout.endswith("mismatches: 0\n"), ran.stdout[-3000:]
    for name in ("float16", "bfloat16", "float8e4m3fn", "float8e5m2"):
        checked = re.search(rf"^{name} conversions: (\d+) checked$", ran.stdout, re.M)
        assert checked and int(checked[1]) > 1_000_000, ran.stdout
    for dtype in ("float32", "float64", "float16"):
        singular = []
        for n in range(1, 9):
            line = re.search(
                rf"^Inverse {dtype} N={n}: 3000 matrices, (\d+) singular$", ran.stdout, re.M
            )
            assert line, (dtype, n, ran.stdout)
            singular.append(int(line[1]))
        # Some singular (the same column on both) and most not (the same bits).
        assert sum(singular) > 0 and max(singular) < 1500, (dtype, singular)
    for dtype in ("float32", "float64", "float16", "int32", "int64"):
        line = re.search(rf"^Sum {dtype}: (\d+) cases, (\d+) refused$", ran.stdout, re.M)
        assert line and int(line[1]) > 1400, (dtype, ran.stdout)
    for t in ("float32", "float16"):
        for q in ("uint8", "int8", "uint16", "int16", "float8e4m3fn", "float8e5m2"):
            line = re.search(rf"^Quantize {q} to {t}: (\d+) values, (\d+) NaN$", ran.stdout, re.M)
            assert line and int(line[1]) > 8_000_000, (q, t, ran.stdout)
            assert (int(line[2]) > 0) == q.startswith(("int", "uint")), (q, t, ran.stdout)
            codes = 1 << (16 if q.endswith("16") else 8)
            assert f"\nDequantize {q} to {t}: {8 * codes} values\n" in ran.stdout, (q, t)


CUDA_REFUSALS = [
    # (definition, old, new, error)
    (
        "opdefs/inverse.yaml",
        "  cuda: inverse_kernel.cuh\n",
        "  cuda: missing.cuh\n",
        r"kernel\.cuda: CUDA kernel file 'missing\.cuh' not found beside the definition",
    ),
    (
        "opdefs/inverse.yaml",
        "name: opgen::inverse\n",
        "name: opgen::inverse\n  api: library\n",
        r"kernel\.cuda: a CUDA kernel is registered with PyTorch natively \(torch\.api native, "
        r"the default\), not yet with torch\.api library",
    ),
    (
        "opdefs/string_replace.yaml",
        "  source: string_replace_kernel.h\n",
        "  source: string_replace_kernel.h\n  cuda: string_replace_kernel.h\n",
        r"[\w\[\].]+: string tensors: not carried by CUDA kernels \(device memory holds no string tensors "
        r"\(PyTorch and ONNX Runtime\)\); without 'cuda' in 'kernel' the op runs on the CPU "
        r"alone",
    ),
    (
        "opdefs/dequantize_int4.yaml",
        "  source: dequantize_int4_kernel.h\n",
        "  source: dequantize_int4_kernel.h\n  cuda: dequantize_int4_kernel.h\n",
        r"[\w\[\].]+: int4, uint4: not carried by .*CUDA kernels \(not yet: ONNX Runtime's two values per "
        r"byte are unpacked on the host\)",
    ),
    (
        "opdefs/codebook_dequantize.yaml",
        "  source: codebook_dequantize_kernel.h\n",
        "  source: codebook_dequantize_kernel.h\n  cuda: codebook_dequantize_kernel.h\n",
        r"[\w\[\].]+: tensor attributes \(tensor\): not carried by .*CUDA kernels \(not yet: its values "
        r"are copied on the host, not to the device\)",
    ),
    (
        "tests/opdefs/select_above.yaml",
        "kernel:\n",
        "kernel:\n  cuda: select_above.yaml\n",
        r"kernel\.cuda: a CUDA kernel with an output of data-dependent size "
        r"\(data_dependent_sizes\) is not carried yet",
    ),
]


@pytest.mark.parametrize("source,old,new,error", CUDA_REFUSALS)
def test_a_cuda_kernel_asked_for_what_it_cannot_carry_is_refused_at_its_field(
    tmp_path, run_generator, source, old, new, error
):
    definition = ROOT / source
    text = definition.read_text()
    assert old in text, source
    (tmp_path / "opdefs").mkdir()
    for sibling in definition.parent.glob(f"{definition.stem}*"):
        shutil.copy(sibling, tmp_path / "opdefs" / sibling.name)
    (tmp_path / "opdefs" / definition.name).write_text(text.replace(old, new, 1))
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(rf"{definition.stem}\.yaml:\d+:\d+: {error}", result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "generated").exists()


def _opgen(project: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CUDACXX", None)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "generator", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_building_with_and_without_cuda(tmp_path):
    """One project (Inverse alone), built in turn: with CUDA (its libraries, and in
    build_info.json); then --cuda off (the CUDA libraries of the earlier build removed, the
    package saying they were not built); --cuda on where no nvcc is found (an error saying
    how); and a CUDA kernel that does not compile (the build names the op)."""
    _nvcc()
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)  # where the search for a configuration stops
    (project / "opdefs").mkdir()
    for name in ("inverse.yaml", "inverse_kernel.h", "inverse_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / name, project / "opdefs" / name)
    (project / "opgen.toml").write_text('package = "cudaops"\ncuda-architectures = "80"\n')
    assert _opgen(project, "-q").returncode == 0
    lib = project / "build" / "lib"
    built = _opgen(project, "build", "-q", "--cuda", "on")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (lib / "libopgen_ai_opgen_cuda.so").is_file()
    assert (lib / "libopgen_ai_opgen_torch_cuda.so").is_file()
    info = json.loads((lib / "build_info.json").read_text())
    assert info["cuda"].startswith("13.") and info["cuda_architectures"] == "80", info

    off = _opgen(project, "build", "-q", "--cuda", "off")
    assert off.returncode == 0, off.stdout[-3000:] + off.stderr[-3000:]
    assert sorted(p.name for p in lib.glob("*cuda*")) == []
    assert json.loads((lib / "build_info.json").read_text())["cuda"] == ""
    result = subprocess.run(
        [sys.executable, "-c", "import cudaops; cudaops.get_library_path(device='cuda')"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}"},
    )
    assert "libopgen_ai_opgen_cuda.so does not exist: the CUDA libraries were not built" in (
        result.stderr
    ), result.stderr

    # Architectures this nvcc lacks: no CUDA libraries, the CPU ones built (a warning says why);
    # with --cuda on, an error naming the configuration's key. --sanitize with --cuda on: refused.
    assert _opgen(project, "build", "-q", "--cuda", "on").returncode == 0  # (the CUDA libs again)
    (project / "opgen.toml").write_text('package = "cudaops"\ncuda-architectures = "99"\n')
    assert _opgen(project, "-q").returncode == 0
    auto = _opgen(project, "build")
    assert auto.returncode == 0, auto.stdout[-3000:] + auto.stderr[-3000:]
    assert "opgen: no CUDA libraries: OPGEN_CUDA_ARCHITECTURES (the configuration's" in (
        auto.stdout + auto.stderr
    )
    assert (
        sorted(p.name for p in lib.glob("*cuda*")) == []
        and (lib / "libopgen_ai_opgen.so").is_file()
    )
    on = _opgen(project, "build", "--cuda", "on")
    assert on.returncode != 0 and "compiles for none of '99'" in on.stdout + on.stderr
    sanitize = _opgen(project, "build", "--sanitize", "--cuda", "on")
    assert sanitize.returncode == 2 and "--sanitize builds no CUDA libraries" in sanitize.stderr
    (project / "opgen.toml").write_text('package = "cudaops"\ncuda-architectures = "80"\n')
    assert _opgen(project, "-q").returncode == 0

    without_nvcc = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "nvcc").exists()
    )
    assert shutil.which("nvcc", path=without_nvcc) is None
    refused = _opgen(
        project, "build", "-q", "--cuda", "on", "--build-dir", "other", path=without_nvcc
    )
    assert refused.returncode != 0
    assert "OPGEN_CUDA=ON and no CUDA compiler found" in refused.stdout + refused.stderr

    kernel = project / "opdefs" / "inverse_kernel.cuh"
    kernel.write_text(
        kernel.read_text().replace("const int64_t n = X.dim(-1);", "const int64_t n = X.nope;")
    )
    broken = _opgen(project, "build", "-q", "--cuda", "on")
    assert broken.returncode == 1
    assert "nope" in broken.stdout, "nvcc's own message is shown"
    assert "build failed in op(s): inverse (opdefs/inverse.yaml)" in broken.stderr, broken.stderr


def test_a_compile_error_names_the_op_whose_files_it_is_in(tmp_path):
    """By the op's generated folder or its kernel files, as absolute paths or relative to the
    build folder: a kernel file whose
    name ends another's (kernel.cuh, layer_norm_kernel.cuh), an op id that is a folder of the
    path (home), spaces in the path, nvcc's `file(line)` form."""
    from types import SimpleNamespace

    from generator.build import _ops_in
    from generator.model.op import Kernel

    out = tmp_path / "my ops" / "generated"
    definitions = tmp_path / "my ops" / "opdefs"
    build = tmp_path / "my ops" / "build"

    def op(op_id: str, cuda: str) -> SimpleNamespace:
        kernel = Kernel(source_file=None, body="", cuda_file=definitions / cuda)
        return SimpleNamespace(op_id=op_id, kernel=kernel, definition_path=f"opdefs/{op_id}.yaml")

    ops = [op("home", "kernel.cuh"), op("layer_norm", "layer_norm_kernel.cuh")]
    line = f"{out}/layer_norm/../../opdefs/layer_norm_kernel.cuh(61): error: no member"
    assert _ops_in(line, ops, out, build) == {"layer_norm (opdefs/layer_norm.yaml)"}
    line = f"{definitions}/kernel.cuh:3:1: error: expected ';'"
    assert _ops_in(line, ops, out, build) == {"home (opdefs/home.yaml)"}
    assert _ops_in("/home/user/x.cc:1:1: error: y", ops, out, build) == set()
    # Relative to the build folder, as a compiler cache's base_dir makes them (ccache), and only
    # as a whole path: never the tail of another, or a folder whose name the op id begins.
    line = "../opdefs/layer_norm_kernel.cuh(61): error: no member"
    assert _ops_in(line, ops, out, build) == {"layer_norm (opdefs/layer_norm.yaml)"}
    line = "In file included from ../generated/home/home_ort.cc:3: error: x"
    assert _ops_in(line, ops, out, build) == {"home (opdefs/home.yaml)"}
    assert _ops_in("../other/../opdefs/kernel.cuh:3:1: error: x", ops, out, build) == set()
    assert _ops_in("../generated/homely/x.cc:1:1: error: y", ops, out, build) == set()


def test_the_wheel_carries_the_cuda_libraries(tmp_path):
    """`opgen wheel` where nvcc is found: the package's _lib/ holds both CUDA libraries beside
    the CPU ones, and build_info.json says what they were built for."""
    import zipfile

    _nvcc()
    project = tmp_path / "w"
    (project / ".git").mkdir(parents=True)
    (project / "opdefs").mkdir()
    for name in ("custom_op_one.yaml", "custom_op_one_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / name, project / "opdefs" / name)
    (project / "opgen.toml").write_text('package = "wheelops"\ncuda-architectures = "80"\n')
    assert _opgen(project, "-q").returncode == 0
    built = _opgen(project, "wheel", "--jobs", "2")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (project / "dist").glob("wheelops-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = json.loads(archive.read("wheelops/_lib/build_info.json"))
    for library in (
        "libopgen_test_customop.so",
        "libopgen_test_customop_cuda.so",
        "libopgen_test_customop_torch.so",
        "libopgen_test_customop_torch_cuda.so",
    ):
        assert f"wheelops/_lib/{library}" in names, sorted(names)
    assert info["cuda"].startswith("13.") and info["cuda_architectures"] == "80", info
