"""The generated CUDA kernels on a GPU, each against what PyTorch (or ONNX Runtime) does itself,
measured side by side in one run (issue 29's targets in brackets):

- CustomOpOne then CustomOpTwo on 2**28 float32 elements: bytes moved per second against a
  device-to-device copy of the same size (at least 90%);
- one call on 4 elements: through PyTorch against `x + y` (at most 1 us more), and through ONNX
  Runtime's CUDA provider against its own Add (at most 1.05x);
- Inverse of 1M 4x4 matrices against torch.linalg.inv (at most 1.0x), and of 10k 64x64 ones;
- CustomGroupNorm against torch.nn.functional.group_norm (at most 1.0x).

    python benchmarks/cuda_kernels.py [--repeat 20]

Needs a GPU, torch built for CUDA and a build with the CUDA libraries (`opgen build --cuda on`;
OPGEN_BUILD_DIR names it); the ONNX Runtime rows need onnxruntime-gpu. Times are medians of
wall times between synchronizations; per-call overheads are wall times of many calls."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import machine, table  # noqa: E402


def gpu_median(fn, repeat: int) -> float:
    """Median seconds of fn, the GPU synchronized before and after each call, after a warm-up
    call: wall time, because an op with a data check waits for its own kernel before it returns
    (events recorded around it would count that wait for it and not for the other)."""
    fn()
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_gpu_medians(contestants: dict, repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(repeat):
        for name, fn in contestants.items():
            times[name].append(gpu_median(fn, 1))
    return {name: statistics.median(values) for name, values in times.items()}


def per_call_seconds(fn, calls: int) -> float:
    """Wall seconds per call of many calls in a row, the GPU synchronized once at the end."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls


def streaming(repeat: int) -> list[list[str]]:
    n = 2**28
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    copy = torch.empty_like(x)
    ops = torch.ops.test_customop

    def ours():
        ops.custom_op_two(ops.custom_op_one(x, y))

    times = interleaved_gpu_medians({"ours": ours, "copy": lambda: copy.copy_(x)}, repeat)
    # CustomOpOne reads 2 and writes 1 float32, CustomOpTwo reads 1 float32 and writes 1 int32.
    ours_rate = 20 * n / times["ours"]
    copy_rate = 8 * n / times["copy"]
    return [
        [
            "CustomOpOne -> CustomOpTwo, 2**28 float32",
            f"{ours_rate / 1e9:.0f} GB/s",
            f"copy {copy_rate / 1e9:.0f} GB/s",
            f"{ours_rate / copy_rate:.0%} of the copy's rate (goal >= 90%)",
        ]
    ]


def tiny_calls(calls: int) -> list[list[str]]:
    x = torch.randn(4, device="cuda")
    y = torch.randn(4, device="cuda")
    op = torch.ops.test_customop.custom_op_one
    ours = per_call_seconds(lambda: op(x, y), calls)
    theirs = per_call_seconds(lambda: x + y, calls)
    rows = [
        [
            "one call on 4 elements, PyTorch",
            f"{ours * 1e6:.2f} us",
            f"x + y {theirs * 1e6:.2f} us",
            f"{(ours - theirs) * 1e6:+.2f} us (goal <= 1 us)",
        ]
    ]
    try:
        import numpy as np
        import onnxruntime as ort
        from onnx import TensorProto, helper

        import generated
        from generated import _cuda
    except ImportError as error:  # pragma: no cover - reported in the table
        return rows + [["one call on 4 elements, ONNX Runtime", "-", "-", str(error)]]
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return rows + [
            ["one call on 4 elements, ONNX Runtime", "-", "-", "no CUDA provider (onnxruntime-gpu)"]
        ]

    def session(op_type: str, domain: str):
        node = helper.make_node(op_type, ["X", "Y"], ["Z"], domain=domain)
        value = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "XYZ"]
        graph = helper.make_graph([node], "g", value[:2], value[2:])
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("test.customop", 1)]
        model = helper.make_model(graph, ir_version=9, opset_imports=opsets)
        options = ort.SessionOptions()
        options.register_custom_ops_library(
            generated.get_library_path("test.customop", device="cuda")
        )
        # CUDA's libraries preloaded, never a silent fall back to the CPU
        return _cuda.ort_session(model.SerializeToString(), options)

    feeds = {"X": np.ones(4, np.float32), "Y": np.ones(4, np.float32)}
    sessions = {"ours": session("CustomOpOne", "test.customop"), "Add": session("Add", "")}
    walls = {}
    for name, s in sessions.items():
        bound = s.io_binding()
        for key, value in feeds.items():
            bound.bind_ortvalue_input(key, ort.OrtValue.ortvalue_from_numpy(value, "cuda", 0))
        bound.bind_output("Z", "cuda")
        s.run_with_iobinding(bound)
        start = time.perf_counter()
        for _ in range(calls):
            s.run_with_iobinding(bound)
        walls[name] = (time.perf_counter() - start) / calls
    return rows + [
        [
            "one call on 4 elements, ONNX Runtime CUDA",
            f"{walls['ours'] * 1e6:.2f} us",
            f"Add {walls['Add'] * 1e6:.2f} us",
            f"{walls['ours'] / walls['Add']:.2f}x (goal <= 1.05x)",
        ]
    ]


def inverse(repeat: int) -> list[list[str]]:
    rows = []
    for count, n, goal in ((1 << 20, 4, " (goal <= 1.0x)"), (10_000, 64, "")):
        x = torch.randn(count, n, n, device="cuda") + n * torch.eye(n, device="cuda")
        times = interleaved_gpu_medians(
            {
                "ours": lambda x=x: torch.ops.opgen.inverse(x),
                "torch": lambda x=x: torch.linalg.inv(x),
            },
            repeat,
        )
        rows.append(
            [
                f"Inverse, {count} x {n}x{n} float32",
                f"{times['ours'] * 1e3:.3f} ms",
                f"torch.linalg.inv {times['torch'] * 1e3:.3f} ms",
                f"{times['ours'] / times['torch']:.2f}x{goal}",
            ]
        )
    return rows


def group_norm(repeat: int) -> list[list[str]]:
    x = torch.randn(32, 256, 56, 56, device="cuda")
    scale = torch.randn(256, device="cuda")
    bias = torch.randn(256, device="cuda")
    groups = torch.tensor(32, device="cuda")
    times = interleaved_gpu_medians(
        {
            "ours": lambda: torch.ops.mydomain.custom_group_norm(x, groups, scale, bias),
            "torch": lambda: torch.nn.functional.group_norm(x, 32, scale, bias),
        },
        repeat,
    )
    return [
        [
            "CustomGroupNorm, [32, 256, 56, 56] float32, 32 groups",
            f"{times['ours'] * 1e3:.3f} ms",
            f"F.group_norm {times['torch'] * 1e3:.3f} ms",
            f"{times['ours'] / times['torch']:.2f}x (goal <= 1.0x)",
        ]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/cuda_kernels.py needs a GPU and torch built for CUDA")
    import generated  # noqa: F401 (registers the ops, loads the CUDA library)

    rows = streaming(args.repeat) + tiny_calls(args.calls) + inverse(args.repeat)
    rows += group_norm(args.repeat)
    print(f"CUDA kernels on {torch.cuda.get_device_name()} ({machine()})\n")
    print(table(["case", "ours", "theirs", "ratio"], rows))


if __name__ == "__main__":
    main()
