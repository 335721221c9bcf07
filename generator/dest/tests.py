"""The generated parity tests of an op: generator/templates/python/test_parity.py.j2 and the
parts it includes (generator/templates/python/test_parity/), all reading one ParityTestView.
The runtime targets' own parts come as data, a ParityTestPieces from each (emitters.py
collects them), so that this module names no target."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from generator.api import onnx as onnx_api
from generator.api import python as py
from generator.api.names import Local
from generator.dest import common
from generator.dest.emission import Emission
from generator.dest.python import title_and_torch_op, torch_overload_expr
from generator.model.capabilities import Target, targets_of
from generator.model.expressions import EXPRESSION_MODULES, PythonImport, import_block
from generator.model.op import OpDef
from generator.model.tensors import TensorParam, value_names
from generator.model.tests import DTypeChoice, RandomCase
from generator.model.types import TORCHSCRIPT_MISSING_DTYPES, DType
from generator.parse.project import export_targets
from generator.render import GeneratedFile, render
from generator.shapes.evaluate import evaluate_output_shapes
from generator.view import view

# Every value below that ends in a Python literal (a list, dict or tuple the test module
# holds) is that literal's text: the template substitutes it as it is.


@view
class ExportFactsView:
    """What the export must produce: nodes per rule, the libraries and functions they need."""

    overrides: str  # the override definitions the export asks for
    libraries: str
    rules: str  # [(attribute values, [(domain, op type), ...]), ...]
    function_bodies: str  # {(domain, function): [(domain, op type), ...]}


@view
class ToleranceView:
    dtype: str
    rtol: float
    atol: float


@view
class KnownCaseView:
    inputs: str
    outputs: str
    attributes: str
    dtypes: str  # {type variable: its dtypes} it runs at (_testing.runs_at); "None": all


@view
class SamplerView:
    """A function drawing one input of one random case."""

    function: str
    expr: str  # of `shape` and `gen`


@view
class RandomCaseView:
    shapes: str
    dynamic: str
    samplers: str  # {input: sampler function}
    attributes: str
    # Each output's dims as ONNX infers them from the case's named input dims: numbers,
    # names, "?" (unknown), "?M" (data-dependent size M); None: the output has no shape rule
    # (shapes come through a function body).
    output_dims: str


@view
class ErrorCaseView:
    """Inputs of these shapes (filled with ones) make every runtime fail with `message`."""

    shapes: str
    attributes: str
    message: str
    dtypes: str  # as KnownCaseView's: it runs at the first combination these allow


@view
class ValueErrorCaseView:
    """These input values make the kernel fail with `message`."""

    inputs: str
    attributes: str
    message: str
    dtypes: str  # as KnownCaseView's: it runs at every combination these allow


@view
class BuiltinEquivalentView:
    """An op ONNX Runtime has built in that must compute the same."""

    test_name: str
    domain: str
    op_type: str
    version: int
    dtypes: str  # as KnownCaseView's: it compares at every combination these allow


@view
class ParityTestPieces:
    """A runtime target's pieces of an op's parity tests: whether the op's test module has each
    of the target's parts of generator/templates/python/test_parity/ (PART_ORDER places them),
    and the view those parts read, as `targets.<target's name>` (None: the op has none)."""

    target: Target
    parts: Mapping[str, bool]
    view: object | None = None


@view
class ParityTestView:
    """generated/<op>/test_<op>.py."""

    # The parts of generator/templates/python/test_parity/ this op's tests have, in file order.
    parts: tuple[str, ...]
    title_and_torch_op: str
    what_is_compared: str  # the docstring's list of what runs against the reference
    imports: str  # the module's `import` lines, the reference's modules among them
    title: str
    domain: str | None
    op_type: str | None
    version: int | None
    op_id: str
    library: str | None  # the custom-op library serving the op (None: none needed)
    export: ExportFactsView | None  # None: the op has no export rules
    defines_onnx_op: bool
    has_ort_kernel: bool  # the domain's ONNX Runtime library serves the op
    runs_in_onnxruntime: bool
    torch_op: str | None  # the PyTorch overload the tests call
    is_function: bool
    new_torch_op: bool
    has_cpp_schema: bool
    schema_tests: str  # the domain's schema test executable (when has_cpp_schema)
    # The standard opset of the one-node models where the default (18) is too old: a function
    # op's body opset (None: the default).
    standard_opset: int | None
    # Module constants
    defaults: str
    type_combinations: str
    tolerances: tuple[ToleranceView, ...]
    exporters: str
    zero_d_case: str  # (case index, (inputs, ...)) literal (OpDef.zero_d_case)
    type_exporters: str  # [[exporter, ...] for each entry of TYPES]
    torchscript_missing: str  # (torch dtype, ...)
    input_names: str
    variadic_input: str | None  # its values are named as value_name does in the tests
    variadic_output: str | None  # likewise; one value per value of the variadic input
    paired_count_message: str  # a literal: what a node with another count of its values gets
    attribute_names: str
    attribute_types: str
    input_types: str
    output_types: str
    output_names: str
    data_dependent_outputs: str
    # The reference expression
    reference: str
    reference_params: str
    reference_type_args: str  # the type variables an attribute chooses, passed to the reference
    type_choosers: str  # {attribute: type variable} ("" without)
    inference_attributes: str  # a list literal of those ONNX's inference reads ("" if none)
    # A case's attributes in a test that runs the dtypes `types` (set to them where an
    # attribute chooses a dtype)
    case_attributes: str
    reference_upcast: bool
    reference_precision: str  # how the docstring says where the reference computes
    # The PyTorch model the export tests export
    forward_params: str
    input_params: str
    # Cases
    known_cases: tuple[KnownCaseView, ...]
    samplers: tuple[SamplerView, ...]
    random_cases: tuple[RandomCaseView, ...]
    # Each runtime target's view of its parts, by its name in Target (ParityTestPieces.view)
    targets: Mapping[str, object]
    error_cases: tuple[ErrorCaseView, ...]
    value_error_cases: tuple[ValueErrorCaseView, ...]
    bad_values_test_name: str
    # Single tests
    earlier_versions: str  # {version: [its attributes]}
    gradient_inputs: str
    gradient_cases: str  # [(random case index, [optional inputs left out of it]), ...]
    # The entries of TYPES where the op's backward is compared with the reference's: the one
    # with the gradient inputs in float64 (also gradcheck-ed), else each with them floating
    gradient_types: str
    kernel_gradcheck: bool  # gradient_types is the float64 one
    formula_types: int  # the entry of TYPES the formulas' gradcheck takes its other dtypes from
    no_gradient_message: str | None  # a regular expression's literal
    forward_mode_message: str | None  # a regular expression's literal
    wrong_dtypes: str  # [(input, a random case giving it, a dtype it does not accept), ...]
    wrong_dtype_also_fails: str  # who else rejects the wrong dtype, after ONNX's type check
    torch_op_checks_dtype: bool
    required_attributes: str
    missing_attribute_also_fails: str  # who else rejects a missing attribute, after the checker
    tensor_attribute_dtypes: str  # {name: (its dtype, another)} of the tensor attributes
    builtin_equivalents: tuple[BuiltinEquivalentView, ...]


def _attributes_literal(op: OpDef, attributes: Mapping[str, Any]) -> str:
    return (
        "{"
        + ", ".join(
            f"{k!r}: {py.attribute_value_in_tests(op, k, v)}" for k, v in attributes.items()
        )
        + "}"
    )


def parity_test_view(
    op: OpDef, index: Mapping[tuple[str, str], OpDef], pieces: Sequence[ParityTestPieces]
) -> ParityTestView:
    """`pieces`: every runtime target's (emitters.py's parity_test_pieces)."""
    tests = op.tests
    has_kernel = op.has_ort_kernel
    random_cases = [_random_case(op, i, case) for i, case in enumerate(tests.random)]
    return ParityTestView(
        parts=_parts(op, pieces),
        title_and_torch_op=title_and_torch_op(op),
        what_is_compared=_what_is_compared(op),
        imports=_imports(op),
        title=op.title,
        domain=op.domain,
        op_type=op.op_type,
        version=op.version,
        op_id=op.op_id,
        library=op.domain_ident if has_kernel else None,
        export=_export_facts(op, index) if op.export else None,
        defines_onnx_op=op.defines_onnx_op,
        has_ort_kernel=has_kernel,
        runs_in_onnxruntime=op.runs_in_onnxruntime,
        torch_op=torch_overload_expr(op) if op.torch is not None else None,
        is_function=op.function is not None,
        new_torch_op=op.new_torch_op,
        has_cpp_schema=op.has_cpp_schema,
        schema_tests=common.schema_tests_name(op.domain_ident) if op.has_cpp_schema else "",
        standard_opset=(
            op.function.opset if op.function is not None and op.function.opset > 18 else None
        ),
        defaults=_attributes_literal(
            op, {a.name: a.default for a in op.attributes if not a.required}
        ),
        type_combinations=_type_combinations(op),
        tolerances=tuple(
            ToleranceView(py.TEST_DTYPE[dtype], tolerance.rtol, tolerance.atol)
            for dtype, tolerance in sorted(tests.tolerances.items(), key=lambda i: i[0].value)
        ),
        exporters=py.literal(list(op.exporters)),
        zero_d_case=py.literal(op.zero_d_case),
        type_exporters=py.literal([list(op.exporters_at(b)) for b in op.instantiations]),
        torchscript_missing=_dtype_tuple(TORCHSCRIPT_MISSING_DTYPES),
        input_names=py.literal([t.name for t in op.inputs]),
        variadic_input=next((t.name for t in op.inputs if t.variadic), None),
        variadic_output=next((t.name for t in op.outputs if t.variadic), None),
        paired_count_message=next(
            (py.literal(op.paired_count_message(t)) for t in op.outputs if t.variadic), ""
        ),
        attribute_names=py.literal([a.name for a in op.attributes]),
        attribute_types=_attribute_types(op),
        input_types=_declared_types(op.inputs),
        output_types=_declared_types(op.outputs),
        output_names=py.literal([t.name for t in op.outputs]),
        data_dependent_outputs=py.literal(
            [t.name for t in op.outputs if t.name in op.shape_rule.kernel_allocated]
        ),
        **_reference_fields(op),
        known_cases=tuple(
            KnownCaseView(
                py.literal_dict(case.inputs),
                py.literal_dict(case.outputs),
                _attributes_literal(op, op.case_attributes(case.attributes)),
                _dtype_choice(case.dtypes),
            )
            for case in tests.known
        ),
        samplers=tuple(sampler for _, samplers in random_cases for sampler in samplers),
        random_cases=tuple(case for case, _ in random_cases),
        targets={piece.target.name: piece.view for piece in pieces},
        **_error_case_fields(op),
        **_single_test_fields(op),
        builtin_equivalents=tuple(
            BuiltinEquivalentView(
                test_name="_".join(
                    part
                    for part in ("test_matches_builtin", b.domain.replace(".", "_"), b.op_type)
                    if part
                ).lower(),
                domain=b.domain,
                op_type=b.op_type,
                version=b.version,
                dtypes=_dtype_choice(b.dtypes),
            )
            for b in tests.builtin_equivalents
        ),
    )


def _reference_fields(op: OpDef) -> dict[str, Any]:
    """The ParityTestView fields of the reference expression and the exported model."""
    return dict(
        reference=op.reference,
        reference_params=", ".join(
            [f"{t.name}=None" if t.optional else t.name for t in op.inputs]
            + [
                (
                    a.name
                    if a.required
                    else f"{a.name}={py.attribute_value_in_tests(op, a.name, a.default)}"
                )
                for a in op.attributes
            ]
            + [tc.name for tc in op.type_choosers.values()]
        ),
        reference_type_args="".join(
            f", {tc.name}=types[{tc.name!r}]" for tc in op.type_choosers.values()
        ),
        type_choosers=(
            py.literal_dict({name: tc.name for name, tc in op.type_choosers.items()})
            if op.type_choosers
            else ""
        ),
        inference_attributes=(
            py.literal(list(op.shape_rule.attributes))
            if op.shape_rule.attributes and not op.is_interface_only
            else ""
        ),
        case_attributes=(
            'typed(case["attributes"], types)' if op.type_choosers else 'case["attributes"]'
        ),
        reference_upcast=op.reference_upcast,
        reference_precision="in float64" if op.reference_upcast else "at the input dtype",
        # A variadic input's values come one by one (last): the exporters take tensors.
        forward_params=", ".join(
            (
                f"*{t.name}"
                if t.variadic
                else f"{t.name}=None" if py.input_defaults_to_none(op, i) else t.name
            )
            for i, t in enumerate(op.inputs)
        ),
        input_params=", ".join(f"list({t.name})" if t.variadic else t.name for t in op.inputs),
    )


def _error_case_fields(op: OpDef) -> dict[str, Any]:
    """The ParityTestView fields of the error cases."""
    return dict(
        error_cases=tuple(
            ErrorCaseView(
                py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
                _attributes_literal(op, case.attributes),  # the tests set the choosers
                case.message,
                _dtype_choice(case.dtypes),
            )
            for case in op.error_cases
            if case.values is None
        ),
        value_error_cases=tuple(
            ValueErrorCaseView(
                py.literal_dict(case.values),
                _attributes_literal(op, case.attributes),  # the tests set the choosers
                case.message,
                _dtype_choice(case.dtypes),
            )
            for case in op.error_cases
            if case.values is not None
        ),
        bad_values_test_name=(
            "test_bad_values_raise_in_both_runtimes"
            if op.has_ort_kernel
            else "test_bad_values_raise_in_pytorch"
        ),
    )


def _single_test_fields(op: OpDef) -> dict[str, Any]:
    """The ParityTestView fields of the single tests (gradients, refusals)."""
    gradient_types, kernel_gradcheck = _gradient_bindings(op)
    return dict(
        earlier_versions=_earlier_versions(op),
        gradient_inputs=py.literal(list(op.gradients)),
        gradient_cases=py.literal(list(op.gradient_cases)),
        gradient_types=py.literal(gradient_types),
        kernel_gradcheck=kernel_gradcheck,
        formula_types=_formula_binding(op),
        no_gradient_message=_no_gradient_message(op),
        forward_mode_message=_forward_mode_message(op),
        wrong_dtypes="[" + "".join(f"({n!r}, {i}, {d}), " for n, i, d in _wrong_dtypes(op)) + "]",
        wrong_dtype_also_fails=(
            (
                ""
                if op.function or not op.runs_in_onnxruntime
                else ", ONNX Runtime refuses the model"
            )
            + (", the PyTorch op raises" if op.kernel is not None and op.new_torch_op else "")
        ),
        torch_op_checks_dtype=op.kernel is not None and op.new_torch_op,
        required_attributes=py.literal([a.name for a in op.attributes if a.required]),
        missing_attribute_also_fails=(
            (" and ONNX Runtime's session" if op.has_ort_kernel else "")
            + ("; the PyTorch op cannot be called without it" if op.new_torch_op else "")
        ),
        tensor_attribute_dtypes=py.literal(
            {
                a.name: (a.dtype.value, "float32" if a.dtype is not DType.float32 else "int64")
                for a in op.attributes
                if a.dtype is not None
            }
        ),
    )


# The parts of generator/templates/python/test_parity/ in the order a test module has them.
PART_ORDER = (
    "torch_helpers",
    "export_helpers",
    "single_node",
    "known_cases",
    "test_known_values",
    "random_cases",
    "test_export_and_parity",
    "test_pytorch_parity",
    "test_torchscript_export_refuses_dtypes_it_lacks",
    "test_zero_d_input",
    "test_single_node_parity",
    "test_onnxruntime_infers_output_types_and_shapes",
    "test_onnxruntime_leaves_out_optional_outputs",
    "test_onnxruntime_pairs_variadic_output_values",
    "test_earlier_version_runs",
    "test_opcheck",
    "test_native_registration",
    "test_cuda",
    "test_cuda_leaves_out_outputs_in_onnxruntime",
    "test_inputs_on_two_devices_raise",
    "test_gradients",
    "test_gradients_through_torch_func",
    "test_backward_without_gradient_formulas_raises",
    "test_forward_mode_ad_raises_naming_the_op",
    "test_override",
    "error_cases",
    "test_bad_shapes_raise_in_pytorch",
    "test_bad_shapes_error_status_in_onnxruntime",
    "test_bad_shapes_give_one_message_everywhere",
    "test_bad_shapes_fail_onnx_shape_inference",
    "value_error_cases",
    "test_bad_values_raise",
    "test_cuda_bad_values_raise",
    "test_wrong_dtype_is_rejected",
    "test_missing_required_attribute_is_rejected",
    "test_attribute_of_the_wrong_type_fails_the_session",
    "test_tensor_attribute_of_another_dtype_fails_the_session",
    "test_bool_attribute_other_than_0_or_1_fails_the_session",
    "test_session_without_library_fails_clearly",
    "test_session_without_library_runs_onnxruntimes_own_op",
    "test_cpp_schema_with_onnx_library",
    "test_matches_builtin",
)


def _parts(op: OpDef, pieces: Sequence[ParityTestPieces]) -> tuple[str, ...]:
    """The parts of generator/templates/python/test_parity/ that the op's test module has, in file order:
    each is a test (or the data and helpers of some) that an op has or lacks as a whole."""
    shape_errors = any(case.values is None for case in op.error_cases)
    value_errors = any(case.values is not None for case in op.error_cases)
    wanted = {
        "torch_helpers": op.torch is not None,
        "single_node": op.defines_onnx_op,
        "known_cases": True,
        "test_known_values": bool(op.tests.known),
        "random_cases": True,
        "test_pytorch_parity": op.torch is not None and not op.export,
        "test_single_node_parity": op.runs_in_onnxruntime,
        "test_earlier_version_runs": bool(op.earlier_versions) and op.runs_in_onnxruntime,
        "test_opcheck": op.new_torch_op,
        "test_inputs_on_two_devices_raise": op.new_torch_op and _present_inputs(op) > 1,
        "test_gradients": bool(op.gradients),
        "test_gradients_through_torch_func": _tests_torch_func(op),
        "test_backward_without_gradient_formulas_raises": _no_gradient_message(op) is not None,
        "test_forward_mode_ad_raises_naming_the_op": _forward_mode_message(op) is not None,
        "test_override": op.torch is not None and op.torch.is_override,
        "error_cases": True,
        "test_bad_shapes_raise_in_pytorch": shape_errors and op.new_torch_op,
        "test_bad_shapes_give_one_message_everywhere": shape_errors,
        "test_bad_shapes_fail_onnx_shape_inference": shape_errors and op.defines_onnx_op,
        "value_error_cases": True,
        "test_bad_values_raise": value_errors,
        "test_wrong_dtype_is_rejected": op.defines_onnx_op and bool(_wrong_dtypes(op)),
        "test_missing_required_attribute_is_rejected": any(a.required for a in op.attributes),
        "test_matches_builtin": bool(op.tests.builtin_equivalents) and op.runs_in_onnxruntime,
    }
    # The targets' own parts: each module of generator/targets/ that has some says which.
    for piece in pieces:
        assert not wanted.keys() & piece.parts.keys(), wanted.keys() & piece.parts.keys()
        wanted |= piece.parts
    assert wanted.keys() == set(PART_ORDER), wanted.keys() ^ set(PART_ORDER)
    return tuple(f"python/test_parity/{name}.py.j2" for name in PART_ORDER if wanted[name])


def _what_is_compared(op: OpDef) -> str:
    """What the module docstring says runs against the reference (lines broken as it wraps)."""
    compared = "Reference expression vs PyTorch" if op.torch is not None else "Reference expression"
    if op.export:
        compared += (
            " vs the exported model in ONNX Runtime (both\nexporters, two sizes of every dynamic "
            "dim, with graph assertions on what was exported)"
        )
    if op.defines_onnx_op:
        compared += " vs\na one-node model of the ONNX op"
    return compared


def _imports(op: OpDef) -> str:
    own = [
        PythonImport("functools", "", "cached C++ test output"),
        PythonImport("re", "", "error messages"),
        PythonImport("subprocess", "", "the C++ schema test"),
        PythonImport("onnx"),
        PythonImport("pytest"),
        PythonImport("torch"),
    ]
    if _tests_torch_func(op):
        own.append(PythonImport("warnings"))  # torch.func's vmap warns
    # What the reference and the samplers may name (the validator's same list).
    return import_block([*own, *EXPRESSION_MODULES])


def _tests_torch_func(op: OpDef) -> bool:
    """torch.func's transforms run the gradient formulas of our own Autograd kernel only."""
    return bool(op.gradients) and op.has_autograd_kernel


