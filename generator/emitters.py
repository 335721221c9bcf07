"""Every emitter, listed once. An op emitter makes one op's files, a project emitter the files
all ops share; all of one kind have one signature, so that project.generate runs them alike
(and a new runtime target is a module in generator/targets/ plus its lines here: its
emitters, and where it has them, its parts of the shared files and its rows of the op pages;
docs/architecture.md lists what else a target declares)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from generator.dest import cpp_kernel, docs, project, python, tests
from generator.dest.emission import Emission
from generator.generated_file import GeneratedFile
from generator.model.op import OpDef
from generator.targets import (
    cpp_schema,
    cuda,
    exporters,
    onnx_schema,
    ort_library,
    pybind,
    torch_native,
)

OpEmitter = Callable[[OpDef, Emission], list[GeneratedFile]]
ProjectEmitter = Callable[[Sequence[OpDef], Emission], list[GeneratedFile]]

# The targets' rows of an op's reference page (docs/<op_id>.md): label, Markdown text.
OP_PAGE_FACTS: tuple[Callable[[OpDef], list[tuple[str, str]]], ...] = (
    cuda.page_facts,  # its CUDA kernel, where PyTorch and ONNX Runtime run it
)


def op_page(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    return docs.emit_op(op, emission, [fact for facts in OP_PAGE_FACTS for fact in facts(op)])


# The targets' pieces of an op's parity tests: their parts of the test module (which
# dest/tests.py's PART_ORDER places) and the view those parts read.
PARITY_TEST_PIECES: tuple[Callable[[OpDef], tests.ParityTestPieces], ...] = (
    exporters.parity_test_pieces,
    ort_library.parity_test_pieces,
    torch_native.parity_test_pieces,
    cpp_schema.parity_test_pieces,
    cuda.parity_test_pieces,
)


def parity_test_pieces(op: OpDef) -> list[tests.ParityTestPieces]:
    return [pieces(op) for pieces in PARITY_TEST_PIECES]


def parity_tests(op: OpDef, emission: Emission) -> list[GeneratedFile]:
    return tests.emit(op, emission, parity_test_pieces(op))


OP_EMITTERS: tuple[OpEmitter, ...] = (
    python.emit,  # the op's package, the PyTorch op
    onnx_schema.emit,  # the Python ONNX schema
    exporters.emit,  # the exporters' translation and symbolic
    cpp_kernel.emit,  # the kernel API and its instantiations
    ort_library.emit,  # the ONNX Runtime custom op
    pybind.emit,  # the pybind11 binding
    torch_native.emit,  # the native PyTorch registration
    cuda.emit,  # the CUDA kernel and its ONNX Runtime and PyTorch registrations
    cpp_schema.emit,  # the ONNX C++ schema and its test
    parity_tests,  # the parity tests
    op_page,  # the op's page
)
# The targets' parts of the files all targets share (CMakeLists.txt, build_info.json, the
# package's __init__.py), which project.emit pastes in.
PROJECT_PARTS: tuple[Callable[[Sequence[OpDef], Emission], project.ProjectParts], ...] = (
    cuda.project_parts,  # its CMake set-up and libraries, its build_info keys, its domains
)


def _shared_files(ops: Sequence[OpDef], emission: Emission) -> list[GeneratedFile]:
    return project.emit(ops, emission, [parts(ops, emission) for parts in PROJECT_PARTS])


PROJECT_EMITTERS: tuple[ProjectEmitter, ...] = (
    _shared_files,  # the package, CMake, each domain's libraries, the runtime files
    cuda.emit_project,  # the CUDA runtime files, each domain's ONNX Runtime CUDA library
    docs.emit_index,  # the docs' index
)
