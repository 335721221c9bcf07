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
from generator.dest.project import (
    BuildInfoEntry,
    DeviceDomains,
    DomainView,
    OrtRegistration,
    ProjectParts,
    domain_views,
)
from generator.dest.tests import ParityTestPieces
from generator.generated_file import GeneratedFile
from generator.model.capabilities import Target, targets_of
from generator.model.op import OpDef
from generator.model.tensors import TensorParam
from generator.render import copy_runtime, environment, render, render_part
from generator.runtime import _names
from generator.targets import ort_library, torch_native
from generator.targets.cuda_settings import ARCHITECTURE_PATTERN, ARCHITECTURES
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
    cpp_type = common.tensor_cpp_type(tensor)
    if tensor.variadic:  # a value the node leaves out: device scratch, as the CPU's host scratch
        shape = f"{Local.output_shape_member(tensor.name)}[{Local.value_index(tensor.name)}]"
        return (
            f"opgen::ort_cuda::variadic_output_data<{cpp_type}>"
            f"({value}, context, aligned, {shape}, kOpType)"
        )
    return f"opgen::ort_cuda::output_data<{cpp_type}>({value}, kOpType, \"output '{tensor.name}'\")"


ORT_ADD_FUNCTION = "add_ort_cuda_ops"  # an op's, adding its CUDA kernels to a custom-op domain


def _ort_device(op: OpDef) -> ort_library.OrtDevice:
    return ort_library.OrtDevice(
        kernel_class="OrtCudaKernel",
        op_class="OrtCudaOp",
        infer_function="InferCudaOutputShapes",
        add_function=ORT_ADD_FUNCTION,
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
    # ONNX Runtime's CUDA provider with outputs a node leaves out: optional ones, and values of
    # a variadic one named ""
    leaves_out_optional_outputs: bool
    drops_variadic_output_values: bool


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
        leaves_out_optional_outputs=op.has_ort_kernel and ort_library.output_omissions(op) != [],
        drops_variadic_output_values=op.has_ort_kernel and any(t.variadic for t in op.outputs),
    )


def parity_test_pieces(op: OpDef) -> ParityTestPieces:
    """This target's parts of the generated tests (generator/templates/python/test_parity/):
    whether the op's test module has each, and what they read."""
    view = cuda_tests_view(op)
    value_errors = any(case.values is not None for case in op.error_cases)
    parts = {
        "test_cuda": view is not None,
        "test_cuda_leaves_out_outputs_in_onnxruntime": view is not None
        and (view.leaves_out_optional_outputs or view.drops_variadic_output_values),
        "test_cuda_bad_values_raise": view is not None and value_errors,
    }
    return ParityTestPieces(Target.cuda, parts, view)


def page_facts(op: OpDef) -> list[tuple[str, str]]:
    """The op's reference page: its CUDA kernel and what runs it."""
    if not has_cuda_kernel(op):
        return []
    assert op.kernel is not None and op.kernel.cuda_file is not None
    runs = []
    if op.has_native_torch_op:
        library = _names.torch_cuda_library_file(op.domain_ident)
        runs.append(f"PyTorch's CUDA dispatch key (`{library}`)")
    if op.has_ort_kernel:
        library = _names.cuda_library_file(op.domain_ident)
        runs.append(
            f"ONNX Runtime's CUDA provider (`{library}`: "
            f'`get_library_path("{op.domain}", device="cuda")`)'
        )
    return [("CUDA", f"`{op.kernel.cuda_file.name}`, run by " + " and ".join(runs))]


def kernel_stub(op: OpDef, definition_file: str, package_dir: str, names: common.StubNames) -> str:
    """The CUDA kernel `opgen new --device cuda` scaffolds: every output a copy of the first
    input (converted where its type differs), as the C++ stub, by a grid-stride kernel."""
    return (
        environment()
        .get_template("scaffold/kernel.cuh.j2")
        .render(
            op_type=op.op_type,
            op_id=op.op_id,
            package_dir=package_dir,
            definition_file=definition_file,
            template_decl=common.template_decl(op),
            compute_params=common.compute_params(op, None, CONTEXT_PARAM),
            first_input=names.first_input,
            outputs=[t.name for t in names.outputs],
            value_copies=names.value_copies,
            v=names.local("v"),
            unused=names.unused,
            # the stub's own names, clear of the op's
            copy=names.local("copy"),
            copy_elements=names.local("copy_elements"),
            threads=names.local("kThreads"),
        )
    )


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


