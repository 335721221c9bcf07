"""What a GPU machine without a registry lacks, carried there in parts, and set up there.

The GPU machine (Python 3.12, torch built for CUDA) has no registry, and one command may carry
at most 64 MiB. onnxruntime-gpu, whose CUDA provider the ONNX Runtime half of `./dev test-gpu`
needs, is a 256 MB wheel: repacked here as one xz archive in parts that each fit one command.

Here, where a registry is (`./dev gpu-kit`):
    python tests/gpu_kit.py make .gpu-kit
There, in each command that carries .gpu-kit/ with one or more parts (`./dev gpu-stage`):
    python3 tests/gpu_kit.py stage .gpu-kit /tmp/opgen-gpu [--wait]
Each such command keeps the parts it carries in <stage>/kit, checked against their SHA-256,
brings the working tree's changes into <stage>/work and starts the CUDA build there in the
background when it needs one (a session of its own, so it outlives the command); once every
part is there, the archive is unpacked into <stage>/site (for PYTHONPATH). Each run says what
is there and what is missing, and exits 1 while anything is."""

from __future__ import annotations

import fcntl
import filecmp
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

ORT_GPU = "onnxruntime-gpu==1.31.1"  # built for CUDA 13, as the GPU machine's torch
PART_BYTES = 55_000_000  # a part and the working tree (about 8 MB) fit in one 64 MiB command
MANIFEST = "ort-gpu.json"
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
PLATFORM = [
    "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux2014_x86_64",
]  # fmt: skip


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def repack(wheel: Path, archive: Path) -> None:
    """The wheel's files (a site-packages layout) as a tar.xz, their modes kept: zip's deflate
    leaves the CUDA provider at 200 MB more than xz does."""
    with zipfile.ZipFile(wheel) as source, tarfile.open(archive, "w:xz", preset=9) as target:
        for entry in source.infolist():
            if entry.is_dir():
                continue
            info = tarfile.TarInfo(entry.filename)
            info.size = entry.file_size
            info.mode = (entry.external_attr >> 16) & 0o777 or 0o644
            info.mtime = int(datetime(*entry.date_time, tzinfo=UTC).timestamp())
            with source.open(entry) as data:
                target.addfile(info, data)


@dataclass(frozen=True)
class Part:
    name: str
    sha256: str


