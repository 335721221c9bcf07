"""What each target carries of the operator model: one table that the parser checks every
definition against (a definition asking a target for what it cannot carry is a located error
naming both) and that docs/capabilities.md publishes (`matrix_markdown`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import assert_never

from generator.model.nodes import Function
from generator.model.op import Kernel, OpDef, ProvidedBy
from generator.model.tensors import (
    Differentiation,
    OptionalArity,
    SingleArity,
    TensorParam,
    VariadicArity,
)
from generator.model.types import (
    AttrType,
    DType,
    MapType,
    OptionalType,
    SequenceType,
    SparseTensorType,
    TensorType,
    ValueType,
)


class Target(Enum):
    """What opgen generates for an op, as the matrix's columns name it."""

    onnx_schema = "ONNX schema (Python)"
    cpp_schema = "ONNX schema (C++)"
    ort_library = "ONNX Runtime library"
    pybind = "pybind11 module"
    torch_native = "PyTorch, native"
    torch_python = "PyTorch, Python APIs"
    cuda = "CUDA kernels"
    exporters = "ONNX exporters"
    parity_tests = "parity tests"


class Feature(Enum):
    """What a definition can ask for beyond a single dense tensor of a kernel dtype."""

    no_inputs = "an op without inputs (as ONNX's Constant)"
    variadic_input = "variadic inputs"
    heterogeneous_variadic = "heterogeneous variadic parameters"
    variadic_output = "variadic outputs"
    optional_output = "optional outputs"
    optional_input_first = "an optional input before a required one"
    sequence_type = "sequence types (seq)"
    map_type = "map types (map)"
    optional_type = "optional types (optional)"
    sparse_tensor_type = "sparse tensors"
    unsigned_wide = "uint16, uint32, uint64"
    complex = "complex64, complex128"
    float8 = "float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz)"
    float8e8m0 = "float8e8m0"
    int4 = "int4, uint4"
    sub_byte = "int2, uint2, float4e2m1"
    float6 = "float6 (e2m3, e3m2)"
    string = "string tensors"
    unbound_type_variable = "a type variable no required input binds"
    type_chosen_by_attribute = "a type variable an attribute chooses (chosen_by)"
    optional_attribute_without_default = "an optional attribute without a default"
    tensor_attribute = "tensor attributes (tensor)"
    tensor_list_attribute = "tensor list attributes (tensors)"
    sparse_tensor_attribute = "sparse tensor attributes"
    graph_attribute = "graph attributes (graph, graphs)"
    type_proto_attribute = "type attributes (type_proto, type_protos)"
    differentiation = "differentiation categories"


@dataclass(frozen=True)
class Carried:
    note: str = ""  # a limit within the target, where it has one


@dataclass(frozen=True)
class NotYet:
    """opgen could generate it for this target and does not yet."""

    why: str = ""  # what the runtime offers, where that is not obvious


@dataclass(frozen=True)
class Never:
    """The runtime itself cannot hold it."""

    reason: str
    # Nothing in the runtime holds it (not only its custom-op API): ONNX Runtime cannot run an
    # ONNX function or its own op on it either.
    whole_runtime: bool = False


@dataclass(frozen=True)
class NotApplicable:
    """Nothing in this target holds it (schema metadata, for one): accepted, and ignored."""

    reason: str


Support = Carried | NotYet | Never | NotApplicable

_NO_STRINGS = Never("PyTorch has no string tensors")
_ORT_VALUES = Never("ONNX Runtime's custom-op API takes tensors only")
_TORCH_VALUES = Never("a PyTorch op takes tensors, lists of tensors and scalars only")
_ORT_NO_ATTRIBUTE = Never("ONNX Runtime's custom-op API reads no graph attribute")
_NO_TYPE_ATTRIBUTE = Never("the runtime has no type values")
_NO_FLOAT6 = Never("the runtime has no float6 element type", whole_runtime=True)
_ORT_NO_COMPLEX = Never(
    "ONNX Runtime 1.31 has no complex tensors (no model with one loads)", whole_runtime=True
)
_EXPORT_NO_COMPLEX = Never(
    "neither exporter exports a custom op on complex tensors (torch 2.13: the dynamo exporter "
    "has no complex translations for custom ops, the TorchScript exporter no complex tensors)"
)

_TORCH_INT4 = NotYet(
    "torch.int4 and torch.uint4 are shell dtypes (one per byte, no kernels, only .view() to "
    "int8 or uint8), which an op could take"
)


