"""`python -m generator new`: a commented op definition and a kernel stub for a new op. The op
starts as an identity (every output a copy of the first input), so it builds and passes its
generated tests before the contributor changes anything."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from generator import config
from generator.errors import DefinitionError, DefinitionErrors
from generator.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from generator.model.capabilities import Feature
from generator.model.names import IDENTIFIER, MAX_NAME_LENGTH, ONNX_DOMAINS, default_domain
from generator.model.op import OpDef, TorchApi
from generator.model.tensors import TensorParam
from generator.model.types import (
    TENSOR_ATTRIBUTE_DTYPES,
    VALUE_ATTR_TYPES,
    AttrType,
    DType,
    tensor_attribute_dtype_names,
)
from generator.parse.op import parse_opdef
from generator.parse.read import op_id_problem
from generator.parse.tensors import attribute_value_problem
from generator.parse.torch import new_op_name_problem
from generator.project import OwnershipError, display
from generator.target_settings import DeviceKernel
from generator.targets.settings import DEVICE_KERNELS
from generator.yaml_text import Value, value_text

if TYPE_CHECKING:
    from generator.dest import common

# An attribute's value, as given on the command line or sampled.
AttributeValue = bool | int | float | str | list[int | float | str]


@dataclass(frozen=True)
class _AttributeLine:
    """An attribute as the scaffolded definition lists it."""

    name: str
    type: str
    requirement: str  # ", default: <YAML>", ", required: false" or "" (required)


class _Attribute(TypedDict):
    name: str
    type: AttrType
    default: AttributeValue | None
    optional: bool  # optional without a default (NAME:TYPE?)
    dtype: DType | None  # a tensor attribute's element type (NAME:tensor(DTYPE))


# A value for each attribute type, for the tests of an attribute declared without default.
_SAMPLE: dict[AttrType, AttributeValue] = {
    AttrType.bool: True,
    AttrType.int: 1,
    AttrType.float: 0.5,
    AttrType.string: "a",
    AttrType.ints: [1],
    AttrType.floats: [0.5],
    AttrType.strings: ["a"],
}


def _known_values(dtypes: list[DType]) -> list[list[float]] | list[list[int]] | list[list[str]]:
    """Values of the identity's known case that every dtype holds exactly (definitions are
    checked for that)."""
    if dtypes == [DType.string]:
        return [["ab", ""], ["\u00e9", "x\u0000y"]]
    if all(d.is_floating for d in dtypes):
        return [[1.5, -2.0], [0.0, 4.25]]
    if any(d is DType.bool or d.value.startswith("uint") for d in dtypes):
        return [[1, 0], [0, 1]]
    return [[1, -2], [0, 4]]


class ScaffoldError(Exception):
    """A flag or folder `new` or `import` refuses. The message may quote a flag as given: a
    lone surrogate there (a byte of argv that is not UTF-8) is shown escaped, so printing it
    never fails, whatever the stream's error handler."""

    def __init__(self, message: str) -> None:
        super().__init__(message.encode("utf-8", "backslashreplace").decode("utf-8"))


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator new",
        description="Write a new op definition (an identity to start from, with TODO markers) "
        "and its kernel stub into the definitions folder, then generate it. Never overwrites. "
        "Where no configuration is found, writes one first ([tool.opgen] in pyproject.toml, "
        "or opgen.toml), naming the package after the folder unless --package is given.",
        epilog="Example: python -m generator new MyScale --domain my.ops --inputs X,W "
        "--attribute alpha:float=1.0 --attribute steps:int. "
        "Exit codes: 0 ok, 2 bad usage or the files exist.",
    )
    parser.add_argument("op", help="the ONNX op type, e.g. MyScale")
    parser.add_argument(
        "--domain",
        help="the ONNX domain (default: the package's name in lower case, with _ops where that "
        "is no valid domain: an ONNX Runtime process takes one library per domain, so two "
        "packages must not share one)",
    )
    torch_side = parser.add_mutually_exclusive_group()
    torch_side.add_argument(
        "--torch-name",
        help="the PyTorch op, namespace::name (default: <domain with . as _>::<op_snake>, with "
        "_ops after a namespace PyTorch has and _op after a name that is taken)",
    )
    torch_side.add_argument(
        "--no-torch",
        action="store_true",
        help="no PyTorch op: the op runs in ONNX Runtime only (schemas, library, tests); "
        "implied by --dtypes string, int4 or uint4 (PyTorch computes on none of them)",
    )
    parser.add_argument(
        "--inputs",
        default="X",
        help="comma-separated names (default: X); the last may end in * to take one value or "
        "more (variadic: Rest*)",
    )
    parser.add_argument(
        "--outputs",
        default="Y",
        help="comma-separated names (default: Y); with a variadic input the last may end in * "
        "to give one value per value of it (Each*; a Tensor[] return in PyTorch)",
    )
    parser.add_argument(
        "--attribute",
        action="append",
        default=[],
        metavar="NAME:TYPE[=DEFAULT|?]",
        help="repeatable; TYPE is one of "
        + ", ".join(t.value for t in VALUE_ATTR_TYPES)
        + "; list "
        "defaults are comma-separated (sizes:ints=1,2); no default makes it required, ? "
        "optional without a default (scale:float?)",
    )
    parser.add_argument(
        "--dtypes", default="float32,float64", help="T's dtypes (default: float32,float64)"
    )
    parser.add_argument(
        "--dtype-attribute",
        action="append",
        default=[],
        metavar="NAME=DTYPES",
        help="the last output's element type is chosen by int attribute NAME among DTYPES "
        "(comma-separated; the first is its default), as Cast's `to`: a type variable "
        "`chosen_by` it; the PyTorch op takes a torch.dtype there",
    )
    parser.add_argument(
        "--device",
        action="append",
        default=[],
        choices=[k.device for k in DEVICE_KERNELS],
        help="repeatable; a kernel for that device too, beside the C++ one: "
        + "; ".join(k.help for k in DEVICE_KERNELS),
    )
    parser.add_argument("--name", help="the definition's file name stem (default: <op_snake>)")
    config.add_arguments(parser, "opdefs_dir", "output_dir", "package")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    return parser


