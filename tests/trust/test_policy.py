"""The ``trust:`` section: its schema, and changes to the policy after the lock was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from skillctl.errors import ConfigError
from skillctl.trust.policy import parse_policy

from registry.helpers import prepared

from .helpers import make_key
from .test_enforce import POLICY, Project


@pytest.mark.parametrize("doc, text", [
    ({"keys": "keys/team.pub"}, "trust.keys: 'keys/team.pub' is not of type 'array'"),
    ({"keys": []}, "trust.keys: list at least one public key file"),
    ({"require_signatures": True}, "trust: require_signatures: true needs keys"),
    ({"keys": ["a.pub"], "audit": {"fail_on": "severe"}}, "trust.audit.fail_on: 'severe' is not one of"),
    ({"keys": ["a.pub"], "audit": {}}, "'fail_on' is a required property"),
    ({"keys": ["a.pub"], "require_signatures": "yes"}, "trust.require_signatures: 'yes' is not of type 'boolean'"),
    ({"keys": ["a.pub", "a.pub"]}, "has non-unique elements"),
    ({"key": ["a.pub"]}, "Additional properties are not allowed ('key' was unexpected)"),
    (None, "None is not of type 'object'"),
])
def test_an_invalid_policy_is_refused_naming_the_problem(doc, text: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_policy(doc, "skills.yaml")
    assert text in str(exc.value) and str(exc.value).startswith("skills.yaml: invalid trust policy:")


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_policy({"keys": "x", "audit": {"fail_on": "severe"}}, "skills.yaml")
    assert "trust.audit.fail_on" in str(exc.value) and "trust.keys" in str(exc.value)


def test_defaults() -> None:
    assert parse_policy({"keys": ["a.pub"]}, "s").require_signatures is True  # listing keys requires signatures
    assert parse_policy({"audit": {"fail_on": "critical"}}, "s").require_signatures is False
    assert parse_policy({"keys": ["a.pub"], "require_signatures": False}, "s").require_signatures is False


def test_an_invalid_policy_fails_lock_before_anything_is_resolved(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    project = Project(root, prepared(tmp_path / "src", "demo", "1.0.0"))
    project.write_requirements({"keys": []})
    result = project.cli("lock")
    assert result.exit_code == 1 and "invalid trust policy" in result.output and not (root / "skills.lock").exists()


@pytest.fixture
def locked(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    project = Project(root, prepared(tmp_path / "src", "demo", "1.0.0"))
    assert project.cli("lock").exit_code == 0
    return project


def _run(project: Project):
    script = project.root / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"answer": "done"}]}), "utf-8")
    return project.cli("run", "task", "--lock", "skills.lock", "--model", f"script:{script}", "--sandbox", "local",
                       "--allow-unsafe-local", "--transcript", "t.jsonl")


@pytest.mark.parametrize("policy", [
    {**POLICY, "audit": {"fail_on": "critical"}},
    {**POLICY, "require_signatures": False},
    {"keys": ["keys/team.pub"]},
])
def test_one_changed_policy_setting_is_refused_at_install_and_run(locked: Project, policy: dict) -> None:
    locked.write_requirements(policy)
    result = locked.cli("install", "--frozen", "-o", "out")
    assert result.exit_code == 1 and "is stale (skills.yaml changed since it was written)" in result.output
    result = _run(locked)
    assert result.exit_code == 1 and "the trust section of" in result.output and "changed since skills.lock was written" in result.output
    assert not (locked.root / "out").exists() and not (locked.root / "t.jsonl").exists()


def test_one_changed_byte_of_a_trusted_key_file_is_refused(locked: Project) -> None:
    pub = locked.root / "keys" / "team.pub"
    _, other = make_key(locked.root / "keys2", "team")
    pub.write_bytes(Path(other.source).read_bytes())  # another valid key under the same name
    for result in (locked.cli("install", "--frozen", "-o", "out"), _run(locked)):
        assert result.exit_code == 1, result.output
        assert "key file keys/team.pub now holds key" in result.output and "when skills.lock was written" in result.output
    data = bytearray(Path(other.source).read_bytes())
    data[40] ^= 0x01  # one flipped bit inside the base64 of the key
    pub.write_bytes(bytes(data))
    result = locked.cli("install", "--frozen", "-o", "out")
    assert result.exit_code == 1 and "keys/team.pub" in result.output and not (locked.root / "out").exists()


def test_a_lock_whose_policy_was_removed_from_skills_yaml_is_stale(locked: Project) -> None:
    locked.write_requirements(None)
    assert "is stale" in locked.cli("install", "--frozen", "-o", "out").output
    assert "the trust section of" in _run(locked).output


def test_a_hand_edited_lock_signer_is_refused(locked: Project) -> None:
    lock = json.loads((locked.root / "skills.lock").read_text())
    lock["skills"]["demo"]["signer"] = "ed25519:" + "0" * 64
    (locked.root / "skills.lock").write_text(json.dumps(lock))
    result = locked.cli("install", "--frozen", "-o", "out")
    assert result.exit_code == 1 and "skills.lock records signer ed25519:0000000000000000" in result.output
