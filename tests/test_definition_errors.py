"""A malformed op definition: one clear error per problem naming file, line, column and field;
exit code 2; nothing written."""

import ast
import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "opdefs" / "inverse.yaml").read_text()


def project_with(tmp_path: Path, text: str, name: str = "inverse.yaml") -> Path:
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / name).write_text(text)
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.h", tmp_path / "opdefs")
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.cuh", tmp_path / "opdefs")
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.cuh", tmp_path / "opdefs")
    return tmp_path


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


CASES = [
    # (description, replace this, with this, field path in the message, message fragment)
    (
        "unknown dtype",
        "types: [float32, float64, float16]",
        "types: [float32, float65]",
        "type_constraints.T.types[1]",
        "unknown dtype 'float65'",
    ),
    (
        "misspelt field",
        "    shape: [..., N, N]\n    doc: Batch",
        "    shap: [..., N, N]\n    doc: Batch",
        "inputs[0].shap",
        "unknown field 'shap' (did you mean 'shape'?)",
    ),
    (
        "bad torch name",
        "name: opgen::inverse",
        "name: opgen.inverse",
        "torch.name",
        "not a PyTorch qualified name",
    ),
    (
        "unbound output symbol",
        "    shape: [..., N, N]\n    doc: The inverse",
        "    shape: [..., M, N]\n    doc: The inverse",
        "outputs[0]",
        "dimension symbol 'M' is not bound",
    ),
    (
        "dim expression syntax",
        "    shape: [..., N, N]\n    doc: The inverse",
        '    shape: [..., N, "N ** 2"]\n    doc: The inverse',
        "outputs[0].shape[2]",
        "a dim expression uses dim symbols bound by the inputs, int attributes and integers",
    ),
    (
        "dim expression names nothing known",
        "    shape: [..., N, N]\n    doc: The inverse",
        '    shape: [..., N, "N + pad"]\n    doc: The inverse',
        "outputs[0]",
        "'pad' in 'N + pad' is neither a dim symbol bound by an input shape pattern ['N']",
    ),
    (
        "unknown shape function",
        "    shape: [..., N, N]\n    doc: The inverse",
        '    shape: "gather(X)"\n    doc: The inverse',
        "outputs[0].shape",
        "'gather(X)' is not a shape; expected a list of dims, or one of: broadcast(A, B, ...)",
    ),
    (
        "default outside the allowed values",
        "reference: torch",
        "attributes:\n  - {name: mode, type: string, default: x, allowed: [a, b]}\nreference: torch",
        "attributes[0].default",
        "the default 'x' is not one of ['a', 'b']",
    ),
    (
        "allowed values of a float attribute",
        "reference: torch",
        "attributes:\n  - {name: eps, type: float, default: 1.0, allowed: [1.0]}\nreference: torch",
        "attributes[0].allowed",
        "'allowed' applies to int and string attributes, not to float",
    ),
    (
        "range on a string attribute",
        "reference: torch",
        "attributes:\n  - {name: mode, type: string, default: x, min: 1}\nreference: torch",
        "attributes[0].min",
        "'min' applies to int and float attributes, not to string",
    ),
    (
        "range upside down",
        "reference: torch",
        "attributes:\n  - {name: k, type: int, default: 2, min: 3, max: 1}\nreference: torch",
        "attributes[0].max",
        "max 1 is below min 3",
    ),
    (
        "default outside the range",
        "reference: torch",
        "attributes:\n  - {name: eps, type: float, default: 0.0, min: 1.0e-6}\nreference: torch",
        "attributes[0].default",
        "the default 0 is outside min/max [1e-06, ]",
    ),
    (
        "allowed value outside the range",
        "reference: torch",
        "attributes:\n  - {name: k, type: int, default: 2, allowed: [2, 9], max: 8}\nreference: torch",
        "attributes[0].allowed[1]",
        "allowed value 9 is outside min/max [, 8]",
    ),
    (
        # (float64 is not needed: the formulas' gradcheck runs over the float64 reference)
        "gradient without a floating dtype",
        "types: [float32, float64, float16]",
        "types: [int32, int64]",
        "gradients.X",
        "a floating dtype must be among its dtypes (a gradient flows through floating tensors "
        "only)",
    ),
    (
        "tolerance for a dtype no tensor has",
        "    float64: {rtol: 1.0e-10, atol: 1.0e-12}\n",
        "    float64: {rtol: 1.0e-10, atol: 1.0e-12}\n    bfloat16: {rtol: 0.1, atol: 0.1}\n",
        "tests.tolerances.bfloat16",
        "no input or output of the op can be bfloat16, so this tolerance would apply to nothing",
    ),
    (
        "known case at a dtype the type variable does not take",
        "      outputs: {Y: [[0.6, -0.7], [-0.2, 0.4]]}\n",
        "      outputs: {Y: [[0.6, -0.7], [-0.2, 0.4]]}\n      dtypes: [float32, bfloat16]\n",
        "tests.known[0].dtypes",
        "['bfloat16'] are not dtypes of T",
    ),
    (
        "dtypes naming a type variable the op lacks",
        "      outputs: {Y: [[0.6, -0.7], [-0.2, 0.4]]}\n",
        "      outputs: {Y: [[0.6, -0.7], [-0.2, 0.4]]}\n      dtypes: {U: [float32]}\n",
        "tests.known[0].dtypes.U",
        "unknown field 'U'",
    ),
    (
        "error case at a dtype the type variable does not take",
        '      message: "dimension N must agree"\n',
        '      message: "dimension N must agree"\n      dtypes: {T: [int8]}\n',
        "tests.errors[0].dtypes.T",
        "['int8'] are not dtypes of T",
    ),
    (
        "error case at no dtype",
        '      message: "must have at least rank 2"\n',
        '      message: "must have at least rank 2"\n      dtypes: {T: []}\n',
        "tests.errors[1].dtypes.T",
        "give at least one dtype of T, or leave T out",
    ),
    (
        "built-in comparison at a dtype the type variable does not take",
        "    - {domain: com.microsoft, op: Inverse, version: 1}",
        "    - {domain: com.microsoft, op: Inverse, version: 1, dtypes: {T: [bool]}}",
        "tests.builtin_equivalents[0].dtypes.T",
        "['bool'] are not dtypes of T",
    ),
    (
        "unknown torch api",
        "name: opgen::inverse",
        "name: opgen::inverse\n  api: custom",
        "torch.api",
        "expected one of ['native', 'library', 'custom_op', 'legacy'], found 'custom'",
    ),
    (
        "gradients with the legacy torch api",
        "name: opgen::inverse",
        "name: opgen::inverse\n  api: legacy",
        "gradients",
        "gradients need a new PyTorch op (torch.name) registered with the 'library' or "
        "'custom_op' api",
    ),
    (
        "gradient formula uses an unknown name",
        '  X: "-(Y.mT @ grad_Y @ Y.mT)"',
        '  X: "-(Y.mT @ grad_Z @ Y.mT)"',
        "gradients.X",
        "undefined name(s) ['grad_Z']",
    ),
    (
        "data-dependent size used by no output",
        "reference: torch",
        "data_dependent_sizes: [M]\nreference: torch",
        "data_dependent_sizes",
        "['M'] appear in no output shape",
    ),
    (
        "data-dependent size bound by an input",
        "reference: torch",
        "data_dependent_sizes: [N]\nreference: torch",
        "outputs[0]",
        "'N' is bound by an input shape pattern, so it cannot be a data-dependent size",
    ),
    (
        "versions not increasing",
        "version: 1\n",
        "version: [2, 1]\n",
        "version",
        "expected increasing versions such as [1, 2], found [2, 1]",
    ),
    (
        "attribute added in an unknown version",
        "reference: torch",
        "attributes:\n  - {name: k, type: int, default: 1, since_version: 3}\nreference: torch",
        "attributes[0]",
        "since_version 3 is not one of the op's later versions []",
    ),
    (
        "gradient formula yields (the backward would be a generator)",
        '  X: "-(Y.mT @ grad_Y @ Y.mT)"',
        '  X: "(yield grad_Y)"',
        "gradients.X",
        "not a valid Python expression: 'yield' outside function",
    ),
    (
        "gradient formula names the backward's own ctx",
        '  X: "-(Y.mT @ grad_Y @ Y.mT)"',
        '  X: "ctx.saved_tensors[0]"',
        "gradients.X",
        "undefined name(s) ['ctx']",
    ),
    (
        "sampler names the test module's own import",
        '        X: "torch.randn(shape, generator=gen, dtype=torch.float64) + 4 *',
        '        X: "re.escape(shape) + torch.randn(shape, generator=gen, dtype=torch.float64) + 4 *',
        "tests.random[0].sample.X",
        "undefined name(s) ['re']",
    ),
    (
        "reference reads a lambda default's unknown name",
        "reference: torch.linalg.inv(X)",
        'reference: "(lambda a=Z: torch.linalg.inv(a))(X)"',
        "reference",
        "undefined name(s) ['Z']",
    ),
    (
        "reference reads a comprehension's variable outside it",
        "reference: torch.linalg.inv(X)",
        "reference: ([v for v in X], torch.linalg.inv(v))[1]",
        "reference",
        "undefined name(s) ['v']",
    ),
    (
        "input named like a module expressions name",
        "  - name: X\n",
        "  - name: np\n",
        "inputs[0].name",
        "reserved",
    ),
    (
        "reference uses unknown name",
        "reference: torch.linalg.inv(X)",
        "reference: torch.linalg.inv(Z)",
        "reference",
        "undefined name(s) ['Z']",
    ),
    ("reserved input name", "  - name: X\n", "  - name: class\n", "inputs[0].name", "reserved"),
    (
        "input named like the op module's support module",
        "  - name: X\n",
        "  - name: _support\n",
        "inputs[0].name",
        "reserved",
    ),
    (
        "input named like a macro of a header the generated code includes",
        "  - name: X\n",
        "  - name: EOF\n",
        "inputs[0].name",
        "'EOF' is a macro of the headers the generated C++ includes",
    ),
    (
        "input named like a lower-case C macro",
        "  - name: X\n",
        "  - name: errno\n",
        "inputs[0].name",
        "'errno' is a macro of the headers",
    ),
    (
        "input named as C++ reserves to its implementation",
        "  - name: X\n",
        "  - name: _Input\n",
        "inputs[0].name",
        "'_Input' is reserved to the C++ implementation",
    ),
    (
        "missing kernel file",
        "source: inverse_kernel.h",
        "source: missing.h",
        "kernel.source",
        "not found beside the definition",
    ),
    (
        "tolerance missing for a dtype",
        "    float16: {rtol: 2.0e-2, atol: 2.0e-2}\n",
        "",
        "tests.tolerances",
        "missing ['float16']",
    ),
    (
        "a name that is another name's generated local",
        "  - name: Y",
        "  - name: X_shape",
        "outputs[0].name",
        "'X_shape' is the name of a local the generated code declares for 'X' (its shape)",
    ),
]


