"""String ops in ONNX Runtime: ai.opgen::StringReplace against what a user would pick instead.

    python benchmarks/string_ops.py [--repeat 7] [--strings 200000]

The same replacement (a literal pattern, every occurrence) on the same string tensor, through
session.run: ours, onnxruntime-extensions' StringRegexReplace (RE2, the pattern escaped), ONNX's
Identity (what converting the strings into and out of ONNX Runtime alone costs), and Python's
str.replace over the array, on 1 and 2 intra-op threads. Every
contestant's answer is checked against str.replace first. Needs `python -m generator build`."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import interleaved_medians, machine, report, table  # noqa: E402

from generated import _support  # noqa: E402

STRING = TensorProto.STRING


def _session(nodes, inputs, domain: str, threads: int, library: str) -> ort.InferenceSession:
    graph = helper.make_graph(
        nodes, "bench", inputs, [helper.make_tensor_value_info("Y", STRING, None)]
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid(domain, 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.register_custom_ops_library(library)
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def strings(count: int, seed: int = 0) -> np.ndarray:
    """Text-like strings of 20 to 60 characters (words of a few letters, some accented)."""
    rng = np.random.default_rng(seed)
    words = ["the", "a", "café", "naïve", "ab", "data", "ß", "token", "x"]
    return np.array(
        [" ".join(rng.choice(words, rng.integers(5, 12))) for _ in range(count)], dtype=object
    )


def benchmark(count: int, repeat: int) -> list[list[str]]:
    from onnxruntime_extensions import get_library_path

    x = strings(count)
    pattern, rewrite = "a", "<é>"
    want = np.vectorize(lambda s: s.replace(pattern, rewrite), otypes=[object])(x)
    text = helper.make_tensor_value_info("X", STRING, None)
    rows = []
    for threads in (1, 2):
        ours = _session(
            [
                helper.make_node(
                    "StringReplace",
                    ["X"],
                    ["Y"],
                    domain="ai.opgen",
                    pattern=pattern,
                    rewrite=rewrite,
                )
            ],
            [text],
            "ai.opgen",
            threads,
            str(_support.ort_library("ai_opgen")),
        )
        theirs = _session(
            [
                helper.make_node(
                    "StringRegexReplace", ["X", "P", "R"], ["Y"], domain="ai.onnx.contrib"
                )
            ],
            [
                text,
                helper.make_tensor_value_info("P", STRING, [1]),
                helper.make_tensor_value_info("R", STRING, [1]),
            ],
            "ai.onnx.contrib",
            threads,
            get_library_path(),
        )
        their_feeds = {
            "X": x,
            "P": np.array([re.escape(pattern)], dtype=object),
            "R": np.array([rewrite], dtype=object),
        }
        identity = _session(
            [helper.make_node("Identity", ["X"], ["Y"])],
            [text],
            "ai.opgen",
            threads,
            str(_support.ort_library("ai_opgen")),
        )
        for name, got in (
            ("ours", ours.run(None, {"X": x})[0]),
            ("onnxruntime-extensions", theirs.run(None, their_feeds)[0]),
        ):
            if not (got == want).all():
                sys.exit(f"{name} disagrees with str.replace")
        medians = interleaved_medians(
            {
                "ours": lambda ours=ours: ours.run(None, {"X": x}),
                "extensions": lambda theirs=theirs, feeds=their_feeds: theirs.run(None, feeds),
                "identity": lambda identity=identity: identity.run(None, {"X": x}),
                "python": lambda: [s.replace(pattern, rewrite) for s in x],
            },
            repeat,
        )

        def ms(seconds: float) -> str:
            return f"{seconds * 1e3:.1f} ms"

        rows.append(
            [
                str(threads),
                ms(medians["ours"]),
                ms(medians["extensions"]),
                ms(medians["identity"]),
                ms(medians["python"]),
                f"**{medians['ours'] / medians['extensions']:.2f}**",
                f"{medians['ours'] / medians['python']:.2f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--strings", type=int, default=200_000)
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    report(
        f"StringReplace of 'a' by '<é>' in {args.strings:,} strings of 20 to 60 characters, "
        f"through session.run (median of {args.repeat}; the time includes ONNX Runtime's "
        "conversion of the numpy strings in and out, the same for both)",
        table(
            [
                "threads",
                "ours",
                "onnxruntime-extensions StringRegexReplace",
                "ONNX's Identity (strings in and out only)",
                "Python str.replace loop",
                "ours / extensions",
                "ours / Python",
            ],
            benchmark(args.strings, args.repeat),
        ),
    )


if __name__ == "__main__":
    main()
