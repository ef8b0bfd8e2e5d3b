"""A minimal MCP server with the skills extension, written only with the SDK's low-level API and
no skillctl import, so the client is tested against someone else's reading of the spec, not its
own server. The scenario is chosen by argv:

    good                 three skills: pdf (with a script), pdf/forms nested in it, acme/billing/refunds
    many N [PAGE]        N skills served PAGE (default 7) per page, and one invalid entry among them
    loop                 skills/list whose nextCursor never changes
    hostile              one skill per attack (see HOSTILE), plus a top-level skill shadowed by a nested one
    hang                 answers the handshake, never answers skills/list
    mute                 never answers anything, not even the handshake
    noext                does not declare the extension
    noresources          declares the extension but not the resources capability
    folder DIR           the skills in DIR (one folder per skill), read from disk at each request
    --http PORTFILE      (after the scenario) streamable HTTP on 127.0.0.1, port 0; the port is written
                         to PORTFILE; when MCP_TEST_KEY is set, every request needs "Bearer <key>"

It also writes a line to stderr at start, which the client must not show on the user's terminal.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import PaginatedRequestParams, RequestParams

EXT = "io.modelcontextprotocol/skills"
INVALID_PARAMS = -32602


def skill_md(name: str, description: str, extra: str = "") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nUse it well.\n".encode()


def good_files() -> dict[str, dict[str, bytes]]:
    """skill path -> {file path: bytes}; the nested skill's files are the enclosing one's too."""
    forms = {"SKILL.md": skill_md("forms", "Fill PDF forms"), "FIELDS.md": b"# Fields\n"}
    pdf = {
        "SKILL.md": skill_md("pdf", "Work with PDF files", "metadata:\n  version: 1.2.0\n"),
        "scripts/extract.py": b"#!/usr/bin/env python3\nprint('text')\n",
        "references/FORMS.md": b"# Forms\n",
        **{f"forms/{k}": v for k, v in forms.items()},
    }
    refunds = {"SKILL.md": skill_md("refunds", "Process refunds", "license: Apache-2.0\n"), "examples/email.md": b"Dear\n"}
    return {"pdf": pdf, "pdf/forms": forms, "acme/billing/refunds": refunds}


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def frontmatter(name: str, description: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "description": description, **more}


class Catalog:
    """Entries and file contents; a scenario may break an entry after it is built."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}  # SKILL.md URI -> entry
        self.contents: dict[str, bytes] = {}  # file URI -> bytes served
        self.read_as: dict[str, dict[str, Any]] = {}  # file URI -> a content item served instead

    def add(self, path: str, files: dict[str, bytes], fm: dict[str, Any]) -> dict[str, Any]:
        resources = []
        for rel, data in sorted(files.items()):
            uri = f"skill://{path}/{rel}"
            self.contents[uri] = data
            resources.append({"uri": uri, "digest": digest(data), "size": len(data)})
        entry = {"uri": f"skill://{path}/SKILL.md", "frontmatter": fm, "resources": resources}
        self.entries[entry["uri"]] = entry
        return entry


def good() -> Catalog:
    cat = Catalog()
    fms = {
        "pdf": frontmatter("pdf", "Work with PDF files", metadata={"version": "1.2.0"}),
        "pdf/forms": frontmatter("forms", "Fill PDF forms"),
        "acme/billing/refunds": frontmatter("refunds", "Process refunds", license="Apache-2.0"),
    }
    for path, files in good_files().items():
        cat.add(path, files, fms[path])
    return cat


def many(n: int) -> Catalog:
    cat = Catalog()
    for i in range(n):
        name = f"skill-{i:04d}"
        cat.add(name, {"SKILL.md": skill_md(name, f"Skill number {i}")}, frontmatter(name, f"Skill number {i}"))
    bad = cat.add("broken", {"SKILL.md": skill_md("broken", "x")}, frontmatter("broken", "x"))
    bad["frontmatter"] = frontmatter("other-name", "x")  # the URI's last segment must be the name
    return cat


HOSTILE = ("bad-digest", "bad-size", "dotdot", "absolute", "other-file", "many-files", "huge", "dynamic",
           "fm-differs", "wrong-uri", "bad-base64")


