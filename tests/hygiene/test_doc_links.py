"""The documentation's links lead somewhere: every relative link to a file of
the repository, every section link to a heading, nothing outside the clone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_at_files_of_the_repository(page):
    # A user's clone holds this repository and nothing beside it.
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s:]+)(?:#[^)]*)?\)", text):
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert resolved.exists(), f"{page.name} links to missing {target}"


def _anchors(page):
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_to_a_section_point_at_a_heading(page):
    text = page.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s:]*)#([^)\s]+)\)", text):
        linked = (page.parent / target).resolve() if target else page
        assert anchor in _anchors(linked), f"{page.name} links to a missing section: {target}#{anchor}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_refers_to_files_outside_the_repository(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\.\./shared|SPEC\.md|\bSPEC\b", text), f"{page.name} refers outside the repository"
