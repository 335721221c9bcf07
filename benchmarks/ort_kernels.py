"""Generated kernels in ONNX Runtime, side by side with what a user would pick instead.

    python benchmarks/ort_kernels.py [--repeat 7] [--elements 10000000]

1. ai.opgen::Inverse against ONNX Runtime's built-in com.microsoft::Inverse and torch.linalg.inv
   on the same float32 batches (100k 4x4, 1k 64x64), on 1 and 2 intra-op threads.
2. test.customop::CustomOpOne -> CustomOpTwo against the same computation in standard ONNX ops
   (Add -> Round -> Cast to int32) on 10M elements, and the achieved bytes per second as a
   fraction of this machine's memory-copy bandwidth (numpy copy of a buffer of the same size).
3. The speed-up of the generated kernels from 1 to 2 threads (their work is split with the
   custom-op API's parallel-for).
4. ai.opgen::Quantize against ONNX Runtime's own QuantizeLinear (opset 21) on 10M elements, to
   int8 and uint16, on 1 and 2 threads.
5. ai.opgen::CodebookDequantize (its codebook a tensor attribute) against Cast -> Gather from an
   initializer, the standard ops' spelling, on 10M uint8 codes, on 1 and 2 threads.
6. The cost of one call through `session.run` on 4 elements: test.customop::CustomOpOne against
   the built-in Add, and the variadic ai.opgen::Sum of 2, 8 and 32 inputs against ONNX's own Sum
   of as many (the cost of each further input, against a fixed-arity op's).

Every ONNX Runtime session is run through I/O binding into preallocated outputs, so no
contestant pays for allocating or converting its result. Needs `python -m generator build`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: its idle threads must not spin

import numpy as np  # noqa: E402
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import interleaved_medians, machine, report, table  # noqa: E402

from generated import _support  # noqa: E402

ONNX_OPSET = 21


def model(nodes, inputs, outputs, domains: dict[str, int]) -> bytes:
    graph = helper.make_graph(nodes, "bench", inputs, outputs)
    opsets = [helper.make_opsetid("", ONNX_OPSET)]
    opsets += [helper.make_opsetid(domain, v) for domain, v in domains.items()]
    built = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    onnx.checker.check_model(built)
    return built.SerializeToString()


def session(model_bytes: bytes, threads: int, library: Path | None = None):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle pool threads must not spin between runs: the contestants take turns on 2 cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if library is not None:
        options.register_custom_ops_library(str(library))
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def bound_runner(sess, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]):
    """A zero-argument callable that runs the session into the preallocated outputs."""
    binding = sess.io_binding()
    for name, array in inputs.items():
        binding.bind_cpu_input(name, array)
    for name, array in outputs.items():
        binding.bind_output(name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data)

    def run(keep_alive=(inputs, outputs)):  # the binding holds raw pointers into the arrays
        sess.run_with_iobinding(binding)

    return run


def tensor(name: str, elem_type: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def inverse_benchmark(repeat: int) -> list[list[str]]:
    library = _support.ort_library("ai_opgen")
    rows = []
    for count, n in [(100_000, 4), (1_000, 64)]:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(count, n, n, generator=generator) + n * torch.eye(n)
        x_np = x.numpy()
        io = (
            [tensor("X", TensorProto.FLOAT, ["B", n, n])],
            [tensor("Y", TensorProto.FLOAT, ["B", n, n])],
        )
        ours_model = model(
            [helper.make_node("Inverse", ["X"], ["Y"], domain="ai.opgen")], *io, {"ai.opgen": 1}
        )
        builtin_model = model(
            [helper.make_node("Inverse", ["X"], ["Y"], domain="com.microsoft")],
            *io,
            {"com.microsoft": 1},
        )
        expected = torch.linalg.inv(x).numpy()
        # Both thread counts in one interleaved run, so every ratio is taken within one run.
        contestants, outputs = {}, {}
        for threads in (1, 2):
            out_ours, out_builtin = np.empty_like(x_np), np.empty_like(x_np)
            out_torch = torch.empty_like(x)
            ours = session(ours_model, threads, library)
            builtin = session(builtin_model, threads)
            contestants[("ours", threads)] = bound_runner(ours, {"X": x_np}, {"Y": out_ours})
            contestants[("builtin", threads)] = bound_runner(
                builtin, {"X": x_np}, {"Y": out_builtin}
            )
            contestants[("torch", threads)] = lambda x=x, out=out_torch, t=threads: (
                torch.set_num_threads(t),
                torch.linalg.inv(x, out=out),
            )
            outputs.update(
                {
                    ("ours", threads): out_ours,
                    ("builtin", threads): out_builtin,
                    ("torch", threads): out_torch.numpy(),
                }
            )
        medians = interleaved_medians(contestants, repeat)
        for (name, threads), out in outputs.items():
            if not np.allclose(out, expected, rtol=1e-3, atol=1e-4):
                sys.exit(f"Inverse {count}x{n}x{n}: {name} ({threads} threads) is wrong")
        for threads in (1, 2):
            ours = medians[("ours", threads)]
            best = min(medians[("builtin", threads)], medians[("torch", threads)])
            rows.append(
                [
                    f"{count:,} x {n}x{n}",
                    str(threads),
                    f"{ours * 1e3:.1f} ms",
                    f"{medians[('builtin', threads)] * 1e3:.1f} ms",
                    f"{medians[('torch', threads)] * 1e3:.1f} ms",
                    f"**{ours / best:.2f}**",
                    f"{medians[('ours', 1)] / ours:.2f}x" if threads == 2 else "",
                ]
            )
    torch.set_num_threads(1)
    return rows


def chain_benchmark(elements: int, repeat: int) -> tuple[list[list[str]], float]:
    library = _support.ort_library("test_customop")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(elements) * 100).astype(np.float32)
    y = (rng.standard_normal(elements) * 100).astype(np.float32)
    io = (
        [tensor("X", TensorProto.FLOAT, ["n"]), tensor("Y", TensorProto.FLOAT, ["n"])],
        [tensor("W", TensorProto.INT32, ["n"])],
    )
    ours_model = model(
        [
            helper.make_node("CustomOpOne", ["X", "Y"], ["Z"], domain="test.customop"),
            helper.make_node("CustomOpTwo", ["Z"], ["W"], domain="test.customop"),
        ],
        *io,
        {"test.customop": 1},
    )
    standard_model = model(
        [
            helper.make_node("Add", ["X", "Y"], ["Z"]),
            helper.make_node("Round", ["Z"], ["R"]),
            helper.make_node("Cast", ["R"], ["W"], to=TensorProto.INT32),
        ],
        *io,
        {},
    )
    # Our chain reads X and Y, writes Z, reads Z and writes W: five 4-byte streams. The copy
    # (one thread) reads and writes one array of the same size: two streams.
    chain_bytes = 5 * 4 * elements
    source, target = np.ones(elements, np.float32), np.empty(elements, np.float32)
    contestants, outputs = {("copy", 1): lambda: np.copyto(target, source)}, {}
    for threads in (1, 2):
        for name, built, library_path in [
            ("ours", ours_model, library),
            ("standard", standard_model, None),
        ]:
            out = np.empty(elements, np.int32)
            sess = session(built, threads, library_path)
            contestants[(name, threads)] = bound_runner(sess, {"X": x, "Y": y}, {"W": out})
            outputs[(name, threads)] = out
    medians = interleaved_medians(contestants, repeat)
    bandwidth = 2 * 4 * elements / medians[("copy", 1)]
    # ONNX Round rounds halves to even, CustomOpTwo away from zero: they differ on halves.
    halves = np.abs(x + y - np.trunc(x + y)) == 0.5
    for threads in (1, 2):
        ours, standard = outputs[("ours", threads)], outputs[("standard", threads)]
        if not np.array_equal(ours[~halves], standard[~halves]):
            sys.exit("CustomOpOne -> CustomOpTwo disagrees with Add -> Round -> Cast")
    rows = []
    for threads in (1, 2):
        ours = medians[("ours", threads)]
        achieved = chain_bytes / ours
        rows.append(
            [
                str(threads),
                f"{ours * 1e3:.1f} ms",
                f"{medians[('standard', threads)] * 1e3:.1f} ms",
                f"**{ours / medians[('standard', threads)]:.2f}**",
                f"{achieved / 1e9:.1f} GB/s = **{achieved / bandwidth:.0%}** of copy",
                f"{medians[('ours', 1)] / ours:.2f}x" if threads == 2 else "",
            ]
        )
    return rows, bandwidth


def quantize_benchmark(elements: int, repeat: int) -> list[list[str]]:
    """ai.opgen::Quantize against ONNX Runtime's QuantizeLinear (opset 21, output_dtype) on the
    same float32 values, to int8 and to uint16, on 1 and 2 threads."""
    library = _support.ort_library("ai_opgen")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(elements) * 300).astype(np.float32)
    scale = np.array(0.75, np.float32)
    rows = []
    for dtype, elem, numpy_dtype in (
        ("int8", TensorProto.INT8, np.int8),
        ("uint16", TensorProto.UINT16, np.uint16),
    ):
        io = (
            [tensor("X", TensorProto.FLOAT, ["n"]), tensor("scale", TensorProto.FLOAT, [])],
            [tensor("Y", elem, ["n"])],
        )
        ours_model = model(
            [
                helper.make_node(
                    "Quantize", ["X", "scale"], ["Y"], domain="ai.opgen", output_dtype=elem
                )
            ],
            *io,
            {"ai.opgen": 1},
        )
        builtin_model = model(
            [helper.make_node("QuantizeLinear", ["X", "scale"], ["Y"], output_dtype=elem)],
            *io,
            {},
        )
        contestants, outputs = {}, {}
        for threads in (1, 2):
            for name, built, library_path in (
                ("ours", ours_model, library),
                ("builtin", builtin_model, None),
            ):
                out = np.empty(elements, numpy_dtype)
                sess = session(built, threads, library_path)
                feeds = {"X": x, "scale": scale}
                contestants[(name, threads)] = bound_runner(sess, feeds, {"Y": out})
                outputs[(name, threads)] = out
        medians = interleaved_medians(contestants, repeat)
        for threads in (1, 2):
            if not np.array_equal(outputs[("ours", threads)], outputs[("builtin", threads)]):
                sys.exit(f"Quantize to {dtype} disagrees with QuantizeLinear")
        for threads in (1, 2):
            ours, builtin = medians[("ours", threads)], medians[("builtin", threads)]
            rows.append(
                [
                    dtype,
                    str(threads),
                    f"{ours * 1e3:.1f} ms",
                    f"{builtin * 1e3:.1f} ms",
                    f"**{ours / builtin:.2f}**",
                    f"{medians[('ours', 1)] / ours:.2f}x" if threads == 2 else "",
                ]
            )
    return rows


def codebook_benchmark(elements: int, repeat: int) -> list[list[str]]:
    """ai.opgen::CodebookDequantize (the codebook a tensor attribute) against what standard ONNX
    spells it as: Cast the uint8 codes to int32 (Gather takes no uint8 indices), then Gather
    from the codebook as an initializer; NF4's 16 entries, on 1 and 2 threads."""
    library = _support.ort_library("ai_opgen")
    rng = np.random.default_rng(0)
    codebook = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    x = rng.integers(0, 16, elements).astype(np.uint8)
    io = ([tensor("X", TensorProto.UINT8, ["n"])], [tensor("Y", TensorProto.FLOAT, ["n"])])
    table_attribute = onnx.numpy_helper.from_array(codebook)
    ours_model = model(
        [
            helper.make_node(
                "CodebookDequantize", ["X"], ["Y"], domain="ai.opgen", codebook=table_attribute
            )
        ],
        *io,
        {"ai.opgen": 1},
    )
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["X"], ["codes"], to=TensorProto.INT32),
            helper.make_node("Gather", ["codebook", "codes"], ["Y"]),
        ],
        "bench",
        *io,
        initializer=[onnx.numpy_helper.from_array(codebook, "codebook")],
    )
    standard = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], ir_version=10
    )
    onnx.checker.check_model(standard)
    contestants, outputs = {}, {}
    for threads in (1, 2):
        for name, built, library_path in (
            ("ours", ours_model, library),
            ("standard", standard.SerializeToString(), None),
        ):
            out = np.empty(elements, np.float32)
            sess = session(built, threads, library_path)
            contestants[(name, threads)] = bound_runner(sess, {"X": x}, {"Y": out})
            outputs[(name, threads)] = out
    medians = interleaved_medians(contestants, repeat)
    rows = []
    for threads in (1, 2):
        if not np.array_equal(outputs[("ours", threads)], outputs[("standard", threads)]):
            sys.exit("CodebookDequantize disagrees with Cast -> Gather")
        ours, standard_time = medians[("ours", threads)], medians[("standard", threads)]
        rows.append(
            [
                str(threads),
                f"{ours * 1e3:.1f} ms",
                f"{standard_time * 1e3:.1f} ms",
                f"**{ours / standard_time:.2f}**",
                f"{medians[('ours', 1)] / ours:.2f}x" if threads == 2 else "",
            ]
        )
    return rows


