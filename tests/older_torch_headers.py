"""The C++ headers of the older torch releases the native libraries must build against: the
oldest that TORCH_BUILD_REQUIREMENT allows, and the GPU machine's. `./dev setup` fetches them
(`python tests/older_torch_headers.py`: each release's wheel from the registry, its
torch/include kept in opgen's cache, the wheel deleted); tests/test_runtime_sources.py
compiles the PyTorch runtime headers against each."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator.cache import cache_root  # noqa: E402

RELEASES = ("2.10.0", "2.11.0")  # TORCH_BUILD_REQUIREMENT's floor; the GPU machine's torch


def _folder(release: str) -> Path:
    return cache_root() / f"torch-headers-{release}"


def include_dir(release: str) -> Path:
    return _folder(release) / "torch" / "include"


def fetched(release: str) -> bool:
    return (include_dir(release) / "torch" / "csrc" / "stable" / "library.h").is_file()


def fetch(release: str) -> None:
    """torch/include of that release's manylinux wheel (any CPython's: headers are the same)."""
    target = _folder(release)
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
             "-d", folder, f"torch=={release}"],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(folder).glob("torch-*.whl")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith("torch/include/")]
            archive.extractall(partial, names)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)  # whole or not at all: an interrupted fetch leaves no half folder


def main() -> int:
    for release in RELEASES:
        if not fetched(release):
            print(f"[dev] fetching the C++ headers of torch {release}", flush=True)
            fetch(release)
    return 0


if __name__ == "__main__":
    sys.exit(main())