@view
class CudaDomainView:
    """A domain's CUDA part of CMakeLists.txt (cmake/targets/cuda.cmake.j2) and its ONNX Runtime
    CUDA library."""

    domain: DomainView  # the domain's own targets (its CPU kernels, its ONNX Runtime ops)
    op_ids: tuple[str, ...]  # the ops with a CUDA kernel
    ort_op_ids: tuple[str, ...]  # those ONNX Runtime's CUDA provider runs
    torch_op_ids: tuple[str, ...]  # those PyTorch's CUDA dispatch key runs
    kernel_objects_name: str  # CMake's object library of the CUDA kernels
    library_name: str  # the ONNX Runtime library for the CUDA provider
    torch_library_name: str  # the native PyTorch library of the CUDA kernels


@view
class CudaSetupView:
    """CUDA's set-up, once for the project (cmake/targets/cuda_setup.cmake.j2)."""

    cuda_architectures: str  # the default of OPGEN_CUDA_ARCHITECTURES
    architecture_pattern: str  # what each of its entries must match (a CMake regex)
    # Some op has a CUDA kernel; without, the set-up only reads and checks the variables
    has_kernels: bool


def _domains(ops: Sequence[OpDef]) -> list[tuple[CudaDomainView, list[str]]]:
    """The domains with a CUDA kernel, each with its definitions."""
    by_id = {op.op_id: op for op in ops}
    domains = []
    for domain, sources in domain_views(ops):
        cuda_ops = [by_id[op_id] for op_id in domain.schema_op_ids if has_cuda_kernel(by_id[op_id])]
        if not cuda_ops:
            continue
        view = CudaDomainView(
            domain=domain,
            op_ids=tuple(op.op_id for op in cuda_ops),
            ort_op_ids=tuple(op.op_id for op in cuda_ops if op.has_ort_kernel),
            torch_op_ids=tuple(op.op_id for op in cuda_ops if op.has_native_torch_op),
            kernel_objects_name=_names.cuda_kernel_objects_name(domain.ident),
            library_name=_names.cuda_library_name(domain.ident),
            torch_library_name=_names.torch_cuda_library_name(domain.ident),
        )
        domains.append((view, sources))
    return domains


def project_parts(ops: Sequence[OpDef], emission: Emission) -> ProjectParts:
    """CUDA's parts of CMakeLists.txt (its set-up, each domain's CUDA libraries), of
    build_info.json (the CUDA release and architectures built; empty without) and of the
    package (the domains with a library for ONNX Runtime's CUDA provider)."""
    domains = [view for view, _ in _domains(ops)]
    built = bool(domains)
    return ProjectParts(
        # Always: `opgen build` passes OPGEN_CUDA and OPGEN_CUDA_ARCHITECTURES to every project,
        # and CMake warns of a variable given that the project does not read.
        cmake_setup=render_part(
            "cmake/targets/cuda_setup.cmake.j2",
            "CMakeLists.txt",
            CudaSetupView(
                emission.package.setting(ARCHITECTURES.name, ARCHITECTURES.default),
                ARCHITECTURE_PATTERN,
                built,
            ),
        ),
        cmake_domains=tuple(
            (view.domain.ident, render_part("cmake/targets/cuda.cmake.j2", "CMakeLists.txt", view))
            for view in domains
        ),
        build_info=(
            BuildInfoEntry("cuda", "@OPGEN_CUDA_VERSION@" if built else ""),
            BuildInfoEntry(
                "cuda_architectures", "@OPGEN_CUDA_BUILT_ARCHITECTURES@" if built else ""
            ),
        ),
        device_domains=(
            DeviceDomains("cuda", tuple(view.domain.domain for view in domains if view.ort_op_ids)),
        ),
    )


def emit_project(ops: Sequence[OpDef], emission: Emission) -> list[GeneratedFile]:
    """The runtime's CUDA headers and Python module, and each domain's ONNX Runtime CUDA library
    entry point:
    every op of the domain on the CPU provider, and those with a CUDA kernel on the GPU too
    (ONNX Runtime takes one library per domain in a session)."""
    if not any(has_cuda_kernel(op) for op in ops):
        return []
    files = [copy_runtime(f"include/opgen/{name}.h") for name in RUNTIME_HEADERS]
    files.append(copy_runtime("_cuda.py"))  # the package's way to the CUDA libraries
    for cuda, sources in _domains(ops):
        if not cuda.ort_op_ids:
            continue
        library = dataclasses.replace(
            cuda.domain,
            library_name=cuda.library_name,
            device_registrations=tuple(
                OrtRegistration(op_id, ORT_ADD_FUNCTION) for op_id in cuda.ort_op_ids
            ),
        )
        path = f"domains/{cuda.domain.ident}/ort_cuda_library.cc"
        files.append(render("cpp/ort_library.cc.j2", path, sources, library))
    return files