def _device_kernels(args: argparse.Namespace) -> list[DeviceKernel]:
    """The device kernels --device asks for, each once, in DEVICE_KERNELS' order."""
    chosen = set(getattr(args, "device", []))
    return [k for k in DEVICE_KERNELS if k.device in chosen]


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _names(text: str, what: str) -> list[str]:
    # Checked before rendering: names go into the YAML unquoted. (The parser checks the rest.)
    names = [n.strip() for n in text.split(",")]
    for name in names:
        if not IDENTIFIER.fullmatch(name):
            raise ScaffoldError(f"{what}: '{name}' is not a valid identifier")
    if len(set(names)) != len(names):
        raise ScaffoldError(f"{what}: a name appears twice in '{text}'")
    return names


def _attribute(spec: str) -> _Attribute:
    match = re.fullmatch(
        r"([A-Za-z_][A-Za-z0-9_]*):([A-Za-z0-9_]+(?:\([A-Za-z0-9_]*\))?)(\?|=(.*))?", spec, re.S
    )
    if not match:
        raise ScaffoldError(
            f"--attribute '{spec}': expected NAME:TYPE, NAME:TYPE=DEFAULT or NAME:TYPE? "
            "(optional without a default); TYPE tensor(DTYPE) for a tensor attribute"
        )
    name, type_name, suffix, default = match.groups()
    tensor = re.fullmatch(r"tensor\(([A-Za-z0-9_]*)\)", type_name)
    if tensor:
        return {
            "name": name,
            "type": AttrType.tensor,
            "default": None,
            "optional": suffix == "?",
            "dtype": _tensor_dtype(spec, tensor.group(1), default),
        }
    kinds = {t.value: t for t in VALUE_ATTR_TYPES}  # what a kernel op's attributes can be
    if type_name not in kinds:
        raise ScaffoldError(
            f"--attribute '{spec}': type '{type_name}' is not one of {', '.join(kinds)}"
        )
    kind = kinds[type_name]
    value = None if default is None else _parse_default(spec, kind, default)
    problem = None if value is None else attribute_value_problem(value, kind)
    if problem:  # the same range checks as a definition's values (int64, finite float32)
        raise ScaffoldError(f"--attribute '{spec}': {problem}")
    if value is not None:
        _yaml(value, f"--attribute '{spec}'")  # a text YAML can hold (no lone surrogate)
    return {"name": name, "type": kind, "default": value, "optional": suffix == "?", "dtype": None}


def _tensor_dtype(spec: str, dtype_name: str, default: str | None) -> DType:
    if default is not None:
        raise ScaffoldError(f"--attribute '{spec}': a tensor attribute takes no default")
    allowed = tensor_attribute_dtype_names()
    dtype = next((d for d in TENSOR_ATTRIBUTE_DTYPES if d.value == dtype_name), None)
    if dtype is None:
        raise ScaffoldError(
            f"--attribute '{spec}': a tensor attribute's dtype is one of {allowed}, not "
            f"'{dtype_name}'"
        )
    return dtype


