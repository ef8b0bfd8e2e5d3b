"""``skillctl mcp serve`` driven by the ``mcp`` SDK's own client: over stdio (the server launched as
a host launches it), over streamable HTTP (keys), and in-process for the registry and project
catalogs. Every file read is checked against the entry's digest and size."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from skillctl.cli import cli
from skillctl.mcp import EXTENSION_ID
from skillctl.mcp.catalog import folder_catalog, registry_catalog
from skillctl.mcp.server import SKILLS_PAGE, build_server

MANY = 520  # more than five pages of skills/list
_ANY = TypeAdapter(dict[str, Any])


class _UriParams(types.PaginatedRequestParams):
    uri: str


class _UriRequest(types.Request[_UriParams, str]):
    pass


class _PageRequest(types.Request[types.PaginatedRequestParams, str]):
    pass


async def call(client: Client, method: str, *, uri: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    """An extension method through the SDK session (the SDK has no verbs for them)."""
    if uri is None:
        request: Any = _PageRequest(method=method, params=types.PaginatedRequestParams(cursor=cursor))
    else:
        request = _UriRequest(method=method, params=_UriParams(uri=uri, cursor=cursor))
    return await client.session.send_request(request, _ANY)


async def list_all(client: Client) -> tuple[list[dict[str, Any]], int]:
    skills, pages, cursor = [], 0, None
    while True:
        page = await call(client, "skills/list", cursor=cursor)
        assert page["resultType"] == "complete" and page["ttlMs"] > 0 and page["cacheScope"] in ("public", "private")
        skills += page["skills"]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            return skills, pages


async def read_bytes(client: Client, uri: str) -> bytes:
    result = await client.read_resource(uri)
    (content,) = result.contents
    assert content.uri == uri
    return content.text.encode("utf-8") if hasattr(content, "text") else base64.b64decode(content.blob)


async def verified(client: Client, entry: dict[str, Any]) -> dict[str, bytes]:
    """Every file of ``entry``, each checked against its digest and size."""
    out = {}
    for res in entry["resources"]:
        data = await read_bytes(client, res["uri"])
        assert len(data) == res["size"], res["uri"]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == res["digest"], res["uri"]
        out[res["uri"]] = data
    return out


def _skill(folder: Path, name: str, body: str = "", extra: str = "") -> Path:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n# {name}\n{body}\n")
    return folder / name


@pytest.fixture(scope="module")
def skills_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mcp-skills")
    for i in range(MANY):
        _skill(root, f"s{i:03d}")
    pdf = _skill(root, "pdf-processing", "Pick a template from templates/.", "license: Apache-2.0\nmetadata:\n  version: 2.1.0\n")
    (pdf / "templates" / "regional").mkdir(parents=True)
    (pdf / "templates" / "invoice.md").write_text("# Invoice\n")
    (pdf / "templates" / "regional" / "eu-invoice.md").write_text("# EU\n")
    (pdf / "scripts").mkdir()
    (pdf / "scripts" / "extract.py").write_text("#!/usr/bin/env python3\nprint('ok')\n")
    (pdf / "assets").mkdir()
    (pdf / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    (pdf / "assets" / "Übersicht 2026.md").write_text("# Übersicht\n")  # percent-escaped in its URI
    _skill(root / "acme" / "billing", "refunds")
    _skill(_skill(root, "guide") / "extras", "helper")  # nested: its files are also the guide's
    return root


def _stdio(folder: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "skillctl", "mcp", "serve", "--folder", str(folder), *args])


def test_stdio_both_eras_list_get_read_and_directories(skills_folder):
    """One launched server per protocol era: the 2026-07-28 envelope (capabilities.extensions) and
    the handshake (experimental, which the 2025-11-25 schema keeps)."""

    async def modern() -> None:
        async with Client(_stdio(skills_folder), read_timeout_seconds=120) as client:
            caps = client.server_capabilities
            assert caps.extensions == {EXTENSION_ID: {"directoryRead": True}} and caps.resources is not None
            skills, pages = await list_all(client)
            uris = [s["uri"] for s in skills]
            assert len(uris) == len(set(uris)) == MANY + 4 and pages == -(-(MANY + 4) // SKILLS_PAGE)
            by_uri = {s["uri"]: s for s in skills}
            pdf = by_uri["skill://pdf-processing/SKILL.md"]
            assert pdf["frontmatter"] == {"name": "pdf-processing", "description": "The pdf-processing skill.",
                                          "license": "Apache-2.0", "metadata": {"version": "2.1.0"}}
            assert sorted(r["uri"].rsplit("pdf-processing/", 1)[1] for r in pdf["resources"]) == [
                "SKILL.md", "assets/%C3%9Cbersicht%202026.md", "assets/logo.png", "scripts/extract.py", "templates/invoice.md", "templates/regional/eu-invoice.md"]
            files = await verified(client, pdf)
            assert files["skill://pdf-processing/assets/%C3%9Cbersicht%202026.md"] == "# Übersicht\n".encode()
            assets = await call(client, "resources/directory/read", uri="skill://pdf-processing/assets")
            assert [r["uri"] for r in assets["resources"]] == ["skill://pdf-processing/assets/logo.png",
                                                              "skill://pdf-processing/assets/%C3%9Cbersicht%202026.md"]
            assert files["skill://pdf-processing/assets/logo.png"] == b"\x89PNG\r\n\x1a\n\x00\xff\xfe"  # a blob, byte for byte
            nested = by_uri["skill://acme/billing/refunds/SKILL.md"]
            assert nested["frontmatter"]["name"] == "refunds"
            await verified(client, nested)
            guide, helper = by_uri["skill://guide/SKILL.md"], by_uri["skill://guide/extras/helper/SKILL.md"]
            assert helper["resources"] == [r for r in guide["resources"] if "/extras/helper/" in r["uri"]]
            assert helper["frontmatter"]["name"] == "helper"
            got = await call(client, "skills/get", uri="skill://pdf-processing/SKILL.md")
            assert got["skill"] == pdf and got["resultType"] == "complete" and got["ttlMs"] > 0
            # directories: a skill's root, a folder in it, a folder above skills
            root = await call(client, "resources/directory/read", uri="skill://pdf-processing")
            assert [(r["name"], r["mimeType"]) for r in root["resources"]] == [
                ("SKILL.md", "text/markdown"), ("assets", "inode/directory"), ("scripts", "inode/directory"),
                ("templates", "inode/directory")]
            tpl = await call(client, "resources/directory/read", uri="skill://pdf-processing/templates")
            assert [r["uri"] for r in tpl["resources"]] == ["skill://pdf-processing/templates/invoice.md",
                                                           "skill://pdf-processing/templates/regional"]
            above = await call(client, "resources/directory/read", uri="skill://acme")
            assert above["resources"] == [{"uri": "skill://acme/billing", "name": "billing", "mimeType": "inode/directory"}]
            # unknown things are -32602 with a message naming them
            for method, uri in (("skills/get", "skill://nope/SKILL.md"), ("skills/get", "skill://pdf-processing/templates/invoice.md"),
                                ("resources/directory/read", "skill://pdf-processing/SKILL.md"),
                                ("resources/directory/read", "skill://nope"), ("resources/directory/read", "skill://pdf-processing/")):
                with pytest.raises(MCPError) as err:
                    await call(client, method, uri=uri)
                assert err.value.code == -32602 and uri.rstrip("/") in err.value.message
            for uri in ("skill://pdf-processing/missing.md", "skill://pdf-processing/../s000/SKILL.md", "file:///etc/passwd",
                        "skill://pdf-processing/%2e%2e/s000/SKILL.md", "skill://pdf-processing/SKILL.md?x=1",
                        "skill://pdf-processing/%ff.md"):
                with pytest.raises(MCPError) as err:
                    await client.read_resource(uri)
                assert err.value.code == -32602
            with pytest.raises(MCPError) as err:
                await call(client, "skills/list", cursor="not-a-cursor")
            assert err.value.code == -32602 and "cursor" in err.value.message
            listed = await client.list_resources()
            assert listed.resources[0].uri.endswith("/SKILL.md") and listed.resources[0].mime_type == "text/markdown"

    async def legacy() -> None:
        async with Client(_stdio(skills_folder), mode="legacy", read_timeout_seconds=120) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_capabilities.experimental == {EXTENSION_ID: {"directoryRead": True}}
            got = await call(client, "skills/get", uri="skill://acme/billing/refunds/SKILL.md")
            await verified(client, got["skill"])

    anyio.run(modern)
    anyio.run(legacy)


@pytest.fixture(scope="module")
def versioned_registry(tmp_path_factory) -> Path:
    """A folder registry: alpha 1.0.0 and 1.1.0, beta 0.1.0 and a yanked 0.2.0."""
    from skillctl.registry import open_registry
    from skillctl.registry.prepare import prepare_folder

    root = tmp_path_factory.mktemp("mcp-registry")
    src = root / "src"
    reg_path = root / "reg"
    with open_registry(str(reg_path), create=True) as reg:
        for name, version in (("alpha", "1.0.0"), ("alpha", "1.1.0"), ("beta", "0.1.0"), ("beta", "0.2.0")):
            folder = _skill(src / version, name, f"version {version}")
            reg.publish(prepare_folder(folder, version=version))
        reg.set_yanked("beta@0.2.0", True)
    return reg_path


def test_registry_serves_latest_by_name_and_every_version_by_path(versioned_registry):
    async def check(all_versions: bool) -> None:
        catalog = registry_catalog(str(versioned_registry), all_versions=all_versions)
        try:
            async with Client(build_server(catalog)) as client:
                skills, _ = await list_all(client)
                uris = [s["uri"] for s in skills]
                if all_versions:  # the yanked version is not listed, but still answered below
                    assert uris == ["skill://alpha/SKILL.md", "skill://beta/SKILL.md", "skill://_versions/0.1.0/beta/SKILL.md",
                                    "skill://_versions/1.0.0/alpha/SKILL.md", "skill://_versions/1.1.0/alpha/SKILL.md"]
                else:
                    assert uris == ["skill://alpha/SKILL.md", "skill://beta/SKILL.md"]
                latest = (await verified(client, skills[0]))["skill://alpha/SKILL.md"]
                assert b"version 1.1.0" in latest
                for version, name in (("1.0.0", "alpha"), ("0.2.0", "beta")):
                    got = await call(client, "skills/get", uri=f"skill://_versions/{version}/{name}/SKILL.md")
                    files = await verified(client, got["skill"])
                    assert f"version {version}".encode() in files[f"skill://_versions/{version}/{name}/SKILL.md"]
                versions = await call(client, "resources/directory/read", uri="skill://_versions")
                assert [r["name"] for r in versions["resources"]] == ["0.1.0", "0.2.0", "1.0.0", "1.1.0"]
                with pytest.raises(MCPError) as err:
                    await call(client, "skills/get", uri="skill://_versions/9.9.9/alpha/SKILL.md")
                assert err.value.code == -32602
        finally:
            catalog.close()

    anyio.run(check, False)
    anyio.run(check, True)


def test_project_serves_what_its_lock_pins(tmp_path, skills_folder):
    """``--project``: the lock's pins, each fetched and checked against the lock; a skill whose
    files changed after locking stops the server from starting rather than being served."""
    project = tmp_path / "proj"
    project.mkdir()
    local = _skill(project / "skills", "helper", "v1")
    (project / "skills.yaml").write_text("skills:\n  helper: {path: ./skills/helper}\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["lock", "--requirements", str(project / "skills.yaml"), "--lock", str(project / "skills.lock")])
    assert result.exit_code == 0, result.output
    from skillctl.cli.mcp import _project_catalog

    async def listed(catalog) -> list[dict[str, Any]]:
        async with Client(build_server(catalog)) as client:
            skills, _ = await list_all(client)
            for entry in skills:
                await verified(client, entry)
            return skills

    catalog = _project_catalog(project)
    try:
        assert [s["uri"] for s in anyio.run(listed, catalog)] == ["skill://helper/SKILL.md"]
    finally:
        catalog.close()
    (local / "SKILL.md").write_text("---\nname: helper\ndescription: changed behind the lock\n---\n")
    from skillctl.errors import IntegrityError

    with pytest.raises(IntegrityError, match="changed since the lock"):
        _project_catalog(project)  # refused before anything is served


@pytest.fixture(scope="module")
def keyed_http(skills_folder, tmp_path_factory):
    from skillctl.mcp.http import McpHttpServer
    from skillctl.serve.keys import add_key

    keys = tmp_path_factory.mktemp("mcp-keys") / "keys.json"
    read_key, _ = add_key(keys, "reader", frozenset({"read"}))
    publish_key, _ = add_key(keys, "publisher", frozenset({"publish"}))
    catalog = folder_catalog(skills_folder / "acme")
    server = McpHttpServer(catalog, port=0, keys=keys).start()
    yield server.url, read_key, publish_key
    server.stop()
    catalog.close()


def test_http_needs_a_read_key(keyed_http):

    url, read_key, publish_key = keyed_http
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    for headers, status in (({}, 401), ({"Authorization": "Bearer skctl_wrong"}, 401), ({"Authorization": "Basic x"}, 401),
                            ({"Authorization": f"Bearer {publish_key}"}, 403)):
        reply = httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers}, timeout=30)
        assert reply.status_code == status, (headers, reply.text)
        assert read_key not in reply.text and publish_key not in reply.text
    assert httpx2.post(url, json=body, timeout=30).headers.get("www-authenticate", "").startswith("Bearer")

    async def with_key() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {read_key}"}, timeout=60) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                assert client.server_capabilities.extensions == {EXTENSION_ID: {"directoryRead": True}}
                skills, _ = await list_all(client)
                assert [s["uri"] for s in skills] == ["skill://billing/refunds/SKILL.md"]
                page = await call(client, "skills/list")
                assert page["cacheScope"] == "private"  # what one key may read another may not
                await verified(client, skills[0])

    anyio.run(with_key)


@pytest.mark.parametrize("args, message", [
    (["--registry", "{reg}", "--folder", "{dir}"], "serve one thing"),
    (["--folder", "{dir}", "--password-stdin"], "standard input"),
    (["--folder", "{dir}", "--keys", "{dir}/k.json"], "--keys is for --transport http"),
    (["--project", "{dir}"], "no skills.lock"),
    (["--folder", "{dir}/missing"], "no such folder"),
    (["--folder", "{dir}"], "no skills found"),
    (["--folder", "{dir}", "--transport", "http", "--host", "0.0.0.0", "--port", "0"], "without keys"),
])
def test_serve_refusals_are_one_line(tmp_path, args, message):
    args = [a.format(reg=tmp_path / "reg", dir=tmp_path) for a in args]
    result = subprocess.run([sys.executable, "-m", "skillctl", "mcp", "serve", *args], capture_output=True, text=True,
                            input="secret\n", timeout=120)
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""  # stdout is the protocol's


def test_real_skills_are_served_byte_for_byte():
    """The 58 public skills in tests/data/real-skills, as messy as their authors made them: every
    one listed, every file read back with its digest and size."""
    real = Path(__file__).resolve().parent.parent / "data" / "real-skills"

    async def check(catalog) -> tuple[int, int]:
        async with Client(build_server(catalog)) as client:
            skills, _ = await list_all(client)
            files = 0
            for entry in skills:
                files += len(await verified(client, entry))
            return len(skills), files

    catalog = folder_catalog(real)
    try:
        count, files = anyio.run(check, catalog)
    finally:
        catalog.close()
    assert count == len(list(real.rglob("SKILL.md"))) == 58
    assert files > 200