def _everywhere(**notes: str) -> dict[Target, Support]:
    """Every target carries the feature; `notes` give a target's limit within it."""
    return {target: Carried(notes.get(target.name, "")) for target in Target}


def _only_schemas(**others: Support) -> dict[Target, Support]:
    """The Python schema carries the feature; the C++ schema and the code targets not yet,
    unless given."""
    row: dict[Target, Support] = {target: NotYet() for target in Target}
    row[Target.onnx_schema] = Carried()
    for name, support in others.items():
        row[Target[name]] = support
    return row


_TORCH_NEVER = {"torch_native": _TORCH_VALUES, "torch_python": _TORCH_VALUES}

# An op without inputs: its outputs' shapes and types come from attributes alone.
_NO_INPUTS_GLUE = NotYet("opgen's generated code assumes a first input (its device, dtype, shape)")
_NO_INPUTS: dict[Target, Support] = dict.fromkeys(Target, _NO_INPUTS_GLUE)
_NO_INPUTS |= {
    Target.onnx_schema: Carried("an interface-only op's, which has no shape inference"),
    Target.torch_native: NotYet(
        "PyTorch's dispatcher picks a kernel by the tensor arguments, and with none finds no "
        "CPU or CUDA kernel: the op needs a backend-independent kernel and a device argument"
    ),
    Target.torch_python: NotYet(
        "torch.library.custom_op takes an op of attributes alone (opcheck and torch.export "
        "pass in torch 2.13); the generated module and its tests take a first input"
    ),
    Target.parity_tests: NotYet(
        "the generated tests draw, retype and move a first input; cases without inputs "
        "(random cases without shapes) are not drawn yet"
    ),
}

