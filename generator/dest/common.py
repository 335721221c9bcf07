"""Facts about an op that several emitters phrase the same way."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from generator.api import cpp
from generator.model.op import OpDef
from generator.model.tensors import TensorParam
from generator.runtime._names import below_autograd_op as below_autograd_op

# Artifact names have one owner, shared with the generated package (it gets a copy of _names).
from generator.runtime._names import kernel_objects_name as kernel_objects_name
from generator.runtime._names import library_file as library_file
from generator.runtime._names import library_name as library_name
from generator.runtime._names import module_name as module_name
from generator.runtime._names import schema_tests_name as schema_tests_name
from generator.runtime._names import schemas_library_name as schemas_library_name
from generator.runtime._names import torch_library_file as torch_library_file
from generator.runtime._names import torch_library_name as torch_library_name


def sources(op: OpDef) -> list[str]:
    """What a generated file of this op is made from (shown in its header)."""
    names = [op.definition_path]
    if op.kernel is not None and op.kernel.source_file is not None:
        names.append(str(Path(op.definition_path).parent / op.kernel.source_file.name))
    return names


@dataclass(frozen=True)
class ShapedInput:
    name: str
    index: int
    optional: bool
    variadic: bool  # its values are inputs index, index + 1, ... to the node's last


def shaped_inputs(op: OpDef) -> tuple[ShapedInput, ...]:
    """Inputs whose shape the shape rule reads (schema inference needs all of them known)."""
    used = op.shape_rule.shaped_inputs
    return tuple(
        ShapedInput(t.name, i, t.optional, t.variadic)
        for i, t in enumerate(op.inputs)
        if t.name in used
    )


def tensor_cpp_type(tensor: TensorParam) -> str:
    if tensor.type_var is not None:
        return tensor.type_var
    assert tensor.dtype is not None  # TensorParam's invariant
    return cpp.KERNEL_TYPE[tensor.dtype]


def template_decl(op: OpDef) -> str:
    if not op.type_constraints:
        return ""
    return "template <" + ", ".join(f"typename {tc.name}" for tc in op.type_constraints) + ">"


def template_args(op: OpDef, binding: dict[str, str] | None = None) -> str:
    if not op.type_constraints:
        return ""
    names = [binding[tc.name] if binding else tc.name for tc in op.type_constraints]
    return "<" + ", ".join(names) + ">"


def compute_params(
    op: OpDef, binding: dict[str, str] | None = None, context: str = "const opgen::Context& ctx"
) -> str:
    """The kernel's parameters: `context` (the CPU's, or a device's), the views, the attributes."""

    def spell(tensor: TensorParam) -> str:
        base = tensor_cpp_type(tensor)
        return binding.get(base, base) if binding else base

    params = [context]
    params += [
        (
            f"const opgen::Inputs<{spell(t)}>& {t.name}"
            if t.variadic
            else f"const opgen::Input<{spell(t)}>{'*' if t.optional else '&'} {t.name}"
        )
        for t in op.inputs
    ]
    allocated = op.shape_rule.kernel_allocated
    params += [
        (
            f"opgen::AllocatedOutput<{spell(t)}>& {t.name}"
            if t.name in allocated
            else (
                f"const opgen::Outputs<{spell(t)}>& {t.name}"
                if t.variadic
                else f"const opgen::Output<{spell(t)}>{'*' if t.optional else '&'} {t.name}"
            )
        )
        for t in op.outputs
    ]
    params.append("const Attributes& attrs")
    if binding is not None:  # explicit instantiation: types only
        params = [p.rsplit(" ", 1)[0] for p in params]
    return ", ".join(params)


def relative_include(from_dir: Path, target: Path) -> str:
    return Path(os.path.relpath(target, from_dir)).as_posix()


def supported_dtypes(op: OpDef) -> str:
    """`X: float32|float64; Y: int64`, the end of every kernel's unsupported-dtypes message."""
    return "; ".join(f"{t.name}: " + "|".join(d.value for d in op.dtypes_of(t)) for t in op.inputs)


@dataclass(frozen=True)
class StubNames:
    """What every kernel stub of a scaffolded op does with its parameters (the C++ one and each
    device's): every output a copy of the first input, the rest unused."""

    first_input: str  # the input copied: its first value, where it is variadic
    outputs: tuple[TensorParam, ...]  # the outputs that copy it (the non-variadic ones)
    value_copies: tuple[tuple[str, str], ...]  # a variadic output, the variadic input it copies
    unused: tuple[str, ...]  # the parameters left alone, "attrs" last
    taken: frozenset[str]  # the op's own names, which a stub's locals must avoid

    def local(self, name: str) -> str:
        """`name`, or name_ (name__, ...) where the op has a parameter of that name."""
        return self.local(name + "_") if name in self.taken else name


def stub_names(op: OpDef) -> StubNames:
    used = {op.inputs[0].name} | {t.name for t in op.outputs} | {"ctx"}
    used |= {t.same_shape_as or "" for t in op.outputs if t.variadic}
    return StubNames(
        first_input=op.inputs[0].name + ("[0]" if op.inputs[0].variadic else ""),
        outputs=tuple(t for t in op.outputs if not t.variadic),
        value_copies=tuple((t.name, t.same_shape_as or "") for t in op.outputs if t.variadic),
        unused=(*(t.name for t in op.inputs if t.name not in used), "attrs"),
        taken=frozenset(
            {t.name for t in (*op.inputs, *op.outputs)}
            | {a.name for a in op.attributes}
            | {c.name for c in op.type_constraints}
        ),
    )
