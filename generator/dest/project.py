"""Files shared by all ops: the C++ runtime headers, per-domain libraries, CMake, and the
generated Python package's entry points. Each template reads one frozen view built here."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

import generator
from generator.api import cpp
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.capabilities import Target, targets_of
from generator.model.op import OpDef
from generator.render import GeneratedFile, copy_runtime, render
from generator.view import view


@view
class DomainView:
    """A domain with C++ artifacts (kernel ops or C++ schemas): the view of its files in
    domains/<ident>/ (ort_library.cc, pybind_module.cc, schemas.cc, schema_tests.cc) and of its
    section of CMakeLists.txt."""

    domain: str
    domain_literal: str  # C++
    ident: str  # the domain as an identifier: names its directory and targets
    has_kernels: bool  # it gets a custom-op library and a pybind11 module
    kernel_op_ids: tuple[str, ...]
    ort_op_ids: tuple[str, ...]  # kernel ops its ONNX Runtime library serves
    pybind_op_ids: tuple[str, ...]  # kernel ops its pybind11 module binds
    schema_op_ids: tuple[str, ...]  # every op of the domain
    library_name: str
    module_name: str
    native_op_ids: tuple[str, ...]  # kernel ops registered with PyTorch natively
    torch_library_name: str  # their library
    module_doc_literal: str  # C++
    register_function: str  # registers every C++ schema of the domain
    schema_tests_name: str  # the executable running every op's C++ schema test
    kernel_objects_name: str  # CMake's object library of its kernels
    schemas_library_name: str  # CMake's static library of its C++ schemas
    max_version: int  # of its ops
    # CUDA kernels (generator/targets/cuda.py): the ops with one, those of them its ONNX Runtime
    # CUDA library serves on the GPU and its native PyTorch CUDA library registers, and the
    # CMake targets building them
    cuda_op_ids: tuple[str, ...]
    cuda_ort_op_ids: tuple[str, ...]
    cuda_torch_op_ids: tuple[str, ...]
    cuda_kernel_objects_name: str
    cuda_library_name: str
    torch_cuda_library_name: str
    # The ops whose CUDA kernels this ort_library.cc registers (in the CUDA library's only)
    cuda_registrations: tuple[str, ...] = ()


@view
class CMakeView:
    """CMakeLists.txt."""

    package: str
    version: str
    cmake_version: str  # the version's release numbers (CMake takes no pre-release suffix)
    opgen_version: str
    domains: tuple[DomainView, ...]
    has_native_ops: bool  # some domain gets a native PyTorch library
    has_cuda_ops: bool  # some op has a CUDA kernel
    cuda_architectures: str  # the default of OPGEN_CUDA_ARCHITECTURES
    torch_target_version: str


@view
class PackageInfoView:
    """_package.py: the package's name and version, and where its libraries are built."""

    name: str
    version: str
    opgen_version: str
    build_dir: str


@view
class PyprojectView:
    """pyproject.toml: the package as a wheel, built by scikit-build-core."""

    name: str
    version: str
    build_requires: tuple[str, ...]
    dependencies: tuple[str, ...]


# What the generated package runs on (the lowest releases opgen is tested with, and the ONNX
# Runtime its headers are for), and what building it needs.
RUNTIME_REQUIREMENTS = (
    "torch>=2.13",
    "onnx>=1.23",
    "onnxscript>=0.7",
    "onnxruntime>=1.29",
    "numpy>=1.26",
    "ml_dtypes>=0.5",
)
BUILD_REQUIREMENTS = ("scikit-build-core>=0.10", "pybind11>=2.12")
# The native PyTorch libraries compile against torch's headers: the stable ABI of 2.10.
TORCH_BUILD_REQUIREMENT = "torch>=2.10"


@view
class DomainLibraryView:
    domain: str
    library_ident: str


@view
class PackageInitView:
    """generated/__init__.py: every op's module and the libraries serving their domains."""

    package: str
    op_ids: tuple[str, ...]
    domain_libraries: tuple[DomainLibraryView, ...]  # domains with kernels only
    cuda_domains: list[str]  # domains with a CUDA kernel for ONNX Runtime (a list: tojson)


