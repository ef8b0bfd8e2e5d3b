"""Client profiles: a client's documented front-matter extensions are accepted under its profile,
with their documented types, and stay errors under the default ``spec`` profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.errors import SkillError
from skillctl.skill.profiles import PROFILE_NAMES, PROFILES, SPEC_FIELDS, get_profile
from skillctl.skill.validate import check_skill, validate_paths

from .helpers import front_matter, make_skill, only


def diags(root: Path, extra: str, profile: str) -> list[tuple[str, str]]:
    make_skill(root, front_matter_text=front_matter(extra=extra))
    return [(d.code, d.message) for d in only(validate_paths([Path("demo")], profile=profile)).diagnostics]


def codes_for(root: Path, extra: str, profile: str) -> list[str]:
    return [c for c, _ in diags(root, extra, profile)]


def test_profiles_and_their_sources() -> None:
    assert PROFILE_NAMES == ("spec", "claude-code", "codex", "copilot", "openclaw")
    for profile in PROFILES.values():
        assert profile.source.startswith("https://"), profile.name
        assert not set(profile.fields) & set(SPEC_FIELDS), "a profile adds fields; the spec's are everyone's"


def test_unknown_profile_is_one_clear_error() -> None:
    with pytest.raises(SkillError, match="unknown profile 'cursor'; choose one of: spec, claude-code, codex, copilot, openclaw"):
        get_profile("cursor")


@pytest.mark.parametrize(
    ("profile", "extra"),
    [
        ("claude-code", 'argument-hint: "[file]"\n'),
        ("claude-code", "disable-model-invocation: true\nuser-invocable: false\nwhen_to_use: Reviewing PRs.\n"),
        ("claude-code", "model: sonnet\neffort: high\ncontext: fork\nagent: Explore\nshell: bash\n"),
        ("claude-code", "paths:\n  - src/**\narguments: [issue, branch]\nhooks:\n  Stop: []\n"),
        ("claude-code", "allowed-tools:\n  - Read\n  - Bash(git add:*)\n"),  # a YAML list is documented
        ("copilot", 'argument-hint: "[test file]"\nuser-invokable: false\ndisable-model-invocation: true\n'),
        ("openclaw", "homepage: https://example.org\nuser-invocable: true\ncommand-dispatch: tool\ncommand-tool: x\ncommand-arg-mode: raw\n"),
        ("openclaw", 'version: "1.0.0"\nmetadata:\n  openclaw:\n    requires: {bins: [uv], env: [KEY]}\n    primaryEnv: KEY\n'),
    ],
)
def test_documented_extensions_are_fine_under_their_client_and_errors_under_the_spec(in_tmp: Path, profile: str, extra: str) -> None:
    assert codes_for(in_tmp, extra, profile) == []
    assert {c for c in codes_for(in_tmp, extra, "spec")} <= {"SK161", "SK132", "SK141"}
    assert codes_for(in_tmp, extra, "spec"), "under the spec these are errors"


def test_the_spec_says_which_profile_documents_a_field(in_tmp: Path) -> None:
    [(code, message)] = diags(in_tmp, 'argument-hint: "[file]"\n', "spec")
    assert code == "SK161"
    assert "Claude Code and GitHub Copilot (VS Code, Copilot CLI, cloud agent) document it: check with --profile" in message


def test_a_profile_names_its_own_field_list(in_tmp: Path) -> None:
    [(code, message)] = diags(in_tmp, "requires:\n  mcp: [rube]\n", "claude-code")
    assert code == "SK161" and message.startswith("unknown field 'requires'; Claude Code documents only name, description, license")


@pytest.mark.parametrize(
    ("profile", "extra", "expected"),
    [
        ("claude-code", 'disable-model-invocation: "yes"\n', "disable-model-invocation must be a boolean for Claude Code, got str"),
        ("claude-code", "argument-hint: [file]\n", 'argument-hint must be a string for Claude Code, got a list; the brackets made it a YAML list — quote it: argument-hint: "[file]"'),
        ("claude-code", "hooks: stop\n", "hooks must be a mapping for Claude Code, got str"),
        ("copilot", "user-invokable: 0\n", "user-invokable must be a boolean for GitHub Copilot (VS Code, Copilot CLI, cloud agent), got a number"),
        ("openclaw", "homepage: [a]\n", "homepage must be a string for OpenClaw, got a list"),
    ],
)
def test_wrong_types_under_a_profile(in_tmp: Path, profile: str, extra: str, expected: str) -> None:
    [(code, message)] = diags(in_tmp, extra, profile)
    assert code == "SK162" and message.startswith(expected), message


def test_openclaw_reads_its_metadata_block_other_metadata_stays_strings(in_tmp: Path) -> None:
    extra = "metadata:\n  openclaw:\n    emoji: x\n  requires:\n    bins: [uv]\n"
    assert codes_for(in_tmp, extra, "openclaw") == ["SK132"]  # metadata.requires: not OpenClaw's key
    [(_, message)] = [d for d in diags(in_tmp, "metadata:\n  openclaw:\n    emoji: x\n", "spec")]
    assert message == "metadata.openclaw must be a string, got a mapping (OpenClaw reads it: check with --profile)"


def test_codex_reads_at_most_1024_characters_of_short_description(in_tmp: Path) -> None:
    assert codes_for(in_tmp, "metadata:\n  short-description: " + "s" * 1025 + "\n", "codex") == ["SK162"]
    assert codes_for(in_tmp, "metadata:\n  short-description: " + "s" * 1025 + "\n", "spec") == []


def test_a_profile_never_relaxes_what_the_spec_states(in_tmp: Path) -> None:
    make_skill(in_tmp, name="Demo", front_matter_text="name: Demo\ndescription: d\n")
    for profile in PROFILE_NAMES:
        assert [d.code for d in check_skill(Path("Demo"), "Demo", profile).diagnostics] == ["SK104"], profile


def test_cli_profile_option_and_env(in_tmp: Path, invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    make_skill(in_tmp, front_matter_text=front_matter(extra='argument-hint: "[file]"\n'))
    assert invoke("validate", "demo").exit_code == 1
    result = invoke("validate", "--profile", "claude-code", "demo")
    assert result.exit_code == 0 and result.output.endswith("(profile claude-code)\n")
    monkeypatch.setenv("SKILLCTL_PROFILE", "claude-code")
    assert invoke("validate", "demo").exit_code == 0
    bad = invoke("validate", "--profile", "cursor", "demo")
    assert bad.exit_code == 2 and "'cursor' is not one of" in bad.output
