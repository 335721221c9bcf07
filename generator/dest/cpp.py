"""C++ per op: kernel API header, kernel instantiations, ONNX Runtime wrapper, pybind11
binding, ONNX C++ schema and its test."""

from __future__ import annotations

from pathlib import Path

from generator.api import cpp, cpp_shapes
from generator.api import onnx as onnx_api
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.api.onnx import TENSOR_PROTO_NUMBER, onnx_type_string
from generator.dest import common
from generator.model.op import OpDef
from generator.model.tensors import Attribute
from generator.render import GeneratedFile, render
from generator.shapes.evaluate import evaluate_output_shapes


def _attributes(attributes: tuple[Attribute, ...]) -> list[dict]:
    result = []
    for attr in attributes:
        result.append(
            {
                "name": attr.name,
                "cpp_type": cpp.ATTR_TYPE[attr.type],
                "initializer": "" if attr.required else f" = {cpp.attr_literal(attr)}",
                "comment": " ".join(cpp.comment(attr.doc)) or attr.type.value,
                "required": attr.required,
                "required_literal": "true" if attr.required else "false",
                "onnx_enum": ATTR_PROTO[attr.type],
                "name_literal": cpp.string_literal(attr.name),
                "doc_literal": cpp.string_literal(attr.doc),
                "schema_default": None if attr.required else cpp.schema_default(attr),
            }
        )
    return result


def _tensors(op: OpDef) -> tuple[list[dict], list[dict]]:
    inputs = [
        {
            "name": t.name,
            "index": i,
            "cpp_type": common.tensor_cpp_type(t),
            "optional": t.optional,
        }
        for i, t in enumerate(op.inputs)
    ]
    allocated = op.shape_rule.kernel_allocated
    outputs = [
        {
            "name": t.name,
            "index": i,
            "cpp_type": common.tensor_cpp_type(t),
            "kernel_allocated": t.name in allocated,
        }
        for i, t in enumerate(op.outputs)
    ]
    return inputs, outputs


def _instantiations(op: OpDef) -> list[dict]:
    result = []
    for inst in op.instantiations:
        binding = {var: cpp.KERNEL_TYPE[dtype] for var, dtype in inst.bindings}
        dtype_of = {t.name: (inst.dtype(t.type_var) if t.type_var else t.dtype) for t in op.inputs}
        result.append(
            {
                "suffix": inst.suffix or "only",
                "template_args": common.template_args(op, binding),
                "compute_params": common.compute_params(op, binding),
                # The numpy dtypes live in one place: dtype_of<T>() of pybind_support.h.
                "numpy_condition": " && ".join(
                    (
                        f"(!{name}_array || "
                        f"opgen::py_support::has_dtype<{cpp.KERNEL_TYPE[dtype]}>(*{name}_array))"
                        if name in op.optional_inputs
                        else f"opgen::py_support::has_dtype<{cpp.KERNEL_TYPE[dtype]}>({name}_array)"
                    )
                    for name, dtype in dtype_of.items()
                ),
            }
        )
    return result


def _common_context(op: OpDef, output_dir: Path) -> dict:
    inputs, outputs = _tensors(op)
    kernel_include = None
    if op.kernel is not None and op.kernel.source_file is not None:
        kernel_include = common.relative_include(
            output_dir.resolve() / op.op_id, op.kernel.source_file.resolve()
        )
    shape_params = ", ".join(
        f"const std::vector<Dim>& {t.name}_shape"
        + (f", bool {t.name}_present" if t.optional else "")
        for t in op.inputs
    )
    return {
        "op_id": op.op_id,
        "op_type": op.op_type,
        "domain": op.domain,
        "version": op.version,
        "first_version": op.versions[0],
        "versions_text": ", ".join(str(v) for v in op.versions),
        "doc_lines": cpp.comment(op.doc),
        "attributes": _attributes(op.attributes),
        "inputs": inputs,
        "outputs": outputs,
        "template_decl": common.template_decl(op),
        "template_args": common.template_args(op),
        "compute_params": common.compute_params(op),
        "shape_params": shape_params + ", const Attributes& attrs",
        "shape_args": ", ".join(
            f"{t.name}_shape" + (f", {t.name}_present" if t.optional else "") for t in op.inputs
        )
        + ", attrs",
        "optional_flags": ", ".join("true" if t.optional else "false" for t in op.inputs),
        "has_optional_inputs": any(t.optional for t in op.inputs),
        "compute_args": ", ".join(
            ["pool"] + [t.name for t in op.inputs] + [t.name for t in op.outputs] + ["attrs"]
        ),
        "serial_compute_args": ", ".join(
            ["serial"] + [t.name for t in op.inputs] + [t.name for t in op.outputs] + ["attrs"]
        ),
        "checks": cpp_shapes.concrete_checks(op),
        "output_shapes": cpp_shapes.concrete_output_shapes(op),
        "instantiations": _instantiations(op),
        "kernel_include": kernel_include,
        "kernel_body": (op.kernel.body if op.kernel else None) or "",
        "kernel_origin": (
            f"in {op.kernel.source_file.name}"
            if op.kernel and op.kernel.source_file
            else "inline in the definition"
        ),
    }


