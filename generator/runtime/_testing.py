"""Helpers of the generated parity tests: sessions, single-node models, comparisons."""

import math
import re

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from . import _names, _support

input_of = _names.input_of


def grouped(inputs: dict, variadic: str) -> dict:
    """Test inputs by input: the variadic input's values (named X_0, X_1, ...) as one list."""
    values = _names.value_names(variadic, inputs)
    by_input = {name: value for name, value in inputs.items() if name not in values}
    return {**by_input, variadic: [inputs[name] for name in values]}


def gradients_by_value(gradients: tuple, inputs: list, names: list, variadic) -> list:
    """An op's gradients (one per input, a list of the variadic one's values; then the
    attributes') as one per value of `names` (the variadic input's as X_0, X_1, ...)."""
    by_input = dict(zip(inputs, gradients[: len(inputs)], strict=True))
    values = _names.value_names(variadic, names) if variadic else []
    return [by_input[variadic][values.index(n)] if n in values else by_input[n] for n in names]


def value_order(inputs: dict, order: list, variadic: str) -> list:
    """The op's inputs in order, the variadic one as the names of its values among `inputs`."""
    return [
        value
        for name in order
        for value in (_names.value_names(variadic, inputs) if name == variadic else [name])
    ]


def paired_output_names(outputs: list, variadic: str, inputs: dict, paired: str) -> list:
    """The op's outputs in order, the variadic one as its values (Y_0, Y_1, ...): one per value
    of the variadic input `paired` among `inputs`."""
    count = len(_names.value_names(paired, inputs))
    return [
        value
        for name in outputs
        for value in (
            [_names.value_name(variadic, i) for i in range(count)] if name == variadic else [name]
        )
    ]


_LIBRARY_ALONE = """
import sys

import torch

torch.ops.load_library(sys.argv[1])
model = torch.jit.load(sys.argv[2])
args, want = torch.load(sys.argv[3])
torch.testing.assert_close(model(*args), want, rtol=0, atol=0, equal_nan=True)
print("same results")
"""


def run_with_native_library_alone(library, model, args: tuple, want, tmp_path) -> None:
    """Runs a saved TorchScript model in a fresh process that loads the op's native library
    and not this package, as a C++ server does: the same results as `want`."""
    import subprocess
    import sys

    torch.save((list(args), want), tmp_path / "library_alone.pt")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _LIBRARY_ALONE,
            str(library),
            str(model),
            str(tmp_path / "library_alone.pt"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0 and "same results" in result.stdout, (
        result.stdout[-2000:] + result.stderr[-4000:]
    )


def spread(result: tuple, outputs: list, variadic: str, names: list, who: str) -> tuple:
    """A result (of the reference, or of the PyTorch op: `who`) with the variadic output's
    list of values in place of the list."""
    position = outputs.index(variadic)
    values = result[position] if position < len(result) else None
    count = len(names) - len(outputs) + 1
    if not isinstance(values, list | tuple) or len(values) != count:
        raise AssertionError(
            f"the {who}'s output {variadic} must be a list of {count} values (one per value "
            f"of the variadic input), got {type(values).__name__}"
            + (f" of {len(values)}" if isinstance(values, list | tuple) else "")
        )
    return (*result[:position], *values, *result[position + 1 :])


# The tests' dtype of a string tensor, which PyTorch lacks: a string tensor is a numpy array of
# Python str (numpy's object dtype), as ONNX Runtime's Python API takes and returns them.
STRING = np.dtype(object)
# The tests' dtypes of 4-bit integers, which PyTorch computes nothing on: numpy arrays of
# ml_dtypes' int4 and uint4 (one per byte). ONNX Runtime's Python API has no numpy type for
# them: an input crosses packed (ort_value), an output comes back through a Cast to 8 bits.
INT4 = np.dtype(ml_dtypes.int4)
UINT4 = np.dtype(ml_dtypes.uint4)
FOUR_BIT = {INT4: (np.int8, -8, 7), UINT4: (np.uint8, 0, 15)}  # unpacked as, range

TENSOR_PROTO = {
    STRING: TensorProto.STRING,
    INT4: TensorProto.INT4,
    UINT4: TensorProto.UINT4,
    torch.float16: TensorProto.FLOAT16,
    torch.bfloat16: TensorProto.BFLOAT16,
    torch.float32: TensorProto.FLOAT,
    torch.float64: TensorProto.DOUBLE,
    torch.int8: TensorProto.INT8,
    torch.int16: TensorProto.INT16,
    torch.int32: TensorProto.INT32,
    torch.int64: TensorProto.INT64,
    torch.uint8: TensorProto.UINT8,
    torch.bool: TensorProto.BOOL,
    torch.uint16: TensorProto.UINT16,
    torch.uint32: TensorProto.UINT32,
    torch.uint64: TensorProto.UINT64,
    torch.complex64: TensorProto.COMPLEX64,
    torch.complex128: TensorProto.COMPLEX128,
    torch.float8_e4m3fn: TensorProto.FLOAT8E4M3FN,
    torch.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ,
    torch.float8_e5m2: TensorProto.FLOAT8E5M2,
    torch.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
}
# Dtypes ONNX Runtime's Python API has no numpy type for (it refuses them as outputs, or
# returns raw bits): an input crosses as an OrtValue of its bits, an output comes back through
# a Cast to float32 in a session of its own (exact for these, but that a NaN comes back as
# PyTorch's NaN encoding, not necessarily the kernel's), then to its dtype.
COMPLEX = (torch.complex64, torch.complex128)
FLOAT8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz)
# onnxruntime 1.31 refuses the IR version onnx 1.23 stamps by default (14); 10 works.
IR_VERSION = 10


