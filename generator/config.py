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
import stat
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from generator.config_files import CANDIDATES, OPGEN_TOML, PYPROJECT_TOML, search_folders
from generator.errors import DefinitionError, DefinitionErrors, ErrorCollector
from generator.model.names import unspellable
from generator.model.op import TorchApi
from generator.model.package import GeneratedPackage
from generator.parse import read
from generator.source import Node, file_kind, load_definition_file, read_bounded
from generator.targets.settings import SETTINGS

DEFAULT_PACKAGE = "generated"
DEFAULT_VERSION = "0.1.0"

TARGET_KEYS = tuple(key for target in SETTINGS for key in target.keys)
BUILD_CHOICES = tuple(choice for target in SETTINGS for choice in target.choices)

# Each key and what it sets (docs/configuration.md's table says the same in prose).
KEYS = {
    "definitions": "the folder of op definitions and kernels (default: opdefs)",
    "package": f"the generated package's import name (default: {DEFAULT_PACKAGE})",
    "package-dir": "the generated package's folder (default: the package name)",
    "build-dir": "where `opgen build` puts the libraries (default: build)",
    "torch-api": "how ops with a kernel are registered with PyTorch unless their definition "
    "says (default: native)",
    "version": f"the version of the ops' wheel (default: {DEFAULT_VERSION})",
    # and the runtime targets' own keys (generator/target_settings.py)
    **{key.name: key.doc for key in TARGET_KEYS},
}
# The packages the generated CMake files find (tests/test_names.py reads them there): the
# project, named after the package, sets <package>_VERSION, _SOURCE_DIR, ...
CMAKE_FOUND_PACKAGES = frozenset({"CUDAToolkit", "ONNX", "Protobuf", "Python", "pybind11"})

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
    # Every runtime target's key (TARGET_KEYS): name, normalized value (the default if unset)
    target_values: tuple[tuple[str, str], ...]

    def generated_package(self) -> GeneratedPackage:
        """What the generated code is told of its package. Its build folder is relative to the
        package's folder: where the package looks for its libraries when not installed."""
        build_dir = os.path.relpath(self.build_dir.absolute(), self.package_dir.absolute())
        return GeneratedPackage(
            self.package, self.version, Path(build_dir).as_posix(), self.target_values
        )


class ConfigError(Exception):
    """Two configuration files in one folder, or a --config that cannot be used."""


def find(start: Path | None = None) -> Path | None:
    """The configuration that applies in `start` (the working directory): an opgen.toml, or a pyproject.toml with a
    [tool.opgen] table, in `start` or the nearest parent, stopping at the repository's root
    (a folder holding .git). Two in one folder is an error: which one applies is not obvious."""
    try:
        start_folder = (start or Path.cwd()).absolute()
    except FileNotFoundError:
        raise ConfigError("the working directory no longer exists") from None
    for folder in search_folders(start_folder):
        for candidate in (folder / name for name in CANDIDATES):
            problem = _not_a_file(candidate)
            if problem:
                raise ConfigError(
                    f"{_shown(candidate)} {problem}: opgen cannot read it for its configuration "
                    "(and will not guess one); make it a file, or remove it"
                )
        found = [
            path
            for path in (folder / name for name in CANDIDATES)
            if path.is_file() and (path.name == OPGEN_TOML or _has_opgen_table(path))
        ]
        if len(found) == 2:
            raise ConfigError(
                f"both {found[0]} and {found[1]} configure opgen; keep one ([tool.opgen] in "
                "pyproject.toml, or opgen.toml)"
            )
        if found:
            return found[0]
    return None


def _not_a_file(path: Path) -> str | None:
    """Why a configuration file's name is there but no file to read is (a dangling link, a
    folder, a FIFO, a device), or None (a regular file, a link to one, or nothing)."""
    if not os.path.lexists(path):
        return None
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if path.is_symlink():
            return f"is a symbolic link to {os.readlink(path)!r}, which cannot be read"
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    return f"is {file_kind(mode)}, not a file"


