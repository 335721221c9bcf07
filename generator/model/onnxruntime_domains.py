"""The domains ONNX Runtime owns, and what a definition may implement in them.

A custom-op library that registers an op in one of these domains silently replaces ONNX
Runtime's own op of that name in every session that loads the library; a model-local function
there is ignored (ONNX Runtime runs its own op). The rule is by domain, not by op, so the ops a
newer runtime adds are covered too (tests/test_onnxruntime_domains.py checks the list against
the domains of the installed onnxruntime's schemas).
"""

from __future__ import annotations

from generator.model.nodes import Function
from generator.model.op import Implementation, Kernel, OpDef, Runtime

# ONNX Runtime's domains (onnxruntime/core/graph/constants.h), each with its sub-domains:
# com.microsoft.nchwc, com.microsoft.experimental, com.microsoft.dml, com.ms.internal.nhwc, ...
ONNXRUNTIME_DOMAIN_ROOTS = (
    "com.microsoft",
    "com.ms",
    "org.pytorch.aten",
    "com.intel.ai",
    "com.xilinx",
)


def onnxruntime_owns(domain: str) -> bool:
    """Whether `domain` is ONNX Runtime's (or a sub-domain of one of its domains)."""
    return any(domain == root or domain.startswith(root + ".") for root in ONNXRUNTIME_DOMAIN_ROOTS)


def replaces_onnxruntime(op: OpDef) -> bool:
    """The op's kernel takes the place of ONNX Runtime's own op of its name, on purpose
    (`replaces: onnxruntime`), in every session that loads the domain's library."""
    return op.replaces is Runtime.onnxruntime


def onnxruntime_domain_problems(
    domain: str | None,
    op_type: str | None,
    implementation: Implementation | None,
    replaces: Runtime | None,
) -> list[tuple[str, str]]:
    """(field path, message) for an implementation of ours in a domain ONNX Runtime owns, and
    for a `replaces` outside such a domain or without a kernel ONNX Runtime runs (whether
    ONNX Runtime has the op is its generated test's question: the generator needs no runtime). Checked as soon as those fields are read, so that
    these errors come in the same run as every other."""
    owned = domain is not None and onnxruntime_owns(domain)
    name = f"{domain}::{op_type}"
    instead = (
        "use a domain of your own (for example 'my.ops'), or 'provided_by: onnxruntime' to "
        "declare ONNX Runtime's own op"
    )
    kernel = implementation if isinstance(implementation, Kernel) else None
    problems = []
    if replaces is not None:
        if not owned:
            problems.append(
                (
                    "replaces",
                    f"ONNX Runtime owns no domain '{domain}': there is nothing to replace; "
                    "remove 'replaces'",
                )
            )
        elif kernel is None or not kernel.in_onnxruntime:
            problems.append(
                (
                    "replaces",
                    "only a kernel compiled into the ONNX Runtime library can replace ONNX "
                    "Runtime's own op; give a 'kernel' (with 'onnxruntime' left true)",
                )
            )
    elif owned and kernel is not None and not kernel.in_onnxruntime:
        problems.append(
            (
                "kernel",
                f"'{domain}' is ONNX Runtime's domain: the op's exported nodes would run ONNX "
                f"Runtime's own {name} (if it has one, now or in a later release), not this "
                f"kernel for PyTorch alone; {instead}",
            )
        )
    elif owned and kernel is not None:
        problems.append(
            (
                "kernel",
                f"'{domain}' is ONNX Runtime's domain: a kernel registered there would "
                f"silently replace ONNX Runtime's own {name} (if it has one, now or in a later "
                f"release) in every session that loads this library; {instead}; or, to replace "
                "it on purpose, add 'replaces: onnxruntime'",
            )
        )
    if owned and isinstance(implementation, Function):
        problems.append(
            (
                "function",
                f"'{domain}' is ONNX Runtime's domain: ONNX Runtime runs its own op for a "
                f"{name} node and ignores a model-local function of that name; {instead}",
            )
        )
    return problems
