"""``skillctl mcp``: skills over the Model Context Protocol (the ``io.modelcontextprotocol/skills``
extension) — ``serve`` a registry, a project or a folder to MCP hosts, and ``config`` prints the
block each host needs to launch it."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import checked_registry_url, given_access, library_errors, progress, registry_access_options, registry_opener


@click.group("mcp")
def mcp_group() -> None:
    """Skills over MCP: serve a registry, project or folder to MCP hosts, and print their config blocks.

    Hosts (Claude, VS Code, Cursor, Goose…) read the skills with the MCP skills extension
    (io.modelcontextprotocol/skills).

    Installing from an MCP server needs no command of its own: `skillctl add mcp+stdio:'COMMAND'`
    or `mcp+https://HOST/PATH`, and `--registry mcp+…` for pull, lock, install and run."""


@mcp_group.command("serve", short_help="Serve a registry, a project or a folder of skills to MCP hosts.")
@click.option("--registry", "registry_url", envvar="SKILLCTL_REGISTRY", metavar="URL", callback=checked_registry_url,
              help="Serve this registry's skills (a folder, oci://…, https://… or mcp+…): each at "
                   "skill://NAME/SKILL.md as `latest` resolves it, every version at "
                   "skill://_versions/VERSION/NAME/SKILL.md. Env: SKILLCTL_REGISTRY.")
@click.option("--project", "project_dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Serve the skills DIR/skills.lock pins, each checked against the lock's digests.")
@click.option("--folder", "folder", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Serve the skill folders found in DIR (one skill, or a folder of them), as `pack` packs them.")
@click.option("--all-versions", is_flag=True, help="List every version of a registry's skills, not only the latest "
              "(pinned versions are served either way).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: what MCP hosts launch; http: streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http). Anything but "
              "loopback needs --keys.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (http; 0: any free port, the URL is printed).")
@click.option("--keys", "keys_file", type=click.Path(dir_okay=False, path_type=Path), envvar="SKILLCTL_MCP_KEYS",
              help="API keys file (http): every request needs Authorization: Bearer KEY of a key with the read scope "
                   "(make one with: skillctl serve key add NAME --scopes read --keys FILE). Env: SKILLCTL_MCP_KEYS.")
@registry_access_options
@library_errors
def serve_cmd(registry_url: str | None, project_dir: Path | None, folder: Path | None, all_versions: bool, transport: str,
              host: str, port: int, keys_file: Path | None) -> None:
    """Serve skills to MCP hosts with the skills extension (io.modelcontextprotocol/skills):
    skills/list, skills/get, resources/read of every file (with sha256 digests in each entry) and
    resources/directory/read.

    What is served: --registry URL, --project DIR (its lock's pins) or --folder DIR; with none of
    them, the project in this folder when it has a skills.lock, else the default registry.
    On stdio (the default) the protocol owns stdout and stdin; messages go to stderr."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = [o for o, v in (("--registry", registry_url), ("--project", project_dir), ("--folder", folder)) if v]
    if ctx.get_parameter_source("registry_url") is ParameterSource.ENVIRONMENT and len(given) > 1:
        given.remove("--registry")  # SKILLCTL_REGISTRY in the environment does not contradict --project/--folder
        registry_url = None
    if len(given) > 1:
        raise click.UsageError(f"serve one thing: {' and '.join(given)} were both given")
    access = given_access()
    if transport == "stdio" and (access.get("password") or access.get("token")):
        raise click.UsageError("--password-stdin/--token-stdin read standard input, which is the MCP connection on "
                               "--transport stdio; set SKILLCTL_REGISTRY_PASSWORD or SKILLCTL_SITE_TOKEN instead")
    if transport == "stdio" and keys_file is not None and ctx.get_parameter_source("keys_file") is not ParameterSource.ENVIRONMENT:
        raise click.UsageError("--keys is for --transport http: a stdio server is reached only by the host that launched it")
    if transport == "http":
        from skillctl.mcp.http import check_listen

        check_listen(host, keys_file)  # before the catalog is opened: the cheap refusal first
    catalog = _catalog(registry_url, project_dir, folder, all_versions)
    catalog.warn = progress
    try:
        if transport == "stdio":
            from skillctl.mcp.server import serve_stdio

            progress(f"serving {len(catalog.listed)} skills from {catalog.label} over MCP on stdio")  # a host's log shows it
            serve_stdio(catalog)
            return
        from skillctl.mcp.http import McpHttpServer

        server = McpHttpServer(catalog, host=host, port=port, keys=keys_file)
        server.run(on_ready=lambda: progress(f"serving {len(catalog.listed)} skills from {catalog.label} over MCP at "
                                             f"{server.url}{' (keys required)' if keys_file else ''}"))
    finally:
        catalog.close()


def _catalog(registry_url: str | None, project_dir: Path | None, folder: Path | None, all_versions: bool):
    from skillctl.mcp import catalog as catalogs

    if folder is not None:
        return catalogs.folder_catalog(folder)
    if project_dir is None and registry_url is None and (Path.cwd() / "skills.lock").is_file():
        project_dir = Path.cwd()
    if project_dir is not None:
        return _project_catalog(project_dir)
    opened = registry_opener(registry_url)
    return catalogs.registry_catalog(registry_url, all_versions=all_versions, opener=lambda _url: opened())


def _project_catalog(project_dir: Path):
    import contextlib

    from skillctl.errors import LockError
    from skillctl.mcp import catalog as catalogs
    from skillctl.project.runs import locked_run

    lock_path = project_dir / "skills.lock"
    if not lock_path.is_file():
        raise LockError(f"{project_dir}: no skills.lock there; run skillctl lock in that folder first, or serve --folder DIR")
    stack = contextlib.ExitStack()

    def open_store():
        run = stack.enter_context(locked_run(lock_path, progress=progress))
        return run.store, run.store.locked()

    return catalogs.store_catalog(open_store, label=str(lock_path), on_close=stack.close)


from skillctl.cli.mcp_config import config_cmd  # noqa: E402
mcp_group.add_command(config_cmd)
