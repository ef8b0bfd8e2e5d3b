"""``skillctl site build``: publish skills as a static Agent Skills well-known site."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option
from skillctl.words import count


@click.group("site")
def site_group() -> None:
    """Publish skills where any web server or CDN can serve them (/.well-known/agent-skills/)."""


@site_group.command("build", short_help="Write a well-known skills site into a folder.")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--base-url", metavar="URL", help="Where OUT will be served (https://HOST[/PATH]); makes the URLs in index.json absolute. Default: relative URLs, servable from anywhere.")
@registry_option
@format_option
@library_errors
def site_build(out: Path, paths: tuple[Path, ...], base_url: str | None, registry_url: str | None, fmt: str) -> None:
    """Write OUT/.well-known/agent-skills/ from a registry, or from skill folders (PATHS).

    index.json lists the latest version of each skill (yanked versions left out); every version
    gets an immutable snapshot NAME/vVERSION/index.json beside its artifact (NAME.tar.gz with the
    files at the archive root, or SKILL.md for a skill that is only that), and NAME/versions.json
    lists them all. Re-running on unchanged input changes no byte; a new version only adds files
    and updates index.json and its versions.json. Upload OUT to any static host; serve .json as
    application/json, .md as text/markdown, .tar.gz as application/gzip.
    """
    from skillctl.registry.wellknown.site import build_site, build_site_from_folders

    given = click.get_current_context().get_parameter_source("registry_url") == click.core.ParameterSource.COMMANDLINE
    if paths and given:  # SKILLCTL_REGISTRY in the environment does not count against PATHS
        raise click.UsageError("give skill folders (PATHS) or --registry, not both")
    if paths:
        from skillctl.cli.pack import skill_folders

        report = build_site_from_folders(out, skill_folders(paths), base_url=base_url, progress=progress)
    else:
        registry = open_registry_for_cli(registry_url)
        report = build_site(out, registry, base_url=base_url, progress=progress)
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        click.echo(
            f"site {out}: {count(report.skills, 'skill')}, {count(report.versions, 'version')}; "
            f"{count(len(report.written), 'file')} written, {report.unchanged} unchanged"
        )