@pytest.mark.parametrize("description,old,new,field,fragment", CASES, ids=[c[0] for c in CASES])
def test_error_names_file_line_field(
    tmp_path, run_generator, description, old, new, field, fragment
):
    assert old in GOOD, description
    text = GOOD.replace(old, new, 1)
    project = project_with(tmp_path, text)
    result = run_generator(cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    match = re.search(
        rf"error: opdefs/inverse\.yaml:(\d+):(\d+): {re.escape(field)}: (.*)", result.stderr
    )
    assert match, result.stderr
    assert fragment in match.group(3), result.stderr
    assert int(match.group(1)) >= 1 and int(match.group(2)) >= 1
    assert "Traceback" not in result.stderr
    assert not (project / "generated").exists(), "nothing may be written on a bad definition"


def test_error_points_at_the_offending_line(tmp_path, run_generator):
    text = GOOD.replace("types: [float32, float64, float16]", "types: [float32, float65]")
    result = run_generator(cwd=project_with(tmp_path, text))
    expected_line = line_of(text, "float65")
    assert f"opdefs/inverse.yaml:{expected_line}:" in result.stderr, result.stderr


def test_all_errors_of_a_file_are_reported_in_one_run(tmp_path, run_generator):
    text = GOOD.replace("float16]", "float65]").replace("name: opgen::inverse", "name: nope")
    result = run_generator(cwd=project_with(tmp_path, text))
    assert result.returncode == 2
    assert "unknown dtype 'float65'" in result.stderr
    assert "not a PyTorch qualified name" in result.stderr
    assert "2 errors in op definitions; nothing written" in result.stderr


def test_yaml_syntax_error(tmp_path, run_generator):
    text = GOOD.replace("op: Inverse", "op: [Inverse")
    result = run_generator(cwd=project_with(tmp_path, text))
    assert result.returncode == 2
    assert re.search(r"opdefs/inverse\.yaml:\d+:\d+: <syntax>: not valid YAML", result.stderr)


def test_duplicate_key(tmp_path, run_generator):
    text = GOOD.replace("version: 1\n", "version: 1\nversion: 2\n", 1)
    result = run_generator(cwd=project_with(tmp_path, text))
    assert result.returncode == 2
    assert (
        f"opdefs/inverse.yaml:{line_of(text, 'version: 2')}:1: version: appears twice"
        in result.stderr
    )


def test_bad_usage_exits_2(run_generator):
    assert run_generator("--no-such-flag").returncode == 2


def _digest(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("output_dir", ["opdefs", ".", "opdefs/out"])
def test_output_never_mixes_with_definitions_and_kernels(tmp_path, run_generator, output_dir):
    project = project_with(tmp_path, GOOD)
    (project / "opdefs" / "notes.txt").write_text("hand-written")
    before = _digest(project)
    result = run_generator("--output-dir", output_dir, cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "overlap" in result.stderr and "Traceback" not in result.stderr
    assert _digest(project) == before


def test_generating_leaves_definitions_and_kernels_untouched(tmp_path, run_generator):
    project = project_with(tmp_path, GOOD)
    before = _digest(project / "opdefs")
    for args in [(), ("--check",), ()]:  # the second full run also looks for orphans
        assert run_generator(*args, cwd=project).returncode == 0
    assert _digest(project / "opdefs") == before


# Errors in the scenario definitions' newer fields (overrides, functions, export nodes). Each
# case edits one shipped definition inside a copy of the whole opdefs/ folder, since nodes may
# call ops of other definitions.
SCENARIO_CASES = [
    # (file, replace this, with this, field path, message fragment)
    (
        "aten_add.yaml",
        '"scaled = Mul(Y, alpha_cast)"',
        '"scaled = Mul(Y, alpha_kast)"',
        "function.nodes[2]",
        "node input 'alpha_kast' is neither an input of the op nor an output of an earlier node",
    ),
    (
        "aten_add.yaml",
        "Constant<value_float=@alpha>",
        "Constant<value_float=@alfa>",
        "function.nodes[0]",
        "'@alfa' names no attribute of this definition",
    ),
    (
        "aten_add.yaml",
        '    - "Z = Add(X, scaled)"\n',
        "",
        "function.nodes",
        "the nodes never assign the op's output(s) ['Z']",
    ),
    (
        "aten_add.yaml",
        '"Z = Add(X, scaled)"',
        '"Z = custom.aten::AtenAdd(X, scaled)"',
        "function.nodes[3]",
        "a function body uses standard ONNX ops only",
    ),
    (
        "aten_add.yaml",
        '"scaled = Mul(Y, alpha_cast)"',
        '"scaled = Mul Y"',
        "function.nodes[2]",
        "is not a node; expected",
    ),
    (
        "aten_add.yaml",
        "overrides: aten::add.Tensor",
        "overrides: add",
        "torch.overrides",
        "is not a PyTorch overload",
    ),
    (
        "gelu.yaml",
        '"Y = com.microsoft::FastGelu(X)"',
        '"Y = com.microsoft::FasterGelu(X)"',
        "export",
        "'com.microsoft::FasterGelu' is not defined by any op definition of this project",
    ),
    (
        "gelu.yaml",
        "when: {approximate: tanh}",
        "when: {approx: tanh}",
        "export[1].when.approx",
        "unknown field 'approx'",
    ),
    (
        "gelu.yaml",
        "torch:\n  overrides: aten::gelu.default",
        "op: Gelu\ntorch:\n  overrides: aten::gelu.default",
        "op",
        "an export-only definition",
    ),
    (
        "addandround.yaml",
        "Cast<to=float32>",
        "Cast<to=float33>",
        "export[0].nodes[2]",
        "a bare word must be a dtype name",
    ),
    (
        "addandround.yaml",
        "name: mylibrary::addandround_op",
        "name: mylibrary::addandround_op\n  api: native",
        "torch.api",
        "'native' registers the C++ kernel with PyTorch, and this definition has no 'kernel'",
    ),
    (
        "addandround.yaml",
        '"Y = Cast<to=float32>(rounded)"',
        '"Y = Round(rounded)"',
        "export",
        "'Round' cannot run in PyTorch",
    ),
]


@pytest.mark.parametrize(
    "file,old,new,field,fragment",
    SCENARIO_CASES,
    ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(SCENARIO_CASES)],
)
def test_scenario_errors_name_file_line_field(
    tmp_path, run_generator, file, old, new, field, fragment
):
    shutil.copytree(ROOT / "opdefs", tmp_path / "opdefs")
    path = tmp_path / "opdefs" / file
    assert old in path.read_text(), file
    path.write_text(path.read_text().replace(old, new, 1))
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    match = re.search(
        rf"error: opdefs/{re.escape(file)}:(\d+):(\d+): {re.escape(field)}: (.*)", result.stderr
    )
    assert match, result.stderr
    assert fragment in match.group(3), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "generated").exists(), "nothing may be written on a bad definition"


# Collisions between definitions, and with the generated code's own names. Each case adds a
# second definition (a renamed copy of inverse.yaml) next to the shipped one.
COLLISIONS = [
    # (file name of the copy, replace this, with this, reported field, message fragment)
    (
        "Inverse.yaml",
        "name: opgen::inverse",
        "name: opgen::inverse2",
        "<file name>",
        "ignoring case",
    ),
    ("inverse2.yaml", "op: Inverse", "op: Inverse", "op", "ONNX op (domain, type)"),
    # Another version in another file: every version belongs in one definition.
    ("inverse2.yaml", "version: 1", "version: 2", "op", "ONNX op (domain, type)"),
    ("inverse2.yaml", "op: Inverse", "op: Inverse2", "torch.name", "PyTorch overload"),
    ("inverse2.yaml", "domain: ai.opgen", "domain: ai_opgen", "domain", "both become 'ai_opgen'"),
    # Another domain's CMake targets: ai.opgen's schema tests and kernel objects.
    *(
        ("inverse2.yaml", "domain: ai.opgen", f"domain: {domain}", "domain", f"target '{target}'")
        for domain, target in [
            ("ai.opgen.schema_tests", "opgen_ai_opgen_schema_tests"),
            ("ai.opgen.kernel_objects", "opgen_ai_opgen_kernel_objects"),
        ]
    ),
]


@pytest.mark.parametrize("name,old,new,field,fragment", COLLISIONS, ids=[c[4] for c in COLLISIONS])
def test_collisions_between_definitions(tmp_path, run_generator, name, old, new, field, fragment):
    project = project_with(tmp_path, GOOD)
    copy = GOOD.replace(old, new, 1)
    if field != "torch.name":
        copy = copy.replace("name: opgen::inverse\n", "name: opgen::inverse2\n")
    if field not in ("op", "domain"):
        copy = copy.replace("op: Inverse\n", "op: Inverse2\n")
    shutil.copy(
        ROOT / "opdefs" / "inverse_kernel.h",
        project / "opdefs" / name.replace(".yaml", "_kernel.h"),
    )
    copy = copy.replace("source: inverse_kernel.h", f"source: {name.replace('.yaml', '_kernel.h')}")
    (project / "opdefs" / name).write_text(copy)
    result = run_generator(cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    # Reported on whichever file comes second in path order, naming the other.
    second, first = sorted([name, "inverse.yaml"], reverse=True)
    text = copy if second == name else GOOD
    expected_line = 1 if field == "<file name>" else line_of(text, field.split(".")[-1] + ":")
    match = re.search(
        rf"error: opdefs/{re.escape(second)}:{expected_line}:\d+: {re.escape(field)}: (.*)",
        result.stderr,
    )
    assert match and fragment in match.group(1), result.stderr
    assert f"opdefs/{first}" in match.group(1) or f"({first})" in match.group(1), result.stderr
    assert not (project / "generated").exists()


@pytest.mark.parametrize(
    "ident", ["a", "kernels", "torch", "schemas", "kernel_objects", "cuda", "torch_cuda"]
)
def test_a_domains_build_targets_are_distinct(ident):
    """One domain's CMake targets never meet (domain `kernels` once named its pybind11 module
    and its kernel objects both opgen_kernels_kernels); the template's own have a '-'."""
    from generator.runtime._names import target_names

    names = target_names(ident)
    assert len(set(names)) == len(names) == 9, names
    assert all(name == f"opgen_{ident}" or name.startswith(f"opgen_{ident}_") for name in names)
    template = (ROOT / "generator" / "templates" / "cmake" / "CMakeLists.txt.j2").read_text()
    fixed = set(re.findall(r"add_(?:library|executable)\(([\w-]+)", template))
    assert fixed == {"opgen-torch-stable-abi"}, fixed


@pytest.mark.parametrize(
    "stem",
    [
        "docs",
        "index",
        "include",
        "floor_div",
        "SymDim",
        "class",
        "errno",
        "stdin",
        "assert",
        "x__y",
    ],
)
def test_op_ids_taken_by_generated_code(tmp_path, run_generator, stem):
    result = run_generator(cwd=project_with(tmp_path, GOOD, name=f"{stem}.yaml"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        rf"opdefs/{stem}\.yaml:\d+:\d+: <file name>: .*'{stem}' is (taken|reserved|a macro)",
        result.stderr,
    ), result.stderr


def test_every_macro_of_the_generated_codes_headers_is_refused():
    """A user name that a header of the generated C++ defines as a macro (errno, EOF, stdin,
    assert, ...) would be replaced there and fail to compile, so validation refuses every one:
    the list must hold each macro this machine's headers define, taken with `-dM` from every
    kind of generated translation unit (tests/header_macros.py)."""
    import header_macros

    from generator.model.header_macros import HEADER_MACROS
    from generator.model.names import is_reserved

    missing_tools = header_macros.missing_tools()
    if missing_tools:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no {', '.join(missing_tools)} under CI")
        pytest.skip(f"no {', '.join(missing_tools)} on this machine")
    found = header_macros.header_macros()
    assert {"errno", "EOF", "NULL", "stdin", "assert", "offsetof", "M_PI"} <= found
    unlisted = sorted(found - HEADER_MACROS)
    assert not unlisted, (
        f"{len(unlisted)} macros are not in generator/model/header_macros.py (run `python "
        f"tests/header_macros.py --write`): {unlisted[:40]}"
    )
    assert all(is_reserved(name) for name in found)


def _namespace_opgen_names(header: str) -> set[str]:
    """Names a support header declares directly in namespace opgen (column-0 declarations)."""
    names = set(re.findall(r"^namespace opgen::(\w+) \{", header, re.M))
    for block in re.findall(
        r"^namespace opgen \{\n(.*?)^\}  // namespace opgen$", header, re.M | re.S
    ):
        names |= set(re.findall(r"^(?:struct|class|using|enum class)\s+(\w+)", block, re.M))
        names |= set(
            re.findall(
                r"^(?:\[\[noreturn\]\] )?(?:inline |constexpr |static )*[A-Za-z_][\w:<>,*& ]*?\b(\w+)\(",
                block,
                re.M,
            )
        )
        names |= set(
            re.findall(r"^(?:inline |static )*(?:constexpr|const) [\w:<>]+ (\w+) =", block, re.M)
        )
    return names


def test_reserved_op_ids_cover_the_generated_code():
    """An op id becomes generated/<op_id>/, generated/docs/<op_id>.md and namespace
    opgen::<op_id>: the model's reserved lists must name every shared entry beside them."""
    from generator.model.names import OPGEN_NAMESPACE_NAMES, PACKAGE_NAMES, SHARED_OUTPUT_NAMES

    generated = ROOT / "generated"
    op_ids = {p.stem for p in (ROOT / "opdefs").glob("*.yaml")}
    shared = {p.name.split(".")[0] for p in generated.iterdir()} - op_ids
    shared |= {p.stem for p in (generated / "docs").iterdir()} - op_ids
    shared.discard("__pycache__")
    assert shared <= SHARED_OUTPUT_NAMES, shared - SHARED_OUTPUT_NAMES
    # Every name the package's __init__ binds, but its op modules (and the dunders).
    package_names = set()
    for statement in ast.parse((generated / "__init__.py").read_text()).body:
        if isinstance(statement, ast.FunctionDef):
            package_names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            package_names |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            package_names |= {(a.asname or a.name).split(".")[0] for a in statement.names}
    package_names -= op_ids | SHARED_OUTPUT_NAMES | {"__version__"}
    assert package_names <= PACKAGE_NAMES, package_names - PACKAGE_NAMES
    declared = set()
    for header in (generated / "include" / "opgen").glob("*.h"):
        declared |= _namespace_opgen_names(header.read_text())
    assert {"SymDim", "Shape", "floor_div", "ort"} <= declared, declared  # the parse works
    assert declared == OPGEN_NAMESPACE_NAMES, declared ^ OPGEN_NAMESPACE_NAMES


def test_reserved_names_cover_each_ops_cpp_namespace():
    """User names become parameters, locals and template parameters inside namespace
    opgen::<op_id>, where the generated C++ declares its own names: those are reserved."""
    from generator.model.names import OP_NAMESPACE_NAMES

    declared = set()
    for path in (ROOT / "generated").glob("*/*"):
        if path.suffix not in (".cc", ".h", ".cu") or path.parent.name in ("include", "domains"):
            continue
        text = path.read_text()
        declared |= set(re.findall(r"^\s*(?:struct|class|using)\s+(?:\w+::)*(\w+)", text, re.M))
        declared |= set(
            re.findall(
                r"^(?:static |inline )?(?!template|return)[\w:<>*&]+[ *&]+(\w+)\(", text, re.M
            )
        )
        declared |= set(
            re.findall(
                r"^(?:static |inline |constexpr |const )+[\w:<>]+ (\w+)(?: =|\[|;)", text, re.M
            )
        )
    assert {"Attributes", "OrtKernel", "compute", "infer_shapes"} <= declared  # the parse works
    assert declared == OP_NAMESPACE_NAMES, declared ^ OP_NAMESPACE_NAMES


def test_every_local_named_after_a_user_name_has_one_naming_rule():
    """The generated code names locals after the user's names (`X_shape`, `attr_k`); the parser
    refuses a user name that is another's local, so every such local must come from a rule of
    api/names.Local. Any identifier in the generated C++ and Python that extends a tensor or
    attribute name of its op must be one of that name's locals (or the name itself)."""
    from generator.api.names import Local
    from generator.model.tensors import value_name
    from generator.parse.op import parse_opdef

    found = 0
    for definition in sorted((ROOT / "opdefs").glob("*.yaml")):
        op = parse_opdef(definition, f"opdefs/{definition.name}")
        names = [t.name for t in op.inputs + op.outputs] + [a.name for a in op.attributes]
        user_text = " ".join(
            [op.reference, op.doc, *(t.doc for t in op.inputs + op.outputs)]
            + [a.doc for a in op.attributes]
        )
        user_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", user_text)) | set(names)
        # The values a definition's own nodes name (`alpha_cast = CastLike(...)`) are its own.
        chosen = {value for node in op.nodes_used for value in node.outputs + node.inputs}
        for path in sorted((ROOT / "generated" / op.op_id).iterdir()):
            if path.suffix not in (".cc", ".h", ".py"):
                continue
            identifiers = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text()))
            for name in names:
                pattern = re.compile(
                    rf"(?:[A-Za-z0-9]+_)+{re.escape(name)}|{re.escape(name)}(?:_[A-Za-z0-9]+)+"
                )
                derived = {i for i in identifiers if pattern.fullmatch(i)}
                found += len(derived)
                # TorchScript's g.op takes attributes as typed keywords (alpha_f=...), no locals.
                keywords = {f"{name}_{kind}" for kind in "ifs"}
                # A variadic input's (or output's) values, named in the tests (parse keeps those
                # names free).
                variadic = name in op.variadic_inputs or any(
                    t.variadic and t.name == name for t in op.outputs
                )
                values = {value_name(name, i) for i in range(64)} if variadic else set()
                # The op's own file stem (clip_by_global_norm holds the output name norm).
                own = {i for i in derived if op.op_id in i}
                unknown = derived - Local.derived_from(name) - chosen - keywords - values - own
                # Another of its names, or that name's local (max_norm, attr_max_norm hold norm),
                # or a word of the user's own text (the reference's vector_norm), also after an
                # escape (\u0027max_norm in a literal).
                unknown -= {n for other in names for n in {other, *Local.derived_from(other)}}
                unknown -= {i for i in unknown if re.sub(r"^u00[0-9a-f]{2}", "", i) in user_words}
                assert not unknown, f"{path.name}: {sorted(unknown)} named after {name!r}"
    assert found > 50  # the scan sees the locals


def test_legacy_api_refuses_defaults(tmp_path, run_generator):
    """torch._custom_op takes no default arguments: an op registered with it that has an
    attribute default or an optional input (None by default) is refused at the field, not at
    import (as it was)."""
    text = GOOD.replace("name: opgen::inverse", "name: opgen::inverse\n  api: legacy").replace(
        "reference: torch",
        "attributes:\n  - {name: k, type: int, default: 2}\nreference: torch",
    )
    text = re.sub(r"\ngradients:\n(  .*\n)+", "\n", text)
    # An optional input, last (after X), as optional inputs must be.
    text = text.replace("outputs:\n", "  - {name: W, type: T, optional: true}\n\noutputs:\n", 1)
    project = project_with(tmp_path, text)
    result = run_generator(cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        r"inverse\.yaml:\d+:\d+: attributes\[0\]\.default: attribute 'k' has a default, but the "
        r"PyTorch api 'legacy' \(torch\._custom_op\) takes no default arguments",
        result.stderr,
    ), result.stderr
    assert "inputs[1].optional: optional input 'W' defaults to None" in result.stderr, result.stderr


# (definition, replace this, with this, the error it must give): kinds refused where they meet
# what does not carry them yet.
NOT_YET = [
    (
        "opdefs/codebook_dequantize.yaml",  # a tensor attribute's values need its element type
        "    dtype: float32\n",
        "",
        r"tests\.known\[0\]\.attributes\.codebook: attribute 'codebook' declares no element "
        r"type: give it 'dtype'",
    ),
    (
        "opdefs/codebook_dequantize.yaml",  # an element type a tensor attribute cannot have yet
        "    dtype: float32\n",
        "    dtype: bool\n",
        r"attributes\[0\]\.dtype: a tensor attribute of bool is not carried yet",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # an element type on another attribute type
        "    type: float\n    default: 1.0\n",
        "    type: float\n    dtype: float32\n    default: 1.0\n",
        r"attributes\[0\]\.dtype: 'dtype' applies to tensor attributes, not to float",
    ),
    (
        "opdefs/ms_gelu.yaml",  # a tensor attribute of an op without a kernel
        "reference: F.gelu(X)\n",
        "attributes:\n  - {name: table, type: tensor, dtype: float32, required: false}\n"
        "reference: F.gelu(X)\n",
        r"attributes\[0\]\.type: a tensor attribute is carried by kernel ops only yet",
    ),
    (
        "tests/opdefs/table_affine.yaml",  # a test value that is not of the declared dtype
        "offsets: [10, -10]",
        "offsets: [10, 1.5]",
        r"tests\.known\[1\]\.attributes\.offsets: attribute 'offsets' is a tensor of int64: "
        r"expected an integer or nested lists of them, found 1\.5",
    ),
    (
        "tests/opdefs/table_affine.yaml",  # a bool among an int tensor's values
        "offsets: [10, -10]",
        "offsets: [true, -10]",
        r"tests\.known\[1\]\.attributes\.offsets: attribute 'offsets' is a tensor of int64: "
        r"expected an integer or nested lists of them, found True",
    ),
    (
        "tests/opdefs/table_affine.yaml",  # a finite value its float type cannot hold
        "weights: [2.0, -0.5]",
        "weights: [70000.0, -0.5]",
        r"tests\.known\[0\]\.attributes\.weights: attribute 'weights' is a tensor of float16: "
        r"70000\.0 is outside its range and would become infinite",
    ),
    (
        "opdefs/codebook_dequantize.yaml",  # a tensor attribute with a default
        "    dtype: float32\n",
        "    dtype: float32\n    default: [1.0]\n",
        r"attributes\[0\]\.default: a tensor attribute takes no default here",
    ),
    (
        "opdefs/aten_add.yaml",  # an ONNX function body's @reference to an absent attribute
        "  - {name: alpha, type: float, default: 1.0, doc: The multiplier of Y.}",
        "  - {name: alpha, type: float, default: 1.0, doc: The multiplier of Y.}\n"
        "  - {name: beta, type: float, required: false}",
        r"attributes\[1\]\.required: attribute 'beta' may be absent \(optional without a "
        r"default\): an op defined as an ONNX function does not take one yet",
    ),
    (
        "tests/opdefs/select_above.yaml",  # a kernel allocating an output that may be absent
        "  - {name: Indices, type: int64, shape: [M]}",
        "  - {name: Indices, type: int64, shape: [M], optional: true}",
        r"outputs\[1\]: optional output 'Indices' has a data-dependent size",
    ),
    (
        "tests/opdefs/sliding_window.yaml",  # the shape rule reads an attribute that may be absent
        "  - {name: stride, type: int, default: 1}",
        "  - {name: stride, type: int, required: false}",
        r"attributes\[1\]: attribute 'stride' may be absent \(optional without a default\), so "
        r"neither the shape rule nor allowed/min/max can read it",
    ),
    (
        "opdefs/sum_op.yaml",  # the only operand of broadcast(...) may have no value
        "variadic: true, doc",
        "variadic: {min: 0}, doc",
        r"outputs\[0\]: output 'Y': broadcast\(\.\.\.\) needs an input that always has a value",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # gradients of a variadic input through custom_op
        "  api: library",
        "  api: custom_op",
        r"gradients: gradient formulas of an op with a variadic input \('X'\) are not carried "
        r"by torch.api 'custom_op' yet",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # a name the tests give one of X's values
        "  - {name: alpha, type: float, default: 1.0}",
        "  - {name: alpha, type: float, default: 1.0}\n  - {name: X_1, type: int, default: 0}",
        r"attributes\[1\]\.name: 'X_1' is the name of a value of variadic input 'X'",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # its values spread into another op's node
        "reference_upcast: false",
        'reference_upcast: false\nexport:\n  - nodes: ["Y = Sum(X)"]',
        r"export\[0\]\.nodes\[0\]: variadic input 'X' may only be passed to the op itself",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # a node of the op itself with its inputs rearranged
        "reference_upcast: false",
        'reference_upcast: false\nexport:\n  - nodes: ["Y = test.variadic::ScaledSum(Base, Base, X)"]',
        r"export\[0\]\.nodes\[0\]: a node of the op itself takes the op's own inputs in order "
        r"\(Base, X\)",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # a shape pattern for every value
        "variadic: {min: 2}, doc",
        "variadic: {min: 2}, shape: [N], doc",
        r"inputs\[1\]: input 'X': a variadic input takes no shape pattern",
    ),
    (
        "tests/opdefs/scaled_sum.yaml",  # a test case with fewer values than the minimum
        "{Base: [1, 2], X: [[10, 20], 5]}",
        "{Base: [1, 2], X: [[10, 20]]}",
        r"tests\.known\[0\]\.inputs\.X: variadic input 'X' is a list of its values, at least 2 "
        r"here; found 1",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # a variadic output with a shape of its own
        "variadic: true, same_shape_as: X, doc",
        "variadic: true, shape: [N], doc",
        r"outputs\[1\]: output 'Y': a variadic output takes 'same_shape_as: <the variadic "
        r"input>'",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # a minimum that is not its paired input's
        "variadic: true, same_shape_as: X, doc",
        "variadic: {min: 2}, same_shape_as: X, doc",
        r"outputs\[1\]: output 'Y': its minimum \(2\) must be that of input 'X' \(1\)",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # a known case with a value of Y too many
        "outputs: {norm: 5, Y: [[3], [[4]], 0]}",
        "outputs: {norm: 5, Y: [[3], [[4]], 0, 1]}",
        r"tests\.known\[1\]\.outputs\.Y: variadic output 'Y' is a list of its values, one per "
        r"value of input 'X' \(3 here\); found 4",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # its values gathered from another op's outputs
        "\nkernel:\n",
        '\nexport:\n  - nodes: ["norm, Z = ai.opgen::ClipByGlobalNorm(X)", "Y = Identity(Z)"]\n'
        "\nkernel:\n",
        r"export\[0\]\.nodes\[1\]: variadic output 'Y' may only come from a node of the op "
        r"itself, giving the op's own outputs in order \(norm, Y\)",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # a node of the op itself with its outputs swapped
        "\nkernel:\n",
        '\nexport:\n  - nodes: ["Y, norm = ai.opgen::ClipByGlobalNorm(X)"]\n\nkernel:\n',
        r"export\[0\]\.nodes\[0\]: variadic output 'Y' may only come from a node of the op "
        r"itself",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # its values passed on to another node
        "\nkernel:\n",
        '\nexport:\n  - nodes: ["norm, Y = ai.opgen::ClipByGlobalNorm(X)", "Z = Identity(Y)"]\n'
        "\nkernel:\n",
        r"export\[0\]\.nodes\[1\]: variadic output 'Y' may only come from a node of the op "
        r"itself, .* and go to no other node",
    ),
    (
        "tests/opdefs/scale_each.yaml",  # no value of X: a one-output op would have no output
        "{scale: 2, X: [[]]}",
        "{scale: 2, X: []}",
        r"tests\.known\[0\]\.inputs\.X: variadic input 'X' has no value here, so the op would "
        r"have no output",
    ),
    (
        "opdefs/clip_by_global_norm.yaml",  # a name the tests give one of Y's values
        "  - name: max_norm",
        "  - {name: Y_1, type: int, default: 0, doc: x}\n  - name: max_norm",
        r"attributes\[0\]\.name: 'Y_1' is the name of a value of variadic output 'Y'",
    ),
    (
        "tests/opdefs/string_repeat.yaml",  # strings and bfloat16 in one call (the tests' numpy)
        "  - {name: Times, type: int64,",
        "  - {name: Times, type: bfloat16,",
        r"inputs\[1\]\.type: string and bfloat16 tensors in one call are not carried by the "
        r"parity tests yet",
    ),
    (
        "tests/opdefs/string_repeat.yaml",  # rows of different lengths in a test value
        "Times: [[2, 3], [1, 0]]",
        "Times: [[2, 3], [1]]",
        r"tests\.known\[0\]\.inputs\.Times: ragged nested lists",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # chosen_by an attribute that is not there
        "chosen_by: to",
        "chosen_by: tto",
        r"type_constraints\.U\.chosen_by: no attribute 'tto' to choose it \(did you mean 'to'\?\)",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # an attribute choosing a dtype holds TensorProto's number
        "{name: to, type: int, default: int64,",
        "{name: to, type: string, default: int64,",
        r"attributes\[0\]\.type: type variable U is chosen_by it, so it must be an int attribute",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # its values are the variable's dtypes
        "{name: to, type: int, default: int64,",
        "{name: to, type: int, default: int64, allowed: [1, 7],",
        r"attributes\[0\]\.allowed: type variable U is chosen_by it: its values are U's dtypes",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # a default the variable does not allow
        "{name: to, type: int, default: int64,",
        "{name: to, type: int, default: int32,",
        r"attributes\[0\]\.default: the default int32 is not one of U's dtypes",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # a default that is not a dtype
        "{name: to, type: int, default: int64,",
        "{name: to, type: int, default: 7,",
        r"attributes\[0\]\.default: expected a dtype name",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # absent, it would leave the dtype unknown
        "{name: to, type: int, default: int64,",
        "{name: to, type: int, required: false,",
        r"attributes\[0\]\.required: type variable U is chosen_by it: give it a default",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # an input of the variable could disagree with it
        "  - {name: X, type: T, shape: [...]}",
        "  - {name: X, type: T, shape: [...]}\n  - {name: Z, type: U, optional: true}",
        r"inputs\[1\]: input 'Z' has type U, which attribute 'to' chooses",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # two variables chosen by one attribute
        "  T: [float32, int32]",
        "  T: {types: [float32, int32], chosen_by: to}",
        r"type_constraints\.T\.chosen_by: attribute 'to' already chooses U",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # an attribute chooses among tensor dtypes only
        "types: [float32, int64, float16, bool]",
        "types: [float32, seq(int64)]",
        r"type_constraints\.U\.types: an attribute chooses among tensor dtypes only",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # a test case setting it: the tests run every dtype
        "      attributes: {offset: 1}\n      outputs: {Y: [2, 1, -2], Y1: [3, 2, -1]}",
        "      attributes: {offset: 1, to: 7}\n      outputs: {Y: [2, 1, -2], Y1: [3, 2, -1]}",
        r"tests\.known\[0\]\.attributes\.to: attribute 'to' chooses U: the tests run every "
        r"dtype of U",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # a variable no output has: nothing tells its kernels apart
        "  - {name: Y, type: U, same_shape_as: X}\n  - {name: Y1, type: U,",
        "  - {name: Y, type: T, same_shape_as: X}\n  - {name: Y1, type: T,",
        r"type_constraints\.U\.chosen_by: no required output has type U",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # `self`: onnxscript's Op.__call__ takes its own
        "{name: offset, type: int, default: 0,",
        "{name: self, type: int, default: 0,",
        r"attributes\[1\]\.name: attribute 'self' is reserved",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # on an optional output only: a node may leave it out
        "  - {name: Y, type: U, same_shape_as: X}\n",
        "  - {name: Y, type: T, same_shape_as: X}\n",
        r"type_constraints\.U\.chosen_by: no required output has type U",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # added in a later version: earlier nodes lack it
        "{name: to, type: int, default: int64,",
        "{name: to, type: int, default: int64, since_version: 2,",
        r"attributes\[0\]: attribute 'to' chooses U, so it cannot be added in a later version",
    ),
    (
        "tests/opdefs/cast_to.yaml",  # a PyTorch op without a kernel: its eager nodes
        "kernel:\n  body: |",
        "kernel_was:\n  body: |",
        r"type_constraints\.U\.chosen_by: a PyTorch op without a kernel does not take a type "
        r"variable an attribute chooses yet",
    ),
]


# A known or random case runs the op: an attribute value every runtime refuses is a definition
# error at the value (before, the generated tests failed with the runtime's refusal).
REFUSED_CASE_VALUES = [
    (
        "tests/opdefs/clip_below.yaml",  # a known case, past max
        "      attributes: {floor: 2.0}",
        "      attributes: {floor: 200.0}",
        r"tests\.known\[1\]\.attributes\.floor: 2e\+02 is outside min/max \[-1e\+02, 1e\+02\], "
        r"which every runtime refuses",
    ),
    (
        "tests/opdefs/clip_below.yaml",  # a random case, a float that rounds past min in float32
        "      attributes: {floor: -1.0}",
        "      attributes: {floor: -100.00001}",
        r"tests\.random\[0\]\.attributes\.floor: .* is outside min/max",
    ),
    (
        "tests/opdefs/odd_text.yaml",  # not one of the allowed values
        'mode: "\u2211"',
        'mode: "sum"',
        r'tests\.random\[1\]\.attributes\.mode: "sum" is not one of \[',
    ),
]


@pytest.mark.parametrize(
    "old, new, errors",
    [
        # ONNX's name of a dtype: the hint, and the attribute kept (no "no attribute 'to'").
        (
            "default: int64, doc: The output",
            "default: float, doc: The output",
            [r"attributes\[0\]\.default: unknown dtype 'float' \(did you mean 'float32'\?\)"],
        ),
        # The chooser of another type: its own error only (no "no attribute 'to'").
        (
            "{name: to, type: int, default: int64,",
            "{name: to, type: float, default: int64,",
            [r"attributes\[0\]\.type: type variable U is chosen_by it, so it must be an int"],
        ),
        # A misspelt chooser: its did-you-mean, and the dtype default explained, not "integer".
        (
            "chosen_by: to",
            "chosen_by: tto",
            [
                r"type_constraints\.U\.chosen_by: no attribute 'tto' to choose it \(did you "
                r"mean 'to'\?\)",
                r"attributes\[0\]\.default: 'int64' is a dtype: an int attribute takes one as "
                r"its default only where a type variable is chosen_by it \(chosen_by: to\)",
            ],
        ),
    ],
)
def test_chooser_mistakes_give_their_own_errors_only(tmp_path, run_generator, old, new, errors):
    text = (ROOT / "tests/opdefs/cast_to.yaml").read_text()
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "cast_to.yaml").write_text(text.replace(old, new))
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    for error in errors:
        assert re.search(rf"cast_to\.yaml:\d+:\d+: {error}", result.stderr), result.stderr
    assert f"{len(errors)} error" in result.stderr, result.stderr


