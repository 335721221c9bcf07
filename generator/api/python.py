"""Python spellings: PyTorch dtypes and schema types, literals, and the shape rule on torch and
ONNX shapes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, assert_never

from generator.api.onnx import ATTR_TYPE as ONNX_ATTR_TYPE
from generator.api.onnx import TENSOR_PROTO
from generator.model.names import opset_variable
from generator.model.nodes import EAGER_STANDARD_OPS, AttrRef, NodeAttribute, OnnxNode
from generator.model.op import FromAttribute, OpDef, TorchBinding
from generator.model.tensors import (
    Arity,
    Attribute,
    OptionalArity,
    SingleArity,
    TensorParam,
    VariadicArity,
)
from generator.model.types import (
    DTYPE_OF_NUMBER,
    TORCH_NAME,
    TORCHSCRIPT_MISSING_DTYPES,
    AttrType,
    DType,
)

TORCH_DTYPE = {d: f"torch.{name}" for d, name in TORCH_NAME.items()}
# How the generated tests spell a dtype: torch's, and a string tensor's (which PyTorch lacks) as
# a numpy array of str.
TEST_DTYPE = {
    **TORCH_DTYPE,
    DType.string: "_testing.STRING",
    DType.int4: "_testing.INT4",
    DType.uint4: "_testing.UINT4",
}
SCHEMA_TYPE = {
    AttrType.bool: "bool",
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "int[]",
    AttrType.floats: "float[]",
    AttrType.strings: "str[]",
}
ANNOTATION = {
    AttrType.bool: "bool",
    AttrType.int: "int",
    AttrType.float: "float",
    AttrType.string: "str",
    AttrType.ints: "list[int]",
    AttrType.floats: "list[float]",
    AttrType.strings: "list[str]",
}


def literal(value: object) -> str:
    """A Python literal (tuples become lists, which is what PyTorch schemas accept)."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, float):
        text = repr(value)
        return {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}.get(
            text, text
        )
    return repr(value)


def tuple_display(items: Sequence[str]) -> str:
    """A tuple of the expressions (each pasteable: parse/expressions.py), one item or many."""
    return "(" + "".join(f"{item}, " for item in items) + ")"


def literal_dict(values: Mapping[str, object]) -> str:
    return "{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in values.items()) + "}"


def torch_binding(op: OpDef) -> TorchBinding:
    """The op's PyTorch side, where only an op that has one can be (its messages, its calls)."""
    if op.torch is None:
        raise ValueError(f"{op.op_id} has no PyTorch op")
    return op.torch


def defaults_via_none(attr: Attribute) -> bool:
    """PyTorch schemas cannot hold a default list of strings: such an attribute is `str[]?`
    with None meaning the definition's default."""
    return attr.type is AttrType.strings and attr.has_default


def input_defaults_to_none(op: OpDef, index: int) -> bool:
    """An optional input defaults to None unless a required input or attribute follows it
    (then it must be passed, possibly as None: Python and PyTorch schemas put defaults last)."""
    return (
        op.inputs[index].optional
        and all(t.optional for t in op.inputs[index + 1 :])
        and not any(a.required for a in op.attributes)
    )


_SCHEMA_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


def schema_value(value: object) -> str:
    """A default as PyTorch's schema parser reads it: its strings take \\n-style and octal
    escapes but no \\u ones, so non-ASCII text stays as UTF-8."""
    if isinstance(value, str):
        return '"' + "".join(_schema_char(c) for c in value) + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(schema_value(v) for v in value) + "]"
    return repr(value)


def _schema_char(char: str) -> str:
    if char in _SCHEMA_ESCAPES:
        return _SCHEMA_ESCAPES[char]
    return f"\\{ord(char):03o}" if ord(char) < 0x20 or ord(char) == 0x7F else char


def schema_tensor_type(arity: Arity) -> str:
    """A tensor parameter's type in a PyTorch schema."""
    match arity:
        case SingleArity():
            return "Tensor"
        case OptionalArity():
            return "Tensor?"
        case VariadicArity():
            return "Tensor[]"
        case _:
            assert_never(arity)