def _present_inputs(op: OpDef) -> int:
    """How many inputs the first random case passes (the others are absent optional ones)."""
    return len(op.tests.random[0].shapes) if op.tests.random else 0


def _no_gradient_message(op: OpDef) -> str | None:
    """What backward raises, as a regular expression's literal; tested where some dtypes let a
    gradient reach the op."""
    if not (op.raises_without_gradients and op.differentiable):
        return None
    return py.literal(re.escape(py.no_gradient_message(op)))


def _forward_mode_message(op: OpDef) -> str | None:
    """What forward-mode AD raises, as a regular expression's literal: through a
    differentiable op registered by our own Autograd kernel."""
    if not (op.new_torch_op and op.has_autograd_kernel and op.differentiable):
        return None
    return py.literal(re.escape(py.forward_mode_message(op)))


def _export_facts(op: OpDef, index: Mapping[tuple[str, str], OpDef]) -> ExportFactsView:
    called = export_targets(op, index)
    libraries = sorted({t.domain_ident for t in called if t.kernel})
    bodies = {
        (t.domain, t.op_type): [("", n.op_type) for n in t.function.nodes]
        for t in called
        if t.function
    }
    rules = [(dict(rule.when), [(n.domain, n.op_type) for n in rule.nodes]) for rule in op.export]
    return ExportFactsView(
        overrides=py.literal([op.op_id] if py.torch_binding(op).is_override else []),
        libraries=py.literal(libraries),
        rules="[" + ", ".join(f"({py.literal_dict(w)}, {n!r})" for w, n in rules) + "]",
        function_bodies=repr(bodies),
    )