def _sample(attr: _Attribute) -> AttributeValue:
    """A value for the tests of an attribute declared without default."""
    if attr["dtype"] is not None:  # a tensor attribute: a vector of one element
        return [0.5] if attr["dtype"].is_floating else [1]
    return _SAMPLE[attr["type"]]


def _required(attr: _Attribute) -> bool:
    return attr["default"] is None and not attr["optional"]


def _requirement(attr: _Attribute) -> str:
    if attr["default"] is not None:
        return f", default: {_yaml(attr['default'])}"
    return ", required: false" if attr["optional"] else ""


def _parse_default(spec: str, kind: AttrType, text: str) -> AttributeValue:
    scalar: dict[AttrType, Callable[[str], int | float | str]] = {
        AttrType.int: int,
        AttrType.ints: int,
        AttrType.float: float,
        AttrType.floats: float,
        AttrType.string: str,
        AttrType.strings: str,
    }
    try:
        if kind is AttrType.bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if kind.is_list:
            return [scalar[kind](item) for item in text.split(",")] if text else []
        return scalar[kind](text)
    except ValueError:
        raise ScaffoldError(f"--attribute '{spec}': '{text}' is not a {kind.value} value") from None


def _dtypes(text: str, what: str = "--dtypes") -> list[DType]:
    try:
        dtypes = [DType(d.strip()) for d in text.split(",")]
    except ValueError as exc:
        known = ", ".join(d.value for d in DType)
        raise ScaffoldError(f"{what}: {exc}; known: {known}") from None
    repeated = sorted({d.value for d in dtypes if dtypes.count(d) > 1})
    if repeated:
        raise ScaffoldError(f"{what}: {', '.join(repeated)} given more than once")
    if DType.string in dtypes and len(dtypes) > 1:
        raise ScaffoldError(
            f"{what}: string with other dtypes: one known value cannot serve both (scaffold "
            "--dtypes string alone, then add the others with a case per dtype)"
        )
    return dtypes


@dataclass(frozen=True)
class _Chooser:
    """--dtype-attribute: the attribute that picks the last output's type, and the dtypes."""

    attribute: str
    type_var: str
    dtypes: list[DType]


def _chooser(specs: list[str], taken: set[str]) -> _Chooser | None:
    if not specs:
        return None
    if len(specs) > 1:
        raise ScaffoldError(
            "--dtype-attribute given twice: it picks the last output's type (add other type "
            "attributes to the definition by hand)"
        )
    spec = specs[0]
    name, equals, dtypes = spec.partition("=")
    if not equals or not IDENTIFIER.fullmatch(name.strip()):
        raise ScaffoldError(f"--dtype-attribute '{spec}': expected NAME=DTYPES (to=float16,int64)")
    name = name.strip()
    if name in taken:
        raise ScaffoldError(f"--dtype-attribute {name}: the name is taken")
    # The variable: U, or the first of U1, U2, ... that no name of the op takes.
    type_var = next(
        v for v in ["U", *(f"U{i}" for i in range(1, len(taken) + 2))] if v not in taken
    )
    chosen = _dtypes(dtypes, f"--dtype-attribute {name}")
    if DType.string in chosen:  # its known values would be numbers
        raise ScaffoldError(f"--dtype-attribute {name}: string is not scaffolded; write it in")
    four_bit = [d.value for d in chosen if d in (DType.int4, DType.uint4)]
    if four_bit:  # the identity's copy would not fit (-1 as uint4): the conversion is the op's
        raise ScaffoldError(
            f"--dtype-attribute {name}: {four_bit[0]} is not scaffolded (a copy of the input "
            "may not fit it); write it in"
        )
    return _Chooser(name, type_var, chosen)


def _yaml(value: Value, flag: str = "") -> str:
    """The value as YAML, read back to prove it (generator.yaml_text); what YAML cannot hold is
    refused at the flag that gave it."""
    try:
        return value_text(value)
    except ValueError as exc:
        raise ScaffoldError(f"{flag}: {exc}") from None


def _parameters(text: str, what: str) -> tuple[list[str], str | None]:
    """--inputs or --outputs (`what`): the names, and the variadic one (the last, written
    NAME*), if any."""
    if not text.strip() and what == "--inputs":  # the capability table's refusal, said early
        raise ScaffoldError(
            f"--inputs: {Feature.no_inputs.value} gets the ONNX schema alone for now "
            "(docs/capabilities.md); name at least one input"
        )
    variadic = text.rstrip().endswith("*")
    if "*" in text.rstrip().removesuffix("*"):
        raise ScaffoldError(f"{what}: only the last name may be variadic (NAME*), in '{text}'")
    names = _names(text.rstrip().removesuffix("*"), what)
    return names, names[-1] if variadic else None


