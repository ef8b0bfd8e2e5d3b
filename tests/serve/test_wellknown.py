"""The server as an Agent Skills well-known site: the files ``skillctl site build`` writes,
served with the format's HTTP rules, and ``skillctl`` itself reading them over loopback."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from registry.helpers import tree
from skillctl.cli import cli
from skillctl.registry import open_registry
from skillctl.registry.wellknown.site import build_site

from .helpers import openai_client, skill_dir, skill_files

WK = "/.well-known/agent-skills"


def get(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def run(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def published(start_server, keys, tmp_path: Path):
    """A public-read server with tally 1.0.0 (a script), tally 1.1.0 and note 0.1.0 (SKILL.md
    alone), uploaded through the OpenAI API."""
    server = start_server(public_read=True)
    client = openai_client(server, keys.writer)
    src = tmp_path / "src"
    server.folders = {"tally": skill_dir(src, "tally", "1.0.0"), "note": skill_dir(src, "note", "0.1.0", files={})}
    tally = client.skills.create(files=skill_files(server.folders["tally"]))
    client.skills.versions.create(tally.id, files=skill_files(skill_dir(src, "tally", "1.1.0", body="newer")))
    client.skills.create(files=skill_files(server.folders["note"]))
    return server


def test_serves_the_files_site_build_writes_byte_for_byte(published, tmp_path: Path) -> None:
    out = tmp_path / "site"
    with open_registry(str(tmp_path / "registry"), create=True) as reg:
        build_site(out, reg)
    on_disk = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(on_disk) == 9  # index, 2 versions.json, 3 × (snapshot index + artifact)
    for path, data in on_disk.items():
        status, headers, body = get(f"{published.url}/{path}")
        assert (status, body) == (200, data), path


def test_content_types_caching_head_and_not_found(published) -> None:
    status, headers, body = get(f"{published.url}{WK}/index.json")
    index = json.loads(body)
    assert status == 200 and headers["content-type"] == "application/json" and headers["cache-control"] == "no-cache"
    assert {e["name"]: (e["type"], e["version"]) for e in index["skills"]} == {"tally": ("archive", "1.1.0"), "note": ("skill-md", "0.1.0")}

    archive = f"{published.url}{WK}/tally/v1.1.0/tally.tar.gz"
    status, headers, body = get(archive)
    assert status == 200 and headers["content-type"] == "application/gzip" and "immutable" in headers["cache-control"]
    status, head_headers, head_body = get(archive, method="HEAD")
    assert status == 200 and head_body == b"" and head_headers["content-length"] == str(len(body))
    assert head_headers["etag"] == headers["etag"]
    assert get(archive, headers={"If-None-Match": headers["etag"]})[0] == 304

    status, headers, _ = get(f"{published.url}{WK}/note/v0.1.0/SKILL.md")
    assert status == 200 and headers["content-type"].startswith("text/markdown")
    assert get(f"{published.url}{WK}/tally/v9.9.9/tally.tar.gz")[0] == 404
    assert get(f"{published.url}{WK}/nothing.json", method="HEAD")[0] == 404


def test_an_upload_shows_in_the_index_at_once(published, keys, tmp_path: Path) -> None:
    client = openai_client(published, keys.writer)
    client.skills.create(files=skill_files(skill_dir(tmp_path / "more", "late", "3.0.0")))
    names = {e["name"] for e in json.loads(get(f"{published.url}{WK}/index.json")[2])["skills"]}
    assert names == {"tally", "note", "late"}


def test_reading_the_site_needs_a_key_unless_reads_are_public(server, keys) -> None:
    assert get(f"{server.url}{WK}/index.json")[0] == 401
    status, _, body = get(f"{server.url}{WK}/index.json", headers={"Authorization": f"Bearer {keys.reader}"})
    assert status == 200 and json.loads(body)["skills"] == []


def test_skillctl_lists_and_pulls_from_the_server(published, tmp_path: Path) -> None:
    site = ["--registry", published.url, "--insecure"]
    listed = json.loads(run("list", *site, "--format", "json"))
    assert {s["name"]: s["default_version"] for s in listed} == {"note": "0.1.0", "tally": "1.1.0"}

    run("pull", "tally@1.0.0", "-o", tmp_path / "vendor", *site)
    assert tree(tmp_path / "vendor" / "tally") == tree(published.folders["tally"])  # bytes and modes
    run("pull", "note", "-o", tmp_path / "vendor", *site)
    assert tree(tmp_path / "vendor" / "note") == tree(published.folders["note"])
