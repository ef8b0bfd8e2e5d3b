"""The server over each writable registry backend: the folder registry and an OCI registry
(Debian's real docker-registry). It uses the ``Registry`` protocol only, so the same requests
give the same answers; what a backend cannot do is refused as its capabilities say."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import anthropic
import openai
import pytest

from .helpers import anthropic_client, files_of_zip, openai_client, skill_dir, skill_files


@pytest.fixture(params=["folder", pytest.param("oci", marks=pytest.mark.requires_registry)])
def backend_server(request: pytest.FixtureRequest, start_server, tmp_path: Path):
    if request.param == "folder":
        return start_server(str(tmp_path / "registry"), public_read=True)
    url = request.getfixturevalue("registry_server").url(request.getfixturevalue("ns"))
    return start_server(url, insecure=True, public_read=True)


def test_the_same_api_over_every_backend(backend_server, keys, tmp_path: Path) -> None:
    oai = openai_client(backend_server, keys.admin)
    ant = anthropic_client(backend_server, keys.admin)
    src = tmp_path / "src"
    first = skill_dir(src, "tally", "1.0.0", files={"scripts/count.sh": ("#!/bin/sh\nwc -w\n", 0o755)})

    skill = oai.skills.create(files=skill_files(first))
    ant.skills.versions.create(skill.id, files=skill_files(skill_dir(src, "tally", "1.1.0", body="newer")))
    oai.skills.create(files=skill_files(skill_dir(src, "note", "0.1.0", files={})))

    assert sorted(s.name for s in oai.skills.list(limit=1)) == ["note", "tally"]
    assert [v.version for v in oai.skills.versions.list(skill.id)] == ["1.1.0", "1.0.0"]
    assert oai.skills.retrieve(skill.id).default_version == "1.1.0"
    assert ant.skills.retrieve(skill.id).latest_version_id == oai.skills.versions.retrieve("1.1.0", skill_id=skill.id).id
    downloaded = files_of_zip(oai.skills.versions.content.retrieve("1.0.0", skill_id=skill.id).content)
    assert {p: d for p, (d, _) in downloaded.items()} == dict(skill_files(first))
    assert downloaded["tally/scripts/count.sh"][1]

    with urllib.request.urlopen(f"{backend_server.url}/.well-known/agent-skills/index.json", timeout=60) as response:
        index = json.loads(response.read())
    assert {e["name"]: e["version"] for e in index["skills"]} == {"tally": "1.1.0", "note": "0.1.0"}

    yanked = oai.post(f"/skills/{skill.id}/versions/1.1.0/yank", body={"reason": "broken"}, cast_to=object)
    assert yanked["yanked"] and oai.skills.retrieve(skill.id).default_version == "1.0.0"
    with pytest.raises(openai.ConflictError):
        oai.skills.versions.create(skill.id, files=skill_files(skill_dir(src, "tally", "1.0.0", body="changed")))


def test_what_a_backend_cannot_do_is_refused_as_its_capabilities_say(backend_server, keys, tmp_path: Path) -> None:
    ant = anthropic_client(backend_server, keys.admin)
    skill = ant.skills.create(files=skill_files(skill_dir(tmp_path / "src", "tally", "1.0.0")))
    version = ant.skills.versions.retrieve("latest", skill_id=skill.id)
    if "oci" in backend_server.settings.registry_url:
        with pytest.raises(anthropic.BadRequestError, match="cannot delete versions; yank tally@1.0.0 instead"):
            ant.skills.versions.delete(version.id, skill_id=skill.id)
        assert ant.skills.versions.retrieve(version.id, skill_id=skill.id) == version
    else:
        ant.skills.versions.delete(version.id, skill_id=skill.id)
        with pytest.raises(anthropic.NotFoundError):
            ant.skills.retrieve(skill.id)


def test_a_read_only_registry_serves_reads_and_refuses_uploads(start_server, keys, tmp_path: Path) -> None:
    """A well-known site as the registry behind the server: readable, not writable."""
    writable = start_server(public_read=True)
    openai_client(writable, keys.writer).skills.create(files=skill_files(skill_dir(tmp_path / "src", "tally", "1.0.0")))
    mirror = start_server(writable.url, insecure=True)
    client = openai_client(mirror, keys.admin)
    assert [s.name for s in client.skills.list()] == ["tally"]
    with pytest.raises(openai.BadRequestError, match="cannot publish"):
        client.skills.create(files=skill_files(skill_dir(tmp_path / "src", "other", "1.0.0")))
