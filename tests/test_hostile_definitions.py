"""Hostile definitions: values that parse but cannot be represented or would break an emitter
are definition errors (one line each, exit 2, nothing written, never a traceback); whatever
happens past validation writes nothing; the output does not depend on the working directory."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INVERSE = (ROOT / "opdefs" / "inverse.yaml").read_text()
SLIDING = (ROOT / "tests" / "opdefs" / "sliding_window.yaml").read_text()


def project_with(tmp_path: Path, text: str, name: str = "inverse.yaml") -> Path:
    (tmp_path / "opdefs").mkdir(parents=True)
    (tmp_path / "opdefs" / name).write_text(text)
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.h", tmp_path / "opdefs")
    shutil.copy(ROOT / "opdefs" / "inverse_kernel.cuh", tmp_path / "opdefs")
    return tmp_path


def edited(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def assert_definition_error(result, file: str, field: str, fragment: str) -> None:
    """Exit 2, a one-line error at file:line:col: field: ...fragment..., no traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    match = re.search(
        rf"^error: {re.escape(file)}:\d+:\d+: {re.escape(field)}: (.*)$", result.stderr, re.M
    )
    assert match, result.stderr
    assert fragment in match.group(1), result.stderr


def assert_nothing_written(project: Path) -> None:
    assert not (project / "generated").exists(), "nothing may be written on a bad definition"


# --------------------------------------------------------------------------- 14: trailing newlines

NEWLINE_CASES = [
    # (edit of inverse.yaml, message fragment)
    (("op: Inverse", 'op: "MalProbe\\n"'), "not a valid identifier"),
    (("domain: ai.opgen", 'domain: "mal.test\\n"'), "not a dotted lower-case domain"),
    (("name: opgen::inverse", 'name: "opgen::mal_probe\\n"'), "not a PyTorch qualified name"),
    (("shape: [..., N, N]", 'shape: [..., "N\\n", N]'), "expected '...'"),
    (("  T:\n    types:", '  "T\\n":\n    types:'), "not a valid identifier"),
]