TABLE: dict[Feature, dict[Target, Support]] = {
    Feature.no_inputs: _NO_INPUTS,
    Feature.variadic_input: _everywhere(
        cpp_schema="inference broadcasts every value",
        ort_library="homogeneous, with its minimum (min: 0 where a required input binds its "
        "type); the kernel gets "
        "opgen::Inputs<T>, a vector of views",
        pybind="a list of arrays",
        torch_native="Tensor[]; its gradient formula gives a list, one per value",
        torch_python="Tensor[]; gradient formulas with 'library' (not yet 'custom_op')",
        exporters="to the op's own node (an export node passing its values to another op: "
        "not yet)",
        cuda="the kernel gets opgen::Inputs<T>, views of device memory",
        parity_tests="test cases list its values; vmap runs one call per sample",
    ),
    Feature.heterogeneous_variadic: _only_schemas(cpp_schema=Carried()),
    Feature.variadic_output: _everywhere(
        cpp_schema="inference gives value i the shape of the paired input's value i",
        ort_library="homogeneous, paired with the variadic input (same_shape_as it: one value "
        "per value, each of its shape); the kernel gets opgen::Outputs<T>, a vector of views",
        pybind="a list of arrays",
        torch_native="a Tensor[] return",
        torch_python="a Tensor[] return",
        exporters="the op's node gets one output per value",
        cuda="the kernel gets opgen::Outputs<T>, views of device memory",
        parity_tests="test cases list its values; the reference returns a list",
    ),
    Feature.optional_output: _everywhere(
        **{
            name: "computes every output; the kernel's pointer is never null"
            for name in ("pybind", "torch_native", "torch_python", "cuda")
        }
    ),
    Feature.optional_input_first: _everywhere(),
    Feature.sequence_type: _only_schemas(ort_library=_ORT_VALUES, pybind=_ORT_VALUES),
    Feature.map_type: _only_schemas(ort_library=_ORT_VALUES, pybind=_ORT_VALUES, **_TORCH_NEVER),
    Feature.optional_type: _only_schemas(ort_library=_ORT_VALUES, pybind=_ORT_VALUES),
    Feature.sparse_tensor_type: _only_schemas(ort_library=_ORT_VALUES, pybind=_ORT_VALUES),
    Feature.unsigned_wide: _everywhere(
        exporters="the dynamo exporter; the TorchScript exporter has no such tensors, and an "
        "op's TorchScript export of them raises, naming the op and the tensor"
    ),
    Feature.complex: {
        Target.onnx_schema: Carried(),
        Target.cpp_schema: Carried(),
        Target.ort_library: _ORT_NO_COMPLEX,
        Target.pybind: Carried("numpy's complex64 and complex128"),
        Target.torch_native: Carried(
            "torch.complex64, torch.complex128; the kernel gets std::complex<float>, "
            "std::complex<double>; a kernel op on them runs in PyTorch alone "
            "(kernel: {onnxruntime: false})"
        ),
        Target.torch_python: Carried("torch.complex64, torch.complex128"),
        Target.cuda: Carried(
            "the kernel gets std::complex<float>, std::complex<double> pointers (the layout of "
            "cuda::std::complex, which device code uses); in PyTorch alone"
        ),
        Target.exporters: _EXPORT_NO_COMPLEX,
        Target.parity_tests: Carried(
            'test values written as numbers or strings Python\'s complex() reads ("1-2j", '
            '"nan+1j"); random values complex normal'
        ),
    },
    Feature.float8: _everywhere(
        cpp_schema="registered where the ONNX it is built against has them (1.14 on; against "
        "Debian's 1.12 a type constraint leaves them out)",
        ort_library="the kernel gets opgen::float8e4m3fn, ...: bits, with ONNX Cast's "
        "conversions from and to float (saturating or not)",
        pybind="ml_dtypes' numpy types",
        torch_native="torch.float8_e4m3fn, ...",
        torch_python="torch.float8_e4m3fn, ...",
        cuda="the kernel gets opgen::float8e4m3fn, ...: their bits (the conversions are host "
        "code; cuda_fp8.h's types have the same layout)",
        parity_tests="ONNX Runtime's Python API has no numpy type for them: inputs cross as "
        "their bits, outputs through a Cast to float32; compared in float32; opcheck's schema "
        "check (torch.allclose has no float8 kernel) made bit for bit instead",
    ),
    Feature.float8e8m0: _only_schemas(
        ort_library=Never("ONNX Runtime 1.31's C++ API has no float8e8m0 type")
    ),
    Feature.int4: _only_schemas(
        cpp_schema=Carried(
            "registered where the ONNX it is built against has them (1.16 on; against Debian's "
            "1.12 a type constraint leaves them out)"
        ),
        ort_library=Carried(
            "the kernel gets opgen::int4 and opgen::uint4 one per byte: ONNX Runtime's two per "
            "byte are unpacked before it runs and packed after (a copy each way)"
        ),
        pybind=_TORCH_INT4,
        torch_native=_TORCH_INT4,
        torch_python=_TORCH_INT4,
        exporters=_TORCH_INT4,
        cuda=NotYet("ONNX Runtime's two values per byte are unpacked on the host"),
        parity_tests=Carried(
            "numpy arrays of ml_dtypes.int4 and uint4, which cross into ONNX Runtime packed "
            "and come back through a Cast to int8 or uint8; the reference sees torch int8 or "
            "uint8 tensors"
        ),
    ),
    Feature.sub_byte: _only_schemas(),
    Feature.float6: _only_schemas(
        ort_library=_NO_FLOAT6,
        pybind=_NO_FLOAT6,
        torch_native=_NO_FLOAT6,
        torch_python=_NO_FLOAT6,
    ),
    Feature.string: {
        Target.onnx_schema: Carried(),
        Target.cpp_schema: Carried(),
        Target.ort_library: Carried(
            "the kernel reads const std::string and writes std::string elements, byte for "
            "byte (embedded NULs kept, no encoding checked), also into an output it allocates"
        ),
        Target.pybind: Never("it serves PyTorch ops, and PyTorch has no string tensors"),
        Target.torch_native: _NO_STRINGS,
        Target.torch_python: _NO_STRINGS,
        Target.exporters: _NO_STRINGS,
        Target.cuda: Never("device memory holds no string tensors (PyTorch and ONNX Runtime)"),
        Target.parity_tests: Carried(
            "numpy arrays of str (dtype object); the reference is a Python expression over "
            "them (np is numpy)"
        ),
    },
    Feature.unbound_type_variable: _only_schemas(),
    Feature.type_chosen_by_attribute: {
        Target.onnx_schema: Carried("inference gives the outputs the attribute's dtype"),
        Target.cpp_schema: Carried("inference gives the outputs the attribute's dtype"),
        Target.ort_library: Carried(
            "a kernel per dtype, which ONNX Runtime picks by the node's inferred output type"
        ),
        Target.pybind: Carried("it takes ONNX's number, from the PyTorch op's torch.dtype"),
        Target.torch_native: Carried(
            "a ScalarType argument (a torch.dtype; ScalarType? with None for the default, which "
            "AOTInductor takes); kernel ops only"
        ),
        Target.torch_python: Carried("a torch.dtype argument (ScalarType); kernel ops only"),
        Target.exporters: Carried("the node gets the torch.dtype's ONNX number"),
        Target.cuda: Carried("a kernel per dtype, as on the CPU"),
        Target.parity_tests: Carried(
            "every dtype the attribute may name; the reference sees the variable as a torch "
            "dtype (int4 and uint4: numpy dtypes, whose .name says which)"
        ),
    },
    Feature.optional_attribute_without_default: _everywhere(),
    Feature.tensor_attribute: _only_schemas(
        cpp_schema=Carried("a kernel op's (a function op's: not yet)"),
        ort_library=Carried(
            "of the element type the definition declares (dtype: float16, float32, float64 or "
            "an integer type of 8 to 64 bits; not yet bool, strings, bfloat16, float8, 4-bit); "
            "the kernel gets opgen::TensorAttribute<T>, its values and shape, copied once when "
            "ONNX Runtime creates the kernel; graph-time inference does not read it"
        ),
        pybind=NotYet("it serves PyTorch ops, whose side is not carried yet"),
        torch_native=NotYet("a Tensor argument"),
        torch_python=NotYet("a Tensor argument"),
        cuda=NotYet("its values are copied on the host, not to the device"),
        parity_tests=Carried(
            "test cases write its value as nested lists; the reference sees a torch tensor"
        ),
    ),
    Feature.tensor_list_attribute: _only_schemas(
        ort_library=Never("ONNX Runtime's custom-op API reads no TENSORS attribute")
    ),
    Feature.sparse_tensor_attribute: _only_schemas(ort_library=_ORT_NO_ATTRIBUTE),
    Feature.graph_attribute: _only_schemas(ort_library=_ORT_NO_ATTRIBUTE, **_TORCH_NEVER),
    Feature.type_proto_attribute: _only_schemas(
        ort_library=_NO_TYPE_ATTRIBUTE, torch_native=_NO_TYPE_ATTRIBUTE
    ),
    Feature.differentiation: {
        target: (
            Carried()
            if target in (Target.onnx_schema, Target.cpp_schema)
            else NotApplicable("schema metadata; PyTorch's gradients come from 'gradients'")
        )
        for target in Target
    },
}