def _torch_api(args: argparse.Namespace) -> TorchApi:
    """How the op's kernel registers with PyTorch: the configuration's torch-api (a CUDA kernel
    registers natively, as generator/parse/op.py says)."""
    if any(k.device == "cuda" for k in _device_kernels(args)):
        return TorchApi.native
    settings: config.Config | None = getattr(args, "settings", None)
    return settings.torch_api if settings is not None else TorchApi.native


def _torch_name(
    args: argparse.Namespace, op_id: str, attributes: list[_Attribute], chooser: _Chooser | None
) -> str:
    """The op's PyTorch name: --torch-name, or one made of the domain and the op id that the
    checks accept (`_ops` after a namespace that is PyTorch's, `_op` after a name that is
    taken). Refuses what the configured torch-api cannot register, naming the flag."""
    api = _torch_api(args)
    if api is TorchApi.legacy:
        _refuse_defaults_for_legacy(attributes, chooser)
    if args.torch_name:
        return str(args.torch_name)
    namespace = args.domain.replace(".", "_")
    candidates = [
        f"{space}::{name}"
        for space in (namespace, f"{namespace}_ops")
        for name in (op_id, f"{op_id}_op")
    ]
    return next((c for c in candidates if new_op_name_problem(c, api) is None), candidates[0])


def _refuse_defaults_for_legacy(attributes: list[_Attribute], chooser: _Chooser | None) -> None:
    """torch._custom_op (torch-api "legacy") takes no default argument: an attribute with a
    default, an optional one (None by default) or a dtype attribute (its first dtype by
    default) cannot be registered so."""
    why = (
        "the configured torch-api 'legacy' (torch._custom_op) takes no default arguments; "
        "give --no-torch, or configure another torch-api (native, library, custom_op)"
    )
    for attr in attributes:
        if attr["default"] is not None or attr["optional"]:
            what = "a default" if attr["default"] is not None else "None by default"
            raise ScaffoldError(
                f"--attribute {attr['name']}: it has {what}, but {why}, or make it required "
                f"({attr['name']}:TYPE)"
            )
    if chooser is not None:
        raise ScaffoldError(
            f"--dtype-attribute {chooser.attribute}: it defaults to "
            f"{chooser.dtypes[0].value}, but {why}"
        )


@dataclass(frozen=True)
class _ChooserLines:
    """The chosen type variable and its attribute, as the scaffolded definition writes them."""

    type_var: str
    dtypes: str
    attribute: str
    default_literal: str


@dataclass(frozen=True)
class _InputLine:
    name: str
    fields: str  # after name and type


@dataclass(frozen=True)
class _Interface:
    """The op's inputs, outputs, attributes and dtypes as the flags give them, checked."""

    inputs: list[str]
    variadic: str | None  # the variadic input
    outputs: list[str]
    variadic_output: str | None
    attributes: list[_Attribute]  # required ones first
    dtypes: list[DType]  # --dtypes: type variable T's
    chooser: _Chooser | None
    all_dtypes: list[DType]  # T's and the chooser's
    strings: bool  # a string op
    without_torch: bool  # no PyTorch side
    pytorch_alone: bool  # complex tensors: a PyTorch kernel alone, no ONNX Runtime

    @property
    def first(self) -> str:
        return self.inputs[0]

    def input_fields(self, name: str) -> str:
        """An input's fields after its name and type."""
        if name == self.variadic:
            return ", variadic: true"
        return ", shape: [...]" if name == self.first else ""

    def output_fields(self, name: str) -> str:
        """An output's fields after its name and type."""
        if name == self.variadic_output:
            return f"variadic: true, same_shape_as: {self.variadic}"
        if self.first == self.variadic:
            return f'shape: "broadcast({self.first})"'
        return f"same_shape_as: {self.first}"

    def known_values(self, name: str, variadic: str | None) -> str:
        """A parameter's values in the known case (a variadic one has two)."""
        values = _known_values(self.all_dtypes)
        return _yaml([values, values] if name == variadic else values)

    def random_shape(self, name: str) -> str:
        return "[[batch, 3], [batch, 3]]" if name == self.variadic else "[batch, 3]"

    def reference(self) -> str:
        """The identity: every output a copy of the first input (its first value, where it is
        the variadic one; a string tensor is a numpy array in the tests). A variadic output
        copies the variadic input's values, one for one; a chosen type's output converts."""
        source = f"{self.first}[0]" if self.first == self.variadic else self.first
        copies = [f"{source}.copy()" if self.strings else f"{source}.clone()"] * len(self.outputs)
        if self.variadic_output:
            copies[-1] = f"[value.clone() for value in {self.variadic}]"
        if self.chooser is not None:  # the last output: the copy in the type the attribute names
            copies[-1] = f"{source}.to({self.chooser.type_var})"
        return copies[0] if len(copies) == 1 else f"({', '.join(copies)})"

    def output_types(self) -> list[str]:
        types = ["T"] * len(self.outputs)
        if self.chooser is not None:
            types[-1] = self.chooser.type_var
        return types


