"""``skillctl registry init|verify|gc|rebuild-index|remove``: making and maintaining a registry."""

from __future__ import annotations

import sys

import click

from skillctl.cli.common import confirm, emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option, registry_origin
from skillctl.errors import NoRegistryError
from skillctl.words import count


@click.group("registry")
def registry_group() -> None:
    """Make and maintain a registry (create one, verify integrity, collect garbage, rebuild a lost index, delete a version)."""


@registry_group.command("init", short_help="Create an empty folder registry.")
@registry_option
@format_option
@library_errors
def init(registry_url: str | None, fmt: str) -> None:
    """Create an empty folder registry, e.g. for `skillctl serve` to take uploads into.

    `publish` creates a missing registry too; no other command does (they refuse in one line).
    An existing registry is left as it is. OCI registries and sites need no init here."""
    from skillctl.errors import UnsupportedError
    from skillctl.registry import default_registry_url

    url = registry_url or default_registry_url()
    if url.startswith(("oci://", "https://", "http://")):
        raise UnsupportedError(f"only a folder registry is made by skillctl; {url} keeps its own storage (an OCI registry "
                               "makes a repository on the first publish, a site is written by skillctl site)")
    created: list[str] = []

    def made(path: str) -> None:
        created.append(path)
        if fmt == "text":
            progress(f"created registry at {path}")

    reg = open_registry_for_cli(registry_url, create=True, on_create=made)
    with reg:
        if fmt == "json":
            emit_json({"registry": reg.url, "created": bool(created)})
        elif not created:
            click.echo(f"{reg.url} is a registry already; left as it is")


@registry_group.command("verify")
@registry_option
@format_option
@library_errors
def verify(registry_url: str | None, fmt: str) -> None:
    """Re-hash every blob and check the index. Exit 1 on any missing or corrupt blob, and on a
    missing, empty or damaged index."""
    reg = open_registry_for_cli(registry_url, allow_damaged=True)
    problems = reg.verify()
    errors = [p for p in problems if p.severity == "error"]
    if fmt == "json":
        emit_json({"registry": reg.url, "ok": not errors, "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            click.echo(f"{p.severity}: {p.kind}: {p.message}")
        click.echo(f"{'FAILED' if errors else 'ok'}: {count(len(errors), 'error')}, {count(len(problems) - len(errors), 'warning')} in {reg.url}")
    sys.exit(1 if errors else 0)


@registry_group.command("gc", short_help="Remove blobs nothing references and leftover uploads.")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--grace", default=3600, show_default=True, type=click.IntRange(min=0), help="Keep unreferenced files younger than this many seconds (a publish may be in flight).")
@registry_option
@format_option
@library_errors
def gc(dry_run: bool, grace: int, registry_url: str | None, fmt: str) -> None:
    """Remove blobs no version references and leftovers of interrupted publishes.

    Refused on a registry whose index is missing or damaged: it could not tell which blobs are
    in use (see `registry verify` and `registry rebuild-index`)."""
    reg = open_registry_for_cli(registry_url)
    removed = reg.gc(dry_run=dry_run, grace_s=grace)
    if fmt == "json":
        emit_json({"registry": reg.url, "dry_run": dry_run, "removed": removed})
    else:
        for r in removed:
            click.echo(("would remove " if dry_run else "removed ") + r)
        click.echo(f"{count(len(removed), 'file')} {'to remove' if dry_run else 'removed'}")


@registry_group.command("rebuild-index", short_help="Rebuild a folder registry's lost index from its blobs.")
@registry_option
@format_option
@library_errors
def rebuild_index(registry_url: str | None, fmt: str) -> None:
    """Rebuild a folder registry's missing or damaged index from its blobs.

    Each bundle holds its SKILL.md, so name, version (metadata.version), description and digests
    come back. Not recoverable: skill ids (new ones are made; lockfiles resolve by name and
    version), publish times (blob file times stand in), yank state, and fetch/lock counts (each
    version counts as fetched once, so remove refuses it). Blobs that cannot be indexed move to
    lost+found/; the old index is kept beside the new one. A healthy index is left alone.
    """
    from skillctl.registry import rebuild_index as rebuild
    from skillctl.registry.rebuild import NOT_RECOVERABLE

    try:
        report = rebuild(registry_url, progress=progress)
    except NoRegistryError as exc:  # said as every command says it: where the path came from
        raise NoRegistryError(exc.path, registry_origin()) from None
    if fmt == "json":
        emit_json(report.to_dict())
        return
    for r in report.recovered:
        click.echo(f"recovered   {r.name}@{r.version}  {r.digest}")
    for u in report.unrecovered:
        click.echo(f"unrecovered sha256:{u.blob}: {u.reason} (kept at {u.kept_at})")
    skills = len({r.name for r in report.recovered})
    click.echo(
        f"rebuilt the index of {report.registry}: {count(len(report.recovered), 'version')} of {count(skills, 'skill')} recovered, "
        f"{count(len(report.unrecovered), 'blob')} not"
    )
    if report.old_index:
        click.echo(f"the old index is kept as {report.old_index}")
    click.echo("not recoverable from blobs: " + "; ".join(NOT_RECOVERABLE))


@registry_group.command("remove", short_help="Delete a version that was never fetched or locked.")
@click.argument("ref")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@registry_option
@format_option
@library_errors
def remove(ref: str, yes: bool, registry_url: str | None, fmt: str) -> None:
    """Delete NAME@VERSION — only if it was never fetched or locked.

    Once anyone may depend on a version (it was pulled, installed, run or written into a
    skills.lock), it can only be yanked. This keeps every lockfile ever written reproducible.
    """
    from skillctl.registry.refs import require_exact

    require_exact(ref, "registry remove")
    reg = open_registry_for_cli(registry_url)
    rec = reg.resolve_record(ref)  # a version that is not there fails here, before any question
    confirm(f"remove {rec.name}@{rec.version} from {reg.url}?", yes=yes, refused=f"registry remove {ref}")
    rec = reg.remove(ref)
    emit_json(rec.to_dict()) if fmt == "json" else click.echo(f"removed {rec.name}@{rec.version} (run `skillctl registry gc` to free its blob)")
