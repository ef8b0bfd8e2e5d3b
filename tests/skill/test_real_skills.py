"""The validator on 58 real public skills (tests/data/real-skills): every skill found, every
error a real spec violation, and only warnings an author would act on — pinned, so a rule that
starts firing on look-alikes again (or stops finding a real defect) shows up here."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.skill.validate import validate_paths

REAL = Path(__file__).resolve().parent.parent / "data" / "real-skills"

# (file relative to the corpus, line, column, code), in report order
EXPECTED = [
    # a routing table sends .go, .rs, .java… files to references that were never written
    *[("getsentry+skills/skills/security-review/SKILL.md", line, col, "SK211")
      for line, col in ((119, 22), (120, 26), (121, 39), (128, 33), (129, 23), (130, 39), (131, 33))],
    ("github+awesome-copilot/skills/arize-prompt-optimization/SKILL.md", 6, 12, "SK301"),  # "1.0": a note
    # SKILL.md → phase1-advisor.md → architecture-guidance-sources.md: a chain
    ("github+awesome-copilot/skills/azure-architecture-autopilot/references/phase1-advisor.md", 56, 7, "SK212"),
    ("github+awesome-copilot/skills/brag-sheet/SKILL.md", 18, 12, "SK301"),
    ("github+awesome-copilot/skills/brag-sheet/SKILL.md", 19, 1, "SK161"),  # argument-hint: Claude Code's, not the spec's
    ("github+awesome-copilot/skills/generate-image/SKILL.md", 7, 1, "SK161"),
    ("github+awesome-copilot/skills/gtm-ai-gtm/SKILL.md", 9, 1, "SK202"),
    ("github+awesome-copilot/skills/gtm-ai-gtm/SKILL.md", 509, 1, "SK201"),
    ("github+awesome-copilot/skills/nano-banana-pro-openrouter/SKILL.md", 6, 3, "SK132"),  # at the key `requires:`
    ("github+awesome-copilot/skills/qdrant-monitoring/debugging/SKILL.md", 2, 7, "SK107"),
]


@pytest.fixture(scope="module")
def reports():
    return validate_paths([REAL])


def test_every_skill_is_found(reports) -> None:
    assert len(reports) == len(list(REAL.rglob("SKILL.md"))) == 58
    assert all(r.is_skill and r.name for r in reports)


def test_diagnostics_are_the_pinned_ones(reports) -> None:
    # SK251–SK259 come from the skill environments checker and are pinned by its own tests
    found = [
        (str(Path(d.file).relative_to(REAL)), d.line, d.column, d.code)
        for r in reports
        for d in r.diagnostics
        if not "SK251" <= d.code <= "SK259"
    ]
    assert found == EXPECTED


def test_every_warning_says_what_to_do(reports) -> None:
    verbs = ("add ", "fix ", "run:", "link ", "write ", "keep ", "rename ", "did you mean", "check with --profile", "flatten ", "declare ")
    for d in (d for r in reports for d in r.diagnostics):
        assert any(v in d.message for v in verbs), d.format()


def test_client_profiles_accept_what_their_client_documents(reports) -> None:
    claude = validate_paths([REAL / "github+awesome-copilot" / "skills" / "brag-sheet"], profile="claude-code")
    assert [d.code for r in claude for d in r.diagnostics] == ["SK301"]


def test_the_environments_check_is_skipped_only_where_it_has_nothing_to_say() -> None:
    """validate imports the skill environments checker only for skills that may hold Python; on
    every real skill, a skill it skips is one where that checker finds nothing."""
    from skillctl.env.imports import check_folder
    from skillctl.skill.files import scan_folder
    from skillctl.skill.ignore import load_ignore_rules
    from skillctl.skill.validate import _may_hold_python

    skipped = 0
    for skill_md in sorted(REAL.rglob("SKILL.md")):
        folder = skill_md.parent
        paths = scan_folder(folder, "", load_ignore_rules(folder)).paths
        if not _may_hold_python(folder, paths):
            skipped += 1
            assert check_folder(folder, "", paths, folder.name) == [], folder
    assert skipped > 20  # most real skills hold no Python at all


def test_a_python_script_without_the_py_ending_still_gets_the_environments_check(tmp_path: Path) -> None:
    from skillctl.skill.validate import check_skill

    from .helpers import make_skill

    tool = "#!/usr/bin/env python3\nimport yaml\n"
    folder = make_skill(tmp_path, files={"scripts/tool": (tool, 0o755)})
    assert [d.code for d in check_skill(folder).diagnostics] == ["SK251"]
    (folder / "scripts" / "tool").write_text("#!/bin/sh\nimport yaml\n")
    assert [d.code for d in check_skill(folder).diagnostics] == []


def test_the_version_note_agrees_with_publish_on_every_real_skill() -> None:
    """SK303 (what `skillctl validate` adds) on exactly the valid skills that publish refuses for
    want of a version, and on no other: the two decide it the same way."""
    from skillctl.errors import VersionError
    from skillctl.registry.prepare import prepare_folder

    noted, refused = set(), set()
    for report in validate_paths([REAL], packaging=True):
        if any(d.code == "SK303" for d in report.diagnostics):
            noted.add(report.path)
        if report.skill is None:
            continue
        try:
            prepare_folder(Path(report.path))
        except VersionError as exc:
            if "no version" in str(exc):
                refused.add(report.path)
    assert len(refused) > 40  # most public skills declare no version
    assert noted & {r.path for r in validate_paths([REAL]) if r.skill is not None} == refused
