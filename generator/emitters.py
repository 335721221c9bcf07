"""Every emitter, listed once. An op emitter makes one op's files, a project emitter the files
all ops share; all of one kind have one signature, so that project.generate runs them alike
(and a new target is a module in dest/ plus a line here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from generator.dest import cpp_kernel, cpp_schema, docs, project, python, tests
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.op import OpDef

OpEmitter = Callable[[OpDef, Emission], list[GeneratedFile]]
ProjectEmitter = Callable[[Sequence[OpDef], Emission], list[GeneratedFile]]

OP_EMITTERS: tuple[OpEmitter, ...] = (
    python.emit,  # the PyTorch op, the ONNX schema and export
    cpp_kernel.emit,  # the kernel API, its instantiations, ONNX Runtime and pybind11 wrappers
    cpp_schema.emit,  # the ONNX C++ schema and its test
    tests.emit,  # the parity tests
    docs.emit_op,  # the op's page
)
PROJECT_EMITTERS: tuple[ProjectEmitter, ...] = (
    project.emit,  # the package, CMake, each domain's libraries, the runtime files
    docs.emit_index,  # the docs' index
)
