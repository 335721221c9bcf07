"""Shape, dtype, value and attribute fuzzer of every kernel op (an op with an ONNX Runtime kernel,
generated/<op>/<op>_ort.cc), on the sanitizer build: each input goes through the PyTorch op (the
pybind11 kernel) and a one-node ONNX Runtime model (inputs with huge empty shapes through
ConstantOfShape). An input may give the reference's answer or an error naming the op; never a
crash, a sanitizer report, a wrong answer, or two runtimes disagreeing (tests/kernel_fuzz.py says
what is drawn and judged).

Seeded and of fixed size: OPGEN_KERNEL_FUZZ_INPUTS inputs per op (default 800) from
OPGEN_KERNEL_FUZZ_SEED (default 0). Inputs run in batches in a subprocess; a batch that dies is
re-run input by input from the one that killed it, which is then reported alone."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL_OPS = sorted(path.parent.name for path in (ROOT / "generated").glob("*/*_kernel.cc"))
INPUTS = int(os.environ.get("OPGEN_KERNEL_FUZZ_INPUTS", "800"))
SEED = int(os.environ.get("OPGEN_KERNEL_FUZZ_SEED", "0"))
BATCH = int(os.environ.get("OPGEN_KERNEL_FUZZ_BATCH", "400"))
SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|runtime error: ")


def _case(op: str, shapes: dict, dtypes: dict, **fields) -> dict:
    """One input in the worker's form (tests/kernel_fuzz.py make_case)."""
    return {
        "op": op,
        "index": 0,
        "kind": "mutated",
        "random_case": 0,
        "shapes": shapes,
        "dtypes": dtypes,
        "values": "sampled",
        "ints": {},
        "attributes": {},
        "arity": 0,
        "declare": "symbolic",
        "threads": 1,
        "noncontiguous": False,
        "misaligned": False,
        "seed": 0,
        **fields,
    }


# Inputs that failed once (or that the fuzzer itself could not build). Both runtimes read input data at an address not aligned for its type
# (undefined behaviour, a UBSan report). The PyTorch ops raised numpy's "array is too big" (not
# naming the op) for an empty tensor whose shape numpy cannot hold (over 2**63 - 1 bytes). The
# float64 reference of CustomGroupNorm is less accurate than its tolerance said (the kernel was
# right; the tolerance changed). An empty X of LayerNorm gives a Mean of 2**45 floats, which
# ASan refused to allocate by aborting the process (PyTorch raises, naming the op). Fuzzed
# shapes are small, and a call under about 32,768 elements' worth of work stays on the calling
# thread: the large inputs with two threads keep ONNX Runtime's pool under the sanitizers.
REGRESSIONS = [
    _case(
        "custom_op_one",
        {"X": [3, 40000], "Y": [3, 40000]},
        {"X": "float32", "Y": "float32"},
        kind="valid",
        threads=2,
    ),
    _case(
        "inverse",
        {"X": [3000, 3, 3]},
        {"X": "float64"},
        kind="valid",
        threads=2,
    ),
    _case(
        "custom_group_norm",
        {"X": [33, 6, 5], "num_groups": [], "scale": [6], "bias": [6]},
        {"X": "float64", "num_groups": "int64", "scale": "float64", "bias": "float64"},
        kind="valid",
        threads=2,
        seed=654072777,
    ),
    _case("inverse", {"X": [2, 3, 3]}, {"X": "float32"}, kind="valid", misaligned=True),
    _case(
        "custom_group_norm",
        {"X": [2, 6, 5], "num_groups": [], "scale": [6], "bias": [6]},
        {"X": "float64", "num_groups": "int64", "scale": "float64", "bias": "float64"},
        kind="valid",
        misaligned=True,
    ),
    _case("custom_op_two", {"X": [1, 0, 2**63 - 1]}, {"X": "float32"}),
    _case(
        "custom_group_norm",
        {"X": [64, 0, 0, 2**63 - 1], "num_groups": [], "scale": [6], "bias": [6]},
        {"X": "float64", "num_groups": "int64", "scale": "float64", "bias": "float64"},
    ),
    _case(
        "layer_norm",
        {"X": [33, 2**40, 2, 5, 0], "Scale": [0]},
        {"X": "float32", "Scale": "float32"},
        random_case=1,
        attributes={"epsilon": ["FLOAT", 0.01]},
        seed=1483318061,
    ),
    # The fuzzer's empty float8 tensor of huge dims: ONNX Runtime's ConstantOfShape makes none.
    _case(
        "dequantize",
        {"X": [2, 2**40, 0], "scale": []},
        {"X": "float8e5m2", "scale": "float32"},
        kind="valid",
        values="zeros",
    ),
    # 4-bit tensors of an odd element count (ONNX packs two per byte, element 2k in the low
    # nibble: the last byte is half used), unpacked for the kernel (DequantizeInt4's X: 35
    # elements holding all 16 values at seed 0; a 0-d one) and packed from it (QuantizeInt4's
    # Y, uint4 chosen).
    _case(
        "dequantize_int4",
        {"X": [5, 7], "scale": []},
        {"X": "int4", "scale": "float32"},
        kind="valid",
        threads=2,
    ),
    _case(
        "dequantize_int4",
        {"X": [], "scale": []},
        {"X": "uint4", "scale": "float16"},
        kind="valid",
        seed=1,
    ),
    _case(
        "quantize_int4",
        {"X": [3, 3], "scale": []},
        {"X": "float32", "scale": "float32"},
        kind="valid",
        attributes={"output_dtype": ["INT", 21]},  # TensorProto.UINT4
    ),
    # An empty 4-bit tensor of huge dims: ONNX Runtime's ConstantOfShape makes none either.
    _case(
        "dequantize_int4",
        {"X": [3, 2**40, 0], "scale": []},
        {"X": "uint4", "scale": "float32"},
        kind="valid",
        values="zeros",
    ),
    # A misaligned complex128 input (PyTorch's own copy_ and * crash on one, torch 2.13: the
    # fuzzer makes it byte by byte and computes the reference on an aligned copy), with NaN and
    # infinite parts, in an op for PyTorch alone.
    _case(
        "complex_rotate",
        {"X": [7, 3]},
        {"X": "complex128"},
        kind="valid",
        values="special",
        misaligned=True,
        attributes={"angle": ["FLOAT", 0.75]},
    ),
    # A complex value given to an op ONNX Runtime runs: it refuses the model as it loads (no op
    # of ours runs, so its message names none); PyTorch's op refuses the dtype, naming the op.
    _case("sum_op", {"X_0": [3], "X_1": [3]}, {"X_0": "float32", "X_1": "complex64"}),
    # NaN among the values of a variadic input: ClipByGlobalNorm's factor min(1, NaN) was 1, and
    # the finite values came back unscaled (its reference makes them NaN).
    _case(
        "clip_by_global_norm",
        {"X_0": [40], "X_1": [3, 2], "X_2": [1]},
        {"X_0": "float32", "X_1": "float32", "X_2": "float32"},
        kind="nonfinite",
        values="nonfinite",
    ),
]


