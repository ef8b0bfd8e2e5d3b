"""Skills over the Model Context Protocol: the ``io.modelcontextprotocol/skills`` extension
(modelcontextprotocol/ext-skills, ``specification/stable/skills.mdx``, base revision 2026-07-28).

    uris     ``skill://<skill-path>/<file-path>``: building, parsing and checking resource URIs
    entry    the extension's ``Skill`` entry: built from a skill's files (server), parsed and
             checked as hostile input (client), its limits, its manifest digest, front matter as JSON
    catalog  what ``skillctl mcp serve`` serves: a registry's skills, a project's pins, a folder
    server   the MCP server (the official ``mcp`` SDK's low-level ``Server``) with the extension's
             methods on top, on stdio or streamable HTTP
    client   reading an MCP server's skills with the SDK's ``Client``: listing, entries, verified files
    hosts    the configuration block each MCP host expects to launch ``skillctl mcp serve``

The SDK is imported only by ``server`` and ``client`` (and only when used), so the package
manager does not pay for it; ``uris`` and ``entry`` are plain data.
"""

EXTENSION_ID = "io.modelcontextprotocol/skills"
