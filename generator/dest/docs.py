"""Markdown reference pages: one per op and an index, from the same definitions as the code
(as ONNX's Operators.md and MLIR's ODS docs are), kept in sync by `--check` like every other
generated file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from generator.api import onnx as onnx_api
from generator.api import python as py_api
from generator.dest import common
from generator.dest.emission import Emission
from generator.model.op import OpDef, TorchApi
from generator.model.tensors import (
    Attribute,
    Differentiation,
    OptionalArity,
    SingleArity,
    TensorParam,
    VariadicArity,
)
from generator.model.types import DTYPE_OF_NUMBER, AttrType, message_value
from generator.render import GeneratedFile, render
from generator.runtime._names import input_of
from generator.view import view

# Every text in a view below is Markdown, ready for the page (table cells already one line
# with their pipes escaped).


@view
class FactView:
    """A row of the table under the page's title."""

    label: str
    value: str


@view
class TensorRowView:
    name: str
    type: str
    shape: str
    doc: str


@view
class AttributeRowView:
    name: str
    type: str
    default: str
    doc: str


@view
class TypeConstraintRowView:
    name: str
    types: str
    doc: str


@view
class OpPageView:
    """docs/<op>.md: the op's reference page."""

    title: str
    doc: str
    facts: tuple[FactView, ...]
    inputs: tuple[TensorRowView, ...]
    outputs: tuple[TensorRowView, ...]
    attributes: tuple[AttributeRowView, ...]
    type_constraints: tuple[TypeConstraintRowView, ...]
    checks: tuple[str, ...]  # the shape rule's messages
    export_nodes: tuple[str, ...]  # one line per export rule
    example: str  # Python


@view
class IndexRowView:
    title: str
    file: str
    onnx: str
    torch: str
    summary: str  # the doc's first sentence


@view
class IndexView:
    """docs/index.md: a table of every op's page."""

    ops: tuple[IndexRowView, ...]


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _title(op: OpDef) -> str:
    """op.title, but a page of an export-only op is titled by its PyTorch op without the
    overload (`aten::gelu`, where code and messages say `aten::gelu.default`)."""
    return op.title if op.defines_onnx_op else py_api.torch_binding(op).qualified_name


def _type(tensor: TensorParam) -> str:
    if tensor.type_var:
        return f"`{tensor.type_var}`"
    return onnx_api.parameter_type_string(tensor)


def _shape(tensor: TensorParam, unruled: str) -> str:
    """`unruled`: what the page says of a tensor without a shape rule."""
    if tensor.same_shape_as:
        return f"same as `{tensor.same_shape_as}`"
    if tensor.shape_function:
        name, args = tensor.shape_function
        return f"`{name}({', '.join(args)})`"
    if tensor.shape is not None:
        return f"`{_cell(str(tensor.shape))}`"
    return unruled


def _arity(tensor: TensorParam) -> str:
    match tensor.arity:
        case SingleArity():
            return ""
        case OptionalArity():
            return "optional. "
        case VariadicArity(min_arity, homogeneous):
            kind = "" if homogeneous else ", each of its own type"
            return f"variadic: {min_arity} or more{kind}. "
        case _:
            assert_never(tensor.arity)


_DIFFERENTIATION = {
    Differentiation.unknown: "",
    Differentiation.differentiable: "differentiable. ",
    Differentiation.non_differentiable: "not differentiable. ",
}


def _tensor(tensor: TensorParam, unruled: str) -> TensorRowView:
    doc = _arity(tensor) + _DIFFERENTIATION[tensor.differentiation] + tensor.doc
    return TensorRowView(tensor.name, _type(tensor), _shape(tensor, unruled), _cell(doc))


# ONNX float attributes are float32; PyTorch's are float64 and are rounded on the way to the
# kernel, so that every runtime computes with the same value.
FLOAT32_NOTE = (
    "a float32 in every runtime (ONNX float attributes are float32): a PyTorch value is rounded "
    "to float32 before the kernel sees it, so 1e-50 becomes 0 and values beyond 3.4e38 become inf"
)


def _dtype_number(number: int) -> str:
    """An attribute's dtype number with the dtype's names: `2` (uint8, `torch.uint8`)."""
    dtype = DTYPE_OF_NUMBER[number]
    torch_name = f", `{py_api.TORCH_DTYPE[dtype]}`" if dtype.in_torch else ""
    return f"`{number}` ({dtype.value}{torch_name})"