def _ort_context(op: OpDef) -> dict:
    """ONNX Runtime's graph-time shape inference: the op's shape rule on symbolic dims."""
    input_index = {t.name: i for i, t in enumerate(op.inputs)}
    attrs = {a.name: a for a in op.attributes}

    def element_type(output) -> str:
        source = op.dtype_source(output)
        if source is None:
            return f"opgen::ort::element_type<{common.tensor_cpp_type(output)}>()"
        return f"context.element_type({input_index[source]})"

    return {
        # Inputs whose rank 0 could mean "unknown rank" to ONNX Runtime (not the scalars).
        "rank_ambiguous_indices": ", ".join(
            str(i["index"])
            for i in common.shaped_inputs(op)
            if i["name"] not in op.shape_rule.scalar_inputs
        ),
        "rule_attributes": [
            {"name": name, "required_literal": "true" if attrs[name].required else "false"}
            for name in op.shape_rule.attributes
        ],
        "output_element_types": [element_type(t) for t in op.outputs],
    }


def _pybind_context(op: OpDef) -> dict:
    array_params = [
        (
            f"const std::optional<py::array>& {t.name}_array"
            if t.optional
            else f"const py::array& {t.name}_array"
        )
        for t in op.inputs
    ]
    attr_params = [f"{cpp.ATTR_TYPE[a.type]} {a.name}" for a in op.attributes]
    supported = "; ".join(
        f"{t.name}: "
        + "|".join(d.value for d in (op.type_var_dtypes[t.type_var] if t.type_var else (t.dtype,)))
        for t in op.inputs
    )
    return {
        "pybind_params": ", ".join(array_params),
        "binding_params": ", ".join(array_params + attr_params),
        "binding_arg_specs": [
            f'py::arg("{t.name}")' + (" = py::none()" if t.optional else "") for t in op.inputs
        ]
        + [f'py::arg("{a.name}")' for a in op.attributes],
        "run_args": ", ".join(f"{t.name}_array" for t in op.inputs),
        "output_arrays": ", ".join(f"{t.name}_array" for t in op.outputs),
        "dtype_list_expr": ' + ", " + '.join(f"{t.name}_dtype" for t in op.inputs),
        "supported_dtypes": supported,
        "doc_literal": cpp.string_literal(op.doc),
    }


def _schema_context(op: OpDef) -> dict:
    def tensor(t, i, is_output):
        type_str = t.type_var or onnx_type_string(t.dtype)
        entry = {
            "name": t.name,
            "index": i,
            "optional": t.optional,
            "name_literal": cpp.string_literal(t.name),
            "doc_literal": cpp.string_literal(t.doc),
            "type_literal": cpp.string_literal(type_str),
        }
        if is_output:
            source = op.dtype_source(t)
            entry["dtype_from_input"] = (
                None if source is None else [x.name for x in op.inputs].index(source)
            )
            entry["proto_enum"] = None if t.dtype is None else cpp.onnx_proto_enum(t.dtype)
        return entry

    return {
        "domain_literal": cpp.string_literal(op.domain),
        "op_type_literal": cpp.string_literal(op.op_type),
        "doc_literal": cpp.string_literal(op.doc),
        "inputs": [tensor(t, i, False) for i, t in enumerate(op.inputs)],
        "outputs": [tensor(t, i, True) for i, t in enumerate(op.outputs)],
        "type_constraints": [
            {
                "name_literal": cpp.string_literal(tc.name),
                "types": ", ".join(cpp.string_literal(onnx_type_string(d)) for d in tc.dtypes),
                "doc_literal": cpp.string_literal(tc.doc),
            }
            for tc in op.type_constraints
        ],
        "shaped_inputs": common.shaped_inputs(op),
        "inference_attributes": cpp_shapes.schema_attributes(op),
        "attribute_checks": cpp_shapes.symbolic_attribute_checks(op),
        "checks": cpp_shapes.symbolic_checks(op),
        "output_shapes": cpp_shapes.symbolic_output_shapes(op),
        "function_body_literal": (
            cpp.string_literal(
                "{\n" + "".join(f"  {onnx_api.node_text(n)}\n" for n in op.function.nodes) + "}"
            )
            if op.function
            else None
        ),
        "function_opset": op.function.opset if op.function else None,
        # One registration per version of the op, with the attributes it had then.
        "schema_versions": [
            {
                "version": version,
                "attributes": _attributes(op.attributes_at(version)),
            }
            for version in op.versions
        ],
        # A function whose outputs have no shape rule: ONNX infers through its body.
        "infer_through_body": op.infers_through_function,
    }


