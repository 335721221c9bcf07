"""The reserved-name lists of generator/model/names.py against what they stand for: the generated
code's templates and modules, and the libraries it calls (onnxscript, PyTorch, CMake). Each list
was once short of a name a hostile definition used; these tests fail when a template or a
library adds another."""

from __future__ import annotations

import ast
import builtins
import re
import shutil
from pathlib import Path

import pytest

from generator.config import CMAKE_FOUND_PACKAGES, package_problem
from generator.model import names

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "generator" / "templates"


def test_builtins_the_generated_python_calls_are_reserved():
    """A parameter named `list` hid the builtin from the fake kernel that calls list(...)."""
    called = set()
    for module in (ROOT / "generated").glob("*/*.py"):
        if module.name.startswith("test_"):
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                called.add(node.id)
    called &= {name for name in dir(builtins) if "__" not in name}  # not __name__, __file__
    assert {"len", "list", "str"} <= called
    assert called <= names.PYTHON_BUILTINS_CALLED, sorted(called - names.PYTHON_BUILTINS_CALLED)
    assert all(names.is_reserved(name) for name in called)


def test_the_ort_wrappers_members_are_reserved():
    """The wrappers are class templates over the type variables: a type variable named GetName
    was redeclared by the member of that name."""
    members = set()
    statics = set()
    for template in (TEMPLATES / "cpp").glob("*.j2"):
        text = template.read_text()
        members |= set(re.findall(r"(?m)^  [A-Za-z_][\w:<>*&, ]* \**&?([A-Za-z_]\w*)\(", text))
        statics |= set(re.findall(r"static constexpr [\w:]+ ([A-Za-z_]\w*)\[\]", text))
    assert {"ComputeV2", "GetName", "GetInputType"} <= members
    assert members <= names.WRAPPER_MEMBER_NAMES, sorted(members - names.WRAPPER_MEMBER_NAMES)
    assert "characteristics" in statics
    assert all(names.is_reserved(name) for name in members | statics)


def test_onnxscripts_opset_attributes_are_refused_op_types():
    """The exporters call an op as `_DOMAIN.<op type>(...)`: op type `version` was the int."""
    from onnxscript import values

    attributes = {n for n in dir(values.Opset("a.b", 1)) if not n.startswith("_")}
    assert "version" in attributes
    assert attributes <= names.ONNXSCRIPT_OPSET_ATTRIBUTES


def test_torch_ops_attributes_and_the_op_modules_names_are_refused_torch_names():
    """torch.ops.<namespace>.<name> found an attribute first (`ns::name`, `load_library::x`),
    and the generated torch_op module binds the op's name beside its own (`ns::torch`)."""
    import torch

    def attributes(value: object) -> set[str]:
        found = set(dir(type(value))) | set(vars(value))
        return {n for n in found if not n.startswith("__")}

    namespace = torch.ops.opgen_names_probe
    namespaces = {
        n for n in attributes(torch.ops) if isinstance(getattr(torch.ops, n), type(namespace))
    }
    others = attributes(torch.ops) - namespaces - names.TORCH_NAMESPACES
    assert others <= names.TORCH_OPS_ATTRIBUTES, sorted(others - names.TORCH_OPS_ATTRIBUTES)
    assert attributes(namespace) <= names.TORCH_OP_NAMESPACE_ATTRIBUTES
    template = (TEMPLATES / "python" / "torch_op.py.j2").read_text()
    module_names = set(re.findall(r"(?m)^(?:def |class )?([A-Za-z_]\w*)\b(?: =|\(|:)", template))
    module_names |= set(re.findall(r"(?m)^import (\w+)", template))
    for imported in re.findall(r"(?m)^from [.\w]+ import (.+)$", template):
        parts = imported.split("#")[0].split(",")
        module_names |= {part.split(" as ")[-1].strip() for part in parts}
    # Its `import` lines are computed (the gradient formulas' modules among them).
    for module in (ROOT / "generated").glob("*/torch_op.py"):
        for statement in ast.parse(module.read_text()).body:
            if isinstance(statement, ast.Import):
                module_names |= {a.asname or a.name.split(".")[0] for a in statement.names}
    assert {"SCHEMA", "_fake", "_support", "torch"} <= module_names
    assert module_names <= names.TORCH_OP_MODULE_NAMES, sorted(
        module_names - names.TORCH_OP_MODULE_NAMES
    )


