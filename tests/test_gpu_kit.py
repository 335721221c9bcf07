"""tests/gpu_kit.py, the way onnxruntime-gpu reaches a GPU machine without a registry: an archive
in parts carried one per command, each checked, joined and unpacked only once all are there.
Small real archives here; `./dev gpu-kit` makes the real one."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_kit  # noqa: E402

FILES = {
    "pkg/__init__.py": (b"VERSION = 1\n", 0o644),
    "pkg/capi/libbig.so": (os.urandom(5000), 0o755),
    "pkg-1.0.dist-info/RECORD": (b"pkg/__init__.py,,\n", 0o644),
}


def make_kit(folder: Path, part_bytes: int = 1500, files=FILES) -> gpu_kit.Manifest:
    """A wheel of `files` repacked and split as `make` does, into folder/kit."""
    wheel = folder / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 5, 6, 7, 8, 10))
            info.external_attr = (stat.S_IFREG | mode) << 16
            archive.writestr(info, data)
    tarball = folder / "pkg-1.0.tar.xz"
    gpu_kit.repack(wheel, tarball)
    kit = folder / "kit"
    shutil.rmtree(kit, ignore_errors=True)
    kit.mkdir()
    manifest = gpu_kit.split(tarball, kit, part_bytes)
    assert len(manifest.parts) >= 3, "the test needs several parts"
    return manifest


def carrying(folder: Path, name: str, *parts: str) -> Path:
    """A command's copy of the tree's .gpu-kit: the manifest and only the parts it carries."""
    kit = folder / name / ".gpu-kit"
    kit.mkdir(parents=True)
    (kit / gpu_kit.MANIFEST).write_bytes((folder / "kit" / gpu_kit.MANIFEST).read_bytes())
    for part in parts:
        (kit / part).write_bytes((folder / "kit" / part).read_bytes())
    return kit


def test_parts_carried_one_per_command_are_unpacked_once_all_are_there(tmp_path, capsys):
    manifest = make_kit(tmp_path)
    stage = tmp_path / "stage"
    names = [part.name for part in manifest.parts]
    for number, name in enumerate(names):
        status = gpu_kit.stage_kit(carrying(tmp_path, f"call{number}", name), stage, build=False)
        out = capsys.readouterr().out
        if number < len(names) - 1:
            assert status == 1
            assert f"{len(names) - number - 1} of {len(names)} parts still to carry" in out
            assert not (stage / "site").exists()
        else:
            assert status == 0, out
            assert "installed in" in out
    for name, (data, mode) in FILES.items():
        unpacked = stage / "site" / name
        assert unpacked.read_bytes() == data
        assert stat.S_IMODE(unpacked.stat().st_mode) & 0o111 == mode & 0o111
        assert unpacked.stat().st_mtime == 1714979290  # the wheel's date, in UTC
    # A later command carrying nothing finds everything there, and unpacks nothing again.
    mtime = (stage / "site" / "pkg" / "__init__.py").stat().st_mtime_ns
    assert gpu_kit.stage_kit(carrying(tmp_path, "later"), stage, build=False) == 0
    assert (stage / "site" / "pkg" / "__init__.py").stat().st_mtime_ns == mtime


def test_a_damaged_part_is_named_and_not_kept(tmp_path, capsys):
    manifest = make_kit(tmp_path)
    first = manifest.parts[0].name
    kit = carrying(tmp_path, "call", *(part.name for part in manifest.parts))
    damaged = bytearray((kit / first).read_bytes())
    damaged[100] ^= 1
    (kit / first).write_bytes(bytes(damaged))
    assert gpu_kit.stage_kit(kit, tmp_path / "stage", build=False) == 1
    out = capsys.readouterr().out
    assert f"{first}: carried, but its SHA-256 is" in out and "make the kit again" in out
    assert not (tmp_path / "stage" / "kit" / manifest.parts[0].sha256).exists()
    assert not (tmp_path / "stage" / "site").exists()


def test_parts_that_do_not_join_to_the_archive_install_nothing(tmp_path):
    make_kit(tmp_path)
    manifest_file = tmp_path / "kit" / gpu_kit.MANIFEST
    manifest = gpu_kit.Manifest.read(manifest_file)
    gpu_kit.Manifest(manifest.archive, "0" * 64, manifest.parts).write(manifest_file)
    kit = carrying(tmp_path, "call", *(part.name for part in manifest.parts))
    with pytest.raises(SystemExit, match="do not give pkg-1.0.tar.xz"):
        gpu_kit.stage_kit(kit, tmp_path / "stage", build=False)
    assert [p.name for p in (tmp_path / "stage").iterdir() if p.name.startswith("site")] == []


def test_a_command_without_the_kit_says_how_to_make_it(tmp_path):
    with pytest.raises(SystemExit, match=r"run `./dev gpu-kit` where a registry is"):
        gpu_kit.stage_kit(tmp_path / "tree" / ".gpu-kit", tmp_path / "stage", build=False)


def test_the_first_command_copies_the_tree_and_starts_the_build_in_a_session_of_its_own(tmp_path):
    tree = tmp_path / "tree"
    (tree / "generator").mkdir(parents=True)
    (tree / "generator" / "build.py").write_text("# a source file named like a build folder\n")
    (tree / "build").mkdir()
    (tree / "build" / "big.so").write_text("a build output\n")
    (tree / ".gpu-kit").mkdir()
    (tree / ".gpu-kit" / "x.tar.xz.part-01").write_text("a part\n")
    stage = tmp_path / "stage"
    assert "started" in gpu_kit.start_build(tree, stage)
    work = stage / "work"
    assert (work / "generator" / "build.py").is_file()
    assert not (work / "build").exists() and not (work / ".gpu-kit" / "x.tar.xz.part-01").exists()
    # The build (the generator in a tree that is no project) ends on its own and says how.
    deadline = time.monotonic() + 120
    while not (work / "build-gpu.rc").is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (work / "build-gpu.rc").read_text().strip() == "2"
    assert "CMakeLists.txt not found" in (stage / "build.log").read_text()
    assert "finished with exit status 2" in gpu_kit.start_build(tree, stage)
    # A file changed in the tree since: copied (alone), and the build started again.
    (tree / "generator" / "build.py").write_text("# changed\n")
    assert "started, 1 files copied" in gpu_kit.start_build(tree, stage)
    assert (work / "generator" / "build.py").read_text() == "# changed\n"


def test_links_and_special_files_in_the_tree_are_copied_as_they_are_or_left_out(tmp_path):
    """A dangling link once killed `./dev gpu-stage` with a traceback (the copy followed it):
    links are copied as links (dangling, to a file, to a folder), never followed; a FIFO, which
    a copy would block reading, is left out; the next sync changes only what changed."""
    tree = tmp_path / "tree"
    (tree / "docs").mkdir(parents=True)
    (tree / "docs" / "page.md").write_text("a page\n")
    (tree / "dangling").symlink_to("no/such/file")
    (tree / "to-file").symlink_to("docs/page.md")
    (tree / "to-folder").symlink_to("docs")
    (tree / "loop").symlink_to("loop")
    os.mkfifo(tree / "docs" / "fifo")
    work = tmp_path / "work"
    assert gpu_kit._sync(tree, work) == 5
    for link in ("dangling", "to-file", "to-folder", "loop"):
        assert (work / link).is_symlink()
        assert os.readlink(work / link) == os.readlink(tree / link)
    assert (work / "docs" / "page.md").read_text() == "a page\n"
    assert not (work / "docs" / "fifo").exists()
    assert gpu_kit._sync(tree, work) == 0
    (tree / "dangling").unlink()
    (tree / "dangling").symlink_to("docs")
    (tree / "loop").unlink()
    assert gpu_kit._sync(tree, work) == 2
    assert os.readlink(work / "dangling") == "docs" and not (work / "loop").is_symlink()
    # A link turned into a folder is never written through, and back; a folder into a file.
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "data").symlink_to(outside)
    assert gpu_kit._sync(tree, work) == 1
    (tree / "data").unlink()
    (tree / "data").mkdir()
    (tree / "data" / "x.txt").write_text("x\n")
    gpu_kit._sync(tree, work)
    assert (work / "data" / "x.txt").read_text() == "x\n" and not (work / "data").is_symlink()
    assert list(outside.iterdir()) == []
    shutil.rmtree(tree / "data")
    (tree / "data").symlink_to("docs")
    gpu_kit._sync(tree, work)
    assert os.readlink(work / "data") == "docs"
    (tree / "data").unlink()
    (tree / "data").write_text("a file now\n")
    gpu_kit._sync(tree, work)
    assert (work / "data").read_text() == "a file now\n"
    (tree / "data").unlink()
    (tree / "data").mkdir()
    (tree / "data" / "y.txt").write_text("y\n")
    gpu_kit._sync(tree, work)
    assert (work / "data" / "y.txt").read_text() == "y\n"
    assert gpu_kit._sync(tree, work) == 0


def test_a_stage_folder_inside_the_tree_is_refused(tmp_path):
    (tmp_path / ".gpu-kit").mkdir()
    with pytest.raises(SystemExit, match="is inside the tree"):
        gpu_kit.stage_kit(tmp_path / ".gpu-kit", tmp_path / "stage")
    assert not (tmp_path / "stage").exists()


def test_a_stage_folder_of_someone_elses_files_is_refused_and_left_alone(tmp_path):
    manifest = make_kit(tmp_path)
    kit = carrying(tmp_path, "call", *(part.name for part in manifest.parts))
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (home / "work" / "thesis.tex").write_text("mine\n")
    (home / "site").mkdir()
    with pytest.raises(SystemExit, match="is not one `./dev gpu-stage` made, nor empty"):
        gpu_kit.stage_kit(kit, home)
    assert (home / "work" / "thesis.tex").read_text() == "mine\n"
    assert sorted(p.name for p in home.iterdir()) == ["site", "work"]


def test_two_commands_staging_at_once_install_once_and_whole(tmp_path, capsys):
    files = {f"pkg/file{i}.py": (os.urandom(300), 0o644) for i in range(60)}
    manifest = make_kit(tmp_path, 4000, files)
    kit = carrying(tmp_path, "call", *(part.name for part in manifest.parts))
    stage = tmp_path / "stage"
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(gpu_kit.stage_kit(kit, stage, build=False)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [0, 0, 0]
    assert sorted(p.name for p in (stage / "site" / "pkg").iterdir()) == sorted(
        Path(name).name for name in files
    )
    assert capsys.readouterr().out.count("installed in") == 3
    assert [p.name for p in stage.iterdir() if p.name.startswith("site")] == ["site"]


def test_another_kit_replaces_the_installed_one(tmp_path):
    make_kit(tmp_path, files={"pkg/old_only.py": (b"", 0o644), **FILES})
    stage = tmp_path / "stage"
    kit = carrying(
        tmp_path,
        "first",
        *(p.name for p in gpu_kit.Manifest.read(tmp_path / "kit" / gpu_kit.MANIFEST).parts),
    )
    assert gpu_kit.stage_kit(kit, stage, build=False) == 0
    manifest = make_kit(tmp_path, files={**FILES, "pkg/__init__.py": (b"VERSION = 2\n", 0o644)})
    kit = carrying(tmp_path, "second", *(p.name for p in manifest.parts))
    assert gpu_kit.stage_kit(kit, stage, build=False) == 0
    assert (stage / "site" / "pkg" / "__init__.py").read_bytes() == b"VERSION = 2\n"
    assert not (stage / "site" / "pkg" / "old_only.py").exists()


@pytest.mark.parametrize("damage", ["reordered", "not json", "no sha256", "no parts", "a path"])
def test_a_damaged_manifest_says_make_the_kit_again(tmp_path, damage):
    manifest = make_kit(tmp_path)
    path = tmp_path / "kit" / gpu_kit.MANIFEST
    data = json.loads(path.read_text())
    if damage == "reordered":
        data["parts"].reverse()
    elif damage == "no sha256":
        del data["sha256"]
    elif damage == "no parts":
        data["parts"] = []
    elif damage == "a path":
        data["parts"][0]["name"] = "../" + data["parts"][0]["name"]
    path.write_text("{" if damage == "not json" else json.dumps(data))
    kit = carrying(tmp_path, "call", *(part.name for part in manifest.parts))
    with pytest.raises(SystemExit, match="make the kit again"):
        gpu_kit.stage_kit(kit, tmp_path / "stage", build=False)
    assert not (tmp_path / "stage" / "site").exists()
    assert [p.name for p in (tmp_path / "stage").iterdir() if p.name.startswith("site")] == []
