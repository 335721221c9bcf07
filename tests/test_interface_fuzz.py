"""Property tests over random interface-only op definitions (strategies in random_interfaces.py).

- Valid ones, many to a project: `python -m generator` writes `fuzzpkg/<stem>/onnx_schema.py`
  for each, whose SCHEMA (imported in a fresh process) gives exactly the SchemaRecord built from
  the drawn definition (names, type strings, options, min arities, homogeneity,
  differentiation, constraints in order, attributes with their types, requiredness, defaults
  as float32, and every doc), the arity bounds ONNX derives from it, and the same record once
  registered with ONNX; a one-node model of each op passes `onnx.checker.check_model` with
  full_check (types checked against the constraints, required attributes, arities); and
  `python -m generator --check` agrees with what was written.
- Broken ones (a variadic parameter before the last, optional and variadic, `tensor(<dtype>)`,
  an unknown dtype, types nested deeper than 8, a default on a graph/tensor/... attribute,
  `required: true` with a default, since_version, a min arity ONNX's int cannot count, a
  shape or an attribute check that an interface-only op cannot carry), several to a project
  and one to three in a definition, give exit 2 and one `error: <file>:<line>:<col>: <field>:
  ...` line per problem, naming its field (and pointing at the bad value), no traceback,
  nothing written.

The generator bugs it found are fixed; their reproducers (KNOWN_BUG_ERRORS) run every time.
OPGEN_EXPLORE=1 draws new examples.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from random_interfaces import (
    Breakage,
    Op,
    Param,
    batches,
    broken_ops,
    fixed_plan,
    kitchen_sink,
    model_plannable,
    node_plan,
)
from scratch_cache import scratch_cache

from generator import importer

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # The same examples on every run, so that CI stays reproducible; set OPGEN_EXPLORE=1 to
    # draw new ones.
    derandomize=not os.environ.get("OPGEN_EXPLORE"),
)
ERROR_LINE = re.compile(r"error: (opdefs/[\w.]+):(\d+):(\d+): ([^:]+): (.+)")
SUMMARY = re.compile(r"(\d+) errors? in op definitions; nothing written")


def _env(*paths: Path) -> dict[str, str]:
    return {
        "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)]),
        "PATH": "/usr/bin:/bin",
        "XDG_CACHE_HOME": scratch_cache(),
    }


def _run(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env=_env(root),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _write_project(root: Path, files: dict[str, str]) -> None:
    (root / "opgen.toml").write_text('definitions = "opdefs"\npackage = "fuzzpkg"\n')
    (root / ".git").mkdir()
    (root / "opdefs").mkdir()
    for name, text in files.items():
        (root / "opdefs" / name).write_text(text, encoding="utf-8")


# Run in a process of its own: imports each op's generated schema module, reads its record,
# registers it and checks a one-node model of the op; prints what it found as JSON.
INSPECT = r"""
import dataclasses, importlib, json, sys, traceback
import onnx
from onnx import AttributeProto, TensorProto, helper
from generator import importer

ops = json.load(sys.stdin)
found = {}
modules = {}
for op in ops:
    out = found[op["stem"]] = {}
    try:
        module = importlib.import_module(f"fuzzpkg.{op['stem']}.onnx_schema")
    except Exception:
        out["error"] = "import: " + traceback.format_exc()
        continue
    modules[op["stem"]] = module
    schema = module.SCHEMA
    out["record"] = dataclasses.asdict(importer.record_from_onnx(schema))
    out["bounds"] = {
        k: getattr(schema, k) for k in ("min_input", "max_input", "min_output", "max_output")
    }
for op in ops:  # every schema registered before any model is checked
    if op["stem"] in modules:
        try:
            modules[op["stem"]].register_schema()
        except Exception:
            found[op["stem"]]["error"] = "register_schema: " + traceback.format_exc()


def elem(dtype):
    return getattr(TensorProto, {"float32": "FLOAT", "float64": "DOUBLE"}.get(dtype, dtype.upper()))