def _has_opgen_table(pyproject: Path) -> bool:
    """Whether a pyproject.toml has a [tool.opgen] table: a cheap look at its lines first
    (most have none), then the located loader, which reports a malformed file."""
    try:
        text = pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:  # unreadable: it may configure opgen, so it cannot be passed over
        raise ConfigError(
            f"{_shown(pyproject)} cannot be read ({exc.strerror or exc}), so opgen cannot tell "
            "whether it holds its configuration"
        ) from None
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
        problem = _not_a_file(explicit)
        if problem:
            raise ConfigError(f"--config {explicit}: {problem}")
        if not explicit.is_file():
            raise ConfigError(f"--config {explicit}: no such file")
        if explicit.suffix != ".toml":
            raise ConfigError(f"--config {explicit}: expected an opgen.toml or a pyproject.toml")
        if explicit.name != OPGEN_TOML and not _has_opgen_table(explicit):
            raise ConfigError(f"--config {explicit}: has no [tool.opgen] table")
        file: Path | None = explicit
    else:
        file = find()
    values, nodes = _read(file) if file is not None else ({}, {})
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
    build_dir, build_label = _build_dir_written(args, build_dir)
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
    _check_apart(
        {
            "the definitions folder": definitions,
            "the package folder": package_dir,
            build_label: build_dir,
        }
    )
    _check_spellable(
        {
            "definitions": (definitions, "opdefs_dir"),
            "package-dir": (package_dir, "output_dir"),
            "build-dir": (build_dir, "build_dir"),
        },
        args,
        nodes,
    )
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
    version = normalized_version(values.get("version", DEFAULT_VERSION))
    problem = wheel_name_problem(package, version)
    if problem:
        where = nodes.get("version") or nodes.get("package")
        if where is not None:
            raise DefinitionErrors([where.error(problem)])
        given = f"--package {package}" if flag else f"the package {package} (its folder's name)"
        raise ConfigError(f"{given}: {problem}")
    return Config(
        file=file,
        definitions=definitions,
        package=package,
        package_dir=package_dir,
        build_dir=build_dir,
        torch_api=TorchApi[values.get("torch-api", TorchApi.native.name)],
        version=version,
        target_values=tuple(
            (key.name, key.normalize(values.get(key.name, key.default))) for key in TARGET_KEYS
        ),
    )


def _build_dir_written(args: argparse.Namespace, build_dir: Path) -> tuple[Path, str]:
    """The build folder the command writes, and what messages call it: `build --sanitize`
    builds beside the normal build (never mixed with it) unless --build-dir is given, so that
    is the folder checked against the others."""
    if not getattr(args, "sanitize", False) or getattr(args, "build_dir", None) is not None:
        return build_dir, "the build folder"
    beside = Path(os.path.abspath(build_dir))  # "." and "out/.." have a name only resolved
    if not beside.name:
        raise ConfigError(f"the build folder {build_dir} is the root: nothing can be beside it")
    return Path(os.path.relpath(beside.with_name(f"{beside.name}-sanitize"))), (
        "the sanitizer build folder"
    )


def _check_apart(folders: dict[str, Path]) -> None:
    """The three folders must not overlap: generation writes (and deletes orphans in) the
    package folder, which would touch hand-written kernels or build files, and the package
    would carry the build into its wheel."""
    named = list(folders.items())
    for index, (first, first_path) in enumerate(named):
        for second, second_path in named[index + 1 :]:
            a, b = first_path.resolve(), second_path.resolve()
            if a.is_relative_to(b) or b.is_relative_to(a):
                raise ConfigError(
                    f"{first} {first_path} and {second} {second_path} overlap; keep them "
                    "apart (definitions and hand-written kernels, generated files, build files)"
                )


