"""Generator speed: `--check` on the shipped ops (wall time including interpreter start),
generation throughput on synthetic op definitions, and peak memory.

    python benchmarks/generator_speed.py [--sizes 10 100 1000]

"Warm" runs use the opgen cache as a user's machine has it after the first run (compiled
templates and black's output are cached by content); "cold" runs get an empty cache, so every
Python file is formatted by black. A `--check` that passed is recorded, and the next one answers
from the record while nothing it reads has changed: the first row; the full check is measured
with the records removed before each run. Each synthetic definition is an element-wise kernel op
(CustomOpOne renamed), so every one produces all eleven per-op files, plus its docs page."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, median_run, report, run_measured, table  # noqa: E402

TEMPLATE_DEF = ROOT / "opdefs" / "custom_op_one.yaml"


def synthetic_opdefs(directory: Path, count: int) -> None:
    text = TEMPLATE_DEF.read_text(encoding="utf-8")
    directory.mkdir(parents=True)
    # The kernel files the definition names (its CUDA kernel), which every copy shares
    for kernel in TEMPLATE_DEF.parent.glob(f"{TEMPLATE_DEF.stem}_kernel.*"):
        shutil.copy(kernel, directory / kernel.name)
    for index in range(count):
        op_text = (
            text.replace("op: CustomOpOne", f"op: Synth{index:04d}")
            .replace("test_customop::custom_op_one", f"bench_synth::synth_{index:04d}")
            .replace("domain: test.customop", "domain: bench.synth")
        )
        (directory / f"synth_{index:04d}.yaml").write_text(op_text, encoding="utf-8")


def generate_command(opdefs: Path, output: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "generator",
        "-q",
        "--opdefs-dir",
        str(opdefs),
        "--output-dir",
        str(output),
        *extra,
    ]


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def file_creation_seconds(source: Path, target: Path) -> tuple[int, float]:
    """What creating the generator's output files costs on this file system by itself."""
    contents = [(p.relative_to(source), p.read_bytes()) for p in source.rglob("*") if p.is_file()]
    start = time.perf_counter()
    for relative, content in contents:
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    seconds = time.perf_counter() - start
    shutil.rmtree(target)
    return len(contents), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    print(f"Machine: {machine()}")

    work = Path(tempfile.mkdtemp(prefix="opgen-bench-gen-"))
    try:
        warm_env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
        cold_cache = work / "cold-cache"
        cold_env = dict(os.environ, XDG_CACHE_HOME=str(cold_cache))

        def empty_cold_cache():
            shutil.rmtree(cold_cache, ignore_errors=True)

        # --check on the shipped ops, and the bare interpreter for scale.
        check = [sys.executable, "-m", "generator", "--check", "-q"]
        run_measured(check, warm_env)  # fills the cache, and records the check

        def forget_checks():  # the records of passed checks (generator/check_record.py)
            shutil.rmtree(work / "cache" / "opgen" / "check", ignore_errors=True)

        check_recorded, recorded_peak = median_run(check, warm_env, args.repeat)
        check_warm, check_peak = median_run(check, warm_env, args.repeat, before=forget_checks)
        check_cold, _ = median_run(check, cold_env, 3, before=empty_cold_cache)
        bare, _ = median_run([sys.executable, "-c", "pass"], warm_env, args.repeat)
        bare_import, _ = median_run([sys.executable, "-c", "import generator.cli"], warm_env, 5)
        report(
            "`python -m generator --check` on the shipped ops (target < 0.3 s)",
            table(
                ["run", "median wall time", "peak RSS"],
                [
                    [
                        "nothing read changed since the last passed check (answered from its "
                        "record)",
                        f"{check_recorded:.3f} s",
                        mib(recorded_peak),
                    ],
                    [
                        "full check, warm cache (after a change to a definition, the package "
                        "or the generator)",
                        f"{check_warm:.3f} s",
                        mib(check_peak),
                    ],
                    ["cold cache (first run after install)", f"{check_cold:.3f} s", ""],
                    ["`python -c pass` (interpreter alone)", f"{bare:.3f} s", ""],
                    ["`python -c 'import generator.cli'`", f"{bare_import:.3f} s", ""],
                ],
            ),
        )

        rows = []
        for count in args.sizes:
            opdefs = work / f"opdefs-{count}"
            synthetic_opdefs(opdefs, count)
            # (named as the package, "generated", in a folder of its own: Python imports a package
            # by its folder's name, and the generator refuses another)
            output = work / f"out-{count}" / "generated"
            output.parent.mkdir()
            # Each size gets its own cache: its first run is the cold one and fills it.
            env = dict(os.environ, XDG_CACHE_HOME=str(work / f"cache-{count}"))

            def fresh_output(output=output):
                # Moved aside, not deleted: deleting 12,000 files right before a run made the
                # disk flush them during it (12 s instead of 3.5 s for 1000 ops here).
                if output.exists():
                    output.rename(Path(tempfile.mkdtemp(dir=work, prefix="old-")) / output.name)
                os.sync()

            command = generate_command(opdefs, output)
            repeat = 3 if count >= 1000 else 5
            cold, cold_peak = run_measured(command, env)
            warm, warm_peak = median_run(command, env, repeat, before=fresh_output)
            files, seconds = file_creation_seconds(output, work / f"copy-{count}")
            check_time, _ = median_run(generate_command(opdefs, output, "--check"), env, repeat)
            rows += [
                [
                    str(count),
                    "cold (one run)",
                    f"{cold:.2f} s",
                    f"{count / cold:.0f}",
                    mib(cold_peak),
                ],
                [str(count), "warm", f"{warm:.2f} s", f"{count / warm:.0f}", mib(warm_peak)],
                [
                    str(count),
                    f"(writing the same {files} files with plain Python, no generator)",
                    f"{seconds:.2f} s",
                    "",
                    "",
                ],
                [
                    str(count),
                    "warm `--check`",
                    f"{check_time:.2f} s",
                    f"{count / check_time:.0f}",
                    "",
                ],
            ]
        report(
            "Generation of N synthetic definitions into an empty directory (target >= 500 per second, linear)",
            table(["N", "cache", "median wall time", "definitions / s", "peak RSS"], rows),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
