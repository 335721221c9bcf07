"""The names of a domain's built artifacts. The generator imports this module for the CMake
targets and the docs, and the generated package loads the artifacts by the same functions, so
the two cannot disagree."""

from collections.abc import Iterable


def library_name(domain_ident: str) -> str:
    """The ONNX Runtime custom-op library's CMake target."""
    return f"opgen_{domain_ident}"


def library_file(domain_ident: str) -> str:
    """The file CMake builds for that target on Linux."""
    return f"lib{library_name(domain_ident)}.so"


def module_name(domain_ident: str) -> str:
    """The pybind11 kernel module (its CMake target and import name)."""
    return f"opgen_{domain_ident}_kernels"


def torch_library_name(domain_ident: str) -> str:
    """The native PyTorch library's CMake target (ops registered with torch.api native)."""
    return f"opgen_{domain_ident}_torch"


def torch_library_file(domain_ident: str) -> str:
    """The file CMake builds for that target on Linux."""
    return f"lib{torch_library_name(domain_ident)}.so"


def cuda_library_name(domain_ident: str) -> str:
    """The ONNX Runtime custom-op library for the CUDA provider: the domain's ops on the CPU and
    those with a CUDA kernel on the GPU too (a session registers one library per domain)."""
    return f"opgen_{domain_ident}_cuda"


def cuda_library_file(domain_ident: str) -> str:
    return f"lib{cuda_library_name(domain_ident)}.so"


def torch_cuda_library_name(domain_ident: str) -> str:
    """The native PyTorch library of the CUDA kernels (loaded after the CPU one, which defines
    the ops); it loads only into a torch built with CUDA."""
    return f"opgen_{domain_ident}_torch_cuda"


def torch_cuda_library_file(domain_ident: str) -> str:
    return f"lib{torch_cuda_library_name(domain_ident)}.so"


def cuda_kernel_objects_name(domain_ident: str) -> str:
    """The CMake object library of the domain's CUDA kernels (nvcc's)."""
    return f"opgen_{domain_ident}_cuda_kernel_objects"


def below_autograd_op(name: str) -> str:
    """The op (in the same namespace) that a native op's own Autograd kernel calls below the
    Autograd key: the library defines it with the op's schema and CPU kernel, for when the
    generated package is not imported."""
    return f"_{name}_below_autograd"


def schema_tests_name(domain_ident: str) -> str:
    """The executable running the C++ schema test of every op in the domain (its CMake target
    and file name in the build's bin/)."""
    return f"opgen_{domain_ident}_schema_tests"


def kernel_objects_name(domain_ident: str) -> str:
    """The CMake object library of the domain's kernels (the three libraries link them)."""
    return f"opgen_{domain_ident}_kernel_objects"


def schemas_library_name(domain_ident: str) -> str:
    """The CMake static library of the domain's C++ schemas (the schema tests link it)."""
    return f"opgen_{domain_ident}_schemas"


def target_names(domain_ident: str) -> tuple[str, ...]:
    """Every CMake target of a domain: opgen_<ident> and opgen_<ident>_<distinct suffix>, so one
    domain's are distinct; no two domains of a project may share one. (The template's own
    targets have a '-' in their names, which no domain's can.)"""
    return (
        library_name(domain_ident),
        module_name(domain_ident),
        torch_library_name(domain_ident),
        schema_tests_name(domain_ident),
        kernel_objects_name(domain_ident),
        schemas_library_name(domain_ident),
        cuda_library_name(domain_ident),
        torch_cuda_library_name(domain_ident),
        cuda_kernel_objects_name(domain_ident),
    )


def value_name(variadic: str, index: int) -> str:
    """The name of a variadic input's index-th value where values have names of their own (test
    cases, the generated tests' models); no other name of the op may take this form."""
    return f"{variadic}_{index}"


def value_names(variadic: str, names: Iterable[str]) -> list[str]:
    """A variadic input's values among `names`, in order: X_0, X_1, ... up to the first gap."""
    present = set(names)
    found: list[str] = []
    while value_name(variadic, len(found)) in present:
        found.append(value_name(variadic, len(found)))
    return found


def input_of(value: str, variadic: str | None) -> str:
    """The input a named value belongs to: the variadic input for one of its values."""
    stem, _, index = value.rpartition("_")
    return stem if stem == variadic and index.isdigit() else value
