"""``skillctl registry verify|gc``: maintenance of a registry."""

from __future__ import annotations

import sys

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, registry_option


@click.group("registry")
def registry_group() -> None:
    """Maintain a registry (verify integrity, collect garbage)."""


@registry_group.command("verify")
@registry_option
@format_option
@library_errors
def verify(registry_url: str | None, fmt: str) -> None:
    """Re-hash every blob and check the index. Exit 1 on any missing or corrupt blob."""
    reg = open_registry_for_cli(registry_url, create=False)
    problems = reg.verify()
    errors = [p for p in problems if p.severity == "error"]
    if fmt == "json":
        emit_json({"registry": reg.url, "ok": not errors, "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            click.echo(f"{p.severity}: {p.kind}: {p.message}")
        click.echo(f"{'FAILED' if errors else 'ok'}: {len(errors)} error(s), {len(problems) - len(errors)} warning(s) in {reg.url}")
    sys.exit(1 if errors else 0)


@registry_group.command("gc")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--grace", default=3600, show_default=True, type=click.IntRange(min=0), help="Keep unreferenced files younger than this many seconds (a publish may be in flight).")
@registry_option
@format_option
@library_errors
def gc(dry_run: bool, grace: int, registry_url: str | None, fmt: str) -> None:
    """Remove blobs no version references and leftovers of interrupted publishes."""
    reg = open_registry_for_cli(registry_url, create=False)
    removed = reg.gc(dry_run=dry_run, grace_s=grace)
    if fmt == "json":
        emit_json({"registry": reg.url, "dry_run": dry_run, "removed": removed})
    else:
        for r in removed:
            click.echo(("would remove " if dry_run else "removed ") + r)
        click.echo(f"{len(removed)} file(s) {'to remove' if dry_run else 'removed'}")
