"""Debian packages for environments, resolved by apt against a signed loopback repository.

The repository (``tests/apt_repo.py``) is real: .debs built by dpkg-deb, indexed by
apt-ftparchive, its Release signed by a throwaway key; apt checks the signature, the index
hashes and then skillctl each file's SHA256, as with a Debian mirror. The agent image's own
dpkg status decides what is already there (python3 is, so it is never fetched)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillctl.env.build import EnvFile, build_env_image, env_hash, existing_env_image
from skillctl.env.debian import resolve_debian
from skillctl.env.resolve import uv_binary
from skillctl.env.target import probe_image
from skillctl.errors import EnvError

from .runs import invoke, make_skill, publish, run_outputs
from .wheels import make_wheel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apt_repo import TOOLS, AptRepo, DebPackage, SigningKey  # noqa: E402
from tools import require_tool  # noqa: E402

pytestmark = [pytest.mark.requires_docker]

HELLO = "#!/bin/sh\ncat /usr/share/skl-greeting/greeting.txt\n"


@pytest.fixture(scope="module")
def keys():
    for command, package in TOOLS.items():
        require_tool(command, package)
    made = {"trusted": SigningKey("skillctl-test"), "other": SigningKey("someone-else")}
    yield made
    for key in made.values():
        key.close()


def greeting(version: str = "1.0", text: str = "hello from a Debian package") -> DebPackage:
    return DebPackage("skl-greeting", version, files={"/usr/share/skl-greeting/greeting.txt": (text + "\n", 0o644)})


@pytest.fixture
def repo(tmp_path, keys, agent_image, monkeypatch):
    """The repository, signed by the trusted key, with skillctl pointed at it and a fresh cache."""
    suite = "bookworm"
    with AptRepo(tmp_path / "repo", suite, "amd64") as served:
        served.add(greeting(), tmp_path)
        served.add(DebPackage("skl-hello", "1.0", "skl-greeting (>= 1.0), python3", files={
            "/usr/bin/skl-hello": (HELLO, 0o755),
            "/usr/bin/skl-suid": ("#!/bin/sh\necho suid\n", 0o4755),  # the image build strips the bit
        }), tmp_path)
        served.add(DebPackage("skl-broken", "1.0", "skl-missing"), tmp_path)
        served.add(DebPackage("skl-unused", "1.0"), tmp_path)
        served.publish(keys["trusted"])
        env = {"SKILLCTL_DEBIAN_MIRROR": served.url, "SKILLCTL_DEBIAN_KEYRING": str(keys["trusted"].keyring),
               "SKILLCTL_DEBIAN_SUITE": suite, "SKILLCTL_CACHE_DIR": str(tmp_path / "cache")}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield served, env


def resolve(names, docker_client, agent_image):
    return resolve_debian(names, probe_image(docker_client, agent_image), client=docker_client, base_image=agent_image)


def test_dependencies_are_resolved_and_what_the_image_has_is_not_fetched(repo, docker_client, agent_image):
    served, _ = repo
    packages = resolve(["skl-hello"], docker_client, agent_image)
    assert [(p.package, p.version) for p in packages] == [("skl-greeting", "1.0"), ("skl-hello", "1.0")]
    for p in packages:  # python3 is in the image; skl-unused was not asked for
        assert p.sha256 == hashlib.sha256(served.debs[p.package].read_bytes()).hexdigest()
        assert p.url == f"{served.url}/pool/main/s/{p.package}/{p.filename}" and p.size == served.debs[p.package].stat().st_size


def test_a_package_whose_dependency_is_nowhere_is_refused_naming_it(repo, docker_client, agent_image):
    with pytest.raises(EnvError, match=r"skl-broken cannot be installed on the agent image: .*skl-missing"):
        resolve(["skl-broken"], docker_client, agent_image)
    with pytest.raises(EnvError, match=r"skl-nothing cannot be installed on the agent image: .*Unable to locate"):
        resolve(["skl-nothing"], docker_client, agent_image)


def test_an_unsigned_repository_is_refused(repo, docker_client, agent_image):
    served, _ = repo
    served.publish(None)
    with pytest.raises(EnvError, match=r"apt could not read the Debian mirror .* is not signed"):
        resolve(["skl-hello"], docker_client, agent_image)


def test_a_repository_signed_by_another_key_is_refused(repo, keys, docker_client, agent_image):
    served, _ = repo
    served.publish(keys["other"])
    with pytest.raises(EnvError, match=r"apt could not read the Debian mirror .*(NO_PUBKEY|not signed)"):
        resolve(["skl-hello"], docker_client, agent_image)


def test_an_index_changed_after_signing_is_refused(repo, tmp_path, docker_client, agent_image):
    """An attacker who swaps a .deb and rewrites Packages to match cannot re-sign Release."""
    served, _ = repo
    (tmp_path / "evil").mkdir()
    evil = served.add(greeting("1.0", "evil"), tmp_path / "evil")
    assert evil == served.debs["skl-greeting"]
    packages = served.dist / "main" / "binary-amd64" / "Packages"
    packages.write_bytes(subprocess.run(["apt-ftparchive", "packages", "pool/main"], cwd=served.root / "debian",
                                        capture_output=True, check=True).stdout)
    with pytest.raises(EnvError, match=r"apt could not read the Debian mirror .*(Hash Sum mismatch|unexpected size)"):
        resolve(["skl-hello"], docker_client, agent_image)


@pytest.mark.slow
def test_a_skills_yaml_debian_package_runs_offline_and_a_changed_deb_is_refused(repo, project, tmp_path, own_env_images):
    served, debian_env = repo
    env = dict(project, **debian_env)
    publish(env, make_skill(tmp_path, "greeter", "#!/usr/bin/env python3\nimport subprocess\nsubprocess.run(['skl-hello'], check=True)\n"))
    (tmp_path / "skills.yaml").write_text("skills:\n  greeter: ^1\nenvironment:\n  debian: [skl-hello]\n")
    lock = tmp_path / "skills.lock"
    made = invoke(env, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock))
    assert made.exit_code == 0, made.output
    section = json.loads(lock.read_text())["environment"]
    assert [d["package"] for d in section["debian"]] == ["skl-greeting", "skl-hello"]
    assert "pylock" not in section  # nothing Python was declared

    net = "python3 -c \"import socket\ntry: socket.create_connection(('1.1.1.1', 53), timeout=2); print('net on')\nexcept OSError: print('net off')\""
    _, outputs = run_outputs(env, tmp_path, "--lock", str(lock),
                             commands=[f"/skills/greeter/scripts/run.py && stat -c 'suid %a' /usr/bin/skl-suid && {net}"])
    assert "hello from a Debian package" in outputs and "suid 755" in outputs and "net off" in outputs, outputs

    # The same lock on another machine, against a mirror that now serves other bytes for a .deb.
    (tmp_path / "evil").mkdir()
    served.add(greeting("1.0", "evil"), tmp_path / "evil")
    other = dict(env, SKILLCTL_CACHE_DIR=str(tmp_path / "other-cache"))
    refused = invoke(other, "env", "build", "--lock", str(lock), "--force")
    assert refused.exit_code == 1, refused.output
    assert "skl-greeting_1.0_all.deb from" in refused.stderr and "is pinned; refusing it" in refused.stderr


@pytest.mark.slow
def test_an_environment_layer_keeps_no_setuid_or_setgid_file_or_folder(repo, tmp_path, docker_client, agent_image,
                                                                        own_env_images):
    # The agent image has none (container/Dockerfile); a Debian package installed for a skill
    # brought setuid/setgid programs, and setgid folders kept their bit.
    served, _ = repo
    deb = served.add(DebPackage("skl-setid", "1.0", files={"/usr/bin/skl-setid": ("#!/bin/sh\necho id\n", 0o6755)},
                                folders={"/var/skl-spool": 0o2775}), tmp_path)
    sha = hashlib.sha256(deb.read_bytes()).hexdigest()
    base, digest, _ = existing_env_image(
        docker_client, agent_image, lambda base_id: env_hash(base_id, [], [(deb.name, sha)], f"test {tmp_path}"), True)
    tag = build_env_image(docker_client, base, digest, [], [EnvFile(deb, sha, "skl-setid==1.0")], uv_bin=uv_binary())
    listing = docker_client.containers.run(
        tag, entrypoint=["sh", "-c"], command=["find / -xdev -perm /6000; stat -c '%a %n' /usr/bin/skl-setid /var/skl-spool"],
        network_disabled=True, remove=True,
    ).decode()
    assert listing == "755 /usr/bin/skl-setid\n775 /var/skl-spool\n"


@pytest.mark.slow
def test_a_wheel_script_named_like_a_command_of_the_environments_debian_package_is_refused(repo, tmp_path, docker_client,
                                                                                          agent_image, own_env_images):
    # The check runs in the image being built, after dpkg: it sees the Debian packages' commands
    # too, which no listing of the agent image could.
    served, _ = repo
    deb = served.add(DebPackage("skl-tool", "1.0", files={"/usr/bin/skl-tool": ("#!/bin/sh\necho deb\n", 0o755)}), tmp_path)
    whl = make_wheel(tmp_path, "skltoolwheel", entry_points={"console_scripts": {"skl-tool": "skltoolwheel:main"}})
    deb_sha, whl_sha = (hashlib.sha256(p.read_bytes()).hexdigest() for p in (deb, whl))
    base, digest, _ = existing_env_image(docker_client, agent_image, lambda base_id: env_hash(
        base_id, [(whl.name, whl_sha)], [(deb.name, deb_sha)], f"test {tmp_path}"), True)
    with pytest.raises(EnvError) as refused:
        build_env_image(docker_client, base, digest, [EnvFile(whl, whl_sha, "skltoolwheel==1.0")],
                        [EnvFile(deb, deb_sha, "skl-tool=1.0")], uv_bin=uv_binary())
    assert str(refused.value).startswith("refusing the environment: skltoolwheel-1.0-py3-none-any.whl installs "
                                         "'skl-tool' (would shadow /usr/bin/skl-tool). ")
    assert not docker_client.images.list(filters={"label": f"org.skillctl.env={digest}"})