@pytest.mark.parametrize("source,old,new,error", REFUSED_CASE_VALUES)
def test_case_attribute_every_runtime_refuses_is_a_definition_error(
    tmp_path, run_generator, source, old, new, error
):
    text = (ROOT / source).read_text()
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / Path(source).name).write_text(text.replace(old, new))
    for suffix in (".h", ".cuh"):  # (so that their absence is not the only error)
        kernel = (ROOT / source).with_name(f"{Path(source).stem}_kernel{suffix}")
        if kernel.is_file():
            (tmp_path / "opdefs" / kernel.name).write_text(kernel.read_text())
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(rf"{Path(source).stem}\.yaml:\d+:\d+: {error}", result.stderr), result.stderr


def test_error_case_attributes_may_be_refused_values(tmp_path, run_generator):
    """An error case may give a value the runtimes refuse: that is what it tests."""
    text = (ROOT / "tests/opdefs/clip_below.yaml").read_text()
    old = "      message: \"input 'X' must have at least rank 1\"\n"
    assert old in text
    new = old + (
        "    - shapes: {X: [3], Extra: [[3]]}\n"
        "      attributes: {floor: 500.0}\n"
        "      message: \"attribute 'floor' must be between\"\n"
    )
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "clip_below.yaml").write_text(text.replace(old, new))
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("source,old,new,error", NOT_YET, ids=[c[0] for c in NOT_YET])
def test_kind_not_carried_there_yet_is_refused(tmp_path, run_generator, source, old, new, error):
    text = (ROOT / source).read_text()
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / Path(source).name).write_text(text.replace(old, new))
    for suffix in (".h", ".cuh"):  # (so that their absence is not the only error)
        kernel = (ROOT / source).with_name(f"{Path(source).stem}_kernel{suffix}")
        if kernel.is_file():
            (tmp_path / "opdefs" / kernel.name).write_text(kernel.read_text())
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(rf"{Path(source).stem}\.yaml:\d+:\d+: {error}", result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_export_node_refuses_an_attribute_that_may_be_absent_where_one_is_needed(
    tmp_path, run_generator
):
    """`@s` of an attribute that may be absent leaves the node attribute out when it is: refused
    where the called op requires it, or where opgen cannot tell (a standard op)."""
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "const_ref.yaml").write_text(
        "torch: {name: probe_cr::const_ref}\n"
        "type_constraints: {T: [float32]}\n"
        "inputs: [{name: X, type: T}]\n"
        "outputs: [{name: Y, type: T, same_shape_as: X}]\n"
        "attributes: [{name: s, type: float, required: false}]\n"
        "export:\n"
        '  - nodes: ["c = Constant<value_float=@s>()", "Y = Mul(X, c)"]\n'
        "reference: X * (1.0 if s is None else s)\n"
        "tests: {tolerances: {float32: {rtol: 0, atol: 0}}, random: [{shapes: {X: [3]}}]}\n"
    )
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        r"const_ref\.yaml:7:\d+: export: value_float=@s: attribute 's' may be absent \(optional "
        r"without a default\), and opgen cannot tell whether ONNX's Constant may go without "
        r"'value_float'",
        result.stderr,
    ), result.stderr


