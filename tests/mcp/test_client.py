"""The MCP client against an independent server (``independent_server.py``, the SDK's low-level
API, no skillctl code): listing, paging, verified reads, and every rejection the extension and
skillctl's limits call for — each one line, each before anything is written. One spawn per
scenario, shared by the module; HTTP is one module-scoped server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from skillctl.errors import IntegrityError, NotFoundError, RegistryError, SkillctlError, SourceError, UnsupportedError
from skillctl.mcp.client import McpClient, parse_server
from skillctl.protocols import RegistryReader
from skillctl.registry import check_registry_url, open_registry
from skillctl.registry.mcp import McpRegistry

SERVER = Path(__file__).parent / "independent_server.py"


def opened(url: str, **kw) -> McpRegistry:
    warnings: list[str] = []
    reg = open_registry(url, warn=warnings.append, **kw)
    assert isinstance(reg, McpRegistry)
    return reg


@pytest.fixture(scope="module")
def good(stdio_url) -> Iterator[McpRegistry]:
    with opened(stdio_url("good")) as reg:
        yield reg


@pytest.fixture(scope="module")
def hostile(stdio_url) -> Iterator[McpRegistry]:
    with opened(stdio_url("hostile")) as reg:
        yield reg


def test_a_good_server_lists_nested_and_prefixed_skills_and_reads_them_verified(good: McpRegistry) -> None:
    assert isinstance(good, RegistryReader)
    listed = {(r.name, r.id, r.default_version) for r in good.list_skills()}
    assert listed == {("pdf", "skill://pdf/SKILL.md", "1.2.0"), ("forms", "skill://pdf/forms/SKILL.md", "0.0.0"),
                      ("refunds", "skill://acme/billing/refunds/SKILL.md", "0.0.0")}
    assert good._built == {}  # listing reads no file (the extension's lazy retrieval)
    rec = good.resolve("pdf@^1")
    assert (rec.id, rec.version, rec.name) == ("skill://pdf/SKILL.md", "1.2.0", "pdf")
    assert rec.manifest.startswith("sha256:")
    data = good.fetch(rec)  # from memory: resolve read and verified every file
    from skillctl.bundle import read_bundle, sha256_digest

    assert sha256_digest(data) == rec.digest
    contents = read_bundle(data)
    assert sorted(contents.files) == ["SKILL.md", "forms/FIELDS.md", "forms/SKILL.md", "references/FORMS.md",
                                      "scripts/extract.py"]
    assert contents.executables == {"scripts/extract.py"}  # a #! file, as uploads are read
    # by skill path and by URI, the same skill; a range it does not match is a NotFoundError
    assert good.resolve("acme/billing/refunds").id == good.resolve("skill://acme/billing/refunds/SKILL.md@0.0.0").id
    with pytest.raises(NotFoundError, match=r"pdf@\^2: skill://pdf/SKILL.md on .* is 1\.2\.0, which does not match"):
        good.resolve("pdf@^2")
    with pytest.raises(NotFoundError, match="serves no skill at skill://nope/SKILL.md"):
        good.resolve("skill://nope/SKILL.md")
    with pytest.raises(NotFoundError, match="no skill named 'nope'"):
        good.resolve("nope")
    with pytest.raises(UnsupportedError, match="is an MCP server, read-only"):
        good.publish(None)
    assert good.signatures(rec) == []
    assert good.verify() == []
    with pytest.raises(SourceError, match="does not declare directoryRead"):  # never asked of a server that did not offer it
        good.client.read_directory("skill://pdf")


@pytest.mark.parametrize(("ref", "error", "message"), [
    ("bad-digest", IntegrityError, r"skill://bad-digest/data\.txt: expected sha256:[0-9a-f]{64}, got sha256:"),
    ("bad-size", IntegrityError, r"skill://bad-size/data\.txt: the entry declares 3 bytes but the server sent 4"),
    ("skill://dotdot/SKILL.md", SourceError, r"empty, '\.' or '\.\.' segment"),
    ("skill://absolute/SKILL.md", SourceError, r"file:///etc/passwd: not a file of the skill skill://absolute/SKILL.md"),
    ("skill://other-file/SKILL.md", SourceError, r"skill://bad-digest/SKILL.md: not a file of the skill"),
    ("skill://many-files/SKILL.md", SourceError, r"100001 resources, more than the extension's 512"),
    ("huge", SourceError, r"the files declare 10737418\d+ bytes in all, more than the 16777216"),
    ("dynamic", SourceError, r"resources are \"dynamic\", so its files cannot be pinned or verified"),
    ("fm-differs", IntegrityError, r"frontmatter differs from the SKILL.md it describes in description"),
    ("wrong-uri", IntegrityError, r"did not answer with exactly that resource"),
    ("bad-base64", IntegrityError, r"the blob is not valid base64"),
    ("tally", RegistryError, r"serves 2 skills named 'tally' \(skill://tally/SKILL.md, skill://tools/tally/SKILL.md\); "
                             r"ask for one by its skill path"),
])
def test_a_hostile_server_is_refused_in_one_line_before_anything_is_kept(hostile: McpRegistry, ref: str, error: type,
                                                                         message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        hostile.resolve(ref)
    assert "\n" not in str(caught.value)
    assert hostile._built.get(ref if "://" in ref else f"skill://{ref}/SKILL.md") is None


def test_invalid_entries_are_warned_about_and_skipped_and_a_shadowed_name_is_reached_by_path(hostile: McpRegistry) -> None:
    names = sorted(r.id for r in hostile.list_skills())
    assert "skill://dotdot/SKILL.md" not in names and "skill://many-files/SKILL.md" not in names
    assert any("dotdot" in w and "skipped an invalid skill entry" in w for w in hostile.warnings)
    assert hostile.resolve("tools/tally").description == "The nested tally"
    assert hostile.resolve("skill://tally/SKILL.md").description == "The tally attack"


def test_paging_follows_next_cursor_over_many_entries(stdio_url) -> None:
    with opened(stdio_url("many", "150")) as reg:
        records = reg.list_skills()
        assert len(records) == 150 and records[0].name == "skill-0000" and records[-1].name == "skill-0149"
        assert any("skill://broken/SKILL.md" in w for w in reg.warnings)  # the invalid one, named and skipped


@pytest.mark.parametrize(("scenario", "message"), [
    (("loop",), "skills/list gave a repeated or malformed cursor"),
    (("many", "10001", "2500"), "skills/list lists more than 10000 skills"),
    (("many", "30", "1"), "skills/list has more than 20 pages"),
])
def test_a_listing_without_end_is_refused(stdio_url, scenario: tuple[str, ...], message: str, monkeypatch) -> None:
    monkeypatch.setattr("skillctl.mcp.client.MAX_PAGES", 20)  # the real cap is 1000: the same rule, 50 times fewer round trips
    with opened(stdio_url(*scenario)) as reg:
        with pytest.raises(SourceError, match=message):
            reg.list_skills()


def test_a_server_that_never_answers_meets_the_deadline_and_stderr_stays_out_of_sight(stdio_url) -> None:
    start = time.monotonic()
    with opened(stdio_url("hang"), timeout_s=1.5, connect_timeout_s=60) as reg:  # a slow start is not what is tested
        with pytest.raises(SourceError, match=r"did not answer skills/list within 1\.5 s") as caught:
            reg.list_skills()
    assert time.monotonic() - start < 20
    assert "independent server starting" in str(caught.value)  # quoted from the kept stderr, on one line
    assert "\n" not in str(caught.value)


def test_a_server_that_never_shakes_hands_meets_the_connect_deadline(stdio_url) -> None:
    start = time.monotonic()
    with opened(stdio_url("mute"), connect_timeout_s=1.5) as reg:
        with pytest.raises(SourceError, match=r"did not answer the handshake within 1\.5 s"):
            reg.list_skills()
    assert time.monotonic() - start < 20


@pytest.mark.parametrize(("scenario", "message"), [
    ("noext", "does not declare the io.modelcontextprotocol/skills extension"),
    ("noresources", "declares io.modelcontextprotocol/skills but not the resources capability"),
])
def test_a_server_without_the_extension_or_resources_is_refused(stdio_url, scenario: str, message: str) -> None:
    with opened(stdio_url(scenario)) as reg:
        with pytest.raises(SourceError, match=message):
            reg.list_skills()


@pytest.mark.parametrize(("text", "message"), [
    ("mcp+stdio:", "names no command"),
    ("mcp+stdio:'unclosed", "does not split into words"),
    ("mcp+https://user:hunter2@example.com/mcp", "holds credentials"),
    ("mcp+http://example.com/mcp", "plain http is only for a loopback host"),
    ("mcp+ftp://example.com", "unknown MCP transport"),
])
def test_server_urls_are_checked_before_anything_starts(text: str, message: str, monkeypatch) -> None:
    monkeypatch.delenv("SKILLCTL_INSECURE", raising=False)
    with pytest.raises(SkillctlError, match=message) as caught:
        open_registry(text)
    assert "hunter2" not in str(caught.value)
    if "http://example" not in text:  # spelling alone; plain http is judged when opened
        with pytest.raises(RegistryError):
            check_registry_url(text)
    assert parse_server("mcp+http://127.0.0.1:9/mcp").http_url == "http://127.0.0.1:9/mcp"
    assert parse_server("mcp+http://example.com/mcp", insecure=True).http_url == "http://example.com/mcp"


# ---------------------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def http_server(tmp_path_factory) -> Iterator[str]:
    """The good scenario on streamable HTTP, with a key; its URL."""
    port_file = tmp_path_factory.mktemp("mcp-http") / "port"
    env = {**os.environ, "MCP_TEST_KEY": "k3y-for-tests"}
    proc = subprocess.Popen([sys.executable, str(SERVER), "good", "--http", str(port_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the HTTP test server did not start"
            time.sleep(0.05)
        yield f"mcp+http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_over_http_the_key_goes_as_a_bearer_header_and_without_it_the_server_refuses(http_server: str, monkeypatch) -> None:
    monkeypatch.setenv("SKILLCTL_MCP_TOKEN", "k3y-for-tests")
    with opened(http_server) as reg:
        rec = reg.resolve("refunds")
        assert rec.id == "skill://acme/billing/refunds/SKILL.md" and len(reg.fetch(rec)) == rec.size
    monkeypatch.delenv("SKILLCTL_MCP_TOKEN")
    with opened(http_server, timeout_s=10) as reg:
        with pytest.raises(SourceError, match="cannot connect to the MCP server") as caught:
            reg.list_skills()
    assert "k3y" not in str(caught.value)


def test_one_session_serves_many_calls(good: McpRegistry) -> None:
    client = good.client
    assert isinstance(client, McpClient)
    for _ in range(5):
        good.resolve("forms")
    assert good.client is client  # the same session: one spawn for the whole module


def test_the_key_is_attached_for_the_servers_origin_only() -> None:
    import httpx2

    from skillctl.mcp.client import _origin_key

    auth = _origin_key(parse_server("mcp+https://mcp.example.com/mcp").origin, "k3y")
    mine, elsewhere = httpx2.Request("POST", "https://mcp.example.com/mcp"), httpx2.Request("GET", "https://evil.example.net/")
    assert next(auth.auth_flow(mine)).headers["Authorization"] == "Bearer k3y"
    assert "Authorization" not in next(auth.auth_flow(elsewhere)).headers