# Folder names end up in generated files (the definitions' names in every header, the kernels'
# #include paths) and in the build (CMake's paths): characters those cannot spell are refused.
def spelling_problem(path: Path) -> str | None:
    """Why a folder's absolute path cannot be spelled in generated C++, CMake and Python, or
    None."""
    text = os.path.abspath(path)
    what = unspellable(text)
    if what is None:
        return None
    if what.startswith(("the control", "a byte")):
        return f"its path {text!r} has {what}, which generated files cannot spell"
    return f"its path {text!r} has {what}"


def _check_spellable(
    folders: dict[str, tuple[Path, str]], args: argparse.Namespace, nodes: dict[str, Node]
) -> None:
    """Each folder's path, spellable where the generated files and the build name it; a problem
    names the key (located) or the flag that gave the folder."""
    errors = ErrorCollector()
    for key, (folder, flag) in folders.items():
        problem = spelling_problem(folder)
        if problem is None:
            continue
        if getattr(args, flag, None) is not None:
            option = "--" + flag.replace("_", "-")
            raise ConfigError(f"{option}: {problem}; give another folder")
        if key in nodes:
            errors.add(nodes[key].error(f"{problem}; give another folder"))
        else:
            raise ConfigError(
                f"the {key} folder {folder} (the default): {problem}; configure another "
                f"({key} in the configuration)"
            )
    errors.raise_if_any()


def _read(file: Path) -> tuple[dict[str, str], dict[str, Node]]:
    """The table's values, each checked, and their nodes (for located errors about them later);
    every problem is reported, located."""
    table = _table(file)
    if table is None:
        return {}, {}
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
    return values, fields


def _value_problem(key: str, text: str) -> str | None:
    for target_key in TARGET_KEYS:
        if key == target_key.name:
            return target_key.problem(text)
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
    if name.startswith(("CMAKE", "OPGEN")) or name in CMAKE_FOUND_PACKAGES:
        return (
            f"'{name}' would name the CMake project, whose variables (<name>_VERSION, ...) would "
            "then be CMake's own, the build's (OPGEN_...) or those of a package it finds; choose "
            "another"
        )
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
    if spec is None:
        return None
    if spec.origin is None:
        # A namespace package: installed portions (google.protobuf's `google`) would all be
        # hidden by a regular package of that name; a mere folder elsewhere on sys.path (such
        # as the package folder itself before its first generation) is nobody's module.
        installed = [
            portion
            for portion in spec.submodule_search_locations or []
            if any(Path(portion).is_relative_to(site) for site in _installation_folders())
        ]
        return f"a namespace package in {installed[0]}" if installed else None
    locations = list(spec.submodule_search_locations or []) or [spec.origin]
    for location in locations:
        info = Path(location) / "_package.py"
        if info.is_file() and f"NAME = {json.dumps(name)}" in info.read_text(errors="replace"):
            return None
    return locations[0] or name


def _installation_folders() -> list[Path]:
    """Where this Python's packages are installed (site-packages, the user's, the standard
    library's folders)."""
    import site
    import sysconfig

    folders = {sysconfig.get_path(name) for name in ("purelib", "platlib", "stdlib", "platstdlib")}
    folders.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.add(site.getusersitepackages())
    return [Path(folder) for folder in folders if folder]


MAX_VERSION_LENGTH = 200


def normalized_version(text: str) -> str:
    """The version as a wheel's metadata spells it (`v1.0` gives `1.0`)."""
    from packaging.version import Version

    return str(Version(text))


# The longest platform tag pip may give the wheel, and room for the suffixes of its temporary
# files: the wheel's file name must fit in one file name (255 bytes on Linux).
_WHEEL_TAGS = "-cp399-cp399-manylinux_2_999_x86_64.whl"
_WHEEL_NAME_MAX = 255 - len(".tmp-0123456789")


