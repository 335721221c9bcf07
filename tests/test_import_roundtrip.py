"""`opgen import` of every schema ONNX and ONNX Runtime register (ONNX's operators and ONNX
Runtime's com.microsoft contrib operators), generated, gives back the same schema field by
field: the test of the operator model."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator import importer
from generator.model.names import ONNX_DOMAINS
from generator.scaffold import import_stem

ROOT = Path(__file__).resolve().parent.parent

# Where an ONNX domain's ops go (a custom domain; ONNX's own cannot be served by a library).
USER_DOMAINS = {
    "": "roundtrip.onnx",
    "ai.onnx": "roundtrip.onnx",
    "ai.onnx.ml": "roundtrip.onnx.ml",
    "ai.onnx.preview": "roundtrip.onnx.preview",
    "ai.onnx.preview.training": "roundtrip.onnx.preview.training",
}

# Run in a process of its own (the generated package's modules), it prints the differences.
COMPARE = """
import importlib, json, sys
from generator import importer
originals = {(r.domain, r.name): r for r in importer.all_schemas()}
failures = {}
for stem, (domain, name, target) in json.loads(sys.argv[1]).items():
    module = importlib.import_module(f"roundtrip.{stem}.onnx_schema")
    generated = importer.record_from_onnx(module.SCHEMA)
    problems = importer.differences(originals[domain, name], generated, domain=target)
    if problems:
        failures[f"{domain or 'ai.onnx'}::{name}"] = problems
print(json.dumps(failures))
"""


def _project(tmp_path: Path, records) -> dict[str, tuple[importer.SchemaRecord, str]]:
    """Writes each record's definition into one project; returns stem -> (record, domain)."""
    opdefs = tmp_path / "opdefs"
    opdefs.mkdir()
    (tmp_path / "opgen.toml").write_text('definitions = "opdefs"\npackage = "roundtrip"\n')
    (tmp_path / ".git").mkdir()
    stems: dict[str, tuple[importer.SchemaRecord, str]] = {}
    for record in records:
        domain = USER_DOMAINS.get(record.domain, record.domain)
        stem = import_stem(record.name)
        if stem in stems:
            stem = f"{stem}_{domain.replace('.', '_')}"
        stems[stem] = (record, domain)
        text = importer.definition_text(record, domain=domain, stem=stem, provided_by=False)
        (opdefs / f"{stem}.yaml").write_text(text, encoding="utf-8")
    return stems