def _random_case(
    op: OpDef, case_index: int, case: RandomCase
) -> tuple[RandomCaseView, list[SamplerView]]:
    named = {k: list(v) for k, v in case.shapes.items()}
    shapes = evaluate_output_shapes(op, named, case.attributes, mark_data_dependent=True)
    samplers = [
        SamplerView(Local.random_sampler(case_index, name), expr)
        for name, expr in case.samples.items()
    ]
    # By value: each of a variadic input's values is drawn by its sampler.
    by_input = "".join(
        f"{json.dumps(value)}: {sampler.function}, "
        for name, sampler in zip(case.samples, samplers, strict=True)
        for value in (value_names(name, case.shapes) if name in op.variadic_inputs else [name])
    )
    view = RandomCaseView(
        shapes=py.literal_dict({k: tuple(v) for k, v in case.shapes.items()}),
        dynamic=py.literal_dict({k: tuple(v) for k, v in case.dynamic.items()}),
        samplers="{ " + by_input + " }",
        attributes=_attributes_literal(op, op.case_attributes(case.attributes)),
        output_dims=py.literal(
            [
                shapes.get(name)
                for o in op.outputs
                for name in (value_names(o.name, shapes) if o.variadic else [o.name])
            ]
        ),
    )
    return view, samplers


