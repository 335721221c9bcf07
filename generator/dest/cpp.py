"""C++ view pieces both C++ emitters share (dest/cpp_kernel.py, dest/cpp_schema.py)."""

from __future__ import annotations

from generator.api import cpp
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.model.tensors import Attribute, TensorParam
from generator.model.types import DType
from generator.view import view


@view
class CppAttribute:
    name: str
    cpp_type: str
    initializer: str  # ` = <default>`, or "" for a required attribute
    comment: str
    required: bool
    required_literal: str  # "true" / "false"
    onnx_enum: str  # AttributeProto's enum value name
    name_literal: str
    doc_literal: str
    schema_default: str | None  # as ONNX's C++ schema holds it; None when required

    @classmethod
    def of(cls, attr: Attribute) -> CppAttribute:
        return cls(
            name=attr.name,
            cpp_type=cpp.ATTR_TYPE[attr.type],
            initializer="" if attr.required else f" = {cpp.attr_literal(attr)}",
            comment=" ".join(cpp.comment(attr.doc)) or attr.type.value,
            required=attr.required,
            required_literal=cpp.bool_literal(attr.required),
            onnx_enum=ATTR_PROTO[attr.type],
            name_literal=cpp.string_literal(attr.name),
            doc_literal=cpp.string_literal(attr.doc),
            schema_default=None if attr.required else cpp.schema_default(attr),
        )


def concrete_dtype(tensor: TensorParam) -> DType:
    """The dtype of a tensor that has no type variable."""
    assert tensor.dtype is not None
    return tensor.dtype