def _run(env: dict, op: str, seed: int, first: int, count: int) -> subprocess.CompletedProcess:
    return _worker(env, [op, str(seed), str(first), str(count)], count)


def _worker(env: dict, args: list[str], count: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.kernel_fuzz", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120 + 10 * count,
    )


def _lines(output: str, tag: str) -> list[dict]:
    return [
        json.loads(line[len(tag) + 1 :]) for line in output.splitlines() if line.startswith(tag)
    ]


def _died(result: subprocess.CompletedProcess) -> bool:
    return result.returncode != 0 or bool(SANITIZER_REPORT.search(result.stderr))


def _fuzz(env: dict, op: str, seed: int, first: int, count: int) -> list[str]:
    """Runs inputs [first, first + count) of op; returns the failures, each with its input."""
    failures: list[str] = []
    end = first + count
    while first < end:
        batch = min(BATCH, end - first)
        result = _run(env, op, seed, first, batch)
        cases = {case["index"]: case for case in _lines(result.stdout, "CASE")}
        for outcome in _lines(result.stdout, "RESULT"):
            if outcome["problems"]:
                failures.append(
                    f"input {json.dumps(cases[outcome['index']])}\n  torch: {outcome['torch']}\n"
                    f"  ort: {outcome['ort']}\n  " + "\n  ".join(outcome["problems"])
                )
        if not _died(result):
            first += batch
            continue
        # The last input started is the one that killed the process: confirm it alone.
        crashed = max(cases) if cases else first
        alone = _run(env, op, seed, crashed, 1)
        culprit = crashed if _died(alone) else None
        report = alone if culprit is not None else result
        failures.append(
            f"process died (exit {report.returncode}) on input "
            f"{json.dumps(cases.get(crashed)) if culprit is not None else '(not reproduced alone)'}"
            f"\n{report.stderr[-8000:]}"
        )
        first = crashed + 1
    return failures


@pytest.mark.parametrize("op", KERNEL_OPS)
def test_kernel_fuzz(sanitizer_env, op):
    failures = _fuzz(sanitizer_env, op, SEED, 0, INPUTS)
    assert not failures, f"{len(failures)} failing input(s) of {op}:\n" + "\n\n".join(failures[:10])


def test_kernel_fuzz_regressions(sanitizer_env):
    """The inputs that failed once, in one process (each is a few milliseconds of work)."""
    cases = [{**case, "index": index} for index, case in enumerate(REGRESSIONS)]
    result = _worker(sanitizer_env, ["--cases", json.dumps(cases)], len(cases))
    assert not _died(result), result.stdout[-2000:] + result.stderr[-8000:]
    outcomes = _lines(result.stdout, "RESULT")
    assert len(outcomes) == len(cases), result.stdout[-4000:]
    failing = [(cases[o["index"]], o) for o in outcomes if o["problems"]]
    assert not failing, failing


def test_fuzzer_reports_the_input_that_kills_the_process(sanitizer_env):
    """The harness itself: a sanitizer report at input 5 of a batch of 8 is one failure naming
    input 5, and inputs 6 and 7 still run."""
    env = {**sanitizer_env, "OPGEN_KERNEL_FUZZ_REPORT_AT": "5"}
    failures = _fuzz(env, "custom_op_one", SEED, 0, 8)
    assert len(failures) == 1, failures
    assert (
        failures[0].startswith("process died (exit -6) on input {") and '"index": 5,' in failures[0]
    )
    assert "ERROR: AddressSanitizer" in failures[0]
