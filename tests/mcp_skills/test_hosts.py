"""``skillctl mcp config --host H``: each host's block parses, has the keys that host documents,
and launches exactly ``skillctl mcp serve`` with the options given; one block is launched for
real with the SDK's stdio client, as the host would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from pydantic import TypeAdapter

from skillctl.cli import cli
from skillctl.mcp import hosts

REPO = Path(__file__).resolve().parents[2]
HOSTS = list(hosts.HOST_NAMES)
# Where each host keeps its servers, and what a stdio entry must carry (their documented formats).
TOP_KEY = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "vscode": "servers", "cursor": "mcpServers",
           "goose": "extensions"}
# A folder name a shell string would break: spaces, both quotes, a YAML comment and mapping marker.
AWKWARD = "my skills 'one' \"two\" #three: four ü"


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["mcp", "config", *args], env=env, catch_exceptions=False)


def parsed(host: str, block: str) -> dict[str, Any]:
    return yaml.safe_load(block) if host == "goose" else json.loads(block)


def launch_of(host: str, data: dict[str, Any], name: str = "skillctl") -> list[str]:
    entry = data[TOP_KEY[host]][name]
    if host == "goose":
        return [entry["cmd"], *entry["args"]]
    return [entry["command"], *entry["args"]]


def launcher() -> list[str]:
    return list(hosts.skillctl_launcher(sys.argv[0], sys.executable))


def one_usage_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.fixture(scope="module")
def awkward(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hosts") / AWKWARD
    (folder / "hello").mkdir(parents=True)
    (folder / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: Says hello.\n---\n# Hello\n")
    return folder


@pytest.mark.parametrize("host", HOSTS)
def test_block_parses_and_launches_exactly_serve(host, awkward):
    result = invoke("--host", host, "--folder", str(awkward), "--all-versions")
    assert result.exit_code == 0, result.output
    data = parsed(host, result.stdout)
    assert list(data) == [TOP_KEY[host]]
    argv = launch_of(host, data)
    assert argv == [*launcher(), "mcp", "serve", "--folder", str(awkward), "--all-versions"]
    assert os.path.isabs(argv[0])
    entry = data[TOP_KEY[host]]["skillctl"]
    if host in ("vscode", "claude-code"):
        assert entry["type"] == "stdio"
    if host == "goose":
        assert entry["type"] == "stdio" and entry["enabled"] is True and entry["name"] == "skillctl"
        assert isinstance(entry["timeout"], int) and entry["timeout"] > 0
    note = result.stderr.strip()
    assert len(note.splitlines()) == 1 and hosts.HOSTS[host].file(hosts.here()) in note


@pytest.mark.parametrize("host", HOSTS)
def test_format_json_carries_the_same_block(host, awkward):
    text = invoke("--host", host, "--folder", str(awkward)).stdout
    result = invoke("--host", host, "--folder", str(awkward), "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out == {"host": host, "file": hosts.HOSTS[host].file(hosts.here()), "format": hosts.HOSTS[host].format,
                   "block": text}


def test_name_is_the_servers_key():
    result = invoke("--host", "cursor", "--name", "team-skills")
    assert list(parsed("cursor", result.stdout)["mcpServers"]) == ["team-skills"]


def test_folders_and_a_folder_registry_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for option in ("--folder", "--project", "--registry"):
        argv = launch_of("claude-desktop", parsed("claude-desktop", invoke("--host", "claude-desktop", option, "rel/dir").stdout))
        assert argv[-2:] == [option, str(tmp_path / "rel" / "dir")], argv
    argv = launch_of("claude-desktop", parsed("claude-desktop", invoke("--host", "claude-desktop", "--registry", "oci://r.example/ns").stdout))
    assert argv[-2:] == ["--registry", "oci://r.example/ns"]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    argv = launch_of("claude-desktop", parsed("claude-desktop", invoke("--host", "claude-desktop", "--folder=~/skills").stdout))
    assert argv[-2:] == ["--folder", str(tmp_path / "home" / "skills")]


def test_what_serve_would_pick_here_is_written_out(tmp_path, monkeypatch):
    """The host starts the server elsewhere and without this shell's environment."""
    monkeypatch.chdir(tmp_path)
    block = invoke("--host", "claude-desktop", env={"SKILLCTL_REGISTRY": "oci://r.example/ns"}).stdout
    assert launch_of("claude-desktop", parsed("claude-desktop", block))[-2:] == ["--registry", "oci://r.example/ns"]
    block = invoke("--host", "claude-desktop", "--folder", "f", env={"SKILLCTL_REGISTRY": "oci://r.example/ns"}).stdout
    assert "--registry" not in launch_of("claude-desktop", parsed("claude-desktop", block))
    (tmp_path / "skills.lock").write_text("{}\n")
    block = invoke("--host", "claude-desktop", env={"SKILLCTL_REGISTRY": ""}).stdout
    assert launch_of("claude-desktop", parsed("claude-desktop", block))[-2:] == ["--project", str(tmp_path)]


