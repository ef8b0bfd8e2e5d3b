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
