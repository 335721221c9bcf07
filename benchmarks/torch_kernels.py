"""Generated kernels in PyTorch: per-call overhead over the reference expression on tiny
tensors (the native registration, the default, against the Python registrations of the same
kernel), throughput on large ones, and a check that the torch -> numpy hand-off of the
pybind11 path copies nothing.

    python benchmarks/torch_kernels.py [--repeat 7] [--calls 2000]

PyTorch runs on one thread here (the pybind11 path runs kernels on one thread; the native one
would use PyTorch's thread pool). Needs `python -m generator build`."""

from __future__ import annotations

import argparse
import functools
import sys
import tracemalloc
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import interleaved_medians, machine, report, table  # noqa: E402

import generated  # noqa: E402,F401 (registers the custom ops)
from generated import _support  # noqa: E402


def reference_inverse(x):
    return torch.linalg.inv(x)


_LIBRARIES: list[torch.library.Library] = []


def _pybind_cpu(domain_ident: str, op_id: str):
    """An op's CPU kernel as the Python registrations (`api: library`, `custom_op`) have it:
    torch -> numpy, the pybind11 module, numpy -> torch (one output)."""

    def cpu(*tensors):
        kernel = getattr(_support.kernels(domain_ident), op_id)
        (output,) = kernel(*(_support.to_numpy(t) for t in tensors))
        return _support.from_numpy(output)

    return cpu


def _redispatching(op):
    """A Python Autograd kernel that goes straight to the CPU kernel."""

    def autograd(keyset, *args):
        return op.redispatch(keyset & torch._C._after_autograd_keyset, *args)

    return autograd


def cases():
    """(name, generated op call, reference call, tiny inputs, large inputs or None)."""
    ops = torch.ops
    generator = torch.Generator().manual_seed(0)

    def matrices(count, n):
        return (torch.randn(count, n, n, generator=generator) + n * torch.eye(n),)

    def pair(count):
        return torch.randn(count, generator=generator), torch.randn(count, generator=generator)

    def requiring_grad(tensors):
        return (tensors[0].clone().requires_grad_(), *tensors[1:])

    # The same kernel as the Python registrations would register it, for comparison with the
    # default (`native`): `library` (define/impl from Python, fake kernel, and an Autograd
    # kernel that only redispatches, as the generated one does when no gradient can flow) and
    # `custom_op`.
    from generated.custom_op_one import torch_op as one
    from generated.inverse import torch_op as inverse

    library = torch.library.Library("bench_library", "DEF")
    _LIBRARIES.append(library)  # a Library unregisters its ops when it is collected
    for module, domain, op_id in (
        (one, "test_customop", "custom_op_one"),
        (inverse, "ai_opgen", "inverse"),
    ):
        library.define(op_id + module.SCHEMA)
        library.impl(op_id, _pybind_cpu(domain, op_id), "CPU")
        torch.library.register_fake(f"bench_library::{op_id}", module._fake, lib=library)
        library.impl(
            op_id,
            _redispatching(getattr(ops.bench_library, op_id).default),
            "Autograd",
            with_keyset=True,
        )
    with_custom_op = torch.library.custom_op(
        "bench_api::custom_op_one",
        _pybind_cpu("test_customop", "custom_op_one"),
        mutates_args=(),
        device_types="cpu",
        schema=one.SCHEMA,
    )
    with_custom_op.register_fake(one._fake)
    add = lambda x, y: x + y  # noqa: E731

    def values(count: int, size: int) -> tuple:
        return tuple(torch.randn(size, generator=generator) for _ in range(count))

    def variadic_sum(*tensors):  # the variadic op takes one list (Tensor[])
        return ops.opgen.sum(list(tensors))

    def python_sum(*tensors):
        return functools.reduce(torch.add, tensors)

    variadic = [
        (f"Sum of {count} values (`Tensor[]`)", variadic_sum, python_sum, values(count, 4), None)
        for count in (2, 8, 32)
    ]
    return variadic + [
        ("CustomOpOne (X + Y)", ops.test_customop.custom_op_one, add, pair(4), pair(10_000_000)),
        ("CustomOpOne" + INFERENCE, ops.test_customop.custom_op_one, add, pair(4), None),
        (
            "same, X requires grad",
            ops.test_customop.custom_op_one,
            add,
            requiring_grad(pair(4)),
            None,
        ),
        (
            "CustomOpOne registered from Python (`api: library`, the pybind11 kernel)",
            ops.bench_library.custom_op_one,
            add,
            pair(4),
            pair(10_000_000),
        ),
        (
            "CustomOpOne registered with `api: custom_op`",
            with_custom_op,
            add,
            pair(4),
            pair(10_000_000),
        ),
        ("Inverse", ops.opgen.inverse, reference_inverse, matrices(1, 4), matrices(1_000, 64)),
        (
            "same, X requires grad",
            ops.opgen.inverse,
            reference_inverse,
            requiring_grad(matrices(1, 4)),
            None,
        ),
        (
            "Inverse registered from Python (`api: library`, the pybind11 kernel)",
            ops.bench_library.inverse,
            reference_inverse,
            matrices(1, 4),
            matrices(1_000, 64),
        ),
    ]