def type_proto(t):
    kind = t[0]
    if kind == "tensor":
        return helper.make_tensor_type_proto(elem(t[1]), [2])
    if kind == "sparse":
        return helper.make_sparse_tensor_type_proto(elem(t[1]), [2])
    if kind == "seq":
        return helper.make_sequence_type_proto(type_proto(t[1]))
    if kind == "optional":
        return helper.make_optional_type_proto(type_proto(t[1]))
    return helper.make_map_type_proto(elem(t[1]), type_proto(t[2]))


def tensor():
    return helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])


def attribute_value(kind, value):
    if kind == "bool":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "floats":
        return [float(v) for v in value]
    if kind in ("int", "string", "ints", "strings"):
        return value
    single = {
        "tensor": tensor,
        "sparse_tensor": lambda: helper.make_sparse_tensor(
            tensor(), helper.make_tensor("i", TensorProto.INT64, [1], [0]), [2]
        ),
        "graph": lambda: helper.make_graph(
            [helper.make_node("Constant", [], ["c"], value=tensor())],
            "body",
            [],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])],
        ),
        "type_proto": lambda: helper.make_tensor_type_proto(TensorProto.FLOAT, [1]),
    }
    if kind in single:
        return single[kind]()
    return [single[kind[:-1]]()]


def values(types, prefix, declared):
    names = []
    for index, t in enumerate(types):
        if t is None:
            names.append("")
        else:
            names.append(f"{prefix}{index}")
            declared.append(helper.make_value_info(names[-1], type_proto(t)))
    return names


for op in ops:
    plan, out = op["node"], found[op["stem"]]
    if plan is None or "error" in out:
        continue
    try:
        record = importer.record_from_onnx(onnx.defs.get_schema(op["op"], op["version"], op["domain"]))
        out["registered"] = dataclasses.asdict(record)
        graph_inputs, graph_outputs = [], []
        node = helper.make_node(
            op["op"],
            values(plan["inputs"], "in", graph_inputs),
            values(plan["outputs"], "out", graph_outputs),
            domain=op["domain"],
        )
        for name, (kind, value) in plan["attributes"].items():
            attr_type = getattr(AttributeProto, "INT" if kind == "bool" else kind.upper())
            node.attribute.append(
                helper.make_attribute(name, attribute_value(kind, value), attr_type=attr_type)
            )
        model = helper.make_model(
            helper.make_graph([node], "one_node", graph_inputs, graph_outputs),
            ir_version=10,
            opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(op["domain"], op["version"])],
        )
        onnx.checker.check_model(model, full_check=True)
        out["model"] = "ok"
    except Exception:
        out["model"] = traceback.format_exc()
