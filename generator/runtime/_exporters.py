"""The exporters' helpers in the generated package (the dynamo translation's and the TorchScript
symbolic's nodes, attributes and refusals), and ONNX's numbers of PyTorch's dtypes, which a
dtype-choosing attribute holds in every runtime. The generated modules call them through
_support, which re-exports them."""

from ._shapes import Unknown


def onnx_list_attribute(name: str, kind: str, values):
    """A list attribute for an onnxscript call, with its ONNX type: onnxscript types an empty
    list INTS, whatever the schema says (None stays None: absent)."""
    if values is None:
        return None
    import onnx_ir as ir

    make = {"INTS": ir.AttrInt64s, "FLOATS": ir.AttrFloat32s, "STRINGS": ir.AttrStrings}[kind]
    return make(name, list(values))


def node_with_values(title: str, op, singles: int, values: int, *args, **kwargs) -> tuple:
    """The dynamo translation's node of an op whose last output is variadic (`title`: how its
    messages name it): `singles` outputs, then `values` values, given back as the exporter
    reads the PyTorch op's: a Tensor[] output alone as a tuple of its values, after others as
    one ONNX sequence (torch 2.13 reads neither a flat nor a nested tuple there). onnxscript
    0.7's call gives a node as many outputs as the schema has parameters, so the node is built
    through the exporter's recorder, which takes the count: torch 2.13's private
    OpRecorder._call_op (torch is pinned; another version that lacks it fails naming it)."""
    import torch

    if not values:  # ONNX has no sequence of no tensors without its element type
        raise RuntimeError(
            f"{title}: the dynamo exporter exports its variadic output with one value or more, "
            "got none"
        )
    try:
        from onnxscript import ir
        from onnxscript._internal import evaluator
        from torch.onnx._internal.exporter import _building

        recorder = evaluator.default()
        if not isinstance(recorder, _building.OpRecorder):
            raise RuntimeError(
                f"{title}: its dynamo translation runs inside torch.onnx.export only (its "
                "recorder builds the node)"
            )
        signature = ir.schemas.OpSignature.from_op_schema(op.op_schema)
        named = _building._construct_named_inputs_and_attrs(signature, args, kwargs)
        outputs = recorder._call_op(signature, *named, singles + values)
    except (AttributeError, ImportError) as error:
        raise RuntimeError(
            f"{title}: the dynamo translation of a variadic output builds its node through "
            f"torch 2.13's exporter internals, which torch {torch.__version__} changed: {error}"
        ) from error
    if not singles:  # the exporter reads a translation's tuple as a Tensor[] output's values
        return tuple(outputs)
    return (*outputs[:singles], recorder.opset.SequenceConstruct(*outputs[singles:]))


def symbolic_node_with_values(
    g, title: str, name: str, singles: int, values: int, *args, **kwargs
) -> tuple:
    """The TorchScript symbolic's node of an op whose last output is variadic (see
    node_with_values): the values as one list value."""
    if not values:  # a list of no values has no type the exporter can give the graph
        raise RuntimeError(
            f"{title}: the TorchScript exporter exports its variadic output with one value or "
            "more, got none"
        )
    count = singles + values
    outputs = g.op(name, *args, outputs=count, **kwargs)
    outputs = list(outputs) if count > 1 else [outputs]
    value_list = g.op("prim::ListConstruct", *outputs[singles:])
    return (*outputs[:singles], value_list) if singles else value_list


# The TorchScript symbolic's output types. g.op leaves a custom op's outputs untyped, and the
# exporter then warns for each ("The shape inference of <domain>::<op> type is missing"); a type
# with a dtype but no sizes is no better: the exporter then takes the sizes traced at export,
# which makes a dynamic dim a fixed one in the graph (and ONNX Runtime warns, run at another
# size, that the model's shape is not the output's). So each output gets its dtype and the
# sizes its shape rule gives (generator/api/python_shapes.py: TorchScriptShapes), None where
# unknown.