@pytest.mark.parametrize(
    "value, message",
    [
        ("-1", "-1 is no uint16 value (integers from 0 to 65535)"),
        ("65536", "65536 is no uint16 value (integers from 0 to 65535)"),
        ("1.5", "1.5 is no uint16 value"),
        (".inf", "inf is no uint16 value"),
        (".nan", "nan is no uint16 value"),
    ],
)
def test_known_value_the_dtype_cannot_hold_is_refused(tmp_path, run_generator, value, message):
    """A known value is checked against every dtype its case runs at: uint16 would wrap -1 to
    65535 (and the test would pass on a value nobody wrote)."""
    text = (ROOT / "tests" / "opdefs" / "select_above.yaml").read_text()
    old = "    - inputs: {X: [0, 65535, 1, 3]}"
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "select_above.yaml").write_text(
        text.replace(old, f"    - inputs: {{X: [0, {value}, 1, 3]}}")
    )
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        rf"select_above\.yaml:\d+:\d+: .*{re.escape(message)}", result.stderr
    ), result.stderr


@pytest.mark.parametrize(
    "value, message",
    [
        ("8", "8 is no int4 value (integers from -8 to 7)"),
        ("-9", "-9 is no int4 value (integers from -8 to 7)"),
        ("0.5", "0.5 is no int4 value"),
        ('"1+2j"', "'1+2j' is a string, no int4 value"),
    ],
)
def test_known_4bit_value_out_of_range_is_refused(tmp_path, run_generator, value, message):
    """int4 known values are checked as the wider integers are (the tests would refuse them
    only when they run, naming no field)."""
    text = (ROOT / "opdefs" / "dequantize_int4.yaml").read_text()
    old = "    - inputs: {X: [-8, -1, 0, 7, 3], scale: 0.5}"
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "dequantize_int4.yaml").write_text(
        text.replace(old, f"    - inputs: {{X: [-8, -1, {value}, 7, 3], scale: 0.5}}")
    )
    (tmp_path / "opdefs" / "dequantize_int4_kernel.h").write_text(
        (ROOT / "opdefs" / "dequantize_int4_kernel.h").read_text()
    )
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        rf"dequantize_int4\.yaml:\d+:\d+: .*{re.escape(message)}", result.stderr
    ), result.stderr