def _interface(args: argparse.Namespace) -> _Interface:
    """The flags' interface, refused (ScaffoldError, naming the flag) where it cannot be
    scaffolded."""
    inputs, variadic = _parameters(args.inputs, "--inputs")
    outputs, variadic_output = _parameters(args.outputs, "--outputs")
    if set(inputs) & set(outputs):
        raise ScaffoldError("--inputs and --outputs share a name")
    if variadic_output and not variadic:
        raise ScaffoldError(
            f"--outputs {variadic_output}*: a variadic output pairs with the variadic input (one "
            "value per value of it); end --inputs with NAME* too"
        )
    # Required attributes first: PyTorch wants arguments without default before the others.
    attributes = sorted(
        (_attribute(spec) for spec in args.attribute), key=lambda a: not _required(a)
    )
    taken = set(inputs) | set(outputs)
    for attr in attributes:
        if attr["name"] in taken:
            raise ScaffoldError(f"--attribute {attr['name']}: the name is taken")
        taken.add(attr["name"])
    dtypes = _dtypes(args.dtypes)
    chooser = _chooser(args.dtype_attribute, taken | {"T"})
    strings = dtypes == [DType.string]
    # Element types PyTorch has none of (or computes nothing on): ONNX Runtime alone.
    chosen = chooser.dtypes if chooser else []
    not_in_torch = [d.value for d in dtypes + chosen if not d.in_torch]
    if not_in_torch and args.torch_name:
        lacks = "has no" if not_in_torch[0] == "string" else "computes nothing on"
        raise ScaffoldError(
            f"--dtypes {not_in_torch[0]}: PyTorch {lacks} {not_in_torch[0]} tensors; leave out "
            "--torch-name"
        )
    if variadic_output and chooser is not None:
        raise ScaffoldError(
            f"--outputs {variadic_output}* with --dtype-attribute: the attribute's type is "
            "scaffolded on the last output; not scaffolded, write it in"
        )
    if variadic_output and (strings or not_in_torch):
        raise ScaffoldError(
            f"--outputs {variadic_output}*: a variadic output of strings or 4-bit integers is not "
            f"carried yet; leave out --dtypes {(not_in_torch or ['string'])[0]}"
        )
    all_dtypes = dtypes + [d for d in chosen if d not in dtypes]
    tensor_attribute = next((a["name"] for a in attributes if a["dtype"] is not None), None)
    if tensor_attribute and args.torch_name:
        raise ScaffoldError(
            f"--attribute {tensor_attribute}: a tensor attribute runs in ONNX Runtime alone for "
            "now (no PyTorch side yet); leave out --torch-name"
        )
    without_torch = args.no_torch or bool(not_in_torch) or bool(tensor_attribute)
    pytorch_alone = any(d.is_complex for d in all_dtypes)
    if without_torch and pytorch_alone:
        raise ScaffoldError(
            "--dtypes complex64/complex128: ONNX Runtime has no complex tensors, so such an op "
            "runs in PyTorch alone; leave out --no-torch (and strings, int4, uint4)"
        )
    return _Interface(
        inputs,
        variadic,
        outputs,
        variadic_output,
        attributes,
        dtypes,
        chooser,
        all_dtypes,
        strings,
        without_torch,
        pytorch_alone,
    )


