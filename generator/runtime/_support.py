"""Where the built artifacts are, and small helpers shared by the generated modules: binding and
calling the kernels, and PyTorch's autograd. The shape rule's helpers (_shapes.py) and the
exporters' (_exporters.py) live in modules of their own and are re-exported here, where the
generated code calls them.

Artifacts are looked up in _lib/ beside this file (where a wheel installs them), else in
$OPGEN_BUILD_DIR/lib, else in the build folder `opgen build` uses (_package.BUILD_DIR).
"""

import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

from . import _package
from ._exporters import (  # noqa: F401 (re-exported: generated code calls _support.<name>)
    DTYPE_NUMBERS,
    broadcast_symbolic_sizes,
    computed_size,
    constant_strings,
    given,
    known,
    node_with_values,
    onnx_dtype,
    onnx_dtype_of_scalar_type,
    onnx_list_attribute,
    refuse_torchscript_dtypes,
    refuse_zero_d,
    symbolic_node_with_values,
    symbolic_sizes,
    symbolic_type,
    torch_dtype,
    type_values,
)
from ._names import below_autograd_op, library_file, module_name, torch_library_file
from ._shapes import (  # noqa: F401 (re-exported: generated code calls _support.<name>)
    Unknown,
    attribute,
    broadcast_dims,
    broadcast_sizes,
    computed_dim,
    dim_text,
    fixed_dim,
    float32,
    float32_value,
    infer_through_function,
    known_equal,
    known_true,
    paired_output_types,
    quoted,
    reduced_sizes,
    shape_text,
    value,
    variadic_types,
)

# Not resolved: a package folder reached through a symbolic link finds the build folder where
# the configuration puts it beside the link (the generator computed BUILD_DIR so).
PACKAGE_DIR = Path(os.path.abspath(__file__)).parent
INSTALLED_LIBRARIES = PACKAGE_DIR / "_lib"
_modules: dict[str, object] = {}
_torch_libraries: set[str] = set()


class NotBuiltError(RuntimeError):
    """A compiled artifact is missing: run `opgen build`."""


def build_dir() -> Path:
    if os.environ.get("OPGEN_BUILD_DIR"):
        return Path(os.environ["OPGEN_BUILD_DIR"])
    return Path(os.path.normpath(PACKAGE_DIR / _package.BUILD_DIR))


def library_dir() -> Path:
    """Where the libraries are: in the installed package, else in the build folder."""
    if INSTALLED_LIBRARIES.is_dir():
        return INSTALLED_LIBRARIES
    return build_dir() / "lib"


def _missing(path: Path) -> NotBuiltError:
    if path.parent == INSTALLED_LIBRARIES:
        return NotBuiltError(
            f"{path} does not exist: {_package.NAME}'s _lib/ (where a wheel puts the "
            "libraries, and where they are looked for first) lacks it"
        )
    return NotBuiltError(f"{path} does not exist; run `opgen build`")


def library_of(domain, libraries: dict) -> str:
    """The library (its domain identifier) serving an ONNX domain; with no domain, the one
    library when there is one."""
    if not libraries:
        raise ValueError(
            f"{_package.NAME} has no custom-op library: ONNX Runtime runs its ops without one"
        )
    if domain is None:
        if len(libraries) == 1:
            return next(iter(libraries.values()))
        raise ValueError(
            f"{_package.NAME} has a custom-op library for each of the domains "
            f"{sorted(libraries)}: name one"
        )
    if domain not in libraries:
        raise ValueError(
            f"{_package.NAME} has no custom-op library serving domain {domain!r}; its "
            f"libraries serve {sorted(libraries)}"
        )
    return libraries[domain]


def build_info() -> dict:
    """build_info.json, which CMake writes beside the libraries."""
    path = library_dir() / "build_info.json"
    if not path.is_file():
        raise _missing(path)
    return json.loads(path.read_text(encoding="utf-8"))


def device_module(device: str) -> types.ModuleType:
    """The package's module of a device's libraries (_cuda.py for "cuda", whose DEVICE says so):
    the generator adds it where some op has a kernel for that device."""
    name = f"{__package__}._{device}"
    module = None
    if isinstance(device, str) and device.isidentifier():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
    if module is None or getattr(module, "DEVICE", None) != device:
        raise ValueError(f"{_package.NAME} has no kernels for device {device!r}")
    return module


