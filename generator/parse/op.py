"""One definition file: its sections read, cross-checked and assembled into an OpDef."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from generator.api.names import Local
from generator.errors import ErrorCollector
from generator.model.capabilities import refusals
from generator.model.names import (
    ONNXSCRIPT_OPSET_ATTRIBUTES,
    domain_problem,
    unspellable,
)
from generator.model.nodes import ExportRule, Function
from generator.model.onnxruntime_domains import onnxruntime_domain_problems
from generator.model.op import (
    Implementation,
    Kernel,
    OpDef,
    ProvidedBy,
    Runtime,
    TorchApi,
    TorchBinding,
    message_prefix,
)
from generator.model.shapes import ShapeRule
from generator.model.tensors import Attribute, TensorParam, VariadicArity, value_name
from generator.model.tests import NO_TESTS, RandomCase
from generator.model.types import (
    AttrType,
    DType,
    TensorType,
    TypeConstraint,
    tensor_attribute_dtype_names,
    type_choosers,
)
from generator.parse import read
from generator.parse.expressions import parse_reference
from generator.parse.nodes import default_export, parse_export, parse_function
from generator.parse.tensors import (
    MAX_MIN_ARITY,
    parse_attribute,
    parse_tensor,
    parse_type_constraints,
)
from generator.parse.tests import MAX_TEST_ELEMENTS, parse_tests
from generator.parse.torch import override_reference, parse_gradients, parse_torch
from generator.runtime._names import input_of
from generator.shapes.compile import compile_shape_rule
from generator.shapes.evaluate import evaluate_output_shapes
from generator.source import Node, load_definition_file


def _parse_versions(node: Node) -> tuple[int, ...]:
    """`version: 2`, or every version of the op: `version: [1, 2]` (increasing)."""
    if not node.is_sequence:
        return (read.version_number(node),)
    versions = tuple(read.version_number(item) for item in read.sequence(node))
    if not versions or list(versions) != sorted(set(versions)):
        raise node.error(f"expected increasing versions such as [1, 2], found {list(versions)}")
    return versions


def _file_beside(node: Node, definition_dir: Path, what: str) -> Path:
    """A kernel file named by `node`: beside the definition (no '..'), and there."""
    relative = read.string(node)
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise node.error("must be a file name beside the definition (no '..')")
    character = unspellable(relative)
    if character is not None:  # the generated files #include it and name it in comments
        raise node.error(
            f"{character} in the file name {relative!r}, which generated files cannot spell"
        )
    path = definition_dir / relative
    try:
        found = path.is_file()
    except OSError as exc:  # is_file() raises for a name too long, for one
        raise node.error(f"{what} file: {exc.strerror}") from None
    if not found:
        raise node.error(f"{what} file '{relative}' not found beside the definition")
    return path


def _parse_kernel(node: Node, definition_dir: Path, has_torch: bool) -> Kernel:
    fields = read.mapping(node, {"source", "body", "onnxruntime", "cuda"}, set())
    if ("source" in fields) == ("body" in fields):
        raise node.error("give exactly one of 'source' (a file beside the definition) or 'body'")
    in_onnxruntime = read.boolean(fields["onnxruntime"]) if "onnxruntime" in fields else True
    if not in_onnxruntime and not has_torch:
        raise fields["onnxruntime"].error(
            "a kernel for no runtime: 'onnxruntime: false' is for an op with a PyTorch side "
            "('torch') that runs in PyTorch alone"
        )
    cuda_file = (
        _file_beside(fields["cuda"], definition_dir, "CUDA kernel") if "cuda" in fields else None
    )
    if "body" in fields:
        return Kernel(None, read.string(fields["body"]), in_onnxruntime, cuda_file)
    source = _file_beside(fields["source"], definition_dir, "kernel")
    return Kernel(source, None, in_onnxruntime, cuda_file)


TOP_LEVEL = {
    "op",
    "domain",
    "version",
    "doc",
    "torch",
    "type_constraints",
    "inputs",
    "outputs",
    "attributes",
    "reference",
    "gradients",
    "data_dependent_sizes",
    "reference_upcast",
    "kernel",
    "function",
    "provided_by",
    "replaces",
    "export",
    "tests",
}
TOP_LEVEL_REQUIRED = {"inputs", "outputs"}
IMPLEMENTATIONS = ("kernel", "function", "provided_by")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class _Definition:
    """A definition's top-level fields, and every error found in them so far."""

    path: Path
    root: Node
    fields: dict[str, Node]
    errors: ErrorCollector

    def __contains__(self, key: str) -> bool:
        return key in self.fields

    def __getitem__(self, key: str) -> Node:
        return self.fields[key]

    def get(
        self,
        key: str,
        read_field: Callable[Concatenate[Node, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R | None:
        """The field read by `read_field`; None if it is absent or wrong (then reported)."""
        if key not in self.fields:
            return None
        return self.errors.attempt(read_field, self.fields[key], *args, **kwargs)


@dataclass(frozen=True)
class _Signature:
    constraints: tuple[TypeConstraint, ...]
    inputs: tuple[TensorParam, ...]
    outputs: tuple[TensorParam, ...]
    attributes: tuple[Attribute, ...]
    # Where each parsed item is written: an item that failed to parse is left out of the
    # tuples above, so a position there is not its position in the file.
    nodes: dict[str, tuple[Node, ...]]

    def node(self, key: str, index: int) -> Node:
        """The item `index` of the parsed inputs, outputs or attributes, as written."""
        return self.nodes[key][index]

    @property
    def attrs_by_name(self) -> dict[str, Attribute]:
        return {a.name: a for a in self.attributes}


def parse_opdef(
    path: Path,
    display_name: str,
    definition_path: str | None = None,
    kernel_torch_api: TorchApi = TorchApi.native,
) -> OpDef:
    """Parse and validate one definition file; raises DefinitionErrors listing every problem.
    Errors name the file `display_name` (for the terminal); generated files name it
    `definition_path` (relative to the project root; default: `display_name`).
    `kernel_torch_api`: the project's default PyTorch registration of an op with a kernel."""
    d = _open(path, display_name)
    errors = d.errors
    op_id = errors.attempt(read.op_id_field, Node(path.stem, d.root.location, "<file name>"))
    op_type, domain, versions = _read_onnx_name(d)
    doc = d.get("doc", read.string) or ""
    # The configuration's default registration is for ops whose definition names none; a CUDA
    # kernel is registered natively (the one registration of CUDA kernels yet).
    kernel = d.fields.get("kernel")
    if kernel is not None and kernel.is_mapping and "cuda" in kernel.value:
        kernel_torch_api = TorchApi.native
    torch_binding = d.get("torch", parse_torch, "kernel" in d, kernel_torch_api)
    signature = _read_signature(d)
    _check_signature(d, signature, versions)
    implementation_key = _implementation_key(d, versions)
    interface_only = _is_interface_only(d)
    if not interface_only:
        _check_code_names(d)
    shape_rule = _read_shape_rule(
        d,
        signature,
        message_prefix(op_type, torch_binding, op_id),
        implementation_key,
        torch_binding,
    )
    reference = d.get(
        "reference",
        parse_reference,
        {t.name for t in signature.inputs}
        | set(signature.attrs_by_name)
        | {tc.name for tc in type_choosers(signature.constraints).values()},
    )
    if interface_only:
        _check_interface_only_fields(d)
        for key in ("reference", "tests", "gradients", "reference_upcast"):
            if key in d:
                errors.add(
                    d[key].error(
                        f"'{key}' needs an implementation ('kernel', 'function' or 'provided_by') "
                        "to test; an op without one declares its ONNX interface only"
                    )
                )
    elif "reference" not in d and not (torch_binding and torch_binding.is_override):
        errors.add(d.root.error("missing required field 'reference' (the parity tests' oracle)"))
    if "tests" not in d and not interface_only:
        errors.add(d.root.error("missing required field 'tests'"))
    upcast = d.get("reference_upcast", read.boolean)
    gradients = _read_gradients(d, signature, torch_binding)
    _check_legacy_defaults(d, signature, torch_binding)
    implementation = _read_implementation(d, signature)
    replaces = _read_replaces(d, domain, op_type, implementation)
    _check_function_attributes(d, signature, implementation)
    export = _read_export(d, signature, torch_binding, op_type, domain, implementation)
    tests = d.get(
        "tests",
        parse_tests,
        signature.inputs,
        signature.outputs,
        signature.attrs_by_name,
        _tested_dtypes(signature),
        errors,
        signature.constraints,
        "torch" in d,
    )
    errors.raise_if_any()
    if interface_only:
        reference = ""
    elif reference is None:  # an override: the overload itself is the oracle
        reference = override_reference(
            _given(torch_binding), signature.inputs, signature.attributes
        )
    op = OpDef(
        op_id=_given(op_id),
        definition_path=definition_path or display_name,
        display_path=display_name,
        op_type=op_type,
        domain=domain,
        version=versions[-1] if versions else None,
        doc=doc.strip(),
        torch=torch_binding,
        type_constraints=signature.constraints,
        inputs=signature.inputs,
        outputs=signature.outputs,
        attributes=signature.attributes,
        shape_rule=_given(shape_rule),
        reference=reference,
        reference_upcast=True if upcast is None else upcast,
        gradients=gradients,
        replaces=replaces,
        implementation=implementation,
        export=export,
        tests=tests or NO_TESTS,
        versions=versions,
        locations=read.field_locations(d.fields),
    )
    problems = refusals(op) + _variadic_problems(op) + _string_problems(op)
    problems += _tensor_attribute_problems(op) + _cuda_problems(op) + _gradient_case_problems(op)
    for field_path, message in problems + _pytorch_alone_problems(op):
        errors.add(read.node_at(d.root, field_path).error(message))
    errors.raise_if_any()
    # The emitters apply the shape rule to every random case: what it cannot apply to (a
    # divisor of 0) is an error here, before anything is rendered or written.
    for case, item in zip(op.tests.random, _random_items(d), strict=True):
        errors.attempt(_check_random_case_outputs, op, case, item)
    errors.raise_if_any()
    return op


def _gradient_case_problems(op: OpDef) -> list[tuple[str, str]]:
    """The gradient tests run each optional input given and left out (OpDef.gradient_cases):
    some random case must give it."""
    if not op.gradients or not op.tests.random:
        return []
    return [
        (
            "tests.random",
            f"the gradient tests run with each optional input given and left out: give "
            f"optional input '{t.name}' in some random case",
        )
        for t in op.inputs
        if t.optional and not op.random_cases_giving(t.name)
    ]


def _tensor_attribute_problems(op: OpDef) -> list[tuple[str, str]]:
    """A tensor attribute outside an interface-only op declares its element type (a kernel
    reads one C++ type; a test builds its values), and only kernel ops carry one yet."""
    if op.is_interface_only:
        return []
    problems = []
    for index, attr in enumerate(op.attributes):
        if attr.type is not AttrType.tensor:
            continue
        if op.kernel is None:
            problems.append(
                (
                    f"attributes[{index}].type",
                    "a tensor attribute is carried by kernel ops only yet (not by a function "
                    "body, an export rule or an op without a kernel)",
                )
            )
        elif attr.dtype is None:
            problems.append(
                (
                    f"attributes[{index}].type",
                    "a kernel op's tensor attribute declares its element type ('dtype: "
                    f"float32', one of {tensor_attribute_dtype_names()}): the "
                    "kernel reads it as opgen::TensorAttribute of that type",
                )
            )
    return problems


def _cuda_problems(op: OpDef) -> list[tuple[str, str]]:
    """What a CUDA kernel cannot have yet beyond the capability table's features."""
    if op.kernel is None or op.kernel.cuda_file is None:
        return []
    problems = []
    if op.shape_rule.kernel_allocated:
        problems.append(
            (
                "kernel.cuda",
                "a CUDA kernel with an output of data-dependent size (data_dependent_sizes) is "
                "not carried yet: its size would come back from the device",
            )
        )
    if op.torch is not None and op.new_torch_op and not op.has_native_torch_op:
        problems.append(
            (
                "kernel.cuda",
                "a CUDA kernel is registered with PyTorch natively (torch.api native, the "
                f"default), not yet with torch.api {op.torch.api.value}",
            )
        )
    return problems


def _string_problems(op: OpDef) -> list[tuple[str, str]]:
    """The generated tests run ONNX Runtime through its Python API, which takes strings as
    numpy arrays only and has no numpy bfloat16: no call of an op may have both."""
    tensors_only = all(tc.is_tensor_only for tc in op.type_constraints) and all(
        t.concrete is None or t.dtype is not None for t in op.inputs + op.outputs
    )
    if op.kernel is None or not tensors_only:
        return []  # other value types: refused by the capability table
    fields = [(f"inputs[{i}].type", t) for i, t in enumerate(op.inputs)]
    fields += [(f"outputs[{i}].type", t) for i, t in enumerate(op.outputs)]
    for binding in op.instantiations:
        dtypes = [t.dtype_in(binding) for _, t in fields]
        if DType.string in dtypes and DType.bfloat16 in dtypes:
            return [
                (
                    fields[dtypes.index(DType.bfloat16)][0],
                    "string and bfloat16 tensors in one call are not carried by the parity "
                    "tests yet (ONNX Runtime's Python API takes strings as numpy arrays, and "
                    "numpy has no bfloat16)",
                )
            ]
    return []


def _variadic_problems(op: OpDef) -> list[tuple[str, str]]:
    """(field path, message) for what a code target cannot do with a variadic input yet: the
    kernel targets take one (a list of tensors); a function body, an export rule and a
    gradient formula name each input as one value."""
    if op.is_interface_only:
        return []
    problems = []
    for index, tensor in enumerate(op.inputs):
        if not isinstance(tensor.arity, VariadicArity):
            continue
        where = f"inputs[{index}].variadic"
        if op.kernel is None:
            problems.append(
                (
                    where,
                    "a variadic input needs a kernel (not yet: a function body or an export "
                    "rule names each input as one value)",
                )
            )
        if op.gradients and op.torch is not None and op.torch.api is TorchApi.custom_op:
            problems.append(
                (
                    "gradients",
                    f"gradient formulas of an op with a variadic input ('{tensor.name}') are not "
                    "carried by torch.api 'custom_op' yet (torch 2.13's register_autograd "
                    "takes its list of gradients in another structure); use 'native' or "
                    "'library'",
                )
            )
        problems += _value_name_clashes(op, tensor.name, "input")
        own_inputs = tuple(t.name for t in op.inputs)
        for rule_index, rule in enumerate(op.export):
            for node_index, node in enumerate(rule.nodes):
                calls_the_op = (node.domain, node.op_type) == (op.domain, op.op_type)
                if calls_the_op and tuple(node.inputs) != own_inputs:
                    problems.append(
                        (
                            f"export[{rule_index}].nodes[{node_index}]",
                            "a node of the op itself takes the op's own inputs in order "
                            f"({', '.join(own_inputs)}): its variadic input '{tensor.name}' "
                            "spreads into the node's last inputs (not yet: other arguments)",
                        )
                    )
                elif tensor.name in node.inputs and not calls_the_op:
                    problems.append(
                        (
                            f"export[{rule_index}].nodes[{node_index}]",
                            f"variadic input '{tensor.name}' may only be passed to the op "
                            "itself, as its variadic input (not yet: an export node that "
                            "spreads its values into another op)",
                        )
                    )
    for index, tensor in enumerate(op.outputs):
        if not tensor.variadic:
            continue
        where = f"outputs[{index}].variadic"
        if op.kernel is None:
            problems.append((where, "a variadic output needs a kernel (not yet: a function body)"))
        elif op.elements_copied(tensor):
            problems.append(
                (
                    where,
                    "a variadic output of strings or 4-bit integers is not carried yet (ONNX "
                    "Runtime takes those by copy, which the values of a variadic output do not "
                    "get yet)",
                )
            )
        problems += _value_name_clashes(op, tensor.name, "output")
        own_outputs = tuple(t.name for t in op.outputs)
        for rule_index, rule in enumerate(op.export):
            for node_index, node in enumerate(rule.nodes):
                calls_the_op = (node.domain, node.op_type) == (op.domain, op.op_type)
                gives = tensor.name in node.outputs
                if tensor.name in node.inputs or (
                    gives and (not calls_the_op or tuple(node.outputs) != own_outputs)
                ):
                    problems.append(
                        (
                            f"export[{rule_index}].nodes[{node_index}]",
                            f"variadic output '{tensor.name}' may only come from a node of the "
                            f"op itself, giving the op's own outputs in order "
                            f"({', '.join(own_outputs)}), and go to no other node (not yet: "
                            "another op's outputs gathered into it, or its values spread into "
                            "another op)",
                        )
                    )
    return problems


def _value_name_clashes(op: OpDef, variadic: str, kind: str) -> list[tuple[str, str]]:
    """The values of a variadic input (`kind`: or output) X are named X_0, X_1, ... in test
    cases and test models: no other name of the op may be one of them."""
    problems = []
    names = {
        "inputs": [t.name for t in op.inputs],
        "outputs": [t.name for t in op.outputs],
        "attributes": [a.name for a in op.attributes],
    }
    for key, items in names.items():
        for index, name in enumerate(items):
            if name != variadic and input_of(name, variadic) == variadic:
                problems.append(
                    (
                        f"{key}[{index}].name",
                        f"'{name}' is the name of a value of variadic {kind} '{variadic}' "
                        f"({value_name(variadic, 0)}, {value_name(variadic, 1)}, ... in the "
                        "tests); choose another name",
                    )
                )
    return problems


def _random_items(d: _Definition) -> list[Node]:
    return d["tests"].value["random"].value if "tests" in d else []


def _is_interface_only(d: _Definition) -> bool:
    """The definition declares an ONNX op's interface and nothing implements or exports it:
    it gets the ONNX schema alone (what `opgen import` writes)."""
    return "op" in d and "torch" not in d and not any(key in d for key in IMPLEMENTATIONS)


# What an interface-only op cannot use: its schema has no inference function, so no runtime
# would check these.
_CHECKED_FIELDS = {
    "inputs": ("shape", "same_shape_as"),
    "outputs": ("shape", "same_shape_as"),
    "attributes": ("allowed", "min", "max"),
}


def _checked_fields(d: _Definition) -> list[Node]:
    """The fields of _CHECKED_FIELDS the definition gives, and data_dependent_sizes."""
    found = [d["data_dependent_sizes"]] if "data_dependent_sizes" in d else []
    for key, fields in _CHECKED_FIELDS.items():
        items = d[key].value if key in d and d[key].is_sequence else []
        found += [
            item.value[field]
            for item in items
            for field in fields
            if item.is_mapping and field in item.value
        ]
    return found


def _check_interface_only_fields(d: _Definition) -> None:
    for node in _checked_fields(d):
        d.errors.add(node.error(_UNCHECKED))


_UNCHECKED = (
    "an interface-only op has no shape inference to check this with; give it an "
    "implementation ('kernel', 'function' or 'provided_by') and tests"
)


def _check_code_names(d: _Definition) -> None:
    """Names become identifiers of generated code in every target but the schemas'."""
    names = [
        Node(name, node.key_location or node.location, node.path)
        for name, node in (
            d["type_constraints"].value.items()
            if "type_constraints" in d and d["type_constraints"].is_mapping
            else []
        )
    ]
    for key in ("inputs", "outputs", "attributes"):
        names += _name_nodes(d, key)
    for node in names:
        d.errors.attempt(read.reserved_name, node, "name")
    # An attribute is a keyword argument of onnxscript's Op.__call__(self, ...) in the dynamo
    # translation (an input is positional: ATen's `self` is fine there).
    for name in _name_nodes(d, "attributes"):
        if name.value == "self":
            d.errors.add(
                name.error(
                    "attribute 'self' is reserved: the exporters' translation passes attributes "
                    "as keyword arguments of a call that takes its own `self`; choose another name"
                )
            )
    _check_derived_names({node.value: node for node in reversed(names)}, d.errors)


def _given(value: R | None) -> R:
    """A value that is there once no error was reported (each None above reported one)."""
    if value is None:
        raise AssertionError("a definition section is missing but no error was reported")
    return value


def _open(path: Path, display_name: str) -> _Definition:
    errors = ErrorCollector()
    root = errors.attempt(load_definition_file, path, display_name)
    if root is None:
        errors.raise_if_any()
    assert root is not None
    fields = errors.attempt(read.mapping, root, TOP_LEVEL, TOP_LEVEL_REQUIRED)
    if fields is None:
        # Unknown or missing top-level keys: keep going with what is there, to report more.
        if not root.is_mapping:
            errors.raise_if_any()
        fields = root.value
    return _Definition(path, root, fields, errors)


def _read_onnx_name(d: _Definition) -> tuple[str | None, str | None, tuple[int, ...]]:
    """The ONNX op the definition defines: op type, domain and versions."""
    op_type = d.get("op", read.identifier, "op type")
    if op_type is not None and (op_type in ONNXSCRIPT_OPSET_ATTRIBUTES or op_type[0] == "_"):
        d.errors.add(
            d["op"].error(
                f"op type '{op_type}' is an attribute of onnxscript's Opset, through which the "
                "exporters call an op by its type (as a name beginning with '_' may be); "
                "choose another"
            )
        )
    domain = d.get("domain", read.string)
    problem = None if domain is None else domain_problem(domain)
    if problem:
        d.errors.add(d["domain"].error(problem))
    versions = d.get("version", _parse_versions) or ()
    return op_type, domain, versions


def _read_signature(d: _Definition) -> _Signature:
    errors = d.errors
    constraints = d.get("type_constraints", parse_type_constraints, errors) or ()
    by_var = {tc.name: tc for tc in constraints}
    tc_node = d.fields.get("type_constraints")
    declared_vars = (
        frozenset(tc_node.value) if tc_node is not None and tc_node.is_mapping else frozenset()
    )

    nodes: dict[str, tuple[Node, ...]] = {}

    def parsed(key: str, parse: Callable[[Node], R | None]) -> tuple[R, ...]:
        pairs = [(item, parse(item)) for item in d.get(key, read.sequence) or []]
        nodes[key] = tuple(item for item, value in pairs if value is not None)
        return tuple(value for _, value in pairs if value is not None)

    inputs = parsed(
        "inputs",
        lambda item: errors.attempt(parse_tensor, item, by_var, False, declared_vars, errors),
    )
    outputs = parsed(
        "outputs",
        lambda item: errors.attempt(parse_tensor, item, by_var, True, declared_vars, errors),
    )
    choosers = type_choosers(constraints)
    attributes = parsed(
        "attributes", lambda item: errors.attempt(parse_attribute, item, errors, choosers)
    )
    return _Signature(constraints, inputs, outputs, attributes, nodes)


def _check_signature(d: _Definition, signature: _Signature, versions: tuple[int, ...]) -> None:
    """What no single input, output or attribute shows: their order, names and versions."""
    errors = d.errors
    interface_only = _is_interface_only(d)
    if not interface_only:  # PyTorch's argument order; ONNX's attributes have none
        _check_attribute_order(d, signature)
    _check_since_versions(d, signature, versions)
    if "outputs" in d and not signature.outputs and not errors.errors:
        errors.add(d["outputs"].error("an op needs at least one output"))
    _check_unique_names(d.fields, errors, interface_only)
    _check_type_choosers(d, signature)
    for key in ("inputs", "outputs"):
        _check_min_arity(d, signature, key)
    for key in ("inputs", "outputs"):
        # The items as written: one that failed to parse still comes after a variadic one.
        items = d[key].value if key in d and d[key].is_sequence else []
        for item in items[:-1]:
            variadic = item.value.get("variadic") if item.is_mapping else None
            if variadic is not None and variadic.value not in (False, None):
                what = key[:-1]
                errors.add(
                    item.error(
                        f"only the last {what} may be variadic (ONNX matches {key} by position)"
                    )
                )


def _name_nodes(d: _Definition, key: str) -> list[Node]:
    """The `name` of each input, output or attribute (`key`) the file lists, whether or not it
    parsed."""
    items = d[key].value if key in d and d[key].is_sequence else []
    return [
        item.value["name"]
        for item in items
        if item.is_mapping and "name" in item.value and isinstance(item.value["name"].value, str)
    ]


def _check_type_choosers(d: _Definition, signature: _Signature) -> None:
    """A type variable `chosen_by` an attribute: the attribute exists, chooses it alone, and no
    input has the variable (the attribute and the input could disagree)."""
    chosen: dict[str, str] = {}
    # Attributes the file names, parsed or not (one that failed has its own error already).
    written = {node.value for node in _name_nodes(d, "attributes")}
    for constraint in signature.constraints:
        if constraint.chosen_by is None:
            continue
        where = read.node_at(d.root, f"type_constraints.{constraint.name}.chosen_by")
        name = constraint.chosen_by
        if name not in written:  # (one written but not parsed has its own error)
            names = set(signature.attrs_by_name)
            hint = read.closest(name, names) if names else None
            suggestion = f" (did you mean '{hint}'?)" if hint else ""
            d.errors.add(where.error(f"no attribute '{name}' to choose it{suggestion}"))
        elif name in chosen:
            d.errors.add(where.error(f"attribute '{name}' already chooses {chosen[name]}"))
        chosen.setdefault(name, constraint.name)
        if not any(t.type_var == constraint.name and not t.optional for t in signature.outputs):
            d.errors.add(
                where.error(
                    f"no required output has type {constraint.name}: ONNX Runtime picks the "
                    "kernel by the outputs' types (a node may leave an optional one out), so the "
                    "attribute would choose nothing it can tell apart"
                )
            )
        if "function" in d:
            d.errors.add(
                where.error(
                    "an op defined as an ONNX function does not take a type variable an "
                    "attribute chooses yet (ONNX Runtime runs the body, which checks no dtype)"
                )
            )
        elif "torch" in d and "kernel" not in d:
            d.errors.add(
                where.error(
                    "a PyTorch op without a kernel does not take a type variable an attribute "
                    "chooses yet (its eager export nodes would get a torch.dtype)"
                )
            )
        attribute = signature.attrs_by_name.get(name)
        if attribute is not None and attribute.since_version is not None:
            index = signature.attributes.index(attribute)
            d.errors.add(
                signature.node("attributes", index).error(
                    f"attribute '{name}' chooses {constraint.name}, so it cannot be added in a "
                    "later version (not carried yet: nodes of earlier versions would get the "
                    "default's dtype)"
                )
            )
        for index, tensor in enumerate(signature.inputs):
            if tensor.type_var == constraint.name:
                d.errors.add(
                    signature.node("inputs", index).error(
                        f"input '{tensor.name}' has type {constraint.name}, which attribute "
                        f"'{name}' chooses: an input cannot have it (the two could disagree)"
                    )
                )


def _check_min_arity(d: _Definition, signature: _Signature, key: str) -> None:
    """ONNX counts the parameters before a variadic one into its minimum (OpSchema's
    min_input, a C++ int): the sum must fit."""
    params = signature.inputs if key == "inputs" else signature.outputs
    for index, param in enumerate(params):
        # Its position in the file: parameters that failed to parse count too.
        node = signature.node(key, index)
        position = d[key].value.index(node)
        if isinstance(param.arity, VariadicArity) and position + param.arity.min_arity > (
            MAX_MIN_ARITY
        ):
            d.errors.add(
                node.error(
                    f"{position} parameters before it and a minimum of {param.arity.min_arity} "
                    f"make more than ONNX counts ({MAX_MIN_ARITY})"
                )
            )


def _check_attribute_order(d: _Definition, signature: _Signature) -> None:
    seen_default = None
    for index, attr in enumerate(signature.attributes):
        if attr.required and seen_default is not None:
            d.errors.add(
                signature.node("attributes", index).error(
                    f"required attribute '{attr.name}' comes after '{seen_default}', which is "
                    "optional; list required attributes first (PyTorch argument order)"
                )
            )
        if not attr.required:
            seen_default = seen_default or attr.name


def _check_since_versions(d: _Definition, signature: _Signature, versions: tuple[int, ...]) -> None:
    for index, attr in enumerate(signature.attributes):
        if attr.since_version is None:
            continue
        where = signature.node("attributes", index)
        if "version" in d and not versions:
            pass  # the version is bad: reported there
        elif attr.since_version not in versions[1:]:
            d.errors.add(
                where.error(
                    f"attribute '{attr.name}': since_version {attr.since_version} is not one of "
                    f"the op's later versions {list(versions[1:])} (see 'version')"
                )
            )
        elif attr.required:
            d.errors.add(
                where.error(
                    f"attribute '{attr.name}' was added in version {attr.since_version}, so it "
                    "needs a default (nodes of earlier versions do not have it)"
                )
            )


def _implementation_key(d: _Definition, versions: tuple[int, ...]) -> str | None:
    """Which field implements the op (kernel, function, provided_by; None for an export-only
    definition, which lowers a PyTorch op onto other ONNX ops), checked against the fields that
    each kind needs or forbids."""
    errors, root = d.errors, d.root
    given = [key for key in IMPLEMENTATIONS if key in d]
    if len(given) > 1:
        errors.add(root.error(f"give at most one of {list(IMPLEMENTATIONS)}; found {given}"))
    implementation = given[0] if len(given) == 1 else None
    onnx_keys = [key for key in ("op", "domain", "version") if key in d]
    if implementation is not None:
        for key in sorted({"op", "domain", "version"} - set(onnx_keys)):
            errors.add(
                root.error(
                    f"missing required field '{key}' (the ONNX op this {implementation} defines)"
                )
            )
    elif onnx_keys and "torch" in d:
        errors.add(
            d[onnx_keys[0]].error(
                "an export-only definition (no 'kernel', 'function' or 'provided_by') defines no "
                f"ONNX op; remove {onnx_keys} or give an implementation"
            )
        )
    elif onnx_keys:  # the ONNX interface alone
        for key in sorted({"op", "domain", "version"} - set(onnx_keys)):
            errors.add(root.error(f"missing required field '{key}' (the ONNX op it declares)"))
    elif "torch" in d and "export" not in d:
        errors.add(
            root.error(
                "give an implementation ('kernel', 'function' or 'provided_by') or the "
                "'export' nodes that a PyTorch op lowers to"
            )
        )
    if len(versions) > 1 and implementation != "kernel":
        errors.add(
            d["version"].error(
                "several versions are supported for ops with a kernel only (one kernel serves "
                "every version)"
            )
        )
    if "torch" not in d and implementation is None and not onnx_keys:
        errors.add(
            root.error(
                "missing required field 'torch' (the PyTorch side of the op), or 'op', "
                "'domain' and 'version' for an op that declares its ONNX interface only"
            )
        )
    if "export" in d and "torch" not in d:
        errors.add(d["export"].error("'export' needs a PyTorch op ('torch') to export"))
    return implementation


def _read_shape_rule(
    d: _Definition,
    signature: _Signature,
    message_prefix: str,
    implementation_key: str | None,
    torch_binding: TorchBinding | None,
) -> ShapeRule | None:
    errors = d.errors
    items = d.get("data_dependent_sizes", read.sequence) or []
    data_dependent = tuple(
        n for n in (errors.attempt(read.identifier, i, "size symbol") for i in items) if n
    )
    inputs, outputs = signature.inputs, signature.outputs
    if not (outputs and "outputs" in d) or "inputs" not in d:
        return None
    if not inputs and not (d["inputs"].is_sequence and not d["inputs"].value):
        return None  # inputs that failed to parse (reported): not an op without inputs
    if _is_interface_only(d) and _checked_fields(d):
        return None  # refused (_check_interface_only_fields): compiling would only echo it
    shape_rule = errors.attempt(
        compile_shape_rule,
        message_prefix,
        inputs,
        outputs,
        signature.attrs_by_name,
        d["inputs"],
        d["outputs"],
        data_dependent,
        type_choosers(signature.constraints),
    )
    if shape_rule is None:
        return None
    for index, output in enumerate(outputs):
        if output.optional and output.name in shape_rule.kernel_allocated:
            errors.add(
                signature.node("outputs", index).error(
                    f"optional output '{output.name}' has a data-dependent size: a kernel "
                    "allocating an output that may be absent is not carried yet"
                )
            )
    for index, attr in enumerate(signature.attributes):
        if attr.optional_without_default and attr.name in shape_rule.attributes:
            errors.add(
                signature.node("attributes", index).error(
                    f"attribute '{attr.name}' may be absent (optional without a default), so "
                    "neither the shape rule nor allowed/min/max can read it; give it a default"
                )
            )
    unused = sorted(set(data_dependent) - set(shape_rule.data_dependent_sizes))
    if unused:
        errors.add(
            d["data_dependent_sizes"].error(
                f"{unused} appear in no output shape (a data-dependent size names a dim of "
                "an output, e.g. shape: [M])"
            )
        )
    new_torch_op = torch_binding is not None and not torch_binding.is_override
    if new_torch_op or implementation_key in ("kernel", "provided_by"):
        ruled = {o.output for o in shape_rule.outputs}
        for index, output in enumerate(outputs):
            if output.name not in ruled:
                errors.add(
                    signature.node("outputs", index).error(
                        "an output needs a shape rule ('shape: [...]' or 'same_shape_as: "
                        "<input>'); only a function's or an override's outputs may omit it"
                    )
                )
    return shape_rule


def _read_gradients(
    d: _Definition, signature: _Signature, torch_binding: TorchBinding | None
) -> dict[str, str]:
    if "gradients" not in d:
        return {}
    if any(
        isinstance(t, TensorType) and t.dtype.is_complex
        for tc in signature.constraints
        for t in tc.types
    ):  # before the formulas are read: their checks assume real dtypes
        d.errors.add(
            d["gradients"].error(
                "gradient formulas on complex tensors: not yet (PyTorch takes conjugate "
                "Wirtinger derivatives there, which the generated gradient tests do not check); "
                "without formulas, backward through the op raises naming it"
            )
        )
        return {}
    gradients = (
        d.get(
            "gradients",
            parse_gradients,
            signature.inputs,
            signature.outputs,
            signature.attributes,
            signature.constraints,
        )
        or {}
    )
    torch_unusable = torch_binding is None and "torch" not in d  # else reported there
    if gradients and (torch_unusable or (torch_binding and not torch_binding.takes_gradients)):
        d.errors.add(
            d["gradients"].error(
                "gradients need a new PyTorch op (torch.name) registered with the "
                "'library' or 'custom_op' api"
            )
        )
    return gradients


def _check_legacy_defaults(
    d: _Definition, signature: _Signature, torch_binding: TorchBinding | None
) -> None:
    """torch._custom_op refuses a schema with default arguments (torch 2.13: "neither func nor
    manual_schema should have default arguments"), which the op would meet at import."""
    if torch_binding is None or torch_binding.api is not TorchApi.legacy:
        return
    if torch_binding.is_override:
        return
    why = (
        "the PyTorch api 'legacy' (torch._custom_op) takes no default arguments; register "
        "the op with torch.api 'native', 'library' or 'custom_op'"
    )
    for index, attr in enumerate(signature.attributes):
        if not attr.required:
            where = read.node_at(signature.node("attributes", index), "default")
            d.errors.add(where.error(f"attribute '{attr.name}' has a default, but {why}"))
    if not any(a.required for a in signature.attributes):  # optional inputs default to None
        for index, tensor in enumerate(signature.inputs):
            if tensor.optional:
                where = read.node_at(signature.node("inputs", index), "optional")
                d.errors.add(
                    where.error(f"optional input '{tensor.name}' defaults to None, but {why}")
                )


def _check_function_attributes(
    d: _Definition, signature: _Signature, implementation: Implementation | None
) -> None:
    """An ONNX function body's @reference to an attribute that may be absent is not carried
    yet."""
    if not isinstance(implementation, Function):
        return
    for index, attr in enumerate(signature.attributes):
        if attr.optional_without_default:
            where = read.node_at(signature.node("attributes", index), "required")
            d.errors.add(
                where.error(
                    f"attribute '{attr.name}' may be absent (optional without a default): an "
                    "op defined as an ONNX function does not take one yet; give it a default"
                )
            )


def _pytorch_alone_problems(op: OpDef) -> list[tuple[str, str]]:
    """A kernel for PyTorch alone: nothing runs the op's ONNX node, so no export and no
    comparison with an ONNX Runtime op."""
    if op.kernel is None or op.kernel.in_onnxruntime:
        return []
    problems = []
    if "export" in op.locations:
        problems.append(
            (
                "export",
                "an op whose kernel runs in PyTorch alone (kernel: {onnxruntime: false}) is "
                "not exported: nothing would run its ONNX nodes in the tests",
            )
        )
    if op.tests.builtin_equivalents:
        problems.append(
            (
                "tests.builtin_equivalents",
                "an op whose kernel runs in PyTorch alone (kernel: {onnxruntime: false}) is "
                "not run in ONNX Runtime, so nothing compares it with a built-in op there",
            )
        )
    return problems


def _read_implementation(d: _Definition, signature: _Signature) -> Implementation | None:
    kernel = d.get("kernel", _parse_kernel, d.path.parent, "torch" in d)
    function = d.get(
        "function", parse_function, signature.inputs, signature.outputs, signature.attrs_by_name
    )
    provided = d.get("provided_by", _parse_provided_by)
    return kernel or function or provided


def _read_replaces(
    d: _Definition, domain: str | None, op_type: str | None, implementation: Implementation | None
) -> Runtime | None:
    """`replaces`, checked with the implementation against the domains ONNX Runtime owns."""
    replaces = d.get("replaces", _parse_runtime)
    for field_path, message in onnxruntime_domain_problems(
        domain, op_type, implementation, replaces
    ):
        d.errors.add(read.node_at(d.root, field_path).error(message))
    return replaces


def _parse_provided_by(node: Node) -> ProvidedBy:
    return ProvidedBy(_parse_runtime(node))


def _parse_runtime(node: Node) -> Runtime:
    name = read.string(node)
    if name not in Runtime.__members__:
        raise node.error(f"expected one of {list(Runtime.__members__)}, found '{name}'")
    return Runtime[name]


def _read_export(
    d: _Definition,
    signature: _Signature,
    torch_binding: TorchBinding | None,
    op_type: str | None,
    domain: str | None,
    implementation: Implementation | None,
) -> tuple[ExportRule, ...]:
    if "export" in d:
        return (
            d.get(
                "export",
                parse_export,
                signature.inputs,
                signature.outputs,
                signature.attrs_by_name,
            )
            or ()
        )
    # By default a PyTorch op exports to its own node, which ONNX Runtime runs through the
    # library: not for a kernel that runs in PyTorch alone (nothing would run the node).
    runs_in_onnxruntime = not (
        isinstance(implementation, Kernel) and not implementation.in_onnxruntime
    )
    if (
        torch_binding is not None
        and op_type is not None
        and domain is not None
        and runs_in_onnxruntime
    ):
        return default_export(
            op_type,
            domain,
            signature.inputs,
            signature.outputs,
            signature.attributes,
            d.root.location,
        )
    return ()


def _tested_dtypes(signature: _Signature) -> tuple[DType, ...]:
    """Outputs are compared with a tolerance per dtype: every floating dtype they can have."""
    by_var = {tc.name: tc for tc in signature.constraints}
    output_types = [
        t
        for o in signature.outputs
        for t in (by_var[o.type_var].types if o.type_var in by_var else (o.concrete,))
    ]
    output_dtypes = {t.dtype for t in output_types if isinstance(t, TensorType)}
    return tuple(d for d in DType if d in output_dtypes and d.is_floating)


def _check_random_case_outputs(op: OpDef, case: RandomCase, node: Node) -> None:
    """The shape rule at each of a random case's sizes gives outputs of sane sizes."""
    for index in range(max((len(sizes) for sizes in case.dynamic.values()), default=1)):
        dims: dict[str, list[int | str]] = {
            name: [d if isinstance(d, int) else case.dynamic[d][index] for d in shape]
            for name, shape in case.shapes.items()
        }
        where = f"inputs of shapes {dims}" + (
            f", attributes {case.attributes}" * bool(case.attributes)
        )
        try:
            outputs = evaluate_output_shapes(op, dims, case.attributes)
        except ZeroDivisionError:
            raise node.error(f"the shape rule divides by zero for {where}") from None
        except LookupError:
            raise node.error(
                f"the shape rule cannot be applied to {where}: do the shapes match the inputs' "
                "shape patterns?"
            ) from None
        for name, shape in outputs.items():
            sizes = [d for d in shape if isinstance(d, int)]  # "?": a data-dependent size
            if any(d < 0 for d in sizes):
                raise node.error(f"output '{name}' would have a negative dim {shape} for {where}")
            if math.prod(sizes) > MAX_TEST_ELEMENTS:
                raise node.error(
                    f"output '{name}' would have {math.prod(sizes)} elements (shape {shape}) for "
                    f"{where}; a generated test tensor may have at most {MAX_TEST_ELEMENTS} (2**20)"
                )


def _check_unique_names(
    fields: dict[str, Node], errors: ErrorCollector, interface_only: bool
) -> None:
    """Type variables, inputs, outputs and attributes share one namespace: they are the
    arguments of the PyTorch op and of the C++ kernel, and its template parameters. A repeated
    name is reported where it repeats. (In ONNX alone, inputs, outputs and attributes each have a
    namespace of their own: an interface-only op may reuse a name across those three, as ONNX
    Runtime's MatMulNBitsQkv and BatchNormalization-9 do; never a type variable's, which no
    schema of ONNX or ONNX Runtime reuses.)"""
    type_variables: dict[str, Node] = {}
    if "type_constraints" in fields and fields["type_constraints"].is_mapping:
        for name, node in fields["type_constraints"].value.items():
            type_variables[name] = Node(name, node.key_location or node.location, node.path)
    seen = dict(type_variables)
    for key in ("inputs", "outputs", "attributes"):
        items = fields[key].value if key in fields and fields[key].is_sequence else []
        if interface_only:  # ONNX's names: inputs, outputs and attributes each their own
            seen = dict(type_variables)
        for item in items:
            name = item.value.get("name") if item.is_mapping else None
            if name is None or not isinstance(name.value, str):
                continue
            first = seen.setdefault(name.value, name)
            if first is not name:
                errors.add(
                    name.error(
                        f"'{name.value}' is already the name of "
                        f"{read.owner(first.path)} (line {first.location.line}); type variables, "
                        "inputs, outputs and attributes need distinct names (they all become "
                        "names in the kernel's C++ signature)"
                    )
                )
    items = fields["data_dependent_sizes"].value if "data_dependent_sizes" in fields else []
    for item in items if isinstance(items, list) else []:
        named = seen.get(item.value) if isinstance(item.value, str) else None
        if named is not None:
            errors.add(
                item.error(
                    f"size symbol '{item.value}' is already the name of {read.owner(named.path)} "
                    f"(line {named.location.line}); the fake kernel declares it beside them, so "
                    "choose another"
                )
            )


def _check_derived_names(names: dict[str, Node], errors: ErrorCollector) -> None:
    """The generated code declares locals named after the user's names (`X_shape`, `attr_k`,
    ...): a name that is one of another name's locals would be declared twice."""
    owner = {local: name for name in names for local in Local.derived_from(name)}
    for name, node in names.items():
        other = owner.get(name)
        if other is not None and other != name:
            errors.add(
                node.error(
                    f"'{name}' is the name of a local the generated code declares for "
                    f"'{other}' ({Local.describe(name, other)}); choose another name"
                )
            )