def test_a_server_that_would_not_start_is_warned_about_not_refused(tmp_path):
    for option, what in (("--project", "no skills.lock yet"), ("--folder", "is not a folder"), ("--registry", "holds no registry")):
        result = invoke("--host", "cursor", option, str(tmp_path / "missing"))
        assert result.exit_code == 0 and json.loads(result.stdout)["mcpServers"]["skillctl"]
        assert f"warning: {tmp_path / 'missing'}" in result.stderr and what in result.stderr, result.stderr
    (tmp_path / "skills.lock").write_text("{}\n")
    assert "warning" not in invoke("--host", "cursor", "--project", str(tmp_path)).stderr
    assert "warning" not in invoke("--host", "cursor", "--registry", "oci://r.example/ns").stderr


REMOTE = "http://127.0.0.1:8766/mcp"


@pytest.mark.parametrize("host,expected", [
    ("claude-code", {"mcpServers": {"skillctl": {"type": "http", "url": REMOTE}}}),
    ("vscode", {"servers": {"skillctl": {"type": "http", "url": REMOTE}}}),
    ("cursor", {"mcpServers": {"skillctl": {"url": REMOTE}}}),
])
def test_remote_blocks(host, expected):
    result = invoke("--host", host, "--url", REMOTE)
    assert result.exit_code == 0, result.output
    assert parsed(host, result.stdout) == expected


def test_remote_goose_is_streamable_http():
    entry = parsed("goose", invoke("--host", "goose", "--url", REMOTE).stdout)["extensions"]["skillctl"]
    assert (entry["type"], entry["uri"], entry["enabled"]) == ("streamable_http", REMOTE, True)


@pytest.mark.parametrize("host,header", [
    ("claude-code", "Bearer ${SKILLCTL_MCP_KEY}"),
    ("cursor", "Bearer ${env:SKILLCTL_MCP_KEY}"),
    ("vscode", "Bearer ${input:skillctl-key}"),
])
def test_key_is_referred_to_never_written(host, header):
    env = {"SKILLCTL_MCP_KEY": "sk-very-secret-value"}
    result = invoke("--host", host, "--url", REMOTE, "--key-env", "SKILLCTL_MCP_KEY", env=env)
    assert result.exit_code == 0, result.output
    assert "sk-very-secret-value" not in result.output
    data = parsed(host, result.stdout)
    assert data[TOP_KEY[host]]["skillctl"]["headers"] == {"Authorization": header}
    if host == "vscode":
        (prompt,) = data["inputs"]
        assert prompt["id"] == "skillctl-key" and prompt["password"] is True and prompt["type"] == "promptString"


def test_claude_code_note_has_the_claude_mcp_add_line(awkward):
    note = invoke("--host", "claude-code", "--folder", str(awkward)).stderr
    import shlex

    line = note[note.index("Or run: ") + len("Or run: "):].strip()
    assert shlex.split(line) == ["claude", "mcp", "add", "--transport", "stdio", "--scope", "project", "skillctl", "--",
                                 *launcher(), "mcp", "serve", "--folder", str(awkward)]


@pytest.mark.parametrize("args,needle", [
    (["--host", "claude-desktop", "--url", REMOTE], "Settings > Connectors"),
    (["--host", "goose", "--url", REMOTE, "--key-env", "K"], "in clear"),
    (["--host", "cursor", "--key-env", "K"], "--key-env goes with --url"),
    (["--host", "cursor", "--url", REMOTE, "--folder", "x"], "--folder with --url"),
    (["--host", "cursor", "--url", "ftp://h/mcp"], "http(s)://"),
    (["--host", "cursor", "--url", "http://user:pw@127.0.0.1:8766/mcp"], "--key-env NAME instead"),
    (["--host", "cursor", "--url", REMOTE, "--key-env", "1BAD"], "environment variable name"),
    (["--host", "cursor", "--name", "has space"], "--name 'has space'"),
    (["--host", "cursor", "--name", ""], "--name ''"),
    (["--host", "cursor", "--folder", "a", "--registry", "b"], "serve one thing"),
    (["--host", "nope"], "'nope' is not one of"),
    (["--host", "cursor", "--registry", "ftp://x/y"], "unknown registry scheme"),
])
def test_refusals_are_one_line(args, needle):
    assert needle in one_usage_error(invoke(*args))


