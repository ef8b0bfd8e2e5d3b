"""API keys: ``skillctl serve key add|list|revoke`` and what a running server does with them."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import openai
import pytest
from click.testing import CliRunner, Result

from skillctl.cli import cli
from skillctl.errors import ConfigError
from skillctl.serve.keys import KeyRing, add_key, read_keys, revoke_key

from .helpers import openai_client


def run(*args: object, ok: bool = True) -> Result:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in result.output
    assert result.exit_code == (0 if ok else 1), result.output
    return result


def test_key_add_prints_the_key_alone_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    result = run("serve", "key", "add", "ci", "--scopes", "read,publish", "--keys", path)
    [key] = result.stdout.splitlines()
    assert key.startswith("skctl_") and len(key) == len("skctl_") + 43
    assert "shown only this once" in result.stderr
    raw = path.read_text()
    assert key not in raw and key[len("skctl_") + 4 :] not in raw
    [entry] = json.loads(raw)["keys"]
    assert entry["hash"] == "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    assert entry["scopes"] == ["read", "publish"] and entry["prefix"] == key[: len("skctl_") + 4]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # written by rename, nothing left over


def test_key_list_shows_names_and_scopes_but_never_keys_or_hashes(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    key = run("serve", "key", "add", "ci", "--scopes", "read", "--keys", path).stdout.strip()
    run("serve", "key", "add", "ops", "--scopes", "read,publish,admin", "--keys", path)
    listed = json.loads(run("serve", "key", "list", "--keys", path, "--format", "json").stdout)
    assert [(k["name"], k["scopes"]) for k in listed] == [("ci", ["read"]), ("ops", ["read", "publish", "admin"])]
    text = run("serve", "key", "list", "--keys", path).stdout
    assert "ci" in text and "ops" in text and key not in text and "sha256" not in text and "sha256" not in json.dumps(listed)


def test_key_commands_refuse_bad_input_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    run("serve", "key", "add", "ci", "--keys", path)
    assert "already exists" in run("serve", "key", "add", "ci", "--keys", path, ok=False).stderr
    assert "scopes must be" in run("serve", "key", "add", "x", "--scopes", "read,root", "--keys", path, ok=False).stderr
    assert "key name" in run("serve", "key", "add", "bad name", "--keys", path, ok=False).stderr
    assert "no key named 'nobody'" in run("serve", "key", "revoke", "nobody", "--keys", path, ok=False).stderr
    usage = CliRunner().invoke(cli, ["serve", "key", "list"])
    assert usage.exit_code == 2 and "--keys FILE" in usage.output


def test_a_keys_file_others_can_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    add_key(path, "ci", frozenset({"read"}))
    os.chmod(path, 0o664)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_keys(path)


def test_a_damaged_keys_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text('{"format": "skillctl-serve-keys", "version": 1, "keys": [{"name": "x"}]}')
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError, match="entry 0 is malformed"):
        KeyRing(path)


def test_keys_are_compared_against_every_stored_hash(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    first, _ = add_key(path, "a", frozenset({"read"}))
    second, _ = add_key(path, "b", frozenset({"publish"}))
    ring = KeyRing(path)
    assert ring.authenticate(first).name == "a" and ring.authenticate(second).name == "b"
    assert ring.authenticate(first[:-1]) is None and ring.authenticate("") is None


def test_revoking_a_key_locks_it_out_of_a_running_server(server, keys) -> None:
    client = openai_client(server, keys.reader)
    assert client.skills.list().data == []
    revoke_key(keys.path, "reader")
    with pytest.raises(openai.AuthenticationError, match="invalid API key"):
        client.skills.list()
    added, _ = add_key(keys.path, "late", frozenset({"read"}))
    assert openai_client(server, added).skills.list().data == []  # new keys work without a restart


def test_a_keys_file_damaged_while_serving_locks_everyone_out(server, keys) -> None:
    keys.path.write_text("{ not json")
    with pytest.raises(openai.InternalServerError, match="cannot read its keys file"):
        openai_client(server, keys.admin).skills.list()


def test_public_read_opens_reads_only(start_server, keys, tmp_path: Path) -> None:
    server = start_server(public_read=True, keys=None)
    anyone = openai_client(server, "any-key-at-all")
    assert anyone.skills.list().data == []
    with pytest.raises(openai.AuthenticationError, match="only serves reads"):
        anyone.skills.create(files=[("demo/SKILL.md", b"x")])


def test_a_server_without_keys_or_public_reads_does_not_start(start_server, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nobody could use this server"):
        start_server(keys=None)
    with pytest.raises(ConfigError, match="does not exist"):
        start_server(keys=tmp_path / "missing.json")
