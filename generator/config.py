"""A project's opgen configuration: `[tool.opgen]` in pyproject.toml, or an opgen.toml.

Every command finds it the same way (the working directory, then its parents up to the
repository's root), reads it with the definitions' located loader, and lets its flags override
it. Paths in it are relative to the file's folder; without a file, to the working directory.
"""

from __future__ import annotations

import argparse
import functools
import json
import keyword
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from generator.errors import DefinitionError, DefinitionErrors, ErrorCollector
from generator.model.op import TorchApi
from generator.model.package import GeneratedPackage
from generator.parse import read
from generator.source import Node, load_definition_file

OPGEN_TOML = "opgen.toml"
PYPROJECT_TOML = "pyproject.toml"
DEFAULT_PACKAGE = "generated"
DEFAULT_VERSION = "0.1.0"

# Each key and what it sets (the README's table says the same in prose).
KEYS = {
    "definitions": "the folder of op definitions and kernels (default: opdefs)",
    "package": f"the generated package's import name (default: {DEFAULT_PACKAGE})",
    "package-dir": "the generated package's folder (default: the package name)",
    "build-dir": "where `opgen build` puts the libraries (default: build)",
    "torch-api": "how ops with a kernel are registered with PyTorch unless their definition "
    "says (default: native)",
    "version": f"the version of the ops' wheel (default: {DEFAULT_VERSION})",
}
# Import names a generated package must not take: it would shadow opgen, what opgen or the
# generated code runs on, or the tools that build and test it. (An installed module of the
# same name is refused too: see package_problem.)
_TAKEN_NAMES = frozenset(
    """generator torch onnx onnxruntime onnxscript onnx_ir numpy ml_dtypes pybind11 jinja2
    markupsafe yaml black packaging click pathspec platformdirs mypy_extensions pytokens
    pytest _pytest pluggy iniconfig hypothesis setuptools pkg_resources pip wheel flit_core
    scikit_build_core typing_extensions conftest test tests sympy networkx filelock fsspec
    mpmath triton functorch torchgen""".split()
)


@dataclass(frozen=True)
class Config:
    """What a run uses, with the flags applied; paths as given (relative to the working
    directory) or absolute."""

    file: Path | None  # the configuration read, if any
    definitions: Path
    package: str
    package_dir: Path
    build_dir: Path
    torch_api: TorchApi
    version: str

    def generated_package(self) -> GeneratedPackage:
        """What the generated code is told of its package. Its build folder is relative to the
        package's folder: where the package looks for its libraries when not installed."""
        build_dir = os.path.relpath(self.build_dir.absolute(), self.package_dir.absolute())
        return GeneratedPackage(self.package, self.version, Path(build_dir).as_posix())


class ConfigError(Exception):
    """Two configuration files in one folder, or a --config that cannot be used."""


def find(start: Path | None = None) -> Path | None:
    """The configuration that applies in `start` (the working directory): an opgen.toml, or a pyproject.toml with a
    [tool.opgen] table, in `start` or the nearest parent, stopping at the repository's root
    (a folder holding .git). Two in one folder is an error: which one applies is not obvious."""
    try:
        folder = (start or Path.cwd()).absolute()
    except FileNotFoundError:
        raise ConfigError("the working directory no longer exists") from None
    while True:
        found = [
            path
            for path in (folder / OPGEN_TOML, folder / PYPROJECT_TOML)
            if path.is_file() and (path.name == OPGEN_TOML or _has_opgen_table(path))
        ]
        if len(found) == 2:
            raise ConfigError(
                f"both {found[0]} and {found[1]} configure opgen; keep one ([tool.opgen] in "
                "pyproject.toml, or opgen.toml)"
            )
        if found:
            return found[0]
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def _has_opgen_table(pyproject: Path) -> bool:
    """Whether a pyproject.toml has a [tool.opgen] table: a cheap look at its lines first
    (most have none), then the located loader, which reports a malformed file."""
    try:
        text = pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if "opgen" not in text:
        return False
    root = _located(pyproject)
    tool = root.value.get("tool") if root.is_mapping else None
    return tool is not None and tool.is_mapping and "opgen" in tool.value


