"""C++ view pieces both C++ emitters share (dest/cpp_kernel.py, targets/cpp_schema.py)."""

from __future__ import annotations

from generator.api import cpp
from generator.api.onnx import ATTR_TYPE as ATTR_PROTO
from generator.model.tensors import Attribute, TensorParam
from generator.model.types import DType
from generator.view import view


@view
class CppAttribute:
    name: str
    cpp_type: str  # std::optional<...> for an optional attribute without a default
    initializer: str  # ` = <default>`, or "" for an attribute without one
    comment: str
    required_literal: str  # "true" / "false"
    onnx_enum: str  # AttributeProto's enum value name
    name_literal: str
    doc_literal: str
    # OpSchema::Attr's last argument: `/*required=*/true|false`, or the default as ONNX's C++
    # schema holds it.
    schema_requirement: str

    @classmethod
    def of(cls, attr: Attribute) -> CppAttribute:
        return cls(
            name=attr.name,
            cpp_type=cpp.attribute_type(attr),
            initializer=f" = {cpp.attr_literal(attr)}" if attr.has_default else "",
            comment=" ".join(cpp.comment(attr.doc)) or attr.type.value,
            required_literal=cpp.bool_literal(attr.required),
            onnx_enum=ATTR_PROTO[attr.type],
            name_literal=cpp.string_literal(attr.name),
            doc_literal=cpp.string_literal(attr.doc),
            schema_requirement=(
                cpp.schema_default(attr)
                if attr.has_default
                else f"/*required=*/{cpp.bool_literal(attr.required)}"
            ),
        )


def concrete_dtype(tensor: TensorParam) -> DType:
    """The dtype of a tensor that has no type variable."""
    assert tensor.dtype is not None
    return tensor.dtype
