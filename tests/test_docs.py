"""The README stays short, keeps the two set-up commands, and no documentation page is
orphaned: every ``docs/**/*.md`` page is in the nav of ``mkdocs.yml``. (The site itself is
built, strictly, by ``.ci/run``; these tests do not run mkdocs.)"""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"

#: The set-up commands of the README's quick start, verbatim.
SETUP_COMMANDS = (
    'pip install torch==2.13.0 && pip install -e ".[dev]" && hippo-rep demo --out demo --overwrite',
    'pip install torch==2.13.0 && pip install -e ".[dev]" && python -m pytest -q',
)
MAX_README_LINES = 150


def nav_pages(node) -> list[str]:
    """Every page path in an mkdocs nav (nested lists of {title: path or list})."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    return []


def mkdocs_config() -> dict:
    # mkdocs.yml may hold python-specific tags (!!python/name:...); none are needed to read
    # the nav, so unknown tags load as None
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    return yaml.load(MKDOCS.read_text(), Loader=Loader)


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES})"


def test_readme_has_the_setup_commands_verbatim():
    lines = README.read_text().splitlines()
    for command in SETUP_COMMANDS:
        assert command in lines, f"README.md lacks the set-up command line {command!r}"


def test_every_docs_page_is_in_the_nav():
    nav = nav_pages(mkdocs_config()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert pages, "docs/ has no pages"
    orphans = [p for p in pages if p not in nav]
    assert orphans == [], f"pages missing from mkdocs.yml's nav: {orphans}"
    missing = [p for p in nav if not (DOCS / p).is_file()]
    assert missing == [], f"nav entries without a page: {missing}"


def test_findings_page_has_no_work_log_numbering():
    text = (DOCS / "findings.md").read_text()
    numbered = re.findall(r"\b(?:[Ss]ession|[Rr]un|[Ii]ssue) \d+\b", text)
    assert numbered == [], f"work-log numbering in docs/findings.md: {numbered}"
    assert "## Grid cells" in text.splitlines()


def test_no_work_log_numbering_in_readmes_docs_package_or_benchmarks():
    """What users read says what a thing is, not in which tracker entry or working session it
    was made ("a recording session", as in experimental data, carries no number)."""
    files = [README, ROOT / "data" / "README.md", *DOCS.rglob("*.md"),
             *(ROOT / "hippo_rep").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    found = [f"{f.relative_to(ROOT)}: {m}" for f in files
             for m in re.findall(r"\b(?:[Ss]ession|[Ii]ssue) \d+\b", f.read_text())]
    assert found == [], f"work-log numbering: {found}"
