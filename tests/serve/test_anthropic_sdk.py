"""The ``anthropic`` SDK, unchanged but for ``base_url``, against ``skillctl serve`` on loopback:
``client.skills`` and ``client.beta.skills``."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import anthropic
import pytest
from anthropic.lib import files_from_dir

from bundle.zips import Z, zip_bytes
from .helpers import anthropic_client, files_of_zip, openai_client, skill_dir, skill_files

VERSION_ID_RE = re.compile(r"^skillver_[0-9a-f]{24}$")


@pytest.fixture
def admin(server, keys) -> anthropic.Anthropic:
    return anthropic_client(server, keys.admin)


def test_create_with_files_from_dir_and_display_name(admin: anthropic.Anthropic, src: Path) -> None:
    folder = skill_dir(src, files={"scripts/run.py": ("#!/usr/bin/env python3\nprint(1)\n", 0o755)})
    before = datetime.now(timezone.utc).replace(microsecond=0)

    skill = admin.skills.create(files=files_from_dir(folder), display_name="Demo, for people")

    assert skill.type == "skill" and skill.source == "custom"
    assert skill.display_name == "demo"  # named by SKILL.md; display_name is not stored (docs/registries/serve.md)
    assert before <= skill.created_at <= skill.updated_at
    [version] = admin.skills.versions.list(skill.id).data
    assert VERSION_ID_RE.match(version.id) and skill.latest_version_id == version.id
    assert (version.type, version.skill_id, version.name, version.version) == ("skill_version", skill.id, "demo", "1.0.0")
    assert version.description.startswith("Demo skill")
    assert admin.skills.retrieve(skill.id) == skill


def test_list_pages_with_next_page_and_source(admin: anthropic.Anthropic, src: Path) -> None:
    names = [f"skill-{i}" for i in range(5)]
    for name in names:
        admin.skills.create(files=skill_files(skill_dir(src, name)))

    first = admin.skills.list(limit=2)
    assert len(first.data) == 2 and first.has_more and first.next_page == first.data[-1].id
    every = [s.display_name for s in admin.skills.list(limit=2)]  # the SDK follows next_page
    assert sorted(every) == names and len(every) == 5
    assert [s.display_name for s in admin.beta.skills.list(limit=3, betas=["skills-2025-10-02"])] == every
    assert admin.skills.list(source="anthropic").data == []  # none of them is Anthropic's
    assert len(admin.skills.list(source="custom", limit=10).data) == 5
    with pytest.raises(anthropic.BadRequestError, match="limit must be from 1 to 1000"):
        admin.skills.list(limit=1001)


def test_versions_create_list_retrieve_download_and_delete(server, keys, admin: anthropic.Anthropic, src: Path) -> None:
    skill = admin.skills.create(files=skill_files(skill_dir(src, version="1.0.0")))
    second = admin.skills.versions.create(skill.id, files=skill_files(skill_dir(src, version="1.1.0", body="second")))
    extra = admin.skills.versions.create(skill.id, files=skill_files(skill_dir(src, version="1.2.0", body="third")))

    assert [v.version for v in admin.skills.versions.list(skill.id, limit=1)] == ["1.2.0", "1.1.0", "1.0.0"]
    assert admin.skills.retrieve(skill.id).latest_version_id == extra.id
    assert admin.skills.versions.retrieve("latest", skill_id=skill.id) == extra
    assert admin.skills.versions.retrieve(second.id, skill_id=skill.id) == second
    assert admin.beta.skills.versions.retrieve("1.1.0", skill_id=skill.id).id == second.id

    zipped = admin.beta.skills.versions.download(second.id, skill_id=skill.id).read()
    assert b"second" in files_of_zip(zipped)["demo/SKILL.md"][0]
    assert zipped == openai_client(server, keys.admin).skills.versions.content.retrieve("1.1.0", skill_id=skill.id).content

    gone = admin.skills.versions.delete(extra.id, skill_id=skill.id)
    assert (gone.id, gone.type) == (extra.id, "skill_version_deleted")
    assert admin.skills.retrieve(skill.id).latest_version_id == second.id
    with pytest.raises(anthropic.NotFoundError):
        admin.skills.versions.retrieve(extra.id, skill_id=skill.id)


def test_delete_skill(admin: anthropic.Anthropic, src: Path) -> None:
    skill = admin.skills.create(files=skill_files(skill_dir(src)))
    deleted = admin.skills.delete(skill.id)
    assert (deleted.id, deleted.type) == (skill.id, "skill_deleted")
    with pytest.raises(anthropic.NotFoundError) as caught:
        admin.skills.retrieve(skill.id)
    assert caught.value.type == "not_found_error" and caught.value.request_id and caught.value.request_id.startswith("req_")


def test_errors_carry_the_anthropic_error_shape(admin: anthropic.Anthropic, src: Path) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        admin.skills.create(files=[("demo/SKILL.md", b"---\nname: Demo\ndescription: x\n---\n")])
    err = caught.value
    assert err.type == "invalid_request_error" and "SK1" in err.api_message and "Demo" in err.api_message
    assert err.body["type"] == "error" and err.body["request_id"] == err.request_id
    skill_md = b"---\nname: demo\ndescription: Demonstrates refusals.\n---\nbody\n"
    with pytest.raises(anthropic.BadRequestError, match="link"):
        admin.skills.create(files=[("demo.zip", zip_bytes([Z("demo/SKILL.md", skill_md), Z("demo/x", b"/etc", mode=0o120777)]))])
    skill = admin.skills.create(files=skill_files(skill_dir(src)))
    with pytest.raises(anthropic.ConflictError, match="already exists"):
        admin.skills.create(files=skill_files(skill_dir(src, version="2.0.0")))
    with pytest.raises(anthropic.BadRequestError, match="display_name"):
        admin.skills.create(files=skill_files(skill_dir(src, "other")), display_name="two\nlines")
    assert [s.id for s in admin.skills.list()] == [skill.id]


def test_keys_in_either_header_and_scopes(server, keys, src: Path) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        anthropic_client(server, "skctl_wrong").skills.list()
    assert caught.value.type == "authentication_error"
    # Older SDKs and curl examples send x-api-key instead of a bearer token.
    by_header = anthropic_client(server, "unused", default_headers={"x-api-key": keys.reader, "Authorization": anthropic.Omit()})
    assert by_header.skills.list().data == []
    with pytest.raises(anthropic.PermissionDeniedError) as denied:
        by_header.skills.create(files=skill_files(skill_dir(src)))
    assert denied.value.type == "permission_error" and "may not publish" in denied.value.api_message
    mixed = anthropic_client(server, keys.admin, default_headers={"x-api-key": keys.reader})
    with pytest.raises(anthropic.AuthenticationError, match="two different keys"):
        mixed.skills.list()
