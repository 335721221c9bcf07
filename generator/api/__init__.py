"""Per-target mappings of the op model: C++, Python/PyTorch and ONNX spellings."""
