"""`opgen new` and `opgen import` over flag combinations, configurations and values: whatever
they accept generates and passes `--check` (and each default reads back as the value the flag
gave); whatever they refuse exits 2 with an error, having written nothing. In-process, a fresh
repository per example."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import cli
from generator.model.op import TorchApi
from generator.parse.op import parse_opdef

# Valid package names, among them ones whose lower case is no domain or torch namespace of
# one's own (onnx, prims: PyTorch's, import: a keyword).
PACKAGES = ["generated", "MyOps", "Onnx", "Prims", "Import", "A" + "b" * 140]
FLOAT_TEXTS = ["1e-6", "1.0e-6", "1e-30", "1e300", "-0.0", "0.1", "inf", "-inf", "nan", "1e-46"]
FLOAT_TEXTS += ["3.4028235e38", "3.5e38", "1_0.5", "5e-324", "-1E+2", ".5"]
INT_TEXTS = [str(2**63 - 1), str(-(2**63)), str(2**63), str(-(2**63) - 1), "1_000", "-0"]
STRING_TEXTS = ['a"b', "back\\slash", "\u00e9\U0001f600", "tab\there", "\udcff", "x\u2028y", ""]
VALUE_KINDS = ["bool", "int", "float", "string", "ints", "floats", "strings"]


def _scalar_text(kind: str) -> st.SearchStrategy[str]:
    if kind == "bool":
        return st.sampled_from(["true", "false", "1", "0", "True", "yes"])
    if kind == "int":
        return st.one_of(st.sampled_from(INT_TEXTS), st.integers(-(2**64), 2**64).map(str))
    if kind == "float":
        floats = st.floats(allow_nan=True, allow_infinity=True)
        return st.one_of(
            st.sampled_from(FLOAT_TEXTS),
            floats.map(repr),
            floats.map(lambda v: f"{v:e}"),
            floats.map(lambda v: f"{v:g}"),
        )
    return st.one_of(st.sampled_from(STRING_TEXTS), st.text(max_size=8))


@st.composite
def _attribute(draw: st.DrawFn, name: str) -> str:
    kind = draw(st.sampled_from([*VALUE_KINDS, "tensor(float16)", "tensor(int32)"]))
    mode = draw(st.sampled_from(["required", "default", "optional"]))
    if mode == "required":
        return f"{name}:{kind}"
    if mode == "optional":
        return f"{name}:{kind}?"
    if kind.startswith("tensor"):
        return f"{name}:{kind}=1"  # refused: a tensor attribute takes no default
    if kind.endswith("s") and kind != "bool":
        items = draw(st.lists(_scalar_text(kind[:-1]), max_size=3))
        return f"{name}:{kind}={','.join(items)}"
    return f"{name}:{kind}={draw(_scalar_text(kind))}"


@st.composite
def _configuration(draw: st.DrawFn) -> str:
    package = draw(st.sampled_from(PACKAGES))
    api = draw(st.sampled_from(list(TorchApi.__members__)))
    return f'package = "{package}"\ntorch-api = "{api}"\n'


@st.composite
def _new_flags(draw: st.DrawFn) -> list[str]:
    flags = [draw(st.sampled_from(["RmsNorm", "MyScale", "Name", "Op_", "List"])), "-q"]
    names = draw(st.lists(st.sampled_from(["eps", "alpha", "n", "mode", "dtype"]), unique=True))
    for name in names:
        flags += ["--attribute", draw(_attribute(name))]
    inputs, outputs = draw(
        st.sampled_from([("X", "Y"), ("X,W", "Y,Z"), ("X,W*", "Y"), ("A,X*", "Z,Y*"), ("X*", "Y")])
    )
    flags += ["--inputs", inputs, "--outputs", outputs]
    dtypes = ["float32,float64", "int64,float32", "string", "float16,bool", "int4", "complex64"]
    flags += ["--dtypes", draw(st.sampled_from(dtypes))]
    if draw(st.booleans()):
        flags += ["--dtype-attribute", draw(st.sampled_from(["to=float16,int32", "to=bool"]))]
    flags += draw(st.sampled_from([[], ["--no-torch"], ["--domain", "my.ops"]]))
    return flags


def _written(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if ".git" not in p.parts}


def _expected_default(spec: str) -> object:
    """The value an accepted --attribute NAME:float=TEXT (or floats) must read back as."""
    kind, _, text = spec.partition(":")[2].partition("=")
    if kind == "float":
        return float(text)
    return tuple(float(t) for t in text.split(",")) if text else ()


def _run_in(root: Path, config: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Runs `opgen <argv>` in a fresh repository `root` configured by `config`, and checks the
    property: 0 and a project that passes --check, or 2, an error and nothing written."""
    (root / ".git").mkdir()
    (root / "opgen.toml").write_text(config)
    before = _written(root)
    capsys.readouterr()
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status in (0, 2), (argv, config, err)
    if status == 2:
        assert "error: " in err, (argv, config)
        assert _written(root) == before, (argv, config, err)
        return
    assert cli.main(["--check", "-q"]) == 0, (argv, config, capsys.readouterr().err)
    if argv[0] != "new":
        return
    (definition,) = (root / "opdefs").glob("*.yaml")
    op = parse_opdef(definition, definition.name)
    defaults = {a.name: a.default for a in op.attributes}
    for spec in [argv[i + 1] for i, flag in enumerate(argv) if flag == "--attribute"]:
        name, _, rest = spec.partition(":")
        if rest.startswith(("float=", "floats=")):
            expected, read = _expected_default(spec), defaults[name]
            assert read == expected or (read, expected) == ((), ()), (spec, read)
            if isinstance(expected, float):
                assert math.copysign(1, read) == math.copysign(1, expected), spec


