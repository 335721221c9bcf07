"""Build speed: a cold build of the shipped ops (ONNX Runtime libraries, pybind11 modules,
native PyTorch libraries and schema tests) on 2 jobs with the compile time of each kind of
per-op unit, a no-op rebuild, and a rebuild after touching one hand-written kernel (which must
recompile only that op's objects).

    python benchmarks/build_speed.py [--jobs 2] [--kernel opdefs/inverse_kernel.h]

Builds into a temporary directory, so the project's build/ is left alone. The ONNX Runtime
headers must be in the cache already (`python -m generator build` fetches them once)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, median_run, report, run_measured, table  # noqa: E402


def build_output(build_dir: Path) -> list[str]:
    """The build steps ninja (or make) reports, from a verbose-free rebuild."""
    done = subprocess.run(
        ["cmake", "--build", str(build_dir)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [
        line
        for line in done.stdout.splitlines()
        if "Building CXX object" in line or "Linking CXX" in line
    ]


# A translation unit's kind, by the end of its source's name (generated/<op>/<op>_<kind>.cc).
UNIT_KINDS = {
    "_kernel.cc.o": "the kernel, once per dtype",
    "_ort.cc.o": "ONNX Runtime custom op",
    "_pybind.cc.o": "pybind11 binding",
    "_torch.cc.o": "native PyTorch registration (stable ABI)",
    "_schema.cc.o": "ONNX C++ schema",
    "_schema_test.cc.o": "ONNX C++ schema test",
    # CMake's unity batches (OPGEN_UNITY_BUILD, the default) of a domain's generated wrappers.
    "_cxx.cxx.o": "a batch of generated wrappers (unity build)",
}


def compile_times(build_dir: Path) -> list[list[str]]:
    """Per kind of per-op translation unit: how many, and their mean compile time, from ninja's
    log of the cold build (each compiled while the other job ran: 2 jobs on 2 cores)."""
    log = build_dir / ".ninja_log"
    if not log.is_file():
        return []
    durations: dict[str, list[float]] = {kind: [] for kind in UNIT_KINDS}
    for line in log.read_text().splitlines()[1:]:
        start, end, _, target, *_ = line.split("\t")
        kind = next((k for k in UNIT_KINDS if target.endswith(k)), None)
        if kind:
            durations[kind].append((int(end) - int(start)) / 1000)
    return [
        [f"`<op>{kind.removesuffix('.o')}`: {what}", str(len(durations[kind])),
         f"{sum(durations[kind]) / len(durations[kind]):.1f} s"]
        for kind, what in UNIT_KINDS.items()
        if durations[kind]
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kernel", type=Path, default=Path("opdefs/inverse_kernel.h"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    work = Path(tempfile.mkdtemp(prefix="opgen-bench-build-"))
    touched_kernel = None
    build_dir = work / "build"
    command = [sys.executable, "-m", "generator", "build", "-q", "--jobs", str(args.jobs)]
    command += ["--build-dir", str(build_dir)]
    try:
        cold, cold_peak = run_measured(command)
        noop, _ = median_run(command, None, args.repeat)
        ninja_noop, _ = median_run(["cmake", "--build", str(build_dir)], None, args.repeat)
        kernel = ROOT / args.kernel
        stat = kernel.stat()
        os.utime(kernel, ns=(stat.st_atime_ns, time.time_ns()))
        touched_kernel = (kernel, stat)
        started = time.perf_counter()
        steps = build_output(build_dir)
        touched = time.perf_counter() - started
        compiled = [re.sub(r".*Building CXX object ", "", s) for s in steps if "Building" in s]
        linked = [re.sub(r".*Linking CXX \S+ ", "", s) for s in steps if "Linking" in s]
        op = kernel.stem.removesuffix("_kernel")
        only_that_op = bool(compiled) and all(f"/{op}/" in c or f"{op}_" in c for c in compiled)
        report(
            f"Build of the shipped ops ({args.jobs} jobs)",
            table(
                ["step", "median wall time", "note"],
                [
                    [
                        "cold: `python -m generator build` (configure + build)",
                        f"{cold:.1f} s",
                        f"largest process (a compiler): {cold_peak / 1024:.0f} MiB RSS",
                    ],
                    ["no-op: `python -m generator build`", f"{noop:.2f} s", "target < 1 s"],
                    ["no-op: `cmake --build`", f"{ninja_noop:.3f} s", ""],
                    [
                        f"after touching `{args.kernel}`",
                        f"{touched:.1f} s",
                        f"compiled {len(compiled)}: {', '.join(compiled)}; "
                        f"relinked: {', '.join(linked)}; only that op: {'yes' if only_that_op else 'NO'}",
                    ],
                ],
            ),
        )
        report(
            "Compile time per op, by translation unit (cold build, from ninja's log)",
            table(["unit", "count", "mean compile time"], compile_times(build_dir)),
        )
        if not only_that_op:
            sys.exit("touching one kernel rebuilt objects of other ops")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if touched_kernel:  # the project's own build/ must not see the kernel as changed
            path, stat = touched_kernel
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


if __name__ == "__main__":
    main()