def ort_library(
    domain_ident: str,
    device: str = "cpu",
    devices: dict[str, tuple[str, ...]] | None = None,
    domain: str = "",
) -> Path:
    """The ONNX Runtime custom-op library of one domain, for a device: "cpu", or another that
    devices (the package's DEVICE_DOMAINS: device -> the domains with kernels for it) names, if
    the domain has kernels for it. Without devices (the tests' sessions), any device whose
    module the package has."""
    if device != "cpu" and devices is not None:
        if not isinstance(device, str) or device not in devices:
            known = " or ".join(repr(name) for name in ["cpu", *devices])
            raise ValueError(f"device must be {known}, got {device!r}")
        if domain not in devices[device]:
            raise ValueError(
                f"{_package.NAME} has no {device.upper()} kernels for domain {domain!r}: no op "
                f"definition of it names a {device.upper()} kernel (kernel: {{{device}: "
                "<file>}); its library for the CPU provider is get_library_path(domain)"
            )
    path = library_dir() / library_file(domain_ident)
    if not path.is_file():
        raise _missing(path)  # nothing built at all: says so, for every device
    return path if device == "cpu" else device_module(device).ort_library(domain_ident)


def torch_library(domain_ident: str) -> Path:
    """Loads the native PyTorch library of one domain once: it registers the schemas and CPU
    kernels of the domain's ops registered with torch.api native."""
    path = library_dir() / torch_library_file(domain_ident)
    if domain_ident not in _torch_libraries:
        if not path.is_file():
            raise _missing(path)

        def load(path: Path) -> None:
            import torch

            torch.ops.load_library(str(path))

        load_native(path, load)
        _torch_libraries.add(domain_ident)
    return path


def load_native(path: Path, load) -> None:
    """Loads a native file (a native PyTorch library, a pybind11 kernel module) with `load`,
    unless this process has mapped another file of that name: a second copy (another build of
    this package, a wheel's, another package using the same ONNX domain, a copy loaded by hand),
    or the file that was at that path when it was loaded and has since been rebuilt or deleted.
    The dynamic loader hands back the copy it has for a path it loaded before, and PyTorch takes
    one definition of an op (ONNX Runtime one library per domain): the kernels running would be
    the old copy's, in silence. The one place the generated package loads native code."""
    copy = _mapped_copy(path)
    if copy is not None:
        loaded, stale = copy
        if stale:
            why = (
                "it is the file that was at that path when this process loaded it (rebuilt, "
                "moved or deleted since), and loading the path again would run that old copy, "
                "not the file there now (restart the process to use the new build)"
            )
        else:
            why = (
                "both are the same native file of one ONNX domain (another build of this "
                "package, or another package using the same domain), and PyTorch takes one "
                "definition of an op, ONNX Runtime one library per domain (load one build, "
                "point OPGEN_BUILD_DIR at the one loaded, or give one package another domain)"
            )
        raise RuntimeError(f"{loaded} is loaded in this process, so {path} cannot be: {why}")
    load(path)


_DELETED = " (deleted)"


