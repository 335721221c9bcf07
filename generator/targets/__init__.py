"""The runtime targets, a module each: its views of an op and its emitter. What several
targets need about a kernel op (its views, instantiations and wrapper facts) is computed once
in dest/cpp_kernel.py."""

from generator.target_settings import TargetSettings
from generator.targets import cuda

# The targets' configuration keys and `opgen build` options (read by config.py and build.py)
SETTINGS: tuple[TargetSettings, ...] = (cuda.SETTINGS,)