def test_complex_known_value_that_complex_cannot_read_is_refused(tmp_path, run_generator):
    text = (ROOT / "opdefs" / "complex_rotate.yaml").read_text()
    old = '    - inputs: {X: ["1+0j", "0+1j", "1-2j", "-3.5+0.25j"]}'
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "complex_rotate.yaml").write_text(
        text.replace(old, '    - inputs: {X: ["1+0j", "1 + 2i", "1-2j", "-3.5+0.25j"]}')
    )
    for name in ("complex_rotate_kernel.h", "complex_rotate_kernel.cuh"):
        (tmp_path / "opdefs" / name).write_text((ROOT / "opdefs" / name).read_text())
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(
        r"complex_rotate\.yaml:\d+:\d+: .*'1 \+ 2i' is no complex64 value \(a number, or a "
        r"string Python's complex\(\) reads",
        result.stderr,
    ), result.stderr


def test_known_outputs_follow_the_op_order_whatever_the_file_order(tmp_path):
    """The generated tests pair a known case's outputs with the op's outputs by position: a case
    that writes them in another order must not compare Y_0 with norm."""
    from generator.parse.op import parse_opdef

    source = ROOT / "opdefs" / "clip_by_global_norm.yaml"
    text = source.read_text()
    old = "outputs: {norm: 5, Y: [[3], [[4]], 0]}"
    assert old in text
    (tmp_path / source.name).write_text(text.replace(old, "outputs: {Y: [[3], [[4]], 0], norm: 5}"))
    for name in ("clip_by_global_norm_kernel.h", "clip_by_global_norm_kernel.cuh"):
        (tmp_path / name).write_text(source.with_name(name).read_text())
    op = parse_opdef(tmp_path / source.name, source.name)
    assert list(op.tests.known[1].outputs) == ["norm", "Y_0", "Y_1", "Y_2"]


