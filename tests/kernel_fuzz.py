"""Worker of the kernel fuzzer (tests/test_kernel_fuzz.py): runs generated inputs of one kernel op
through the PyTorch op (the pybind11 kernel) and a one-node ONNX Runtime model, in this process,
and prints one JSON line per input. Run by the test in a subprocess on the sanitizer build, so a
crash kills only this process; the line "CASE {...}" printed (and flushed) before each input
names the input that crashed it.

    python -m tests.kernel_fuzz OP SEED FIRST COUNT
    python -m tests.kernel_fuzz --cases '[{...}, ...]'

Input i of op OP under seed SEED is a pure function of (OP, SEED, i): `make_case` draws it from
the op's generated test module (its inputs, dtypes, attributes, random cases and samplers), so
one input can be re-run alone. Outcomes that fail the test: a wrong answer (an input valid by
construction whose result differs from the reference; ONNX Runtime and PyTorch disagreeing on
the same input), an error whose message does not name the op, a valid input rejected.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import math
import os
import random
import sys
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

import generated
from generated import _support, _testing

DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "uint64": torch.uint64,
    "float8e4m3fn": torch.float8_e4m3fn,
    "float8e4m3fnuz": torch.float8_e4m3fnuz,
    "float8e5m2": torch.float8_e5m2,
    "float8e5m2fnuz": torch.float8_e5m2fnuz,
    "complex64": torch.complex64,  # PyTorch only (an op on them runs in PyTorch alone)
    "complex128": torch.complex128,
    "string": _testing.STRING,  # numpy arrays of str (ONNX Runtime only: PyTorch has none)
    # numpy arrays of ml_dtypes' int4 / uint4, one per byte (ONNX Runtime only, packed two per
    # byte as it crosses: _testing.ort_value; PyTorch computes nothing on them)
    "int4": _testing.INT4,
    "uint4": _testing.UINT4,
}
NAMES = {dtype: name for name, dtype in DTYPES.items()}
SIZES = [0, 0, 1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 33, 64]
# Dims whose product overflows int64 (a tensor that has them is empty only through a zero dim).
HUGE = [2**31, 2**32, 2**40, 2**62, 2**63 - 1]
INTS = [-(2**63), -(2**31), -7, -2, -1, 0, 1, 2, 3, 4, 5, 6, 8, 2**31, 2**62, 2**63 - 1]
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-310, 3e9, -3e9, 1e38, 1e300, 65504.0]
# The values of a "nonfinite" case: NaN, infinities and signed zeros among ordinary ones, which
# every floating kernel must take as its reference does (no magnitude a wider type would hold).
NONFINITE = [math.nan, math.inf, -math.inf, 0.0, -0.0]
FLOATING = {"float16", "bfloat16", "float32", "float64"}
# Strings for "special" values: empty, NULs, long, multi-byte, combining, noncharacters.
SPECIAL_STRINGS = ["", "\0", "\0\0a", "a" * 5000, "\u00e9" * 300, "\U0001f600", "\u0301", "\uffff"]
MAX_ELEMENTS = 1 << 15  # keeps one input fast under ASan
# A variadic op's calls with many values: how many, and the elements all of them may have.
MANY_VALUES = [64, 1000, 3000]
MANY_ELEMENTS = 1 << 16
# ONNX's numbers of the element types the tests know: what an attribute choosing one may get.
ELEMENT_TYPES = sorted(set(_testing.TENSOR_PROTO.values()))
# Element types ONNX Runtime's ConstantOfShape makes no tensor of (ONNX numbers): a float32
# one, cast (opset 21's Cast makes them all).
NO_CONSTANT_OF_SHAPE = {
    _testing.TENSOR_PROTO[dtype] for dtype in (*_testing.FLOAT8, *_testing.FOUR_BIT)
}


def spec(op: str):
    """The generated test module of an op: everything the fuzzer knows about it."""
    return importlib.import_module(f"generated.{op}.test_{op}")


def _nonzero_product(shape: list[int]) -> int:
    return math.prod(d for d in shape if d != 0) if shape else 1


def _fits(shape: list[int]) -> bool:
    """Small enough to hold in memory: few elements, or empty with any dims."""
    return 0 in shape or math.prod(shape) <= MAX_ELEMENTS


def _valid_shapes(rng: random.Random, case: dict) -> dict[str, list[int]]:
    """A random case's shapes at random sizes of its dynamic dims (0 and 1 included)."""
    while True:
        sizes = {name: rng.choice(SIZES) for name in case["dynamic"]}
        shapes = {
            name: [d if isinstance(d, int) else sizes[d] for d in dims]
            for name, dims in case["shapes"].items()
        }
        if all(_fits(shape) for shape in shapes.values()):
            return shapes


