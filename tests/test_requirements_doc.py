"""docs/requirements.md stays true: every requirement is listed once, and every file, folder,
module and test it names exists (a renamed test or a moved module turns this red)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "requirements.md"

# The page's numbers: one letter per section, and how many requirements each section has.
LABELS = [f"{s}{n}" for s, count in zip("ABCDEFG", (6, 4, 7, 7, 5, 3, 6)) for n in range(1, count + 1)]


def _named_paths(text: str) -> list[str]:
    """Paths from the top of the repository (names inside a folder's parentheses are relative to
    it and checked by the last test)."""
    tops = ("skillctl/", "tests/", "bench/", "container/", "docs/")
    return [s for s in re.findall(r"`([^`\s]+)`", text) if s.startswith(tops)]


def test_every_requirement_is_listed_once() -> None:
    text = DOC.read_text("utf-8")
    counts = {label: len(re.findall(rf"\[{label}\]", text)) for label in LABELS}
    assert {label: n for label, n in counts.items() if n != 1} == {}


def test_every_named_path_and_test_exists() -> None:
    text = DOC.read_text("utf-8")
    missing = []
    for named in _named_paths(text):
        path, _, test = named.partition("::")
        if not (ROOT / path).exists():
            missing.append(named)
        elif test and not re.search(rf"^(async )?def {re.escape(test)}\(", (ROOT / path).read_text("utf-8"), re.M):
            missing.append(named)
    assert missing == []
    assert len(_named_paths(text)) > 50  # the page names its modules and tests, not nothing


def test_every_module_named_inside_a_folder_exists() -> None:
    # "`skillctl/context/` (`fitting`, `policy`)" names modules of that folder by their short name.
    text = DOC.read_text("utf-8")
    missing = []
    for folder, inside in re.findall(r"`(skillctl/[\w/]+/)` \(([^)]*)\)", text):
        for name in re.findall(r"`([\w./]+)`", inside):
            if not (ROOT / folder / f"{name}.py").exists() and not (ROOT / folder / name).exists():
                missing.append(f"{folder}{name}")
    assert missing == []
