"""The pybind11 module: each kernel op with a PyTorch side bound for numpy arrays, which the
PyTorch op's Python registrations call (pybind_op.cc)."""

from __future__ import annotations

from generator.api import cpp
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp_kernel import (
    KernelWrapperView,
    dtype_list_expr,
    kernel_wrapper_view,
    one_output_value,
    one_value,
)
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import OpDef
from generator.model.tensors import TensorParam
from generator.render import render
from generator.view import view


def _numpy_data(tensor: TensorParam) -> str:
    array = one_value(tensor, Local.array(tensor.name))
    return f"opgen::py_support::data<{common.tensor_cpp_type(tensor)}>({array}, aligned)"


def _numpy_output_data(tensor: TensorParam) -> str:
    cpp_type = common.tensor_cpp_type(tensor)
    array = one_output_value(tensor, Local.array(tensor.name))
    return f"opgen::py_support::mutable_data<{cpp_type}>({array})"


def _numpy_type(tensor: TensorParam) -> str:
    """What the pybind11 binding takes for an input."""
    if tensor.variadic:
        return "const std::vector<py::array>"
    return "const std::optional<py::array>" if tensor.optional else "const py::array"


@view
class PybindOpView(KernelWrapperView):
    """pybind_op.cc: the kernel bound for numpy arrays."""

    pybind_params: str
    binding_params: str
    binding_arg_specs: tuple[str, ...]
    run_args: str
    output_arrays: str
    dtype_list_expr: str
    supported_dtypes: str
    doc_literal: str


def pybind_op_view(op: OpDef) -> PybindOpView:
    assert op.op_type is not None and op.domain is not None
    array_params = [f"{_numpy_type(t)}& {Local.array(t.name)}" for t in op.inputs]
    attr_params = [f"{cpp.attribute_type(a)} {a.name}" for a in op.attributes]
    return PybindOpView(
        **vars(kernel_wrapper_view(op, _numpy_data, _numpy_output_data, "serial")),
        pybind_params=", ".join(array_params),
        binding_params=", ".join(array_params + attr_params),
        binding_arg_specs=tuple(
            [f'py::arg("{t.name}")' + (" = py::none()" if t.optional else "") for t in op.inputs]
            + [
                f'py::arg("{a.name}")' + (" = py::none()" if a.optional_without_default else "")
                for a in op.attributes
            ]
        ),
        run_args=", ".join(Local.array(t.name) for t in op.inputs),
        output_arrays=", ".join(Local.array(t.name) for t in op.outputs),
        dtype_list_expr=dtype_list_expr(op),
        supported_dtypes=common.supported_dtypes(op),
        doc_literal=cpp.string_literal(op.doc),
    )


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if Target.pybind not in targets_of(op):
        return []
    path = f"{op.op_id}/{op.op_id}_pybind.cc"
    return [render("cpp/pybind_op.cc.j2", path, common.sources(op), pybind_op_view(op))]