print(json.dumps(found))
"""


def _record(data: dict) -> importer.SchemaRecord:
    """A SchemaRecord back from JSON (lists were tuples)."""

    def default(value):
        return tuple(value) if isinstance(value, list) else value

    return importer.SchemaRecord(
        **{
            **data,
            "inputs": tuple(importer.ParamRecord(**p) for p in data["inputs"]),
            "outputs": tuple(importer.ParamRecord(**p) for p in data["outputs"]),
            "type_constraints": tuple(
                importer.ConstraintRecord(c["name"], tuple(c["allowed"]), c["doc"])
                for c in data["type_constraints"]
            ),
            "attributes": tuple(
                importer.AttributeRecord(**{**a, "default": default(a["default"])})
                for a in data["attributes"]
            ),
        }
    )


def _field_differences(expected, got, where: str = "") -> list[str]:
    """Every field where two records differ (docs too, which `differences` leaves out)."""
    if dataclasses.is_dataclass(expected) and type(expected) is type(got):
        return [
            line
            for f in dataclasses.fields(expected)
            for line in _field_differences(
                getattr(expected, f.name), getattr(got, f.name), f"{where}.{f.name}"
            )
        ]
    if isinstance(expected, tuple) and isinstance(got, tuple) and len(expected) == len(got):
        return [
            line
            for index, (a, b) in enumerate(zip(expected, got, strict=True))
            for line in _field_differences(a, b, f"{where}[{index}]")
        ]
    if type(expected) is type(got) and expected == got:
        return []
    return [f"{where}: expected {expected!r}, generated {got!r}"]


def _check_valid_batch(ops: list[Op], plans: list[dict | None]) -> None:
    with tempfile.TemporaryDirectory(prefix="opgen-interface-") as tmp:
        root = Path(tmp)
        texts = {op.file_name: op.text() for op in ops}
        _write_project(root, texts)
        generated = _run(root, "-m", "generator", "-q")
        shown = "\n".join(f"--- {name}\n{text}" for name, text in texts.items())
        assert generated.returncode == 0, generated.stderr[-6000:] + "\n" + shown[-12000:]
        assert "Traceback" not in generated.stderr

        wanted = [
            {"stem": op.stem, "op": op.op, "domain": op.domain, "version": op.version, "node": plan}
            for op, plan in zip(ops, plans, strict=True)
        ]
        inspected = _run(root, "-c", INSPECT, stdin=json.dumps(wanted))
        assert inspected.returncode == 0, inspected.stderr[-6000:]
        found = json.loads(inspected.stdout)

        failures = []
        for op, plan in zip(ops, plans, strict=True):
            out = found[op.stem]
            problems = [out["error"]] if "error" in out else []
            if "record" in out:
                expected, generated_record = op.record(), _record(out["record"])
                problems += importer.differences(expected, generated_record)
                problems += _field_differences(expected, generated_record)
                if out["bounds"] != op.arity_bounds():
                    problems.append(f"arity bounds {out['bounds']} != {op.arity_bounds()}")
            if "registered" in out and _record(out["registered"]) != _record(out["record"]):
                problems.append("the registered schema differs from SCHEMA")
            if plan is not None and out.get("model", "ok") != "ok":
                problems.append(f"one-node model {plan}: {out['model'][-1500:]}")
            if problems:
                failures.append(
                    f"{op.file_name}:\n{texts[op.file_name]}\n  " + "\n  ".join(problems)
                )
        assert not failures, "\n\n".join(failures)[:20000]

        check = _run(root, "-m", "generator", "--check", "-q")
        assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]


@st.composite
def _valid_batches(draw) -> tuple[list[Op], list[dict | None]]:
    ops = draw(batches(6, 14))
    plans = [draw(node_plan(op)) if model_plannable(op) else None for op in ops]
    return ops, plans


# Each example is one project of 6 to 14 definitions (three processes: generate, inspect,
# --check); a failure is shrunk project by project.
@settings(max_examples=12, **SETTINGS)
@given(_valid_batches())
@example(([*kitchen_sink()], [fixed_plan(op) for op in kitchen_sink()]))
def test_random_interfaces_generate_the_schemas_they_declare(batch):
    _check_valid_batch(*batch)


def _check_errors(texts: dict[str, str], breakages: dict[str, list[Breakage]]) -> None:
    """The definitions `texts` (file name -> text) give exit 2 and exactly one error line per
    breakage, at its field and pointing at its value, and nothing else."""
    with tempfile.TemporaryDirectory(prefix="opgen-interface-broken-") as tmp:
        root = Path(tmp)
        _write_project(root, texts)
        result = _run(root, "-m", "generator")
        err = result.stderr
        shown = "\n".join(f"--- {name}\n{text}" for name, text in texts.items())
        assert result.returncode == 2, f"exit {result.returncode}\n{err[-6000:]}\n{shown[-8000:]}"
        assert "Traceback" not in err and not result.stdout, err[-6000:]
        *lines, summary = err.strip().splitlines()
        count = SUMMARY.fullmatch(summary)
        assert count, err[-6000:]
        reported: list[tuple[str, str, int, int]] = []
        for line in lines:
            match = ERROR_LINE.fullmatch(line)
            assert match, f"not a definition error line: {line!r}\n{err[-6000:]}"
            path, line_no, col, field_path, _ = match.groups()
            reported.append((path.removeprefix("opdefs/"), field_path, int(line_no), int(col)))
        assert len(reported) == int(count.group(1)), err[-6000:]
        assert not (root / "fuzzpkg").exists(), "nothing may be written on a bad definition"

        def matches(breakage: Breakage, field_path: str) -> bool:
            return field_path == breakage.field or (
                breakage.prefix and field_path.startswith(breakage.field)
            )

        problems = []
        for file_name, field_path, line_no, col in reported:
            lines_of = texts[file_name].splitlines()
            if not (1 <= line_no <= len(lines_of) and 1 <= col <= len(lines_of[line_no - 1]) + 1):
                problems.append(f"{file_name}:{line_no}:{col}: outside the file")
                continue
            matching = [b for b in breakages.get(file_name, []) if matches(b, field_path)]
            if not matching:
                near = [
                    b.known_bug
                    for b in breakages.get(file_name, [])
                    if b.known_bug and b.field.startswith(field_path)
                ]
                problems.append(
                    f"{file_name}: unexpected error at {field_path}"
                    + (f" (known bug: {near[0]})" if near else "")
                )
                continue
            anchor = matching[0].anchor
            at = lines_of[line_no - 1][col - 1 :]
            if anchor is not None and not at.lstrip("\"'").startswith(anchor):
                problems.append(
                    f"{file_name}:{line_no}:{col}: {field_path} points at {at[:40]!r}, not at "
                    f"{anchor!r}"
                )
        for file_name, file_breakages in breakages.items():
            for breakage in file_breakages:
                hits = [r for r in reported if r[0] == file_name and matches(breakage, r[1])]
                if len(hits) != 1:
                    problems.append(
                        f"{file_name}: {breakage.description} at {breakage.field}: "
                        f"{len(hits)} errors"
                        + (f" (known bug: {breakage.known_bug})" if breakage.known_bug else "")
                    )
        if problems:
            pytest.fail("\n".join(problems) + f"\n\nstderr:\n{err[-6000:]}\n{shown[-8000:]}")


@st.composite
def _broken_batches(draw) -> list[tuple[Op, list[Breakage]]]:
    count = draw(st.integers(2, 6))
    return [draw(broken_ops(f"b{index}")) for index in range(count)]


@settings(max_examples=30, **SETTINGS)
@given(_broken_batches())
def test_broken_interfaces_report_each_problem_where_it_is(broken):
    _check_errors(
        {op.file_name: op.text() for op, _ in broken},
        {op.file_name: breakages for op, breakages in broken},
    )


# --------------------------------------------------------------------------- known bugs
# Generator bugs this test found, each as a minimal definition and the errors it must give.
# All are fixed; the reproducers run every time, and the strategies draw what hit them.

_HEAD = "op: {op}\ndomain: fz.bug\nversion: 1\n"
_UNKNOWN = "float65"
_ONE_OUTPUT = "outputs:\n  - {name: y, type: float32}\n"
KNOWN_BUG_ERRORS = {
    # parse/op.py _check_since_versions (and _check_attribute_order, _check_min_arity) locate
    # their error by the index of the attribute among those that parsed: one that failed to
    # parse before it moves the error onto that one.
    "misplaced-item-error (since_version)": (
        _HEAD.format(op="SinceMisplaced")
        + "inputs: []\n"
        + _ONE_OUTPUT
        + "attributes:\n"
        + "  - {name: g, type: graph, default: 1}\n"
        + "  - {name: k, type: int, default: 0, since_version: 2}\n",
        [
            Breakage("graph default", "attributes[0].default", "1"),
            Breakage("since_version", "attributes[1]"),
        ],
    ),
    # ... and _check_min_arity counts the parameters before the variadic one among those that
    # parsed: with one fewer, 2 + 2147483646 no longer overflows, and the error goes missing.
    "missing-item-error (min arity)": (
        _HEAD.format(op="MinMissing")
        + "inputs:\n"
        + f"  - {{name: a, type: {_UNKNOWN}}}\n"
        + "  - {name: b, type: float32}\n"
        + "  - {name: c, type: float32, variadic: {min: 2147483646}}\n"
        + _ONE_OUTPUT,
        [
            Breakage("unknown dtype", "inputs[0].type", _UNKNOWN),
            Breakage("min arity overflow", "inputs[2]", prefix=True),
        ],
    ),
    # An interface-only op refuses an output's shape (no inference checks it), but its shape
    # rule is still compiled: a second error for the same field (here: N bound by no input).
    "shape-rule-compiled": (
        _HEAD.format(op="ShapeTwice")
        + "inputs: []\n"
        + "outputs:\n  - {name: y, type: float32, shape: [N]}\n",
        [Breakage("output shape", "outputs[0].shape")],
    ),
    # parse/read.py _value_type takes any dtype as a map's key; onnx.proto (TypeProto.Map):
    # key_type "MUST refer to an integral type ([U]INT{8|16|32|64}) or STRING".
    "map-key": (
        _HEAD.format(op="FloatKey")
        + 'inputs:\n  - {name: x, type: "map(float32, int64)"}\n'
        + _ONE_OUTPUT,
        [Breakage("map key float32", "inputs[0].type", "map(float32")],
    ),
    # parse/read.py value_type removes every space before parsing, inside names too: this
    # reads as float32 (and `map(str ing, int 64)` as map(string, int64)).
    "space-in-dtype": (
        _HEAD.format(op="SpacedDtype") + 'inputs:\n  - {name: x, type: "flo at32"}\n' + _ONE_OUTPUT,
        [Breakage("space in a dtype name", "inputs[0].type", "flo at32")],
    ),
}
# Found by this test and fixed since (in the same session): run every time.
FIXED_BUG_ERRORS = {
    # The variadic-not-last check enumerated the inputs that parsed and located its error by
    # that index among all the items: one that failed to parse before it moved the error ...
    "misplaced-item-error (variadic not last)": (
        _HEAD.format(op="Misplaced")
        + "inputs:\n"
        + f"  - {{name: a, type: {_UNKNOWN}}}\n"
        + "  - {name: b, type: float32, variadic: true}\n"
        + "  - {name: c, type: float32}\n"
        + _ONE_OUTPUT,
        [
            Breakage("unknown dtype", "inputs[0].type", _UNKNOWN),
            Breakage("variadic not last", "inputs[1]"),
        ],
    ),
    # ... and one after it made the variadic one look last: no error.
    "missing-item-error (variadic not last)": (
        _HEAD.format(op="Missing")
        + "inputs: []\n"
        + "outputs:\n"
        + "  - {name: b, type: float32, variadic: true}\n"
        + f"  - {{name: c, type: {_UNKNOWN}}}\n",
        [
            Breakage("variadic not last", "outputs[0]"),
            Breakage("unknown dtype", "outputs[1].type", _UNKNOWN),
        ],
    ),
    # A min arity was bounded by 2**31 - 1 alone, but ONNX adds the parameters before the
    # variadic one to it in a C++ int (OpSchema::Finalize): min_input overflowed to
    # -2147483647, and a node of HugeMin with no inputs passed onnx.checker.check_model.
    "min-arity-overflow": (
        _HEAD.format(op="HugeMin")
        + "inputs:\n"
        + "  - {name: a, type: float32}\n"
        + "  - {name: b, type: float32}\n"
        + "  - {name: c, type: float32, variadic: {min: 2147483647}}\n"
        + _ONE_OUTPUT,
        [Breakage("min arity overflow", "inputs[2]", prefix=True)],
    ),
}


@pytest.mark.parametrize("bug", sorted(KNOWN_BUG_ERRORS))
def test_known_bug_gives_its_errors(bug):
    text, breakages = KNOWN_BUG_ERRORS[bug]
    _check_errors({"repro.yaml": text}, {"repro.yaml": breakages})


@pytest.mark.parametrize("bug", sorted(FIXED_BUG_ERRORS))
def test_fixed_bug_gives_its_errors(bug):
    text, breakages = FIXED_BUG_ERRORS[bug]
    _check_errors({"repro.yaml": text}, {"repro.yaml": breakages})


def test_optional_and_not_variadic_is_optional():
    # Found by this test and fixed since: `optional: true` beside `variadic: false` was refused
    # ("a parameter is optional or variadic, not both").
    op = Op(
        stem="optional_not_variadic",
        op="OptionalNotVariadic",
        domain="fz.bug",
        version=1,
        doc=None,
        constraints=[],
        inputs=[
            Param(
                "x",
                None,
                ["tensor", "float32"],
                "float32",
                "optional",
                arity_fields={"optional": True, "variadic": False},
            )
        ],
        outputs=[Param("y", None, ["tensor", "float32"], "float32", "single")],
        attributes=[],
        style="block",
        ext=".yaml",
    )
    _check_valid_batch([op], [None])