def _attribute(attr: Attribute, chooser: bool) -> AttributeRowView:
    """`chooser`: the attribute picks a type variable's dtype (TensorProto numbers)."""
    notes = []
    if attr.allowed:
        spelled = (
            _dtype_number(v) if chooser and isinstance(v, int) else f"`{_cell(message_value(v))}`"
            for v in attr.allowed
        )
        notes.append("one of " + ", ".join(spelled))
    if attr.minimum is not None:
        notes.append(f"at least `{message_value(attr.minimum)}`")
    if attr.maximum is not None:
        notes.append(f"at most `{message_value(attr.maximum)}`")
    if attr.since_version:
        notes.append(f"since version {attr.since_version}")
    if attr.type in (AttrType.float, AttrType.floats):
        notes.append(FLOAT32_NOTE)
    return AttributeRowView(
        name=attr.name,
        type=f"{attr.type.value} of {attr.dtype.value}" if attr.dtype else attr.type.value,
        default=(
            "required"
            if attr.required
            else (
                (
                    _dtype_number(attr.default)
                    if chooser and isinstance(attr.default, int)
                    else f"`{_cell(repr(attr.default))}`"
                )
                if attr.has_default
                else "optional, none"
            )
        ),
        doc=_cell(
            ". ".join([attr.doc.rstrip(".")] + [n[0].upper() + n[1:] for n in notes]) + "."
            if notes and attr.doc
            else attr.doc or "; ".join(notes)
        ),
    )


