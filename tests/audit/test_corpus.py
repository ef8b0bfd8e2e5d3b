"""Quality, measured on data: every malicious technique of the corpus is caught at high or
critical by the rule written for it, and real public skills rarely raise such an alarm."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from skillctl.audit import Severity, audit_paths

from .helpers import CORPUS, REAL_SKILLS, audit_as_bundle

MANIFEST = yaml.safe_load((CORPUS / "techniques.yaml").read_text(encoding="utf-8"))["techniques"]
CASES = [(tech, name, expect) for tech, skills in MANIFEST.items() for name, expect in skills.items()]
# Skills written without reading the rules, for the techniques issue 26 found missed, each category
# with benign look-alikes that touch the same files and words for good reasons.
HELDOUT = yaml.safe_load((CORPUS / "heldout.yaml").read_text(encoding="utf-8"))
HELDOUT_CATEGORIES = {
    "memory-persistence", "phishing", "privilege-escalation", "disable-safety", "credential-webhook", "git-exfil",
    "remote-instructions", "skill-tampering", "archive-payload",
}
HELDOUT_BAD = [(cat, name) for cat, names in HELDOUT["malicious"].items() for name in names]
HELDOUT_GOOD = [(cat, name) for cat, names in HELDOUT["benign"].items() for name in names]
# The techniques the audit must cover, as the requirement names them.
REQUIRED_TECHNIQUES = {
    "prompt-injection", "hidden-unicode", "download-exec", "obfuscation", "credential-exfil", "exfiltration",
    "persistence", "destructive", "remote-instructions", "packages", "skill-tampering",
}


def test_the_corpus_covers_every_required_technique() -> None:
    assert set(MANIFEST) == REQUIRED_TECHNIQUES
    assert all(len(skills) >= 2 for skills in MANIFEST.values())


@pytest.mark.parametrize(("technique", "name", "expect"), CASES, ids=[c[1] for c in CASES])
def test_technique_is_caught_at_high_or_critical(technique: str, name: str, expect: list[str]) -> None:
    reports, problems = audit_paths([CORPUS / name])
    assert not problems and len(reports) == 1
    caught = {f.rule.id for f in reports[0].at_or_above(Severity.HIGH)}
    assert caught & set(expect), f"{technique}/{name}: expected one of {expect} at high+, got {sorted(caught)}"


def test_the_held_out_corpus_has_three_attacks_and_three_look_alikes_per_category() -> None:
    assert set(HELDOUT["malicious"]) == set(HELDOUT["benign"]) == HELDOUT_CATEGORIES
    assert all(len(names) >= 3 for side in ("malicious", "benign") for names in HELDOUT[side].values())
    listed = [name for _cat, name in HELDOUT_BAD + HELDOUT_GOOD]
    assert len(listed) == len(set(listed)) and all((CORPUS / name / "SKILL.md").is_file() for name in listed)


@pytest.mark.parametrize(("category", "name"), HELDOUT_BAD, ids=[c[1] for c in HELDOUT_BAD])
def test_a_held_out_attack_is_caught_at_high_or_critical(category: str, name: str) -> None:
    reports, problems = audit_paths([CORPUS / name])
    assert not problems and len(reports) == 1
    assert reports[0].fails(Severity.HIGH), f"{category}/{name}: " + \
        ", ".join(f"{f.rule.id} {f.severity.name.lower()} {f.path}:{f.line}" for f in reports[0].findings)


@pytest.mark.parametrize(("category", "name"), HELDOUT_GOOD, ids=[c[1] for c in HELDOUT_GOOD])
def test_a_benign_look_alike_raises_nothing_at_high_or_above(category: str, name: str) -> None:
    reports, problems = audit_paths([CORPUS / name])
    assert not problems and len(reports) == 1
    high = reports[0].at_or_above(Severity.HIGH)
    assert not high, f"{category}/{name}: " + ", ".join(f"{f.rule.id} {f.path}:{f.line} {f.evidence!r}" for f in high)


@pytest.mark.parametrize("name", ["fake-setup-curl-sh", "unicode-tag-smuggling", "python-ssh-key-post"])
def test_a_bundle_is_audited_like_its_folder(name: str) -> None:
    folder_report = audit_paths([CORPUS / name])[0][0]
    bundle_report = audit_as_bundle(CORPUS / name)
    assert [(f.rule.id, f.path, f.line) for f in bundle_report.findings] == \
        [(f.rule.id, f.path, f.line) for f in folder_report.findings]
    assert bundle_report.digest and bundle_report.digest.startswith("sha256:")


def test_at_most_two_percent_of_real_skills_raise_a_high_or_critical_alarm() -> None:
    reports, problems = audit_paths([REAL_SKILLS])
    assert not problems and len(reports) == 58
    alarmed = [r.name for r in reports if r.fails(Severity.HIGH)]
    assert len(alarmed) / len(reports) <= 0.02, alarmed