def zero_copy_evidence() -> tuple[list[list[str]], bool]:
    """The addresses torch and numpy see, and what one large call allocates."""
    x, y = torch.randn(10_000_000), torch.randn(10_000_000)
    as_numpy = _support.to_numpy(x)
    back = _support.from_numpy(as_numpy)
    same_address = as_numpy.ctypes.data == x.data_ptr() == back.data_ptr()
    # numpy reports its allocations to tracemalloc; torch's do not show there. A call that copied
    # its inputs into numpy would allocate 80 MB more than its 40 MB output.
    # Through the pybind11 path (the Python registration cases() made): the native one has no
    # numpy at all.
    torch.ops.bench_library.custom_op_one(x, y)
    tracemalloc.start()
    z = torch.ops.bench_library.custom_op_one(x, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    output_bytes = z.numel() * z.element_size()
    return [
        [
            "`_support.to_numpy(t)` / `from_numpy(a)` address",
            "same as `t.data_ptr()`" if same_address else "DIFFERENT (a copy)",
        ],
        [
            "numpy memory allocated by one CustomOpOne call on two 40 MB inputs (tracemalloc peak)",
            f"{peak / 1e6:.1f} MB (its output is {output_bytes / 1e6:.1f} MB)",
        ],
    ], same_address and peak < 1.1 * output_bytes


INFERENCE = " in `torch.inference_mode()`"


def batch(call, inputs, calls: int, name: str) -> None:
    """`calls` calls; in inference mode (no Autograd kernel runs) for the cases named so."""
    if name.endswith(INFERENCE):
        with torch.inference_mode():
            for _ in range(calls):
                call(*inputs)
    else:
        for _ in range(calls):
            call(*inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"Machine: {machine()}")
    overhead_rows, large_rows = [], []
    for name, op, reference, tiny, large in cases():
        with torch.no_grad():
            torch.testing.assert_close(op(*tiny), reference(*tiny))
        # Batches of `calls` calls, ours and the reference in turn.
        batches = interleaved_medians(
            {
                "ours": lambda op=op, tiny=tiny, name=name: batch(op, tiny, args.calls, name),
                "reference": lambda reference=reference, tiny=tiny, name=name: batch(
                    reference, tiny, args.calls, name
                ),
            },
            args.repeat,
        )
        ours, ref = batches["ours"] / args.calls, batches["reference"] / args.calls
        overhead_rows.append(
            [
                name,
                f"{ours * 1e6:.1f} µs",
                f"{ref * 1e6:.1f} µs",
                f"**{(ours - ref) * 1e6:.1f} µs**",
            ]
        )
        if large is None:
            continue
        medians = interleaved_medians(
            {
                "ours": lambda op=op, large=large: op(*large),
                "reference": lambda reference=reference, large=large: reference(*large),
            },
            args.repeat,
        )
        torch.testing.assert_close(op(*large), reference(*large), rtol=1e-3, atol=1e-4)
        shape = " x ".join(str(list(t.shape)) for t in large)
        large_rows.append(
            [
                f"{name} on {shape}",
                f"{medians['ours'] * 1e3:.1f} ms",
                f"{medians['reference'] * 1e3:.1f} ms",
                f"{medians['ours'] / medians['reference']:.2f}",
            ]
        )
    report(
        f"Per-call overhead on tiny tensors (median of {args.repeat} x {args.calls} calls; "
        "target: at most 1 µs for the native CustomOpOne)",
        table(["op", "generated op", "reference", "overhead"], overhead_rows),
    )
    report(
        f"Large tensors, one thread (median of {args.repeat})",
        table(["op", "generated op", "reference", "ratio"], large_rows),
    )
    rows, zero_copy = zero_copy_evidence()
    report("Zero-copy hand-off", table(["check", "result"], rows))
    if not zero_copy:
        sys.exit("the torch -> numpy hand-off copied")


if __name__ == "__main__":
    main()