def _mapped_copy(path: Path) -> tuple[str, bool] | None:
    """A file this process has mapped that is not the file at path (not the same device and
    inode) and would be taken for it: the one the dynamic loader holds under path's name (it
    matches a name it loaded before, the file there now unseen), or any mapped under path's
    file name. Its path ("<path> (deleted)" for one deleted since), and whether it is stale
    (what was at path, or deleted); None if there is none."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:  # not Linux: nothing to compare
        return None
    want = os.stat(path)
    mappings = [fields for fields in (line.split(maxsplit=5) for line in lines) if len(fields) == 6]
    for name in dict.fromkeys((str(path), os.path.abspath(path), os.path.realpath(path))):
        address = _loaded_under(name)
        if address is None:
            continue
        for fields in mappings:
            begin, _, end = fields[0].partition("-")
            if int(begin, 16) <= address < int(end, 16) and not _same_file(fields, path, want):
                return fields[5], True
    for fields in mappings:
        if fields[5].removesuffix(_DELETED).rpartition("/")[2] != path.name:
            continue
        if not _same_file(fields, path, want):
            stale = fields[5].endswith(_DELETED) or fields[5] == os.path.realpath(path)
            return fields[5], stale
    return None


def _same_file(fields: list[str], path: Path, want: os.stat_result) -> bool:
    """Whether a line of /proc/self/maps (split in six) maps the file `want` describes. The
    line's device and inode are the file system's own; an overlay file system (containers)
    reports others through stat, which the link in /proc/self/map_files then gives too."""
    if fields[5].endswith(_DELETED):
        return False
    major, _, minor = fields[3].partition(":")
    try:
        if (os.makedev(int(major, 16), int(minor, 16)), int(fields[4])) == (
            want.st_dev,
            want.st_ino,
        ):
            return True
        found = os.stat(f"/proc/self/map_files/{fields[0]}")
    except (OSError, ValueError):  # no map_files here: the paths then
        return os.path.realpath(fields[5]) == os.path.realpath(path)
    return (found.st_dev, found.st_ino) == (want.st_dev, want.st_ino)


def _loaded_under(name: str) -> int | None:
    """An address inside the object the dynamic loader has loaded under this name (dlopen with
    RTLD_NOLOAD, which loads nothing), None if it has none."""
    import ctypes

    try:
        handle = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)._handle
    except OSError:
        return None

    class LinkMap(ctypes.Structure):  # the start of glibc's struct link_map
        _fields_ = [("addr", ctypes.c_size_t), ("name", ctypes.c_char_p), ("ld", ctypes.c_void_p)]

    link = ctypes.POINTER(LinkMap)()
    dlinfo = getattr(ctypes.CDLL(None), "dlinfo", None)
    if dlinfo is None or dlinfo(ctypes.c_void_p(handle), 2, ctypes.byref(link)) != 0:
        return None  # 2: RTLD_DI_LINKMAP
    return link.contents.ld  # its dynamic section


def bind_op(
    qualified_name: str,
    definition: str,
    module_file: str,
    native: tuple[str, str] | None = None,
    below_autograd: bool = False,
    devices: tuple[str, ...] = (),
) -> None:
    """Decides whether this package may bind a PyTorch op name to its kernels: every generated
    registration, native or from Python (torch.api library, custom_op, legacy), asks here first.
    A name binds one kernel: if something else defined it (another generated package, another
    copy of this one, a torch.library or C++ definition made before), this raises, naming both.

    native: (domain identifier, source file) of an op that the domain's native library defines
    (loaded here, through load_native), with the op below its Autograd key if below_autograd;
    they must be that library's, and the domain's libraries for the devices (beside the CPU) its
    kernels run on loaded where they can be. Otherwise the name must be free: the caller
    defines it next."""
    module_file = os.path.realpath(module_file)
    ours = f"package {_package.NAME} ({definition}, {module_file})"
    names = [qualified_name]
    if native is not None:
        domain_ident, source = native
        library = torch_library(domain_ident)
        ours = f"package {_package.NAME} ({definition}, {module_file}; native library {library})"
        if below_autograd:  # what the library's own Autograd kernel calls
            namespace, name = qualified_name.split("::", 1)
            names.append(f"{namespace}::{below_autograd_op(name)}")
    bindings = _bindings()
    previous = bindings.get(qualified_name)
    if previous is not None and previous[0] != module_file:
        raise _bound_twice(qualified_name, previous[1], ours)
    for name in names:
        debug = _definition_of(name)
        if native is None and debug is None:
            continue
        if native is not None and debug is not None and _defined_by(debug, library, source):
            continue
        if debug is None:
            raise RuntimeError(f"{library} does not define {name}: rebuild it (`opgen build`)")
        if debug == "":
            first = "kernels registered for that name without a definition"
        else:
            first = "a registration at " + debug.removeprefix("registered at ")
        raise _bound_twice(name, first, ours)
    bindings[qualified_name] = (module_file, ours)
    for device in devices if native is not None else ():
        device_module(device).load_torch_library(native[0])


def _bound_twice(qualified_name: str, first: str, second: str) -> RuntimeError:
    return RuntimeError(
        f"{qualified_name} is defined by {first}, so {second} cannot bind it: a PyTorch op name "
        "binds one kernel, and the second would run the first's, or lose its own fake or "
        "Autograd kernel, in silence (give one of the two ops another name under torch: in its "
        "definition, or import only one of them in a process)"
    )


def _definition_of(qualified_name: str) -> str | None:
    """PyTorch's debug info for the op's definition ("registered at <file>:<line>"); "" for a
    name with kernels but no definition; None for a free name."""
    import torch

    try:
        return torch._C._dispatch_find_schema_or_throw(qualified_name, "").debug()
    except RuntimeError:
        return "" if torch._C._dispatch_has_kernel(qualified_name) else None


def _defined_by(debug: str, library: Path, source: str) -> bool:
    """Whether debug info names this native library and the op's source in it, as the library's
    registrations spell it: "registered at <library file>, <source>:<line>"."""
    prefix = "registered at "
    marker = f", {source}:"
    if not debug.startswith(prefix) or marker not in debug:
        return False
    path = debug[len(prefix) : debug.rindex(marker)]
    try:
        return os.path.samefile(path, library)
    except OSError:
        return False


# The bindings every generated package in this process made, by op name: (module file, who),
# so that a second binding names the first. Each package has its own _support, so the record
# lives in a module of its own in sys.modules, which every package's _support shares.
_BINDINGS_MODULE = "_opgen_torch_bindings"


def _bindings() -> dict:
    module = sys.modules.get(_BINDINGS_MODULE)
    if module is None:
        module = types.ModuleType(_BINDINGS_MODULE, "PyTorch ops bound by generated packages")
        module.BINDINGS = {}
        module = sys.modules.setdefault(_BINDINGS_MODULE, module)
    return module.BINDINGS


# The per-backend keys the Autograd alias key stands for. A native op's library registers its
# own Autograd kernel for the alias (used where the generated package is not imported); the
# package's kernel, registered for each of these, wins over it everywhere.
AUTOGRAD_KEYS = tuple(
    "Autograd" + backend
    for backend in (
        "CPU", "CUDA", "HIP", "XLA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "MTIA", "MAIA",
        "PrivateUse1", "PrivateUse2", "PrivateUse3", "Meta", "Other", "NestedTensor",
    )
)  # fmt: skip


def register_autograd(library, name: str, kernel) -> None:
    """Registers a native op's Autograd kernel (taking the dispatch key set) for each of
    autograd_keys()."""
    for key in autograd_keys():
        library.impl(name, kernel, key, with_keyset=True)


def autograd_keys() -> list[str]:
    """The AUTOGRAD_KEYS that torch.library takes by name in this torch (2.13 lacks HIP, VE,
    MTIA and MAIA's: there the library's own kernel stays, refusing the device)."""
    import torch

    keys = []
    for key in AUTOGRAD_KEYS:
        try:
            torch._C._dispatch_key_parse(key)
        except RuntimeError:
            continue
        keys.append(key)
    return keys


def check_one_device(op: str, tensors: dict) -> None:
    """Raises unless the present tensors are on one device. The fake kernel calls it: a call
    with inputs on the meta device and on the CPU dispatches to it, and it would make its
    outputs on the first input's device, uninitialized, as if the call had run."""
    devices = {name: t.device for name, t in _each_tensor(tensors) if t is not None}
    if len(set(devices.values())) > 1:
        where = ", ".join(f"input '{name}' on {device}" for name, device in devices.items())
        raise RuntimeError(f"{op}: the inputs must be on one device, got {where}")


