"""Template rendering: Jinja with StrictUndefined, one header format, black for Python. Compiled
templates and black's output are cached by content (generator/cache.py): `--check` runs on every
commit and must not pay for compiling 20 templates and formatting 40 files each time."""

from __future__ import annotations

import dataclasses
import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

from generator import cache as opgen_cache
from generator import parallel
from generator.generated_file import GENERATED_MARK

# The emitters build their files through render(): they take the type from here too.
from generator.generated_file import GeneratedFile as GeneratedFile

# Package data (pyproject.toml), found through importlib.resources: an installed wheel has them.
TEMPLATES_DIR = Path(str(resources.files("generator").joinpath("templates")))

_COMMENT = {
    ".py": "#",
    ".txt": "#",
    ".toml": "#",
    ".h": "//",
    ".cc": "//",
    ".cu": "//",
    ".md": None,
}


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        # A run renders each template many times; the templates do not change during it, so
        # none is looked at on the disk again (a stat per render otherwise).
        auto_reload=False,
        bytecode_cache=(
            jinja2.FileSystemBytecodeCache(str(_template_cache_dir()))
            if opgen_cache.enabled() and _template_cache_dir() is not None
            else None
        ),
    )
    env.filters["py"] = repr  # a Python literal of a str, int or None
    # A TOML basic string (JSON's escapes are TOML's; Jinja's tojson escapes < > & for HTML).
    env.filters["toml"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def header(output_path: str, sources: list[str]) -> str:
    """The do-not-edit banner, in the comment syntax of the output file."""
    mark = _COMMENT[os.path.splitext(output_path)[1]]
    origin = ", ".join(sources)
    lines = [
        f"{GENERATED_MARK}{origin}.",
        "Do not edit: change the op definition or the template and run `python -m generator`.",
    ]
    if mark is None:  # Markdown: an HTML comment, invisible when rendered
        return "\n".join(f"<!-- {line} -->" for line in lines)
    return "\n".join(f"{mark} {line}" for line in lines)


def _render_text(template: str, output: str, context: dict[str, object]) -> str:
    """The template's text; an exception while rendering carries a note naming the output, the
    template and its line (Jinja's messages, "'title' is undefined", name neither; the caller,
    project.generate, names the op)."""
    compiled = None
    try:
        compiled = environment().get_template(template)
        return compiled.render(**context)
    except Exception as exc:
        exc.add_note(f"while rendering {output} from template {_where(template, compiled, exc)}")
        raise


def _render(
    template: str, output_path: str, sources: list[str], **context: object
) -> GeneratedFile:
    """One file as the template writes it; Python is formatted afterwards by format_all."""
    context["header"] = header(output_path, sources)
    return GeneratedFile(output_path, _render_text(template, output_path, context))


def _fields(view: DataclassInstance) -> dict[str, object]:
    """The view's fields as template variables (shallowly: nested views stay objects)."""
    return {field.name: getattr(view, field.name) for field in dataclasses.fields(view)}


def render(
    template: str, output_path: str, sources: list[str], view: DataclassInstance
) -> GeneratedFile:
    """One file as the template writes it from its view, the typed object it reads: the view's
    fields are the template's variables. Python is formatted afterwards by format_all. An
    exception while rendering carries a note naming the file, the template and its line."""
    return _render(template, output_path, sources, **_fields(view))


def render_part(template: str, output_path: str, view: DataclassInstance) -> str:
    """A target's part of a shared file (output_path, which pastes it in): the template's text
    from its view, without a header."""
    return _render_text(template, f"a part of {output_path}", _fields(view))


def copy_runtime(output_path: str) -> GeneratedFile:
    """generator/runtime/<output_path> with the header prepended: those files are real source,
    compiled and linted as they are, so the header (no valid source line) is added on the copy."""
    source = resources.files("generator.runtime").joinpath(*output_path.split("/"))
    text = source.read_text(encoding="utf-8")
    origin = f"generator/runtime/{output_path}"
    return GeneratedFile(output_path, f"{header(output_path, [origin])}\n{text}")


def _where(template: str, compiled: jinja2.Template | None, exc: BaseException) -> str:
    """The template and line where the exception arose: Jinja rewrites the traceback so that
    the template's frames carry its file name and line. The innermost template frame wins, so
    that an error in an {% include %}d part names that part, not the include."""
    if compiled is None:  # the template did not load: Jinja's error says where, if anywhere
        return template
    filename = compiled.filename or "<template>"  # Jinja's name for a template without a file
    found = None
    frame = exc.__traceback__
    while frame is not None:
        code_file = frame.tb_frame.f_code.co_filename
        if code_file == filename:
            found = (template, frame.tb_lineno)
        elif code_file.endswith(".j2") and Path(code_file).is_relative_to(TEMPLATES_DIR):
            found = (Path(code_file).relative_to(TEMPLATES_DIR).as_posix(), frame.tb_lineno)
        frame = frame.tb_next
    if found is None:
        return template
    name, line = found
    return f"{name}, line {line}" + ("" if name == template else f" (included by {template})")


@cache
def _template_cache_dir() -> Path | None:
    path = opgen_cache.cache_root() / f"jinja-{jinja2.__version__}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


LINE_LENGTH = 100


@cache
def _installed_black_version() -> str:
    """black's version, without importing black (0.15 s) or importlib.metadata (0.05 s, and as
    much again to find the distribution): black's build writes it into _black_version."""
    try:
        import _black_version  # type: ignore[import-untyped]  # (its stub has no py.typed)
    except ImportError:  # a black built without it
        from importlib.metadata import version

        return version("black")
    return str(_black_version.version)


# As the generated package's pyproject.toml tells black (its pre-commit hook): black left to
# guess the target from a file formats some calls otherwise (`f(*a, k=v,)`'s trailing comma).
BLACK_TARGET = "py311"


def _black_key(text: str) -> str:
    return opgen_cache.content_key(
        "black", _installed_black_version(), str(LINE_LENGTH), BLACK_TARGET, text
    )


def _black(text: str) -> str | Exception:
    """black's output, or its error (returned: it must cross a process boundary)."""
    import black
    from black.mode import TargetVersion  # where black defines it (black re-exports it)
    from black.parsing import InvalidInput

    try:
        target = TargetVersion[BLACK_TARGET.upper()]
        mode = black.Mode(line_length=LINE_LENGTH, target_versions={target})
        formatted = black.format_str(text, mode=mode)
        # black parses leniently (`*X = inputs` passes): the compiler has the last word.
        compile(formatted, "<generated>", "exec", dont_inherit=True)
    except (InvalidInput, SyntaxError) as exc:
        return exc
    return formatted


class FormatError(RuntimeError):
    """Generated Python that black cannot parse: a template bug (`path` names the file)."""

    def __init__(self, path: str, error: Exception, text: str):
        self.path = path
        super().__init__(f"generated Python for {path} does not parse: {error}\n{text}")


# black takes 30-300 ms per generated file, so a first generation (or one after a template
# change) of many ops formats in worker processes, forked so that they inherit black.
_PARALLEL_MIN_FILES = 4


def format_all(files: list[GeneratedFile]) -> list[GeneratedFile]:
    """The files with every Python file formatted by black: from the cache where it has the
    result (importing black only on a miss: the import alone takes 0.15 s), the misses in
    parallel when there are several."""
    keys = {_black_key(f.content): f for f in files if f.path.endswith(".py")}
    formatted: dict[str, str] = {}
    misses = []
    for key, file in keys.items():
        cached = opgen_cache.read("black", key)
        if cached is None:
            misses.append(key)
        else:
            formatted[file.content] = cached
    texts = [keys[key].content for key in misses]
    if texts:
        import black  # noqa: F401 (imported once here, inherited by forked workers)
    results = parallel.map_forked(_black, texts, _PARALLEL_MIN_FILES)
    for key, text, result in zip(misses, texts, results, strict=True):
        if isinstance(result, Exception):  # a template bug, not a user error: show the source
            raise FormatError(keys[key].path, result, text)
        opgen_cache.write("black", key, result)
        formatted[text] = result
    return [
        GeneratedFile(f.path, formatted[f.content]) if f.path.endswith(".py") else f for f in files
    ]
