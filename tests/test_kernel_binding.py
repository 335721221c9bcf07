"""Which kernel a PyTorch op name binds to, and whether a gradient can silently vanish (issue
27): every case where a name would run another definition's kernel, an old build's kernel, or
give a zero or missing gradient is an error naming both sides, at import or at the call.

Each case runs in a fresh interpreter on this project's build (`opgen build`). A second
package is generated into a temporary project from a copy of one of our definitions, its ONNX
domain changed to other.ops and its PyTorch name kept: a native one gets, as its build, a copy
of our domain's native library under the other domain's file name (the same registrations a
build of that definition makes), so that no test compiles anything."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import generated  # noqa: F401 (the ops, for the in-process checks)

ROOT = Path(__file__).resolve().parent.parent
BUILD_LIB = ROOT / "build" / "lib"
TORCH_LIBRARY = BUILD_LIB / "libopgen_ai_opgen_torch.so"
INVERSE_CASE = "torch.tensor([[4.0, 7.0], [2.0, 6.0]])"


def python(script: str, *args: str, cwd: Path = ROOT, **env: str) -> str:
    """Runs a script in a fresh interpreter that imports from cwd (and the project root); its
    output."""
    (output,) = in_parallel((script, args, cwd, env))
    return output


def in_parallel(*runs: tuple[str, tuple[str, ...], Path, dict[str, str]]) -> list[str]:
    """python() for each (script, args, cwd, env), all at once; their outputs."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)]), **env},
        )
        for script, args, cwd, env in runs
    ]
    outputs = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stdout[-3000:] + stderr[-3000:]
        outputs.append(stdout)
    return outputs


def make_package(project: Path, definition: str, torch_name: str, api: str | None) -> Path:
    """A project whose package `otherpkg` holds a copy of one of our definitions, in ONNX domain
    other.ops, with the given PyTorch name and api; generated, and for a native op given its
    native library. Returns the project's root (importing from there imports otherpkg)."""
    opdefs = project / "opdefs"
    opdefs.mkdir(parents=True)
    text = (ROOT / "opdefs" / definition).read_text()
    text = re.sub(r"(?m)^domain: .*$", "domain: other.ops", text)
    torch_section = f"name: {torch_name}" + (f"\n  api: {api}" if api else "")
    text = re.sub(r"(?m)^  name: \S+::\S+$", "  " + torch_section, text, count=1)
    if api is not None:  # a CUDA kernel is registered natively only, yet
        text = re.sub(r"(?m)^  cuda: \S+\n", "", text)
    (opdefs / definition).write_text(text)
    for kernel in re.findall(r"(?m)^  (?:source|cuda): (\S+)$", text):
        shutil.copy(ROOT / "opdefs" / kernel, opdefs / kernel)
    (project / "opgen.toml").write_text(
        'definitions = "opdefs"\npackage = "otherpkg"\nbuild-dir = "build"\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "generator"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    if api is None:  # native: the library a build of it makes for domain other.ops
        (project / "build" / "lib").mkdir(parents=True)
        shutil.copy(TORCH_LIBRARY, project / "build" / "lib" / "libopgen_other_ops_torch.so")
    return project


IMPORT_BOTH = """
    import sys
    first, second = sys.argv[1:]
    __import__(first)
    try:
        __import__(second)
    except RuntimeError as error:
        print("refused:", error)
    else:
        print("imported both")
"""


def _first_native_op() -> tuple[str, str]:
    """(definition, PyTorch name) of the first op of domain ai.opgen with a native kernel
    registration, in the order the package binds its ops (their ids): the other package's copy
    of that domain's native library collides with ours there first."""
    for path in sorted((ROOT / "opdefs").glob("*.yaml")):
        text = path.read_text()
        torch_name = re.search(r"(?m)^torch:\n  name: (\S+)$", text)
        native = torch_name and not re.search(r"(?m)^  api: ", text) and "\nkernel:" in text
        if native and re.search(r"(?m)^domain: ai\.opgen$", text):
            return path.name, torch_name.group(1)
    raise AssertionError("no native op in domain ai.opgen")


# (definition, PyTorch name shared with one of ours, the other package's torch.api)
SAME_NAME = {
    "native": (*_first_native_op(), None),
    "library": ("custom_op_one.yaml", "test_customop::custom_op_one", "library"),
    "custom_op": ("custom_op_one.yaml", "test_customop::custom_op_one", "custom_op"),
    "legacy": ("custom_op_one.yaml", "test_customop::custom_op_one", "legacy"),
}


@pytest.mark.parametrize("api", SAME_NAME)
def test_two_packages_defining_one_name_is_an_error_naming_both(api, tmp_path):
    """Two packages of different ONNX domains both define one PyTorch name: the second
    package's op used to run the first's kernel (its own native library's definition refused,
    with one line on stderr), or to replace the first's fake and Autograd kernels. Either import
    order: the second import fails naming both packages, their definitions and libraries."""
    definition, name, other_api = SAME_NAME[api]
    project = make_package(tmp_path, definition, name, other_api)
    op_id = definition.removesuffix(".yaml")
    domain = "test_customop" if definition == "custom_op_one.yaml" else "ai_opgen"
    ours = (
        f"package generated (opdefs/{definition}, {ROOT}/generated/{op_id}/torch_op.py; native "
        f"library {BUILD_LIB}/libopgen_{domain}_torch.so)"
    )
    theirs = f"package otherpkg (opdefs/{definition}, {project}/otherpkg/{op_id}/torch_op.py"
    if other_api is None:
        theirs += f"; native library {project}/build/lib/libopgen_other_ops_torch.so)"
    else:
        theirs += ")"
    orders = [("generated", "otherpkg", ours, theirs), ("otherpkg", "generated", theirs, ours)]
    outputs = in_parallel(*[(IMPORT_BOTH, order[:2], project, {}) for order in orders])
    for (_, _, defined_by, binding), output in zip(orders, outputs, strict=True):
        assert "refused:" in output, output
        refusal = output.split("refused: ", 1)[1]
        assert refusal.startswith(f"{name} is defined by {defined_by}"), refusal
        assert f", so {binding} cannot bind it" in refusal, refusal


def test_a_name_defined_before_the_import_is_an_error_naming_it(tmp_path):
    """A torch.library definition of the name made before importing the package used to keep
    its kernel (the library's own definition refused, one line on stderr): now the import fails
    naming where it was made. Made after the import, PyTorch refuses it, naming our library."""
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent(f"""\
        import sys
        import torch

        def define():
            library = torch.library.Library("opgen", "FRAGMENT")
            library.define("inverse(Tensor X) -> Tensor")
            library.impl("inverse", lambda X: X.clone(), "CPU")
            return library

        try:
            if sys.argv[1] == "before":
                kept = define()
                import generated
            else:
                import generated
                kept = define()
        except RuntimeError as error:
            print("refused:", error)
        else:
            print("no error:", torch.ops.opgen.inverse({INVERSE_CASE}).tolist())
    """))
    run = f"import runpy, sys; sys.argv[1:] = sys.argv[2:]; runpy.run_path({str(script)!r})"
    before, after = in_parallel((run, ("", "before"), ROOT, {}), (run, ("", "after"), ROOT, {}))
    assert (
        f"refused: opgen::inverse is defined by a registration at {script}:5, so package "
        f"generated (opdefs/inverse.yaml, {ROOT}/generated/inverse/torch_op.py; native library "
        f"{TORCH_LIBRARY}) cannot bind it"
    ) in before, before
    assert (
        f"Original registration: registered at {TORCH_LIBRARY}, inverse_torch.cc:" in after
    ), after