@settings(
    derandomize=not os.environ.get("OPGEN_EXPLORE"),  # CI replays the same examples
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(config=_configuration(), flags=_new_flags())
def test_new_writes_what_passes_the_checks_or_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: str,
    flags: list[str],
) -> None:
    root = tmp_path_factory.mktemp("new")
    monkeypatch.chdir(root)
    _run_in(root, config, ["new", *flags], capsys)


IMPORTED = [
    "LRN",
    "AveragePool",
    "Cast",
    "com.microsoft::Attention",
    "ai.onnx.ml::LinearClassifier",
]


@settings(
    derandomize=not os.environ.get("OPGEN_EXPLORE"),  # CI replays the same examples
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    config=_configuration(),
    op=st.sampled_from(IMPORTED),
    domain=st.sampled_from([[], ["--domain", "my.ops"], ["--domain", "Bad"]]),
)
def test_import_writes_what_passes_the_checks_or_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: str,
    op: str,
    domain: list[str],
) -> None:
    root = tmp_path_factory.mktemp("import")
    monkeypatch.chdir(root)
    _run_in(root, config, ["import", op, "-q", *domain], capsys)


def _representable(kind: str, text: str) -> bool:
    """Whether a definition can hold the value the flag's text gives (the format's rules, said
    independently of opgen's code): a finite float32 that is not rounded to zero, an int64, a
    bool, a string of Unicode text without NUL."""
    if kind.endswith("s"):
        return all(_representable(kind[:-1], t) for t in text.split(",")) if text else True
    try:
        if kind == "bool":
            return text.lower() in ("true", "false", "1", "0")
        if kind == "int":
            return -(2**63) <= int(text) < 2**63
        if kind == "float":
            value = float(text)
            single = struct.unpack("f", struct.pack("f", value))[0]
            return math.isfinite(single) and (value == 0 or single != 0)
    except (ValueError, OverflowError):
        return False
    # Unicode text without NUL (which no command-line argument holds either)
    return "\0" not in text and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@st.composite
def _valued_attribute(draw: st.DrawFn, name: str) -> tuple[str, bool, bool]:
    """(--attribute spec, whether its value is representable, whether it has a default or is
    optional)."""
    kind = draw(st.sampled_from(VALUE_KINDS))
    mode = draw(st.sampled_from(["required", "default", "optional"]))
    if mode != "default":
        return f"{name}:{kind}" + ("?" if mode == "optional" else ""), True, mode == "optional"
    if kind.endswith("s"):
        text = ",".join(draw(st.lists(_scalar_text(kind[:-1]), max_size=3)))
    else:
        text = draw(_scalar_text(kind))
    return f"{name}:{kind}={text}", _representable(kind, text), True


@settings(
    derandomize=not os.environ.get("OPGEN_EXPLORE"),  # CI replays the same examples
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    config=_configuration(),
    attributes=st.lists(_valued_attribute("a"), max_size=1).flatmap(
        lambda first: st.tuples(st.just(first), st.lists(_valued_attribute("b"), max_size=1))
    ),
    chooser=st.booleans(),
    no_torch=st.booleans(),
)
def test_new_accepts_every_value_a_definition_holds_in_every_configuration(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: str,
    attributes: tuple[list[tuple[str, bool, bool]], list[tuple[str, bool, bool]]],
    chooser: bool,
    no_torch: bool,
) -> None:
    """Accepted exactly when every value is representable and the configured torch-api can
    register the op (legacy: no default argument); a refusal names the flag."""
    specs = [*attributes[0], *attributes[1]]
    flags = ["RmsNorm", "-q", *(f for spec, _, _ in specs for f in ("--attribute", spec))]
    flags += ["--dtype-attribute", "to=float16,int32"] if chooser else []
    flags += ["--no-torch"] if no_torch else []
    legacy = 'torch-api = "legacy"' in config and not no_torch
    defaulted = chooser or any(has_default for _, _, has_default in specs)
    accepted = all(ok for _, ok, _ in specs) and not (legacy and defaulted)
    root = tmp_path_factory.mktemp("value")
    monkeypatch.chdir(root)
    (root / ".git").mkdir()
    (root / "opgen.toml").write_text(config)
    status = cli.main(["new", *flags])
    err = capsys.readouterr().err
    assert status == (0 if accepted else 2), (flags, config, err)
    if not accepted:
        assert err.startswith(("error: --attribute", "error: --dtype-attribute")), err
        assert list(root.iterdir()) == [root / ".git", root / "opgen.toml"] or sorted(
            root.iterdir()
        ) == sorted([root / ".git", root / "opgen.toml"])
    else:
        assert cli.main(["--check", "-q"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("spec", ["b:string=\udcff", "b:strings=a,\udcff", "\udcff:int=1"])
def test_a_flag_that_is_no_utf8_is_refused_in_words_any_stream_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    """A byte of argv that is not UTF-8 reaches Python as a lone surrogate: the refusal quotes
    the flag escaped (hypothesis found the message itself failing to print under capture)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "opgen.toml").write_text('package = "generated"\n')
    capsys.readouterr()
    assert cli.main(["new", "MyOp", "--attribute", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --attribute ") and "\\udcff" in err, err
    assert _written(tmp_path) == {tmp_path / "opgen.toml"}