def _explicit_attributes(op: OpDef, given: dict) -> dict:
    """A function op's test nodes spell out every attribute: ONNX 1.12's C++ inference does not
    apply schema defaults to attribute references (@name) in a function body."""
    if op.function is None:
        return given
    return {**{a.name: a.default for a in op.attributes if not a.required}, **given}


def _schema_test_context(op: OpDef) -> dict:
    first = op.instantiations[0] if op.type_constraints else None

    def tensor_dtype(t):
        """The tensor's dtype in the first instantiation (what the C++ test models use)."""
        return t.dtype if t.type_var is None else first.dtype(t.type_var)

    def dims_literal(dims) -> str:
        entries = [f'{{0, "{d}"}}' if isinstance(d, str) else f'{{{d}, ""}}' for d in dims]
        return "{" + ", ".join(entries) + "}"

    attrs = {a.name: a for a in op.attributes}
    valid = []
    for index, case in enumerate(op.tests.random):
        named = {name: list(dims) for name, dims in case.shapes.items()}
        expected = evaluate_output_shapes(op, named, case.attributes)  # outputs with a rule
        valid.append(
            {
                "attribute_statements": cpp.node_attribute_statements(
                    "node", attrs, _explicit_attributes(op, case.attributes)
                ),
                "label": f"random case {index} {named}".replace('"', "'"),
                "input_shapes": "{"
                + ", ".join(dims_literal(named[t.name]) for t in op.inputs if t.name in named)
                + "}",
                "outputs": [
                    {
                        "name": t.name,
                        "index": i,
                        "expected_literal": (
                            cpp.string_literal(
                                f"{TENSOR_PROTO_NUMBER[tensor_dtype(t)]} ["
                                + ", ".join(str(d) for d in expected[t.name])
                                + "]"
                            )
                            if t.name in expected
                            else None
                        ),
                        "expected_prefix": cpp.string_literal(
                            f"{TENSOR_PROTO_NUMBER[tensor_dtype(t)]} ["
                        ),
                    }
                    for i, t in enumerate(op.outputs)
                ],
            }
        )
    errors = [
        {
            "attribute_statements": cpp.node_attribute_statements("node", attrs, case.attributes),
            "label": f"error case {index} {dict(case.shapes)}".replace('"', "'"),
            "input_shapes": "{"
            + ", ".join(
                dims_literal(list(case.shapes[t.name])) for t in op.inputs if t.name in case.shapes
            )
            + "}",
            "message_literal": cpp.string_literal(case.message),
        }
        for index, case in enumerate(op.error_cases)
        if case.values is None
    ]
    inputs = [
        {
            "name": t.name,
            "index": i,
            "name_literal": cpp.string_literal(t.name),
            "dtype_expr": cpp.onnx_proto_enum(tensor_dtype(t)),
        }
        for i, t in enumerate(op.inputs)
    ]
    outputs = [
        {
            "name": t.name,
            "index": i,
            "name_literal": cpp.string_literal(t.name),
            "dtype_expr": cpp.onnx_proto_enum(tensor_dtype(t)),
        }
        for i, t in enumerate(op.outputs)
    ]
    return {
        "earlier_versions": list(op.earlier_versions),
        "register_function": f"Register_{op.domain_ident}_Schemas",
        "valid_cases": valid,
        "error_cases": errors,
        "schema_inputs": inputs,
        "schema_outputs": outputs,
    }


def emit(op: OpDef, output_dir: Path) -> list[GeneratedFile]:
    """Kernel ops: kernel API, instantiations, ONNX Runtime and pybind11 wrappers, C++ schema
    and its test. Function ops: the C++ schema (with its body) and its test. Nothing else has
    C++ (ops ONNX Runtime provides, export-only definitions)."""
    if not op.has_cpp_schema:
        return []
    base = f"{op.op_id}/{op.op_id}"
    srcs = common.sources(op)
    context = _common_context(op, output_dir)
    schema = {**context, **_schema_context(op)}
    test = {**schema, **_schema_test_context(op)}
    test["inputs"], test["outputs"] = test.pop("schema_inputs"), test.pop("schema_outputs")
    files = []
    if op.kernel is not None:
        files += [
            render("cpp/op.h.j2", f"{base}_op.h", srcs, **context),
            render("cpp/kernel.cc.j2", f"{base}_kernel.cc", srcs, **context),
            render("cpp/ort_op.cc.j2", f"{base}_ort.cc", srcs, **context, **_ort_context(op)),
            render(
                "cpp/pybind_op.cc.j2", f"{base}_pybind.cc", srcs, **context, **_pybind_context(op)
            ),
        ]
    return files + [
        render("cpp/onnx_schema.cc.j2", f"{base}_schema.cc", srcs, **schema),
        render("cpp/schema_test.cc.j2", f"{base}_schema_test.cc", srcs, **test),
    ]