COPY = """
    import importlib.util
    import sys
    from pathlib import Path

    import generated
    from generated import _support

    copy = Path(sys.argv[1])
    spec = importlib.util.spec_from_file_location(
        "generated_copy", copy / "__init__.py", submodule_search_locations=[str(copy)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_copy"] = module
    try:
        if sys.argv[2] == "import":
            import generated_copy.inverse  # its package's other ops left out
        else:
            _support.kernels("ai_opgen")
            import generated_copy._support as copy_support

            copy_support.kernels("ai_opgen")
    except RuntimeError as error:
        print("refused:", error)
    else:
        print("no error")
"""


def test_a_second_copy_of_the_package_is_refused(tmp_path):
    """The package imported twice from two copies (a folder beside the repository's, under
    another module name). Sharing the build (the same native files), the copy's Python
    registrations used to replace the first's in silence: now the first op it binds names both
    module files. With a wheel's layout (its own copies of the libraries in _lib/), the copy's
    pybind11 kernel module is refused like its native PyTorch library, naming both files."""
    copy, wheel = tmp_path / "copy" / "generated", tmp_path / "wheel" / "generated"
    for folder in (copy, wheel):
        shutil.copytree(ROOT / "generated", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (wheel / "_lib").mkdir()
    module = next(BUILD_LIB.glob("opgen_ai_opgen_kernels*.so")).name
    shutil.copy(BUILD_LIB / module, wheel / "_lib" / module)
    shared, separate = in_parallel(
        (COPY, (str(copy), "import"), ROOT, {"OPGEN_BUILD_DIR": str(ROOT / "build")}),
        (COPY, (str(wheel), "kernels"), ROOT, {}),
    )
    assert (
        "refused: opgen::inverse is defined by package generated (opdefs/inverse.yaml, "
        f"{ROOT}/generated/inverse/torch_op.py; native library {TORCH_LIBRARY}), so package "
        f"generated (opdefs/inverse.yaml, {copy}/inverse/torch_op.py; native library "
        f"{TORCH_LIBRARY}) cannot bind it"
    ) in shared, shared
    assert (
        f"refused: {BUILD_LIB / module} is loaded in this process, so {wheel / '_lib' / module} "
        "cannot be: both are the same native file of one ONNX domain"
    ) in separate, separate


STALE = """
    import importlib
    import os
    import shutil
    import sys
    from pathlib import Path

    import torch

    what = sys.argv[1]
    lib = Path(os.environ["OPGEN_BUILD_DIR"]) / "lib"
    if what == "kernels":
        from generated import _support

        path = Path(_support.kernels("ai_opgen").__file__)
    else:
        path = lib / "libopgen_ai_opgen_torch.so"
        torch.ops.load_library(str(path))  # docs/native.md's route without Python, then the package
    # A rebuild: a new file at the path (the old one deleted, or moved aside).
    shutil.copyfile(path, lib / "new.tmp")
    if what == "moved":
        os.rename(path, lib / "moved-aside.so")
    os.replace(lib / "new.tmp", path)
    try:
        if what == "kernels":
            importlib.reload(_support)  # a fresh _support, as another copy of the package has
            _support.kernels("ai_opgen")
        else:
            import generated
    except RuntimeError as error:
        print("refused:", error)
    else:
        print("no error")
"""


@pytest.mark.parametrize("what", ["deleted", "moved", "kernels"])
def test_a_file_rebuilt_after_this_process_loaded_it_is_refused(what, tmp_path):
    """The dynamic loader hands back the copy it loaded for a path it has seen, so a library
    (or pybind11 module) rebuilt in place since it was loaded would run the old kernel in
    silence, and /proc/self/maps names the old one "<path> (deleted)", or its new place. Now:
    an error naming the mapped copy and the file on disk."""
    lib = tmp_path / "lib"
    shutil.copytree(BUILD_LIB, lib)
    output = python(STALE, what, OPGEN_BUILD_DIR=str(tmp_path))
    if what == "kernels":
        path = next(lib.glob("opgen_ai_opgen_kernels*.so"))
    else:
        path = lib / "libopgen_ai_opgen_torch.so"
    loaded = lib / "moved-aside.so" if what == "moved" else f"{path} (deleted)"
    assert (
        f"refused: {loaded} is loaded in this process, so {path} cannot be: it is the file that "
        "was at that path when this process loaded it (rebuilt, moved or deleted since)"
    ) in output, output


BARE = """
    import warnings

    import torch

    warnings.simplefilter("error", UserWarning)  # PyTorch's fallback warns so
    for domain in ("ai_opgen", "mydomain"):
        torch.ops.load_library(f"build/lib/libopgen_{domain}_torch.so")
    inverse = torch.ops.opgen.inverse
    x = INVERSE_CASE
    want = torch.tensor([[0.6, -0.7], [-0.2, 0.4]])


    def outcome(call):
        try:
            result = call()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "ok" if torch.allclose(result, want) else f"wrong: {result.tolist()}"


    def backward():
        X = x.clone().requires_grad_()
        inverse(X).sum().backward()
        return X.grad


    def dual():
        with torch.autograd.forward_ad.dual_level():
            X = torch.autograd.forward_ad.make_dual(x, torch.ones(2, 2))
            return torch.autograd.forward_ad.unpack_dual(inverse(X)).tangent


    def no_grad():
        with torch.no_grad():
            return inverse(x.clone().requires_grad_())


    def inference():
        with torch.inference_mode():
            return inverse(x.clone())


    def group_norm():
        scale = torch.ones(2, requires_grad=True)
        X = torch.ones(1, 2, 3)
        return torch.ops.mydomain.custom_group_norm(X, torch.tensor(1), scale, torch.zeros(2))


    cases = {
        "plain": lambda: inverse(x),
        "no_grad": no_grad,
        "inference_mode": inference,
        "vmap": lambda: torch.func.vmap(inverse)(torch.stack([x, x]))[1],
        "negative bit": lambda: -inverse(torch._neg_view(x)),
        "backward": backward,
        "torch.func.grad": lambda: torch.func.grad(lambda X: inverse(X).sum())(x),
        "torch.func.jvp": lambda: torch.func.jvp(inverse, (x,), (torch.ones(2, 2),))[1],
        "forward_ad": dual,
        "group norm, scale requires grad": group_norm,
        "singular": lambda: inverse(torch.ones(2, 2)),
        "meta": lambda: inverse(torch.ones(2, 2, device="meta")),
        # A variadic op: its values are checked one by one (Tensor[] on the stack).
        "sum": lambda: want if torch.equal(torch.ops.opgen.sum([x, x]), 2 * x) else None,
        "sum, a later value requires grad": (
            lambda: torch.ops.opgen.sum([x, x.clone().requires_grad_()])
        ),
    }
    for name, call in cases.items():
        print(f"{name} -> {outcome(call)}")

    # A refused call frees its arguments: 2000 fresh 64 KB inputs would keep 128 MB.
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(2000):
        try:
            inverse(torch.eye(128).requires_grad_())
        except RuntimeError:
            pass
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
    print(f"refused calls keep -> {'nothing' if grown < 16 else f'{grown} MB'}")
""".replace("INVERSE_CASE", INVERSE_CASE)


def test_native_libraries_alone_never_give_a_silent_zero_gradient():
    """docs/native.md's route without the generated package: the native library loaded alone. A
    gradient through the op used to come out as zeros (torch.func.grad, forward-mode AD) or None
    (backward), with a warning at most; now the call is an error naming the op (the library's
    own Autograd kernel). Calls no gradient can flow through still work, through the dispatcher
    below the Autograd key (the lazy negation bit of a view is applied, as PyTorch's fallback
    did), and the kernel's own errors arrive unchanged. A refused call frees its arguments."""
    output = python(BARE)
    outcomes = dict(line.split(" -> ", 1) for line in output.splitlines())
    no_gradient = (
        "RuntimeError: opgen::inverse: no gradient flows through this op here: "
        f"{TORCH_LIBRARY} was loaded without its Python package generated, which holds the op's "
        "Autograd kernel, and input 'X' requires grad (import generated for gradients; without "
        "them, call the op under torch.no_grad() or torch.inference_mode())"
    )
    forward = (
        "RuntimeError: opgen::inverse does not support forward-mode AD (torch.func.jvp, jacfwd, "
        "hessian, torch.autograd.forward_ad): opdefs/inverse.yaml gives reverse-mode gradient "
        "formulas only"
    )
    assert outcomes == {
        "plain": "ok",
        "no_grad": "ok",
        "inference_mode": "ok",
        "vmap": "ok",
        "negative bit": "ok",
        "backward": no_gradient,
        "torch.func.grad": no_gradient,
        "torch.func.jvp": forward,
        "forward_ad": forward,
        "group norm, scale requires grad": (
            "RuntimeError: mydomain::custom_group_norm: no gradient flows through this op here: "
            f"{BUILD_LIB}/libopgen_mydomain_torch.so was loaded without its Python package "
            "generated, which holds the op's Autograd kernel, and input 'scale' requires grad "
            "(import generated for gradients; without them, call the op under torch.no_grad() "
            "or torch.inference_mode())"
        ),
        "singular": "ValueError: Inverse: matrix is singular (zero pivot in column 1)",
        "meta": (
            f"ValueError: Inverse: input 'X' is on meta: {TORCH_LIBRARY} runs the op on the "
            "CPU and CUDA devices only (the fake kernel, for meta and fake tensors, comes with the generated package "
            "generated)"
        ),
        "sum": "ok",
        "sum, a later value requires grad": (
            "RuntimeError: opgen::sum: no gradient flows through this op here: "
            f"{TORCH_LIBRARY} was loaded without its Python package generated, which holds the "
            "op's Autograd kernel, and input 'X' requires grad (import generated for gradients; "
            "without them, call the op under torch.no_grad() or torch.inference_mode())"
        ),
        "refused calls keep": "nothing",
    }, output


def test_the_packages_autograd_kernel_wins_on_every_backend():
    """The native library registers its Autograd kernel for the Autograd alias key; the
    package registers its own for each backend's Autograd key, which PyTorch prefers, without
    an override warning (this module imported it under pytest's warnings-as-errors)."""
    from generated import _support

    keys = _support.autograd_keys()
    assert {"AutogradCPU", "AutogradMeta", "AutogradCUDA", "AutogradOther"} <= set(keys)
    dump = torch._C._dispatch_dump("opgen::inverse")
    assert f"Autograd[alias]: registered at {TORCH_LIBRARY}, inverse_torch.cc:" in dump
    for key in keys:
        assert f"\n{key}: registered at {ROOT}/generated/inverse/torch_op.py:" in dump, key
    # An op no gradient can flow through (int32 output) has no Autograd kernel of either kind.
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    assert not has_kernel("test_customop::custom_op_two", "Autograd")
    assert not torch._C._dispatch_has_kernel("test_customop::_custom_op_two_below_autograd")