@dataclass(frozen=True)
class Manifest:
    archive: str
    sha256: str  # of the whole archive, the parts joined
    parts: tuple[Part, ...]

    @staticmethod
    def read(path: Path) -> Manifest:
        """The manifest, or SystemExit saying what is wrong with it: names are plain file names,
        digests SHA-256, one part at least."""
        try:
            data = json.loads(path.read_text())
            manifest = Manifest(
                str(data["archive"]),
                str(data["sha256"]),
                tuple(Part(str(p["name"]), str(p["sha256"])) for p in data["parts"]),
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{path}: not a kit manifest ({error}): make the kit again") from None
        names = [manifest.archive, *(part.name for part in manifest.parts)]
        digests = [manifest.sha256, *(part.sha256 for part in manifest.parts)]
        if (
            not manifest.parts
            or not all(_FILE_NAME.fullmatch(name) for name in names)
            or not all(_SHA256.fullmatch(digest) for digest in digests)
            or len(set(names)) != len(names)
        ):
            raise SystemExit(
                f"{path}: not a kit manifest (names, digests or parts): make the kit again"
            )
        return manifest

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")


def split(archive: Path, folder: Path, part_bytes: int = PART_BYTES) -> Manifest:
    """The archive cut into <name>.part-NN files of at most part_bytes, and their manifest."""
    parts = []
    with archive.open("rb") as source:
        for number in range(1, 100):
            data = source.read(part_bytes)
            if not data:
                break
            name = f"{archive.name}.part-{number:02d}"
            (folder / name).write_bytes(data)
            parts.append(Part(name, hashlib.sha256(data).hexdigest()))
        else:
            raise SystemExit(f"{archive} needs more than 99 parts of {part_bytes} bytes")
    manifest = Manifest(archive.name, sha256_of(archive), tuple(parts))
    manifest.write(folder / MANIFEST)
    return manifest


def make(kit: Path) -> int:
    """Everything in a fresh `kit` folder: the ONNX Runtime headers, and onnxruntime-gpu's
    archive in parts with their manifest."""
    final, kit = kit, kit.with_name(kit.name + ".partial")  # the old kit stays until it is whole
    shutil.rmtree(kit, ignore_errors=True)
    kit.mkdir(parents=True)
    headers = subprocess.run(
        [sys.executable, "-m", "generator", "headers"], check=True, capture_output=True, text=True
    ).stdout.strip()
    shutil.copytree(headers, kit / "ort-headers")
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *PLATFORM]
    with tempfile.TemporaryDirectory() as temp:
        subprocess.run([*pip, "-d", temp, ORT_GPU], check=True)
        (wheel,) = Path(temp).glob("onnxruntime_gpu-*.whl")
        archive = Path(temp) / (wheel.name.removesuffix(".whl") + ".tar.xz")
        print(f"[dev] repacking {wheel.name} ({wheel.stat().st_size >> 20} MiB) as xz", flush=True)
        repack(wheel, archive)
        manifest = split(archive, kit)
    shutil.rmtree(final, ignore_errors=True)
    kit.rename(final)
    kit = final
    for entry in sorted(kit.iterdir()):
        size = (
            sum(f.stat().st_size for f in entry.rglob("*"))
            if entry.is_dir()
            else entry.stat().st_size
        )
        print(f"  {entry.name:<60} {size >> 20:>4} MiB")
    print(
        "[dev] carry .gpu-kit (all but the parts) and one part per command: "
        f"{len(manifest.parts)} commands"
    )
    return 0


def receive(kit: Path, stage: Path) -> tuple[Manifest, dict[str, str]]:
    """Keeps the parts `kit` carries in stage/kit (named by their SHA-256), each checked against
    the manifest; returns the manifest and each part's state: "here", "missing", or what is
    wrong with the one carried."""
    manifest_file = kit / MANIFEST
    if not manifest_file.is_file():
        raise SystemExit(
            f"{manifest_file} not found: run `./dev gpu-kit` where a registry is, and carry .gpu-kit"
        )
    manifest = Manifest.read(manifest_file)
    kept = stage / "kit"
    kept.mkdir(parents=True, exist_ok=True)
    states = {}
    for part in manifest.parts:
        name, want = part.name, part.sha256
        carried, held = kit / name, kept / want  # kept by content: checked when it came
        if held.is_file():
            states[name] = "here"
        elif not carried.is_file():
            states[name] = "missing"
        elif (got := sha256_of(carried)) != want:
            states[name] = f"carried, but its SHA-256 is {got}, not {want}: make the kit again"
        else:
            partial = held.with_name(held.name + ".partial")
            shutil.copyfile(carried, partial)
            partial.replace(held)  # a part is kept whole or not at all
            states[name] = "here"
    return manifest, states