def test_every_registered_schema_round_trips(tmp_path):
    records = importer.all_schemas()
    onnx_count = sum(r.domain in ONNX_DOMAINS for r in records)
    assert onnx_count == 227 and len(records) - onnx_count == 136, (onnx_count, len(records))
    stems = _project(tmp_path, records)
    generated = subprocess.run(
        [sys.executable, "-m", "generator", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert generated.returncode == 0, generated.stderr[-4000:]
    wanted = {stem: (r.domain, r.name, domain) for stem, (r, domain) in stems.items()}
    compared = subprocess.run(
        [sys.executable, "-c", COMPARE, json.dumps(wanted)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )
    assert compared.returncode == 0, compared.stderr[-4000:]
    failures = json.loads(compared.stdout)
    print(f"{len(stems) - len(failures)} of {len(stems)} schemas round-trip")
    assert not failures, json.dumps(failures, indent=1)[:6000]


@pytest.mark.parametrize("op", ["com.microsoft::Attention", "Cast", "ai.onnx.ml::LinearClassifier"])
def test_import_writes_a_definition_that_generates(tmp_path, run_generator, op):
    (tmp_path / ".git").mkdir()
    result = run_generator("import", op, "--package", "myops", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    stem = importer.stem_for(op.rpartition("::")[2])
    definition = (tmp_path / "opdefs" / f"{stem}.yaml").read_text()
    assert "# TODO: " in definition
    assert (tmp_path / "myops" / stem / "onnx_schema.py").is_file()
    expected_domain = "com.microsoft" if op.startswith("com.") else "myops"
    assert f"domain: {expected_domain}\n" in definition
    again = run_generator("import", op, cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert (tmp_path / "opdefs" / f"{stem}.yaml").read_text() == definition


def test_import_of_an_unknown_op_names_the_close_ones_and_writes_nothing(tmp_path, run_generator):
    (tmp_path / ".git").mkdir()
    result = run_generator("import", "com.microsoft::Attenton", cwd=tmp_path)
    assert result.returncode == 2
    assert "Attention" in result.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / ".git"]


def test_import_touches_none_of_the_users_files(tmp_path, run_generator):
    """In a repository full of the user's own files, import writes its definition and the
    generated package's files, and changes nothing else."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "opgen.toml").write_text('definitions = "opdefs"\npackage = "myops"\n')
    mine = {
        "README.md": "mine\n",
        "opdefs/notes.txt": "x\n",
        "myops/extra.py": "# my module\n",
        "myops/sub/data.bin": "data\n",
    }
    for name, text in mine.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "myops" / "link").symlink_to(tmp_path / "README.md")
    before = {p for p in tmp_path.rglob("*") if ".git" not in p.parts}
    result = run_generator("import", "com.microsoft::Attention", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for name, text in mine.items():
        assert (tmp_path / name).read_text() == text
    assert (tmp_path / "myops" / "link").readlink() == tmp_path / "README.md"
    added = {p for p in tmp_path.rglob("*") if ".git" not in p.parts} - before
    assert tmp_path / "opdefs" / "attention.yaml" in added
    for path in added - {tmp_path / "opdefs" / "attention.yaml"}:
        relative = path.relative_to(tmp_path)
        assert relative.parts[0] == "myops", relative
        assert path.is_dir() or path.read_text().startswith(
            ("# Generated by opgen", "// Generated by opgen", "<!-- Generated by opgen")
        ), relative


# What an imported definition leaves to its author (its TODO comments say so), and what a
# schema's own names can make impossible for a kernel (a name that generated code takes).
_LEFT_TODO = (
    "missing required field 'reference'",
    "missing required field 'tests'",
    "an output needs a shape rule",
    "an op needs at least one input",  # Constant: an interface-only op alone may have none
)


def test_every_imported_definition_validates_once_a_kernel_is_added(tmp_path):
    """Each importable schema's definition, given a kernel (as its TODO says), is refused for
    what its TODO comments name or for a name of the schema, never for what the importer chose
    (the order of its attributes: required ones first, as a PyTorch signature wants)."""
    from generator.errors import DefinitionErrors
    from generator.model.onnxruntime_domains import onnxruntime_owns
    from generator.parse.op import parse_opdef

    def errors_with_a_kernel(record: importer.SchemaRecord, domain: str) -> list:
        stem = import_stem(record.name)
        text = importer.definition_text(record, domain=domain, stem=stem, provided_by=False)
        definition = tmp_path / f"{stem}.yaml"
        definition.write_text(text + f"kernel: {{source: {stem}_kernel.h}}\n", encoding="utf-8")
        (tmp_path / f"{stem}_kernel.h").write_text("")
        try:
            parse_opdef(definition, definition.name)
        except DefinitionErrors as refused:
            return refused.errors
        return []

    unexpected, taken_over = {}, []
    for record in importer.all_schemas():
        owned = onnxruntime_owns(record.domain)
        if owned:  # ONNX Runtime's op: a kernel there is refused, one of one's own domain is not
            refusals = errors_with_a_kernel(record, record.domain)
            if not any(
                e.field == "kernel" and "ONNX Runtime's domain" in e.message for e in refusals
            ):
                taken_over.append(f"{record.domain}::{record.name}")
        domain = f"roundtrip.{record.domain}" if owned else USER_DOMAINS[record.domain]
        left = [
            str(e)
            for e in errors_with_a_kernel(record, domain)
            if not any(todo in e.message for todo in _LEFT_TODO)
            and ".name: " not in str(e)
            and "is reserved" not in str(e)  # a type variable's name (F)
        ]
        if left:
            unexpected[f"{record.domain}::{record.name}"] = left
    assert not taken_over, taken_over
    assert not unexpected, json.dumps(unexpected, indent=1)[:4000]