def _located(path: Path) -> Node:
    """A configuration file, read once while it is unchanged: finding it and reading its table
    both need it (and a process may run several commands)."""
    try:
        status = path.stat()
    except OSError:  # the loader reports it, located
        return load_definition_file(path, _shown(path))
    return _located_version(path.absolute(), status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=8)
def _located_version(path: Path, mtime_ns: int, size: int) -> Node:
    return load_definition_file(path, _shown(path))


def _shown(path: Path) -> str:
    """A path as messages show it: relative to the working directory when under it."""
    try:
        return path.absolute().relative_to(Path.cwd().absolute()).as_posix()
    except ValueError:
        return path.as_posix()


def _table(path: Path) -> Node | None:
    """The opgen table of a configuration file (None for an opgen.toml that is empty)."""
    root = _located(path)
    if path.name == OPGEN_TOML:
        return root if root.value else None
    table: Node = root.value["tool"].value["opgen"]
    return table


def load(args: argparse.Namespace) -> Config:
    """The configuration for a command: the file (--config, else found from the working
    directory), then the flags that the command has (--opdefs-dir, --output-dir, --build-dir,
    --package) over it. Raises DefinitionErrors (located) or ConfigError."""
    explicit = getattr(args, "config", None)
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"--config {explicit}: no such file")
        if explicit.suffix != ".toml":
            raise ConfigError(f"--config {explicit}: expected an opgen.toml or a pyproject.toml")
        if explicit.name != OPGEN_TOML and not _has_opgen_table(explicit):
            raise ConfigError(f"--config {explicit}: has no [tool.opgen] table")
        file: Path | None = explicit
    else:
        file = find()
    values = _read(file) if file is not None else {}
    # Paths in the file are relative to its folder, shown relative to the working directory.
    base = Path(os.path.relpath(file.absolute().parent)) if file is not None else Path()

    def path(key: str, flag: str, default: str) -> Path:
        given = getattr(args, flag, None)
        return Path(given) if given is not None else base / values.get(key, default)

    definitions = path("definitions", "opdefs_dir", "opdefs")
    build_dir = path("build-dir", "build_dir", "build")
    if file is None and getattr(args, "build_dir", None) is None:
        # Beside the definitions folder, as generated files name definitions from its parent:
        # the same output from any working directory.
        project_root = Path(os.path.abspath(definitions)).parent
        build_dir = Path(os.path.relpath(project_root / "build"))
    package_dir = None
    if getattr(args, "output_dir", None) is not None:
        package_dir = Path(args.output_dir)
    elif "package-dir" in values:
        package_dir = base / values["package-dir"]
    package = getattr(args, "package", None) or values.get("package")
    if package is None and package_dir is not None:  # named after its folder, as Python imports it
        package = Path(os.path.abspath(package_dir)).name
    package = package or DEFAULT_PACKAGE
    package_dir = package_dir or base / package
    # Where things go first (a folder overlapping another is the larger mistake), then names.
    _check_apart(definitions, package_dir, build_dir)
    flag = getattr(args, "package", None)
    # A name from the file was checked where it was read, with its location.
    problem = package_problem(package) if flag or "package" not in values else None
    if problem and flag:
        raise ConfigError(f"--package {package}: {problem}")
    if problem:
        raise ConfigError(
            f"the package folder {package_dir} cannot be imported as a package: {problem}; "
            "give the package another folder (or name it with --package)"
        )
    if Path(os.path.abspath(package_dir)).name != package:
        raise ConfigError(
            f"the package folder {package_dir} must be named {package}, as the package: Python "
            "imports a package by its folder's name"
        )
    return Config(
        file=file,
        definitions=definitions,
        package=package,
        package_dir=package_dir,
        build_dir=build_dir,
        torch_api=TorchApi[values.get("torch-api", TorchApi.native.name)],
        version=normalized_version(values.get("version", DEFAULT_VERSION)),
    )


