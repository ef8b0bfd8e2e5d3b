"""The team registry deployment in registry/ works as shipped: install.sh stages the config,
the systemd unit and the environment file; the unit's own ExecStart and EnvironmentFile start
Debian's docker-registry with htpasswd users and TLS; skillctl publishes to it and pulls from it;
anonymous clients are refused; the documented read-only maintenance mode (for backups and
garbage-collect) refuses pushes and keeps serving pulls; garbage-collect runs on its config."""

from __future__ import annotations

import json
import os
import shlex
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .server import BINARY, free_port
from .test_cli import REPO, client_env, skillctl

pytestmark = [pytest.mark.requires_registry]
DEPLOY = REPO / "registry"
USER, PASSWORD = "carol", "team-secret-42"


def _version(skill: Path) -> str:
    import yaml

    front = (skill / "SKILL.md").read_text().split("---")[1]
    return yaml.safe_load(front)["metadata"]["version"]


def _unit(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()
    return fields


def _env_file(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key] = value
    return out


def _set_env(path: Path, **values: str) -> None:
    """Edit the staged environment file as an administrator would (uncomment or replace keys)."""
    lines = path.read_text().splitlines()
    out = []
    for line in lines:
        key = line.lstrip("#").split("=", 1)[0]
        if key in values:
            out.append(f"{key}={values.pop(key)}")
        else:
            out.append(line)
    out += [f"{k}={v}" for k, v in values.items()]
    path.write_text("\n".join(out) + "\n")


class Deployment:
    """The staged files under ``root``, started the way systemd would start the unit."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.etc = root / "etc" / "skillctl-registry"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self, **extra_env: str) -> None:
        unit = _unit(self.root / "etc" / "systemd" / "system" / "skillctl-registry.service")
        # The unit names absolute paths under /etc; the staged copy lives under root.
        argv = [a.replace("/etc/skillctl-registry", str(self.etc)) for a in shlex.split(unit["ExecStart"])]
        assert argv[0] == BINARY or Path(argv[0]).name == "docker-registry", argv
        env_path = Path(unit["EnvironmentFile"].replace("/etc/skillctl-registry", str(self.etc)))
        env = {"PATH": os.environ["PATH"], **_env_file(env_path), **extra_env}
        log = open(self.root / "registry.log", "ab")
        self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        ctx = ssl.create_default_context(cafile=str(self.etc / "tls" / "cert.pem"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.root / "registry.log").read_text()[-800:]
            try:
                urllib.request.urlopen(f"https://127.0.0.1:{self.port}/v2/", timeout=2, context=ctx).close()
                raise AssertionError("the registry answered an anonymous request")
            except urllib.error.HTTPError as exc:
                assert exc.code == 401, exc.code
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the registry did not answer: {(self.root / 'registry.log').read_text()[-800:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def deployment(tmp_path: Path):
    root = tmp_path / "stage"
    res = subprocess.run([str(DEPLOY / "install.sh"), "--root", str(root), "--no-start"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    dep = Deployment(root)
    # What the administrator does after install.sh: a user, a certificate, the address, TLS.
    subprocess.run(["htpasswd", "-Bb", str(dep.etc / "htpasswd"), USER, PASSWORD], check=True, capture_output=True)
    tls = dep.etc / "tls"
    tls.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tls / "key.pem"), "-out", str(tls / "cert.pem")],
        check=True, capture_output=True,
    )
    _set_env(
        dep.etc / "env",
        REGISTRY_HTTP_ADDR=f"127.0.0.1:{dep.port}",
        REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=str(root / "var" / "lib" / "skillctl-registry"),
        REGISTRY_AUTH_HTPASSWD_PATH=str(dep.etc / "htpasswd"),
        REGISTRY_HTTP_TLS_CERTIFICATE=str(tls / "cert.pem"),
        REGISTRY_HTTP_TLS_KEY=str(tls / "key.pem"),
    )
    yield dep
    dep.stop()


def test_install_stages_every_file_and_keeps_site_settings(tmp_path: Path):
    root = tmp_path / "stage"
    for _ in range(2):
        res = subprocess.run([str(DEPLOY / "install.sh"), "--root", str(root), "--no-start"], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        if _ == 0:
            first_env = (root / "etc/skillctl-registry/env").read_text()
    assert (root / "etc/skillctl-registry/config.yml").read_bytes() == (DEPLOY / "config.yml").read_bytes()
    assert (root / "etc/systemd/system/skillctl-registry.service").is_file()
    env = (root / "etc/skillctl-registry/env").read_text()
    assert env == first_env, "a second install must keep the site's environment file"
    secret = _env_file(root / "etc/skillctl-registry/env")["REGISTRY_HTTP_SECRET"]
    assert secret != "change-me" and len(secret) == 64
    assert (root / "var/lib/skillctl-registry").is_dir()


def test_unknown_install_option_is_a_usage_error(tmp_path: Path):
    res = subprocess.run([str(DEPLOY / "install.sh"), "--frobnicate"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "unknown option '--frobnicate'" in res.stderr


def test_publish_pull_and_maintenance_against_the_deployed_registry(deployment: Deployment, tmp_path: Path):
    deployment.start()
    url = f"oci://127.0.0.1:{deployment.port}/team"
    cert = str(deployment.etc / "tls" / "cert.pem")
    anon = client_env(tmp_path / "anon", REQUESTS_CA_BUNDLE=cert)
    env = client_env(tmp_path / "member", REQUESTS_CA_BUNDLE=cert,
                     SKILLCTL_REGISTRY_USERNAME=USER, SKILLCTL_REGISTRY_PASSWORD=PASSWORD)

    refused = skillctl("publish", REPO / "skills" / "tally", "--registry", url, env=anon, cwd=tmp_path, ok=False)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr

    skillctl("publish", REPO / "skills" / "tally", "--registry", url, env=env, cwd=tmp_path)
    versions = skillctl("versions", "tally", "--registry", url, "--format", "json", env=env, cwd=tmp_path)
    [published] = json.loads(versions.stdout)
    assert (published["name"], published["version"]) == ("tally", _version(REPO / "skills" / "tally"))
    skillctl("pull", "tally", "--registry", url, "-o", tmp_path / "out", env=env, cwd=tmp_path)
    assert (tmp_path / "out" / "tally" / "SKILL.md").read_bytes() == (REPO / "skills" / "tally" / "SKILL.md").read_bytes()

    # Backups and garbage-collect run with the registry read-only: pushes refused, pulls served.
    deployment.stop()
    deployment.start(REGISTRY_STORAGE_MAINTENANCE_READONLY='{"enabled": true}')
    bumped = tmp_path / "tally"
    subprocess.run(["cp", "-r", str(REPO / "skills" / "tally"), str(bumped)], check=True)
    skillctl("version", bumped, "minor", env=env, cwd=tmp_path)
    blocked = skillctl("publish", bumped, "--registry", url, env=env, cwd=tmp_path, ok=False)
    # distribution answers 405 to every write while read-only
    assert blocked.returncode == 1 and "HTTP 405" in blocked.stderr, blocked.stdout + blocked.stderr
    skillctl("pull", "tally", "--registry", url, "-o", tmp_path / "again", env=env, cwd=tmp_path)
    deployment.stop()

    unit_env = _env_file(deployment.etc / "env")
    gc = subprocess.run([BINARY, "garbage-collect", "--dry-run", str(deployment.etc / "config.yml")],
                        env={"PATH": os.environ["PATH"], **unit_env}, capture_output=True, text=True, timeout=120)
    assert gc.returncode == 0, gc.stdout[-500:] + gc.stderr[-500:]
    assert "blobs marked" in gc.stdout + gc.stderr
