"""CUDA kernels: an op's `kernel.cuda` file compiled by nvcc (<op>_cuda.h, <op>_cuda.cu), run by
ONNX Runtime's CUDA provider (<op>_ort_cuda.cc, in the domain's CUDA custom-op library) and by
PyTorch's CUDA dispatch key (<op>_torch_cuda.cc, in the domain's native CUDA library). The
wrappers are the CPU targets' templates with this device's data; the CUDA libraries are their
own, so a machine without CUDA builds and loads the CPU ones as before."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from generator.api import cpp
from generator.api.names import Local
from generator.dest import common
from generator.dest.cpp_kernel import KernelInstantiation, one_output_value, one_value
from generator.dest.emission import Emission
from generator.dest.project import domain_views
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import OpDef
from generator.model.tensors import TensorParam
from generator.render import copy_runtime, render
from generator.targets import ort_library, torch_native
from generator.view import view

CONTEXT_PARAM = "const opgen::cuda::Context& ctx"
# What the CUDA files of a project add to its runtime headers.
RUNTIME_HEADERS = ("cuda", "ort_cuda_support", "torch_cuda_support")


def has_cuda_kernel(op: OpDef) -> bool:
    return Target.cuda in targets_of(op)


def _sources(op: OpDef) -> list[str]:
    assert op.kernel is not None and op.kernel.cuda_file is not None
    return common.sources(op) + [str(Path(op.definition_path).parent / op.kernel.cuda_file.name)]


@view
class CudaKernelView:
    """<op>_cuda.h (compute_cuda's signature) and <op>_cuda.cu (the kernel for each dtype)."""

    op_id: str
    op_type: str
    domain: str
    cuda_file: str
    kernel_include: str
    template_decl: str
    compute_params: str
    instantiations: tuple[KernelInstantiation, ...]


def _kernel_view(op: OpDef, output_dir: Path) -> CudaKernelView:
    assert op.kernel is not None and op.kernel.cuda_file is not None
    assert op.op_type is not None and op.domain is not None
    instantiations = []
    for inst in op.instantiations if op.type_constraints else ():
        binding = {var: cpp.KERNEL_TYPE[dtype] for var, dtype in inst.bindings}
        instantiations.append(
            KernelInstantiation(
                suffix=inst.suffix or "only",
                template_args=common.template_args(op, binding),
                compute_params=common.compute_params(op, binding, CONTEXT_PARAM),
                numpy_condition="",
                torch_condition="",
            )
        )
    return CudaKernelView(
        op_id=op.op_id,
        op_type=op.op_type,
        domain=op.domain,
        cuda_file=op.kernel.cuda_file.name,
        kernel_include=common.relative_include(
            output_dir.resolve() / op.op_id, op.kernel.cuda_file.resolve()
        ),
        template_decl=common.template_decl(op),
        compute_params=common.compute_params(op, None, CONTEXT_PARAM),
        instantiations=tuple(instantiations),
    )


def _ort_input_data(tensor: TensorParam) -> str:
    value = one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return (
        f"opgen::ort_cuda::data<{common.tensor_cpp_type(tensor)}>"
        f"({value}, kOpType, \"input '{tensor.name}'\")"
    )


def _ort_output_data(op: OpDef, tensor: TensorParam) -> str:
    value = one_output_value(tensor, Local.runtime_value(tensor.name))
    return (
        f"opgen::ort_cuda::output_data<{common.tensor_cpp_type(tensor)}>"
        f"({value}, kOpType, \"output '{tensor.name}'\")"
    )


def _ort_device(op: OpDef) -> ort_library.OrtDevice:
    return ort_library.OrtDevice(
        kernel_class="OrtCudaKernel",
        op_class="OrtCudaOp",
        infer_function="InferCudaOutputShapes",
        add_function="add_ort_cuda_ops",
        execution_provider="CUDAExecutionProvider",
        includes=(f"{op.op_id}_cuda.h", "opgen/ort_cuda_support.h"),
        context_statement="const opgen::cuda::Context cuda = opgen::ort_cuda::context(context, kOpType);",
        context="cuda",
        compute="compute_cuda",
        after_compute="opgen::cuda::check_kernel_returned(kOpType);",
        input_data=_ort_input_data,
        output_data=_ort_output_data,
    )


def _torch_input_data(tensor: TensorParam) -> str:
    value = one_value(tensor, Local.runtime_value(tensor.name)).lstrip("*")
    return (
        f"opgen::torch_cuda::data<{common.tensor_cpp_type(tensor)}>"
        f"({value}, kOpType, \"input '{tensor.name}'\")"
    )


def _torch_prologue(op: OpDef) -> tuple[str, ...]:
    """The call's device: every input on one CUDA device, made current."""
    return (
        "opgen::torch_cuda::CallDevice device(kOpType);",
        *(f'device.add({Local.runtime_value(t.name)}, "{t.name}");' for t in op.inputs),
        "const opgen::cuda::Context cuda = device.enter();",
    )


TORCH_DEVICE = torch_native.TorchDevice(
    label="CUDA",
    source_file="{op_id}_torch_cuda.cc",
    kernel_name="cuda_kernel",
    boxed_kernel="boxed_cuda_kernel",
    prologue=_torch_prologue,
    empty="device.empty",
    context_statement="",  # the prologue's
    context="cuda",
    compute="compute_cuda",
    after_compute="opgen::cuda::check_kernel_returned(kOpType);",
    input_data=_torch_input_data,
    output_data=torch_native.torch_output_data,
)


@view
class CudaTestsView:
    """The CUDA tests of an op's generated test module (test_parity/test_cuda.py.j2)."""

    torch: bool  # its PyTorch op runs the CUDA kernel
    onnxruntime: bool  # ONNX Runtime's CUDA provider runs it
    two_devices: bool  # its first random case gives two tensor inputs or more (none variadic)
    aot_inductor: bool  # the test module has its Model (an exported op's)


def cuda_tests_view(op: OpDef) -> CudaTestsView | None:
    if not has_cuda_kernel(op):
        return None
    present = op.tests.random[0].shapes if op.tests.random else {}
    return CudaTestsView(
        torch=op.has_native_torch_op,
        onnxruntime=op.has_ort_kernel,
        two_devices=op.has_native_torch_op
        and len(present) > 1
        and not any(t.variadic for t in op.inputs),
        aot_inductor=op.has_native_torch_op and Target.exporters in targets_of(op),
    )


def test_parts(op: OpDef) -> dict[str, bool]:
    """This target's parts of the generated tests (generator/templates/python/test_parity/),
    and whether the op's test module has each."""
    ours = cuda_tests_view(op) is not None
    value_errors = any(case.values is not None for case in op.error_cases)
    return {"test_cuda": ours, "test_cuda_bad_values_raise": ours and value_errors}


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if not has_cuda_kernel(op):
        return []
    base = f"{op.op_id}/{op.op_id}"
    sources = _sources(op)
    kernel = _kernel_view(op, emission.output_dir)
    files = [
        render("cpp/cuda_op.h.j2", f"{base}_cuda.h", sources, kernel),
        render("cpp/cuda_kernel.cu.j2", f"{base}_cuda.cu", sources, kernel),
    ]
    if op.has_ort_kernel:
        ort = ort_library.ort_op_view(op, _ort_device(op))
        files.append(render("cpp/ort_op.cc.j2", f"{base}_ort_cuda.cc", sources, ort))
    if op.has_native_torch_op:
        torch = torch_native.torch_op_view(op, emission.package.name, TORCH_DEVICE)
        files.append(render("cpp/torch_cuda_op.cc.j2", f"{base}_torch_cuda.cc", sources, torch))
    return files


def emit_project(ops: Sequence[OpDef], emission: Emission) -> list[GeneratedFile]:
    """The runtime's CUDA headers and each domain's ONNX Runtime CUDA library entry point:
    every op of the domain on the CPU provider, and those with a CUDA kernel on the GPU too
    (ONNX Runtime takes one library per domain in a session)."""
    if not any(has_cuda_kernel(op) for op in ops):
        return []
    files = [copy_runtime(f"include/opgen/{name}.h") for name in RUNTIME_HEADERS]
    for domain, sources in domain_views(ops):
        if not domain.cuda_ort_op_ids:
            continue
        library = dataclasses.replace(
            domain, library_name=domain.cuda_library_name, cuda_registrations=domain.cuda_ort_op_ids
        )
        path = f"domains/{domain.ident}/ort_cuda_library.cc"
        files.append(render("cpp/ort_library.cc.j2", path, sources, library))
    return files
