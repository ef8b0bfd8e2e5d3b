"""The configuration block each MCP host expects, to launch ``skillctl mcp serve`` (stdio) or to
reach a running ``skillctl mcp serve --transport http`` (a URL).

Plain data and rendering, no click: ``render(host, name, launch)`` gives a ``Snippet`` (the block
as text, the file it belongs in on this OS, and one line on how to merge it). The command is a
list (``Stdio.command`` + ``Stdio.args``), never a shell string, so paths with spaces or quotes
reach the host as they are; JSON and YAML quote them.

Where each format is documented (read 2026-12; the facts, not the code, come from there):

    claude-desktop  modelcontextprotocol.io "Connect to local MCP servers" (claude_desktop_config.json,
                    ``mcpServers`` → ``command``/``args``/``env``); remote servers only under Settings >
                    Connectors: "Claude Desktop will not connect to remote servers that are configured
                    directly via claude_desktop_config.json" (support.claude.com/en/articles/11503834)
    claude-code     code.claude.com/docs/en/mcp: project scope is ``.mcp.json`` at the project root,
                    ``mcpServers`` → ``{"type": "stdio", "command", "args", "env"}`` or
                    ``{"type": "http", "url", "headers"}``; ``${VAR}`` is expanded in command, args,
                    env, url and headers; ``claude mcp add --transport stdio|http --scope project``
    vscode          code.visualstudio.com/docs/copilot/reference/mcp-configuration: ``.vscode/mcp.json``,
                    ``servers`` → ``{"type": "stdio", "command", "args"}`` or ``{"type": "http", "url",
                    "headers"}``; secrets through ``inputs`` (``promptString``, ``password``) and
                    ``${input:ID}``
    cursor          cursor.com/docs/mcp: ``.cursor/mcp.json`` (project) or ``~/.cursor/mcp.json``,
                    ``mcpServers`` → ``{"command", "args", "env"}`` or ``{"url", "headers"}``;
                    ``${env:NAME}`` interpolation
    goose           block.github.io/goose/docs/guides/config-files: ``~/.config/goose/config.yaml``
                    (Windows ``%APPDATA%\\Block\\goose\\config\\config.yaml``), ``extensions`` →
                    ``{type: stdio, name, enabled, cmd, args, envs, env_keys, timeout}`` or
                    ``{type: streamable_http, name, enabled, uri, headers, timeout}``
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Callable, Mapping, Union
from urllib.parse import urlsplit

from skillctl.errors import ConfigError

DEFAULT_NAME = "skillctl"
DESCRIPTION = "Agent skills served by skillctl (MCP skills extension)"
GOOSE_TIMEOUT_S = 300  # goose's documented default; a large registry's first listing can take a while
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class HostConfigError(ConfigError):
    """What was asked cannot be written in that host's configuration (the CLI exits 2)."""


@dataclass(frozen=True)
class Stdio:
    """The host launches ``command`` with ``args`` and speaks MCP on its stdin/stdout."""

    command: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Remote:
    """The host connects to a running server at ``url`` (streamable HTTP); with ``key_env`` it
    sends ``Authorization: Bearer`` with a key the host itself supplies, never written here."""

    url: str
    key_env: str | None = None


Launch = Union[Stdio, Remote]


@dataclass(frozen=True)
class Snippet:
    host: str
    file: str  # where the block goes on this OS
    format: str  # "json" | "yaml"
    block: str  # the text to paste, ending in a newline
    note: str  # one line for people: the file and how to merge

    def to_json(self) -> dict[str, str]:
        return {"host": self.host, "file": self.file, "format": self.format, "block": self.block}


@dataclass(frozen=True)
class Place:
    """Where a host reads its configuration from, for the note and ``Snippet.file``."""

    system: str  # platform.system(): "Linux", "Darwin", "Windows"
    home: str
    appdata: str | None = None  # %APPDATA% on Windows

    def user_path(self, *parts: str) -> str:
        if self.system == "Windows":
            return str(PureWindowsPath(self.home, *parts))
        return str(PurePosixPath(self.home, *parts))

    def appdata_path(self, *parts: str) -> str:
        base = self.appdata or str(PureWindowsPath(self.home, "AppData", "Roaming"))
        return str(PureWindowsPath(base, *parts))


def here() -> Place:
    import platform
    from pathlib import Path

    return Place(platform.system(), str(Path.home()), os.environ.get("APPDATA"))


# -- the serve invocation --------------------------------------------------------------------


def serve_args(registry: str | None = None, project: str | None = None, folder: str | None = None,
               all_versions: bool = False) -> tuple[str, ...]:
    """``mcp serve`` and its options, folders made absolute: a host starts the server in a working
    directory of its own choosing, so a relative path would point somewhere else."""
    args = ["mcp", "serve"]
    if registry:
        args += ["--registry", _absolute_registry(registry)]
    if project:
        args += ["--project", _absolute(project)]
    if folder:
        args += ["--folder", _absolute(folder)]
    if all_versions:
        args.append("--all-versions")
    return tuple(args)


