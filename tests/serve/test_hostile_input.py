"""Hostile values in requests: every one is a 4xx in the shape's words, never a 500 with a
traceback in the server log."""

from __future__ import annotations

import logging
from pathlib import Path

import openai
import pytest

from .helpers import anthropic_client, openai_client, skill_dir, skill_files

HUGE = "99999999999999999999999.0.0"  # over SQLite's INTEGER, let alone 2^53-1


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="skillctl.serve")
    yield
    failed = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not failed, [r.getMessage() for r in failed]


def test_a_version_over_the_bound_is_a_400_on_upload_and_never_a_500(server, keys, src: Path, no_tracebacks) -> None:
    admin = openai_client(server, keys.admin)
    skill = admin.skills.create(files=skill_files(skill_dir(src)))
    for version in (HUGE, "1.0.0-rc.99999999999999999999", "9007199254740992.0.0"):
        with pytest.raises(openai.BadRequestError, match=r"over 9007199254740991 \(2\^53-1\)"):
            admin.skills.versions.create(skill.id, files=skill_files(skill_dir(src, version=version)))
        with pytest.raises(openai.BadRequestError, match=r"over 9007199254740991"):
            admin.skills.create(files=skill_files(skill_dir(src, "other", version=version)))
    anthropic = anthropic_client(server, keys.admin)
    with pytest.raises(Exception) as caught:
        anthropic.beta.skills.versions.create(skill.id, files=skill_files(skill_dir(src, version=HUGE)))
    assert getattr(caught.value, "status_code", None) == 400, caught.value
    # the largest version accepted still is
    assert admin.skills.versions.create(skill.id, files=skill_files(skill_dir(src, version="9007199254740991.0.0"))).version


def test_a_version_over_the_bound_in_a_path_or_body_is_a_4xx(server, keys, src: Path, no_tracebacks) -> None:
    admin = openai_client(server, keys.admin)
    skill = admin.skills.create(files=skill_files(skill_dir(src)))
    for shape, prefix in (("openai", "/openai/v1"), ("anthropic", "/anthropic/v1")):
        client = admin if shape == "openai" else anthropic_client(server, keys.admin)
        base = f"{prefix}/skills/{skill.id}/versions/{HUGE}"
        for method, path, body in (("get", base, None), ("get", base + "/content", None), ("delete", base, None),
                                   ("post", base + "/yank", {"reason": "x"}), ("post", base + "/unyank", {})):
            response = client._client.request(method.upper(), server.url + path, json=body,
                                              headers={"Authorization": f"Bearer {keys.admin}"})
            assert 400 <= response.status_code < 500, (shape, method, path, response.status_code, response.text)
    with pytest.raises((openai.BadRequestError, openai.NotFoundError)):
        admin.post(f"/skills/{skill.id}", body={"default_version": HUGE}, cast_to=object)


DEEP = b"[" * 30_000 + b"]" * 30_000  # under the 64 KiB cap on JSON bodies; past the parser's recursion limit


def test_a_json_body_nested_too_deeply_is_a_400(server, keys, src: Path, no_tracebacks) -> None:
    admin = openai_client(server, keys.admin)
    skill = admin.skills.create(files=skill_files(skill_dir(src)))
    for path in (f"/openai/v1/skills/{skill.id}/versions/1.0.0/yank", f"/openai/v1/skills/{skill.id}",
                 f"/anthropic/v1/skills/{skill.id}/versions/1.0.0/yank"):
        response = admin._client.post(server.url + path, content=b'{"reason": ' + DEEP + b"}",
                                      headers={"Authorization": f"Bearer {keys.admin}", "Content-Type": "application/json"})
        assert response.status_code == 400 and "nested too deeply: over 64 levels" in response.text, (path, response.text)


def test_a_keys_file_nested_too_deeply_locks_everyone_out_in_one_log_line(server, keys, caplog) -> None:
    caplog.set_level(logging.INFO, logger="skillctl.serve")
    keys.path.write_bytes(b'{"keys": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    with pytest.raises(openai.InternalServerError, match="cannot read its keys file"):
        openai_client(server, keys.admin).skills.list()
    [refusal] = [r for r in caplog.records if r.name == "skillctl.serve" and r.levelno >= logging.ERROR]
    assert "refusing every key" in refusal.getMessage() and "nested too deeply" in refusal.getMessage()
    assert refusal.exc_info is None
