"""``skillctl runs list|show``: past runs, read back from their transcripts."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, progress


def _folder(transcripts: Path | None) -> Path:
    from skillctl.runtime.runs import runs_home

    return transcripts if transcripts is not None else runs_home()


transcripts_option = click.option(
    "--transcripts", "transcripts", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
    help="Folder of transcripts to read (default: where `skillctl run` writes them, in the user state folder; "
    "a batch's RESULTS.transcripts/ or an eval's folder also work).")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if ts is not None else "-"


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.1f} s"


def _cut(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@click.group("runs")
def runs_group() -> None:
    """Past runs, read from their transcripts: list them, show one step by step.

    A run's id is its transcript's path below the folder without .jsonl (run-20261202-… for
    `skillctl run`, a line's id for a batch).
    """


@runs_group.command("list")
@transcripts_option
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Show at most this many runs, newest first.")
@format_option
@library_errors
def list_cmd(transcripts: Path | None, limit: int, fmt: str) -> None:
    """List the runs in a folder of transcripts, newest first."""
    from skillctl.runtime.runs import list_runs

    folder = _folder(transcripts)
    if transcripts is not None and not folder.is_dir():
        raise click.UsageError(f"--transcripts {folder} is not a folder")
    runs = list_runs(folder)[:limit]
    if fmt == "json":
        emit_json([r.to_dict() for r in runs])
        return
    if not runs:
        progress(f"no runs in {folder}")
        return
    rows = [(r.id, _when(r.started), r.outcome, "-" if r.steps is None else str(r.steps),
             "-" if r.tokens is None else str(r.tokens), _seconds(r.duration_s)) for r in runs]
    head = ("RUN", "STARTED (UTC)", "OUTCOME", "STEPS", "TOKENS", "TIME")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    used = sum(widths) + 2 * len(widths)
    task_width = max(10, shutil.get_terminal_size((100, 24)).columns - used)
    fmt_row = "  ".join(f"{{:<{w}}}" if i < 3 else f"{{:>{w}}}" for i, w in enumerate(widths))
    click.echo(fmt_row.format(*head) + "  TASK")
    for row, run in zip(rows, runs):
        click.echo(fmt_row.format(*row) + "  " + _cut(run.task, task_width))


@runs_group.command("show")
@click.argument("run", metavar="RUN")
@transcripts_option
@format_option
@library_errors
def show_cmd(run: str, transcripts: Path | None, fmt: str) -> None:
    """Show one run step by step: commands with exit codes and times, sub-agents, tokens, outcome.

    RUN is a transcript file, a run id from `skillctl runs list`, or the start of one.
    """
    from skillctl.runtime.run_view import read_run
    from skillctl.runtime.runs import find_run

    view = read_run(find_run(run, _folder(transcripts)))
    if fmt == "json":
        emit_json(view.to_dict())
        return
    end = view.end or {}
    width = shutil.get_terminal_size((100, 24)).columns
    outcome = view.outcome if not end else f"{view.outcome} (exit {end.get('exit_code')})"
    click.echo(f"{outcome}  {view.path}")
    click.echo(f"  model     {view.model}")
    click.echo(f"  started   {_when(view.started)} UTC, took {_seconds(end.get('duration_s'))}")
    click.echo(f"  task      {_cut(view.task, width - 12)}")
    skills = ", ".join(f"{s.get('name')} {s.get('version')}" for s in end.get("skills", [])) or "none"
    click.echo(f"  skills    {skills}")
    if end.get("memory"):
        click.echo(f"  memory    {end['memory']}")
    click.echo(f"  tokens    {view.tokens} sent over {_count(len(view.steps), 'step')}")
    for step in view.steps:
        click.echo(f"\nstep {step.number}  {step.tokens_sent} tokens sent, model {_seconds(step.seconds)}")
        if step.text:
            click.echo(f"  {_cut(step.text, width - 2)}")
        for call in step.calls:
            _show_call(call, width)
    click.echo("")
    if end.get("answer") is not None:
        click.echo(f"answer: {end['answer']}")
    if end.get("message"):
        click.echo(f"ended: {end['message']}")
    for check in end.get("checks", []):
        status = f"exit {check.get('outcome', {}).get('exit_code')}" if check.get("outcome", {}).get("type") == "exit" else "timeout"
        click.echo(f"check: {status}: {_cut(str(check.get('command', '')), width - 20)}")
    if end.get("outputs"):
        click.echo(f"outputs: {_count(len(end['outputs']), 'file')}")
    if view.egress:
        click.echo("egress: " + ", ".join(f"{n} {d}" for d, n in sorted(view.egress.items())))
    for warning in end.get("warnings", []):
        click.echo(f"warning: {warning}")
    for error in view.errors:
        click.echo(f"error: {error.get('kind')}: {_cut(str(error.get('detail')), width - 20)}")
    if not end:
        click.echo("unfinished: no run_end yet (the run is still going, or it was killed)")
    if view.unreadable_lines:
        progress(f"warning: {_count(view.unreadable_lines, 'line')} of {view.path} could not be read and were skipped")


def _show_call(call, width: int) -> None:
    if call.commands:
        cmd_width = max(20, width - 30)
        for c in call.commands:
            click.echo(f"  $ {_cut(c.command, cmd_width):<{min(cmd_width, 40)}}  {c.status:<8} {_seconds(c.duration_s):>8}")
    elif call.subagent is not None:
        s = call.subagent
        click.echo(f"  sub-agent {s['number']}: {s['outcome']} in {_count(s['steps'] or 0, 'step')}, {s['tokens']} tokens sent, "
                   f"{_seconds(s['duration_s'])}")
        if s.get("transcript"):
            click.echo(f"    {s['transcript']}")
    else:
        state = "" if call.valid else " (refused)"
        click.echo(f"  {call.tool}{state}: {_cut(call.result or call.arguments, width - len(call.tool) - 14)}")
