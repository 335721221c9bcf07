"""What an emitter may read besides its op or ops (every emitter takes it: see emitters.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.model.op import OpDef
from generator.model.package import GeneratedPackage


@dataclass(frozen=True)
class Emission:
    output_dir: Path
    onnx_ops: Mapping[tuple[str, str], OpDef]  # every ONNX op of the project, by (domain, type)
    package: GeneratedPackage