def _definition_text(args: argparse.Namespace, op_id: str, kernel_file: str) -> str:
    """The definition's text (the kernel files named: the C++ one, and the devices' asked for)."""
    from generator.render import environment

    op = _interface(args)
    chooser = op.chooser
    required = {a["name"]: _sample(a) for a in op.attributes if _required(a)}
    torch_name = None if op.without_torch else _torch_name(args, op_id, op.attributes, chooser)
    return (
        environment()
        .get_template("scaffold/opdef.yaml.j2")
        .render(
            op_type=args.op,
            package_dir=Path(os.path.relpath(args.output_dir.absolute())).as_posix(),
            op_id=op_id,
            domain_literal=_yaml(args.domain, "--domain"),
            torch_name=torch_name,
            pytorch_alone=op.pytorch_alone,
            torch_name_literal=_yaml(torch_name, "--torch-name") if torch_name else None,
            dtypes=[d.value for d in op.dtypes],
            floating_dtypes=[d.value for d in op.all_dtypes if d.is_floating],
            chooser=(
                _ChooserLines(
                    chooser.type_var,
                    ", ".join(d.value for d in chooser.dtypes),
                    chooser.attribute,
                    _yaml(chooser.dtypes[0].value),
                )
                if chooser
                else None
            ),
            inputs=[_InputLine(name, op.input_fields(name)) for name in op.inputs],
            outputs=[
                (name, type_var, op.output_fields(name))
                for name, type_var in zip(op.outputs, op.output_types(), strict=True)
            ],
            first_input=op.first,
            variadic_output=op.variadic_output,
            variadic_input=op.variadic,
            attributes=[
                _AttributeLine(
                    a["name"],
                    a["type"].value + (f", dtype: {a['dtype'].value}" if a["dtype"] else ""),
                    _requirement(a),
                )
                for a in op.attributes
            ],
            reference_literal=_yaml(op.reference()),
            kernel_file=kernel_file,
            device_kernels=[(k.field, f"{op_id}{k.suffix}") for k in _device_kernels(args)],
            known_inputs=", ".join(
                f"{name}: {op.known_values(name, op.variadic)}" for name in op.inputs
            ),
            known_outputs=", ".join(
                f"{name}: {op.known_values(name, op.variadic_output)}" for name in op.outputs
            ),
            required_values=", ".join(f"{k}: {_yaml(v)}" for k, v in required.items()),
            random_shapes=", ".join(f"{name}: {op.random_shape(name)}" for name in op.inputs),
        )
    )


def kernel_stub(
    op: OpDef, definition_file: str, package_dir: str, names: common.StubNames | None = None
) -> str:
    """The identity kernel every scaffolded op starts from (`package_dir`: the generated
    package's folder, as the definition's comments name it)."""
    from generator.dest import common
    from generator.render import environment

    names = names or common.stub_names(op)

    element = f"{names.first_input}.data[{names.local('i')}]"
    from_type = common.tensor_cpp_type(op.inputs[0])

    def copied(output: TensorParam) -> str:
        """The first input's element as the output's type (through their compute types)."""
        to_type = common.tensor_cpp_type(output)
        if to_type == from_type:
            return element
        number = f"static_cast<opgen::compute_type<{from_type}>>({element})"
        return f"static_cast<{to_type}>(static_cast<opgen::compute_type<{to_type}>>({number}))"

    return (
        environment()
        .get_template("scaffold/kernel.h.j2")
        .render(
            op_type=op.op_type,
            op_id=op.op_id,
            with_pybind=op.torch is not None,
            with_ort=op.has_ort_kernel,
            package_dir=package_dir,
            definition_file=definition_file,
            template_decl=common.template_decl(op),
            compute_params=common.compute_params(op),
            first_input=names.first_input,
            outputs=[(t.name, copied(t)) for t in names.outputs],
            value_copies=names.value_copies,
            v=names.local("v"),
            unused=names.unused,
            begin=names.local("begin"),
            end=names.local("end"),
            i=names.local("i"),
        )
    )


def _check_op_id(args: argparse.Namespace, op_id: str) -> None:
    """The file name stem must be safe to make paths of: a stem such as '../../x' or '/tmp/x'
    would write outside the opdefs directory, a very long one fail half-way through writing.
    (The trial parse checks the rest, reserved names included, with every other problem.)"""
    if IDENTIFIER.fullmatch(op_id) and len(op_id) <= MAX_NAME_LENGTH:
        return
    if not args.name:
        raise ScaffoldError(
            f"op type '{args.op}' is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*)"
            if not IDENTIFIER.fullmatch(args.op)
            else f"{op_id_problem(op_id)} (the file name comes from the op type; give --name)"
        )
    raise ScaffoldError(f"--name: {op_id_problem(op_id)}")