@pytest.mark.parametrize("bad", ["{min: -1}", "{min: false}", '"yes"'])
def test_a_bad_variadic_field_is_the_only_error(tmp_path, run_generator, bad):
    """A `variadic` field that fails to parse still makes the input variadic: the test cases that
    list its values are not reported as wrong on top of the real error."""
    source = ROOT / "tests" / "opdefs" / "add_many.yaml"
    text = source.read_text()
    old = "variadic: {min: 0}"
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / source.name).write_text(text.replace(old, f"variadic: {bad}"))
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "inputs[1].variadic" in errors[0], result.stderr


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("    min: 0.0\n", "    min: 0.0\n    allowed: [1]\n", "attributes[0].allowed"),
        ("    min: 0.0\n", "    min: 0.0\n    max: -1.0\n", "attributes[0].max"),
        ("    default: 1.0\n", "    default: -1.0\n", "attributes[0].default"),
        ("    min: 0.0\n", '    min: "zero"\n', "attributes[0].min"),
        ("    type: float\n", "    type: float\n    default: []\n", "attributes[0].default"),
        ("    type: float\n", "    type: float\n    dtype: float32\n", "attributes[0].dtype"),
    ],
)
def test_a_bad_attribute_field_is_the_only_error(tmp_path, run_generator, old, new, field):
    """A field of an attribute that is wrong (allowed, min, max, a default, a dtype) is reported
    and the attribute kept: the reference and the test cases that use it are not reported as
    wrong on top of the real error (dropping the attribute made them name an undefined one)."""
    source = ROOT / "opdefs" / "clip_by_global_norm.yaml"
    text = source.read_text()
    assert old in text
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / source.name).write_text(text.replace(old, new, 1))
    for name in ("clip_by_global_norm_kernel.h", "clip_by_global_norm_kernel.cuh"):
        (tmp_path / "opdefs" / name).write_text(source.with_name(name).read_text())
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f": {field}: " in errors[0], result.stderr