@pytest.mark.parametrize("edit,fragment", NEWLINE_CASES, ids=[c[0][0][:12] for c in NEWLINE_CASES])
def test_trailing_newline_is_not_a_valid_name(tmp_path, run_generator, edit, fragment):
    project = project_with(tmp_path, edited(INVERSE, *edit))
    result = run_generator(cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr, result.stderr
    assert_nothing_written(project)


def test_every_validation_pattern_rejects_a_trailing_newline():
    from generator.model import names

    patterns = {
        names.IDENTIFIER: "Op",
        names.DOMAIN: "a.b",
        names.TORCH_NAME: "a::b",
        names.ATEN_OVERLOAD: "aten::add.Tensor",
    }
    for pattern, good in patterns.items():
        assert pattern.fullmatch(good) and pattern.match(good), pattern.pattern
        assert not pattern.match(good + "\n"), pattern.pattern  # even with match()


# --------------------------------------------------------------------------- 13: numbers

PROBE = (ROOT / "tests" / "opdefs" / "attribute_probe.yaml").read_text()


def parse_errors(tmp_path: Path, text: str, name: str = "probe.yaml") -> list:
    """The definition errors of one file, parsed in this process (faster than the CLI)."""
    from generator.errors import DefinitionErrors
    from generator.parse.op import parse_opdef

    path = tmp_path / name
    path.write_text(text)
    try:
        parse_opdef(path, f"opdefs/{name}")
    except DefinitionErrors as errors:
        return errors.errors
    return []


NUMBER_CASES = [
    # (file text, replace this, with this, field path, message fragment)
    (PROBE, "default: 1}", "default: 9223372036854775808}", "attributes[2].default", "int64"),
    (PROBE, "default: 1}", "default: -9223372036854775809}", "attributes[2].default", "int64"),
    (
        PROBE,
        "default: [3, 4]",
        "default: [3, 100000000000000000000]",
        "attributes[5].default[1]",
        "int64",
    ),
    (
        SLIDING,
        "allowed: [sum, mean]",
        "allowed: [sum, mean]}\n  - {name: k, type: int, default: 1, "
        "allowed: [1, 9223372036854775808]",
        "attributes[4].allowed[1]",
        "int64",
    ),
    (PROBE, "version: 1", "version: 100000000000000000000", "version", "<= 2147483647"),
    (SLIDING, "version: [1, 2]", "version: [1, 2147483648]", "version[1]", "<= 2147483647"),
    (
        PROBE,
        "shape: [..., 1]",
        "shape: [..., 100000000000000000000]",
        "outputs[1].shape[1]",
        "int64",
    ),
    (
        SLIDING,
        '"(L + 2 * pad - window) // stride + 1"',
        '"L + 100000000000000000000"',
        "outputs[0].shape[1]",
        "int64",
    ),
    (
        PROBE,
        "default: 2.0}",
        "default: 1.0e+300}",
        "attributes[1].default",
        "outside float32's range",
    ),
    (PROBE, "default: 2.0}", "default: 1.0e-50}", "attributes[1].default", "too small for float32"),
    (
        PROBE,
        "default: 2.0}",
        "default: .inf}",
        "attributes[1].default",
        "PyTorch schemas cannot hold an infinite or NaN default",
    ),
    (PROBE, "default: 2.0}", "default: -.inf}", "attributes[1].default", "3.4028234663852886e+38"),
    (PROBE, "default: 2.0}", "default: .nan}", "attributes[1].default", "NaN"),
    (PROBE, "default: [0.5, 0.25]", "default: [0.5, .nan]", "attributes[4].default[1]", "NaN"),
    (
        PROBE,
        "attributes: {bias: 0.5}",
        "attributes: {bias: .inf}",
        "tests.known[0].attributes.bias",
        "infinite",
    ),
    (
        PROBE,
        "float32: {rtol: 1.0e-5,",
        "float32: {rtol: .nan,",
        "tests.tolerances.float32.rtol",
        "finite",
    ),
    (
        PROBE,
        "{X: [[1, 2]], Offset: 3}",
        "{X: [[1, 2]], Offset: 100000000000000000000}",
        "tests.known[0].inputs.Offset",
        "int64",
    ),
    # Test tensors a generated test would have to allocate.
    (
        PROBE,
        "dynamic: {batch: [2, 3]}",
        "dynamic: {batch: [2, 1000000000000]}",
        "tests.random[0].shapes.X",
        "at most 1048576",
    ),
    (
        PROBE,
        "shapes: {X: [], Offset: []}",
        "shapes: {X: [1048577], Offset: []}",
        "tests.errors[0].shapes.X",
        "at most 1048576",
    ),
    (
        PROBE,
        "shapes: {X: [batch, 5], Offset: []}",
        "shapes: {X: [batch, 100000000000000000000], " "Offset: []}",
        "tests.random[0].shapes.X[1]",
        "int64",
    ),
    (
        SLIDING,
        "attributes: {window: 3, stride: 2, pad: 1}",
        "attributes: {window: 3, stride: 2, pad: 1000000}",
        "tests.random[0]",
        "output 'Y' would have",
    ),
]


@pytest.mark.parametrize(
    "text,old,new,field,fragment", NUMBER_CASES, ids=[f"{c[3]}-{c[2][-24:]}" for c in NUMBER_CASES]
)
def test_numbers_no_target_can_hold_are_errors(tmp_path, text, old, new, field, fragment):
    errors = parse_errors(tmp_path, edited(text, old, new))
    assert errors and errors[0].field == field, [str(e) for e in errors]
    assert fragment in errors[0].message, errors[0].message
    if "attributes[" in field or "version" in field:  # a bad value drops nothing else
        assert len(errors) == 1, [str(e) for e in errors]


def test_number_errors_on_the_command_line(tmp_path, run_generator):
    text = edited(INVERSE, "name: opgen::inverse", "name: opgen::inverse\n")
    text += "attributes:\n  - {name: bound, type: float, default: .inf}\n"
    text = edited(text, "reference: torch.linalg.inv(X)", "reference: torch.linalg.inv(X) + bound")
    project = project_with(tmp_path, text)
    result = run_generator(cwd=project)
    assert_definition_error(result, "opdefs/inverse.yaml", "attributes[0].default", "infinite")
    assert "1 error in op definitions; nothing written" in result.stderr
    assert_nothing_written(project)


def test_the_extremes_of_int64_and_float32_are_accepted(tmp_path, run_generator):
    """-2**63 needs care in C++ (no negative literals); float32's largest is a usable bound."""
    text = edited(PROBE, "default: 1}", "default: -9223372036854775808}")
    text = edited(text, "default: 2.0}", "default: 3.4028234663852886e+38}")
    text = edited(text, "default: [3, 4]", "default: [9223372036854775807, 4]")
    (tmp_path / "opdefs").mkdir()
    (tmp_path / "opdefs" / "attribute_probe.yaml").write_text(text)
    result = run_generator("-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "generated" / "attribute_probe"
    header = (out / "attribute_probe_op.h").read_text()
    assert "int64_t{-9223372036854775807 - 1}" in header
    assert "-9223372036854775808" not in header
    assert "int64_t{9223372036854775807}" in header
    assert "int shift=-9223372036854775808" in (out / "torch_op.py").read_text()


def test_dynamic_sizes_below_two_and_uneven_size_lists_are_errors(tmp_path):
    errors = parse_errors(
        tmp_path, edited(PROBE, "dynamic: {batch: [2, 3]}", "dynamic: {batch: [1, 3]}")
    )
    assert [e.field for e in errors] == ["tests.random[0].dynamic.batch[0]"]
    assert "must be >= 2" in errors[0].message and "specialise" in errors[0].message
    text = edited(
        SLIDING, "shapes: {X: [2, length]}\n      dynamic: {length: [6, 11]}",
        "shapes: {X: [batch, length]}\n      dynamic: {batch: [2, 3], length: [6, 11, 12]}",
    )  # fmt: skip
    errors = parse_errors(tmp_path, text)
    assert [e.field for e in errors] == ["tests.random[1].dynamic"], [str(e) for e in errors]
    assert "the same number of sizes" in errors[0].message


# --------------------------------------------------------------------------- 15: past validation

SHAPE = '"(L + 2 * pad - window) // stride + 1"'


@pytest.mark.parametrize(
    "expression,fragment",
    [
        ('"L // 0"', "'L // 0' divides by 0; a divisor must be positive"),
        ('"L // (2 - 2)"', "divides by 2 - 2, which is always 0"),
        ('"L // (1 - 3) + 1"', "which is always -2"),
        ('"L + 4611686018427387904 * 2"', "= 9223372036854775808 is outside int64's range"),
        ('"2 - 3"', "always negative"),
    ],
)
def test_constant_divisors_and_overflows_are_errors(tmp_path, run_generator, expression, fragment):
    project = project_with(tmp_path, edited(SLIDING, SHAPE, expression), "sliding_window.yaml")
    result = run_generator(cwd=project)
    assert_definition_error(result, "opdefs/sliding_window.yaml", "outputs[0]", fragment)
    assert "1 error in op definitions" in result.stderr, result.stderr
    assert_nothing_written(project)


def test_a_random_case_the_shape_rule_cannot_apply_to_is_an_error(tmp_path):
    text = edited(SLIDING, "window: 3, stride: 2, pad: 1}", "window: 3, stride: 0, pad: 1}")
    errors = parse_errors(tmp_path, text)
    assert [e.field for e in errors] == ["tests.random[0]"], [str(e) for e in errors]
    assert "the shape rule divides by zero" in errors[0].message


def many_ops(tmp_path: Path, count: int) -> Path:
    """`count` copies of CustomOpOne under other names (enough of them fork workers)."""
    text = (ROOT / "opdefs" / "custom_op_one.yaml").read_text()
    (tmp_path / "opdefs").mkdir()
    for index in range(count):
        (tmp_path / "opdefs" / f"op_{index:02d}.yaml").write_text(
            text.replace("op: CustomOpOne", f"op: Op{index:02d}")
            .replace("test_customop::custom_op_one", f"many::op_{index:02d}")
            .replace("domain: test.customop", "domain: many")
            .replace("  cuda: custom_op_one_kernel.cuh\n", "")  # (its namespace is the op's)
        )
    return tmp_path


def tree(directory: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every directory (None) under `directory`."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes() if p.is_file() else None
        for p in directory.rglob("*")
    }


def replace_emitter(monkeypatch, registry: str, emitter, replacement) -> None:
    """Runs `replacement` where emitters.<registry> lists `emitter`."""
    from generator import emitters

    listed = getattr(emitters, registry)
    assert emitter in listed
    monkeypatch.setattr(
        emitters, registry, tuple(replacement if e is emitter else e for e in listed)
    )


@pytest.mark.parametrize("count", [3, 40], ids=["one process", "forked workers"])
def test_an_emitter_bug_writes_nothing_and_names_the_op(tmp_path, monkeypatch, capsys, count):
    """An exception in an emitter (a bug in opgen) after validation: every op is rendered before
    any file is written, so the output stays as it was, and the message names the op."""
    from generator import cli, parallel
    from generator import project as proj
    from generator.dest import cpp_kernel as cpp_dest

    project = many_ops(tmp_path, count)
    monkeypatch.chdir(project)
    assert cli.main(["-q"]) == 0
    for path in (project / "generated").rglob("*.py"):  # every op stale
        path.write_text(path.read_text() + "# stale\n")
    before = tree(project)
    emit = cpp_dest.emit

    def broken_emit(op, emission):
        if op.op_id == "op_02":
            raise ZeroDivisionError("integer division or modulo by zero")
        return emit(op, emission)

    replace_emitter(monkeypatch, "OP_EMITTERS", emit, broken_emit)
    assert parallel.worker_count(count, proj._MIN_OPS_PER_WORKER) == (2 if count == 40 else 1)
    capsys.readouterr()
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert (
        "error: internal error in opgen while generating op_02 (opdefs/op_02.yaml): "
        "ZeroDivisionError: integer division or modulo by zero" in err
    ), err
    assert "please report it" in err and "nothing written" in err
    assert "Traceback" not in err
    assert tree(project) == before
    assert cli.main(["-v"]) == 2
    assert "Traceback" in capsys.readouterr().err  # for the bug report


def test_an_exception_while_rendering_names_the_template_its_line_and_the_file():
    import dataclasses

    from generator.render import render

    nothing = dataclasses.make_dataclass("Nothing", [], frozen=True)()  # a view of no fields
    with pytest.raises(Exception, match="'title' is undefined") as raised:
        render("docs/op.md.j2", "docs/probe.md", ["opdefs/probe.yaml"], nothing)
    line = next(
        number
        for number, text in enumerate(
            (ROOT / "generator/templates/docs/op.md.j2").read_text().split("\n"), 1
        )
        if "title" in text
    )
    assert raised.value.__notes__ == [
        f"while rendering docs/probe.md from template docs/op.md.j2, line {line}"
    ]


def test_an_exception_in_an_included_part_names_the_part_and_its_line():
    """The parity tests' template includes its parts: an error in one names the part (where
    the line is), not the include."""
    import dataclasses

    from generator import emitters
    from generator import project as proj
    from generator.dest import tests as tests_dest
    from generator.parse.project import onnx_op_index
    from generator.render import _render

    project = proj.Project(ROOT, ROOT / "opdefs", ROOT / "generated")
    ops = proj.load(project, [ROOT / "opdefs" / "inverse.yaml"])
    view = tests_dest.parity_test_view(
        ops[0], onnx_op_index(ops), emitters.parity_test_pieces(ops[0])
    )
    # forward_params: read by one part only, the export helpers
    hidden = "forward_params"
    context = {f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.name != hidden}
    with pytest.raises(Exception, match=f"'{hidden}' is undefined") as raised:
        _render("python/test_parity.py.j2", "inverse/test_inverse.py", [], **context)
    part = "python/test_parity/export_helpers.py.j2"
    line = next(
        number
        for number, text in enumerate(
            (ROOT / "generator/templates" / part).read_text().split("\n"), 1
        )
        if hidden in text
    )
    assert raised.value.__notes__ == [
        f"while rendering inverse/test_inverse.py from template {part}, line {line} "
        "(included by python/test_parity.py.j2)"
    ]


@pytest.mark.parametrize("count", [3, 40], ids=["one process", "forked workers"])
def test_a_template_bug_names_the_op_and_the_template(tmp_path, monkeypatch, capsys, count):
    """A template reading a key its context lacks (a bug in opgen): the message names the op,
    the file, the template and its line, and nothing is written."""
    import jinja2

    from generator import cli, render

    project = many_ops(tmp_path, count)
    monkeypatch.chdir(project)
    assert cli.main(["-q"]) == 0
    before = tree(project)
    real = render.environment()
    broken = {"docs/op.md.j2": "{{ header }}\n\n{{ no_such_key }}\n"}
    overlay = real.overlay(
        loader=jinja2.ChoiceLoader([jinja2.DictLoader(broken), real.loader]), bytecode_cache=None
    )
    monkeypatch.setattr(render, "environment", lambda: overlay)
    capsys.readouterr()
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert (
        "error: internal error in opgen while generating op_01 (opdefs/op_01.yaml): "
        "UndefinedError: 'no_such_key' is undefined "
        "(while rendering docs/op_01.md from template docs/op.md.j2, line 3)\n" in err
    ), err
    assert tree(project) == before


@pytest.mark.parametrize("count", [3, 40], ids=["one process", "forked workers"])
def test_two_producers_of_one_path_are_an_internal_error(tmp_path, monkeypatch, capsys, count):
    """Validation keeps every op's paths apart; should an emitter still generate a path another
    producer generates (a bug in opgen), the run names the path and both producers and writes
    nothing, instead of keeping whichever file came last."""
    from generator import cli, emitters, parallel
    from generator import project as proj

    project = many_ops(tmp_path, count)
    monkeypatch.chdir(project)
    assert cli.main(["-q"]) == 0
    before = tree(project)
    emit_op = emitters.op_page

    def misplaced_page(op, emission):
        (page,) = emit_op(op, emission)
        return [type(page)("docs/op_01.md", page.content) if op.op_id == "op_02" else page]

    replace_emitter(monkeypatch, "OP_EMITTERS", emit_op, misplaced_page)
    assert parallel.worker_count(count, proj._MIN_OPS_PER_WORKER) == (2 if count == 40 else 1)
    capsys.readouterr()
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert (
        "error: internal error in opgen while generating op_02 (opdefs/op_02.yaml): "
        "DuplicateOutputError: generated/docs/op_01.md is generated twice, "
        "by op_01 (opdefs/op_01.yaml) and by op_02 (opdefs/op_02.yaml)\n" in err
    ), err
    assert "please report it" in err and "nothing written" in err
    assert tree(project) == before


def test_one_producer_generating_a_path_twice_is_an_internal_error(tmp_path, monkeypatch):
    from generator import project as proj
    from generator.dest import docs as docs_dest

    root = many_ops(tmp_path, 2)
    project = proj.Project(root, root / "opdefs", root / "generated")
    ops = proj.load(project, proj.discover(project))
    emit_index = docs_dest.emit_index

    def index_over_the_package_init(ops, emission):  # the shared files have an __init__.py
        (page,) = emit_index(ops, emission)
        return [type(page)("__init__.py", page.content)]

    replace_emitter(monkeypatch, "PROJECT_EMITTERS", emit_index, index_over_the_package_init)
    with pytest.raises(proj.GenerationError) as raised:
        proj.generate(project, ops, ops, write=True)
    (failure,) = raised.value.failures
    assert failure.what == proj.SHARED_FILES
    assert failure.error == (
        f"DuplicateOutputError: {project.output_dir}/__init__.py is generated twice, "
        f"by {proj.SHARED_FILES}"
    )
    assert not project.output_dir.exists()


@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["write", "check"])
def test_each_op_is_emitted_once_per_run(tmp_path, monkeypatch, mode):
    """The output paths are checked on the files the run generates: a writing run used to
    emit every op a second time beforehand, for its paths alone."""
    from generator import cli
    from generator.dest import cpp_kernel as cpp_dest

    project = many_ops(tmp_path, 3)
    monkeypatch.chdir(project)
    emitted = []
    emit = cpp_dest.emit

    def counted(op, emission):
        emitted.append(op.op_id)
        return emit(op, emission)

    replace_emitter(monkeypatch, "OP_EMITTERS", emit, counted)
    assert cli.main(["-q", *mode]) == (1 if mode else 0)
    assert sorted(emitted) == ["op_00", "op_01", "op_02"]


# --------------------------------------------------------------------------- 16: torch namespaces


def test_a_torch_name_that_is_a_python_keyword_is_an_error(tmp_path):
    """torch.ops.my_ops.in is not Python (found by the property tests: a traceback from black)."""
    for name, part in (("my_ops::in", "in"), ("def::inverse", "def")):
        text = edited(PROBE, "name: opgen_probe::attribute_probe", f"name: {name}")
        errors = parse_errors(tmp_path, text)
        assert any(f"'{part}' is a Python keyword" in e.message for e in errors), errors


@pytest.mark.parametrize("name", ["aten::mal_probe", "aten::relu", "prims::inverse", "prim::x"])
def test_a_new_op_in_a_namespace_pytorch_owns_is_an_error(tmp_path, run_generator, name):
    project = project_with(tmp_path, edited(INVERSE, "name: opgen::inverse", f"name: {name}"))
    result = run_generator(cwd=project)
    assert_definition_error(result, "opdefs/inverse.yaml", "torch.name", "belongs to PyTorch")
    assert f"did you mean 'overrides: {name}'" in result.stderr
    assert_nothing_written(project)


def test_torch_namespaces_cover_the_installed_torch():
    """The hard-coded list names every namespace the installed torch defines ops in (asked of a
    fresh interpreter: in this one, the generated package may have added our own)."""
    from generator.model.names import TORCH_NAMESPACES

    script = (
        "import torch\n"
        "names = list(torch._C._dispatch_get_all_op_names())\n"
        "names += [schema.name for schema in torch._C._jit_get_all_schemas()]\n"
        "print(' '.join(sorted({name.split('::')[0] for name in names})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    namespaces = set(result.stdout.split())
    assert "aten" in namespaces and "prims" in namespaces
    assert namespaces <= TORCH_NAMESPACES, sorted(namespaces - TORCH_NAMESPACES)


# --------------------------------------------------------------------------- 18: scaffold `new`


@pytest.mark.parametrize(
    "args,message",
    [
        (["MyOp", "--name", "../../evil"], "'../../evil' is not a valid identifier"),
        (["MyOp", "--name", "{outside}/x"], "is not a valid identifier"),
        (["MyOp", "--name", "a" * 129], "at most 128 characters"),
        (["MyOp", "--name", "b" * 235], "at most 128 characters"),
        (["MyOp", "--name", "c" * 300], "at most 128 characters"),
        (["MyOp", "--name", "docs"], "taken by the generated code"),
        (["Op"], "'op' is reserved"),
        (["MyOp", "--attribute", "alpha:int=99999999999999999999"], "outside int64's range"),
        (["MyOp", "--attribute", "alpha:ints=1,-9223372036854775809"], "outside int64's range"),
        (["MyOp", "--attribute", "alpha:float=inf"], "cannot be a float attribute value"),
        (["MyOp", "--attribute", "alpha:float=nan"], "cannot be a float attribute value"),
        (["MyOp", "--attribute", "alpha:floats=1.0,1e300"], "outside float32's range"),
        (["MyOp", "--domain", "d" * 129], "at most 128 characters"),
    ],
)
def test_new_validates_everything_before_writing(tmp_path, run_generator, args, message):
    outside = tmp_path / "outside"
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    args = [arg.replace("{outside}", str(outside)) for arg in args]
    result = run_generator("new", *args, cwd=cwd)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == ["a", "a/b"]


def test_new_accepts_the_longest_name_and_extreme_values(tmp_path, run_generator):
    name = "n" * 128
    result = run_generator(
        "new", "MyOp", "--name", name, "--attribute", "low:int=-9223372036854775808", "-q",
        "--package", "generated", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "opdefs" / f"{name}_kernel.h").is_file()
    assert (tmp_path / "generated" / name / f"{name}_schema_test.cc").is_file()


# --------------------------------------------------------------------------- 20: working directory


def test_output_is_the_same_bytes_from_any_working_directory(tmp_path, run_generator):
    """Generated files name definitions relative to the project root (the opdefs directory's
    parent), whether opgen runs there, in its parent or inside opdefs/."""
    runs = {
        "root": ("", ["-q"]),
        "parent": ("..", ["-q", "--opdefs-dir", "{p}/opdefs", "--output-dir", "{p}/generated"]),
        "inside": ("opdefs", ["-q", "--opdefs-dir", ".", "--output-dir", "../generated"]),
    }
    trees = {}
    for name, (where, args) in runs.items():
        project = tmp_path / name / "p"
        shutil.copytree(ROOT / "opdefs", project / "opdefs")
        cwd = (project / where).resolve()
        result = run_generator(*[a.replace("{p}", "p") for a in args], cwd=cwd)
        assert result.returncode == 0, result.stderr
        trees[name] = {
            k: v for k, v in tree(project / "generated").items() if "__pycache__" not in k
        }
    assert trees["parent"] == trees["root"]
    assert trees["inside"] == trees["root"]
    committed = {k: v for k, v in tree(ROOT / "generated").items() if "__pycache__" not in k}
    assert trees["root"] == committed


def test_messages_name_files_from_the_working_directory(tmp_path, run_generator):
    """On the terminal, file:line:col is relative to where the user is (clickable)."""
    project = project_with(tmp_path / "p", edited(INVERSE, "float16]", "float65]"))
    copy = edited(INVERSE, "op: Inverse", "op: Inverse2")  # the same PyTorch op twice
    (project / "opdefs" / "inverse2.yaml").write_text(copy)
    result = run_generator("--opdefs-dir", "p/opdefs", "--output-dir", "p/generated", cwd=tmp_path)
    assert result.returncode == 2
    assert "error: p/opdefs/inverse.yaml:" in result.stderr, result.stderr
    assert "unknown dtype 'float65'" in result.stderr
    (project / "opdefs" / "inverse.yaml").write_text(INVERSE)
    result = run_generator("--opdefs-dir", "p/opdefs", "--output-dir", "p/generated", cwd=tmp_path)
    assert re.search(
        r"error: p/opdefs/inverse2\.yaml:\d+:\d+: torch.name: .* also defined by "
        r"p/opdefs/inverse\.yaml",
        result.stderr,
    ), result.stderr


def test_new_names_the_definition_from_the_project_root(tmp_path, run_generator):
    result = run_generator(
        "new", "MyScale", "-q", "--opdefs-dir", "p/opdefs", "--output-dir", "p/generated",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    stub = (tmp_path / "p" / "opdefs" / "my_scale_kernel.h").read_text()
    assert "opdefs/my_scale.yaml" in stub and "p/opdefs" not in stub
    header = (tmp_path / "p" / "generated" / "my_scale" / "my_scale_op.h").read_text()
    assert "Generated by opgen from opdefs/my_scale.yaml" in header


# --------------------------------------------------------------------------- 21: named definitions


def test_naming_a_definition_says_why_another_ones_errors_block_it(tmp_path, run_generator):
    project = project_with(tmp_path, INVERSE)
    (project / "opdefs" / "broken.yaml").write_text(
        edited(SLIDING, "version: [1, 2]", "version: x")
    )
    result = run_generator("opdefs/inverse.yaml", cwd=project)
    assert_definition_error(result, "opdefs/broken.yaml", "version", "expected an integer")
    assert "note: opdefs/broken.yaml is not among the definitions you named" in result.stderr
    assert "every definition in opdefs/ is loaded" in result.stderr
    assert_nothing_written(project)
    # No note when the errors are in the named file itself, or when none is named.
    for args in (["opdefs/broken.yaml"], []):
        assert "note:" not in run_generator(*args, cwd=project).stderr


# Where each kind of name is declared in select_above.yaml (every kind the namespace holds),
# and in an interface-only op (no size symbols there).
NAME_DECLARATIONS = {
    "type variable": ("  T: [float32", "  {}: [float32", "type_constraints.{}"),
    "input": ("{name: X, type: T}", "{{name: {}, type: T}}", "inputs[0].name"),
    "output": ("{name: Values, type: T", "{{name: {}, type: T", "outputs[0].name"),
    "attribute": ("{name: threshold,", "{{name: {},", "attributes[0].name"),
    "size symbol": (
        "data_dependent_sizes: [M]",
        "data_dependent_sizes: [{}]",
        "data_dependent_sizes[0]",
    ),
}
INTERFACE_ONLY = """op: Probe
domain: test.names
version: 1
type_constraints:
  T: [float32]
inputs:
  - {name: X, type: T}
outputs:
  - {name: Values, type: T}
attributes:
  - {name: threshold, type: float, default: 0.0}
"""
KIND_PAIRS = [
    (a, b) for i, a in enumerate(NAME_DECLARATIONS) for b in list(NAME_DECLARATIONS)[i + 1 :]
]


def _sharing(text: str, kinds: tuple[str, ...], name: str = "Shared") -> str:
    for kind in kinds:
        old, new, _ = NAME_DECLARATIONS[kind]
        text = edited(text, old, new.format(name))
    return text


@pytest.mark.parametrize("first,second", KIND_PAIRS, ids=[f"{a}-{b}" for a, b in KIND_PAIRS])
def test_a_name_two_kinds_share_is_an_error_where_it_repeats(tmp_path, first, second):
    """Type variables, inputs, outputs, attributes and size symbols share one namespace: each
    pair of kinds given one name is a located error; in an interface-only op too where a type
    variable is one of the pair (ONNX keeps inputs, outputs and attributes apart)."""
    source = (ROOT / "tests" / "opdefs" / "select_above.yaml").read_text()
    fields = [NAME_DECLARATIONS[k][2].format("Shared") for k in (first, second)]
    for text, refused in (
        (_sharing(source, (first, second)), True),
        (
            (
                _sharing(INTERFACE_ONLY, (first, second))
                if "size symbol" not in (first, second)
                else ""
            ),
            "type variable" in (first, second),
        ),
    ):
        if not text:
            continue
        errors = [str(e) for e in parse_errors(tmp_path, text)]
        shared = [e for e in errors if "'Shared' is already the name of" in e]
        assert bool(shared) == refused, (first, second, errors)
        if refused:  # at the later declaration, with file:line:column and the field path
            assert re.search(r"probe\.yaml:\d+:\d+: ", shared[0]), shared
            assert any(f": {field}: " in shared[0] for field in fields), (fields, shared)
        else:
            assert errors == [], errors
