"""Where credentials come from: flags, env, the Docker config and real credential helpers."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from skillctl.errors import RegistryError
from skillctl.registry.oci.auth import find_credentials, parse_challenge

HOST = "127.0.0.1:5999"


def docker_config(tmp_path: Path, doc) -> dict[str, str]:
    folder = tmp_path / "dockercfg"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(doc if isinstance(doc, str) else json.dumps(doc), "utf-8")
    return {"DOCKER_CONFIG": str(folder)}


def helper(tmp_path: Path, suffix: str, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real docker-credential-SUFFIX program on PATH (the helper protocol: host on stdin)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    prog = bindir / f"docker-credential-{suffix}"
    prog.write_text("#!/bin/sh\n" + script, "utf-8")
    prog.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return prog


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def test_nothing_configured_means_anonymous(tmp_path: Path) -> None:
    assert find_credentials(HOST, env={"HOME": str(tmp_path)}) is None


def test_explicit_flags_win_over_env_and_docker_config(tmp_path: Path) -> None:
    env = {"SKILLCTL_REGISTRY_USERNAME": "envuser", "SKILLCTL_REGISTRY_PASSWORD": "envpw", **docker_config(tmp_path, {"auths": {HOST: {"auth": b64("d:p")}}})}
    creds = find_credentials(HOST, username="flag", password="pw", env=env)
    assert (creds.username, creds.password, creds.source) == ("flag", "pw", "--username/--password-stdin")
    creds = find_credentials(HOST, env=env)
    assert (creds.username, creds.password) == ("envuser", "envpw")
    assert "envpw" not in repr(creds)  # secrets stay out of reprs and logs


@pytest.mark.parametrize(
    "kwargs, env, says",
    [
        ({"username": "u"}, {}, "--username needs a password"),
        ({"password": "p"}, {}, "without --username"),
        ({}, {"SKILLCTL_REGISTRY_USERNAME": "u"}, "SKILLCTL_REGISTRY_PASSWORD is not set"),
        ({}, {"SKILLCTL_REGISTRY_PASSWORD": "p"}, "SKILLCTL_REGISTRY_USERNAME is not set"),
    ],
)
def test_half_given_credentials_are_refused(kwargs, env, says) -> None:
    with pytest.raises(RegistryError, match=says):
        find_credentials(HOST, env=env, **kwargs)


@pytest.mark.parametrize("key", [HOST, f"http://{HOST}", f"https://{HOST}/v1/"])
def test_docker_config_auths_by_any_spelling_of_the_host(tmp_path: Path, key: str) -> None:
    env = docker_config(tmp_path, {"auths": {"other:1": {"auth": b64("x:y")}, key: {"auth": b64("alice:pa:ss")}}})
    creds = find_credentials(HOST, env=env)
    assert (creds.username, creds.password) == ("alice", "pa:ss")
    assert creds.source.endswith("config.json")


def test_docker_config_username_password_fields_and_home_default(tmp_path: Path) -> None:
    (tmp_path / ".docker").mkdir()
    (tmp_path / ".docker" / "config.json").write_text(json.dumps({"auths": {HOST: {"username": "bob", "password": "pw"}}}))
    creds = find_credentials(HOST, env={"HOME": str(tmp_path)})
    assert (creds.username, creds.password) == ("bob", "pw")


@pytest.mark.parametrize(
    "doc, says",
    [
        ("{broken", "is not valid JSON"),
        ("[]", "is not a JSON object"),
        ({"auths": {HOST: {"auth": "!!!"}}}, "is not base64 of 'user:password'"),
        ({"auths": {HOST: {"auth": b64("nocolon")}}}, "is not base64 of 'user:password'"),
        ({"auths": {HOST: {"identitytoken": "tok"}}}, "identity token"),
    ],
)
def test_broken_docker_config_is_one_clear_line(tmp_path: Path, doc, says: str) -> None:
    with pytest.raises(RegistryError) as exc:
        find_credentials(HOST, env=docker_config(tmp_path, doc))
    assert says in str(exc.value) and "\n" not in str(exc.value)


HELPER_OK = 'read host\n[ "$1" = get ] || exit 3\nprintf \'{"ServerURL":"%s","Username":"helper-%s","Secret":"s3cret"}\' "$host" "$host"\n'


def test_cred_helpers_entry_runs_that_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper(tmp_path, "skilltest", HELPER_OK, monkeypatch)
    env = {**docker_config(tmp_path, {"credHelpers": {HOST: "skilltest"}, "auths": {HOST: {"auth": b64("not:used")}}}), "PATH": os.environ["PATH"]}
    creds = find_credentials(HOST, env=env)
    assert (creds.username, creds.password, creds.source) == (f"helper-{HOST}", "s3cret", "docker-credential-skilltest")


def test_creds_store_is_the_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper(tmp_path, "store", HELPER_OK, monkeypatch)
    creds = find_credentials(HOST, env=docker_config(tmp_path, {"credsStore": "store"}))
    assert creds.username == f"helper-{HOST}"


def test_helper_without_credentials_means_anonymous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper(tmp_path, "empty", "echo 'credentials not found in native keychain'\nexit 1\n", monkeypatch)
    assert find_credentials(HOST, env=docker_config(tmp_path, {"credsStore": "empty"})) is None


@pytest.mark.parametrize(
    "script, says",
    [
        (None, "docker-credential-gone (from"),
        ("echo 'keychain locked' >&2\nexit 2\n", "failed for 127.0.0.1:5999: keychain locked"),
        ("echo not-json\n", "other than the JSON Username/Secret"),
        ('echo \'{"Username":"<token>","Secret":"t"}\'\n', "identity token"),
    ],
)
def test_broken_helpers_are_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script, says: str) -> None:
    if script is not None:
        helper(tmp_path, "gone", script, monkeypatch)
    with pytest.raises(RegistryError) as exc:
        find_credentials(HOST, env=docker_config(tmp_path, {"credHelpers": {HOST: "gone"}}))
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_challenge_parsing() -> None:
    c = parse_challenge('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"')
    assert c.scheme == "bearer"
    assert c.params == {"realm": "https://auth.example/token", "service": "registry.example", "scope": "repository:a/b:pull,push"}
    assert parse_challenge('Basic realm="skillctl-test"') .scheme == "basic"
    assert parse_challenge("").scheme == ""