def test_an_exported_case_giving_a_variadic_output_no_value_is_refused(tmp_path, run_generator):
    """Neither exporter exports a variadic output of no value (ONNX has no list of no values
    without its element type): a random case, which the tests export, must give its input a
    value; a known case, which they run but do not export, may leave it none."""
    text = (ROOT / "tests/opdefs/scale_each.yaml").read_text()
    for old, new in (
        ("outputs:\n  - {name: Y", "outputs:\n  - {name: total, type: T, shape: []}\n  - {name: Y"),
        ('reference: "[scale', 'reference: "(scale.clone(), [scale'),
        ('for x in X]"', 'for x in X])"'),
        ("outputs: {Y: [[]]}", "outputs: {total: 2, Y: [[]]}"),
        ("outputs: {Y: [[2,", "outputs: {total: 2, Y: [[2,"),
        ("    - inputs: {scale: 2, X: [[]]}", "    - inputs: {scale: 2, X: []}"),
        ("outputs: {total: 2, Y: [[]]}", "outputs: {total: 2, Y: []}"),
        ("shapes: {scale: [], X: [[rows]]}", "shapes: {scale: [], X: []}"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "scale_each.yaml").write_text(text)
    result = run_generator(cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert re.search(
        r"scale_each\.yaml:\d+:\d+: tests\.random\[1\]\.shapes\.X: variadic input 'X' has no "
        r"value here, so variadic output 'Y' would have none, which neither ONNX exporter "
        r"exports",
        errors[0],
    ), result.stderr


# Every runtime header; the schema ones against ONNX's headers (libonnx-dev), without torch's
# (whose protobuf headers would be found first).
SCHEMA_HEADERS = ["onnx_schema_support.h", "schema_test_support.h"]
RUNTIME_HEADERS = [
    "runtime.h",
    "shape_rule.h",
    "ort_support.h",
    "pybind_support.h",
    "torch_support.h",
    "cuda.h",
    "ort_cuda_support.h",
    "torch_cuda_support.h",
    *SCHEMA_HEADERS,
]


def _identifiers(header: str) -> set[str]:
    """The names a header's code mentions unqualified (not after ::, . or ->)."""
    text = re.sub(r"//[^\n]*", "", header)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"(?m)^\s*#.*$", "", text)
    return set(re.findall(r"(?<![\w:.>])([A-Za-z_]\w*)\b", text))


@pytest.mark.parametrize("header", RUNTIME_HEADERS)
def test_no_op_id_hides_a_name_the_runtime_headers_use(header, tmp_path):
    """An op id is namespace opgen::<op_id>, inside which the runtime headers' code runs: every
    name those headers mention that an op id may take, declared so, leaves them compiling (an op
    named uint32_t, madvise or OrtValue once hid C's, POSIX's or ONNX Runtime's)."""
    import subprocess
    import sysconfig

    import pybind11
    import torch

    from generator.build import ort_include_dir
    from generator.parse.read import op_id_problem

    include = ROOT / "generator" / "runtime" / "include"
    text = (include / "opgen" / header).read_text()
    names = sorted(n for n in _identifiers(text) if op_id_problem(n) is None)
    assert names, header
    unit = tmp_path / ("unit.cu" if "cuda" in header else "unit.cc")
    unit.write_text(
        "namespace opgen {\n"
        + "".join(f"namespace {name} {{}}\n" for name in names)
        + f'}}\n#include "opgen/{header}"\n'
    )
    flags = [
        "-std=c++17",
        f"-I{include}",
        f"-I{ort_include_dir(lambda message: None)}",
        f"-I{Path(torch.__file__).parent / 'include'}",
        "-DTORCH_TARGET_VERSION=0x020a000000000000",
        "-DUSE_CUDA",
        f"-I{pybind11.get_include()}",
        f"-I{sysconfig.get_paths()['include']}",
    ]
    if header in SCHEMA_HEADERS:
        flags = ["-std=c++17", f"-I{include}", "-DONNX_ML=1", "-DONNX_NAMESPACE=onnx"]
        if not Path("/usr/include/onnx/defs/schema.h").is_file():
            if os.environ.get("CI") == "true":
                pytest.fail("no ONNX C++ headers (libonnx-dev) under CI")
            pytest.skip("no ONNX C++ headers (libonnx-dev) on this machine")
    if unit.suffix == ".cu":
        nvcc = shutil.which("nvcc")
        if nvcc is None:
            if os.environ.get("CI") == "true":
                pytest.fail("no nvcc under CI")
            pytest.skip("no nvcc on this machine")
        command = [nvcc, "-c", str(unit), "-o", str(tmp_path / "unit.o"), *flags]
    else:
        command = ["g++", "-fsyntax-only", str(unit), *flags]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, (names, result.stdout[-3000:] + result.stderr[-3000:])