def targets_of(op: OpDef) -> tuple[Target, ...]:
    """What opgen generates for the op."""
    targets: list[Target] = []
    if op.defines_onnx_op:
        targets.append(Target.onnx_schema)
    match op.implementation:
        case Kernel(in_onnxruntime=in_onnxruntime):
            targets.append(Target.cpp_schema)
            if in_onnxruntime:
                targets.append(Target.ort_library)
            if op.has_pybind_binding:
                targets.append(Target.pybind)
            if op.kernel is not None and op.kernel.cuda_file is not None:
                targets.append(Target.cuda)
        case Function():
            targets.append(Target.cpp_schema)
        case ProvidedBy() | None:
            pass
        case _:
            assert_never(op.implementation)
    if op.torch is not None:
        if op.new_torch_op:
            targets.append(Target.torch_native if op.has_native_torch_op else Target.torch_python)
        if op.export:  # none for a kernel that runs in PyTorch alone, unless given
            targets.append(Target.exporters)
    if not op.is_interface_only:
        targets.append(Target.parity_tests)
    return tuple(targets)


@dataclass(frozen=True)
class Use:
    """A definition's use of a feature, at a field."""

    feature: Feature
    field_path: str


def _dtype_feature(dtype: DType) -> Feature | None:
    if dtype.is_kernel_dtype:
        return None
    match dtype:
        case DType.uint16 | DType.uint32 | DType.uint64:
            return Feature.unsigned_wide
        case DType.complex64 | DType.complex128:
            return Feature.complex
        case DType.string:
            return Feature.string
        case DType.float8e4m3fn | DType.float8e4m3fnuz | DType.float8e5m2 | DType.float8e5m2fnuz:
            return Feature.float8
        case DType.float8e8m0:
            return Feature.float8e8m0
        case DType.int4 | DType.uint4:
            return Feature.int4
        case DType.int2 | DType.uint2 | DType.float4e2m1:
            return Feature.sub_byte
        case DType.float6e2m3 | DType.float6e3m2:
            return Feature.float6
    raise AssertionError(f"no feature for dtype {dtype}")


