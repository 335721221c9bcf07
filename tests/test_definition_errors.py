"""A malformed op definition: one clear error per problem naming file, line, column and field;
exit code 2; nothing written."""

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
        "gradient without float64",
        "types: [float32, float64, float16]",
        "types: [float32, float16]",
        "gradients.X",
        "float64 must be among its dtypes (torch.autograd.gradcheck runs in float64)",
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
        "reference uses unknown name",
        "reference: torch.linalg.inv(X)",
        "reference: torch.linalg.inv(Z)",
        "reference",
        "undefined name(s) ['Z']",
    ),
    ("reserved input name", "  - name: X\n", "  - name: class\n", "inputs[0].name", "reserved"),
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
