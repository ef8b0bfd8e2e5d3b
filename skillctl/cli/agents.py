"""``skillctl agents``: the agents skillctl can install for, their folders, and which are here."""

from __future__ import annotations

import os
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors


@click.command("agents")
@click.option("--detected", "only_detected", is_flag=True, help="List only the agents detected on this machine.")
@click.option("--project", "project_root", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Project folder the project folders are shown for.")
@format_option
@library_errors
def agents_cmd(only_detected: bool, project_root: Path, fmt: str) -> None:
    """List the agents skills can be installed for (--agent NAME, targets:), with their folders.

    For each agent: the folder it reads in a project, the folder it reads for the user
    (--user), resolved for this machine's environment (CLAUDE_CONFIG_DIR, XDG_CONFIG_HOME…), and
    whether it is detected here (one of its folders exists or its command is on PATH). Agents
    that read the same folder (.agents/skills) get one copy of each skill there.
    """
    from skillctl.project.agents import describe

    rows = describe(os.environ, project_root)
    if only_detected:
        rows = [r for r in rows if r["detected"]]
    if fmt == "json":
        emit_json(rows)
        return
    if not rows:
        click.echo("no agent detected on this machine; `skillctl agents` lists every one skillctl knows")
        return
    name_width = max(len(r["name"]) for r in rows)
    project_width = max(len(r["project"]) for r in rows)
    click.echo(f"{'AGENT':<{name_width}}  HERE  {'PROJECT FOLDER':<{project_width}}  USER FOLDER (--user)")
    for r in rows:
        user = r["user_folder"] or f"({r['user_error']})"
        click.echo(f"{r['name']:<{name_width}}  {'yes' if r['detected'] else '-':<4}  {r['project']:<{project_width}}  {user}")
    shared = sum(1 for r in rows if r["project"] == ".agents/skills")
    detected = sum(1 for r in rows if r["detected"])
    click.echo(f"{len(rows)} agents, {detected} detected here; the {shared} reading .agents/skills share one copy there "
               "(--format json adds aliases, docs and notes)")
