"""``skillctl mcp``: skills over the Model Context Protocol (the ``io.modelcontextprotocol/skills``
extension) — ``serve`` a registry, a project or a folder to MCP hosts, and ``config`` prints the
block each host needs to launch it."""

from __future__ import annotations

import click


@click.group("mcp")
def mcp_group() -> None:
    """Skills over MCP: serve them to MCP hosts (Claude, VS Code, Cursor, Goose…) with the skills
    extension (io.modelcontextprotocol/skills), and print each host's configuration block.

    Installing from an MCP server needs no command of its own: `skillctl add mcp+stdio:'COMMAND'`
    or `mcp+https://HOST/PATH`, and `--registry mcp+…` for pull, lock, install and run."""
