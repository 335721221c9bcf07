"""One op definition (OpDef) and its PyTorch binding and kernel; the facts derived from them."""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from itertools import product
from pathlib import Path
from typing import Any

from generator.errors import DefinitionError, Location
from generator.model.nodes import ExportRule, Function, OnnxNode
from generator.model.shapes import RangeCheck, ShapeRule
from generator.model.tensors import Attribute, TensorParam, VariadicArity, input_of
from generator.model.tests import ErrorCase, Tests
from generator.model.types import (
    TENSOR_PROTO_NUMBER,
    TORCHSCRIPT_MISSING_DTYPES,
    AttrType,
    DType,
    Instantiation,
    TypeConstraint,
    message_value,
    type_choosers,
)


@dataclass(frozen=True)
class FromInput:
    """An output has the dtype of this input (a variadic one's by its first value)."""

    input: str


@dataclass(frozen=True)
class FromAttribute:
    """An output has the dtype this int attribute names (TensorProto.DataType's number)."""

    attribute: str


@dataclass(frozen=True)
class FixedDType:
    dtype: DType


# Where an output's dtype comes from: what every inference (ONNX's, ONNX Runtime's, PyTorch's
# fake kernel) spells in its own way.
DTypeSource = FromInput | FromAttribute | FixedDType


@dataclass(frozen=True)
class Kernel:
    """The op runs a C++ kernel written beside the definition."""

    source_file: Path | None  # a file beside the definition holding the full definition
    body: str | None  # or the body of `compute`, inline
    # Compiled into the domain's ONNX Runtime library; false (`onnxruntime: false`) for an op
    # that runs in PyTorch alone (complex tensors, which ONNX Runtime lacks).
    in_onnxruntime: bool = True
    # A CUDA kernel beside the C++ one (`cuda:`, a file nvcc compiles), run where the tensors
    # are on a GPU: by PyTorch's CUDA dispatch key and ONNX Runtime's CUDA provider.
    cuda_file: Path | None = None

    @property
    def devices(self) -> tuple[str, ...]:
        """The devices beside the CPU it has kernels for, as PyTorch names them."""
        return ("cuda",) if self.cuda_file is not None else ()

    @property
    def files(self) -> tuple[Path, ...]:
        """Its files beside the definition: the C++ kernel's and the devices' kernels'."""
        return tuple(file for file in (self.source_file, self.cuda_file) if file is not None)


class Runtime(Enum):
    onnxruntime = "onnxruntime"


@dataclass(frozen=True)
class ProvidedBy:
    """The runtime already has the op (the definition adds its PyTorch side and export)."""

    runtime: Runtime


# What implements the op's ONNX side: a kernel, an ONNX function body, or the runtime itself;
# None for an export-only definition, which lowers a PyTorch op onto other ONNX ops.
Implementation = Kernel | Function | ProvidedBy


class TorchApi(Enum):
    """How a new PyTorch op is registered (torch.name's `api`)."""

    # The schema and CPU kernel registered from C++ (PyTorch's stable ABI), kernel ops only
    # (their default): no Python at call time, and TorchScript and AOTInductor without Python.
    native = "native"
    # torch.library.Library define/impl + register_fake + an autograd kernel: the least
    # Python per call of the Python registrations (the default for ops without a kernel).
    library = "library"
    custom_op = "custom_op"  # torch.library.custom_op: a CustomOpDef, for its register_* methods
    legacy = "legacy"  # torch._custom_op, older PyTorch releases' API; no gradients


@dataclass(frozen=True)
class TorchBinding:
    """A new PyTorch op (`name`), or an existing ATen overload whose export the definition
    overrides (`overrides`; no new PyTorch op)."""

    namespace: str
    name: str
    api: TorchApi
    overload: str = "default"
    is_override: bool = False

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}::{self.name}"

    @property
    def takes_gradients(self) -> bool:
        """A new op whose registration can carry gradient formulas (not the legacy API)."""
        return not self.is_override and self.api is not TorchApi.legacy

    @property
    def overload_name(self) -> str:
        """As in the ONNX exporters' tables: `aten::add.Tensor`."""
        return f"{self.qualified_name}.{self.overload}"


def message_prefix(op_type: str | None, torch: TorchBinding | None, op_id: str | None) -> str:
    """How the op's error messages start: the ONNX op type (kOpType in C++), else the PyTorch
    op."""
    return op_type or (torch.qualified_name if torch else op_id) or ""


