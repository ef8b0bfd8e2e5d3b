"""The MCP server of ``skillctl mcp serve``: the SDK's low-level ``Server`` with the skills
extension's methods added on top.

The SDK owns the protocol: both eras (the ``initialize`` handshake and the 2026-07-28
per-request envelope, ``server/discover``), framing, the stdio and streamable-HTTP transports,
``resultType`` and the ``serverInfo`` stamp. This module adds what the extension defines:

- ``capabilities.extensions["io.modelcontextprotocol/skills"] = {"directoryRead": true}``,
  beside the ``resources`` capability the extension requires;
- ``skills/list`` (paginated, ``SKILLS_PAGE`` entries a page, an entry never split) and
  ``skills/get`` (``-32602`` for a URI that names no skill served), both with ``ttlMs`` and
  ``cacheScope``;
- ``resources/read`` of every file of every skill, the bytes the entry's digests cover (UTF-8
  text as ``text``, anything else as base64 ``blob``); ``resources/list`` lists the listed
  skills' ``SKILL.md`` for hosts without the extension;
- ``resources/directory/read``: the direct children of a skill's folder or of a folder above
  skills (``skill://_versions``, ``skill://acme``), paginated.

``cacheScope`` is ``private`` when requests need a key (what one key may read another may not),
``public`` otherwise. Cursors are opaque to clients: an offset, base64url-encoded.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from typing import Any

from skillctl import __version__
from skillctl.mcp import EXTENSION_ID, uris
from skillctl.mcp.catalog import Catalog, Served

SKILLS_PAGE = 100
RESOURCES_PAGE = 500
TTL_MS = 60_000
SETTINGS = {"directoryRead": True}
_TEXT_TYPES = {"application/json", "application/x-sh", "application/x-yaml", "application/xml", "application/toml",
               "application/javascript", "application/x-python"}


def _mime(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def _as_text(data: bytes, mime: str) -> str | None:
    """``data`` as text when it is text (a text type, UTF-8, no NUL); None: send it as a blob.
    Either way the bytes a client gets back are ``data`` exactly (UTF-8 round-trips)."""
    if not (mime.startswith("text/") or mime in _TEXT_TYPES) or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _offset(cursor: str | None, total: int) -> int:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        offset = int(text[2:]) if text.startswith("o:") and text[2:].isdigit() else -1
    except (binascii.Error, UnicodeDecodeError, ValueError):
        offset = -1
    if not 0 <= offset <= total:
        raise MCPError(INVALID_PARAMS, "invalid cursor: pass back a nextCursor this server returned")
    return offset


def build_server(catalog: Catalog, *, private: bool = False) -> Any:
    """The low-level ``mcp.server.lowlevel.Server`` serving ``catalog``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    scope = "private" if private else "public"

    class GetSkillParams(types.RequestParams):
        uri: str

    class DirectoryParams(types.PaginatedRequestParams):
        uri: str

    def invalid(message: str) -> MCPError:
        return MCPError(INVALID_PARAMS, message)

    def split(uri: str, what: str) -> str:
        """The path a ``skill://`` URI names, percent-escapes decoded; -32602 for another scheme
        or a path no file or folder can have (``..``, empty segments)."""
        prefix = f"{uris.SCHEME}://"
        if not isinstance(uri, str) or not uri.startswith(prefix) or len(uri) > 4096:
            raise invalid(f"{uris.shown(uri)}: this server serves skill:// resources only")
        if "?" in uri or "#" in uri:
            raise invalid(f"No {what} is served at {uris.shown(uri)}")
        try:
            return uris.decode_path(uri[len(prefix):], uri)
        except uris.UriError:
            raise invalid(f"No {what} is served at {uris.shown(uri)}") from None

    def served_by_skill_uri(uri: str) -> Served:
        try:
            scheme, path = uris.split_skill_uri(uri)
        except uris.UriError:
            raise invalid(f"No skill is served at {uris.shown(uri)}") from None
        served = catalog.find(path) if scheme == uris.SCHEME else None
        if served is None:
            raise invalid(f"No skill is served at {uris.shown(uri)}")
        return served

    async def list_skills(ctx: Any, params: types.PaginatedRequestParams) -> dict[str, Any]:
        listed = catalog.listed
        start = _offset(params.cursor, len(listed))
        page = listed[start:start + SKILLS_PAGE]
        entries = await catalog.run(lambda: [catalog.entry(s).to_wire() for s in page])
        result: dict[str, Any] = {"resultType": "complete", "skills": entries, "ttlMs": TTL_MS, "cacheScope": scope}
        if start + SKILLS_PAGE < len(listed):
            result["nextCursor"] = _cursor(start + SKILLS_PAGE)
        return result

    async def get_skill(ctx: Any, params: GetSkillParams) -> dict[str, Any]:
        served = served_by_skill_uri(params.uri)
        entry = await catalog.run(lambda: catalog.entry(served))
        return {"resultType": "complete", "skill": entry.to_wire(), "ttlMs": TTL_MS, "cacheScope": scope}

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        rest = split(params.uri, "resource")
        found = catalog.skill_of(rest)
        if found is None:
            raise invalid(f"No resource is served at {uris.shown(params.uri)}")
        served, rel = found
        files = await catalog.run(lambda: catalog.files(served))
        data = files.get(rel)
        if data is None:
            raise invalid(f"No resource is served at {uris.shown(params.uri)}")
        mime = _mime(rel)
        text = _as_text(data, mime)
        if text is not None:
            contents: Any = types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)
        else:
            contents = types.BlobResourceContents(uri=params.uri, mime_type=mime, blob=base64.b64encode(data).decode("ascii"))
        return types.ReadResourceResult(contents=[contents], ttl_ms=TTL_MS, cache_scope=scope)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams) -> types.ListResourcesResult:
        listed = catalog.listed
        start = _offset(params.cursor, len(listed))
        page = listed[start:start + RESOURCES_PAGE]
        entries = await catalog.run(lambda: [catalog.entry(s) for s in page])
        resources = [types.Resource(uri=e.uri, name=e.name, description=e.description or None, mime_type="text/markdown")
                     for e in entries]
        more = start + RESOURCES_PAGE < len(listed)
        return types.ListResourcesResult(resources=resources, next_cursor=_cursor(start + RESOURCES_PAGE) if more else None,
                                         ttl_ms=TTL_MS, cache_scope=scope)

    async def read_directory(ctx: Any, params: DirectoryParams) -> dict[str, Any]:
        if params.uri.endswith("/"):
            raise invalid(f"{uris.shown(params.uri)}: directory URIs are written without a trailing slash")
        rest = split(params.uri, "directory")
        children = await catalog.run(lambda: _children(catalog, rest))
        if children is None:
            raise invalid(f"{uris.shown(params.uri)} is not a directory resource")
        start = _offset(params.cursor, len(children))
        page = children[start:start + RESOURCES_PAGE]
        resources = [{"uri": uris.directory_uri(f"{rest}/{name}"), "name": name, "mimeType": mime} for name, mime in page]
        result: dict[str, Any] = {"resultType": "complete", "resources": resources}
        if start + RESOURCES_PAGE < len(children):
            result["nextCursor"] = _cursor(start + RESOURCES_PAGE)
        return result

    class SkillsServer(Server):  # type: ignore[misc]
        def create_initialization_options(self, notification_options: Any = None, experimental_capabilities: Any = None,
                                          extensions: Any = None) -> Any:
            # The handshake-era schema (2025-11-25) has no capabilities.extensions: the SDK drops it
            # there, so hosts still on that revision are told under ``experimental`` instead.
            experimental = {EXTENSION_ID: dict(SETTINGS), **(experimental_capabilities or {})}
            return super().create_initialization_options(notification_options, experimental, extensions)

    server = SkillsServer("skillctl", version=__version__, title="skillctl skills",
                    instructions=f"Agent skills from {catalog.label}. List them with skills/list (extension {EXTENSION_ID}); "
                                 "each skill's files are resources under skill://<skill-path>/.",
                    on_list_resources=list_resources, on_read_resource=read_resource)
    server.add_request_handler("skills/list", types.PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)
    server.add_request_handler("resources/directory/read", DirectoryParams, read_directory)
    server.extensions[EXTENSION_ID] = dict(SETTINGS)
    return server


