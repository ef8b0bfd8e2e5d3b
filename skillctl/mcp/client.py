"""Reading an MCP server's skills with the official SDK's ``mcp.Client``.

    parse_server(text)     ``mcp+stdio:COMMAND ARGS`` or ``mcp+https://HOST[:PORT]/PATH`` → ``ServerSpec``
    McpClient(spec)        a sync context manager holding ONE SDK session open across calls:
                           ``list_entries``, ``get_entry``, ``read_file``, ``read_skill``, ``read_directory``

Everything a server sends is hostile until checked (the extension's Integrity and Verification):

- the server must declare ``io.modelcontextprotocol/skills`` and ``resources``;
  ``resources/directory/read`` is called only when it declares ``directoryRead: true``;
- ``skills/list`` is paged through ``nextCursor`` within ``MAX_ENTRIES`` and ``MAX_PAGES``, a
  repeated cursor is an error; every entry goes through ``entry.parse_entry`` and an invalid
  one is skipped with a warning naming it;
- a file read must come back under exactly the URI asked for; its size is checked first,
  then its digest, and ``read_skill`` returns nothing before every file of the skill passed,
  the limits were checked from the entry alone and ``SKILL.md``'s front matter equals the
  entry's, field by field. A ``"dynamic"`` skill is refused: it cannot be pinned or verified.

Every connect and every request has a deadline (``SKILLCTL_MCP_TIMEOUT``, default 60 s). A stdio
server's stderr goes to a temporary file, not the user's terminal; its last lines are quoted
in error messages. The key for an HTTP server (``SKILLCTL_MCP_TOKEN``) is sent as a Bearer header
to that server's origin only, and never shown.
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import math
import os
import re
import shlex
import tempfile
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable
from urllib.parse import urlsplit

from skillctl.errors import IntegrityError, NotFoundError, SourceError
from skillctl.mcp import EXTENSION_ID, uris
from skillctl.mcp.entry import EntryError, FileEntry, SkillEntry, check_limits, frontmatter_json, mcp_limits, parse_entry

if TYPE_CHECKING:
    from skillctl.bundle import BundleContents

PREFIX = "mcp+"
ENV_TOKEN = "SKILLCTL_MCP_TOKEN"
ENV_TIMEOUT = "SKILLCTL_MCP_TIMEOUT"
ENV_INSECURE = "SKILLCTL_INSECURE"
DEFAULT_TIMEOUT_S = 60.0
MAX_ENTRIES = 10_000  # a listing may be arbitrarily large; what one command reads of it is not
MAX_PAGES = 1_000
INVALID_PARAMS = -32602
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# What a stdio server inherits besides the SDK's safe defaults (PATH, HOME, …): where Python finds
# its packages and skillctl's own settings, never a key (the MCP token is for HTTP servers only).
_PASSED_ENV = ("PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL", "TMPDIR", "XDG_DATA_HOME", "XDG_CACHE_HOME")
_SECRET_RE = re.compile(r"TOKEN|KEY|PASSWORD|SECRET", re.IGNORECASE)


@dataclass(frozen=True)
class ServerSpec:
    """A server as the user named it. ``url`` (``mcp+stdio:…`` / ``mcp+https://…``) is its
    identity: a skill is the pair (``url``, SKILL.md URI)."""

    url: str
    command: tuple[str, ...] = ()  # stdio
    http_url: str = ""  # streamable HTTP, without the mcp+ prefix

    @property
    def origin(self) -> str:
        parts = urlsplit(self.http_url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    def __str__(self) -> str:
        return self.url


def is_mcp_url(text: str) -> bool:
    return text.startswith(PREFIX)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_server(text: str, *, insecure: bool = False) -> ServerSpec:
    """The server ``text`` names; ``SourceError`` (one line) for anything else. ``mcp+http://``
    is for a loopback host only, unless ``insecure`` (or ``SKILLCTL_INSECURE=1``)."""
    if not isinstance(text, str) or not text.startswith(PREFIX):
        raise SourceError(f"{text!r} is not an MCP server; write mcp+stdio:'COMMAND ARGS' or mcp+https://HOST/PATH")
    rest = text[len(PREFIX):]
    if rest.startswith("stdio:"):
        try:
            argv = tuple(shlex.split(rest[len("stdio:"):]))
        except ValueError as exc:
            raise SourceError(f"{text}: the command does not split into words ({exc}); quote it as a shell would") from None
        if not argv:
            raise SourceError("mcp+stdio: names no command; write mcp+stdio:'COMMAND ARGS'")
        return ServerSpec(text, command=argv)
    if not rest.startswith(("https://", "http://")):
        raise SourceError(f"{text}: unknown MCP transport; write mcp+stdio:'COMMAND ARGS' or mcp+https://HOST[:PORT]/PATH")
    try:
        parts = urlsplit(rest)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise SourceError(f"{text}: not a URL; write mcp+https://HOST[:PORT]/PATH") from None
    if "@" in parts.netloc:
        # Not echoed: the part before "@" may be a password.
        raise SourceError(f"an MCP server URL holds credentials (user@ or user:password@); give the key in {ENV_TOKEN} instead")
    if not parts.hostname:
        raise SourceError(f"{text}: names no host; write mcp+https://HOST[:PORT]/PATH")
    if parts.fragment:
        raise SourceError(f"{text}: an MCP server URL has no fragment")
    if parts.scheme == "http" and not (insecure or _env_flag(ENV_INSECURE) or _loopback(parts.hostname)):
        raise SourceError(f"{text}: plain http is only for a loopback host; use mcp+https:// (or --insecure / "
                          f"{ENV_INSECURE}=1 on a network you trust)")
    return ServerSpec(text, http_url=rest)


def timeout_from_env() -> float:
    raw = os.environ.get(ENV_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):
        raise SourceError(f"{ENV_TIMEOUT}={raw!r} is not a number of seconds above 0")
    return value


def token_from_env() -> str | None:
    token = os.environ.get(ENV_TOKEN, "").strip() or None
    if token is not None and not _TOKEN_RE.fullmatch(token):
        raise SourceError(f"{ENV_TOKEN} is not a key: a key is one word of visible ASCII characters; check what was given")
    return token


def _printable(text: str, limit: int = 200) -> str:
    text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _reason(exc: BaseException) -> str:
    leaf = next((e for e in _leaves(exc) if str(e)), exc)
    return _printable(f"{type(leaf).__name__}: {leaf}" if not str(leaf) else str(leaf))


class _Timeout(Exception):
    pass


@functools.cache
def _raw_types() -> tuple[Any, Any]:
    """A request of any method with plain params, and a result read as a plain dict: the
    extension's methods are not in the SDK's types, and every result is checked here instead."""
    import mcp_types as types
    from pydantic import TypeAdapter

    class RawRequest(types.Request[dict[str, Any], str]):
        method: str
        params: dict[str, Any]

    return RawRequest, TypeAdapter(dict[str, Any])


class McpClient:
    """One session with one server, for as many calls as a command makes (see the module
    docstring). Use as ``with McpClient(spec) as c:``; each method is synchronous."""

    def __init__(self, server: ServerSpec, *, timeout_s: float | None = None, connect_timeout_s: float | None = None,
                 token: str | None = None, warn: Callable[[str], None] | None = None) -> None:
        """``timeout_s``: each request's deadline (None: ``SKILLCTL_MCP_TIMEOUT``, else 60 s);
        ``connect_timeout_s``: spawning or reaching the server and the handshake (None: the same)."""
        self.server = server
        self.timeout_s = timeout_from_env() if timeout_s is None else timeout_s
        self.connect_timeout_s = self.timeout_s if connect_timeout_s is None else connect_timeout_s
        self._token = token if token is not None else (token_from_env() if server.http_url else None)
        self._warn = warn
        self._stack: ExitStack | None = None
        self._portal: Any = None
        self._client: Any = None
        self._stderr: Any = None
        self.directory_read = False

    # ------------------------------------------------------------------ session

    def __enter__(self) -> "McpClient":
        from anyio.from_thread import start_blocking_portal

        stack = ExitStack()
        try:
            self._portal = stack.enter_context(start_blocking_portal())
            if self.server.command:
                self._stderr = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
            self._client = stack.enter_context(self._portal.wrap_async_context_manager(self._session()))
            self._check_capabilities()
        except BaseException:
            self._close(stack)
            raise
        self._stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._close(self._stack)
            self._stack = None

    def _close(self, stack: ExitStack) -> None:
        try:
            stack.close()
        except Exception:  # noqa: BLE001 - closing a broken session must not hide why it broke
            pass

    def _transport(self) -> Any:
        if self.server.command:
            from mcp import StdioServerParameters
            from mcp.client.stdio import get_default_environment, stdio_client

            env = get_default_environment()
            env.update({k: v for k, v in os.environ.items()
                        if (k in _PASSED_ENV or k.startswith("SKILLCTL_")) and not _SECRET_RE.search(k)})
            command, *args = self.server.command
            return stdio_client(StdioServerParameters(command=command, args=args, env=env), errlog=self._stderr)
        return None

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Any]:
        import anyio
        from mcp import Client

        yielded = False
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + self.connect_timeout_s
            try:
                async with AsyncExitStack() as stack:
                    transport = self._transport()
                    if transport is None:
                        from mcp.client.streamable_http import streamable_http_client
                        from mcp.shared._httpx_utils import create_mcp_http_client

                        http = await stack.enter_async_context(create_mcp_http_client(auth=_origin_key(self.server.origin, self._token)))
                        transport = streamable_http_client(self.server.http_url, http_client=http)
                    client = await stack.enter_async_context(Client(transport, cache=None))
                    scope.deadline = math.inf
                    yielded = True
                    yield client
            except Exception as exc:
                if yielded:
                    raise
                raise SourceError(f"{self.server}: cannot connect to the MCP server: {_reason(exc)}{self._said()}") from None
        if not yielded:
            raise SourceError(f"{self.server}: the MCP server did not answer the handshake within {self.connect_timeout_s:g} s{self._said()}")

    def _said(self) -> str:
        """The stdio server's last stderr lines, for an error message (one line)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            lines = [ln.strip() for ln in self._stderr.read()[-4000:].splitlines() if ln.strip()][-3:]
            self._stderr.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        return f" (the server's stderr ends: {_printable(' | '.join(lines), 400)})" if lines else ""

    def _check_capabilities(self) -> None:
        caps = self._client.server_capabilities
        ext = (caps.extensions or {}).get(EXTENSION_ID)
        if ext is None:
            raise SourceError(f"{self.server}: the server does not declare the {EXTENSION_ID} extension, so it serves no "
                              "skills skillctl can read")
        if caps.resources is None:
            raise SourceError(f"{self.server}: the server declares {EXTENSION_ID} but not the resources capability the "
                              "extension requires; its skill files cannot be read")
        self.directory_read = isinstance(ext, dict) and ext.get("directoryRead") is True

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC request under the deadline; its result as a dict. ``MCPError`` passes
        through (callers map its code); everything else is one ``SourceError`` line."""
        from mcp.shared.exceptions import MCPError

        if self._client is None:
            raise RuntimeError("McpClient used outside its with block")
        try:
            return self._portal.call(self._request, method, params)
        except _Timeout:
            raise SourceError(f"{self.server} did not answer {method} within {self.timeout_s:g} s; is it the right "
                              f"command or URL? ({ENV_TIMEOUT} sets the deadline){self._said()}") from None
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken transport or a result no schema accepts
            raise SourceError(f"{self.server}: {method} failed: {_reason(exc)}{self._said()}") from None

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        import anyio

        raw, result_type = _raw_types()
        try:
            with anyio.fail_after(self.timeout_s):
                return await self._client.session.send_request(raw(method=method, params=params), result_type)
        except TimeoutError:
            raise _Timeout() from None

    # ------------------------------------------------------------------ the extension

    def warn(self, message: str) -> None:
        if self._warn is not None:
            self._warn(message)
        else:
            import sys

            print(f"warning: {message}", file=sys.stderr)

    def list_entries(self) -> list[SkillEntry]:
        """Every valid entry of ``skills/list``, all pages; invalid ones are warned about and skipped."""
        out: list[SkillEntry] = []
        seen: set[str] = set()
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            result = self.request("skills/list", {"cursor": cursor} if cursor is not None else {})
            skills = result.get("skills")
            if not isinstance(skills, list):
                raise SourceError(f"{self.server}: skills/list answered without a skills list")
            if len(out) + len(skills) > MAX_ENTRIES:
                raise SourceError(f"{self.server}: skills/list lists more than {MAX_ENTRIES} skills; ask for one by URI "
                                  "(skill://…/SKILL.md) instead")
            for raw in skills:
                try:
                    out.append(parse_entry(raw, str(self.server)))
                except EntryError as exc:
                    self.warn(f"skipped an invalid skill entry: {exc}")
            nxt = result.get("nextCursor")
            if nxt is None:
                return out
            if not isinstance(nxt, str) or nxt in seen:
                raise SourceError(f"{self.server}: skills/list gave a repeated or malformed cursor; the listing would "
                                  "never end")
            seen.add(nxt)
            cursor = nxt
        raise SourceError(f"{self.server}: skills/list has more than {MAX_PAGES} pages; ask for one skill by URI instead")

    def get_entry(self, uri: str) -> SkillEntry:
        """The entry ``skills/get`` returns for the skill whose SKILL.md is ``uri``."""
        from mcp.shared.exceptions import MCPError

        uris.split_skill_uri(uri)  # a malformed URI is the user's mistake, named before asking
        try:
            result = self.request("skills/get", {"uri": uri})
        except MCPError as exc:
            if exc.error.code == INVALID_PARAMS:
                raise NotFoundError(f"{self.server} serves no skill at {uris.shown(uri)}; see: skillctl list --registry "
                                    f"{shlex.quote(str(self.server))}") from None
            raise SourceError(f"{self.server}: skills/get {uris.shown(uri)} failed: {_printable(exc.error.message)}") from None
        entry = parse_entry(result.get("skill"), str(self.server))
        if entry.uri != uri:
            raise SourceError(f"{self.server}: skills/get {uris.shown(uri)} answered with the entry of {uris.shown(entry.uri)}")
        return entry

    def read_file(self, f: FileEntry) -> bytes:
        """The bytes of ``f``, checked against its size, then its digest (``IntegrityError``)."""
        from mcp.shared.exceptions import MCPError

        try:
            result = self.request("resources/read", {"uri": f.uri})
        except MCPError as exc:
            raise SourceError(f"{self.server}: cannot read {uris.shown(f.uri)}: {_printable(exc.error.message)}") from None
        contents = result.get("contents")
        items = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
        if len(items) != 1 or items[0].get("uri") != f.uri:
            raise IntegrityError(f"{self.server}: resources/read {uris.shown(f.uri)} did not answer with exactly that "
                                 "resource; refusing the skill")
        item = items[0]
        if isinstance(item.get("text"), str):
            data = item["text"].encode("utf-8")
        elif isinstance(item.get("blob"), str):
            try:
                data = base64.b64decode(item["blob"], validate=True)
            except (binascii.Error, ValueError):
                raise IntegrityError(f"{self.server}: {uris.shown(f.uri)}: the blob is not valid base64; refusing the skill") from None
        else:
            raise IntegrityError(f"{self.server}: {uris.shown(f.uri)}: the answer has neither text nor blob")
        if len(data) != f.size:
            raise IntegrityError(f"{self.server}: {uris.shown(f.uri)}: the entry declares {f.size} bytes but the server "
                                 f"sent {len(data)}; refusing the skill (nothing was written)")
        from skillctl.mcp.entry import digest_of

        got = digest_of(data)
        if got != f.digest:
            raise IntegrityError(f"{self.server}: {uris.shown(f.uri)}: expected {f.digest}, got {got}; refusing the skill "
                                 "(nothing was written)")
        return data

    def read_skill(self, entry: SkillEntry) -> "BundleContents":
        """Every file of ``entry`` read and verified, as a bundle's contents with the digests of
        the canonical bundle (see the module docstring for the checks, all done first)."""
        from skillctl.bundle import DEFAULT_MTIME, BundleContents, read_file_parts, repack

        where = f"{self.server}: {uris.shown(entry.uri)}"
        if entry.resources is None:
            raise SourceError(f"{where}: its resources are \"dynamic\", so its files cannot be pinned or verified; "
                              "skillctl installs only skills whose entry lists every file with a digest")
        check_limits(entry, mcp_limits(), str(self.server))
        files = {f.path: self.read_file(f) for f in entry.resources}
        fm = frontmatter_json(files[uris.SKILL_FILE], entry.uri)
        differing = sorted(k for k in set(fm) | set(entry.frontmatter) if fm.get(k, ...) != entry.frontmatter.get(k, ...))
        if differing:
            raise IntegrityError(f"{where}: the entry's frontmatter differs from the SKILL.md it describes in "
                                 f"{', '.join(_printable(k, 60) for k in differing[:8])}; refusing the skill (nothing was written)")
        contents = read_file_parts(
            ((f"{entry.name}/{path}", data) for path, data in sorted(files.items())),
            lambda _rel, data: data.startswith(b"#!"),
            limits=mcp_limits(),
            source=where,
        )
        packed = repack(contents, mtime=DEFAULT_MTIME)
        return BundleContents(contents.name, contents.files, contents.executables, contents.dirs, packed.digest,
                              packed.tar_digest, packed.size)

    def read_directory(self, uri: str) -> list[dict[str, Any]]:
        """The direct children of the directory resource ``uri`` (all pages); refused unless the
        server declared ``directoryRead: true``, as the extension requires."""
        if not self.directory_read:
            raise SourceError(f"{self.server} does not declare directoryRead; its directories cannot be listed")
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        params: dict[str, Any] = {"uri": uri}
        for _page in range(MAX_PAGES):
            result = self.request("resources/directory/read", params)
            resources = result.get("resources")
            if not isinstance(resources, list):
                raise SourceError(f"{self.server}: resources/directory/read answered without a resources list")
            out += [r for r in resources if isinstance(r, dict)][: MAX_ENTRIES - len(out)]
            nxt = result.get("nextCursor")
            if nxt is None or len(out) >= MAX_ENTRIES:
                return out
            if not isinstance(nxt, str) or nxt in seen:
                raise SourceError(f"{self.server}: resources/directory/read gave a repeated or malformed cursor")
            seen.add(nxt)
            params = {"uri": uri, "cursor": nxt}
        return out


def _origin_key(origin: str, token: str | None) -> Any:
    """httpx2 auth: the Bearer key on requests to the server's own origin only (a redirect
    elsewhere goes without it). httpx2 is the SDK's, imported only for HTTP servers."""
    import httpx2

    class OriginKey(httpx2.Auth):
        def auth_flow(self, request: Any) -> Any:
            here = f"{request.url.scheme}://{request.url.netloc.decode('ascii')}".lower()
            if token is not None and here == origin:
                request.headers["Authorization"] = f"Bearer {token}"
            yield request

    return OriginKey()