def float32_attributes(attributes: dict) -> dict:
    """Float attributes as every runtime sees them: ONNX float attributes are float32. (A
    tensor attribute's array becomes a torch tensor of its dtype, for the reference.)"""

    def rounded(value):
        if isinstance(value, np.ndarray):
            return torch.from_numpy(value.copy())
        if isinstance(value, float):
            return float(np.float32(value))
        if isinstance(value, list | tuple) and value and isinstance(value[0], float):
            return [float(np.float32(v)) for v in value]
        return value

    return {name: rounded(value) for name, value in attributes.items()}


def session(model, libraries=(), threads: int = 1, device: str = "cpu") -> ort.InferenceSession:
    """An ONNX Runtime session with the given custom-op libraries (domain idents; one ident or
    None also work), on the CPU, or on another device's provider alone (device="cuda", with the
    libraries for it)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if libraries is None:
        libraries = ()
    for ident in [libraries] if isinstance(libraries, str) else libraries:
        options.register_custom_ops_library(str(_support.ort_library(ident, device)))
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    if device == "cpu":
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return _support.device_module(device).ort_session(data, options)


def in_float64(types: dict) -> dict:
    """{type variable: torch dtype} with every floating one float64 (the reference computes
    there for a gradcheck, whatever dtypes the kernel has)."""
    return {
        var: torch.float64 if dtype.is_floating_point else dtype for var, dtype in types.items()
    }


def zero_d(tensor: torch.Tensor) -> torch.Tensor:
    """A 0-d tensor of `tensor`'s dtype: its first value (a one where it has none)."""
    first = tensor.reshape(-1)[:1] if tensor.numel() else torch.ones(1, dtype=tensor.dtype)
    return first.reshape(())


def runs_at(types: dict, dtypes: dict | None) -> bool:
    """Whether a case whose `dtypes` are {type variable: torch dtypes} (None: all) runs at the
    dtype combination `types` ({type variable: torch dtype})."""
    return dtypes is None or all(types[var] in allowed for var, allowed in dtypes.items())


def has_device(device: str) -> bool:
    """Whether this process sees a device of that kind (torch's name: "cuda"): a device's tests
    in the generated modules exist only then (nothing collects them on a machine without one;
    `./dev test-gpu` runs the CUDA ones on a GPU)."""
    return getattr(torch, device).is_available()