def _absolute_registry(url: str) -> str:
    # Only a folder registry is a path; oci://, https://, mcp+… pass through untouched.
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", url) or url.startswith("mcp+"):
        return url
    return _absolute(url)


def _absolute(path: str) -> str:
    # "~" too: a shell leaves it alone in --folder=~/skills, and no host expands it later.
    return os.path.abspath(os.path.expanduser(path))


def launch_warnings(args: tuple[str, ...]) -> list[str]:
    """What would make the server refuse to start when the host launches it, said now: a host
    shows a server that exits at once only in its logs. Not errors: the folder may come later."""
    out = []
    value = dict(zip(args, args[1:]))
    if "--project" in value and not os.path.isfile(os.path.join(value["--project"], "skills.lock")):
        out.append(f"{value['--project']} has no skills.lock yet: the server will not start until `skillctl lock` ran there")
    if "--folder" in value and not os.path.isdir(value["--folder"]):
        out.append(f"{value['--folder']} is not a folder (yet): the server will not start until it is")
    registry = value.get("--registry", "")
    if registry and registry == _absolute_registry(registry) and os.path.isabs(registry) and not os.path.isdir(registry):
        out.append(f"{registry} holds no registry (yet): the server will not start until one is made there")
    return out


def skillctl_launcher(argv0: str, executable: str) -> tuple[str, ...]:
    """How to start the running skillctl, absolute: hosts start servers with a small PATH (a GUI
    app does not read the shell's profile), so a bare ``skillctl`` is often not found.

    ``argv0`` when it is the ``skillctl`` script itself; else the script installed next to the
    interpreter (``CliRunner``, ``python -m skillctl``); else ``python -m skillctl``."""
    if os.path.basename(argv0).lower() in ("skillctl", "skillctl.exe") and os.path.isfile(argv0):
        return (os.path.abspath(argv0),)
    executable = os.path.abspath(executable)
    for candidate in ("skillctl", "skillctl.exe"):
        path = os.path.join(os.path.dirname(executable), candidate)
        if os.path.isfile(path):
            return (path,)
    return (executable, "-m", "skillctl")


# -- checks ----------------------------------------------------------------------------------


