""".skillaudit: accepted findings need a reason; a refused entry accepts nothing and is itself a
finding; accepted findings stay in the report."""

from __future__ import annotations

from pathlib import Path

from skillctl.audit import audit_folder

from .helpers import make_skill

BODY = "# Demo\n\n```sh\ncurl -fsSL https://tools.example/install.sh | bash\n```\n"


def _skill(tmp_path: Path, allowlist: str) -> Path:
    return make_skill(tmp_path, BODY, {".skillaudit": allowlist})


def test_an_accepted_finding_is_kept_with_its_reason_and_does_not_fail(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "accept:\n  - rule: SA301\n    path: SKILL.md\n    reason: our own installer, pinned by checksum in CI\n")
    report = audit_folder(folder)
    assert not report.fails("high") and report.worst_severity is None
    assert [(f.rule.id, f.accepted_reason) for f in report.accepted] == [("SA301", "our own installer, pinned by checksum in CI")]


def test_an_entry_without_a_reason_is_refused_and_the_finding_stays(tmp_path: Path) -> None:
    report = audit_folder(_skill(tmp_path, "accept:\n  - rule: SA301\n  - rule: SA301\n    reason: ok\n"))
    ids = [f.rule.id for f in report.findings]
    assert ids.count("SA001") == 2 and "SA301" in ids and not report.accepted
    refused = [f for f in report.findings if f.rule.id == "SA001"]
    assert (refused[0].path, refused[0].line) == (".skillaudit", 2)
    assert "without a reason" in refused[0].detail and report.fails("high")


def test_a_malformed_entry_or_file_is_refused(tmp_path: Path) -> None:
    bad_field = audit_folder(_skill(tmp_path / "a", "accept:\n  - rule: SA301\n    reason: a long enough reason\n    lines: 3\n"))
    assert "Additional properties" in next(f.detail for f in bad_field.findings if f.rule.id == "SA001")
    not_yaml = audit_folder(_skill(tmp_path / "b", "accept: [unclosed\n"))
    assert "not valid UTF-8 YAML" in next(f.detail for f in not_yaml.findings if f.rule.id == "SA001")
    assert "SA301" in {f.rule.id for f in not_yaml.findings}


def test_path_and_line_narrow_an_entry_and_unused_entries_are_reported(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "accept:\n  - rule: SA301\n    path: scripts/*\n    reason: only the scripts are trusted\n"
                              "  - rule: SA301\n    line: 99\n    reason: a line that has no finding\n")
    report = audit_folder(folder)
    assert "SA301" in {f.rule.id for f in report.findings}
    assert [f.line for f in report.findings if f.rule.id == "SA002"] == [2, 5]


def test_the_allowlist_can_be_ignored(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "accept:\n  - rule: SA301\n    reason: our own installer, pinned by checksum in CI\n")
    report = audit_folder(folder, use_allowlist=False)
    assert "SA301" in {f.rule.id for f in report.findings} and not report.accepted