def to_device(value, device: str):
    """Tensors (alone, or in lists and tuples, as variadic values are) on a device; anything
    else as it is."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {name: to_device(item, device) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_device(item, device) for item in value)
    return value


def single_node_model(
    domain: str,
    op_type: str,
    version: int,
    inputs: dict[str, tuple[torch.dtype, int]],
    outputs: list[str],
    attributes: dict,
    static_shapes: dict[str, tuple[int, ...]] | None = None,
    attribute_types: dict[str, int] | None = None,
    input_order: list[str] | None = None,
    standard_opset: int = 18,
) -> onnx.ModelProto:
    """One node of the op. Input dims are symbolic (so the kernel, not ONNX Runtime, checks
    shapes) unless `static_shapes` gives them (for ONNX shape inference). `attribute_types`
    spell the type of an empty list, which its value does not tell. An output named "" is one
    the node leaves out. `input_order`: the op's inputs, of which those not in `inputs` are
    left out (named "" before a present one, as ONNX spells it). `standard_opset`: the
    standard domain's version (a function op's body may need a newer one)."""
    names = [name if name in inputs else "" for name in input_order or list(inputs)]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op_type, names, outputs, domain=domain)
    node.attribute.extend(
        helper.make_attribute(
            name, onnx_attribute(value), attr_type=(attribute_types or {}).get(name)
        )
        for name, value in attributes.items()
    )
    graph = helper.make_graph(
        [node],
        f"{op_type}_single_node",
        [
            helper.make_tensor_value_info(
                name,
                TENSOR_PROTO[dtype],
                (static_shapes or {}).get(name) or [f"{name}_d{i}" for i in range(rank)],
            )
            for name, (dtype, rank) in inputs.items()
        ],
        [helper.make_value_info(name, onnx.TypeProto()) for name in outputs if name],
    )
    opsets = [helper.make_opsetid("", standard_opset), helper.make_opsetid(domain, version)]
    if not domain:  # a standard op: one import of the standard domain
        opsets = [helper.make_opsetid("", max(standard_opset, version))]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def onnx_attribute(value):
    """An attribute's value in an ONNX node: a dtype (the tests' value of an attribute that
    picks one) as TensorProto's number."""
    if isinstance(value, torch.dtype | np.dtype):
        return TENSOR_PROTO[value]
    if isinstance(value, np.ndarray):  # a tensor attribute's (see tensor_attribute)
        return onnx.numpy_helper.from_array(value)
    return value


def tensor_attribute(values, dtype: str) -> np.ndarray:
    """A tensor attribute's value in the tests: nested lists (as the definition writes them)
    as an array of the attribute's dtype. An ONNX node gets it as a TensorProto, the
    reference as a torch tensor."""
    return np.array(values, dtype=np.dtype(dtype))


def without_trailing_none(args: tuple) -> tuple:
    """Positional arguments without the absent optional inputs at the end (None stays where
    a later input is given: ONNX names such an input "")."""
    while args and args[-1] is None:
        args = args[:-1]
    return args


def ort_type(dtype: torch.dtype) -> str:
    """ONNX Runtime's name of a tensor type, as NodeArg.type gives it: "tensor(float)"."""
    return f"tensor({TensorProto.DataType.Name(TENSOR_PROTO[dtype]).lower()})"


def evaluate_dim(dim: int | str, sizes: dict[str, int]) -> int:
    """A dim that shape inference computed: a number, or an expression of named dims in the
    shape rules' syntax (+ - * // and parentheses), evaluated at the named dims' sizes."""
    if isinstance(dim, int):
        return dim
    if not re.fullmatch(r"[\w\s()+*/-]+", dim):
        raise AssertionError(f"not a dim expression: {dim!r}")
    return eval(dim, {"__builtins__": {}}, dict(sizes))  # checked above: names, numbers, + - * //