def _type_features(value_type: ValueType) -> list[Feature]:
    match value_type:
        case TensorType(dtype):
            feature = _dtype_feature(dtype)
            return [feature] if feature else []
        case SparseTensorType(dtype):
            feature = _dtype_feature(dtype)
            return [Feature.sparse_tensor_type] + ([feature] if feature else [])
        case SequenceType(element):
            return [Feature.sequence_type] + _type_features(element)
        case MapType(key, value):
            key_feature = _dtype_feature(key)
            return (
                [Feature.map_type]
                + ([key_feature] if key_feature else [])
                + (_type_features(value))
            )
        case OptionalType(element):
            return [Feature.optional_type] + _type_features(element)
        case _:
            assert_never(value_type)


_ATTRIBUTE_FEATURES = {
    AttrType.tensor: Feature.tensor_attribute,
    AttrType.tensors: Feature.tensor_list_attribute,
    AttrType.sparse_tensor: Feature.sparse_tensor_attribute,
    AttrType.sparse_tensors: Feature.sparse_tensor_attribute,
    AttrType.graph: Feature.graph_attribute,
    AttrType.graphs: Feature.graph_attribute,
    AttrType.type_proto: Feature.type_proto_attribute,
    AttrType.type_protos: Feature.type_proto_attribute,
}


def _parameter_uses(key: str, index: int, param: TensorParam, after: bool) -> list[Use]:
    """`after`: a required parameter comes after this one."""
    where = f"{key}[{index}]"
    uses: list[Use] = []
    match param.arity:
        case VariadicArity(_, homogeneous):
            feature = Feature.variadic_input if key == "inputs" else Feature.variadic_output
            uses.append(Use(feature, f"{where}.variadic"))
            if not homogeneous:
                uses.append(Use(Feature.heterogeneous_variadic, f"{where}.variadic"))
        case OptionalArity():
            if key == "outputs":
                uses.append(Use(Feature.optional_output, f"{where}.optional"))
            elif after:
                uses.append(Use(Feature.optional_input_first, f"{where}.optional"))
        case SingleArity():
            pass
        case _:
            assert_never(param.arity)
    if param.concrete is not None:
        uses += [Use(f, f"{where}.type") for f in _type_features(param.concrete)]
    if param.differentiation is not Differentiation.unknown:
        uses.append(Use(Feature.differentiation, f"{where}.differentiable"))
    return uses


def uses_of(op: OpDef) -> tuple[Use, ...]:
    """Every use the op makes of a feature, in the order of its fields."""
    uses: list[Use] = [] if op.inputs else [Use(Feature.no_inputs, "inputs")]
    bound = {t.type_var for t in op.inputs if t.type_var and not t.optional and not t.variadic}
    bound |= {  # a variadic input binds its type variable when it has at least one value
        t.type_var
        for t in op.inputs
        if t.type_var and isinstance(t.arity, VariadicArity) and t.arity.min_arity >= 1
    }
    for constraint in op.type_constraints:
        where = f"type_constraints.{constraint.name}"
        for value_type in constraint.types:
            uses += [Use(f, where) for f in _type_features(value_type)]
        if constraint.chosen_by is not None:
            uses.append(Use(Feature.type_chosen_by_attribute, f"{where}.chosen_by"))
        elif constraint.name not in bound:
            uses.append(Use(Feature.unbound_type_variable, where))
    for key, params in (("inputs", op.inputs), ("outputs", op.outputs)):
        for index, param in enumerate(params):
            after = any(not p.optional for p in params[index + 1 :])
            uses += _parameter_uses(key, index, param, after)
    for index, attribute in enumerate(op.attributes):
        where = f"attributes[{index}]"
        feature = _ATTRIBUTE_FEATURES.get(attribute.type)
        if feature is not None:
            uses.append(Use(feature, f"{where}.type"))
        if attribute.optional_without_default:
            uses.append(Use(Feature.optional_attribute_without_default, f"{where}.required"))
    return tuple(dict.fromkeys(uses))


def refusals(op: OpDef) -> list[tuple[str, str]]:
    """(field path, message) for each use of a feature that a target the op asks for does not
    carry."""
    targets = targets_of(op)
    problems = []
    for use in uses_of(op):
        row = TABLE[use.feature]
        refusing = [(t, row[t]) for t in targets if not isinstance(row[t], Carried | NotApplicable)]
        ort = row[Target.ort_library]
        if op.runs_in_onnxruntime and not op.has_ort_kernel:  # a function, or ONNX Runtime's op
            if isinstance(ort, Never) and ort.whole_runtime:
                refusing.append((Target.ort_library, ort))
        if not refusing:
            continue
        # Targets refusing for one reason are named together, the reason once.
        by_reason: dict[str, list[str]] = {}
        for target, support in refusing:
            match support:
                case NotYet(why):
                    reason = f"not yet{': ' + why if why else ''}"
                case Never(reason=reason):
                    pass
                case Carried() | NotApplicable():
                    continue
                case _:
                    assert_never(support)
            by_reason.setdefault(reason, []).append(target.value)
        reasons = "; ".join(f"{', '.join(names)} ({reason})" for reason, names in by_reason.items())
        problems.append(
            (
                use.field_path,
                f"{use.feature.value}: not carried by {reasons}; {_way_out(op, row, targets)}",
            )
        )
    return problems


