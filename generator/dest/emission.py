"""What an op emitter may read besides its op (every op emitter takes it: see emitters.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.model.op import OpDef


@dataclass(frozen=True)
class Emission:
    output_dir: Path
    onnx_ops: Mapping[tuple[str, str], OpDef]  # every ONNX op of the project, by (domain, type)
