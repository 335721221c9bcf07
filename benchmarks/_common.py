"""Shared by the benchmark scripts: timing, the machine description and Markdown tables.

Every figure is a median over repeated runs; ratios are taken between figures measured in the
same run, interleaved, because the machine these run on is shared and noisy."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def interleaved_medians(contestants: dict, repeat: int, warmup: int = 1) -> dict[str, float]:
    """Median seconds of each callable, running them in turn so that machine noise hits all."""
    for fn in contestants.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(repeat):
        for name, fn in contestants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def run_measured(
    command: list[str], env: dict | None = None, cwd: Path = ROOT
) -> tuple[float, int]:
    """Wall seconds and peak resident memory (KiB) of one child process; fails loudly. Its
    error output goes to a file (a pipe nobody reads while waiting could fill and block it)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")
            sys.exit(
                f"benchmark command failed ({child.returncode}): {' '.join(command)}\n{message}"
            )
    return elapsed, usage.ru_maxrss


def median_run(
    command: list[str], env: dict | None, repeat: int, before=None, cwd: Path = ROOT
) -> tuple[float, int]:
    """Median wall seconds and the largest peak memory (KiB) over `repeat` runs."""
    times, peaks = [], []
    for _ in range(repeat):
        if before:
            before()
        elapsed, peak = run_measured(command, env, cwd)
        times.append(elapsed)
        peaks.append(peak)
    return statistics.median(times), max(peaks)


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    packages = ", ".join(
        f"{name} {version(name)}" for name in ("torch", "onnxruntime", "onnx", "numpy", "black")
    )
    return f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, {packages}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def report(title: str, body: str) -> None:
    print(f"\n### {title}\n\n{body}\n", flush=True)
