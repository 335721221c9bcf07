"""Files shared by all ops: the C++ runtime headers, per-domain libraries, CMake, and the
generated Python package's entry points."""

from __future__ import annotations

from itertools import groupby

from generator.api import cpp
from generator.dest import common
from generator.model.op import OpDef
from generator.render import GeneratedFile, copy_runtime, render


def _domains(ops: list[OpDef]) -> list[dict]:
    """Domains with C++ artifacts: kernel ops (libraries) or C++ schemas."""
    ordered = sorted((op for op in ops if op.has_cpp_schema), key=lambda op: (op.domain, op.op_id))
    domains = []
    for domain, members in groupby(ordered, key=lambda op: op.domain):
        members = list(members)
        ident = members[0].domain_ident
        domains.append(
            {
                "domain": domain,
                "ident": ident,
                "kernel_ops": [{"op_id": op.op_id} for op in members if op.kernel],
                "schema_ops": [{"op_id": op.op_id} for op in members],
                "library_name": common.library_name(ident),
                "module_name": common.module_name(ident),
                "max_version": max(op.version for op in members),
                "sources": sorted(op.definition_path for op in members),
            }
        )
    return domains


def emit(ops: list[OpDef]) -> list[GeneratedFile]:
    all_sources = sorted(op.definition_path for op in ops)
    domains = _domains(ops)
    ordered_ops = [{"op_id": op.op_id} for op in sorted(ops, key=lambda op: op.op_id)]
    files = [
        *(
            copy_runtime(f"include/opgen/{name}.h")
            for name in (
                "runtime",
                "shape_rule",
                "ort_support",
                "onnx_schema_support",
                "pybind_support",
            )
        ),
        render("cmake/CMakeLists.txt.j2", "CMakeLists.txt", all_sources, domains=domains),
        render(
            "python/package_init.py.j2",
            "__init__.py",
            all_sources,
            ops=ordered_ops,
            domains=domains,
        ),
        copy_runtime("_names.py"),
        copy_runtime("_support.py"),
        copy_runtime("_testing.py"),
    ]
    for domain in domains:
        base = f"domains/{domain['ident']}"
        literal = cpp.string_literal(domain["domain"])
        if domain["kernel_ops"]:
            files += [
                render(
                    "cpp/ort_library.cc.j2",
                    f"{base}/ort_library.cc",
                    domain["sources"],
                    ops=domain["kernel_ops"],
                    domain=domain["domain"],
                    domain_literal=literal,
                    library_name=domain["library_name"],
                ),
                render(
                    "cpp/pybind_module.cc.j2",
                    f"{base}/pybind_module.cc",
                    domain["sources"],
                    ops=domain["kernel_ops"],
                    domain=domain["domain"],
                    module_name=domain["module_name"],
                    doc_literal=cpp.string_literal(f"Kernels of ONNX domain {domain['domain']}"),
                ),
            ]
        files += [
            render(
                "cpp/schemas.cc.j2",
                f"{base}/schemas.cc",
                domain["sources"],
                ops=domain["schema_ops"],
                domain=domain["domain"],
                domain_literal=literal,
                register_function=f"Register_{domain['ident']}_Schemas",
                max_version=domain["max_version"],
            ),
        ]
    return files