def schema_return_type(arity: Arity) -> str:
    """An output's type in a PyTorch schema: PyTorch computes an optional one too."""
    match arity:
        case SingleArity() | OptionalArity():
            return "Tensor"
        case VariadicArity():
            return "Tensor[]"
        case _:
            assert_never(arity)


def return_annotation(arity: Arity) -> str:
    """An output's Python annotation (see schema_return_type)."""
    match arity:
        case SingleArity() | OptionalArity():
            return "torch.Tensor"
        case VariadicArity():
            return "list[torch.Tensor]"
        case _:
            assert_never(arity)


def tensor_annotation(arity: Arity) -> str:
    """A tensor parameter's Python annotation."""
    match arity:
        case SingleArity():
            return "torch.Tensor"
        case OptionalArity():
            return "torch.Tensor | None"
        case VariadicArity():
            return "list[torch.Tensor]"
        case _:
            assert_never(arity)


def chooses_dtype(op: OpDef, attr: Attribute) -> bool:
    """The attribute picks a type variable's dtype: the PyTorch op takes a torch.dtype there
    (a ScalarType argument), where ONNX holds TensorProto's number."""
    return attr.name in op.type_choosers


def dtype_default(attr: Attribute) -> int:
    """The number a dtype argument left out (None) stands for: the definition's default; a
    required one has none (0, which no variable allows). The PyTorch schema says
    `ScalarType? to=None` rather than `ScalarType to=int64`: PyTorch stores a ScalarType default
    as an int, which AOTInductor's serializer refuses (torch 2.13)."""
    return 0 if attr.required else int(attr.default)


def dtype_conversions(op: OpDef, convert: str) -> list[str]:
    """Statements turning each dtype argument into ONNX's number with `_support.<convert>` (a
    torch.dtype, or the TorchScript exporter's ScalarType index; None: the default)."""
    return [
        f"{name} = _support.{convert}({name}, {dtype_default(op.attributes_by_name[name])})"
        for name in op.type_choosers
    ]


def torch_schema(op: OpDef) -> str:
    """The PyTorch operator schema, derived from the definition (not inferred from Python)."""
    returns = ", ".join(schema_return_type(t.arity) for t in op.outputs)
    return torch_schema_arguments(op) + (returns if len(op.outputs) == 1 else f"({returns})")


def flat_torch_schema(op: OpDef) -> str:
    """The schema with every output in one Tensor[] (the native library's op below the
    Autograd key of an op with a variadic output after others: see torch_support.h)."""
    return torch_schema_arguments(op) + "Tensor[]"


def torch_schema_arguments(op: OpDef) -> str:
    """A PyTorch schema's arguments and arrow: `(Tensor X, float alpha=1.0) -> `."""
    args = [
        f"{schema_tensor_type(t.arity)} {t.name}"
        + ("=None" if input_defaults_to_none(op, i) else "")
        for i, t in enumerate(op.inputs)
    ]
    for attr in op.attributes:
        if chooses_dtype(op, attr):  # None: the definition's default (see dtype_default)
            args.append(
                f"ScalarType {attr.name}" if attr.required else f"ScalarType? {attr.name}=None"
            )
        elif attr.required:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}")
        elif defaults_via_none(attr) or attr.optional_without_default:
            args.append(f"{SCHEMA_TYPE[attr.type]}? {attr.name}=None")
        else:
            args.append(f"{SCHEMA_TYPE[attr.type]} {attr.name}={schema_value(attr.default)}")
    return f"({', '.join(args)}) -> "


def python_params(op: OpDef, annotate: bool, *, dtype_arguments: bool) -> str:
    """The op's parameters in Python. `dtype_arguments`: an attribute that picks a dtype takes
    a torch.dtype (as the PyTorch op does), else ONNX's number (as an exporter's translation,
    which gets the number for a dtype a call passes and its own default for one it leaves
    out)."""
    params = []
    for i, t in enumerate(op.inputs):
        default = " = None" if input_defaults_to_none(op, i) else ""
        params.append(t.name + (f": {tensor_annotation(t.arity)}" if annotate else "") + default)
    for attr in op.attributes:
        annotation = ANNOTATION[attr.type]
        default = "" if attr.required else f" = {literal(attr.default)}"
        if dtype_arguments and chooses_dtype(op, attr):
            annotation = "torch.dtype"
            if not attr.required:
                annotation, default = "torch.dtype | None", " = None"
        elif defaults_via_none(attr) or attr.optional_without_default:
            annotation, default = f"{annotation} | None", " = None"
        params.append(
            f"{attr.name}: {annotation}{default}" if annotate else f"{attr.name}{default}"
        )
    return ", ".join(params)