def emit(op: OpDef, emission: Emission, pieces: Sequence[ParityTestPieces]) -> list[GeneratedFile]:
    if Target.parity_tests not in targets_of(op):
        return []
    path = f"{op.op_id}/test_{op.op_id}.py"
    view = parity_test_view(op, emission.onnx_ops, pieces)
    return [render("python/test_parity.py.j2", path, common.sources(op), view)]


def _type_combinations(op: OpDef) -> str:
    """[{type variable: torch dtype}, ...] for every instantiation."""
    combinations = (
        "{" + ", ".join(f"{var!r}: {py.TEST_DTYPE[d]}" for var, d in inst.bindings) + "}"
        for inst in op.instantiations
    )
    return "[" + "".join(f"{combination}, " for combination in combinations) + "]"


def _attribute_types(op: OpDef) -> str:
    """{attribute: its onnx.AttributeProto type}"""
    types = (
        f"{py.literal(a.name)}: onnx.AttributeProto.{onnx_api.ATTR_TYPE[a.type]}"
        for a in op.attributes
    )
    return "{" + ", ".join(types) + "}"


def _earlier_versions(op: OpDef) -> str:
    """{earlier version: [the attributes the op had then]}"""
    versions = (
        f"{v}: {py.literal([a.name for a in op.attributes_at(v)])}" for v in op.earlier_versions
    )
    return "{" + ", ".join(versions) + "}"


