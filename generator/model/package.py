"""The generated package as a whole: what the configuration says of it (generator/config.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratedPackage:
    name: str = "generated"  # the import name
    version: str = "0.1.0"  # of the ops' wheel
    build_dir: str = "../build"  # where `opgen build` puts the libraries, from the package
    # The targets' configuration keys (generator/target_settings.py): name, normalized value
    settings: tuple[tuple[str, str], ...] = ()

    def setting(self, name: str, default: str) -> str:
        return dict(self.settings).get(name, default)
