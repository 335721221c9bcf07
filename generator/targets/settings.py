"""The runtime targets' configuration keys and `opgen build` options, listed once (read by
config.py, cli.py and build.py; generator/target_settings.py says what they are)."""

from __future__ import annotations

from generator.target_settings import DeviceKernel, TargetSettings
from generator.targets import cuda_settings

SETTINGS: tuple[TargetSettings, ...] = (cuda_settings.SETTINGS,)
# The devices whose kernels `opgen new --device` scaffolds
DEVICE_KERNELS: tuple[DeviceKernel, ...] = tuple(k for s in SETTINGS for k in s.device_kernels)