def _mutate_shape(rng: random.Random, shape: list[int]) -> list[int]:
    shape = list(shape)
    what = rng.choice(["dim", "dim", "rank+", "rank-", "scalar", "huge"])
    if what == "dim" and shape:
        shape[rng.randrange(len(shape))] = rng.choice(SIZES)
    elif what == "rank+":
        shape.insert(rng.randrange(len(shape) + 1), rng.choice(SIZES))
    elif what == "rank-" and shape:
        del shape[rng.randrange(len(shape))]
    elif what == "scalar":
        shape = []
    elif what == "huge":
        # Dims whose product overflows int64, made empty by a zero dim: ONNX Runtime gets them
        # through ConstantOfShape, so no memory is needed.
        shape = shape or [1]
        for _ in range(rng.randint(1, 2)):
            shape.insert(rng.randrange(len(shape) + 1), rng.choice(HUGE))
        if 0 not in shape:
            shape[rng.randrange(len(shape))] = 0
    while not _fits(shape):
        shape[max(range(len(shape)), key=lambda i: shape[i])] //= 2
    return shape


def _attribute_value(
    rng: random.Random, onnx_type: int, default: Any, declared: str | None = None
) -> list:
    """[onnx type name, value]: usually the right type (values out of range included)."""
    wrong = rng.random() < 0.3
    kind = rng.choice(["FLOAT", "INT", "STRING", "FLOATS", "INTS", "STRINGS", "TENSOR"])
    if not wrong:
        kind = onnx.AttributeProto.AttributeType.Name(onnx_type)
    if kind == "FLOAT":
        value = rng.choice([0.0, -1.0, 1e-30, 1e30, math.inf, -math.inf, math.nan, 3.5e38])
        value = rng.choice([value, default if isinstance(default, float) else 1.0, rng.random()])
    elif kind == "INT":
        value = rng.choice(INTS)
    elif kind == "STRING":
        value = rng.choice(["", "x", "\u00e9\u00e9", "a" * 300, "a\0"])
    elif kind == "FLOATS":
        value = [rng.random() for _ in range(rng.randint(1, 3))]
    elif kind == "INTS":
        value = [rng.choice(INTS) for _ in range(rng.randint(1, 3))]
    elif kind == "STRINGS":
        value = ["x", ""][: rng.randint(1, 2)]
    elif wrong:
        value = rng.random()
    else:
        value = _random_tensor(rng, declared)
    return [kind, value]


def _tensor_json(array: np.ndarray) -> dict:
    """A tensor attribute's value as a case holds it (JSON)."""
    return {
        "tensor": _testing.TENSOR_PROTO[torch.from_numpy(array.copy()).dtype],
        "dims": list(array.shape),
        "values": array.reshape(-1).tolist(),
    }


def _random_tensor(rng: random.Random, declared: str | None) -> dict:
    """A tensor attribute's value: usually of its declared dtype, of any shape (0-d, empty,
    a matrix where a vector is wanted, long), with special values among floating ones."""
    dtype = declared if declared and rng.random() < 0.8 else rng.choice(["float32", "int64"])
    dims = rng.choice([[], [0], [1], [rng.randint(1, 300)], [2, 2], [1, 0, 3]])
    count = math.prod(dims)
    if dtype.startswith("float"):
        specials = [0.0, -0.0, 1.0, math.nan, math.inf, -math.inf, 1e-30, -3.5]
        values = [rng.choice(specials + [rng.random()] * 8) for _ in range(count)]
    else:
        info = np.iinfo(np.dtype(dtype))
        extremes = [int(info.min), int(info.max), 0, 1, rng.randint(0, 9)]
        values = [rng.choice(extremes + [max(int(info.min), -1)]) for _ in range(count)]
    array = np.array(values, dtype=np.dtype(dtype)).reshape(dims)
    return _tensor_json(array)


def _tensor_value(value: dict) -> np.ndarray:
    proto = helper.make_tensor("t", value["tensor"], value["dims"], value["values"])
    return onnx.numpy_helper.to_array(proto)