def is_strings(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == STRING


def is_4bit(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype in FOUR_BIT


def tensor(value, dtype):
    """torch.tensor(value, dtype=dtype), or for STRING a numpy array of str, for INT4 and UINT4
    one of them (a value out of their range is an error, not wrapped)."""
    if dtype is STRING:
        return cast(np.array(value, dtype=object), STRING, "a known value")
    if dtype in FOUR_BIT:
        return cast(torch.tensor(value, dtype=torch.float64), dtype, "a known value")
    if dtype in COMPLEX:  # numbers, or strings complex() reads ("1-2j", "nan+1j")
        return torch.tensor(_complex_values(value), dtype=dtype)
    return torch.tensor(value, dtype=dtype)


def _complex_values(value):
    if isinstance(value, list):
        return [_complex_values(v) for v in value]
    return complex(value)


def ones(shape, dtype):
    """A tensor of shape and dtype with every element 1 ("1" for strings)."""
    if dtype is STRING:
        return np.full(shape, "1", dtype=object)
    if dtype in FOUR_BIT:
        return np.ones(shape, dtype=dtype)
    return torch.ones(shape, dtype=dtype)


def cast(value, dtype, what: str):
    """`value` (what a reference or sampler gave for `what`) in `dtype`: value.to(dtype) for a
    tensor; for STRING, an array of str; numbers from an array of objects. Anything else (a
    string where numbers belong, numbers where strings do, numpy's fixed-width strings) is an
    error naming `what`: never a silent conversion."""
    if dtype is STRING:
        if isinstance(value, np.ndarray) and value.dtype.kind in "US":
            raise AssertionError(
                f"{what}: a numpy array of dtype {value.dtype}, whose strings numpy cuts at "
                "their trailing NULs; give an array of dtype=object (np.vectorize(..., "
                "otypes=[object]))"
            )
        array = np.asarray(value, dtype=object)
        wrong = [type(v).__name__ for v in array.flat if not isinstance(v, str)]
        if wrong:
            raise AssertionError(f"{what}: a string tensor holds a {wrong[0]}, not a str")
        return array
    value = computable(value)
    if isinstance(value, torch.Tensor) and value.is_complex() and dtype not in COMPLEX:
        raise AssertionError(
            f"{what}: complex values for a {dtype_name(dtype)} tensor (a conversion would drop "
            "the imaginary parts); take .real, .imag or .abs() in the reference"
        )
    if dtype in FOUR_BIT:
        return _cast_4bit(value, dtype, what)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        found = [type(v).__name__ for v in value.flat if isinstance(v, str | bytes)]
        if found or value.dtype.kind != "O":
            raise AssertionError(
                f"{what}: strings ({value.dtype}) for a {dtype_name(dtype)} tensor"
            )
        return torch.tensor(value.tolist(), dtype=dtype).reshape(value.shape)
    return torch.as_tensor(value).to(dtype)


def _cast_4bit(value, dtype, what: str) -> np.ndarray:
    """Integers within the 4-bit type's range, exactly: a fraction, NaN or a value out of range
    is an error naming `what` (a conversion would wrap or round in silence)."""
    value = computable(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        raise AssertionError(f"{what}: strings ({value.dtype}) for a {dtype_name(dtype)} tensor")
    values = torch.as_tensor(value).to(torch.float64)
    _, low, high = FOUR_BIT[dtype]
    bad = ~((values == values.round()) & (values >= low) & (values <= high))
    if bad.any():
        index = [int(i) for i in torch.nonzero(bad)[0]] if values.ndim else []
        raise AssertionError(
            f"{what}: {values[tuple(index)].item()} at {index} is no {dtype_name(dtype)} value "
            f"(an integer from {low} to {high})"
        )
    return values.to(torch.int64).numpy().astype(np.int8).astype(dtype)


def retyped(value, dtype):
    """A test input in another dtype (the wrong-dtype tests): a string array as zeros, a
    tensor as a string array of its values."""
    if dtype is STRING:
        return np.full(tuple(value.shape), "0", dtype=object)
    if dtype in FOUR_BIT:
        return np.zeros(tuple(value.shape), dtype=dtype)
    if is_strings(value) or is_4bit(value):
        return torch.zeros(value.shape, dtype=dtype)
    if value.is_complex() and not dtype.is_complex:
        value = value.real
    return value.to(dtype)


def differentiable(value) -> bool:
    """A tensor a gradient can flow through: floating or complex."""
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def real_sum(tensor: torch.Tensor) -> torch.Tensor:
    """A real scalar of every element (backward starts from one): both parts of a complex
    tensor; float8, which PyTorch sums not, in float32."""
    if tensor.is_complex():
        return torch.view_as_real(tensor).sum()
    return tensor.float().sum()


def computable(value):
    """What the reference gets: 4-bit integers as torch int8 or uint8 tensors (PyTorch computes
    nothing on its own 4-bit dtypes), anything else as it is."""
    if is_4bit(value):
        return torch.from_numpy(value.astype(FOUR_BIT[value.dtype][0]))
    return value


def upcast(value):
    """What the reference gets with reference_upcast: floating tensors in float64, and what
    computable() gives."""
    value = computable(value)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch.float64)
    return value


def dtype_name(dtype) -> str:
    if dtype is STRING:
        return "string"
    if dtype in FOUR_BIT:
        return dtype.name
    return str(dtype).removeprefix("torch.")


# What random string inputs are drawn from: ASCII, the empty string, NUL, multi-byte UTF-8 (two,
# three and four bytes), a combining mark and spaces.
STRING_ALPHABET = "abcXYZ019 _-.\x00éßΣжあ😀\u0301\t"


def random_strings(shape, gen) -> np.ndarray:
    """A string tensor of shape: strings of 0 to 12 characters of STRING_ALPHABET, drawn from
    the torch generator `gen` (the tests' seeds decide them)."""
    count = math.prod(shape)
    lengths = torch.randint(0, 13, (count,), generator=gen).tolist()
    picks = torch.randint(0, len(STRING_ALPHABET), (sum(lengths),), generator=gen).tolist()
    strings, start = [], 0
    for length in lengths:
        strings.append("".join(STRING_ALPHABET[i] for i in picks[start : start + length]))
        start += length
    return np.array(strings, dtype=object).reshape(shape)


def sample(shape, gen, dtype):
    """A random case's values of an input without a sampler: normal floats (before the cast to
    the input's dtype), random strings for STRING."""
    if dtype is STRING:
        return random_strings(shape, gen)
    if dtype in FOUR_BIT:  # every value of the type
        _, low, high = FOUR_BIT[dtype]
        return torch.randint(low, high + 1, shape, generator=gen, dtype=torch.float64)
    if dtype in COMPLEX:  # both parts normal
        return torch.randn(shape, generator=gen, dtype=torch.complex128)
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def assert_close(actual, expected, tolerances: dict, what: str) -> None:
    """Equal within the expected dtype's (rtol, atol) of `tolerances`, NaN where NaN is
    expected; float8 tensors (which PyTorch computes nothing on) are compared in float32 once
    their dtypes agree."""
    if is_strings(expected):
        _assert_strings_equal(actual, expected, what)
        return
    if is_4bit(expected) or is_4bit(actual):
        if not (is_4bit(actual) and actual.dtype == expected.dtype):
            raise AssertionError(f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
        torch.testing.assert_close(
            computable(actual), computable(expected), msg=lambda m: f"{what}: {m}"
        )
        return
    actual = torch.as_tensor(actual) if not isinstance(actual, torch.Tensor) else actual
    rtol, atol = tolerances.get(expected.dtype, (0.0, 0.0))
    if expected.dtype in FLOAT8 or actual.dtype in FLOAT8:
        if actual.dtype != expected.dtype:
            raise AssertionError(f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
        actual, expected = actual.float(), expected.float()
    if expected.dtype in COMPLEX and actual.dtype == expected.dtype:
        # Part by part: equal_nan alone takes any value with a NaN part for any other.
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
    torch.testing.assert_close(
        actual, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}"
    )


def _assert_strings_equal(actual, expected: np.ndarray, what: str) -> None:
    if not is_strings(actual):
        raise AssertionError(f"{what}: expected a string tensor, got {type(actual).__name__}")
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {list(actual.shape)}, expected {list(expected.shape)}")
    for index in np.ndindex(expected.shape):
        if actual[index] != expected[index]:
            raise AssertionError(
                f"{what}: at {list(index)}, {actual[index]!r} != {expected[index]!r} (expected)"
            )


def run_ort(session, inputs: dict) -> list:
    """Runs a session on torch tensors (and numpy arrays of str); returns the same kinds. ONNX
    Runtime's Python API has no numpy type for bfloat16, so such tensors cross as OrtValues
    through DLPack; nor for float8 (see FLOAT8); and no OrtValue of strings, so a session with
    string inputs runs on numpy arrays."""
    if any(is_strings(value) for value in inputs.values()):
        feeds = {
            name: value if is_strings(value) else _support.to_numpy(value)
            for name, value in inputs.items()
        }
        return [_from_numpy(value) for value in session.run(None, feeds)]
    feeds = {name: ort_value(tensor) for name, tensor in inputs.items()}
    names = [output.name for output in session.get_outputs()]
    values = session.run_with_ort_values(names, feeds)
    return [from_ort_value(value) for value in values]


def opcheck(op, args: tuple, kwargs: dict) -> None:
    """torch.library.opcheck of the op. Its schema check compares each input before and after
    the call with torch.allclose, which PyTorch has no float8 kernel for; with float8 inputs
    that check is made here instead: every input's bits unchanged, no output sharing an
    input's memory."""
    tensors = [
        t
        for arg in args
        for t in (arg if isinstance(arg, list | tuple) else [arg])
        if isinstance(t, torch.Tensor)
    ]
    if not any(t.dtype in FLOAT8 for t in tensors):
        torch.library.opcheck(op, args, kwargs)
        return
    others = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    torch.library.opcheck(op, args, kwargs, test_utils=others)
    before = [t.detach().clone() for t in tensors]
    outputs = op(*args, **kwargs)
    for index, (tensor, copy) in enumerate(zip(tensors, before, strict=True)):
        if not torch.equal(_bits(tensor), _bits(copy)):
            raise AssertionError(f"the op changed its input tensor {index}")
    outputs = outputs if isinstance(outputs, tuple | list) else [outputs]
    storages = {t.untyped_storage().data_ptr() for t in tensors if t.numel()}
    for index, output in enumerate(outputs):
        if isinstance(output, torch.Tensor) and output.numel():
            if output.untyped_storage().data_ptr() in storages:
                raise AssertionError(f"output {index} shares memory with an input")


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes, whatever its dtype: torch.equal has no float8 kernel, and NaN is
    unequal to itself."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def ort_value(tensor) -> ort.OrtValue:
    if is_4bit(tensor):
        # ONNX Runtime reads the packed bytes from the start of a buffer of the logical shape.
        nibbles = tensor.reshape(-1).astype(np.int8).view(np.uint8) & 0xF
        packed = np.zeros(tensor.shape, dtype=np.uint8)
        flat = packed.reshape(-1)
        flat[: (nibbles.size + 1) // 2] = nibbles[0::2]
        flat[: nibbles.size // 2] |= nibbles[1::2] << 4
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(packed, TENSOR_PROTO[tensor.dtype])
    if tensor.dtype == torch.bfloat16:
        return ort.OrtValue.from_dlpack(tensor.detach().contiguous())
    if tensor.dtype in FLOAT8:
        bits = tensor.detach().contiguous().view(torch.uint8).numpy()
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TENSOR_PROTO[tensor.dtype])
    return ort.OrtValue.ortvalue_from_numpy(_support.to_numpy(tensor))


_BY_ORT_TYPE = {ort_type(dtype): dtype for dtype in TENSOR_PROTO if dtype is not STRING}
# ONNX's number of a float8 or 4-bit type: a session casting it to float32 or 8 bits.
_CAST_SESSIONS: dict = {}


def _cast_session(number: int, to: int) -> ort.InferenceSession:
    if number not in _CAST_SESSIONS:
        graph = helper.make_graph(
            [helper.make_node("Cast", ["x"], ["y"], to=to)],
            "cast",
            [helper.make_tensor_value_info("x", number, None)],
            [helper.make_tensor_value_info("y", to, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = IR_VERSION
        _CAST_SESSIONS[number] = session(model)
    return _CAST_SESSIONS[number]


def from_ort_value(value: ort.OrtValue):
    data_type = value.data_type()
    if data_type == "tensor(bfloat16)":
        return torch.from_dlpack(value).clone()
    dtype = _BY_ORT_TYPE.get(data_type)
    if dtype in FOUR_BIT:
        to = TensorProto.INT8 if dtype == INT4 else TensorProto.UINT8
        (as_bytes,) = _cast_session(TENSOR_PROTO[dtype], to).run_with_ort_values(
            ["y"], {"x": value}
        )
        return as_bytes.numpy().astype(dtype)
    if dtype not in FLOAT8:
        return _from_numpy(value.numpy())
    cast_session = _cast_session(TENSOR_PROTO[dtype], TensorProto.FLOAT)
    (as_float32,) = cast_session.run_with_ort_values(["y"], {"x": value})
    return torch.from_numpy(as_float32.numpy()).to(dtype)


def _from_numpy(array: np.ndarray):
    return array if array.dtype == STRING else _support.from_numpy(array)


def sizes(case: dict) -> int:
    """How many sizes a random case runs each dynamic dim at."""
    return len(next(iter(case["dynamic"].values()))) if case["dynamic"] else 1


def dynamic_axes(case: dict) -> dict:
    """A random case's dynamic dims in the exporters' {input: {axis: name}} form."""
    return {
        name: {axis: dim for axis, dim in enumerate(dims) if isinstance(dim, str)}
        for name, dims in case["shapes"].items()
    }