def symbolic_sizes(value) -> list | None:
    """A symbolic's input's sizes (ints; None for a dynamic or unknown one); None for an absent
    optional input. Raises Unknown where its rank is unknown."""
    import torch

    if value.node().mustBeNone():
        return None
    value_type = value.type()
    sizes = value_type.varyingSizes() if isinstance(value_type, torch.TensorType) else None
    if sizes is None:
        raise Unknown()
    return list(sizes)


def known(size) -> int:
    """A size from symbolic_sizes; raises Unknown for an unknown one."""
    if size is None:
        raise Unknown()
    return size


def computed_size(compute) -> int | None:
    """A size computed from other sizes: known if every size it reads is known."""
    try:
        return compute()
    except Unknown:
        return None


def broadcast_symbolic_sizes(*shapes) -> list:
    """numpy broadcasting of symbolic_sizes (None: unknown; an absent optional input's None is
    left out). The op ran on these inputs while the model was traced, so they do broadcast: a
    known size other than 1 is the result; else an unknown one, if any, stays unknown."""
    shapes = [shape for shape in shapes if shape is not None]
    rank = max(len(shape) for shape in shapes)
    result = []
    for i in range(rank):
        column = [shape[i - rank + len(shape)] for shape in shapes if i >= rank - len(shape)]
        known_sizes = [size for size in column if size is not None and size != 1]
        result.append(known_sizes[0] if known_sizes else None if None in column else 1)
    return result


def symbolic_type(g, index: int, dtype, sizes=None):
    """The TorchScript type of the symbolic's output `index`: `dtype`, and the sizes `sizes()`
    computes; without `sizes`, or where the rank of an input it reads is unknown, as many unknown
    sizes as the output had when the model was traced (g.original_node is the op's node)."""
    import torch

    try:
        computed = None if sizes is None else sizes()
    except Unknown:
        computed = None
    if computed is None:
        traced = list(g.original_node.outputs())[index].type()
        rank = traced.dim() if isinstance(traced, torch.TensorType) else None
        computed = None if rank is None else [None] * rank
    return torch.TensorType.get().with_dtype(dtype).with_sizes(computed)


def type_values(values, paired, dtype=None) -> None:
    """Types each value of a symbolic's variadic output (a list value, from
    symbolic_node_with_values) as the paired input's value (its shape), with `dtype` if given."""
    from torch.onnx import symbolic_helper

    for value, like in zip(
        symbolic_helper._unpack_list(values), symbolic_helper._unpack_list(paired), strict=True
    ):
        like_type = like.type()
        value.setType(like_type if dtype is None else like_type.with_dtype(dtype))


def given(**attributes) -> dict:
    """The attributes that have a value: an export node leaves out one that is absent (None)."""
    return {name: value for name, value in attributes.items() if value is not None}


def refuse_torchscript_dtypes(
    op: str, values: dict, missing: tuple, fixed: tuple = (), chosen: dict | None = None
) -> None:
    """Raises, naming the op and the tensor, where the TorchScript exporter would fail on a
    dtype it lacks with a message naming neither. `values`: the symbolic's inputs by name;
    `fixed`: (tensor, dtype name) pairs whose dtype is always one it lacks; `chosen`: outputs
    by name, whose dtype an attribute names (ONNX's number)."""
    import torch

    found = []
    for name, value in values.items():
        value_type = None if value is None else value.type()
        if isinstance(value_type, torch.TensorType) and value_type.dtype() in missing:
            found.append((name, str(value_type.dtype()).removeprefix("torch.")))
    found += fixed
    for name, number in (chosen or {}).items():
        dtype = _BY_ONNX_NUMBER.get(number)
        if dtype is not None and getattr(torch, dtype) in missing:
            found.append((name, dtype))
    if found:
        name, dtype = found[0]
        raise ValueError(
            f"{op}: the TorchScript exporter cannot export {dtype} tensors ('{name}' is "
            f'{dtype}); export with exporter="dynamo"'
        )


