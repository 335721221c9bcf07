"""The CUDA kernels' libraries (generator/targets/cuda.py): the package has this module where
some op has a CUDA kernel, and _support reaches it by the device's name ("cuda")."""

from pathlib import Path

from . import _support
from ._names import cuda_library_file, torch_cuda_library_file

DEVICE = "cuda"  # what _support.device_module checks
_torch_libraries: set[str] = set()


def ort_library(domain_ident: str) -> Path:
    """The domain's ONNX Runtime library for the CUDA provider: every op of the domain on the
    CPU, those with a CUDA kernel on the GPU too."""
    path = _support.library_dir() / cuda_library_file(domain_ident)
    if not path.is_file():
        raise _support.NotBuiltError(
            f"{path} does not exist: the CUDA libraries were not built (`opgen build` builds "
            "them where CMake finds nvcc; `opgen build --cuda on` makes its absence an error)"
        )
    return path


def load_torch_library(domain_ident: str) -> Path | None:
    """Loads the native PyTorch library of one domain's CUDA kernels once, after the CPU one
    (which defines the ops), where torch is built with CUDA and the library was built; None
    elsewhere: a CPU-only torch cannot load it (and never tries), and an op called on CUDA
    tensors without it fails in PyTorch's dispatcher, naming the op and the CUDA backend."""
    import torch

    path = _support.library_dir() / torch_cuda_library_file(domain_ident)
    if torch.version.cuda is None or not path.is_file():
        return None
    if domain_ident not in _torch_libraries:
        _support.load_native(path, lambda path: torch.ops.load_library(str(path)))
        _torch_libraries.add(domain_ident)
    return path


def ort_session(model: bytes | str, options):
    """An ONNX Runtime session on the CUDA provider, never on the CPU instead."""
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise RuntimeError(
            f"onnxruntime {ort.__version__} has no CUDA provider (install onnxruntime-gpu)"
        )
    # CUDA's and cuDNN's libraries that the provider links, from torch's or NVIDIA's packages
    # (onnxruntime-gpu does not bundle them; ONNX Runtime's own advice beside PyTorch).
    ort.preload_dlls()
    # A CUDA provider that fails to load would otherwise leave the session on the CPU, with a
    # warning only: a test would run the CPU kernel and pass.
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(model, options, providers=["CUDAExecutionProvider"])
    providers = session.get_providers()
    if providers[0] != "CUDAExecutionProvider":
        raise RuntimeError(f"the session runs on {providers}, not on ONNX Runtime's CUDA provider")
    return session
