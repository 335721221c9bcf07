"""One definition file: its sections read, cross-checked and assembled into an OpDef (the
top-level fields: parse/definition.py; the signature: parse/signature.py; the whole op's
checks: parse/op_checks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

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
from generator.model.tests import NO_TESTS, Tests
from generator.model.types import DType, TensorType, type_choosers
from generator.parse import read
from generator.parse.definition import (
    IMPLEMENTATIONS,
    Definition,
    is_interface_only,
    open_definition,
)
from generator.parse.expressions import parse_reference
from generator.parse.nodes import default_export, parse_export, parse_function
from generator.parse.op_checks import check_random_case_outputs, op_problems
from generator.parse.signature import Signature, check_code_names, check_signature, read_signature
from generator.parse.tests import parse_tests
from generator.parse.torch import override_reference, parse_gradients, parse_torch
from generator.shapes.compile import compile_shape_rule
from generator.source import Node

R = TypeVar("R")


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
    d = open_definition(path, display_name)
    errors = d.errors
    op_id = errors.attempt(read.op_id_field, Node(path.stem, d.root.location, "<file name>"))
    op_type, domain, versions = _read_onnx_name(d)
    doc = d.get("doc", read.string) or ""
    torch_binding = d.get("torch", parse_torch, "kernel" in d, _torch_api(d, kernel_torch_api))
    signature = read_signature(d)
    check_signature(d, signature, versions)
    implementation_key = _implementation_key(d, versions)
    if not is_interface_only(d):
        check_code_names(d)
    shape_rule = _read_shape_rule(
        d,
        signature,
        message_prefix(op_type, torch_binding, op_id),
        implementation_key,
        torch_binding,
    )
    reference = _read_reference(d, signature, torch_binding)
    upcast = d.get("reference_upcast", read.boolean)
    gradients = _read_gradients(d, signature, torch_binding)
    _check_legacy_defaults(d, signature, torch_binding)
    implementation = _read_implementation(d, signature)
    replaces = _read_replaces(d, domain, op_type, implementation)
    _check_function_attributes(d, signature, implementation)
    export = _read_export(d, signature, torch_binding, op_type, domain, implementation)
    tests = _read_tests(d, signature)
    errors.raise_if_any()
    if is_interface_only(d):
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
    _check_op(d, op)
    return op


def _torch_api(d: Definition, kernel_torch_api: TorchApi) -> TorchApi:
    """The configuration's default registration is for ops whose definition names none; a CUDA
    kernel is registered natively (the one registration of CUDA kernels yet)."""
    kernel = d.fields.get("kernel")
    if kernel is not None and kernel.is_mapping and "cuda" in kernel.value:
        return TorchApi.native
    return kernel_torch_api


def _read_reference(
    d: Definition, signature: Signature, torch_binding: TorchBinding | None
) -> str | None:
    """The reference expression (None where absent or wrong); an interface-only op has nothing
    to test, so it may give neither a reference nor tests, and any other op must give both (an
    override may leave the reference out: the overload is the oracle)."""
    reference = d.get(
        "reference",
        parse_reference,
        {t.name for t in signature.inputs}
        | set(signature.attrs_by_name)
        | {tc.name for tc in type_choosers(signature.constraints).values()},
    )
    errors = d.errors
    interface_only = is_interface_only(d)
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
    return reference


def _read_tests(d: Definition, signature: Signature) -> Tests | None:
    return d.get(
        "tests",
        parse_tests,
        signature.inputs,
        signature.outputs,
        signature.attrs_by_name,
        _tested_dtypes(signature),
        d.errors,
        signature.constraints,
        "torch" in d,
    )


def _check_op(d: Definition, op: OpDef) -> None:
    """The assembled op's problems, each reported at its field; then the shape rule at every
    random case (the emitters apply it to each: what it cannot apply to, a divisor of 0, is an
    error here, before anything is rendered or written)."""
    errors = d.errors
    for field_path, message in op_problems(op):
        errors.add(read.node_at(d.root, field_path).error(message))
    errors.raise_if_any()
    for case, item in zip(op.tests.random, _random_items(d), strict=True):
        errors.attempt(check_random_case_outputs, op, case, item)
    errors.raise_if_any()


def _random_items(d: Definition) -> list[Node]:
    return d["tests"].value["random"].value if "tests" in d else []


# What an interface-only op cannot use: its schema has no inference function, so no runtime
# would check these.
_CHECKED_FIELDS = {
    "inputs": ("shape", "same_shape_as"),
    "outputs": ("shape", "same_shape_as"),
    "attributes": ("allowed", "min", "max"),
}


def _checked_fields(d: Definition) -> list[Node]:
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


def _check_interface_only_fields(d: Definition) -> None:
    for node in _checked_fields(d):
        d.errors.add(node.error(_UNCHECKED))


_UNCHECKED = (
    "an interface-only op has no shape inference to check this with; give it an "
    "implementation ('kernel', 'function' or 'provided_by') and tests"
)


def _given(value: R | None) -> R:
    """A value that is there once no error was reported (each None above reported one)."""
    if value is None:
        raise AssertionError("a definition section is missing but no error was reported")
    return value


def _read_onnx_name(d: Definition) -> tuple[str | None, str | None, tuple[int, ...]]:
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


def _implementation_key(d: Definition, versions: tuple[int, ...]) -> str | None:
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
    d: Definition,
    signature: Signature,
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
    if is_interface_only(d) and _checked_fields(d):
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
    d: Definition, signature: Signature, torch_binding: TorchBinding | None
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
    d: Definition, signature: Signature, torch_binding: TorchBinding | None
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
    d: Definition, signature: Signature, implementation: Implementation | None
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


def _read_implementation(d: Definition, signature: Signature) -> Implementation | None:
    kernel = d.get("kernel", _parse_kernel, d.path.parent, "torch" in d)
    function = d.get(
        "function", parse_function, signature.inputs, signature.outputs, signature.attrs_by_name
    )
    provided = d.get("provided_by", _parse_provided_by)
    return kernel or function or provided


def _read_replaces(
    d: Definition, domain: str | None, op_type: str | None, implementation: Implementation | None
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
    d: Definition,
    signature: Signature,
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


def _tested_dtypes(signature: Signature) -> tuple[DType, ...]:
    """Outputs are compared with a tolerance per dtype: every floating dtype they can have."""
    by_var = {tc.name: tc for tc in signature.constraints}
    output_types = [
        t
        for o in signature.outputs
        for t in (by_var[o.type_var].types if o.type_var in by_var else (o.concrete,))
    ]
    output_dtypes = {t.dtype for t in output_types if isinstance(t, TensorType)}
    return tuple(d for d in DType if d in output_dtypes and d.is_floating)