def _trial(args: argparse.Namespace, text: str, definition: Path, settings: config.Config) -> OpDef:
    """The new op, parsed, checked with every definition already in the folder, and generated
    in memory (no file written): a clash, an unusable folder or a user's file where a generated
    one would go is found now, before anything is written. Raises ScaffoldError, ConfigError,
    DefinitionErrors or OwnershipError."""
    from generator import project as proj
    from generator.parse.project import check_project
    from generator.writer import folder_conflicts, folder_problem

    for what, folder in (
        ("the definitions folder", args.opdefs_dir),
        ("the package folder", args.output_dir),
    ):
        problem = folder_problem(folder)
        if problem:
            raise ScaffoldError(f"{what} {folder} {problem}")
    with tempfile.TemporaryDirectory(prefix="opgen-new-") as scratch:
        trial = Path(scratch) / definition.name
        trial.write_text(text, encoding="utf-8")
        (Path(scratch) / f"{definition.stem}_kernel.h").write_text("", encoding="utf-8")
        for device_kernel in _device_kernels(args):
            (Path(scratch) / f"{definition.stem}{device_kernel.suffix}").write_text("")
        # The stub names the definition as generated files do: relative to the project root.
        root = args.opdefs_dir.resolve().parent
        op = parse_opdef(
            trial,
            definition.as_posix(),
            display(definition.resolve(), root),
            settings.torch_api,  # as the run after writing will parse it
        )
        project = proj.Project.of(
            args.opdefs_dir, args.output_dir, settings.generated_package(), settings.torch_api
        )
        others = proj.load(project, proj.discover(project), Path.cwd())
        check_project([*others, op])
        try:
            planned = proj.generate(project, [op], [*others, op], write=False)
        except (proj.GenerationError, proj.OutputError) as exc:
            raise ScaffoldError(str(exc)) from None
        unwritable = folder_conflicts(
            project.output_dir, planned.paths, planned.changes, writing=True
        )
        if unwritable:
            raise OwnershipError(unwritable)
    return op


def _configure(args: argparse.Namespace) -> tuple[config.Config, bool] | None:
    """The project's configuration for `new` and `import`, and whether it has to be written
    first (none found: the package is named after the folder unless --package says)."""
    try:
        needs_config = (args.config or config.find()) is None
        if needs_config and args.package is None and args.output_dir is None:
            args.package = config.package_for_folder(Path.cwd())
    except config.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    except DefinitionError as malformed:  # a broken pyproject.toml that mentions opgen
        print(f"error: {malformed}", file=sys.stderr)
        return None
    settings = config.apply(args)
    return None if settings is None else (settings, needs_config)