@dataclass(frozen=True)
class OpDef:
    op_id: str  # file stem: names generated/<op_id>/ and the C++ namespace
    # As generated files name it: relative to the project root (the opdefs directory's parent),
    # so that the output is the same bytes whatever the working directory.
    definition_path: str
    op_type: str | None  # the ONNX op it defines; None for an export-only definition
    domain: str | None
    version: int | None
    doc: str
    torch: TorchBinding | None
    type_constraints: tuple[TypeConstraint, ...]
    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attributes: tuple[Attribute, ...]
    shape_rule: ShapeRule
    reference: str  # as generated modules paste it (parse/expressions.py pasteable_expression)
    reference_upcast: bool
    implementation: Implementation | None
    export: tuple[ExportRule, ...]  # empty without a PyTorch side
    tests: Tests
    # Every version of the op, oldest first (`version` is the newest); one for most ops.
    versions: tuple[int, ...] = ()
    # input -> backward formula for its gradient (register_autograd), pasteable as `reference`;
    # empty: no autograd
    gradients: dict[str, str] = field(default_factory=dict)
    # `replaces: onnxruntime`: the kernel takes the place of ONNX Runtime's own op of its name
    # (model/onnxruntime_domains.py)
    replaces: Runtime | None = None
    # Where each top-level field (and "torch.name") is, for errors found across definitions.
    locations: dict[str, Location] = field(default_factory=dict, compare=False)
    # As messages on the terminal name it: relative to the working directory (or absolute).
    display_path: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # The parser rejects an ONNX name given in part; code that tests one of these fields
        # (defines_onnx_op tests op_type) relies on the other two being there as well.
        if len({self.op_type is None, self.domain is None, self.version is None}) > 1:
            raise ValueError(f"{self.op_id}: give op_type, domain and version together, or none")

    def located(self, field_path: str, message: str) -> DefinitionError:
        root = Location(self.display_path, 1, 1)
        return DefinitionError(self.locations.get(field_path, root), field_path, message)

    @property
    def kernel(self) -> Kernel | None:
        return self.implementation if isinstance(self.implementation, Kernel) else None

    @property
    def function(self) -> Function | None:
        return self.implementation if isinstance(self.implementation, Function) else None

    @property
    def provided_by(self) -> Runtime | None:
        match self.implementation:
            case ProvidedBy(runtime):
                return runtime
        return None

    @property
    def defines_onnx_op(self) -> bool:
        return self.op_type is not None

    @property
    def is_interface_only(self) -> bool:
        """Declares an ONNX op's interface only (what `opgen import` writes): nothing implements
        or exports it, so it gets the ONNX schema alone."""
        return self.defines_onnx_op and self.implementation is None and self.torch is None

    @property
    def title(self) -> str:
        """How generated code, tests and messages name the op: its ONNX op (`ai.opgen::Inverse`),
        or for an export-only definition the PyTorch overload it exports (`aten::add.Tensor`)."""
        if self.op_type is not None:
            return f"{self.domain}::{self.op_type}"
        assert self.torch is not None  # parse: an export-only definition has a PyTorch op
        return self.torch.overload_name

    @property
    def message_prefix(self) -> str:
        return message_prefix(self.op_type, self.torch, self.op_id)

    def too_few_values_message(self, tensor: TensorParam) -> str:
        """What every runtime says of a variadic input given fewer values than its minimum,
        followed by the count it got."""
        assert isinstance(tensor.arity, VariadicArity)
        minimum = tensor.arity.min_arity
        return f"{self.message_prefix}: input '{tensor.name}' takes {minimum} or more values, got "

    def paired_input(self, output: TensorParam) -> str | None:
        """The variadic input whose values a variadic output's values pair with (None for
        another output), as the shape rule says."""
        shape = next((s for s in self.shape_rule.outputs if s.output == output.name), None)
        return shape.values_of if shape is not None else None

    def paired_input_index(self, output: TensorParam) -> int | None:
        paired = self.paired_input(output)
        return [t.name for t in self.inputs].index(paired) if paired is not None else None

    def paired_count_message(self, output: TensorParam) -> str:
        """What every runtime says of a node whose variadic output has not one value per value
        of the input it pairs with, followed by "<outputs> for <inputs>"."""
        return (
            f"{self.message_prefix}: output '{output.name}' takes one value per value of input "
            f"'{self.paired_input(output)}', got "
        )

    def absent_value_message(self, tensor: TensorParam) -> str:
        """What ONNX inference says of a variadic input's value that a node names "" (absent),
        followed by its position among the node's inputs."""
        return f"{self.message_prefix}: input '{tensor.name}' has an absent value at node input "

    @property
    def has_pybind_binding(self) -> bool:
        """The domain's pybind11 module binds the kernel: the PyTorch op's Python registrations
        call it (and the kernel fuzzer and benchmarks do); an op without a PyTorch side runs in
        ONNX Runtime only."""
        return self.kernel is not None and self.torch is not None

    @property
    def has_native_torch_op(self) -> bool:
        """The domain's native library registers the PyTorch op (schema and CPU kernel, through
        PyTorch's stable ABI): torch.api native, which takes a kernel (an override is never
        native)."""
        return self.torch is not None and self.torch.api is TorchApi.native

    @property
    def has_ort_kernel(self) -> bool:
        """The domain's ONNX Runtime library serves the op with its kernel."""
        return self.kernel is not None and self.kernel.in_onnxruntime

    @property
    def runs_in_onnxruntime(self) -> bool:
        """ONNX Runtime runs a node of the op: through our library, as a function, or its own."""
        if not self.defines_onnx_op or self.implementation is None:
            return False  # an export-only or interface-only definition: nothing to run
        return self.kernel is None or self.kernel.in_onnxruntime

    @property
    def has_cpp_schema(self) -> bool:
        """Ops we implement get an ONNX C++ schema; ops a runtime provides do not."""
        return self.kernel is not None or self.function is not None

    @property
    def infers_through_function(self) -> bool:
        """A function op with outputs that have no shape rule: ONNX infers through its body."""
        return self.function is not None and len(self.shape_rule.outputs) < len(self.outputs)

    @property
    def new_torch_op(self) -> bool:
        return self.torch is not None and not self.torch.is_override

    @property
    def nodes_used(self) -> tuple[OnnxNode, ...]:
        """Every node of the export rules and the function body."""
        nodes = [n for rule in self.export for n in rule.nodes]
        return tuple(nodes + list(self.function.nodes if self.function else ()))

    @cached_property  # the emitters read it a thousand times a run
    def instantiations(self) -> tuple[Instantiation, ...]:
        names = [tc.name for tc in self.type_constraints]
        combos = product(*(tc.dtypes for tc in self.type_constraints))
        return tuple(Instantiation(tuple(zip(names, combo, strict=True))) for combo in combos)

    @property
    def error_cases(self) -> tuple[ErrorCase, ...]:
        """The definition's error cases, then, on the first random case's shapes, one for each
        value just outside a declared attribute range and one for an element type outside a
        type variable an attribute chooses: every runtime must reject it, with the same
        message."""
        cases = list(self.tests.errors)
        if not self.tests.random:
            return tuple(cases)
        first = self.tests.random[0]
        shapes = {
            name: tuple(d if isinstance(d, int) else first.dynamic[d][0] for d in dims)
            for name, dims in first.shapes.items()
        }
        rejected: list[tuple[str, int | float, str]] = []  # attribute, value, message
        checks = self.shape_rule.attribute_checks
        for check in checks:
            if isinstance(check, RangeCheck):
                for value in check.outside():
                    rejected.append((check.attribute, value, check.message))
        for name, constraint in self.type_choosers.items():
            # The first element type in ONNX's order that the variable does not allow (and
            # that PyTorch has: the tests give a dtype argument a torch.dtype).
            number = min(
                n
                for d, n in TENSOR_PROTO_NUMBER.items()
                if d not in constraint.dtypes and d.in_torch
            )
            message = next(c.message for c in checks if c.attribute == name)
            rejected.append((name, number, message))
        for name, value, message in rejected:
            attributes = {**first.attributes, name: value}
            cases.append(
                ErrorCase(shapes, None, f"{message}, got {message_value(value)}", attributes)
            )
        return tuple(cases)

    def case_attributes(
        self, attributes: Mapping[str, Any], binding: Instantiation | None = None
    ) -> dict[str, Any]:
        """A test case's attributes as the tests at a dtype binding (the first unless given)
        give them: with each attribute that chooses a type variable's dtype set to that
        binding's (tests that run every binding set it to each), where the case does not set it
        (an error case)."""
        first = binding or self.instantiations[0]
        chosen = {
            name: TENSOR_PROTO_NUMBER[first.dtype(tc.name)]
            for name, tc in self.type_choosers.items()
        }
        return {**chosen, **attributes}

    @property
    def raises_without_gradients(self) -> bool:
        """Backward through it raises our own error: a new op registered with the `library` or
        `native` api and no gradient formulas (`custom_op` raises PyTorch's; `legacy` takes
        none)."""
        return (
            self.torch is not None
            and not self.torch.is_override
            and self.torch.api in (TorchApi.library, TorchApi.native)
            and not self.gradients
        )

    @property
    def has_autograd_kernel(self) -> bool:
        """The generated package registers its own Autograd kernel (Python): the `library` api
        always; `native` for gradient formulas, or to raise without them where a gradient can
        flow (PyTorch's fallback for an op without one gives torch.func.grad and forward-mode
        AD zero gradients and tangents without an error)."""
        if self.torch is None or self.torch.is_override:
            return False
        if self.torch.api is TorchApi.library:
            return True
        return self.has_native_torch_op and (bool(self.gradients) or self.differentiable)

    @property
    def differentiable(self) -> bool:
        """Some dtype binding makes an input and an output floating: a gradient can flow
        through the op (whether or not the definition gives formulas for it)."""

        return any(
            any(t.dtype_in(binding).is_floating for t in self.inputs)
            and any(t.dtype_in(binding).is_floating for t in self.outputs)
            for binding in self.instantiations
        )

    @property
    def type_var_dtypes(self) -> dict[str, tuple[DType, ...]]:
        return {tc.name: tc.dtypes for tc in self.type_constraints}

    def dtypes_of(self, tensor: TensorParam) -> tuple[DType, ...]:
        """Every dtype a tensor of a kernel op may have (those of its type variable)."""
        if tensor.type_var is not None:
            return self.type_var_dtypes[tensor.type_var]
        return () if tensor.dtype is None else (tensor.dtype,)

    def elements_copied(self, tensor: TensorParam) -> bool:
        """ONNX Runtime does not hold the tensor's elements as the kernel sees them (strings
        are its own objects; 4-bit integers two per byte), so a kernel gets a copy of such an
        input and writes such an output into one that goes to the tensor after it returns."""
        return any(d.is_copied_by_ort for d in self.dtypes_of(tensor))

    def dtype_source(self, output: TensorParam) -> DTypeSource:
        """Where an output's dtype comes from: its concrete dtype, the attribute that chooses
        its type variable, or the first required input of that variable."""
        if output.type_var is None:
            if output.dtype is None:
                raise ValueError(f"{output.name} has type {output.concrete}, not a tensor's")
            return FixedDType(output.dtype)
        chooser = self.constraint(output.type_var).chosen_by
        if chooser is not None:
            return FromAttribute(chooser)
        for tensor in self.inputs:
            if tensor.type_var == output.type_var and not tensor.may_be_absent:
                return FromInput(tensor.name)
        raise ValueError(f"{output.name}: no input or attribute binds {output.type_var}")

    def constraint(self, type_var: str) -> TypeConstraint:
        return next(tc for tc in self.type_constraints if tc.name == type_var)

    @property
    def type_choosers(self) -> dict[str, TypeConstraint]:
        """Each attribute that chooses a type variable's dtype, and that variable's constraint."""
        return type_choosers(self.type_constraints)

    @property
    def rank_ambiguous_inputs(self) -> tuple[str, ...]:
        """Inputs whose shape the rule reads and that need not be scalars: ONNX Runtime's
        graph-time inference reports such an input of unknown rank as rank 0, so it cannot tell
        a 0-d one from it, and the rule is not run there (ort_op.cc.j2)."""
        used = self.shape_rule.shaped_inputs
        return tuple(
            t.name
            for t in self.inputs
            if t.name in used and t.name not in self.shape_rule.scalar_inputs and not t.variadic
        )

    @property
    def zero_d_needs_a_rank(self) -> tuple[str, ...]:
        """The inputs that may not be 0-d in an exported model: where ONNX Runtime cannot run the
        shape rule (rank_ambiguous_inputs) it cannot give an output the element type an
        attribute chooses, and refuses a model declaring it (`does not match expected type`)."""
        return self.rank_ambiguous_inputs if self.type_choosers and self.has_ort_kernel else ()

    @property
    def zero_d_case(self) -> tuple[int, tuple[str, ...]] | None:
        """The random case the 0-d test makes zero_d_needs_a_rank's inputs 0-d in (the first
        giving the most of them), and those it gives; None where there is none to try."""
        names = self.zero_d_needs_a_rank
        if not names or not self.tests.random:
            return None
        giving = {name: self.random_cases_giving(name) for name in names}
        index = max(
            range(len(self.tests.random)),
            key=lambda i: (sum(i in cases for cases in giving.values()), -i),
        )
        given = tuple(name for name in names if index in giving[name])
        return (index, given) if given else None

    def attributes_at(self, version: int) -> tuple[Attribute, ...]:
        """The attributes the op has at one of its versions."""
        return tuple(a for a in self.attributes if (a.since_version or 0) <= version)

    @property
    def earlier_versions(self) -> tuple[int, ...]:
        return self.versions[:-1]

    @property
    def attributes_by_name(self) -> dict[str, Attribute]:
        return {a.name: a for a in self.attributes}

    @property
    def optional_inputs(self) -> frozenset[str]:
        return frozenset(t.name for t in self.inputs if t.optional)

    @property
    def variadic_inputs(self) -> frozenset[str]:
        return frozenset(t.name for t in self.inputs if t.variadic)

    def random_cases_giving(self, name: str) -> tuple[int, ...]:
        """The random cases that give input `name` (an optional input may be left out of a
        case; a variadic one's values are named X_0, X_1, ...)."""
        variadic = next((t.name for t in self.inputs if t.variadic), None)
        return tuple(
            index
            for index, case in enumerate(self.tests.random)
            if any(input_of(value, variadic) == name for value in case.shapes)
        )

    @property
    def gradient_cases(self) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """The random cases the gradient tests run, each with the optional inputs left out of
        it (besides those it lacks): the first case, and more until each optional input is
        given in one and absent in another (a case giving it, run without it, where no case
        lacks it). Parsing makes sure some case gives each (_gradient_case_problems)."""
        if not self.gradients or not self.tests.random:
            return ()
        chosen: list[tuple[int, tuple[str, ...]]] = [(0, ())]
        for tensor in self.inputs:
            giving = self.random_cases_giving(tensor.name)
            if not tensor.optional or not giving:
                continue
            given = [index in giving and tensor.name not in out for index, out in chosen]
            if not any(given):
                chosen.append((giving[0], ()))
            elif all(given):
                lacking = [i for i in range(len(self.tests.random)) if i not in giving]
                chosen.append((lacking[0], ()) if lacking else (giving[0], (tensor.name,)))
        # A case without any input that has a formula has nothing to differentiate (gradcheck
        # refuses it): where those inputs are all optional, their absence is no gradient case.
        return tuple(
            (index, left_out)
            for index, left_out in chosen
            if any(
                index in self.random_cases_giving(name) and name not in left_out
                for name in self.gradients
            )
        )

    @property
    def outputs_read_by_gradients(self) -> tuple[TensorParam, ...]:
        """The outputs some gradient formula reads (autograd keeps only those: a kept output
        holds its memory until backward, and changing it in place would fail backward)."""
        names = {
            node.id
            for formula in self.gradients.values()
            for node in ast.walk(ast.parse(formula, mode="eval"))
            if isinstance(node, ast.Name)
        }
        return tuple(t for t in self.outputs if t.name in names)

    @property
    def outputs_before_variadic(self) -> int | None:
        """How many outputs come before a variadic last output (None: no variadic output)."""
        return len(self.outputs) - 1 if self.outputs[-1].variadic else None

    @property
    def variadic_outputs(self) -> frozenset[str]:
        return frozenset(t.name for t in self.outputs if t.variadic)

    @property
    def exporters(self) -> tuple[str, ...]:
        """The PyTorch exporters that can export this op, at one dtype binding or more."""
        at_some = {e for binding in self.instantiations for e in self.exporters_at(binding)}
        return tuple(e for e in ("dynamo", "torchscript") if e in at_some)

    def exporters_at(self, binding: Instantiation) -> tuple[str, ...]:
        """The exporters that can export the op where the type variables are bound so."""
        if self.torch is None or not self.export:
            return ()
        if self.torchscript_traces and self.torchscript_exports(binding):
            return ("dynamo", "torchscript")
        return ("dynamo",)

    @property
    def torchscript_traces(self) -> bool:
        """The TorchScript tracer can record the op's arguments: it cannot record a list of
        strings ("unsupported input list type: str")."""
        return not any(a.type is AttrType.strings for a in self.attributes)

    def torchscript_exports(
        self, binding: Instantiation, given: Collection[str] | None = None
    ) -> bool:
        """No tensor of the op has a dtype the TorchScript exporter lacks at this binding
        (`given`: the inputs a call passes; default: all)."""
        inputs = [t for t in self.inputs if given is None or t.name in given]
        tensors = inputs + list(self.outputs)
        return not any(t.dtype_in(binding) in TORCHSCRIPT_MISSING_DTYPES for t in tensors)

    @property
    def domain_ident(self) -> str:
        """The domain as an identifier (`ai.opgen` -> `ai_opgen`): it names libraries."""
        if self.domain is None:
            raise ValueError(f"{self.op_id} defines no ONNX op, so it has no domain")
        return self.domain.replace(".", "_")