def _check_apart(definitions: Path, package_dir: Path, build_dir: Path) -> None:
    """The three folders must not overlap: generation writes (and deletes orphans in) the
    package folder, which would touch hand-written kernels or build files, and the package
    would carry the build into its wheel."""
    folders = {
        "the definitions folder": definitions,
        "the package folder": package_dir,
        "the build folder": build_dir,
    }
    named = list(folders.items())
    for index, (first, first_path) in enumerate(named):
        for second, second_path in named[index + 1 :]:
            a, b = first_path.resolve(), second_path.resolve()
            if a.is_relative_to(b) or b.is_relative_to(a):
                raise ConfigError(
                    f"{first} {first_path} and {second} {second_path} overlap; keep them "
                    "apart (definitions and hand-written kernels, generated files, build files)"
                )


def _read(file: Path) -> dict[str, str]:
    """The table's values, each checked; every problem is reported, located."""
    table = _table(file)
    if table is None:
        return {}
    errors = ErrorCollector()
    if file.name == OPGEN_TOML and "tool" in table.value:
        tool = table.value["tool"]
        raise DefinitionErrors(
            [
                DefinitionError(
                    tool.key_location or tool.location,
                    "tool",
                    "opgen.toml holds the keys themselves, without a [tool.opgen] table (that "
                    "table is for pyproject.toml)",
                )
            ]
        )
    fields = errors.attempt(read.mapping, table, set(KEYS), set(), errors) or {}
    values: dict[str, str] = {}
    for key, node in fields.items():
        text = errors.attempt(read.string, node)
        if text is None:
            continue
        problem = _value_problem(key, text)
        if problem:
            errors.add(node.error(problem))
        else:
            values[key] = text
    errors.raise_if_any()
    return values


def _value_problem(key: str, text: str) -> str | None:
    match key:
        case "package":
            return package_problem(text)
        case "torch-api":
            if text in TorchApi.__members__:
                return None
            hint = read.closest(text, set(TorchApi.__members__))
            return f"'{text}' is not one of {list(TorchApi.__members__)}" + (
                f" (did you mean '{hint}'?)" if hint else ""
            )
        case "version":
            return version_problem(text)
        case _:  # a folder
            if not text or "\0" in text:
                return "expected a folder's path"
            return None


def package_problem(name: str) -> str | None:
    """Why `name` cannot be the generated package's import name (and its wheel's name), or
    None."""
    if not name.isidentifier() or not name.isascii():
        return f"'{name}' is not a Python identifier ([A-Za-z_][A-Za-z0-9_]*)"
    if name.startswith("_") or name.endswith("_"):
        return f"'{name}' starts or ends with '_', which a wheel's name may not"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"'{name}' is a Python keyword"
    if name in sys.stdlib_module_names or name in _TAKEN_NAMES:
        return f"'{name}' is the name of a module it would shadow; choose another"
    installed = _installed_elsewhere(name)
    if installed is not None:
        return (
            f"'{name}' is the name of a module installed here ({installed}), which it would "
            "shadow; choose another"
        )
    return None


def _installed_elsewhere(name: str) -> str | None:
    """Where this Python imports `name` from, unless that is a package opgen generated under
    that name (the project's own package, or its wheel installed) or nothing."""
    import importlib.machinery

    # The path finder alone: no import runs, and the working directory (which `python -m`
    # puts first on sys.path, and which may hold the generated package) is not searched.
    spec = importlib.machinery.PathFinder.find_spec(
        name, [entry for entry in sys.path if entry not in ("", os.getcwd())]
    )
    if spec is None or spec.origin is None:  # nothing, or a mere folder (a namespace package)
        return None
    locations = list(spec.submodule_search_locations or []) or [spec.origin]
    for location in locations:
        info = Path(location) / "_package.py"
        if info.is_file() and f"NAME = {json.dumps(name)}" in info.read_text(errors="replace"):
            return None
    return locations[0] or name


