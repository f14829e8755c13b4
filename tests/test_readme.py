"""The README and docs/ say what is true: the driver table is the descriptors' table, the
README stays a few screens with the two commands first, and every link lands somewhere."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

import pytest

from drivers.management.commands.drivers_table import drivers_table
from tests.processes import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Pages other engineers write in parallel branches: a link to one of them is skipped while
# the file does not exist in this tree (once it exists, its links and anchors are checked).
WRITTEN_ELSEWHERE = {ROOT / "docs" / name for name in ("sandbox.md", "network.md", "security.md", "programs.md")}

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.M)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text, lower case, with every
    character but letters, digits, marks, `-`, `_` and spaces dropped, spaces as `-`."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "").strip().lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on PAGE, a repeated one numbered as GitHub numbers it."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        slug = github_slug(heading)
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(page: Path) -> list[str]:
    """The targets of PAGE's Markdown, reference and HTML links, outside code."""
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text()))
    return INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text) + HTML_LINK.findall(text)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            if file not in WRITTEN_ELSEWHERE:
                broken.append(f"{target}: no file {file.relative_to(ROOT)}")
            continue
        if anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    return broken


def test_docs_driver_table_matches_the_descriptors() -> None:
    page = (ROOT / "docs" / "drivers.md").read_text()
    start = page.index("<!-- drivers-table -->") + len("<!-- drivers-table -->")
    end = page.index("<!-- /drivers-table -->")
    assert page[start:end].strip() == drivers_table()


def test_readme_first_screen_gives_the_two_commands() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:20])
    assert "make run" in first_screen and "make test" in first_screen


def test_readme_fits_in_a_few_screens() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 350


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_points_to_an_existing_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Waiting costs a row, not a process", "waiting-costs-a-row-not-a-process"),
        ("Run policy (guardrails and routing)", "run-policy-guardrails-and-routing"),
        ("Put your own Claude Code under Gatehouse (the hook gateway)", "put-your-own-claude-code-under-gatehouse-the-hook-gateway"),
        ("`GATEHOUSE_HOOK_WAIT_S` — the gateway's wait", "gatehouse_hook_wait_s--the-gateways-wait"),
        ("Libraries, and why", "libraries-and-why"),
        ("A [linked](x.md) **bold** 2× step", "a-linked-bold-2-step"),
    ],
)
def test_anchors_follow_githubs_slug_rule(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## Twice\n\n## Twice\n")
    page.write_text(
        "# Page\n\n[ok](other.md#twice-1) [self](#page) [web](https://example.com) `[code](missing.md)`\n\n"
        "```\n[fenced](missing.md)\n```\n\n[gone](missing.md) [no anchor](other.md#twice-2) <img src=\"nope.png\">\n"
    )
    assert broken_links(page) == [
        "missing.md: no file missing.md",
        "other.md#twice-2: no heading #twice-2 in other.md",
        "nope.png: no file nope.png",
    ]