def fill_defaults(op: OpDef) -> list[str]:
    """Statements that replace None by the definition's default (see defaults_via_none)."""
    return [
        f"{a.name} = {literal(a.default)} if {a.name} is None else list({a.name})"
        for a in op.attributes
        if defaults_via_none(a)
    ]


def fill_dtype_defaults(op: OpDef) -> list[str]:
    """The translation's: a dtype argument given as None is the default's number."""
    return [
        f"{a.name} = {dtype_default(a)} if {a.name} is None else {a.name}"
        for a in op.attributes
        if chooses_dtype(op, a) and not a.required
    ]


# ---- the export rules, as Python statements: the dynamo translation (onnxscript), the
# TorchScript symbolic (g.op) and, for export-only ops, the eager PyTorch implementation


def _value(attr: NodeAttribute) -> str:
    if isinstance(attr.value, AttrRef):
        return attr.value.name
    if isinstance(attr.value, DType):
        return f"onnx.TensorProto.{TENSOR_PROTO[attr.value]}"
    return literal(attr.value)


def _attribute_args(
    node: OnnxNode,
    absent: frozenset[str],
    suffix: Callable[[NodeAttribute], str],
    spell: Callable[[NodeAttribute], str] = _value,
) -> list[str]:
    """`name<suffix>=value` for each attribute of an export node; those referring to an
    attribute that may be absent (None) go through _support.given, which leaves None out."""
    always: list[str] = []
    maybe: list[str] = []
    for a in node.attributes:
        arg = f"{a.name}{suffix(a)}={spell(a)}"
        refers_to_absent = isinstance(a.value, AttrRef) and a.value.name in absent
        (maybe if refers_to_absent else always).append(arg)
    return always + ([f"**_support.given({', '.join(maybe)})"] if maybe else [])


def _typed_list(a: NodeAttribute) -> str:
    """A list attribute for onnxscript, typed: it would give an empty list the type INTS."""
    if not a.type.is_list:
        return _value(a)
    return f"_support.onnx_list_attribute({a.name!r}, {ONNX_ATTR_TYPE[a.type]!r}, {_value(a)})"


def _translation_node(node: OnnxNode, absent: frozenset[str], op: OpDef) -> str:
    if any(name in op.variadic_inputs for name in node.inputs):
        # By keyword (the node calls the op itself): torch 2.13's exporter binds a variadic
        # parameter after another one to every positional argument, the earlier ones again.
        inputs = [
            f"{t.name}={name}" for t, name in zip(op.inputs, node.inputs, strict=False) if name
        ]
    else:
        inputs = list(node.inputs)
    args = inputs + _attribute_args(node, absent, lambda a: "", _typed_list)
    call = f"{opset_variable(node.domain)}.{node.op_type}"
    paired = _variadic_output_pair(node, op)
    if paired is not None:
        title = literal(op.message_prefix)
        args = [title, call, str(op.outputs_before_variadic), f"len({paired})"] + args
        return f"{', '.join(node.outputs)} = _support.node_with_values({', '.join(args)})"
    return f"{', '.join(node.outputs)} = {call}({', '.join(args)})"


def _variadic_output_pair(node: OnnxNode, op: OpDef) -> str | None:
    """Where the node is the op's own and the op's last output is variadic: the input its
    values pair with (as many values as it has); else None."""
    if (node.domain, node.op_type) != (op.domain, op.op_type) or not op.outputs[-1].variadic:
        return None
    paired = op.paired_input(op.outputs[-1])
    assert paired is not None  # a variadic output pairs with a variadic input
    return paired