def check_dtypes(op: str, tensors: dict, bindings: tuple, supported: str) -> None:
    """Raises unless some dtype binding of the op (a tuple of the inputs' dtypes, in order)
    gives each present input its dtype (every value of a list), as the kernels check them.
    The fake kernel calls it, so that tracing refuses what eager refuses, in its words."""

    def matches(argument, dtype) -> bool:
        if argument is None:
            return True
        if isinstance(argument, list | tuple):
            return all(v.dtype == dtype for v in argument)
        return argument.dtype == dtype

    values = list(tensors.values())
    if any(all(map(matches, values, binding)) for binding in bindings):
        return

    def name(argument) -> str:
        if isinstance(argument, list | tuple):
            return "[" + ", ".join(name(v) for v in argument) + "]"
        return str(argument.dtype).removeprefix("torch.")

    present = ", ".join(name(v) for v in values if v is not None)
    raise ValueError(f"{op}: unsupported input dtypes ({present}); supported: {supported}")


def kernels(domain_ident: str):
    """The pybind11 kernel module of one domain, imported from the build directory."""
    if domain_ident in _modules:
        return _modules[domain_ident]
    name = module_name(domain_ident)
    lib = library_dir()
    paths = [lib / f"{name}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    path = next((path for path in paths if path.is_file()), None)
    if path is None:
        raise _missing(paths[0])
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)

    def load(path: Path) -> None:
        sys.modules[name] = module
        spec.loader.exec_module(module)

    load_native(path, load)
    _modules[domain_ident] = module
    return module


