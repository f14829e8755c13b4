"""The README says what is true: its driver table is the descriptors' table."""

from __future__ import annotations

from drivers.management.commands.drivers_table import drivers_table
from tests.processes import ROOT


def test_readme_driver_table_matches_the_descriptors() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- drivers-table -->") + len("<!-- drivers-table -->")
    end = readme.index("<!-- /drivers-table -->")
    assert readme[start:end].strip() == drivers_table()


def test_readme_first_screen_gives_the_two_commands() -> None:
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:20])
    assert "make run" in first_screen and "make test" in first_screen