def call_benchmark(repeat: int, calls: int = 2000) -> list[list[str]]:
    """Seconds per session.run of tiny inputs (what the custom-op wrapper adds to a call)."""
    customop, opgen = _support.ort_library("test_customop"), _support.ort_library("ai_opgen")
    x = np.arange(4, dtype=np.float32)

    def runner(nodes, names, domains, library):
        io = (
            [tensor(n, TensorProto.FLOAT, [4]) for n in names],
            [tensor("Z", TensorProto.FLOAT, [4])],
        )
        sess = session(model(nodes, *io, domains), 1, library)
        feeds = {n: x for n in names}

        def run():
            for _ in range(calls):
                sess.run(None, feeds)

        return run, sess.run(None, feeds)[0]

    pair = ["X", "Y"]
    contestants, results = {}, {}
    contestants["CustomOpOne"], results["CustomOpOne"] = runner(
        [helper.make_node("CustomOpOne", pair, ["Z"], domain="test.customop")],
        pair,
        {"test.customop": 1},
        customop,
    )
    contestants["Add"], results["Add"] = runner(
        [helper.make_node("Add", pair, ["Z"])], pair, {}, None
    )
    counts = (2, 8, 32)
    for count in counts:
        names = [f"X_{i}" for i in range(count)]
        for who, domain, library in (("ours", "ai.opgen", opgen), ("builtin", "", None)):
            node = helper.make_node("Sum", names, ["Z"], domain=domain)
            domains = {domain: 1} if domain else {}
            key = f"Sum {who} {count}"
            contestants[key], results[key] = runner([node], names, domains, library)
    medians = {k: v / calls for k, v in interleaved_medians(contestants, repeat).items()}
    for count in counts:
        if not np.array_equal(results[f"Sum ours {count}"], results[f"Sum builtin {count}"]):
            sys.exit(f"Sum of {count} inputs disagrees with ONNX's Sum")

    def us(seconds: float) -> str:
        return f"{seconds * 1e6:.1f} µs"

    def per_input(who: str) -> float:
        return (medians[f"Sum {who} 32"] - medians[f"Sum {who} 2"]) / 30

    rows = [
        [
            "CustomOpOne (2 inputs) vs Add",
            us(medians["CustomOpOne"]),
            us(medians["Add"]),
            f"**{medians['CustomOpOne'] / medians['Add']:.2f}**",
        ]
    ]
    for count in counts:
        ours, builtin = medians[f"Sum ours {count}"], medians[f"Sum builtin {count}"]
        rows.append(
            [
                f"Sum of {count} inputs vs ONNX's Sum",
                us(ours),
                us(builtin),
                f"**{ours / builtin:.2f}**",
            ]
        )
    rows.append(
        [
            "each input from 2 to 32",
            us(per_input("ours")),
            us(per_input("builtin")),
            f"**{per_input('ours') / per_input('builtin'):.2f}**",
        ]
    )
    rows.append(
        [
            "Sum of 2 vs CustomOpOne (fixed arity, same work)",
            us(medians["Sum ours 2"]),
            us(medians["CustomOpOne"]),
            f"**{medians['Sum ours 2'] / medians['CustomOpOne']:.2f}**",
        ]
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--elements", type=int, default=10_000_000)
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    report(
        "Inverse, float32: ours vs com.microsoft::Inverse vs torch.linalg.inv "
        f"(median of {args.repeat}; target ratio <= 1.0 against the faster of the two)",
        table(
            ["batch", "threads", "ours", "built-in", "torch", "ours / best", "ours 1 -> 2 threads"],
            inverse_benchmark(args.repeat),
        ),
    )
    report(
        "One call through session.run on 4 float32 elements, one thread (median of "
        f"{args.repeat} runs of 2000 calls; targets: CustomOpOne within 1.05x of Add, a variadic "
        "op's further inputs no dearer than the built-in's)",
        table(["call", "ours", "reference", "ours / reference"], call_benchmark(args.repeat)),
    )
    report(
        f"Quantize vs ONNX Runtime's QuantizeLinear (opset 21), {args.elements:,} float32 "
        f"elements (median of {args.repeat}; target ratio <= 1.0)",
        table(
            ["to", "threads", "ours", "QuantizeLinear", "ours / built-in", "ours 1 -> 2 threads"],
            quantize_benchmark(args.elements, args.repeat),
        ),
    )
    report(
        f"CodebookDequantize (a tensor attribute) vs Cast -> Gather, {args.elements:,} uint8 "
        f"codes, 16 entries (median of {args.repeat}; target ratio <= 1.0)",
        table(
            ["threads", "ours", "Cast -> Gather", "ours / standard", "ours 1 -> 2 threads"],
            codebook_benchmark(args.elements, args.repeat),
        ),
    )
    rows, bandwidth = chain_benchmark(args.elements, args.repeat)
    report(
        f"CustomOpOne -> CustomOpTwo vs Add -> Round -> Cast, {args.elements:,} float32 elements "
        f"(median of {args.repeat}; targets: ratio <= 1.1, >= 70% of copy bandwidth; "
        f"single-thread numpy copy here: {bandwidth / 1e9:.1f} GB/s, reads + writes)",
        table(
            [
                "threads",
                "ours",
                "standard ops",
                "ours / standard",
                "ours: bytes moved / s",
                "ours 1 -> 2 threads",
            ],
            rows,
        ),
    )


if __name__ == "__main__":
    main()