def _each_tensor(inputs: dict):
    """(name, tensor) of each input, a variadic one's values as X[0], X[1], ..."""
    for name, argument in inputs.items():
        if isinstance(argument, list | tuple):
            yield from ((f"{name}[{i}]", tensor) for i, tensor in enumerate(argument))
        else:
            yield name, argument


def name_the_op(op: str, error: ValueError, inputs: dict) -> None:
    """Raises a ValueError from a kernel call again, naming the op, if it does not (the kernel's
    own errors do). numpy refuses an array of more than 2**63 - 1 bytes even when it is empty,
    while PyTorch holds such a tensor: that refusal is put in the kernels' words."""
    if str(error).startswith(f"{op}: "):
        return
    for name, tensor in _each_tensor(inputs):
        if tensor is None or tensor.numel() != 0:
            continue
        size = 1
        for dim in tensor.shape:
            size *= dim or 1
        if size * tensor.element_size() > sys.maxsize:
            what = "size" if size > sys.maxsize else "size in bytes"
            raise ValueError(
                f"{op}: input '{name}' has shape {list(tensor.shape)}, whose {what} overflows int64"
            ) from error
    raise ValueError(f"{op}: {error}") from error


# The dtypes numpy has only through ml_dtypes: each crosses as a view of its bits.
_ML_DTYPES = {  # torch name: the integer type of its width
    "bfloat16": "int16",
    "float8_e4m3fn": "uint8",
    "float8_e4m3fnuz": "uint8",
    "float8_e5m2": "uint8",
    "float8_e5m2fnuz": "uint8",
}


def to_numpy(tensor):
    """A CPU tensor as a numpy array sharing its memory (bfloat16 and the float8 types as
    ml_dtypes' types)."""
    tensor = tensor.contiguous()
    try:
        return tensor.numpy(force=True)  # force: detach (no copy for a CPU tensor)
    except TypeError:  # a dtype numpy lacks; the common path pays nothing for this check
        import torch

        name = str(tensor.dtype).removeprefix("torch.")
        if name not in _ML_DTYPES:
            raise
        import ml_dtypes

        bits = tensor.detach().view(getattr(torch, _ML_DTYPES[name])).numpy()
        return bits.view(getattr(ml_dtypes, name))


def from_numpy(array):
    """A numpy array as a tensor sharing its memory (the inverse of to_numpy)."""
    import torch

    try:
        return torch.from_numpy(array)
    except TypeError:  # a dtype torch.from_numpy lacks; the common path pays nothing for this
        import numpy as np

        name = array.dtype.name
        if name in _ML_DTYPES:
            bits = torch.from_numpy(array.view(np.dtype(_ML_DTYPES[name])))
            return bits.view(getattr(torch, name))
        if array.dtype.kind not in "iu":  # numpy's other type for a width (ONNX Runtime
            raise  # returns ulonglong arrays)
        return torch.from_numpy(array.view(np.dtype(array.dtype.name)))