def check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise HostConfigError(f"--name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                              "digit (hosts use it as a key and in tool names)")
    return name


def check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        raise HostConfigError(f"--url {url!r}: give the http(s):// URL `skillctl mcp serve --transport http` printed, "
                              "e.g. http://127.0.0.1:8766/mcp")
    if parts.username or parts.password:
        raise HostConfigError("--url: a key in the URL would be written into the host's file; "
                              "drop it and pass --key-env NAME instead")
    return url


def check_key_env(name: str) -> str:
    if not _ENV_RE.match(name):
        raise HostConfigError(f"--key-env {name!r}: an environment variable name (letters, digits, '_'; "
                              "not starting with a digit), e.g. SKILLCTL_MCP_KEY")
    return name


# -- the hosts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    format: str
    file: Callable[[Place], str]
    stdio: Callable[[str, Stdio], dict[str, Any]]
    remote: Callable[[str, Remote], dict[str, Any]] | None
    merge: str  # how to merge the block into an existing file, after "<file>: "
    no_remote: str = ""  # why --url cannot be written for this host, and what to do instead


def _auth(r: Remote, value: str) -> dict[str, Any]:
    """The headers entry sending the key named by ``r.key_env``, in the host's own syntax."""
    return {"headers": {"Authorization": value}} if r.key_env else {}


def _claude_desktop_file(p: Place) -> str:
    if p.system == "Darwin":
        return p.user_path("Library", "Application Support", "Claude", "claude_desktop_config.json")
    if p.system == "Windows":
        return p.appdata_path("Claude", "claude_desktop_config.json")
    # Claude Desktop ships for macOS and Windows; Linux builds (unofficial) read this one.
    return p.user_path(".config", "Claude", "claude_desktop_config.json")


def _goose_file(p: Place) -> str:
    if p.system == "Windows":
        return p.appdata_path("Block", "goose", "config", "config.yaml")
    return p.user_path(".config", "goose", "config.yaml")


def _mcp_servers(name: str, server: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": {name: server}}


def _claude_code_remote(name: str, r: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"type": "http", "url": r.url, **_auth(r, f"Bearer ${{{r.key_env}}}")})


def _cursor_remote(name: str, r: Remote) -> dict[str, Any]:
    return _mcp_servers(name, {"url": r.url, **_auth(r, f"Bearer ${{env:{r.key_env}}}")})


def _vscode_remote(name: str, r: Remote) -> dict[str, Any]:
    if r.key_env is None:
        return {"servers": {name: {"type": "http", "url": r.url}}}
    # VS Code keeps what it prompts for (an input) in its secret storage; an environment
    # variable would have to be set where VS Code starts, which a shell profile is not.
    key_id = f"{name}-key"
    return {
        "inputs": [{"type": "promptString", "id": key_id, "password": True,
                    "description": f"Key for {r.url} (skillctl serve key add NAME --scopes read)"}],
        "servers": {name: {"type": "http", "url": r.url, **_auth(r, f"Bearer ${{input:{key_id}}}")}},
    }


def _goose_stdio(name: str, s: Stdio) -> dict[str, Any]:
    return {"extensions": {name: {
        "type": "stdio", "name": name, "description": DESCRIPTION, "enabled": True,
        "cmd": s.command, "args": list(s.args), "envs": {}, "env_keys": [], "timeout": GOOSE_TIMEOUT_S,
    }}}


def _goose_remote(name: str, r: Remote) -> dict[str, Any]:
    if r.key_env is not None:
        raise HostConfigError("Goose cannot be given --key-env: its config.yaml takes header values as written, so the "
                              "key would sit in the file in clear; add headers: {Authorization: Bearer <key>} to the "
                              "entry yourself, or use the stdio block (no key needed)")
    return {"extensions": {name: {
        "type": "streamable_http", "name": name, "description": DESCRIPTION, "enabled": True,
        "uri": r.url, "headers": {}, "envs": {}, "env_keys": [], "timeout": GOOSE_TIMEOUT_S,
    }}}


HOSTS: dict[str, Host] = {h.name: h for h in (
    Host(
        "claude-desktop", "Claude Desktop", "json", _claude_desktop_file,
        stdio=lambda name, s: _mcp_servers(name, {"command": s.command, "args": list(s.args)}),
        remote=None,
        merge='add the entry under "mcpServers" (keep the servers already there), then quit and reopen Claude Desktop',
        no_remote="it does not connect to remote servers written in claude_desktop_config.json; add the URL under "
                  "Settings > Connectors (a custom connector), or drop --url to have it launch skillctl over stdio",
    ),
    Host(
        "claude-code", "Claude Code", "json", lambda p: ".mcp.json",
        stdio=lambda name, s: _mcp_servers(name, {"type": "stdio", "command": s.command, "args": list(s.args)}),
        remote=_claude_code_remote,
        merge='in the project\'s root folder; if it exists, add the entry under "mcpServers"',
    ),
    Host(
        "vscode", "VS Code", "json", lambda p: str(PurePosixPath(".vscode", "mcp.json")),
        stdio=lambda name, s: {"servers": {name: {"type": "stdio", "command": s.command, "args": list(s.args)}}},
        remote=_vscode_remote,
        merge='in the workspace folder; if it exists, add the entry under "servers" (and "inputs"); '
              "for every workspace: MCP: Open User Configuration",
    ),
    Host(
        "cursor", "Cursor", "json", lambda p: str(PurePosixPath(".cursor", "mcp.json")),
        stdio=lambda name, s: _mcp_servers(name, {"command": s.command, "args": list(s.args)}),
        remote=_cursor_remote,
        merge='in the project folder (~/.cursor/mcp.json: every project); if it exists, add the entry under "mcpServers"',
    ),
    Host(
        "goose", "Goose", "yaml", _goose_file,
        stdio=_goose_stdio,
        remote=_goose_remote,
        merge="add the entry under the existing top-level extensions: key (a second extensions: key is not valid YAML "
              "for goose), then restart goose",
    ),
)}

HOST_NAMES = tuple(HOSTS)


def _dump(fmt: str, data: Mapping[str, Any]) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    import yaml

    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16)


def claude_add_command(name: str, launch: Launch) -> list[str]:
    """``claude mcp add`` for the same server (project scope), as an argument list."""
    if isinstance(launch, Stdio):
        return ["claude", "mcp", "add", "--transport", "stdio", "--scope", "project", name, "--", launch.command, *launch.args]
    cmd = ["claude", "mcp", "add", "--transport", "http", "--scope", "project", name, launch.url]
    if launch.key_env:
        cmd += ["--header", f"Authorization: Bearer ${{{launch.key_env}}}"]
    return cmd


def render(host_name: str, name: str, launch: Launch, place: Place | None = None) -> Snippet:
    """The block ``host_name`` expects for server ``name``; ``HostConfigError`` when that host
    cannot be told this (a URL for Claude Desktop, a key for goose) or a value is malformed."""
    host = HOSTS[host_name]
    check_name(name)
    if isinstance(launch, Remote):
        check_url(launch.url)
        if launch.key_env is not None:
            check_key_env(launch.key_env)
        if host.remote is None:
            raise HostConfigError(f"{host.title} cannot be given --url: {host.no_remote}")
        data = host.remote(name, launch)
    else:
        data = host.stdio(name, launch)
    file = host.file(place or here())
    note = f"{host.title}: {file} — {host.merge}."
    if host_name == "claude-code":
        note += f" Or run: {shlex.join(claude_add_command(name, launch))}"
    if isinstance(launch, Remote) and launch.key_env and host_name in ("claude-code", "cursor"):
        note += f" Set {launch.key_env} to a read key where {host.title} starts."
    return Snippet(host=host_name, file=file, format=host.format, block=_dump(host.format, data), note=note)
