"""MkDocs hook: the shipped ops' reference pages, which the generator writes to
generated/docs/*.md, become the site's pages ops/<op>.md, listed in the nav.

They live outside docs/ because they are generated output (kept in sync by `--check`, never
edited by hand); copying them into docs/ would make a second copy that could drift, and MkDocs
reads pages from one folder. So the hook adds each file to the site as it is, under ops/, and
puts every one of them in the nav where mkdocs.yml names ops/index.md, so that strict mode's
"page not in the nav" check holds for them too and a new op's page appears without editing
mkdocs.yml."""

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

# Where the generator writes the op pages: this repository's [tool.opgen] package folder.
GENERATED_DOCS = Path(__file__).resolve().parent / "generated" / "docs"
SITE_FOLDER = "ops"
INDEX = f"{SITE_FOLDER}/index.md"


def op_pages() -> list[Path]:
    """The generated pages, the index first (it links every other)."""
    pages = sorted(GENERATED_DOCS.glob("*.md"))
    return sorted(pages, key=lambda page: page.name != "index.md")


def title_of(page: Path) -> str:
    """The page's first heading. (MkDocs takes a page's title from its heading only where the
    heading comes first, and a generated page starts with its do-not-edit comment, so the nav
    would otherwise show titles made of file names.)"""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"{page}: no '# ' heading")


def _expand(nav: list) -> bool:
    """Replaces the nav entry naming ops/index.md by a section of every op page."""
    for position, entry in enumerate(nav):
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            if value == INDEX:
                pages = [{title_of(page): f"{SITE_FOLDER}/{page.name}"} for page in op_pages()]
                nav[position] = {title: pages}
                return True
            if isinstance(value, list) and _expand(value):
                return True
    return False


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    if not (GENERATED_DOCS / "index.md").is_file():
        raise FileNotFoundError(f"{GENERATED_DOCS}/index.md: run `python -m generator` first")
    if config.nav is not None and not _expand(config.nav):
        raise ValueError(f"mkdocs.yml's nav must name {INDEX} (the shipped ops' pages)")
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for page in op_pages():
        files.append(File.generated(config, f"{SITE_FOLDER}/{page.name}", abs_src_path=str(page)))
    return files
