"""Python spellings: PyTorch dtypes and schema types, literals, and the shape rule on torch and
ONNX shapes."""

from __future__ import annotations

from generator.model import (
    AttrType,
    DimEqualCheck,
    DimRef,
    DType,
    OpDef,
    ShapePart,
)

TORCH_DTYPE = {d: f"torch.{d.value}" for d in DType}
NUMPY_DTYPE = {d: ("bool_" if d is DType.bool else d.value) for d in DType}
ANNOTATION = {
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "list[int]",
    AttrType.floats: "list[float]",
    AttrType.strings: "list[str]",
}


def literal(value) -> str:
    """A Python literal (tuples become lists, which is what PyTorch schemas accept)."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, float):
        text = repr(value)
        return {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}.get(
            text, text
        )
    return repr(value)


def _slice(part: ShapePart) -> str:
    start = "" if part.start is None else str(part.start)
    stop = "" if part.stop is None else str(part.stop)
    return f"{start}:{stop}"


# ---- torch shapes (fake kernel): torch._check so that symbolic sizes stay symbolic


def torch_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "condition": f"{rank.input}.dim() {relation} {rank.rank}",
                "message": literal(rank.message + ", got shape "),
                "got": f"list({rank.input}.shape)",
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _torch_dim(check.a), _torch_dim(check.b)
            condition, got = f"{a} == {b}", f'f"{{{a}}} and {{{b}}}"'
        else:
            a = _torch_dim(check.ref)
            condition, got = f"{a} == {check.value}", a
        checks.append(
            {"condition": condition, "message": literal(check.message + ", got "), "got": got}
        )
    return checks


def _torch_dim(ref: DimRef) -> str:
    return f"{ref.input}.shape[{ref.axis}]"


def torch_output_shapes(op: OpDef) -> list[dict]:
    shapes = []
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}.shape[{_slice(part)}]")
            elif part.kind == "dim":
                parts.append(f"{part.input}.shape[{part.axis}]")
            else:
                parts.append(str(part.value))
        shapes.append({"name": out.output, "expr": "[" + ", ".join(parts) + "]"})
    return shapes


# ---- ONNX shapes (Python OpSchema inference): lists of TensorShapeProto.Dimension


def onnx_checks(op: OpDef) -> list[dict]:
    rule = op.shape_rule
    checks = []
    for rank in rule.rank_checks:
        relation = "==" if rank.exact else ">="
        checks.append(
            {
                "condition": f"len({rank.input}_dims) {relation} {rank.rank}",
                "message": literal(rank.message),
            }
        )
    for check in rule.dim_checks:
        if isinstance(check, DimEqualCheck):
            a, b = _onnx_dim(check.a), _onnx_dim(check.b)
            condition = f"_support.known_equal({a}, {b})"
        else:
            condition = (
                f"_support.known_equal({_onnx_dim(check.ref)}, _support.fixed_dim({check.value}))"
            )
        checks.append({"condition": condition, "message": literal(check.message)})
    return checks


def _onnx_dim(ref: DimRef) -> str:
    return f"{ref.input}_dims[{ref.axis}]"


def onnx_output_shapes(op: OpDef) -> list[dict]:
    shapes = []
    index = {o.name: i for i, o in enumerate(op.outputs)}
    for out in op.shape_rule.outputs:
        parts = []
        for part in out.parts:
            if part.kind == "slice":
                parts.append(f"*{part.input}_dims[{_slice(part)}]")
            elif part.kind == "dim":
                parts.append(f"{part.input}_dims[{part.axis}]")
            else:
                parts.append(f"_support.fixed_dim({part.value})")
        shapes.append(
            {"name": out.output, "index": index[out.output], "expr": "[" + ", ".join(parts) + "]"}
        )
    return shapes


def literal_dict(values: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in values.items()) + "}"
