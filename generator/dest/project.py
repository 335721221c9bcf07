"""Files shared by all ops: the C++ runtime headers, per-domain libraries, CMake, and the
generated Python package's entry points. Each template reads one frozen view built here."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from itertools import groupby

import generator
from generator.api import cpp
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.op import OpDef
from generator.render import GeneratedFile, copy_runtime, render
from generator.view import view


@view
class OrtRegistration:
    """An op's function adding its kernels for a device to an ONNX Runtime custom-op domain."""

    op_id: str
    function: str


@view
class BuildInfoEntry:
    """A key of build_info.json and its value, as CMake's file(CONFIGURE @ONLY) fills it in."""

    key: str
    value: str


@view
class DeviceDomains:
    """The domains whose ONNX Runtime library for a device's provider was generated."""

    device: str  # as get_library_path(domain, device=...) names it
    domains: tuple[str, ...]


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
    # Other targets' parts of its section of CMakeLists.txt (ProjectParts.cmake_domains)
    cmake_parts: tuple[str, ...] = ()
    # What its ort_library.cc registers besides every op's CPU kernel (a device's library's)
    device_registrations: tuple[OrtRegistration, ...] = ()


@view
class ProjectParts:
    """A target's parts of the files every target shares (emitters.py collects them from the
    targets and hands them to emit), so that no shared template names a target."""

    cmake_setup: str = ""  # CMakeLists.txt, once, after PyTorch's set-up
    cmake_domains: tuple[
        tuple[str, str], ...
    ] = ()  # (domain ident, its part of the domain's section)
    build_info: tuple[BuildInfoEntry, ...] = ()  # keys it always has, built or not
    device_domains: tuple[DeviceDomains, ...] = ()


@view
class CMakeView:
    """CMakeLists.txt."""

    package: str
    version: str
    cmake_version: str  # the version's release numbers (CMake takes no pre-release suffix)
    opgen_version: str
    domains: tuple[DomainView, ...]
    has_native_ops: bool  # some domain gets a native PyTorch library
    torch_target_version: str
    setup_parts: tuple[str, ...]  # the targets' (ProjectParts.cmake_setup)
    build_info: tuple[BuildInfoEntry, ...]  # the targets' keys of build_info.json


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
    device_domains: dict[str, tuple[str, ...]]  # device -> its libraries' domains


def domain_views(ops: Sequence[OpDef]) -> list[tuple[DomainView, list[str]]]:
    """Domains with C++ artifacts (kernel ops or C++ schemas), each with its definitions."""
    ordered = sorted((op for op in ops if op.has_cpp_schema), key=lambda op: (op.domain, op.op_id))
    domains = []
    for domain, group in groupby(ordered, key=lambda op: op.domain):
        assert domain is not None  # an op with a C++ schema defines an ONNX op (and a version)
        members = list(group)
        ident = members[0].domain_ident
        kernel_op_ids = tuple(op.op_id for op in members if op.kernel)
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
        )
        domains.append((view, sorted(op.definition_path for op in members)))
    return domains


def emit(
    ops: Sequence[OpDef], emission: Emission, parts: Sequence[ProjectParts]
) -> list[GeneratedFile]:
    """The shared files, with the other targets' parts of them."""
    all_sources = sorted(op.definition_path for op in ops)
    domains = [
        (
            dataclasses.replace(
                view,
                cmake_parts=tuple(
                    text
                    for part in parts
                    for ident, text in part.cmake_domains
                    if ident == view.ident
                ),
            ),
            sources,
        )
        for view, sources in domain_views(ops)
    ]
    views = tuple(domain for domain, _ in domains)
    info = emission.package
    has_native_ops = any(view.native_op_ids for view in views)
    package = PackageInitView(
        device_domains=_device_domains(parts),
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
                torch_target_version=cpp.TORCH_TARGET_VERSION,
                setup_parts=tuple(part.cmake_setup for part in parts if part.cmake_setup),
                build_info=tuple(entry for part in parts for entry in part.build_info),
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
        copy_runtime("_shapes.py"),
        copy_runtime("_exporters.py"),
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


def _device_domains(parts: Sequence[ProjectParts]) -> dict[str, tuple[str, ...]]:
    entries = [entry for part in parts for entry in part.device_domains]
    devices = [entry.device for entry in entries]
    assert len(set(devices)) == len(devices), f"a device named by two targets: {devices}"
    return {entry.device: entry.domains for entry in entries}


def _release(version: str) -> str:
    """A PEP 440 version's release numbers, as CMake's project(VERSION) takes them."""
    from packaging.version import Version  # black depends on packaging

    return ".".join(str(part) for part in Version(version).release[:4])
