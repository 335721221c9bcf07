"""ONNX nodes as definitions write them: function bodies and export rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.errors import Location
from generator.model.types import AttrType


@dataclass(frozen=True)
class AttrRef:
    """`@name` in a node: the value of the definition's attribute `name`."""

    name: str


@dataclass(frozen=True)
class NodeAttribute:
    name: str
    type: AttrType
    value: Any  # a literal, a DType (an int attribute given as a dtype name), or an AttrRef


@dataclass(frozen=True)
class OnnxNode:
    """One node of a function body or an export: `Z, W = domain::Op<attr=value>(X, Y)`."""

    outputs: tuple[str, ...]
    domain: str  # "" for the standard ONNX domain
    op_type: str
    inputs: tuple[str, ...]
    attributes: tuple[NodeAttribute, ...]
    location: Location

    @property
    def qualified(self) -> str:
        return f"{self.domain}::{self.op_type}" if self.domain else self.op_type


@dataclass(frozen=True)
class Function:
    """The op is an ONNX function: a body of nodes (standard ops, at `opset`)."""

    opset: int
    nodes: tuple[OnnxNode, ...]


@dataclass(frozen=True)
class ExportRule:
    """How the PyTorch op exports: these nodes, when every attribute in `when` has its value."""

    when: tuple[tuple[str, Any], ...]
    nodes: tuple[OnnxNode, ...]


# Standard ONNX ops an export-only op's PyTorch implementation can run eagerly (spelled in
# api/python.py); other nodes of such an op must be ops of this project with a PyTorch op.
EAGER_STANDARD_OPS = frozenset({"Add", "Sub", "Mul", "Neg", "Identity", "Cast", "CastLike"})
