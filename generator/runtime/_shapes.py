"""The shape rule's helpers in the generated package: dims and shapes as ONNX shape inference
and PyTorch's checks read them, attribute values as every runtime holds them (float32, quoted),
and the ONNX schemas' inference of variadic parameters and of function ops. The generated
modules call them through _support, which re-exports them."""

import json


def fixed_dim(value: int):
    import onnx

    dim = onnx.TensorShapeProto.Dimension()
    dim.dim_value = value
    return dim


class Unknown(Exception):
    """A dim whose value ONNX inference does not know."""


def value(dim) -> int:
    """The value of a TensorShapeProto.Dimension; raises Unknown for a symbolic dim."""
    if not dim.HasField("dim_value"):
        raise Unknown()
    return dim.dim_value


def dim_text(dim) -> str:
    """A TensorShapeProto.Dimension as the kernels' messages spell it: its value, else its name,
    else "?"."""
    if dim.HasField("dim_value"):
        return str(dim.dim_value)
    return dim.dim_param or "?"


def shape_text(dims) -> str:
    return "[" + ", ".join(dim_text(d) for d in dims) + "]"


def computed_dim(compute):
    """A dim computed from other dims: known if every dim it reads is known."""
    import onnx

    try:
        return fixed_dim(compute())
    except Unknown:
        return onnx.TensorShapeProto.Dimension()


def known_true(condition) -> bool:
    """False only when the condition can be evaluated (every dim known) and is false."""
    try:
        return bool(condition())
    except Unknown:
        return True


def float32(value: float) -> float:
    """The float32 nearest to value: every runtime holds a float attribute so."""
    import math
    import struct

    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def float32_value(value):
    """A float or floats attribute as the kernel holds it (None: absent)."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [float32(v) for v in value]
    return float32(value)


def quoted(value) -> str:
    """An attribute value as every runtime's error messages spell it (ints plain, strings as
    JSON, floats as the shortest %.<p>g that reads back as the same float32); the C++
    opgen::quoted is the same."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if not isinstance(value, float):
        return str(value)
    value = float32(value)
    if value != value:
        return "nan"
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"
        if float32(float(text)) == value:
            return text
    return text


def attribute(
    ctx, name: str, default, proto_type: int, wrong_type_message: str, missing_message: str = ""
):
    """An attribute's value in ONNX shape inference (strings decoded); the default when absent.
    One of another type than `proto_type` fails it (as ONNX Runtime's session does: never read
    as a number it is not)."""
    import onnx

    proto = ctx.get_attribute(name)
    if proto is None:
        if default is None:
            raise onnx.shape_inference.InferenceError(missing_message)
        return default
    if proto.type != proto_type:
        found = onnx.AttributeProto.AttributeType.Name(proto.type)
        raise onnx.shape_inference.InferenceError(wrong_type_message + found)
    result = onnx.helper.get_attribute_value(proto)
    # Bytes that are not UTF-8 (a model may hold any) as \xNN, as the C++ opgen::quoted
    # spells them: the value then matches no allowed string, and the message says so.
    return result.decode("utf-8", "backslashreplace") if isinstance(result, bytes) else result


def broadcast_sizes(message: str, *shapes) -> list:
    """numpy broadcasting of torch sizes (symbolic sizes stay symbolic), with our message;
    None stands for an absent optional input."""
    import torch

    shapes = [shape for shape in shapes if shape is not None]
    rank = max(len(shape) for shape in shapes)
    result = [1] * rank
    for shape in shapes:
        for i, size in enumerate(shape, start=rank - len(shape)):
            current = result[i]
            torch._check(
                size == 1 or current == 1 or size == current,
                lambda: message + " and ".join(str(list(s)) for s in shapes),
            )
            if current == 1:
                result[i] = size
    return result


