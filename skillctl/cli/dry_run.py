"""Printing what ``publish --dry-run`` and ``pack --dry-run`` found (``skillctl.registry.plan``)."""

from __future__ import annotations

from typing import Any, Sequence

import click

from skillctl.cli.common import emit_json
from skillctl.words import count

STATUSES = ("new", "unchanged", "changed", "refused")


def about(source: str, message: str) -> str:
    """``message`` about the input ``source``, naming it once (most errors already do)."""
    return message if source in message else f"{source}: {message}"


def show_plan(planned: Sequence[Any], fmt: str, header: dict[str, Any]) -> None:
    """Every input with its version, digests and files (text or JSON on stdout, ``header``
    leading the JSON), then one summary line; a refused input makes it exit 1, as the real
    command would."""
    counts = {s: sum(p.status == s for p in planned) for s in STATUSES}
    if fmt == "json":
        emit_json({"dry_run": True, **header, "skills": [p.to_dict() for p in planned],
                   "summary": {s: n for s, n in counts.items() if n or s != "changed"}})
    else:
        for p in planned:
            if p.status == "refused":
                click.echo(f"{'refused':<9} {about(p.source, p.reason)}")
                continue
            where = f" -> {p.target}" if p.target else ""
            click.echo(f"{p.status:<9} {p.name}@{p.version}  {p.digest}  ({count(p.size, 'byte')}, {count(len(p.files), 'file')}; tar {p.tar_digest}){where}")
            for f in p.files:
                click.echo(f"{'':<10}{f.size:>10}  {f.digest}  {f.path}")
    told = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s != "changed")
    if counts["refused"]:
        raise click.ClickException(f"dry run: {counts['refused']} of {len(planned)} would be refused (see above); {told}; "
                                   "nothing was written")
    if fmt != "json":
        click.echo(f"dry run: {told}; nothing was written")