def normalized_version(text: str) -> str:
    """The version as a wheel's metadata spells it (`v1.0` gives `1.0`)."""
    from packaging.version import Version

    return str(Version(text))


def version_problem(text: str) -> str | None:
    """Why `text` is not a version a wheel can carry (PEP 440), or None."""
    from packaging.version import InvalidVersion, Version  # black depends on packaging

    try:
        Version(text)
    except InvalidVersion:
        return f"'{text}' is not a PEP 440 version (such as 1.0.2)"
    return None


def add_arguments(parser: argparse.ArgumentParser, *flags: str) -> None:
    """The flags that override the configuration, for a command that uses them."""
    parser.add_argument(
        "--config", type=Path, help="the configuration file (default: found from here up)"
    )
    helps = {
        "opdefs_dir": ("--opdefs-dir", "the definitions' folder"),
        "output_dir": ("--output-dir", "the generated package's folder"),
        "build_dir": ("--build-dir", "the build folder"),
        "package": ("--package", "the generated package's import name"),
    }
    for flag in flags:
        option, help_text = helps[flag]
        kind = str if flag == "package" else Path
        parser.add_argument(option, type=kind, help=f"{help_text} (overrides the configuration)")


def apply(args: argparse.Namespace) -> Config | None:
    """Loads the configuration into args (opdefs_dir, output_dir, build_dir, package, config)
    for the command's code; prints the problem and returns None when it cannot be used."""
    try:
        config = load(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    except (DefinitionError, DefinitionErrors) as problem:
        for error in problem.errors if isinstance(problem, DefinitionErrors) else [problem]:
            print(f"error: {error}", file=sys.stderr)
        return None
    args.build_dir_given = getattr(args, "build_dir", None) is not None
    args.opdefs_dir = config.definitions
    args.output_dir = config.package_dir
    args.build_dir = config.build_dir
    args.package = config.package
    args.settings = config
    return config


def package_for_folder(folder: Path) -> str:
    """A package name made from a folder's name (`my-ops` gives `my_ops`), for `opgen new`
    in a repository without configuration."""
    name = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in folder.name)
    name = name.strip("_").lower()
    problem = package_problem(name) if name else "it has no letters to make a name of"
    if problem:
        raise ConfigError(
            f"cannot name the package after the folder {folder.name!r}: {problem}; give "
            "--package NAME"
        )
    return name


def write_initial(settings: Config) -> Path:
    """Writes the configuration `opgen new` starts a repository with, in the working directory:
    a [tool.opgen] table appended to its pyproject.toml if it has one (and the result still
    parses), else an opgen.toml. Returns the file written."""
    from generator.writer import write_atomic

    def relative(path: Path) -> str:  # as a TOML string (JSON's escapes are TOML's)
        return json.dumps(Path(os.path.relpath(path.absolute())).as_posix())

    lines = [
        "# opgen's configuration: every opgen command reads it; flags override it.",
        f"definitions = {relative(settings.definitions)}  # op definitions and kernels",
        f'package = "{settings.package}"  # the generated package\'s import name',
    ]
    if relative(settings.package_dir) != json.dumps(settings.package):
        lines.append(f"package-dir = {relative(settings.package_dir)}  # its folder")
    lines += [
        f"build-dir = {relative(settings.build_dir)}  # where `opgen build` puts the libraries",
        f'torch-api = "{settings.torch_api.name}"  # how ops with a kernel register with PyTorch',
        f'version = "{settings.version}"  # the version of the ops\' wheel (`opgen wheel`)',
    ]
    pyproject = Path(PYPROJECT_TOML)
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        appended = text + ("" if text.endswith("\n") or not text else "\n")
        appended += "\n[tool.opgen]\n" + "\n".join(lines[1:]) + "\n"
        try:
            tomllib.loads(appended)
        except tomllib.TOMLDecodeError:
            pass  # a pyproject.toml that an appended table would break: opgen.toml instead
        else:
            write_atomic(pyproject, appended)
            return pyproject
    target = Path(OPGEN_TOML)
    write_atomic(target, "\n".join(lines) + "\n")
    return target
