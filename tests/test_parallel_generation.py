"""A project with many definitions parses, renders, compares and writes them in forked worker
processes (generator/parallel.py). The result must be what one process makes, byte for byte, and
a bad definition must still be reported with its file, line and field."""

import dataclasses
import os
from collections import Counter
from pathlib import Path

import pytest

from generator import parallel
from generator import project as proj
from generator.errors import DefinitionErrors

ROOT = Path(__file__).resolve().parent.parent
COUNT = 2 * proj._MIN_OPS_PER_WORKER + 3  # enough for two workers


@pytest.fixture
def project(tmp_path) -> proj.Project:
    """COUNT copies of CustomOpOne under other names, in one domain."""
    text = (ROOT / "opdefs" / "custom_op_one.yaml").read_text(encoding="utf-8")
    (tmp_path / "opdefs").mkdir()
    for index in range(COUNT):
        (tmp_path / "opdefs" / f"op_{index:02d}.yaml").write_text(
            text.replace("op: CustomOpOne", f"op: Op{index:02d}")
            .replace("test_customop::custom_op_one", f"many::op_{index:02d}")
            .replace("domain: test.customop", "domain: many")
            # (the CUDA kernel's namespace is the op's)
            .replace("  cuda: custom_op_one_kernel.cuh\n", ""),
            encoding="utf-8",
        )
    return proj.Project(tmp_path, tmp_path / "opdefs", tmp_path / "generated")


def plan(project: proj.Project) -> tuple[list[str], list[tuple]]:
    ops = proj.load(project, proj.discover(project))
    output = proj.generate(project, ops, ops, write=False)
    return output.paths, [(c.path, c.kind, c.old, c.new) for c in output.changes]


def written(project: proj.Project) -> dict[str, bytes]:
    ops = proj.load(project, proj.discover(project))
    output = proj.generate(project, ops, ops, write=True)
    tree = {
        p.relative_to(project.output_dir).as_posix(): p.read_bytes()
        for p in project.output_dir.rglob("*")
        if p.is_file()
    }
    assert sorted(tree) == sorted(output.paths)  # every file written, no temporary one left
    assert [c.kind for c in output.changes] == ["new"] * len(tree)
    return tree


def test_forked_generation_matches_one_process(project, monkeypatch):
    assert len(os.sched_getaffinity(0)) >= 2, "forking needs at least two usable cores"
    assert parallel.worker_count(COUNT, proj._MIN_OPS_PER_WORKER) == 2
    # One op's files already on disk, one of them edited: the workers compare with the disk.
    project.output_dir.mkdir()
    first_paths, first_changes = plan(project)
    for path, _, _, new in first_changes:
        if path.parent.name == "op_05":
            path.parent.mkdir(exist_ok=True)
            path.write_text(new, encoding="utf-8")
    edited = project.output_dir / "op_05" / "torch_op.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")

    forked = plan(project)
    monkeypatch.setattr(parallel, "worker_count", lambda items, min_items_per_worker: 1)
    alone = plan(project)
    assert forked == alone
    paths, changes = forked
    assert paths == first_paths
    assert len(paths) == len(set(paths))
    assert {f"op_{index:02d}/torch_op.py" for index in range(COUNT)} <= set(paths)
    assert "docs/index.md" in paths
    kinds = {path.relative_to(project.output_dir).as_posix(): kind for path, kind, _, _ in changes}
    assert kinds["op_05/torch_op.py"] == "changed"
    assert "op_05/op_05_op.h" in paths and "op_05/op_05_op.h" not in kinds  # written above
    assert kinds["op_06/torch_op.py"] == "new"
    assert len(kinds) == len(paths) - sum(1 for p in paths if p.startswith("op_05/")) + 1


def test_forked_writing_matches_one_process(project, monkeypatch):
    assert parallel.worker_count(COUNT, proj._MIN_OPS_PER_WORKER) == 2
    forked = written(project)
    monkeypatch.setattr(parallel, "worker_count", lambda items, min_items_per_worker: 1)
    alone = written(dataclasses.replace(project, output_dir=project.root / "generated-alone"))
    assert forked == alone
    per_directory = Counter(path.split("/")[0] for path in forked)
    assert per_directory["op_00"] >= 10
    assert all(per_directory[f"op_{i:02d}"] == per_directory["op_00"] for i in range(COUNT))
    assert per_directory["docs"] == COUNT + 1  # a page per op and the index


def test_forked_parsing_reports_file_line_and_field(project):
    bad = project.opdefs_dir / "op_07.yaml"
    lines = bad.read_text(encoding="utf-8").splitlines()
    line = lines.index("version: 1") + 1
    bad.write_text("\n".join(lines).replace("version: 1", "version: one") + "\n", encoding="utf-8")
    assert parallel.worker_count(COUNT, proj._MIN_OPS_PER_WORKER) == 2
    with pytest.raises(DefinitionErrors) as raised:
        proj.load(project, proj.discover(project))
    (error,) = raised.value.errors
    assert (error.location.file, error.location.line, error.field) == (
        "opdefs/op_07.yaml",
        line,
        "version",
    )