def _facts(op: OpDef, target_facts: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    facts = []
    if op.op_type:
        versions = ", ".join(str(v) for v in op.versions)
        facts.append(("ONNX", f"`{op.title}`, version {versions}"))
    if op.is_interface_only:
        facts.append(("runs in", "nothing yet: the definition declares the ONNX interface only"))
    elif op.provided_by:
        facts.append(("runs in", "ONNX Runtime's own kernel (no library of ours)"))
    elif op.kernel and not op.kernel.in_onnxruntime:
        facts.append(("runs in", "PyTorch alone (`kernel: {onnxruntime: false}`); not exported"))
    elif op.kernel:
        facts.append(("runs in", f"the custom-op library `{common.library_file(op.domain_ident)}`"))
    elif op.function:
        facts.append(
            ("runs in", f"any ONNX runtime: an ONNX function of opset {op.function.opset}")
        )
    if op.torch:
        kind = "overrides the export of" if op.torch.is_override else "PyTorch op"
        facts.append((kind, f"`{op.torch.overload_name}`"))
        if not op.torch.is_override:
            facts.append(("PyTorch schema", f"`{_cell(py_api.torch_schema(op))}`"))
            facts.append(("registered", _registration(op)))
    facts += target_facts
    if op.gradients:
        facts.append(("autograd", "gradients of " + ", ".join(f"`{n}`" for n in op.gradients)))
    facts.append(("definition", f"`{op.definition_path}`"))
    return facts


def _registration(op: OpDef) -> str:
    torch = py_api.torch_binding(op)
    match torch.api:
        case TorchApi.native:
            library = common.torch_library_file(op.domain_ident)
            return f"in C++ by `{library}` (`torch.api: native`); usable without Python"
        case TorchApi.library:
            return "from Python, `torch.library.Library` (`torch.api: library`)"
        case TorchApi.custom_op:
            return "from Python, `torch.library.custom_op` (`torch.api: custom_op`)"
        case TorchApi.legacy:
            return "from Python, `torch._custom_op` (`torch.api: legacy`)"
        case _:
            assert_never(torch.api)


def _example(op: OpDef, package: str) -> str:
    """A runnable example: the first random case's inputs at the first dtype binding (drawn
    by its samplers, as the tests draw them), the PyTorch call and the ONNX node."""
    if op.is_interface_only:
        names = ([t.name for t in op.inputs], [t.name for t in op.outputs])
        return (
            f"import onnx\nimport {package}\n\n{package}.register_all()  # the ONNX schemas\n"
            f"node = onnx.helper.make_node({op.op_type!r}, {names[0]!r}, {names[1]!r}, "
            f"domain={op.domain!r})"
        )
    case = op.tests.random[0] if op.tests.random else None
    shapes = case.shapes if case else {t.name: () for t in op.inputs if not t.optional}
    sizes = case.dynamic if case else {}
    samples = case.samples if case else {}
    binding = op.instantiations[0]
    attributes = op.case_attributes(case.attributes if case else {})
    lines = [f"import {package}  # registers the PyTorch ops"]
    if op.torch is not None:
        lines = ["import torch", *lines, ""]
        if any(name in samples for name in shapes):
            lines.append("gen = torch.Generator().manual_seed(0)")
        for name, dims in shapes.items():
            concrete = tuple(d if isinstance(d, int) else sizes[d][0] for d in dims)
            tensor = next(t for t in op.inputs if t.name == _input_of(op, name))
            dtype = py_api.TORCH_DTYPE[tensor.dtype_in(binding)]
            if name in samples:
                lines.append(f"shape = {concrete!r}")
                lines.append(f"{name} = {samples[name]}.to({dtype})")  # parenthesized
            else:
                cast = "" if dtype == "torch.float32" else f".to({dtype})"
                lines.append(f"{name} = torch.randn({concrete!r}){cast}")
    choosers = op.type_choosers
    kwargs = "".join(
        f", {k}={py_api.TORCH_DTYPE[binding.dtype(choosers[k].name)] if k in choosers else repr(v)}"
        for k, v in attributes.items()
        if op.torch
    )
    args = ", ".join(
        f"[{', '.join(n for n in shapes if _input_of(op, n) == t.name)}]" if t.variadic else t.name
        for t in op.inputs
        if t.variadic or t.name in shapes
    )
    outputs = ", ".join(t.name for t in op.outputs)
    if op.torch and not op.torch.is_override:
        lines.append(f"{outputs} = torch.ops.{op.torch.namespace}.{op.torch.name}({args}{kwargs})")
    elif op.torch:
        lines.append(f"{outputs} = torch.ops.aten.{op.torch.overload_name[6:]}({args}{kwargs})")
        lines.append(f"# export with {package}.export_model(..., overrides=[{op.op_id!r}])")
    if op.op_type:
        node_kwargs = "".join(
            f", {k}={_node_attribute(op.attributes_by_name[k], v)}" for k, v in attributes.items()
        )
        tensors = any(op.attributes_by_name[k].dtype is not None for k in attributes)
        lines += [
            "",
            "# The ONNX node:",
            *(["import numpy as np"] if tensors else []),
            "import onnx",
            "",
            f"{package}.register_all()  # the ONNX schemas (and the TorchScript symbolics)",
            f"node = onnx.helper.make_node({op.op_type!r}, {list(shapes)!r}, "
            f"{[t.name for t in op.outputs]!r}, domain={op.domain!r}{node_kwargs})",
        ]
    return "\n".join(lines)


def _node_attribute(attr: Attribute, value: Any) -> str:
    """An attribute's value as onnx.helper.make_node takes it (a tensor: a TensorProto)."""
    if attr.dtype is not None:
        array = f"np.array({py_api.literal(value)}, dtype={attr.dtype.value!r})"
        return f"onnx.numpy_helper.from_array({array})"
    return py_api.literal(int(value) if isinstance(value, bool) else value)


def _input_of(op: OpDef, name: str) -> str:
    """The input a test case's value belongs to (a variadic input's X_0 is X's)."""
    return input_of(name, next((t.name for t in op.inputs if t.variadic), None))


def op_page_view(
    op: OpDef, package: str, target_facts: Sequence[tuple[str, str]] = ()
) -> OpPageView:
    rule = op.shape_rule
    return OpPageView(
        title=_title(op),
        doc=op.doc.strip(),
        facts=tuple(FactView(label, _cell(value)) for label, value in _facts(op, target_facts)),
        inputs=tuple(_tensor(t, "any") for t in op.inputs),
        outputs=tuple(
            _tensor(t, "not declared" if op.is_interface_only else "through the function body")
            for t in op.outputs
        ),
        attributes=tuple(_attribute(a, a.name in op.type_choosers) for a in op.attributes),
        type_constraints=tuple(
            TypeConstraintRowView(tc.name, ", ".join(str(t) for t in tc.types), _cell(tc.doc))
            for tc in op.type_constraints
        ),
        checks=tuple(_cell(c.message) for c in rule.attribute_checks + rule.input_checks),
        export_nodes=tuple(
            ("when " + ", ".join(f"`{k}={v!r}`" for k, v in r.when) + ": " if r.when else "")
            + "; ".join(f"`{onnx_api.node_text(n)}`" for n in r.nodes)
            for r in op.export
        ),
        example=_example(op, package),
    )


def emit_op(
    op: OpDef, emission: Emission, target_facts: Sequence[tuple[str, str]]
) -> list[GeneratedFile]:
    """The op's reference page, with the other targets' rows of its table."""
    view = op_page_view(op, emission.package.name, target_facts)
    return [render("docs/op.md.j2", f"docs/{op.op_id}.md", common.sources(op), view)]


def index_view(ops: Sequence[OpDef]) -> IndexView:
    return IndexView(
        tuple(
            IndexRowView(
                title=_cell(_title(op)),
                file=f"{op.op_id}.md",
                onnx=f"`{op.title}`" if op.defines_onnx_op else "export only",
                torch=f"`{op.torch.overload_name}`" if op.torch else "",
                summary=_cell(op.doc.strip().split(". ")[0].rstrip(".") + "."),
            )
            for op in sorted(ops, key=lambda op: op.op_id)
        )
    )


def emit_index(ops: Sequence[OpDef], emission: Emission) -> list[GeneratedFile]:
    """The table of every op's page."""
    sources = sorted(op.definition_path for op in ops)
    return [render("docs/index.md.j2", "docs/index.md", sources, index_view(ops))]