@pytest.mark.parametrize("system,home,appdata,expected", [
    ("Darwin", "/Users/u", None, "/Users/u/Library/Application Support/Claude/claude_desktop_config.json"),
    ("Windows", "C:\\Users\\u", "C:\\Users\\u\\AppData\\Roaming", "C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json"),
    ("Linux", "/home/u", None, "/home/u/.config/Claude/claude_desktop_config.json"),
])
def test_claude_desktop_file_per_os(system, home, appdata, expected):
    place = hosts.Place(system, home, appdata)
    snippet = hosts.render("claude-desktop", "skillctl", hosts.Stdio("/x/skillctl", ("mcp", "serve")), place)
    assert snippet.file == expected and expected in snippet.note


@pytest.mark.parametrize("system,home,appdata,expected", [
    ("Linux", "/home/u", None, "/home/u/.config/goose/config.yaml"),
    ("Windows", "C:\\Users\\u", "D:\\Roam", "D:\\Roam\\Block\\goose\\config\\config.yaml"),
])
def test_goose_file_per_os(system, home, appdata, expected):
    snippet = hosts.render("goose", "skillctl", hosts.Stdio("/x/skillctl", ()), hosts.Place(system, home, appdata))
    assert snippet.file == expected


def test_launcher_is_the_running_script_else_the_installed_one_else_python_m(tmp_path):
    script = tmp_path / "bin" / "skillctl"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    python = tmp_path / "bin" / "python3"
    python.write_text("")
    assert hosts.skillctl_launcher(str(script), "/usr/bin/python3") == (str(script),)
    assert hosts.skillctl_launcher("/usr/lib/pytest", str(python)) == (str(script),)
    lone = tmp_path / "lone" / "python3"
    lone.parent.mkdir()
    lone.write_text("")
    assert hosts.skillctl_launcher("-c", str(lone)) == (str(lone), "-m", "skillctl")


# -- the Claude Desktop block, launched as Claude Desktop would launch it ----------------------


class _PageRequest(types.Request[types.PaginatedRequestParams, str]):
    pass


def test_claude_desktop_block_launches_a_server_that_lists_skills(awkward):
    entry = json.loads(invoke("--host", "claude-desktop", "--folder", str(awkward)).stdout)["mcpServers"]["skillctl"]
    # The SDK passes the child only a small default environment, as hosts do; PYTHONPATH keeps
    # the launched skillctl on this checkout's code.
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={"PYTHONPATH": str(REPO)})

    async def go() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            request = _PageRequest(method="skills/list", params=types.PaginatedRequestParams())
            return await client.session.send_request(request, TypeAdapter(dict[str, Any]))

    page = anyio.run(go)
    assert [s["uri"] for s in page["skills"]] == ["skill://hello/SKILL.md"]
    assert page["skills"][0]["frontmatter"] == {"name": "hello", "description": "Says hello."}


# -- a remote block against a running server with keys ---------------------------------------


@pytest.fixture(scope="module")
def keyed_server(awkward, tmp_path_factory):
    from skillctl.mcp.catalog import folder_catalog
    from skillctl.mcp.http import McpHttpServer
    from skillctl.serve.keys import add_key

    keys = tmp_path_factory.mktemp("host-keys") / "keys.json"
    read_key, _ = add_key(keys, "host", frozenset({"read"}))
    catalog = folder_catalog(awkward)
    server = McpHttpServer(catalog, port=0, keys=keys).start()
    yield server.url, read_key
    server.stop()
    catalog.close()


# What each host does with its own syntax for a variable, to the header the block holds.
EXPAND = {"claude-code": lambda text, env: text.replace("${SKILLCTL_MCP_KEY}", env["SKILLCTL_MCP_KEY"]),
          "cursor": lambda text, env: text.replace("${env:SKILLCTL_MCP_KEY}", env["SKILLCTL_MCP_KEY"])}


@pytest.mark.parametrize("host", sorted(EXPAND))
def test_remote_block_reaches_a_keyed_server(host, keyed_server):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url, key = keyed_server
    entry = parsed(host, invoke("--host", host, "--url", url, "--key-env", "SKILLCTL_MCP_KEY").stdout)["mcpServers"]["skillctl"]
    headers = {k: EXPAND[host](v, {"SKILLCTL_MCP_KEY": key}) for k, v in entry["headers"].items()}

    async def go() -> dict[str, Any]:
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(entry["url"], http_client=http)) as client:
                request = _PageRequest(method="skills/list", params=types.PaginatedRequestParams())
                return await client.session.send_request(request, TypeAdapter(dict[str, Any]))

    assert [s["uri"] for s in anyio.run(go)["skills"]] == ["skill://hello/SKILL.md"]