def main(argv: list[str], generate: Callable[[list[str]], int]) -> int:
    """Writes the new op's files, then runs `generate` (the CLI's main) on the definition."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    configured = _configure(args)
    if configured is None:
        return EXIT_BAD_INPUT
    settings, needs_config = configured
    if args.domain is None:
        args.domain = default_domain(settings.package)
    op_id = args.name or snake_case(args.op)
    try:
        text = _definition_text(args, op_id, f"{op_id}_kernel.h")
        _check_op_id(args, op_id)  # before any path is made from it
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _locked(_Scaffold(args, settings, text, op_id, needs_config, "new"), generate)


@dataclass(frozen=True)
class _Scaffold:
    """What `new` or `import` writes: a definition (`new`: and its kernel stub)."""

    args: argparse.Namespace
    settings: config.Config
    text: str
    op_id: str
    needs_config: bool
    command: str  # "new" writes a kernel stub too; "import" the definition alone

    @property
    def definition(self) -> Path:
        return Path(self.args.opdefs_dir) / f"{self.op_id}.yaml"

    @property
    def kernel(self) -> Path | None:
        if self.command != "new":
            return None
        return Path(self.args.opdefs_dir) / f"{self.op_id}_kernel.h"

    @property
    def device_kernels(self) -> list[tuple[DeviceKernel, Path]]:
        if self.command != "new":
            return []
        folder = Path(self.args.opdefs_dir)
        return [(k, folder / f"{self.op_id}{k.suffix}") for k in _device_kernels(self.args)]


def _locked(plan: _Scaffold, generate: Callable[[list[str]], int]) -> int:
    from generator.project_lock import project_lock

    # One run at a time in the project: another's generation would take this op's files for
    # orphans, or write the shared files without it.
    with project_lock(plan.args.opdefs_dir, exclusive=True):
        return _new(plan, generate)


def _new(plan: _Scaffold, generate: Callable[[list[str]], int]) -> int:
    """Checks everything, then writes the new op's files and generates them."""
    args, settings, text, op_id = plan.args, plan.settings, plan.text, plan.op_id
    definition, kernel = plan.definition, plan.kernel
    paths = [definition] + ([kernel] if kernel else []) + [p for _, p in plan.device_kernels]
    existing = [str(p) for p in paths if os.path.lexists(p)]
    if existing:
        print(
            f"error: {', '.join(existing)} exists; `{plan.command}` never overwrites (--name "
            "gives the definition another file name)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        # Everything that could refuse the op is asked before the first byte is written.
        initial = config.plan_initial(settings) if plan.needs_config else None
        op = _trial(args, text, definition, settings)
    except (ScaffoldError, config.ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DefinitionError as malformed:
        print(f"error: {malformed}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DefinitionErrors as errors:
        for error in errors.errors:
            print(f"error: {error}", file=sys.stderr)
        print(
            f"{len(errors.errors)} error(s) in the definition the flags make (not written); "
            "nothing written",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except OwnershipError as refused:
        return refused.report()
    from generator.writer import write_atomic

    if initial is not None:
        written = config.write_initial(initial)
        if not args.quiet:
            print(f"new: {written} (the project's opgen configuration)")
    write_atomic(definition, text)
    if kernel is not None:
        package_dir = Path(os.path.relpath(args.output_dir.absolute())).as_posix()
        from generator.dest.common import stub_names

        names = stub_names(op)
        write_atomic(kernel, kernel_stub(op, op.definition_path, package_dir, names))
        for device_kernel, path in plan.device_kernels:
            module, function = device_kernel.stub.split(":")
            render_stub = getattr(importlib.import_module(module), function)
            write_atomic(path, render_stub(op, op.definition_path, package_dir, names))
    if not args.quiet:
        print("\n".join(f"new: {path}" for path in paths))
    status = generate(
        [
            str(definition),
            "--opdefs-dir",
            str(args.opdefs_dir),
            "--output-dir",
            str(args.output_dir),
            "--package",
            settings.package,
            *(["--config", str(args.config)] if args.config is not None else []),
            *(["-q"] if args.quiet else []),
        ]
    )
    if status == EXIT_OK and not args.quiet and kernel is not None:
        print(
            f"next: opgen build && python -m pytest {args.output_dir}/{op_id}"
            f"   (then replace the TODOs in {', '.join(map(str, paths))})"
        )
    elif status == EXIT_OK and not args.quiet:
        print(f"next: replace the TODOs in {definition} (an implementation, a reference, tests)")
    return status


def import_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator import",
        description="Write an op definition from a schema registered in this process (ONNX's "
        "operators, ONNX Runtime's contrib operators such as com.microsoft::Attention, or one "
        "registered with onnx.defs.register_schema) into the definitions folder, then generate "
        "it. The definition declares the op's ONNX interface; TODO comments name what a schema "
        "does not hold (an implementation, a reference, tests, shapes). Never overwrites.",
        epilog="Examples: python -m generator import com.microsoft::SkipLayerNormalization; "
        "python -m generator import Cast --version 13 --domain my.ops. "
        "Exit codes: 0 ok, 2 bad usage, no such schema, or the file exists.",
    )
    parser.add_argument(
        "op", help="the op, DOMAIN::OP or OP (ONNX's domains first, then ONNX Runtime's)"
    )
    parser.add_argument("--version", type=int, help="the schema's since-version (default: latest)")
    parser.add_argument(
        "--domain",
        help="the domain of the definition (default: the schema's; for ONNX's own domains, "
        "the package's name in lower case, as for new)",
    )
    parser.add_argument("--name", help="the definition's file name stem (default: <op_snake>)")
    config.add_arguments(parser, "opdefs_dir", "output_dir", "package")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    return parser


def import_stem(op_name: str) -> str:
    """The file stem of an imported op: its snake case, unless that is a name the generated code
    takes (`Shape` -> `shape_op`)."""
    from generator import importer

    stem = importer.stem_for(op_name)
    return stem + "_op" if op_id_problem(stem) else stem


def import_main(argv: list[str], generate: Callable[[list[str]], int]) -> int:
    """`opgen import`: writes the definition of a registered schema, then generates it."""
    from generator import importer

    try:
        args = import_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_BAD_INPUT if exc.code else EXIT_OK
    source_domain, _, name = args.op.rpartition("::")
    try:
        record = importer.find_schema(
            name, source_domain if "::" in args.op else None, args.version
        )
    except LookupError as missing:
        print(f"error: {missing.args[0] if missing.args else missing}", file=sys.stderr)
        return EXIT_BAD_INPUT
    configured = _configure(args)
    if configured is None:
        return EXIT_BAD_INPUT
    settings, needs_config = configured
    if args.domain is None:
        args.domain = (
            default_domain(settings.package) if record.domain in ONNX_DOMAINS else record.domain
        )
    args.op = record.name
    op_id = args.name or import_stem(record.name)
    try:
        _check_op_id(args, op_id)  # before any path is made from it
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    text = importer.definition_text(record, domain=args.domain, stem=op_id, provided_by=False)
    return _locked(_Scaffold(args, settings, text, op_id, needs_config, "import"), generate)
