"""The CUDA target's [tool.opgen] key and `opgen build` option (generator/targets/cuda.py is
the target): data apart from its emitters, so that reading the configuration loads no emitter."""

from __future__ import annotations

import re

from generator.target_settings import BuildChoice, ConfigKey, DeviceKernel, TargetSettings

DEFAULT_ARCHITECTURES = "80;90"
# One entry of CMake's CUDA_ARCHITECTURES: a compute capability, with a suffix (90a) and a kind.
# In the syntax of CMake's regular expressions too (no {m,n}): the generated CMakeLists.txt
# checks OPGEN_CUDA_ARCHITECTURES with it.
ARCHITECTURE_PATTERN = "[1-9][0-9][0-9]?[a-z]?(-real|-virtual)?"
_ARCHITECTURE = re.compile(ARCHITECTURE_PATTERN)


def architectures(text: str) -> str:
    """The architectures as a CMake list: separated by ';', ',' or spaces in the configuration."""
    return ";".join(part for part in re.split(r"[;,\s]+", text) if part)


def _architectures_problem(text: str) -> str | None:
    wrong = [e for e in architectures(text).split(";") if not _ARCHITECTURE.fullmatch(e)]
    if wrong or not text.strip():
        return (
            f"'{wrong[0] if wrong else text}' is no CUDA architecture: expected compute "
            "capabilities such as '80;90' (optionally '90a', '80-real', '90-virtual')"
        )
    return None


ARCHITECTURES = ConfigKey(
    name="cuda-architectures",
    doc="the GPU architectures nvcc compiles the CUDA kernels for, as CMake's "
    f"CUDA_ARCHITECTURES (default: {DEFAULT_ARCHITECTURES}, Ampere and Hopper)",
    default=DEFAULT_ARCHITECTURES,
    normalize=architectures,
    problem=_architectures_problem,
    cmake_variable="OPGEN_CUDA_ARCHITECTURES",
)
SETTINGS = TargetSettings(
    keys=(ARCHITECTURES,),
    device_kernels=(
        DeviceKernel(
            device="cuda",
            field="cuda",
            suffix="_kernel.cuh",
            stub="generator.targets.cuda:kernel_stub",
            help="cuda: a CUDA kernel too (<name>_kernel.cuh, the definition's kernel.cuda), run "
            "by PyTorch's CUDA dispatch key and ONNX Runtime's CUDA provider",
        ),
    ),
    choices=(
        BuildChoice(
            flag="--cuda",
            choices=("auto", "on", "off"),
            default="auto",
            help="the CUDA kernels' libraries (-DOPGEN_CUDA): where nvcc is found (auto, the "
            "default), always (on: no nvcc is an error) or never (off)",
            cmake_variable="OPGEN_CUDA",
            refused_with_sanitize="on",
            sanitize_conflict="--sanitize builds no CUDA libraries (the sanitizers see no device "
            "code): drop --cuda on, or build the CUDA libraries without --sanitize",
        ),
    ),
)