def _dtype_tuple(dtypes: tuple[DType, ...]) -> str:
    return "(" + "".join(f"{py.TEST_DTYPE[d]}, " for d in dtypes) + ")"


def _dtype_choice(choice: DTypeChoice | None) -> str:
    """A case's `dtypes` as the generated tests hold it: {type variable: (torch dtypes, ...)}."""
    if choice is None:
        return "None"
    items = (f"{py.literal(var)}: {_dtype_tuple(dtypes)}" for var, dtypes in choice.items())
    return "{" + ", ".join(items) + "}"


def _wrong_dtypes(op: OpDef) -> list[tuple[str, int, str]]:
    """Each input some random case gives, the first such case, and a dtype the input does not
    accept: the wrong-dtype test retypes each in turn, to prove it is rejected (not misread)."""
    wrong = []
    for tensor in op.inputs:
        accepted = op.dtypes_of(tensor)
        candidates = (DType.int32, DType.float64, DType.float32, DType.int64, DType.uint8)
        dtype = next((d for d in candidates if d not in accepted), None)
        giving = op.random_cases_giving(tensor.name)
        if dtype is not None and giving:
            wrong.append((tensor.name, giving[0], py.TEST_DTYPE[dtype]))
    return wrong


def _gradient_bindings(op: OpDef) -> tuple[list[int], bool]:
    """The instantiations where the op's backward is compared with the reference's, and
    whether that is the one with every gradient input in float64 (gradcheck-ed too): else each
    with them floating (the kernel need not have float64)."""
    floating = [
        index
        for index, binding in enumerate(op.instantiations)
        if all(t.dtype_in(binding).is_floating for t in op.inputs if t.name in op.gradients)
    ]
    # gradcheck of the op itself wants float64 throughout: the gradient inputs, and every
    # floating output (one an attribute chooses too: a float16 one makes finite differences noise)
    float64 = [
        index
        for index in floating
        if all(
            t.dtype_in(op.instantiations[index]) is DType.float64
            for t in op.inputs
            if t.name in op.gradients
        )
        and all(
            t.dtype_in(op.instantiations[index]) is DType.float64
            for t in op.outputs
            if t.dtype_in(op.instantiations[index]).is_floating
        )
    ]
    return (float64[:1], True) if float64 else (floating, False)


def _formula_binding(op: OpDef) -> int:
    """The instantiation the formulas' gradcheck over the reference takes its non-floating
    dtypes from (the test binds every floating type variable to float64: _testing.in_float64):
    the one with the most float64 tensors."""
    floating, _ = _gradient_bindings(op)
    if not floating:
        return 0

    def float64_count(index: int) -> int:
        binding = op.instantiations[index]
        return sum(t.dtype_in(binding) is DType.float64 for t in op.inputs + op.outputs)

    return max(floating, key=lambda index: (float64_count(index), -index))


def _declared_types(tensors: Sequence[TensorParam]) -> str:
    """{tensor: its type variable's name, or its fixed torch dtype}"""
    declared = []
    for t in tensors:
        if t.type_var:
            declared.append(f"{t.name!r}: {t.type_var!r}")
        else:
            assert t.dtype is not None  # TensorParam: a type variable or a dtype
            declared.append(f"{t.name!r}: {py.TEST_DTYPE[t.dtype]}")
    return "{" + ", ".join(declared) + "}"