def make_case(op: str, seed: int, index: int) -> dict:
    """Input `index` of op `op`: shapes, dtypes, values, attributes and how ONNX Runtime gets them.
    kind "valid": one of the op's random cases at random sizes (a result must equal the
    reference); "nonfinite": that with NaN, infinities and signed zeros among the values of
    floating inputs (an error naming the op is allowed, a result must equal the reference);
    "mutated": that, then one to three of wrong dims, ranks, dtypes, values, attributes, arity
    (anything may happen but a crash or disagreeing results)."""
    t = spec(op)
    rng = random.Random(f"{op}:{seed}:{index}")
    case_index = rng.randrange(len(t.RANDOM_CASES))
    case = t.RANDOM_CASES[case_index]
    types = rng.choice(t.TYPES)
    shapes = _valid_shapes(rng, case)
    dtypes = {name: NAMES[t.input_dtype(name, types)] for name in shapes}
    # An attribute that chooses a dtype is set to the binding's, as ONNX's number.
    given = t.typed(case["attributes"], types) if hasattr(t, "typed") else case["attributes"]
    attributes = {
        name: [
            onnx.AttributeProto.AttributeType.Name(t.ATTRIBUTE_TYPES[name]),
            (
                _tensor_json(value)
                if isinstance(value, np.ndarray)
                else _testing.onnx_attribute(value)
            ),
        ]
        for name, value in given.items()
    }
    result = {
        "op": op,
        "index": index,
        "kind": "valid",
        "random_case": case_index,
        "shapes": shapes,
        "dtypes": dtypes,
        "values": "sampled",
        "ints": {},
        "attributes": attributes,
        "arity": 0,
        "declare": rng.choice(["symbolic", "symbolic", "static", "none"]),
        "threads": rng.choice([1, 2]),
        "noncontiguous": rng.random() < 0.2,
        "misaligned": rng.random() < 0.15,
        "seed": rng.randrange(2**31),
    }
    variadic = getattr(t, "VARIADIC_INPUT", None)
    if variadic is not None and rng.random() < 0.15:
        _many_values(rng, variadic, shapes, dtypes)
    if index % 4 == 0:  # a quarter of the inputs are valid by construction
        return result
    if index % 8 == 1 and set(dtypes.values()) <= FLOATING:
        return {**result, "kind": "nonfinite", "values": "nonfinite"}
    result["kind"] = "mutated"
    names = list(shapes)
    for _ in range(rng.randint(1, 3)):
        what = rng.choice(
            ["shape", "shape", "shape", "dtype", "values", "ints", "attribute"] * 3 + ["arity"]
        )
        name = rng.choice(names)
        if what == "shape":
            shapes[name] = _mutate_shape(rng, shapes[name])
        elif what == "dtype":
            dtypes[name] = rng.choice(list(DTYPES))
        elif what == "values":
            result["values"] = rng.choice(["special", "randn", "zeros"])
        elif what == "ints":
            result["ints"][name] = rng.choice(INTS)
        elif what == "attribute" and t.ATTRIBUTES:
            attribute = rng.choice(t.ATTRIBUTES + ["not_an_attribute"])
            if rng.random() < 0.25:
                attributes.pop(attribute, None)  # missing: the default, or an error if required
            elif attribute in getattr(t, "TYPE_CHOOSERS", {}) and rng.random() < 0.5:
                # Another element type's number (int4 for uint4, float32 for int4, ...).
                attributes[attribute] = ["INT", rng.choice(ELEMENT_TYPES)]
            else:
                onnx_type = t.ATTRIBUTE_TYPES.get(attribute, onnx.AttributeProto.INT)
                declared = getattr(t, "TENSOR_ATTRIBUTE_DTYPES", {}).get(attribute, (None,))[0]
                attributes[attribute] = _attribute_value(
                    rng, onnx_type, t.DEFAULTS.get(attribute), declared
                )
        elif what == "arity":
            result["arity"] = rng.choice([-1, 1])
    return result