def refuse_zero_d(op: str, values: dict, choosers: str) -> None:
    """Raises, naming the op and the input, where an exported model would give the op a 0-d
    input whose rank ONNX Runtime cannot tell from an unknown one: there ONNX Runtime cannot give
    the output the element type `choosers` chooses, and refuses the model with a type mismatch
    that names neither (OpDef.zero_d_needs_a_rank). `values`: the exporter's inputs by name."""
    for name, value in values.items():
        if value is not None and _export_rank(value) == 0:
            raise ValueError(
                f"{op}: input '{name}' is 0-d, and {choosers} chooses an output's element type: "
                "ONNX Runtime cannot tell a 0-d input from one of unknown rank, so it cannot "
                "infer that type and would refuse the exported model ('does not match expected "
                f"type'); give '{name}' a dimension (reshape it to [1]) before the op"
            )


def _export_rank(value) -> int | None:
    """The rank of an exporter's value (onnxscript's for the dynamo exporter, TorchScript's),
    None where it is unknown."""
    import torch

    if isinstance(value, torch._C.Value):
        value_type = value.type()
        return value_type.dim() if isinstance(value_type, torch.TensorType) else None
    shape = getattr(value, "shape", None)
    return None if shape is None else len(shape)


def constant_strings(value, default, may_be_absent: bool = False):
    """A list-of-strings argument as the TorchScript exporter hands it to a symbolic (None:
    absent, for an attribute that may be)."""
    if value is None or value.node().mustBeNone():
        if may_be_absent:
            return None
        if default is None:
            raise ValueError("a required list-of-strings attribute was not given")
        return list(default)
    node = value.node()
    if node.kind() == "prim::ListConstruct":
        return [item.toIValue() for item in node.inputs()]
    constant = value.toIValue()
    if constant is None:
        raise ValueError(f"list-of-strings attribute must be a constant, got {node.kind()}")
    return list(constant)


# An attribute that picks an output's element type holds ONNX's number for it (TensorProto's
# DataType; Cast's `to`); the PyTorch op takes a torch.dtype there (a ScalarType argument).
# Each dtype PyTorch and ONNX share, by its torch name: ONNX's number and c10's ScalarType
# index (what the TorchScript exporter hands a symbolic for a ScalarType argument).
DTYPE_NUMBERS = {
    "float32": (1, 6),
    "uint8": (2, 0),
    "int8": (3, 1),
    "uint16": (4, 27),
    "int16": (5, 2),
    "int32": (6, 3),
    "int64": (7, 4),
    "bool": (9, 11),
    "float16": (10, 5),
    "float64": (11, 7),
    "uint32": (12, 28),
    "uint64": (13, 29),
    "complex64": (14, 9),
    "complex128": (15, 10),
    "bfloat16": (16, 15),
    "float8_e4m3fn": (17, 24),
    "float8_e4m3fnuz": (18, 26),
    "float8_e5m2": (19, 23),
    "float8_e5m2fnuz": (20, 25),
    "float8_e8m0fnu": (24, 44),
}


_BY_ONNX_NUMBER = {onnx: name for name, (onnx, _) in DTYPE_NUMBERS.items()}
_BY_SCALAR_TYPE = {index: name for name, (_, index) in DTYPE_NUMBERS.items()}


def onnx_dtype(dtype, default: int = 0) -> int:
    """A dtype argument as ONNX's number of it (None: `default`); 0 (UNDEFINED, which no op
    allows: the op's check of the attribute names it) for a torch.dtype ONNX lacks and for
    anything else."""
    import torch

    if dtype is None:
        return default
    name = str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else ""
    return DTYPE_NUMBERS.get(name, (0, -1))[0]


def onnx_dtype_of_scalar_type(index, default: int = 0) -> int:
    """A ScalarType argument as the TorchScript exporter gives it (c10's index; None:
    `default`), as ONNX's number."""
    if index is None:
        return default
    name = _BY_SCALAR_TYPE.get(index)
    return DTYPE_NUMBERS[name][0] if name is not None else 0


def torch_dtype(number: int):
    """ONNX's number of a dtype (one the op allows: checked before) as a torch.dtype."""
    import torch

    return getattr(torch, _BY_ONNX_NUMBER[int(number)])
