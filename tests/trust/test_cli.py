"""``key generate``, ``publish --sign``, ``sign``, ``verify`` and ``copy`` through the command line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.errors import UnsupportedError
from skillctl.protocols import SIGN
from skillctl.registry.local import LocalRegistry
from skillctl.registry.mirror import copy_version
from skillctl.trust.provenance import git_source, public_url

from registry.helpers import prepared, write_skill

from .conftest import open_url
from .helpers import make_key


def invoke(url: str, *args: str):
    env = {"SKILLCTL_REGISTRY": url, "SKILLCTL_INSECURE": "1"}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding skills/demo, committed, with an origin URL that carries a token."""
    root = tmp_path / "repo"
    write_skill(root / "skills", "demo", "1.0.0")
    git(tmp_path, "init", "-q", str(root))
    git(root, "remote", "add", "origin", "https://x-token:s3cr3t@git.example.com/team/skills.git")
    git(root, "add", ".")
    git(root, "commit", "-qm", "demo")
    return root


def test_key_generate_prints_the_key_id_and_refuses_to_overwrite(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["key", "generate", str(tmp_path / "team"), "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["keyid"].startswith("ed25519:") and Path(doc["private_key"]).stat().st_mode & 0o777 == 0o600
    again = CliRunner().invoke(cli, ["key", "generate", str(tmp_path / "team")], catch_exceptions=False)
    assert again.exit_code == 1 and "already exists; refusing to overwrite" in again.output


def test_publish_sign_records_the_git_source_without_credentials(repo: Path, registry_url: str, tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "keys")
    result = invoke(registry_url, "publish", str(repo / "skills" / "demo"), "--sign", key.source, "--format", "json")
    assert result.exit_code == 0, result.output
    sig = json.loads(result.stdout)[0]["signature"]  # stderr says the registry was created
    assert sig["status"] == "attached" and sig["keyid"] == pub.keyid
    assert sig["source"] == {"repository": "https://git.example.com/team/skills.git", "commit": git(repo, "rev-parse", "HEAD"),
                             "path": "skills/demo", "dirty": False}
    out = invoke(registry_url, "verify", "demo@1.0.0", "--key", pub.source, "--format", "json")
    assert out.exit_code == 0, out.output
    verdict = json.loads(out.output)
    assert verdict["verified"] and verdict["signers"][0]["predicate"]["source"]["repository"] == "https://git.example.com/team/skills.git"
    assert "s3cr3t" not in out.output
    assert verdict["signers"][0]["predicate"]["audit"]["counts"]["critical"] == 0
    again = invoke(registry_url, "publish", str(repo / "skills" / "demo"), "--sign", key.source)
    assert again.exit_code == 0 and "unchanged" in again.output and "already signed" in again.output


def test_a_dirty_tree_is_recorded(repo: Path) -> None:
    (repo / "skills" / "demo" / "notes.md").write_text("uncommitted\n")
    assert git_source(repo / "skills" / "demo")["dirty"] is True
    assert git_source(repo / "skills" / "demo")["path"] == "skills/demo"


def test_outside_git_there_is_no_source(tmp_path: Path) -> None:
    assert git_source(write_skill(tmp_path, "demo")) is None


@pytest.mark.parametrize("url, public", [
    ("https://user:pass@host.example/org/repo.git", "https://host.example/org/repo.git"),
    ("https://ghp_token@host.example:8443/org/repo", "https://host.example:8443/org/repo"),
    ("ssh://git@host.example/org/repo.git", "ssh://host.example/org/repo.git"),
    ("git@host.example:org/repo.git", "git@host.example:org/repo.git"),
])
def test_remote_urls_lose_their_credentials(url: str, public: str) -> None:
    assert public_url(url) == public


def test_publish_sign_with_a_bad_key_publishes_nothing(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path / "keys")
    os.chmod(key.source, 0o644)
    url = str(tmp_path / "registry")
    result = invoke(url, "publish", str(write_skill(tmp_path / "src", "demo")), "--sign", key.source)
    assert result.exit_code == 1 and "readable by others (mode 0644)" in result.output
    assert not (tmp_path / "registry").exists()


def test_sign_then_verify_exit_codes(registry_url: str, tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "keys")
    _, stranger = make_key(tmp_path / "other")
    assert invoke(registry_url, "publish", str(write_skill(tmp_path / "src", "demo"))).exit_code == 0
    unsigned = invoke(registry_url, "verify", "demo", "--key", pub.source)
    assert unsigned.exit_code == 1 and "not verified: demo@1.0.0 is not signed" in unsigned.output
    as_json = invoke(registry_url, "verify", "demo", "--key", pub.source, "--format", "json")
    assert as_json.exit_code == 1 and json.loads(as_json.output)["result"] == "unsigned"
    ranged = invoke(registry_url, "sign", "demo", "--key", key.source)
    assert ranged.exit_code == 1 and "sign needs an exact version, e.g. demo@1.2.3" in ranged.output
    signed = invoke(registry_url, "sign", "demo@1.0.0", "--key", key.source)
    assert signed.exit_code == 0 and signed.output.startswith("signed ")
    assert invoke(registry_url, "sign", "demo@1.0.0", "--key", key.source).output.startswith("already signed")
    ok = invoke(registry_url, "verify", "demo", "--key", stranger.source, "--key", pub.source)
    assert ok.exit_code == 0 and "verified demo@1.0.0" in ok.output and pub.source in ok.output
    other = invoke(registry_url, "verify", "demo", "--key", stranger.source)
    assert other.exit_code == 1 and "which is not a trusted key" in other.output
    wrong = invoke(registry_url, "verify", "demo", "--key", key.source)  # the private half
    assert wrong.exit_code == 1 and "holds a private key" in wrong.output


def test_copy_carries_signatures_both_ways(registry_url: str, tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "keys")
    folder = str(tmp_path / "folder-registry")
    assert invoke(folder, "publish", str(write_skill(tmp_path / "src", "demo")), "--sign", key.source).exit_code == 0
    target = registry_url if registry_url != folder else str(tmp_path / "other")
    result = invoke(folder, "copy", "demo", "--from", folder, "--to", target, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["signatures"] == 1  # stderr says the target was created
    assert invoke(target, "verify", "demo@1.0.0", "--key", pub.source).exit_code == 0
    back = str(tmp_path / "back")
    assert json.loads(invoke(folder, "copy", "demo", "--from", target, "--to", back, "--format", "json").stdout)[0]["signatures"] == 1
    assert invoke(back, "verify", "demo@1.0.0", "--key", pub.source).exit_code == 0
    again = json.loads(invoke(folder, "copy", "demo", "--from", target, "--to", back, "--format", "json").stdout)[0]
    assert (again["status"], again["signatures"]) == ("unchanged", 0)


def test_copying_a_signed_version_to_a_registry_that_cannot_keep_signatures_is_refused_first(tmp_path: Path) -> None:
    class NoSignatures(LocalRegistry):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.capabilities = self.capabilities - {SIGN}

    key, _ = make_key(tmp_path / "keys")
    src = str(tmp_path / "src-registry")
    assert invoke(src, "publish", str(write_skill(tmp_path / "src", "demo")), "--sign", key.source).exit_code == 0
    with open_url(src) as source, NoSignatures(tmp_path / "dst") as target:
        with pytest.raises(UnsupportedError, match="is signed, but .* cannot keep signatures"):
            copy_version(source, target, source.resolve_record("demo@1.0.0"))
        assert target.list_skills() == []


def test_signing_in_a_registry_that_cannot_keep_signatures_is_refused_before_any_work(tmp_path: Path) -> None:
    from skillctl.trust.sign import sign_version

    from registry.test_conformance import ReadOnlyView

    key, _ = make_key(tmp_path / "keys")
    with LocalRegistry(tmp_path / "registry") as inner:
        rec = inner.publish(prepared(tmp_path / "src")).record
        # The backend's own reason, before any download.
        with pytest.raises(UnsupportedError, match="attaching a signature is not supported: the registry .* is read-only"):
            sign_version(ReadOnlyView(inner), rec, key)
        assert inner.signatures(rec.resolved()) == []
