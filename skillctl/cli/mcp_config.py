"""``skillctl mcp config --host H``: the block host H's configuration file needs to launch
``skillctl mcp serve`` (or to reach one over HTTP). Rendering lives in ``skillctl.mcp.hosts``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillctl.cli.common import checked_registry_url, emit_json, format_option
from skillctl.mcp.hosts import DEFAULT_NAME, HOST_NAMES


@click.command("config")
@click.option("--host", "host", required=True, type=click.Choice(HOST_NAMES),
              help="The MCP host whose configuration block to print.")
@click.option("--registry", "registry_url", envvar="SKILLCTL_REGISTRY", metavar="URL", callback=checked_registry_url,
              help="Serve this registry (passed to `skillctl mcp serve --registry`; a folder is made absolute). "
                   "Env: SKILLCTL_REGISTRY, written into the block since hosts do not read your shell's environment.")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Serve the skills this project's lock pins (`skillctl mcp serve --project`, made absolute).")
@click.option("--folder", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Serve a folder of skill folders (`skillctl mcp serve --folder`, made absolute).")
@click.option("--all-versions", is_flag=True, help="Also list every published version (`skillctl mcp serve --all-versions`).")
@click.option("--name", default=DEFAULT_NAME, show_default=True, help="The server's key in the host's configuration.")
@click.option("--url", metavar="URL",
              help="Connect to a running `skillctl mcp serve --transport http` at URL instead of launching one "
                   "(not for claude-desktop: its remote servers are added under Settings > Connectors).")
@click.option("--key-env", metavar="NAME",
              help="With --url, for a server started with --keys: send `Authorization: Bearer` with the key the host "
                   "reads from environment variable NAME (Claude Code, Cursor); VS Code prompts for it once instead. "
                   "The key itself is never written.")
@format_option
def config_cmd(host: str, registry_url: str | None, project: Path | None, folder: Path | None, all_versions: bool,
               name: str, url: str | None, key_env: str | None, fmt: str) -> None:
    """Print the configuration block an MCP host needs to use skillctl's skills.

    The block goes to stdout (`> file` works for a new file); a line on stderr names the file
    it belongs in on this OS and how to merge it into one that exists. The command is this
    skillctl's absolute path, since hosts start servers with a small PATH.

    \b
    skillctl mcp config --host claude-desktop --registry ~/skills-registry
    skillctl mcp config --host vscode --project . > .vscode/mcp.json
    skillctl mcp config --host cursor --url http://127.0.0.1:8766/mcp --key-env SKILLCTL_MCP_KEY
    """
    from skillctl.mcp import hosts

    launch: hosts.Launch
    if url is not None:
        given = [opt for opt, value in (("--registry", registry_url), ("--project", project), ("--folder", folder),
                                        ("--all-versions", all_versions)) if value]
        if given:
            raise click.UsageError(f"{', '.join(given)} with --url: the running server was started with its own "
                                   "options; give them to `skillctl mcp serve --transport http` instead")
        launch = hosts.Remote(url, key_env)
    else:
        if key_env is not None:
            raise click.UsageError("--key-env goes with --url: a server the host launches over stdio needs no key")
        registry_url, project = _what_to_serve(registry_url, project, folder)
        launcher = hosts.skillctl_launcher(sys.argv[0], sys.executable)
        args = hosts.serve_args(registry_url, str(project) if project else None, str(folder) if folder else None,
                                all_versions)
        launch = hosts.Stdio(launcher[0], (*launcher[1:], *args))
        for warning in hosts.launch_warnings(args):
            click.echo(f"warning: {warning}", err=True)
    try:
        snippet = hosts.render(host, name, launch)
    except hosts.HostConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if fmt == "json":
        emit_json(snippet.to_json())
    else:
        click.echo(snippet.block, nl=False)
    click.echo(snippet.note, err=True)


def _what_to_serve(registry_url: str | None, project: Path | None, folder: Path | None) -> tuple[str | None, Path | None]:
    """What ``skillctl mcp serve`` would serve here, written out: the host starts it in a folder
    of its own and without this shell's environment, so neither may decide for it."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    from_env = ctx.get_parameter_source("registry_url") is ParameterSource.ENVIRONMENT
    if from_env and (project or folder):
        registry_url = None  # as serve does: SKILLCTL_REGISTRY does not contradict --project/--folder
    given = [o for o, v in (("--registry", registry_url), ("--project", project), ("--folder", folder)) if v]
    if len(given) > 1:
        raise click.UsageError(f"serve one thing: {' and '.join(given)} were both given")
    if not given and (Path.cwd() / "skills.lock").is_file():
        project = Path.cwd()  # serve's own default in a project folder
    return registry_url, project