def _many_values(
    rng: random.Random, variadic: str, shapes: dict[str, list[int]], dtypes: dict[str, str]
) -> None:
    """The variadic input's values repeated, in turn, up to many of them (valid as before: the
    same shapes broadcast to the same result)."""
    values = [name for name in shapes if _testing.input_of(name, variadic) == variadic]
    each = max(1, max(math.prod(shapes[name]) for name in values))
    count = min(rng.choice(MANY_VALUES), max(len(values), MANY_ELEMENTS // each))
    for index in range(len(values), count):
        model = values[index % len(values)]
        name = f"{variadic}_{index}"
        shapes[name], dtypes[name] = list(shapes[model]), dtypes[model]


# ---------------------------------------------------------------- running one input


def _strings(case: dict, name: str, gen: torch.Generator) -> np.ndarray | None:
    """A string input (numpy array of str); None if numpy cannot hold its shape."""
    shape = case["shapes"][name]
    if not _numpy_holds(shape, _testing.STRING):
        return None
    values = case["values"]
    if 0 in shape or values == "zeros":
        return np.full(shape, "", dtype=object)
    if name in case["ints"]:
        return np.full(shape, str(case["ints"][name]), dtype=object)
    data = _testing.random_strings(shape, gen)
    if values == "special":
        picks = torch.randint(0, len(SPECIAL_STRINGS), (data.size,), generator=gen).tolist()
        mask = (torch.rand(data.size, generator=gen) < 0.3).tolist()
        flat = data.reshape(-1)
        for index, (pick, chosen) in enumerate(zip(picks, mask, strict=True)):
            if chosen:
                flat[index] = SPECIAL_STRINGS[pick]
    return data


def _tensor(case: dict, name: str, gen: torch.Generator, sampler) -> torch.Tensor | None:
    """The input tensor; None if PyTorch cannot hold its shape (ONNX Runtime still can). A
    4-bit input is a numpy array of ml_dtypes' int4 / uint4 (None if numpy cannot hold its
    shape): its values drawn as a float tensor's, then rounded and clamped to the type's range
    as other integers are; without a sampler (and for "randn") every value of the type."""
    shape, dtype = case["shapes"][name], DTYPES[case["dtypes"][name]]
    if dtype is _testing.STRING:
        return _strings(case, name, gen)  # type: ignore[return-value]
    four_bit = dtype in _testing.FOUR_BIT
    if four_bit and not _numpy_holds(shape, dtype):
        return None
    if four_bit and 0 in shape:
        return np.empty(shape, dtype=dtype)  # type: ignore[return-value]
    if 0 in shape:
        try:
            return torch.empty(shape, dtype=dtype)
        except RuntimeError:  # "Stride calculation overflowed": no such tensor in PyTorch
            return None
    values = case["values"]
    if name in case["ints"]:
        data = torch.full(shape, case["ints"][name], dtype=torch.float64)
    elif values == "zeros":
        data = torch.zeros(shape, dtype=torch.float64)
    elif values in ("sampled", "nonfinite") and sampler is not None:
        try:
            data = sampler(shape, gen).to(torch.float64)
        except (RuntimeError, IndexError, ValueError):  # the sampler expects another shape
            data = torch.randn(shape, generator=gen, dtype=torch.float64)
        if list(data.shape) != shape:  # a constant sampler (num_groups: torch.tensor(3))
            data = torch.full(shape, data.reshape(-1)[0].item(), dtype=torch.float64)
    elif four_bit:  # each of the 16 nibbles
        data = _testing.sample(shape, gen, dtype)
    else:
        data = torch.randn(shape, generator=gen, dtype=torch.float64)
    if values == "special":
        _special(data, gen)
    elif values == "nonfinite":
        _special(data, gen, NONFINITE)
    if dtype in _testing.COMPLEX:  # the imaginary parts drawn as the real ones
        imaginary = torch.randn(shape, generator=gen, dtype=torch.float64)
        if values == "special":
            _special(imaginary, gen)
        elif values == "zeros":
            imaginary.zero_()
        return torch.complex(data, imaginary).to(dtype)
    if four_bit:
        _, low, high = _testing.FOUR_BIT[dtype]
        data = data.nan_to_num(0.0, high, low).clamp(low, high).round()
        return data.to(torch.int8).numpy().astype(dtype)  # type: ignore[return-value]
    if dtype == torch.bool:
        return data > 0
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        data = data.nan_to_num(0.0, info.max, info.min).clamp(info.min, info.max).round()
        return (
            data.to(torch.int64).to(dtype)
            if dtype != torch.int64
            else _exact_int64(data, case, name)
        )
    return data.to(dtype)


def _special(data: torch.Tensor, gen: torch.Generator, special: list[float] = SPECIAL) -> None:
    """About 30% of the values replaced by `special` ones, in place."""
    flat = data.reshape(-1)
    picks = torch.randint(0, len(special), (flat.numel(),), generator=gen)
    mask = torch.rand(flat.numel(), generator=gen) < 0.3
    flat[mask] = torch.tensor(special, dtype=torch.float64)[picks][mask]


def _exact_int64(data: torch.Tensor, case: dict, name: str) -> torch.Tensor:
    """int64 values beyond float64's 53 bits (2**63 - 1) set exactly."""
    if name in case["ints"]:
        return torch.full(list(data.shape), case["ints"][name], dtype=torch.int64)
    return data.to(torch.int64)


def _inputs(case: dict, t) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs as the runtimes get them, and as the reference does: aligned (PyTorch's own
    complex128 kernels crash on misaligned data, torch 2.13)."""
    gen = torch.Generator().manual_seed(case["seed"])
    samplers = t.RANDOM_CASES[case["random_case"]]["samplers"]
    inputs = {name: _tensor(case, name, gen, samplers.get(name)) for name in case["shapes"]}
    if case.get("misaligned"):
        return {name: _misaligned(tensor) for name, tensor in inputs.items()}, inputs
    return inputs, inputs


def _misaligned(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """The tensor's values in memory starting one byte past an aligned address (as
    torch.frombuffer with an offset gives; numpy views of it and ONNX Runtime values made from
    those start there too)."""
    if tensor is None or _testing.is_strings(tensor) or _testing.is_4bit(tensor):
        return tensor  # a 4-bit input reaches ONNX Runtime as a packed copy
    if tensor.numel() == 0 or tensor.element_size() == 1:
        return tensor
    # The bytes are copied by Python, not by PyTorch's copy_ (which crashes writing complex128
    # to a misaligned address, torch 2.13).
    raw = bytearray(1) + bytearray(tensor.contiguous().reshape(-1).view(torch.uint8).numpy())
    moved = torch.frombuffer(raw, dtype=tensor.dtype, offset=1, count=tensor.numel())
    return moved.reshape(tensor.shape)


def _python_attribute(t, name: str, kind: str, value):
    """An ONNX attribute value as the PyTorch op is called with it: a dtype's number as the
    torch.dtype, where the attribute chooses one (see _torch_dtype_number)."""
    if kind == "TENSOR" and isinstance(value, dict):
        return torch.from_numpy(_tensor_value(value).copy())
    if kind == "TENSOR":
        return torch.tensor(value)
    if _torch_dtype_number(t, name, kind, value):
        return _support.torch_dtype(value)
    return value


def _torch_dtype_number(t, name: str, kind: str, value) -> bool:
    """The attribute chooses a dtype and `value` is ONNX's number of one PyTorch has."""
    chooses = name in getattr(t, "TYPE_CHOOSERS", {})
    numbers = {number for number, _ in _support.DTYPE_NUMBERS.values()}
    return chooses and kind == "INT" and value in numbers


def _python_call_differs(case: dict, t) -> bool:
    """An attribute choosing a dtype holds a value the PyTorch op has no torch.dtype for (it
    takes a dtype there, and an int would be PyTorch's own ScalarType index)."""
    return any(
        name in getattr(t, "TYPE_CHOOSERS", {}) and not _torch_dtype_number(t, name, kind, value)
        for name, (kind, value) in case["attributes"].items()
    )


def _onnx_attribute(name: str, kind: str, value) -> onnx.AttributeProto:
    if kind == "TENSOR" and isinstance(value, dict):
        return helper.make_attribute(
            name, helper.make_tensor("t", value["tensor"], value["dims"], value["values"])
        )
    if kind == "TENSOR":
        return helper.make_attribute(name, helper.make_tensor("t", TensorProto.FLOAT, [], [value]))
    attr_type = getattr(onnx.AttributeProto, kind)
    return helper.make_attribute(name, value, attr_type=attr_type)


def _message(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _names_op(message: str, t) -> bool:
    if t.OP_TYPE in message:
        return True
    torch_op = getattr(t, "TORCH_OP", None)
    return torch_op is not None and str(torch_op).split("::")[-1].split(".")[0] in message


def run_torch(case: dict, t, inputs: dict) -> tuple[str, Any]:
    """("ok", outputs) / ("error", message) / ("skip", why)."""
    if not hasattr(t, "TORCH_OP"):
        return "skip", "no PyTorch side (an op for ONNX Runtime only)"
    if any(_testing.is_strings(tensor) for tensor in inputs.values()):
        return "skip", "PyTorch has no string tensors"
    if any(_testing.is_4bit(tensor) for tensor in inputs.values()):
        return "skip", "PyTorch computes nothing on 4-bit integers"
    if any(tensor is None for tensor in inputs.values()):
        return "skip", "a shape PyTorch cannot hold"
    if _python_call_differs(case, t):
        return "skip", "a dtype attribute PyTorch has no dtype for"
    names = list(case["shapes"])
    args = [inputs[name] for name in names]
    if case["noncontiguous"]:
        args = [a.mT.contiguous().mT if a.dim() >= 2 and a.numel() else a for a in args]
    if case["arity"] < 0:
        names, args = names[:-1], args[:-1]
    elif case["arity"] > 0:
        names, args = names + [names[-1]], args + [args[-1]]
    variadic = getattr(t, "VARIADIC_INPUT", None)
    if variadic is not None:  # its values (last) as one list: one value more or less
        values = [
            a
            for n, a in zip(names, args, strict=True)
            if _testing.input_of(n, variadic) == variadic
        ]
        args = [
            a
            for n, a in zip(names, args, strict=True)
            if _testing.input_of(n, variadic) != variadic
        ]
        args.append(values)
    kwargs = {
        name: _python_attribute(t, name, kind, value)
        for name, (kind, value) in case["attributes"].items()
    }
    try:
        result = t.TORCH_OP(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 (every exception is an outcome)
        return "error", _message(error)
    outputs = list(result) if isinstance(result, tuple) else [result]
    # A variadic output's list of values (a Tensor[] return) spread, as ONNX Runtime gives them.
    return "ok", [value for output in outputs for value in _values_of(output)]


def _values_of(output) -> list:
    return list(output) if isinstance(output, list) else [output]


def _model(case: dict, t) -> tuple[onnx.ModelProto, dict]:
    """A one-node model; inputs with an empty tensor of huge dims come from ConstantOfShape."""
    nodes, graph_inputs, feeds, node_inputs = [], [], {}, []
    for name, shape in case["shapes"].items():
        elem = _testing.TENSOR_PROTO[DTYPES[case["dtypes"][name]]]
        if 0 in shape and _nonzero_product(shape) > MAX_ELEMENTS and elem != TensorProto.STRING:
            graph_inputs.append(
                helper.make_tensor_value_info(f"{name}_shape", TensorProto.INT64, [len(shape)])
            )
            # ONNX Runtime's ConstantOfShape makes no float8 or 4-bit tensor: a float32 one, cast.
            cast = elem in NO_CONSTANT_OF_SHAPE
            zero_elem = TensorProto.FLOAT if cast else elem
            zero = helper.make_tensor(
                "zero", zero_elem, [1], [0] if elem != TensorProto.BOOL else [False]
            )
            made = f"{name}_float32" if cast else name
            nodes.append(helper.make_node("ConstantOfShape", [f"{name}_shape"], [made], value=zero))
            if cast:
                nodes.append(helper.make_node("Cast", [made], [name], to=elem))
            feeds[f"{name}_shape"] = np.array(shape, dtype=np.int64)
        else:
            dims = {
                "symbolic": [f"{name}_d{i}" for i in range(len(shape))],
                "static": shape,
                "none": None,
            }[case["declare"]]
            graph_inputs.append(helper.make_tensor_value_info(name, elem, dims))
            feeds[name] = None  # filled from the tensors
        node_inputs.append(name)
    if case["arity"] < 0:
        node_inputs = node_inputs[:-1]
    elif case["arity"] > 0:
        node_inputs = node_inputs + [node_inputs[-1]]
    node = helper.make_node(t.OP_TYPE, node_inputs, t.output_names(case["shapes"]), domain=t.DOMAIN)
    node.attribute.extend(
        _onnx_attribute(name, kind, value) for name, (kind, value) in case["attributes"].items()
    )
    nodes.append(node)
    graph = helper.make_graph(
        nodes,
        "fuzz",
        graph_inputs,
        [helper.make_value_info(name, onnx.TypeProto()) for name in t.output_names(case["shapes"])],
    )
    # 21: Cast to float8 (from 19) and int4 (21).
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(t.DOMAIN, t.VERSION)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=_testing.IR_VERSION), feeds


def _run_on_numpy(session, t, inputs: dict, feeds: dict) -> list:
    """ONNX Runtime's Python API takes strings as numpy arrays only (no OrtValue of strings):
    a model with a string input runs on numpy arrays (bfloat16 cannot come along)."""
    arrays = {
        name: (
            value
            if value is not None
            else (
                inputs[name]
                if _testing.is_strings(inputs[name])
                else inputs[name].detach().contiguous().numpy()
            )
        )
        for name, value in feeds.items()
    }
    outputs = session.run(t.output_names(inputs), arrays)
    return [
        output if output.dtype == _testing.STRING else torch.from_numpy(output)
        for output in outputs
    ]


def run_ort(case: dict, t, inputs: dict) -> tuple[str, Any]:
    if t.LIBRARY is None:
        return "skip", "the op runs in PyTorch alone"
    if any(d.startswith("complex") for d in case["dtypes"].values()):
        # ONNX Runtime refuses such a model as it loads, before any op of ours runs.
        return "skip", "ONNX Runtime has no complex tensors"
    string_inputs = [name for name, dtype in case["dtypes"].items() if dtype == "string"]
    if any(inputs[name] is None for name in string_inputs):
        return "skip", "a string tensor numpy cannot hold"
    if string_inputs and any(
        d == "bfloat16" or "float8" in d or d in ("int4", "uint4") for d in case["dtypes"].values()
    ):
        # numpy, which strings need, lacks bfloat16 and float8; ONNX Runtime takes 4-bit
        # tensors from numpy only packed (an OrtValue).
        return "skip", "bfloat16, float8 or 4-bit beside strings (run on numpy arrays)"
    model, feeds = _model(case, t)
    try:
        session = _testing.session(model, t.LIBRARY, threads=case["threads"])
        if string_inputs:
            return "ok", _run_on_numpy(session, t, inputs, feeds)
        values = {
            name: (
                _testing.ort_value(inputs[name])
                if value is None
                else ort.OrtValue.ortvalue_from_numpy(value)
            )
            for name, value in feeds.items()
        }
        outputs = session.run_with_ort_values(t.output_names(case["shapes"]), values)
    except Exception as error:  # noqa: BLE001
        if "running ConstantOfShape node" in str(error):  # its own size limit (bytes)
            return "skip", "ConstantOfShape refused the shape"
        return "error", _message(error)
    result = []
    for value in outputs:
        shape = value.shape()
        if 0 in shape:  # numpy cannot hold every empty shape ONNX Runtime can
            result.append(("empty", shape, value.data_type()))
        else:
            result.append(_testing.from_ort_value(value))
    return "ok", result


def _same(a, b) -> str | None:
    """Why two outputs differ (None if they do not): bit for bit, NaN equal to NaN."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        a_shape = list(a[1]) if isinstance(a, tuple) else list(a.shape)
        b_shape = list(b[1]) if isinstance(b, tuple) else list(b.shape)
        return None if a_shape == b_shape else f"shapes {a_shape} and {b_shape}"
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)}"
    if _testing.is_4bit(a):  # numpy arrays: compared as the 8-bit integers they hold
        a, b = _testing.computable(a), _testing.computable(b)
    if a.dtype in _testing.FLOAT8:  # PyTorch compares no float8; float32 holds each exactly
        a, b = a.float(), b.float()
    if a.is_complex():  # part by part
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if a.is_floating_point():
        same = (a == b) | (a.isnan() & b.isnan())
    else:
        same = a == b
    if bool(same.all()):
        return None
    where = (~same).nonzero()[0].tolist()
    return f"at {where}: {a[tuple(where)].item()!r} and {b[tuple(where)].item()!r}"


def judge(case: dict, t, inputs: dict, torch_outcome, ort_outcome) -> list[str]:
    """The problems with the two outcomes of one input (empty: fine)."""
    problems = []
    for runtime, (status, detail) in (("PyTorch", torch_outcome), ("ONNX Runtime", ort_outcome)):
        if status == "error" and not _names_op(detail, t):
            problems.append(f"{runtime} error does not name the op: {detail[:500]}")
    if case["kind"] in ("valid", "nonfinite"):
        for runtime, (status, detail) in (
            ("PyTorch", torch_outcome),
            ("ONNX Runtime", ort_outcome),
        ):
            if status == "error" and case["kind"] == "valid":
                problems.append(f"{runtime} rejected a valid input: {detail[:500]}")
        # The reference needs every input; an op for ONNX Runtime only (no PyTorch side) and
        # inputs PyTorch has no tensors of (strings, 4-bit) are still checked against it.
        if any(v is None for v in inputs.values()):
            return problems
        types = _types_of(case, t)
        try:
            expected = t.expected_outputs(inputs, _attribute_values(case), types)
        except Exception:  # noqa: BLE001
            if case["kind"] == "valid":
                raise
            return problems  # a reference with no answer for NaN (torch.linalg.inv raises)
        for runtime, (status, outputs) in (
            ("PyTorch", torch_outcome),
            ("ONNX Runtime", ort_outcome),
        ):
            if status != "ok":
                continue
            for name, got, want in zip(t.output_names(inputs), outputs, expected, strict=True):
                if isinstance(got, tuple):
                    if list(got[1]) != list(want.shape):
                        problems.append(
                            f"{runtime} {name}: shape {got[1]}, want {list(want.shape)}"
                        )
                    continue
                try:
                    _testing.assert_close(got, want, t.TOLERANCES, f"{runtime}, output {name}")
                except AssertionError as error:
                    problems.append(f"wrong answer: {str(error)[:1500]}")
    # The same inputs and attributes reach both runtimes: the same outcome, the same bits.
    if torch_outcome[0] == "ok" and ort_outcome[0] == "ok":
        for name, a, b in zip(
            t.output_names(inputs), torch_outcome[1], ort_outcome[1], strict=True
        ):
            if (why := _same(a, b)) is not None:
                problems.append(f"PyTorch and ONNX Runtime differ in {name}: {why}")
    elif {torch_outcome[0], ort_outcome[0]} == {"ok", "error"} and _comparable(case):
        failed = torch_outcome if torch_outcome[0] == "error" else ort_outcome
        runtime = "PyTorch" if failed is torch_outcome else "ONNX Runtime"
        problems.append(f"only {runtime} fails: {failed[1][:500]}")
    return problems


def _numpy_holds(shape: list[int], dtype) -> bool:
    """numpy refuses arrays of more than 2**63 - 1 bytes, even empty ones (the PyTorch op then
    fails, naming the op; ONNX Runtime may run it). A string is an object pointer, a 4-bit
    integer one byte (ml_dtypes)."""
    size = (
        dtype.itemsize
        if isinstance(dtype, np.dtype)
        else torch.empty((), dtype=dtype).element_size()
    )
    return _nonzero_product(shape) * size < 2**63


def _comparable(case: dict) -> bool:
    """Whether both runtimes get the same call: every attribute of its declared type, no arity
    change (PyTorch gets Python values, ONNX Runtime typed attributes), inputs numpy holds."""
    t = spec(case["op"])
    if case["arity"] != 0:
        return False
    if not all(
        _numpy_holds(shape, DTYPES[case["dtypes"][name]]) for name, shape in case["shapes"].items()
    ):
        return False
    return all(
        t.ATTRIBUTE_TYPES.get(name) is not None
        and kind == onnx.AttributeProto.AttributeType.Name(t.ATTRIBUTE_TYPES[name])
        for name, (kind, _) in case["attributes"].items()
    )


def _attribute_values(case: dict) -> dict:
    return {
        name: _tensor_value(value) if kind == "TENSOR" and isinstance(value, dict) else value
        for name, (kind, value) in case["attributes"].items()
    }


def _types_of(case: dict, t) -> dict:
    """The binding of a valid input: its inputs' dtypes, and the dtypes attributes choose."""
    chosen = {
        var: case["attributes"][name][1] for name, var in getattr(t, "TYPE_CHOOSERS", {}).items()
    }
    for types in t.TYPES:
        if all(
            NAMES[t.input_dtype(name, types)] == case["dtypes"][name] for name in case["dtypes"]
        ) and all(_testing.TENSOR_PROTO[types[var]] == n for var, n in chosen.items()):
            return types
    raise AssertionError(f"no type combination for {case['dtypes']}")


def _beyond_sanitizer_allocation(torch_outcome) -> bool:
    """PyTorch could not allocate an output (an empty input can ask for a huge one: LayerNorm's
    Mean of X [2**40, 0] is [2**40, 1]). ONNX Runtime would ask too, with operator new, which
    ASan cannot make throw: it aborts the process instead of ONNX Runtime's error status."""
    status, detail = torch_outcome
    return (
        status == "error"
        and "cannot allocate output" in detail
        and "libasan" in os.environ.get("LD_PRELOAD", "")
    )


# ONNX Runtime's custom-op inference types an output only together with a shape, and reports
# an input of unknown rank as one of rank 0: where an input is 0-d or of unknown rank, it
# cannot learn the type an attribute chooses, falls back to the first kernel, and the node
# fails saying so (docs/limitations.md: a documented limit, never a wrong type).
_UNKNOWN_RANK_CHOSEN_TYPE = "give the model's inputs a known rank of at least 1"


def _chosen_type_of_unknown_rank(case: dict, ort_outcome) -> bool:
    status, detail = ort_outcome
    ambiguous = case["declare"] == "none" or any(not s for s in case["shapes"].values())
    return status == "error" and ambiguous and _UNKNOWN_RANK_CHOSEN_TYPE in detail


def run_case(case: dict) -> dict:
    t = spec(case["op"])
    inputs, aligned = _inputs(case, t)
    torch_outcome = run_torch(case, t, inputs)
    if _beyond_sanitizer_allocation(torch_outcome):
        ort_outcome = ("skip", "an output beyond the sanitizer's allocation limit")
    else:
        ort_outcome = run_ort(case, t, inputs)
    if _chosen_type_of_unknown_rank(case, ort_outcome):
        ort_outcome = ("skip", ort_outcome[1])
    problems = judge(case, t, aligned, torch_outcome, ort_outcome)
    return {
        "index": case["index"],
        "torch": (
            torch_outcome[0]
            if torch_outcome[0] == "ok"
            else f"{torch_outcome[0]}: {torch_outcome[1][:200]}"
        ),
        "ort": (
            ort_outcome[0]
            if ort_outcome[0] == "ok"
            else f"{ort_outcome[0]}: {ort_outcome[1][:200]}"
        ),
        "problems": problems,
    }


def main(argv: list[str]) -> int:
    if argv[0] == "--cases":  # inputs given whole, a JSON list (the regression inputs)
        cases = json.loads(argv[1])
    else:
        op, seed, first, count = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
        cases = (make_case(op, seed, index) for index in range(first, first + count))
    # The fuzzer's own test: a sanitizer report at this input (does the harness catch it?).
    crash_at = int(os.environ.get("OPGEN_KERNEL_FUZZ_REPORT_AT", "-1"))
    generated.register_all()
    for case in cases:
        print("CASE " + json.dumps(case), flush=True)
        if case["index"] == crash_at:
            _asan_report()
        print("RESULT " + json.dumps(run_case(case)), flush=True)
    # Leave without exit handlers: an ONNX Runtime thread-pool thread (sessions with 2 threads)
    # can still read a static string of onnxruntime's that exit() has destroyed, an ASan
    # heap-use-after-free inside onnxruntime at exit (seen once in 3000 inputs), not in our code.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _asan_report() -> None:
    """A real AddressSanitizer report (of a read of freed memory), which aborts the process."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    pointer = libc.malloc(8)
    libc.free(ctypes.c_void_p(pointer))
    zero = ctypes.c_void_p(0)
    libc.__asan_report_error(zero, zero, zero, ctypes.c_void_p(pointer), 0, ctypes.c_size_t(8))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
