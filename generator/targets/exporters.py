"""The ONNX exporters' rules for an op with a PyTorch side: the dynamo exporter's translation
(onnxscript) and the TorchScript exporter's symbolic (onnx_export.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

from generator.api import python as py
from generator.api import python_shapes
from generator.dest import common
from generator.dest.emission import Emission
from generator.dest.tests import ParityTestPieces
from generator.model.capabilities import Target, targets_of
from generator.model.names import opset_variable
from generator.model.op import DTypeSource, FixedDType, FromAttribute, FromInput, OpDef
from generator.model.shapes import OutputShape, SlicePart
from generator.model.tensors import TensorParam
from generator.model.types import AttrType
from generator.parse.project import export_targets
from generator.render import GeneratedFile, render
from generator.view import view

_PARSE_ARG = {
    AttrType.bool: "b",
    AttrType.int: "i",
    AttrType.float: "f",
    AttrType.string: "s",
    AttrType.ints: "is",
    AttrType.floats: "fs",
    AttrType.strings: "ss",
}


@view
class OpsetView:
    """A custom domain the export nodes call, as an onnxscript Opset."""

    variable: str
    domain: str
    version: int


@view
class StringListConstantView:
    """A list-of-strings attribute, which the TorchScript exporter passes as a constant."""

    name: str
    # constant_strings's arguments after the value: the default (a literal; "None" for a
    # required attribute), and whether it may be absent
    defaults: str


@view
class OnnxExportView:
    """generated/<op>/onnx_export.py: the dynamo translation and the TorchScript symbolic."""

    overload_name: str
    is_override: bool
    op_id: str
    uses_standard_opset: bool
    opsets: tuple[OpsetView, ...]
    opsets_literal: str
    translation_params: str
    fill_defaults: tuple[str, ...]
    translation_statements: tuple[str, ...]
    parse_args: str
    symbolic_params: str
    string_list_constants: tuple[StringListConstantView, ...]
    # Each dtype argument, which a symbolic gets as c10's ScalarType index, as ONNX's number
    symbolic_dtype_conversions: tuple[str, ...]
    symbolic_statements: tuple[str, ...]


def export_opsets(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> dict[str, int]:
    """Custom domain -> version, for every custom op the export nodes call."""
    opsets: dict[str, int] = {}
    for target in export_targets(op, index):
        assert target.domain is not None and target.version is not None  # it defines an ONNX op
        opsets[target.domain] = max(opsets.get(target.domain, 0), target.version)
    return dict(sorted(opsets.items()))


def onnx_export_view(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> OnnxExportView:
    torch = py.torch_binding(op)
    opsets = export_opsets(op, index)
    return OnnxExportView(
        overload_name=torch.overload_name,
        is_override=torch.is_override,
        op_id=op.op_id,
        uses_standard_opset=any(not n.domain for rule in op.export for n in rule.nodes),
        opsets=tuple(OpsetView(opset_variable(d), d, v) for d, v in opsets.items()),
        opsets_literal=py.literal_dict(opsets),
        translation_params=py.python_params(op, annotate=False, dtype_arguments=False),
        fill_defaults=tuple(py.fill_defaults(op) + py.fill_dtype_defaults(op)),
        translation_statements=tuple(py.translation_statements(op)),
        parse_args=", ".join(
            ['"v"'] * len(op.inputs) + [f'"{_PARSE_ARG[a.type]}"' for a in op.attributes]
        ),
        symbolic_params=", ".join([t.name for t in op.inputs] + [a.name for a in op.attributes]),
        string_list_constants=tuple(
            StringListConstantView(
                a.name,
                (
                    "None, may_be_absent=True"
                    if a.optional_without_default
                    else py.literal(a.default) if a.has_default else "None"
                ),
            )
            for a in op.attributes
            if a.type is AttrType.strings
        ),
        symbolic_dtype_conversions=tuple(py.dtype_conversions(op, "onnx_dtype_of_scalar_type")),
        symbolic_statements=tuple(py.symbolic_statements(op, _set_types(op))),
    )


def _set_types(op: OpDef) -> list[str]:
    """TorchScript values carry no type from g.op, and the exporter warns for each untyped output
    of a custom op. Every output gets its dtype (`op.dtype_source`) and its sizes: an output that
    provably has an input's shape takes that input's type (which keeps its dims' names), a
    variadic output's values the paired input's values', any other the sizes its shape rule
    gives (python_shapes.TorchScriptShapes; None where unknown), and one without a shape rule
    (ONNX infers it through the function body) its traced rank (see _support.symbolic_type)."""
    statements = []
    rules = {shape.output: shape for shape in op.shape_rule.outputs}
    for index, output in enumerate(op.outputs):
        source = op.dtype_source(output)
        dtype = _torchscript_dtype(op, source)
        shape = rules.get(output.name)
        if shape is not None and shape.values_of is not None:  # a variadic output
            own_dtype = "" if source == FromInput(shape.values_of) else f", {dtype}"
            statements.append(f"_support.type_values({output.name}, {shape.values_of}{own_dtype})")
            continue
        if shape is None:
            statements.append(f"{output.name}.setType(_support.symbolic_type(g, {index}, {dtype}))")
            continue
        same_shape = next((t.name for t in op.inputs if _same_shape(shape, t, op)), None)
        if same_shape is not None:
            own_dtype = "" if source == FromInput(same_shape) else f".with_dtype({dtype})"
            statements.append(f"{output.name}.setType({same_shape}.type(){own_dtype})")
            continue
        sizes = python_shapes.torchscript_output_sizes(shape)
        statements.append(
            f"{output.name}.setType(_support.symbolic_type(g, {index}, {dtype}, lambda: {sizes}))"
        )
    return statements


def _torchscript_dtype(op: OpDef, source: DTypeSource) -> str:
    """An output's dtype in the TorchScript symbolic (a torch.dtype)."""
    match source:
        case FromInput(name) if name in op.variadic_inputs:  # its first value's
            return f"symbolic_helper._unpack_list({name})[0].type().dtype()"
        case FromInput(name):
            return f"{name}.type().dtype()"
        case FixedDType(fixed):
            return py.TORCH_DTYPE[fixed]
        case FromAttribute(name):  # by then ONNX's number (symbolic_dtype_conversions)
            return f"_support.torch_dtype({name})"
        case _:
            assert_never(source)


def _same_shape(shape: OutputShape, tensor: TensorParam, op: OpDef) -> bool:
    """True when the output provably has this input's shape (for the TorchScript type), and the
    input is one tensor that is always given."""
    if tensor.may_be_absent or tensor.variadic:
        return False
    match shape.parts:
        case (SlicePart(start=None) as whole,):
            return whole.input == tensor.name and whole.stop is None
    output = next(o for o in op.outputs if o.name == shape.output)
    return output.shape is not None and tensor.shape is not None and output.shape == tensor.shape


def emit(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    if Target.exporters not in targets_of(op):
        return []
    view = onnx_export_view(op, emission.onnx_ops)
    return [
        render("python/onnx_export.py.j2", f"{op.op_id}/onnx_export.py", common.sources(op), view)
    ]


def torchscript_refuses_dtypes(op: OpDef) -> bool:
    """The TorchScript exporter could trace the op, but some dtype binding has a tensor of a
    dtype it lacks (the op's symbolic refuses it, naming the op)."""
    if not (bool(op.export) and op.new_torch_op and op.torchscript_traces):
        return False
    return any(
        not op.torchscript_exports(binding, case.shapes)
        for binding in op.instantiations
        for case in op.tests.random
    )


def parity_test_pieces(op: OpDef) -> ParityTestPieces:
    """This target's parts of the generated tests (generator/templates/python/test_parity/),
    and whether the op's test module has each."""
    ours = Target.exporters in targets_of(op)
    parts = {
        "export_helpers": ours,
        "test_export_and_parity": ours,
        "test_torchscript_export_refuses_dtypes_it_lacks": torchscript_refuses_dtypes(op),
        "test_zero_d_input": ours and op.zero_d_case is not None,
    }
    return ParityTestPieces(Target.exporters, parts)