def _children(catalog: Catalog, rest: str) -> list[tuple[str, str]] | None:
    """The direct children (name, mime type) of the directory ``rest`` (a path after
    ``skill://``), sorted; None when it is no directory this server serves. Inside a skill the
    skill's files answer (the deepest skill whose folder holds ``rest``); above skills, the
    catalog's paths do."""
    try:
        segments = rest.split("/")
        if any(s in ("", ".", "..") for s in segments):
            return None
    except AttributeError:
        return None
    for i in range(len(segments), 0, -1):
        served = catalog.find("/".join(segments[:i]))
        if served is None:
            continue
        inner = "/".join(segments[i:])
        files = catalog.files(served)
        prefix = inner + "/" if inner else ""
        found: dict[str, str] = {}
        for rel in files:
            if not rel.startswith(prefix):
                continue
            head, sep, _tail = rel[len(prefix):].partition("/")
            found[head] = uris.DIRECTORY_MIME if sep else _mime(rel)
        if not found and inner:
            return None  # a path in the skill that is neither a folder nor served
        return sorted(found.items())
    above = catalog.prefix_children(rest)
    if above is None:
        return None
    return sorted((name, uris.DIRECTORY_MIME) for name, _kind in above)


# ---------------------------------------------------------------------------- transports


def serve_stdio(catalog: Catalog) -> None:
    """Serve ``catalog`` on this process's stdin and stdout until the host closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(catalog)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