_PYTORCH_TARGETS = (Target.pybind, Target.torch_native, Target.torch_python, Target.exporters)


def _way_out(op: OpDef, row: dict[Target, Support], targets: tuple[Target, ...]) -> str:
    """What the definition can drop to keep the feature: its PyTorch side, its ONNX Runtime
    kernel, or all but the interface."""
    refused = {t for t in targets if not isinstance(row[t], Carried | NotApplicable)}
    if refused == {Target.cuda}:
        return "without 'cuda' in 'kernel' the op runs on the CPU alone (docs/capabilities.md)"
    if op.kernel is not None and refused <= set(_PYTORCH_TARGETS):
        return "without 'torch' the op runs in ONNX Runtime alone (docs/capabilities.md)"
    in_onnxruntime = {Target.ort_library, Target.exporters}  # no export without a kernel there
    if (
        op.kernel is not None
        and op.torch is not None
        and Target.ort_library in refused
        and refused <= in_onnxruntime
    ):
        return (
            "with 'kernel: {onnxruntime: false}' the op runs in PyTorch alone "
            "(docs/capabilities.md)"
        )
    return (
        "an op with only op, domain, version and its interface (no kernel, function, "
        "provided_by or torch) gets the ONNX schema alone (docs/capabilities.md)"
    )


def _cell(support: Support) -> str:
    match support:
        case Carried(note):
            return f"yes: {note}" if note else "yes"
        case NotYet(why):
            return f"not yet: {why}" if why else "not yet"
        case Never(reason):
            return f"no: {reason}"
        case NotApplicable(reason):
            return f"n/a: {reason}"
        case _:
            assert_never(support)


def matrix_markdown() -> str:
    """docs/capabilities.md: the table as Markdown."""
    header = "| feature | " + " | ".join(t.value for t in Target) + " |"
    rule = "|---" * (len(Target) + 1) + "|"
    rows = [
        f"| {feature.value} | " + " | ".join(_cell(TABLE[feature][t]) for t in Target) + " |"
        for feature in Feature
    ]
    intro = (
        "# What each target carries\n\n"
        "<!-- Generated from generator/model/capabilities.py by tests/test_capabilities.py "
        "(OPGEN_WRITE_CAPABILITIES=1 rewrites it); do not edit. -->\n\n"
        "A single dense tensor of float16, bfloat16, float32, float64, int8, int16, int32, "
        "int64, uint8 or bool, optional inputs after the required ones, and attributes of the "
        "types bool, int, float, string, ints, floats and strings with or without a default: "
        "every target carries those (and uint16, uint32 and uint64 too, but for the TorchScript "
        "exporter). The rest, by target. opgen refuses a definition that asks "
        "a target for what this table says it does not carry, naming the field, the feature "
        'and the target; nothing is approximated. "not yet": opgen could and does not yet; '
        '"no": the runtime cannot; "n/a": accepted, nothing in the target holds it. Names that Python, C++ or the generated code reserve '
        "(`global`, `class`, `shape`, ...) are accepted in interface-only ops, whose names "
        "only the schemas spell.\n\n"
        "Which targets an op gets: every op defining an ONNX op, the Python schema; a kernel, "
        "the C++ schema and the ONNX Runtime library (not with `onnxruntime: false`: an op for "
        "PyTorch alone), and with a `torch` side the pybind11 "
        "module; a kernel with `cuda`, CUDA kernels (in PyTorch and ONNX Runtime); a function, the C++ "
        "schema; a `torch` side, its PyTorch registration and, unless its kernel is for "
        "PyTorch alone, the exporters; every op but an "
        "interface-only one (only `op`, `domain`, `version`, type constraints, inputs, outputs "
        "and attributes, as `opgen import` writes), parity tests.\n\n"
    )
    return intro + "\n".join([header, rule, *rows]) + "\n"