def wheel_name_problem(package: str, version: str) -> str | None:
    """Why the ops' wheel (package-version-tags.whl) could not be written, or None."""
    name = f"{package}-{version}{_WHEEL_TAGS}"
    size = len(name.encode())
    if size <= _WHEEL_NAME_MAX:
        return None
    room = _WHEEL_NAME_MAX - len(f"{package}-{_WHEEL_TAGS}".encode())
    if room < len(DEFAULT_VERSION):
        return (
            f"the package name is {len(package)} characters: the wheel's file name "
            "(<package>-<version>-<tags>.whl) must fit in one file name; choose a shorter one"
        )
    return (
        f"the version {version[:20]!r}... is {len(version)} characters: the wheel's file name "
        f"({package}-<version>-<tags>.whl) must fit in one file name, which leaves room for "
        f"{room} with the package name {package!r}"
    )


def version_problem(text: str) -> str | None:
    """Why `text` is not a version a wheel can carry (PEP 440), or None."""
    from packaging.version import Version  # black depends on packaging

    if len(text) > MAX_VERSION_LENGTH:  # and packaging's int() refuses 4300 digits
        return (
            f"the version '{text[:20]}...' is {len(text)} characters; a wheel's file name has "
            f"room for {MAX_VERSION_LENGTH} at the most"
        )
    try:
        Version(text)
    except ValueError:  # InvalidVersion is one
        return f"'{text}' is not a PEP 440 version (such as 1.0.2)"
    return None


MAX_JOBS = 1024


def positive_int(text: str) -> int:
    """An argparse type: a count of at least 1 (--jobs)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{value}: expected 1 to {MAX_JOBS}")
    return value


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


@dataclass(frozen=True)
class InitialConfiguration:
    """The configuration `opgen new` starts a repository with, planned before anything is
    written: bytes appended to the pyproject.toml, or a new opgen.toml."""

    path: Path
    data: bytes
    append: bool


def plan_initial(settings: Config) -> InitialConfiguration:
    """The configuration for the working directory: a [tool.opgen] table appended to its
    pyproject.toml if it has one (and the result still parses), else an opgen.toml. The
    pyproject.toml keeps every byte it had (its line endings are the table's) and stays the same
    file. Raises DefinitionError (a pyproject.toml that is no valid TOML, located) or ConfigError
    (a file or folder that cannot be written)."""
    from generator.writer import folder_problem, write_refusal

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
    problem = _not_a_file(pyproject)
    if problem:
        raise ConfigError(f"{PYPROJECT_TOML} {problem}")
    if pyproject.is_file():
        _located(pyproject)  # not UTF-8, not TOML: a located error, and nothing written
        original = read_bounded(pyproject)
        newline = b"\r\n" if original.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
        table = ["", "[tool.opgen]", *lines[1:]]
        added = b"" if original.endswith(b"\n") or not original else newline
        added += newline.join(line.encode() for line in table) + newline
        try:
            tomllib.loads((original + added).decode("utf-8"))
        except tomllib.TOMLDecodeError:
            pass  # a pyproject.toml that an appended table would break: opgen.toml instead
        else:
            refusal = write_refusal(pyproject)
            if refusal:
                raise ConfigError(f"{PYPROJECT_TOML} cannot be written: it {refusal}")
            return InitialConfiguration(pyproject, added, append=True)
    problem = folder_problem(Path.cwd())
    if problem:
        raise ConfigError(f"cannot write {OPGEN_TOML}: the working directory {problem}")
    return InitialConfiguration(Path(OPGEN_TOML), ("\n".join(lines) + "\n").encode(), False)


def write_initial(plan: InitialConfiguration) -> Path:
    """Writes a planned configuration; returns the file written."""
    from generator.writer import write_atomic

    if plan.append:
        # In place: the file keeps its inode, permissions, links and every byte it had.
        with open(plan.path, "ab") as handle:
            handle.write(plan.data)
    else:
        write_atomic(plan.path, plan.data.decode())
    return plan.path
