"""The documentation: the site builds from docs/ with MkDocs in strict mode (a broken link, a
broken anchor or a page left out of the nav is an error), every page of it is reachable from the
README, which stays a front door (at most 400 lines), and the README's own links resolve."""

import re
import subprocess
import sys
from pathlib import Path

import mkdocs  # noqa: F401  (in the dev extra: a missing MkDocs fails here, CI included)
import yaml
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 400

# A Markdown link's target: [text](target), the target without spaces or a title.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def nav_pages(nav: list) -> list[str]:
    """Every page path mkdocs.yml's nav names, at any depth."""
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def relative_links(path: Path) -> list[str]:
    """The links of a Markdown file that point into the repository (not URLs), code blocks
    left out."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def headings_slugs(path: Path, slug) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {slug(heading.replace("`", ""), "-") for heading in headings}


def github_slug(text: str, separator: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", separator)


def test_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The shipped ops' generated pages are in the site, under ops/ (mkdocs_hooks.py).
    for page in (ROOT / "generated" / "docs").glob("*.md"):
        built = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        assert (tmp_path / "ops" / built).is_file(), page


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines (at most {MAX_README_LINES}): move the detail into a page "
        "of docs/ and link it"
    )


def test_every_page_is_reachable_from_the_readme():
    # The README links to the site's home page, whose nav reaches every page...
    assert "docs/index.md" in [link.split("#")[0] for link in relative_links(README)]
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = nav_pages(config["nav"])
    # ...and the nav names every page of docs/ (the hook adds the ops' pages where it names
    # ops/index.md); MkDocs' strict build refuses a nav entry whose page does not exist.
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert pages - set(in_nav) == set(), "pages of docs/ missing from mkdocs.yml's nav"
    assert "ops/index.md" in in_nav


def test_readme_links_resolve():
    own_anchors = headings_slugs(README, github_slug)
    for link in relative_links(README):
        target, _, anchor = link.partition("#")
        if not target:
            assert anchor in own_anchors, f"README.md links to #{anchor}, which no heading has"
            continue
        path = ROOT / target
        assert path.exists(), f"README.md links to {link}, which does not exist"
        if anchor and path.suffix == ".md" and path.is_relative_to(DOCS):
            # The site's anchors: Python-Markdown's, as MkDocs makes them.
            assert anchor in headings_slugs(path, slugify), f"README.md: {link}: no such anchor"