def broadcast_dims(message: str, *shapes) -> list:
    """ONNX's multidirectional broadcasting of TensorShapeProto dims (as ONNX's C++ helper
    does): a known dim other than 1 wins; a single named dim among ones is kept. None stands
    for an absent optional input."""
    import onnx

    shapes = [shape for shape in shapes if shape is not None]
    rank = max(len(shape) for shape in shapes)
    result = []
    for i in range(rank):
        column = [shape[i - rank + len(shape)] for shape in shapes if i >= rank - len(shape)]
        known = {d.dim_value for d in column if d.HasField("dim_value") and d.dim_value != 1}
        if len(known) > 1:  # the shapes reported as the kernels report them
            got = " and ".join(shape_text(shape) for shape in shapes)
            raise onnx.shape_inference.InferenceError(message + got)
        symbolic = [d for d in column if not d.HasField("dim_value")]
        if known or not symbolic:
            result.append(fixed_dim(known.pop() if known else 1))
        elif len({d.dim_param for d in symbolic}) == 1 and symbolic[0].dim_param:
            result.append(symbolic[0])
        else:
            result.append(onnx.TensorShapeProto.Dimension())
    return result


def reduced_sizes(sizes: list, axis: int, keepdims, one) -> list:
    """`sizes` without `axis`, or with a `one` there when keepdims."""
    axis = axis % len(sizes)
    return sizes[:axis] + ([one] if keepdims else []) + sizes[axis + 1 :]


def known_equal(a, b) -> bool:
    """False only when both dims are known numbers that differ."""
    if a.HasField("dim_value") and b.HasField("dim_value"):
        return a.dim_value == b.dim_value
    return True


def infer_through_function(ctx, function, input_names: list[str], output_names: list[str]) -> None:
    """ONNX shape inference for a node of a function op: the node's input types and
    attributes, the function inlined (standard ops only), inferred, outputs copied back. A
    registered schema takes precedence over a model's local function in ONNX's inference, so
    the schema has to do this itself to keep the body's shapes (a broadcast, for instance)."""
    import onnx
    import onnx.inliner
    from onnx import helper

    attributes = [ctx.get_attribute(name) for name in function.attribute]
    # Defaults spelled out: the inliner does not apply them to @references (onnx 1.23).
    attributes += [ctx.get_attribute(d.name) or d for d in function.attribute_proto]
    attributes = [a for a in attributes if a is not None]
    node = helper.make_node(function.name, input_names, output_names, domain=function.domain)
    node.attribute.extend(attributes)
    graph = helper.make_graph(
        [node],
        "infer_through_function",
        [
            helper.make_value_info(name, ctx.get_input_type(index))
            for index, name in enumerate(input_names)
        ],
        [helper.make_value_info(name, onnx.TypeProto()) for name in output_names],
    )
    model = helper.make_model(
        graph,
        opset_imports=list(function.opset_import) + [helper.make_opsetid(function.domain, 1)],
        functions=[function],
        ir_version=10,
    )
    inferred = onnx.shape_inference.infer_shapes(onnx.inliner.inline_local_functions(model))
    types = {value.name: value.type for value in inferred.graph.output}
    types.update({value.name: value.type for value in inferred.graph.value_info})
    for index, name in enumerate(output_names):
        if name in types and types[name].tensor_type.elem_type:
            ctx.set_output_type(index, types[name])


def variadic_types(ctx, first: int, minimum: int, too_few: str, absent: str) -> list:
    """ONNX inference: a variadic input's TypeProtos, from node input `first` on. ONNX's checker
    passes a node with too few values, or an absent ("") one, to inference."""
    import onnx

    count = max(ctx.get_num_inputs() - first, 0)
    if count < minimum:
        raise onnx.shape_inference.InferenceError(too_few + str(count))
    types = []
    for index in range(first, first + count):
        if not ctx.has_input(index):
            raise onnx.shape_inference.InferenceError(absent + str(index))
        types.append(ctx.get_input_type(index))
    return types


def paired_output_types(ctx, first: int, paired_first: int, message: str) -> list:
    """ONNX inference: new TypeProtos for a variadic output's values (node output `first` on),
    one per value of the variadic input it pairs with (node input `paired_first` on)."""
    import onnx

    outputs = max(ctx.get_num_outputs() - first, 0)
    inputs = max(ctx.get_num_inputs() - paired_first, 0)
    if outputs != inputs:
        raise onnx.shape_inference.InferenceError(f"{message}{outputs} for {inputs}")
    return [onnx.TypeProto() for _ in range(outputs)]