_SYMBOLIC_SUFFIX = {
    AttrType.bool: "i",
    AttrType.int: "i",
    AttrType.float: "f",
    AttrType.string: "s",
    AttrType.ints: "i",
    AttrType.floats: "f",
    AttrType.strings: "s",
}


def _symbolic_node(node: OnnxNode, absent: frozenset[str], op: OpDef) -> str:
    # A variadic input (Tensor[]) arrives as one list value: its items are the node's inputs.
    inputs = [
        f"*symbolic_helper._unpack_list({name})" if name in op.variadic_inputs else name
        for name in node.inputs
    ]
    args = inputs + _attribute_args(node, absent, lambda a: f"_{_SYMBOLIC_SUFFIX[a.type]}")
    paired = _variadic_output_pair(node, op)
    if paired is not None:
        values = f"len(symbolic_helper._unpack_list({paired}))"
        title = literal(op.message_prefix)
        singles = str(op.outputs_before_variadic)
        args = ["g", title, json.dumps(node.qualified), singles, values] + args
        return f"{', '.join(node.outputs)} = _support.symbolic_node_with_values({', '.join(args)})"
    args = [json.dumps(node.qualified)] + args
    if len(node.outputs) > 1:
        args.append(f"outputs={len(node.outputs)}")
    return f"{', '.join(node.outputs)} = g.op({', '.join(args)})"


# Eager spellings of the standard ops in model.EAGER_STANDARD_OPS.
_EAGER_STANDARD = {
    "Add": "{0} + {1}",
    "Sub": "{0} - {1}",
    "Mul": "{0} * {1}",
    "Neg": "-{0}",
    # Copies even when nothing changes: a functional op's output must not alias its input.
    "Identity": "{0}.clone()",
    "Cast": "{0}.to({to}, copy=True)",
    "CastLike": "{0}.to({1}.dtype, copy=True)",
}
assert _EAGER_STANDARD.keys() == EAGER_STANDARD_OPS


def _eager_node(node: OnnxNode, index: Mapping[tuple[str, str], OpDef]) -> str:
    if not node.domain:
        attrs = {
            a.name: TORCH_DTYPE[a.value] if isinstance(a.value, DType) else _value(a)
            for a in node.attributes
        }
        expr = _EAGER_STANDARD[node.op_type].format(*node.inputs, **attrs)
    else:
        called = index[(node.domain, node.op_type)]
        target = torch_binding(called)
        # Every input positionally, None where the node leaves one out: a PyTorch schema has no
        # default for an optional input before a required argument.
        inputs = [name or "None" for name in node.inputs]
        inputs += ["None"] * (len(called.inputs) - len(inputs))
        args = inputs + [f"{a.name}={_value(a)}" for a in node.attributes]
        expr = f"torch.ops.{target.namespace}.{target.name}.default({', '.join(args)})"
    return f"{', '.join(node.outputs)} = {expr}"


def _rules(
    op: OpDef, spell: Callable[[OnnxNode], str], before_return: Sequence[str] = ()
) -> list[str]:
    """Statements choosing the export rule by attribute values, then running its nodes
    (and `before_return` ahead of each return)."""
    returns = ", ".join(t.name for t in op.outputs)
    lines: list[str] = []
    for rule in op.export:
        indent = ""
        if rule.when:
            condition = " and ".join(f"{name} == {literal(value)}" for name, value in rule.when)
            lines.append(f"if {condition}:")
            indent = "    "
        lines += [indent + spell(node) for node in rule.nodes]
        lines += [indent + statement for statement in before_return]
        lines.append(f"{indent}return {returns}")
        if not rule.when:
            return lines
    names = sorted({name for rule in op.export for name, _ in rule.when})
    supported = "; ".join(
        ", ".join(f"{name}={value!r}" for name, value in rule.when) for rule in op.export
    )
    got = ", ".join(f"{name}={{{name}!r}}" for name in names)
    lines.append(
        f"raise ValueError(f{json.dumps(f'{op.title}: no ONNX export for {got}; supported: {supported}')})"
    )
    return lines


