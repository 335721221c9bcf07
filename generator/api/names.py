"""The names generated code gives its locals beside a user's names (a tensor `X` has the locals
`X_shape`, `X_present`, ...). One owner, because the emitters spell expressions over these
locals, the templates declare them, and the parser refuses a user name that is another's local
(`derived_from`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache


class Local:
    """Each static method is one naming rule: the local it names for a user's name."""

    @classmethod
    @cache
    def rules(cls) -> dict[str, Callable[[str], str]]:
        """The rules that name a local after one user name. (random_sampler's names carry a
        case index too; they are module-level functions of the parity tests, where no user
        name is a global, and no two of them can be equal.)"""
        return {
            rule: method.__func__
            for rule, method in vars(cls).items()
            if isinstance(method, staticmethod) and method.__func__.__code__.co_argcount == 1
        }

    @classmethod
    def derived_from(cls, name: str) -> frozenset[str]:
        """Every local the generated code may declare for the user's name `name`."""
        return frozenset(rule(name) for rule in cls.rules().values())

    @classmethod
    def describe(cls, local: str, name: str) -> str:
        """What the local `local` of `name` holds, in words: "its shape"."""
        rules = [rule for rule, spell in cls.rules().items() if spell(name) == local]
        return " or ".join("its " + rule.replace("_", " ") for rule in rules)

    # C++ wrappers (ONNX Runtime, pybind11, ONNX schema inference)
    @staticmethod
    def shape(tensor: str) -> str:
        """The tensor's shape: opgen::Shape, a SymDim vector or a TensorShapeProto."""
        return f"{tensor}_shape"

    @staticmethod
    def present(tensor: str) -> str:
        """Whether an optional input is present (a C++ bool)."""
        return f"{tensor}_present"

    @staticmethod
    def output_shape_member(tensor: str) -> str:
        """An output's shape in the kernel wrappers: a member of infer_shapes' result."""
        return f"shapes.{tensor}"

    @staticmethod
    def output_shape(tensor: str) -> str:
        """The TensorShapeProto* an ONNX C++ inference function fills for an output."""
        return f"{tensor}_out"

    @staticmethod
    def schema_attribute(name: str) -> str:
        """An attribute's value in the ONNX C++ inference function."""
        return f"attr_{name}"

    @staticmethod
    def kernel_attribute(name: str) -> str:
        """An attribute's value in the kernel wrappers (the Attributes struct's member)."""
        return f"attrs.{name}"

    @staticmethod
    def runtime_value(tensor: str) -> str:
        """The ONNX Runtime value (Ort::ConstValue / UnownedValue) of a tensor."""
        return f"{tensor}_value"

    @staticmethod
    def optional_view(tensor: str) -> str:
        """The opgen::Input an optional input's pointer points to when it is present."""
        return f"{tensor}_view"

    @staticmethod
    def array(tensor: str) -> str:
        """The numpy array (py::array) of a tensor in the pybind11 binding."""
        return f"{tensor}_array"

    @staticmethod
    def value_index(tensor: str) -> str:
        """The loop index over a variadic input's values in the C++ wrappers."""
        return f"{tensor}_index"

    @staticmethod
    def dtype_name(tensor: str) -> str:
        """An input's numpy dtype name, for the pybind11 binding's unsupported-dtype message."""
        return f"{tensor}_dtype"

    @staticmethod
    def attribute_proto(name: str) -> str:
        """The AttributeProto* an ONNX C++ inference function reads an attribute from."""
        return f"{Local.schema_attribute(name)}_proto"

    @staticmethod
    def absent_shape(tensor: str) -> str:
        """The empty TensorShapeProto an absent optional input's shape refers to."""
        return f"{tensor}_absent"

    @staticmethod
    def value_info(tensor: str) -> str:
        """The ValueInfoProto* of a tensor in the C++ schema test's model."""
        return f"{tensor}_info"

    @staticmethod
    def inferred_type(tensor: str) -> str:
        """An output's inferred type, as text, in the C++ schema test."""
        return f"got_{tensor}"

    @staticmethod
    def node_attribute(name: str) -> str:
        """The AttributeProto* the C++ schema test adds to its node."""
        return f"{name}_attribute"

    # Python (the ONNX OpSchema's inference function)
    @staticmethod
    def onnx_dims(tensor: str) -> str:
        """The tensor's list of TensorShapeProto.Dimension (None when absent or unknown)."""
        return f"{tensor}_dims"

    @staticmethod
    def onnx_type(tensor: str) -> str:
        """The tensor's TypeProto (None when an optional input is absent)."""
        return f"{tensor}_type"

    @staticmethod
    def onnx_types(tensor: str) -> str:
        """A variadic input's TypeProtos, one per value."""
        return f"{tensor}_types"

    @staticmethod
    def onnx_attribute(name: str) -> str:
        return f"attr_{name}"

    # Python (the PyTorch op and the parity tests)
    @staticmethod
    def incoming_gradient(output: str) -> str:
        """The gradient flowing into an output: a parameter of the autograd backward, as the
        gradient formulas name it."""
        return f"grad_{output}"

    @staticmethod
    def random_sampler(case_index: int, tensor: str) -> str:
        """The parity tests' function drawing a tensor's values for one random case."""
        return f"_sample_{case_index}_{tensor}"
