"""The agent image: recipe hash, offline build inputs, idempotent builds, the CLI."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import docker.errors
import pytest
from click.testing import CliRunner

from skillctl.errors import SandboxError
from skillctl.sandbox import image as image_mod
from skillctl.sandbox.image import RECIPE_LABEL, container_dir, ensure_image, find_mirror, recipe

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def context_copy(tmp_path) -> Path:
    target = tmp_path / "container"
    shutil.copytree(container_dir(), target)
    return target


def test_dockerfile_builds_offline_by_construction():
    text = (container_dir() / "Dockerfile").read_text()
    # A syntax directive would make the builder fetch a frontend image.
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    assert "ARG BASE" in text and "FROM ${BASE}" in text
    assert "USER 1000:1000" in text


def test_recipe_hash_follows_the_build_context(context_copy):
    same = recipe(context=context_copy)
    assert same.hash == recipe().hash
    (context_copy / "README.md").write_text("notes for people change nothing\n")
    assert recipe(context=context_copy).hash == same.hash
    with (context_copy / "Dockerfile").open("a") as handle:
        handle.write("\n# a change\n")
    assert recipe(context=context_copy).hash != same.hash


def test_recipe_hash_follows_the_base(monkeypatch):
    assert recipe("python:3.12-slim").hash != recipe().hash
    assert not recipe("python:3.12-slim").uses_local_base and recipe().uses_local_base
    monkeypatch.setenv("SKILLCTL_DEBIAN_SUITE", "trixie")
    assert "trixie" in recipe().base


def test_missing_build_context_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLCTL_CONTAINER_DIR", str(tmp_path))
    with pytest.raises(SandboxError, match=f"no Dockerfile in {tmp_path}: .*SKILLCTL_CONTAINER_DIR"):
        container_dir()


DEB822 = """\
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_comes_from_apt_deb822(tmp_path, monkeypatch):
    monkeypatch.delenv("SKILLCTL_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    assert find_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    with pytest.raises(SandboxError, match="no apt source for Debian 'trixie'.*SKILLCTL_DEBIAN_MIRROR"):
        find_mirror("trixie", tmp_path)


def test_mirror_comes_from_one_line_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("SKILLCTL_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example/debian bookworm main\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://local.example/debian bookworm main contrib\n"
    )
    assert find_mirror("bookworm", tmp_path) == "http://local.example/debian"


def test_disabled_sources_and_overrides(tmp_path, monkeypatch):
    monkeypatch.delenv("SKILLCTL_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "off.sources").write_text("Enabled: no\n" + DEB822.split("\n\n")[0])
    with pytest.raises(SandboxError, match="no apt source"):
        find_mirror("bookworm", tmp_path)
    monkeypatch.setenv("SKILLCTL_DEBIAN_MIRROR", "http://override.example/debian")
    assert find_mirror("bookworm", tmp_path) == "http://override.example/debian"


def test_this_machine_has_a_configured_mirror():
    assert find_mirror(image_mod.debian_suite()).startswith(("http://", "https://", "file:"))


# ----------------------------------------------------------------------- against the engine


@pytest.mark.requires_docker
def test_ensure_image_is_idempotent(agent_image, docker_client):
    lines: list[str] = []
    assert ensure_image(progress=lines.append, client=docker_client) == agent_image
    assert lines == [f"{agent_image} is up to date (recipe {recipe().hash[:12]})"]
    built = docker_client.images.get(agent_image)
    assert built.labels[RECIPE_LABEL] == recipe().hash
    assert docker_client.images.get("skillctl-agent:latest").id == built.id
    config = built.attrs["Config"]
    assert config["User"] == "1000:1000" and config["WorkingDir"] == "/workspace"
    assert config["Entrypoint"] == ["/usr/local/bin/skillctl-entrypoint"]


@pytest.mark.requires_docker
def test_changed_recipe_builds_a_new_image_on_the_cached_base(agent_image, docker_client, context_copy, monkeypatch):
    from skillctl.sandbox.client import docker_client as connect

    with (context_copy / "Dockerfile").open("a") as handle:
        handle.write("\n# recipe change for a test\n")
    monkeypatch.setenv("SKILLCTL_CONTAINER_DIR", str(context_copy))
    lines: list[str] = []
    ref = ensure_image(progress=lines.append, client=docker_client)
    patient = connect(timeout_s=600)  # a shared engine busy building may take minutes to remove
    hold = "skillctl-test-hold:changed-recipe"
    try:
        assert ref != agent_image and ref == recipe().tag
        assert any(line.startswith("building ") for line in lines)
        assert any("exists, reusing it" in line for line in lines)  # no second debootstrap
        image = docker_client.images.get(ref)
        assert image.labels[RECIPE_LABEL] == recipe(context=context_copy).hash

        # Its tag removed (the image kept by another name): found again and named, not rebuilt
        # and not a failure.
        image.tag(hold)
        patient.api.remove_image(ref)
        lines.clear()
        assert ensure_image(progress=lines.append, client=docker_client) == ref
        assert lines == [f"{ref} is up to date (recipe {ref.partition(':')[2]})"]
        assert docker_client.images.get(ref).id == image.id
    finally:
        monkeypatch.delenv("SKILLCTL_CONTAINER_DIR")
        ensure_image(client=patient)  # `latest` back on the real recipe first, so that
        for name in (hold, ref):  # removing the test's tags removes the test image
            with contextlib.suppress(docker.errors.NotFound):
                patient.images.remove(name)
        patient.close()


@pytest.mark.requires_docker
def test_missing_debootstrap_is_a_clear_error(docker_client, monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLCTL_DEBIAN_SUITE", "skillctl-test-no-such-suite")  # no cached base
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match="debootstrap is not installed.*apt-get install -y debootstrap"):
        ensure_image(client=docker_client)


@pytest.mark.requires_docker
def test_missing_public_base_is_a_clear_error(docker_client):
    with pytest.raises(SandboxError, match="base image nosuch/base:1 is not present locally: `docker pull"):
        ensure_image(base="nosuch/base:1", client=docker_client)


@pytest.mark.requires_docker
def test_cli_image_build_and_status(agent_image):
    from skillctl.cli import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["image", "build"], catch_exceptions=False)
    assert (result.exit_code, result.output.strip().splitlines()[-1]) == (0, agent_image), result.output
    result = runner.invoke(cli, ["image", "status", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["built"] is True and status["image"] == agent_image
    assert any(item["current"] and agent_image in item["tags"] for item in status["images"])
    result = runner.invoke(cli, ["image", "ls"], catch_exceptions=False)
    assert result.exit_code == 0 and f"{agent_image}: built" in result.output
    result = runner.invoke(cli, ["image", "build", "--base", "nosuch/base:1"], catch_exceptions=False)
    assert result.exit_code == 1 and "base image nosuch/base:1 is not present locally" in result.output


@pytest.mark.requires_docker
def test_module_entry_point_prints_the_reference(agent_image):
    done = subprocess.run(
        [sys.executable, "-m", "skillctl.sandbox.image"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == agent_image
    assert "is up to date" in done.stderr
