"""What a runtime target adds to the project's configuration and to `opgen build`, as data in
its own module (generator/targets/settings.py lists them): config.py, cli.py and build.py read
them and name no target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigKey:
    """A key of [tool.opgen] (or opgen.toml), passed to CMake by `opgen build`."""

    name: str
    doc: str  # what it sets, with its default (config.KEYS)
    default: str
    normalize: Callable[[str], str]  # the configured text as the generator and CMake take it
    problem: Callable[[str], str | None]  # why a configured text is wrong, or None
    cmake_variable: str  # the cache variable `opgen build` sets to the normalized value


@dataclass(frozen=True)
class BuildChoice:
    """An option of `opgen build` choosing how a target builds; CMake gets the choice
    upper-cased in a cache variable."""

    flag: str  # --name
    choices: tuple[str, ...]
    default: str
    help: str
    cmake_variable: str
    # A choice that --sanitize refuses (exit 2), and why
    refused_with_sanitize: str = ""
    sanitize_conflict: str = ""

    @property
    def dest(self) -> str:
        """The attribute of argparse's namespace."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class DeviceKernel:
    """A device whose kernel `opgen new --device NAME` scaffolds beside the C++ one."""

    device: str  # --device's value
    field: str  # the definition's kernel field naming the file
    suffix: str  # the file is <op_id><suffix>, beside the definition
    # "module:function" rendering the stub, (op, definition file, package folder, StubNames of
    # generator/dest/common.py) -> text; loaded only when one is written
    stub: str
    help: str


@dataclass(frozen=True)
class TargetSettings:
    keys: tuple[ConfigKey, ...] = ()
    choices: tuple[BuildChoice, ...] = ()
    device_kernels: tuple[DeviceKernel, ...] = ()