def _may_be_absent(op: OpDef) -> frozenset[str]:
    return frozenset(a.name for a in op.attributes if a.optional_without_default)


def translation_statements(op: OpDef) -> list[str]:
    absent = _may_be_absent(op)
    return _zero_d_checks(op) + _rules(op, lambda node: _translation_node(node, absent, op))


def symbolic_statements(op: OpDef, set_types: list[str]) -> list[str]:
    absent = _may_be_absent(op)
    return (
        _zero_d_checks(op)
        + _torchscript_dtype_checks(op)
        + _rules(op, lambda node: _symbolic_node(node, absent, op), set_types)
    )


def _zero_d_checks(op: OpDef) -> list[str]:
    """Both exporters refuse a 0-d input ONNX Runtime could not type the op's outputs for."""
    if not op.zero_d_needs_a_rank:
        return []
    values = "{" + ", ".join(f"{literal(name)}: {name}" for name in op.zero_d_needs_a_rank) + "}"
    choosers = " and ".join(f"attribute '{name}'" for name in op.type_choosers)
    label = torch_binding(op).qualified_name
    return [f"_support.refuse_zero_d({literal(label)}, {values}, {literal(choosers)})"]


def _torchscript_dtype_checks(op: OpDef) -> list[str]:
    """Where some dtype binding gives a tensor a dtype the TorchScript exporter lacks, the
    symbolic refuses it first, naming the op and the tensor."""
    if all(op.torchscript_exports(binding) for binding in op.instantiations):
        return []
    missing = TORCHSCRIPT_MISSING_DTYPES

    def may_miss(t: TensorParam) -> bool:
        if t.type_var is None:
            return t.dtype in missing
        return any(d in missing for d in op.type_var_dtypes[t.type_var])

    # Inputs are checked as given (an absent optional one is None); an output of a fixed such
    # dtype is always refused.
    values = ", ".join(f"{t.name!r}: {t.name}" for t in op.inputs if may_miss(t))
    fixed = [
        (t.name, t.dtype.value) for t in op.outputs if t.type_var is None and t.dtype in missing
    ]
    # Outputs whose dtype an attribute names: by then ONNX's number (see the symbolic).
    chosen = ", ".join(
        f"{t.name!r}: {source.attribute}"
        for t in op.outputs
        if isinstance(source := op.dtype_source(t), FromAttribute) and may_miss(t)
    )
    return [
        f"_support.refuse_torchscript_dtypes({torch_binding(op).qualified_name!r}, "
        f"{{{values}}}, ({', '.join(TORCH_DTYPE[d] for d in missing)}), {literal(fixed)}"
        + (f", chosen={{{chosen}}})" if chosen else ")")
    ]


def eager_statements(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> list[str]:
    return _rules(op, lambda node: _eager_node(node, index))


def no_gradient_message(op: OpDef) -> str:
    """What backward through a new PyTorch op without gradient formulas raises."""
    return (
        f"{torch_binding(op).qualified_name} has no gradient formula: give one under 'gradients' in "
        f"{op.definition_path}"
    )


def forward_mode_message(op: OpDef) -> str:
    """What forward-mode AD through a new PyTorch op raises (definitions give reverse-mode
    formulas only; a silently zero tangent would be a wrong answer)."""
    return (
        f"{torch_binding(op).qualified_name} does not support forward-mode AD (torch.func.jvp, jacfwd, "
        f"hessian, torch.autograd.forward_ad): {op.definition_path} gives reverse-mode "
        "gradient formulas only"
    )


def attribute_value_in_tests(op: OpDef, name: str, value: Any) -> str:
    """An attribute's value in the tests: where the attribute picks a dtype, the dtype as the
    tests spell it (the PyTorch op takes a torch.dtype; an ONNX node gets its number)."""
    if name in op.type_choosers:
        return TEST_DTYPE[DTYPE_OF_NUMBER[value]]
    dtype = op.attributes_by_name[name].dtype
    if dtype is not None and value is not None:  # a tensor attribute: an array of its dtype
        return f"_testing.tensor_attribute({literal(value)}, {literal(dtype.value)})"
    return literal(value)
