"""What docs/opdef-format.md says of PyTorch's casts to float8, checked against the installed
torch: a reference written `.to(Q)` saturates like ONNX's Cast only in float8_e4m3fn."""

import math

import pytest
import torch

VALUES = [1000.0, 1.0e6, math.inf, -math.inf]


@pytest.mark.parametrize(
    "dtype,expected",
    [
        (torch.float8_e4m3fn, [448.0, 448.0, 448.0, -448.0]),  # saturates (Cast's saturate=1)
        (torch.float8_e5m2, [1024.0, math.inf, math.inf, -math.inf]),  # overflows to infinity
        (torch.float8_e4m3fnuz, [math.nan] * 4),  # overflows to NaN
        (torch.float8_e5m2fnuz, [1024.0, math.nan, math.nan, math.nan]),  # overflows to NaN
    ],
)
def test_pytorchs_float8_cast_saturates_in_e4m3fn_only(dtype, expected):
    got = torch.tensor(VALUES, dtype=torch.float32).to(dtype).float().tolist()
    assert len(got) == len(expected)
    for value, want in zip(got, expected, strict=True):
        assert value == want or (math.isnan(value) and math.isnan(want)), (got, expected)


def test_clamping_first_saturates_every_float8_type():
    """The reference's way to saturate as `opgen::float8e5m2(v)` and QuantizeLinear do."""
    x = torch.tensor([1.0e6, math.inf, -math.inf], dtype=torch.float32)  # past every range
    for dtype in (
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.float8_e4m3fnuz,
        torch.float8_e5m2fnuz,
    ):
        info = torch.finfo(dtype)
        got = torch.clamp(x, info.min, info.max).to(dtype).float().tolist()
        assert got == [info.max, info.max, info.min], (dtype, got)