class _Joined(io.RawIOBase):
    """The parts read one after another as one stream, hashed on the way."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths = iter(paths)
        self._file: io.BufferedReader | None = None
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while True:
            if self._file is None:
                path = next(self._paths, None)
                if path is None:
                    return 0
                self._file = path.open("rb")
            count = self._file.readinto(buffer)
            if count:
                self.digest.update(memoryview(buffer)[:count])
                return count
            self._file.close()
            self._file = None


def install(manifest: Manifest, stage: Path) -> str:
    """Unpacks the whole archive into stage/site (once, into an empty folder): the parts joined,
    their SHA-256 checked; the folder replaced only once the new one is whole."""
    site = stage / "site"
    marker = site / ".opgen-ort-gpu"
    if marker.is_file() and marker.read_text() == manifest.sha256:
        return f"onnxruntime-gpu: installed in {site}"
    parts = [stage / "kit" / part.sha256 for part in manifest.parts]
    unpacked = Path(tempfile.mkdtemp(prefix="site.", dir=stage))
    try:
        joined = _Joined(parts)
        with tarfile.open(fileobj=io.BufferedReader(joined), mode="r|xz") as archive:
            archive.extractall(unpacked, filter="data")
        while joined.readinto(bytearray(1 << 20)):  # what follows the tar's end, for the digest
            pass
        if joined.digest.hexdigest() != manifest.sha256:
            raise SystemExit(f"the joined parts do not give {manifest.archive}: make the kit again")
        (unpacked / ".opgen-ort-gpu").write_text(manifest.sha256)
        old = stage / "site.old"
        shutil.rmtree(old, ignore_errors=True)
        if site.exists():
            site.rename(old)
        unpacked.rename(site)
        shutil.rmtree(old, ignore_errors=True)
    except (tarfile.TarError, EOFError, OSError) as error:  # lzma's errors are OSErrors
        raise SystemExit(
            f"{manifest.archive} does not unpack ({error}): make the kit again"
        ) from None
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)  # gone already where it became site
    return f"onnxruntime-gpu: installed in {site} now"


_NOT_COPIED = ("build", ".git", ".mypy", ".ruff", ".pytest", ".hypothesis")


def _tree_files(tree: Path) -> dict[str, Path]:
    """The tree's files that the work copy holds, by relative path: not its build folders and
    caches, not the archive parts (they are in stage/kit)."""
    files = {}
    for folder, dirs, names in os.walk(tree):
        here = Path(folder)
        dirs[:] = [
            d
            for d in dirs
            if d != "__pycache__" and not (here == tree and d.startswith(_NOT_COPIED))
        ]
        names += [d for d in dirs if (here / d).is_symlink()]  # a link, not a folder to copy
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in names:
            if ".part-" in name or (here == tree and name.startswith((".gpu-build", "build-gpu"))):
                continue
            path = here / name
            if not (path.is_symlink() or stat.S_ISREG(path.lstat().st_mode)):
                continue  # a FIFO, socket or device: no file to copy (reading one could block)
            files[path.relative_to(tree).as_posix()] = path
    return files


def _sync(tree: Path, work: Path) -> int:
    """The work copy made equal to the tree (files whose bytes differ copied, files gone from
    the tree removed; build-gpu/ kept); returns how many files changed."""
    want = _tree_files(tree)
    have = _tree_files(work) if work.is_dir() else {}
    changed = 0
    # What is gone first: a link the tree turned into a folder must not be written through.
    for relative in have.keys() - want.keys():
        (work / relative).unlink()
        changed += 1
    for relative, source in want.items():
        target = work / relative
        if relative in have and _same_entry(source, target):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():  # a folder the tree turned into a link or a file (emptied above)
            shutil.rmtree(target)
        if source.is_symlink():  # copied as the link it is: dangling or not, never followed
            target.symlink_to(os.readlink(source))
        else:  # unchanged files keep their times: CMake rebuilds no more
            shutil.copy2(source, target)
        changed += 1
    return changed


def _same_entry(source: Path, target: Path) -> bool:
    """Whether the work copy's entry is the tree's: the same link, or a file of the same bytes."""
    if source.is_symlink() or target.is_symlink():
        return (
            source.is_symlink()
            and target.is_symlink()
            and os.readlink(source) == os.readlink(target)
        )
    return filecmp.cmp(source, target, shallow=False)


def _build_running(work: Path, wait: bool = False) -> bool:
    """Whether a build holds the work copy's build lock (`wait`: until it ends, then False)."""
    lock = work / ".gpu-build.lock"
    if not lock.exists():
        return False
    with lock.open("a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return True
        fcntl.flock(file, fcntl.LOCK_UN)
    return False


def start_build(tree: Path, stage: Path, wait: bool = False) -> str:
    """The working tree copied to stage/work (only what changed since the last call), and
    `opgen build --cuda on` started there in a session of its own (it outlives this command)
    whenever the copy changed or no build finished; never while one runs (`wait`: after it).
    `./dev test-gpu` takes the same lock, so it waits for the build."""
    work = stage / "work"
    log = stage / "build.log"
    if _build_running(work, wait):
        return f"CUDA build in {work}: running, the copy left as it is (log: {log})"
    changed = _sync(tree, work)
    done = work / "build-gpu.rc"
    if changed == 0 and done.is_file():
        status = done.read_text().strip()
        return f"CUDA build in {work}: finished with exit status {status} (log: {log})"
    done.unlink(missing_ok=True)
    env = dict(os.environ, ORT_INCLUDE_DIR=str(work / ".gpu-kit" / "ort-headers"))
    build = shlex.join(
        ["flock", ".gpu-build.lock", sys.executable, "-m", "generator", "build",
         "--build-dir", "build-gpu", "--cuda", "on"]
    )  # fmt: skip
    build += "; echo $? > build-gpu.rc.partial; mv build-gpu.rc.partial build-gpu.rc"
    # setsid and & in a shell that ends at once: the build is nobody's child here to wait for
    subprocess.run(
        ["bash", "-c", f"setsid bash -c {shlex.quote(build)} > {shlex.quote(str(log))} 2>&1 < /dev/null &"],
        cwd=work, env=env, check=True,
    )  # fmt: skip
    return f"CUDA build in {work}: started, {changed} files copied (log: {log})"


def stage_kit(kit: Path, stage: Path, build: bool = True, wait: bool = False) -> int:
    """One command's share: the parts it carries kept, the build started or reported, the
    archive unpacked once every part is there. One run at a time per stage folder."""
    tree = kit.resolve().parent
    stage = stage.resolve()
    if stage == tree or tree in stage.parents:
        raise SystemExit(
            f"the stage folder {stage} is inside the tree {tree}: choose one outside it"
        )
    # Only a folder this made: its work copy and site are replaced and pruned at will.
    marker = stage / ".opgen-gpu-stage"
    if stage.exists() and not marker.is_file() and (not stage.is_dir() or any(stage.iterdir())):
        raise SystemExit(
            f"the stage folder {stage} is not one `./dev gpu-stage` made, nor empty: name another"
        )
    try:
        stage.mkdir(parents=True, exist_ok=True)
        marker.touch()
        lock = (stage / ".lock").open("a")
    except OSError as error:
        raise SystemExit(f"the stage folder {stage} cannot be used: {error}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest, states = receive(kit, stage)
        lines = [f"{name}: {state}" for name, state in states.items()]
        if build:
            lines.append(start_build(tree, stage, wait))
        waiting = [name for name, state in states.items() if state != "here"]
        if not waiting:
            lines.append(install(manifest, stage))
    for line in lines:
        print(f"[dev] {line}")
    if waiting:
        print(f"[dev] {len(waiting)} of {len(states)} parts still to carry: {' '.join(waiting)}")
        return 1
    work, site = shlex.quote(str(stage / "work")), shlex.quote(f"{stage / 'site'}:.")
    print(
        f"[dev] staged; now: cd {work} && PYTHONPATH={site} "
        "ORT_INCLUDE_DIR=.gpu-kit/ort-headers ./dev test-gpu"
    )
    return 0


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "make":
        return make(Path(argv[1]))
    if len(argv) in (3, 4) and argv[0] == "stage" and argv[3:] in ([], ["--wait"]):
        return stage_kit(Path(argv[1]), Path(argv[2]), wait=argv[3:] == ["--wait"])
    print("usage: gpu_kit.py make KIT | stage KIT STAGE [--wait]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
