"""The names generated code gives its locals beside a user's names (a tensor `X` has the locals
`X_shape`, `X_present`, ...). One owner, because the emitters spell expressions over these
locals and the templates declare them; the reserved-name checks keep them from clashing."""

from __future__ import annotations


class Local:
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

    # Python (the ONNX OpSchema's inference function)
    @staticmethod
    def onnx_dims(tensor: str) -> str:
        """The tensor's list of TensorShapeProto.Dimension (None when absent or unknown)."""
        return f"{tensor}_dims"

    @staticmethod
    def onnx_attribute(name: str) -> str:
        return f"attr_{name}"

    @staticmethod
    def onnx_type(tensor: str) -> str:
        """The tensor's onnx.TypeProto (None when an optional input is absent)."""
        return f"{tensor}_type"

    # Python (the PyTorch op and the parity tests)
    @staticmethod
    def output_gradient(output: str) -> str:
        """The gradient of an output, a parameter of the autograd backward."""
        return f"grad_{output}"

    @staticmethod
    def random_sampler(case_index: int, tensor: str) -> str:
        """The parity tests' function drawing a tensor's values for one random case."""
        return f"_sample_{case_index}_{tensor}"