def has_tangent(*tensors) -> bool:
    """Whether an input carries a forward-mode tangent (torch.func.jvp, torch.autograd.forward_ad).
    Outside those (no dual level, no torch.func transform) it costs one attribute read."""
    import torch

    forward_ad = torch.autograd.forward_ad
    if forward_ad._current_level < 0 and not torch._C._are_functorch_transforms_active():
        return False
    return any(t is not None and forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def apply_function(function, *args):
    """function.apply, without torch.func's custom_function_call: that higher-order op has no
    kernel for a Function applied inside a dispatcher Autograd kernel (torch.func.grad, jacrev
    and vmap of grad fail with it in torch 2.13). Under a transform the Function is applied at
    the current level only, as torch.func's own rule for autograd.Function does."""
    import torch
    from torch._functorch.utils import enable_single_level_autograd_function

    apply = super(torch.autograd.Function, function).apply  # torch._C._FunctionBase.apply
    if torch._C._are_functorch_transforms_active():
        with enable_single_level_autograd_function():
            return apply(*args)
    return apply(*args)


def below_autograd(op, *args):
    """Runs op below the Autograd key, in a Function's forward. Under a torch.func transform the
    C++ apply turned grad and forward grad off, but the lower levels must still record the
    call (else second derivatives such as hessian come out wrong), so both are turned on."""
    import torch
    from torch.autograd import forward_ad

    if torch._C._are_functorch_transforms_active():
        with torch.enable_grad(), forward_ad._set_fwd_grad_enabled(True):
            with torch._C._AutoDispatchBelowAutograd():
                return op(*args)
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


def register_loop_vmap(qualified_name: str, lib=None) -> None:
    """vmap of an op with a Tensor[] argument, which PyTorch's vmap fallback cannot batch
    ("Batching rule not implemented ... could not generate a fallback"): one call per sample,
    stacked, as the fallback does for the other ops."""
    import torch

    namespace, name = qualified_name.split("::")

    def one_sample(arg, dim, index):
        if isinstance(arg, list | tuple):  # a Tensor[]: in_dims holds one dim per tensor
            dims = dim if isinstance(dim, list | tuple) else [dim] * len(arg)
            return [one_sample(a, d, index) for a, d in zip(arg, dims, strict=True)]
        return arg if dim is None else arg.select(dim, index)

    def rule(info, in_dims, *args, **kwargs):
        if info.batch_size == 0:  # no sample to run, so no output to stack
            raise RuntimeError(
                f"{qualified_name}: vmap over a batch of size 0 is not supported (the op has "
                "no batching rule: it runs once per sample)"
            )
        op = getattr(getattr(torch.ops, namespace), name).default
        results = [
            op(*(one_sample(a, d, i) for a, d in zip(args, in_dims, strict=True)), **kwargs)
            for i in range(info.batch_size)
        ]
        if isinstance(results[0], tuple):
            outputs = tuple(stacked(list(values)) for values in zip(*results, strict=True))
            return outputs, tuple(dims_of(output) for output in outputs)
        return stacked(results), dims_of(results[0])

    def stacked(samples):
        """One output's samples stacked; a Tensor[] output's value by value (each sample
        has as many values: the inputs they pair with came from one list)."""
        if isinstance(samples[0], list):
            return [torch.stack(list(values)) for values in zip(*samples, strict=True)]
        return torch.stack(samples)

    def dims_of(output):
        return [0] * len(output) if isinstance(output, list) else 0

    torch.library.register_vmap(qualified_name, rule, lib=lib)


def saved_values(saved: tuple, variadic: tuple) -> list:
    """The tensors a Function saved, one per parameter, a variadic one's values back as a list
    (`variadic` flags them). The variadic parameters have as many values each: the variadic
    output's values pair with the variadic input's."""
    singles = variadic.count(False)
    count = (len(saved) - singles) // variadic.count(True)
    values, position = [], 0
    for is_variadic in variadic:
        if is_variadic:
            values.append(list(saved[position : position + count]))
            position += count
        else:
            values.append(saved[position])
            position += 1
    return values


def value_gradients(what: str, gradients, count: int) -> list:
    """A variadic input's gradients, one per value, from its formula's result (a list or tuple
    of them; None: none flows to it)."""
    if gradients is None:
        return [None] * count
    if not isinstance(gradients, list | tuple) or len(gradients) != count:
        got = (
            f"{len(gradients)} of them"
            if isinstance(gradients, list | tuple)
            else type(gradients).__name__
        )
        raise RuntimeError(
            f"{what} must give a list of {count} gradients (one per value), got {got}"
        )
    return list(gradients)