def test_cmake_project_names_that_would_be_cmakes_own_are_refused_packages():
    """The CMake project is named after the package: `CMAKE` set CMAKE_VERSION to its own."""
    found = set()
    for template in (TEMPLATES / "cmake").rglob("*.j2"):
        found |= set(re.findall(r"find_package\((\w+)", template.read_text()))
    assert found == CMAKE_FOUND_PACKAGES
    for name in ("CMAKE", "CMAKE_X", "OPGEN_TORCH", *sorted(found)):
        assert package_problem(name) is not None, name
    assert package_problem("my_ops") is None


def test_cmakes_shared_library_macros_are_refused_names():
    assert names.is_reserved("opgen_a_b_EXPORTS")
    assert "CMake" in (names.reserved_reason("opgen_my_ops_torch_EXPORTS") or "")


GOOD = (ROOT / "opdefs" / "inverse.yaml").read_text()


def _refusal(tmp_path: Path, run_generator, files: dict[str, str]) -> str:
    """The definition errors of a project of these files (with Inverse's kernels beside)."""
    (tmp_path / "opdefs").mkdir()
    for name, text in files.items():
        (tmp_path / "opdefs" / name).write_text(text)
    for kernel in ("inverse_kernel.h", "inverse_kernel.cuh"):
        shutil.copy(ROOT / "opdefs" / kernel, tmp_path / "opdefs")
    for kernel in (ROOT / "tests" / "opdefs").glob("select_above_kernel*"):
        shutil.copy(kernel, tmp_path / "opdefs")
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert not (tmp_path / "generated").exists()
    assert "Traceback" not in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    "old,new,field,fragment",
    [
        ("op: Inverse", "op: version", "op", "attribute of onnxscript's Opset"),
        ("domain: ai.opgen", "domain: onnx", "domain", "ONNX's standard domain"),
        ("name: opgen::inverse", "name: opgen::torch", "torch.name", "generated torch_op"),
        ("name: opgen::inverse", "name: opgen::name", "torch.name", "op namespaces"),
        ("name: opgen::inverse", "name: load_library::inverse", "torch.name", "torch.ops"),
        ("  T:\n", "  GetName:\n", "type_constraints.GetName", "is reserved"),
        ("  - name: X\n", "  - name: list\n", "inputs[0].name", "is reserved"),
        ("  - name: X\n", "  - name: opgen_ai_opgen_EXPORTS\n", "inputs[0].name", "CMake"),
    ],
)
def test_a_name_the_generated_code_takes_is_refused_at_its_field(
    tmp_path, run_generator, old, new, field, fragment
):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    if new == "  GetName:\n":
        text = text.replace("type: T", "type: GetName")
    errors = _refusal(tmp_path, run_generator, {"inverse.yaml": text})
    assert re.search(rf"inverse\.yaml:\d+:\d+: {re.escape(field)}: .*{re.escape(fragment)}", errors)


def test_a_size_symbol_named_as_a_tensor_is_refused(tmp_path, run_generator):
    text = (ROOT / "tests" / "opdefs" / "select_above.yaml").read_text()
    assert "data_dependent_sizes: [M]" in text
    errors = _refusal(
        tmp_path, run_generator, {"select_above.yaml": text.replace("sizes: [M]", "sizes: [M, X]")}
    )
    assert re.search(r"data_dependent_sizes\[1\]: size symbol 'X' is already the name of", errors)


def test_a_torch_name_that_is_another_native_ops_op_below_autograd_is_refused(
    tmp_path, run_generator
):
    other = GOOD.replace("op: Inverse", "op: InverseAgain").replace(
        "name: opgen::inverse", "name: opgen::_inverse_below_autograd"
    )
    errors = _refusal(tmp_path, run_generator, {"inverse.yaml": GOOD, "inverse_again.yaml": other})
    assert re.search(
        r"torch\.name: PyTorch overload opgen::_inverse_below_autograd\.default.* is also "
        r"defined by .*\(the op below Autograd that native op opgen::inverse defines\)",
        errors,
    ), errors


def test_the_op_modules_functions_call_the_op_by_a_name_no_parameter_takes():
    """A Scale op with a `scale` attribute: its Autograd kernel called `scale.redispatch` on the
    attribute's float. Inside functions the op is _OP (implementation-reserved), and its public
    name is no global that could hide a builtin."""
    modules = sorted((ROOT / "generated").glob("*/torch_op.py"))
    assert modules
    for module in modules:
        tree = ast.parse(module.read_text())
        bound = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        assert "_OP" in bound, module
        op_name = re.search(r"_OP = torch\.ops\.\w+\.(\w+)\.default", module.read_text())
        if op_name is None:  # torch.library.custom_op
            continue
        assert op_name.group(1) not in bound, module
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef) and function.name != "__getattr__":
                loaded = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
                assert op_name.group(1) not in loaded, (module, function.name)
    assert names.is_implementation_name("_OP")