def domain_views(ops: Sequence[OpDef]) -> list[tuple[DomainView, list[str]]]:
    """Domains with C++ artifacts (kernel ops or C++ schemas), each with its definitions."""
    ordered = sorted((op for op in ops if op.has_cpp_schema), key=lambda op: (op.domain, op.op_id))
    domains = []
    for domain, group in groupby(ordered, key=lambda op: op.domain):
        assert domain is not None  # an op with a C++ schema defines an ONNX op (and a version)
        members = list(group)
        ident = members[0].domain_ident
        kernel_op_ids = tuple(op.op_id for op in members if op.kernel)
        cuda_ops = [op for op in members if Target.cuda in targets_of(op)]
        view = DomainView(
            domain=domain,
            domain_literal=cpp.string_literal(domain),
            ident=ident,
            has_kernels=bool(kernel_op_ids),
            kernel_op_ids=kernel_op_ids,
            ort_op_ids=tuple(op.op_id for op in members if op.has_ort_kernel),
            pybind_op_ids=tuple(op.op_id for op in members if op.has_pybind_binding),
            schema_op_ids=tuple(op.op_id for op in members),
            library_name=common.library_name(ident),
            module_name=common.module_name(ident),
            native_op_ids=tuple(op.op_id for op in members if op.has_native_torch_op),
            torch_library_name=common.torch_library_name(ident),
            module_doc_literal=cpp.string_literal(f"Kernels of ONNX domain {domain}"),
            register_function=f"Register_{ident}_Schemas",
            schema_tests_name=common.schema_tests_name(ident),
            kernel_objects_name=common.kernel_objects_name(ident),
            schemas_library_name=common.schemas_library_name(ident),
            max_version=max(op.version or 0 for op in members),
            cuda_op_ids=tuple(op.op_id for op in cuda_ops),
            cuda_ort_op_ids=tuple(op.op_id for op in cuda_ops if op.has_ort_kernel),
            cuda_torch_op_ids=tuple(op.op_id for op in cuda_ops if op.has_native_torch_op),
            cuda_kernel_objects_name=common.cuda_kernel_objects_name(ident),
            cuda_library_name=common.cuda_library_name(ident),
            torch_cuda_library_name=common.torch_cuda_library_name(ident),
        )
        domains.append((view, sorted(op.definition_path for op in members)))
    return domains


def emit(ops: Sequence[OpDef], emission: Emission) -> list[GeneratedFile]:
    all_sources = sorted(op.definition_path for op in ops)
    domains = domain_views(ops)
    views = tuple(domain for domain, _ in domains)
    info = emission.package
    has_native_ops = any(view.native_op_ids for view in views)
    package = PackageInitView(
        cuda_domains=[view.domain for view in views if view.cuda_ort_op_ids],
        package=info.name,
        op_ids=tuple(sorted(op.op_id for op in ops)),
        domain_libraries=tuple(
            DomainLibraryView(view.domain, view.ident) for view in views if view.has_kernels
        ),
    )
    files = [
        *(
            copy_runtime(f"include/opgen/{name}.h")
            for name in (
                "runtime",
                "shape_rule",
                "ort_support",
                "onnx_schema_support",
                "schema_test_support",
                "pybind_support",
                "torch_support",
            )
        ),
        render(
            "cmake/CMakeLists.txt.j2",
            "CMakeLists.txt",
            all_sources,
            CMakeView(
                package=info.name,
                version=info.version,
                cmake_version=_release(info.version),
                opgen_version=generator.__version__,
                domains=views,
                has_native_ops=has_native_ops,
                has_cuda_ops=any(view.cuda_op_ids for view in views),
                cuda_architectures=info.cuda_architectures,
                torch_target_version=cpp.TORCH_TARGET_VERSION,
            ),
        ),
        render("python/package_init.py.j2", "__init__.py", all_sources, package),
        render(
            "python/package_info.py.j2",
            "_package.py",
            all_sources,
            PackageInfoView(info.name, info.version, generator.__version__, info.build_dir),
        ),
        render(
            "project/pyproject.toml.j2",
            "pyproject.toml",
            all_sources,
            PyprojectView(
                name=info.name,
                version=info.version,
                build_requires=BUILD_REQUIREMENTS
                + ((TORCH_BUILD_REQUIREMENT,) if has_native_ops else ()),
                dependencies=RUNTIME_REQUIREMENTS,
            ),
        ),
        copy_runtime("_names.py"),
        copy_runtime("_support.py"),
        copy_runtime("_testing.py"),
    ]
    for domain, sources in domains:
        base = f"domains/{domain.ident}"
        if domain.has_kernels:
            files += [
                render("cpp/ort_library.cc.j2", f"{base}/ort_library.cc", sources, domain),
                render("cpp/pybind_module.cc.j2", f"{base}/pybind_module.cc", sources, domain),
            ]
        files += [
            render("cpp/schemas.cc.j2", f"{base}/schemas.cc", sources, domain),
            render("cpp/schema_tests.cc.j2", f"{base}/schema_tests.cc", sources, domain),
        ]
    return files


def _release(version: str) -> str:
    """A PEP 440 version's release numbers, as CMake's project(VERSION) takes them."""
    from packaging.version import Version  # black depends on packaging

    return ".".join(str(part) for part in Version(version).release[:4])