def hostile() -> Catalog:
    cat = Catalog()

    def plain(name: str, **files: bytes) -> dict[str, Any]:
        return cat.add(name, {"SKILL.md": skill_md(name, f"The {name} attack"), **files}, frontmatter(name, f"The {name} attack"))

    plain("bad-digest", **{"data.txt": b"real"})["resources"][1]["digest"] = digest(b"other")
    plain("bad-size", **{"data.txt": b"real"})["resources"][1]["size"] = 3
    e = plain("dotdot")
    e["resources"].append({"uri": "skill://dotdot/../pdf/SKILL.md", "digest": digest(b""), "size": 0})
    e = plain("absolute")
    e["resources"].append({"uri": "file:///etc/passwd", "digest": digest(b""), "size": 0})
    e = plain("other-file")
    e["resources"].append({"uri": "skill://bad-digest/SKILL.md", "digest": digest(b""), "size": 0})
    e = plain("many-files")
    e["resources"] += [{"uri": f"skill://many-files/f{i}", "digest": digest(b""), "size": 0} for i in range(100_000)]
    e = plain("huge")
    e["resources"].append({"uri": "skill://huge/disk.img", "digest": digest(b""), "size": 10 * 1024**3})
    plain("dynamic")["resources"] = "dynamic"
    plain("fm-differs")["frontmatter"]["description"] = "Something the SKILL.md does not say"
    plain("wrong-uri", **{"data.txt": b"real"})
    cat.read_as["skill://wrong-uri/data.txt"] = {"uri": "skill://wrong-uri/other.txt", "text": "real"}
    plain("bad-base64", **{"data.bin": b"\x00\x01"})
    cat.read_as["skill://bad-base64/data.bin"] = {"uri": "skill://bad-base64/data.bin", "blob": "AAE=!!"}
    # A top-level skill and a nested one with the same name: never silently one.
    plain("tally")
    nested = {"SKILL.md": skill_md("tally", "The nested tally")}
    cat.add("tools", {"SKILL.md": skill_md("tools", "Tools"), **{f"tally/{k}": v for k, v in nested.items()}},
            frontmatter("tools", "Tools"))
    cat.add("tools/tally", nested, frontmatter("tally", "The nested tally"))
    return cat


def folder(root: Path) -> Catalog:
    import yaml

    cat = Catalog()
    for d in sorted(p for p in root.iterdir() if (p / "SKILL.md").is_file()):
        files = {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
        fm = yaml.safe_load(files["SKILL.md"].decode().split("---")[1])
        cat.add(d.name, files, fm)
    return cat


class GetSkillParams(RequestParams):
    uri: str


def build(argv: list[str]) -> tuple[Server[Any], bool]:
    scenario = argv[0]
    hang = scenario == "hang"
    make = {
        "good": good, "hang": good, "noext": good, "hostile": hostile, "loop": good, "noresources": good,
        "many": lambda: many(int(argv[1])), "folder": lambda: folder(Path(argv[1])),
    }[scenario]
    if scenario != "folder":  # only the folder scenario changes while it runs
        make = functools.cache(make)
    page_size = int(argv[2]) if scenario == "many" and len(argv) > 2 and argv[2].isdigit() else 7 if scenario == "many" else 100

    async def list_skills(ctx: Any, params: PaginatedRequestParams) -> dict[str, Any]:
        if hang:
            await anyio.sleep_forever()
        cat = make()
        entries = list(cat.entries.values())
        start = int(params.cursor or 0)
        page = entries[start:start + page_size]
        out: dict[str, Any] = {"resultType": "complete", "skills": page, "ttlMs": 0, "cacheScope": "private"}
        if start + page_size < len(entries):
            out["nextCursor"] = str(start + page_size)
        if scenario == "loop":
            out["nextCursor"] = "0"
        return out

    async def get_skill(ctx: Any, params: GetSkillParams) -> dict[str, Any]:
        uri = params.uri
        entry = make().entries.get(uri)
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"No skill is served at {uri}")
        return {"resultType": "complete", "skill": entry, "ttlMs": 0, "cacheScope": "private"}

    async def read_resource(ctx: Any, params: Any) -> dict[str, Any]:
        cat = make()
        uri = str(params.uri)
        if uri in cat.read_as:
            item = cat.read_as[uri]
        elif uri in cat.contents:
            data = cat.contents[uri]
            try:
                item = {"uri": uri, "mimeType": "text/markdown", "text": data.decode("utf-8")}
            except UnicodeDecodeError:
                item = {"uri": uri, "mimeType": "application/octet-stream", "blob": base64.b64encode(data).decode()}
        else:
            raise MCPError(INVALID_PARAMS, f"Resource not found: {uri}")
        return {"resultType": "complete", "contents": [item], "ttlMs": 0, "cacheScope": "private"}

    async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
        return {"resources": [], "ttlMs": 0, "cacheScope": "private"}  # the extension needs the capability only

    server: Server[Any] = Server("independent-skills", version="0.1", on_read_resource=read_resource,
                                 on_list_resources=None if scenario == "noresources" else list_resources)
    server.add_request_handler("skills/list", PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)
    if scenario != "noext":
        server.extensions[EXT] = {}
    return server, "--http" in argv


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: Server[Any], port_file: str) -> None:
    import socket

    import uvicorn

    app = server.streamable_http_app()
    key = os.environ.get("MCP_TEST_KEY")
    if key:
        inner = app

        async def app(scope: Any, receive: Any, send: Any) -> None:  # type: ignore[no-redef]
            if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {key}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"a key is needed"})
                return
            await inner(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before the port is told: a client connecting early waits instead of being refused
    Path(port_file + ".tmp").write_text(str(sock.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    print("independent server starting (this line is the server's stderr)", file=sys.stderr, flush=True)
    if sys.argv[1:2] == ["mute"]:
        import time

        time.sleep(3600)
    server, http = build(sys.argv[1:])
    if http:
        serve_http(server, sys.argv[sys.argv.index("--http") + 1])
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
