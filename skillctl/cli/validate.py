"""``skillctl validate`` / ``lint``: check skill folders against the Agent Skills spec."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from skillctl.cli.common import emit_json, exclude_option
from skillctl.cli.profile_option import profile_option
from skillctl.words import SEVERITY_WORD, count


def _github_escape(text: str, prop: bool = False) -> str:
    # GitHub Actions workflow commands: '%', CR and LF are escaped in the message; ':' and ','
    # too in a property value (file=…,line=…).
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def github_annotation(d: Any) -> str:
    """One diagnostic as a GitHub Actions annotation (``::error file=…,line=…,col=…::…``)."""
    props = [f"file={_github_escape(d.file, True)}"]
    if d.line:
        props += [f"line={d.line}", f"col={d.column or 1}"]
    props.append(f"title={d.code}")
    return f"::{_GITHUB_LEVEL[d.severity]} {','.join(props)}::{_github_escape(d.message)}"


def _run(paths: tuple[Path, ...], strict: bool, fmt: str, quiet: bool, profile: str, exclude: tuple[str, ...], fix: bool, show_diff: bool, changed: bool) -> None:
    from skillctl.skill import validate_paths

    targets = list(paths) or [Path(".")]
    if changed:
        from skillctl.skill.discovery import owning_skills

        targets = owning_skills(list(paths))
        if not targets:
            if fmt == "json":
                emit_json([])
            else:
                click.echo("ok: 0 checked (no changed file is part of a skill)")
            sys.exit(0)
    fixes: dict[str, Any] = {}
    if fix or show_diff:
        from skillctl.skill.fix import plan_fixes_under, write_fix

        for shown, planned in plan_fixes_under(targets, exclude=exclude, profile=profile):
            fixes[shown] = planned
            if show_diff and fmt != "json":
                click.echo(planned.diff(f"{shown}/SKILL.md"), nl=False)
            if fix:
                write_fix(planned)
                if fmt != "json":
                    click.echo(f"fixed {shown}/SKILL.md: {'; '.join(planned.changes)}", err=fmt == "github")
    # packaging: note a skill pack and publish would refuse for want of a version (SK303)
    reports = validate_paths(targets, exclude=exclude, profile=profile, packaging=True)
    skills = [r for r in reports if r.is_skill]
    n_err = sum(len(r.errors) for r in reports)
    n_warn = sum(len(r.warnings) for r in reports)
    invalid = [r for r in reports if not r.valid(strict)]
    if fmt == "json":
        out = []
        for r in reports:
            entry = r.to_dict(strict)
            if fix or show_diff:
                planned = fixes.get(r.path)
                entry["fixes"] = list(planned.changes) if planned else []
                entry["fixed"] = bool(planned) and fix
                if show_diff:
                    entry["diff"] = planned.diff(f"{r.path}/SKILL.md") if planned else ""
            out.append(entry)
        emit_json(out)
    else:
        for r in reports:
            for d in r.diagnostics:
                if quiet and d.severity != "error":
                    continue
                click.echo(github_annotation(d) if fmt == "github" else d.format())
        status = "FAILED" if invalid else "ok"
        n_invalid = len([r for r in invalid if r.is_skill])
        notes = sum(len(r.notes) for r in reports)
        click.echo(
            f"{status}: {len(skills)} checked, {len(skills) - n_invalid} valid, "
            f"{n_invalid} invalid; {count(n_err, SEVERITY_WORD['error'])}, {count(n_warn, SEVERITY_WORD['warning'])}"
            + (f", {count(notes, SEVERITY_WORD['info'])}" if notes else "")
            + (" (--strict: warnings fail)" if strict and n_warn else "")
            + (f" (profile {profile})" if profile != "spec" else ""),
            err=False,
        )
    sys.exit(1 if invalid else 0)


_HELP = """Check skills against the Agent Skills specification.

PATH may be a skill folder, its SKILL.md, or a folder searched for skills — hidden client
folders included (.agents/skills, .claude/skills, .github/skills, skills/.curated…), VCS
folders, caches, node_modules and virtualenvs skipped, at most 6 folder levels and 2,000 folders
deep (reported when reached). Default: the current folder. Every problem is reported as
`path:line:col: CODE severity message`, followed by a summary line.

Errors are what the spec forbids (bad or missing name/description, unknown fields, invalid
YAML…); warnings are what it recommends (body under 500 lines / 5,000 tokens, references that
exist and are not chained, runnable scripts, no junk files, SemVer in metadata.version); notes
(SK3xx) never fail, not even with --strict — among them SK303, a skill without metadata.version,
which pack and publish refuse unless given --version.

--profile checks a client's documented extensions too (Claude Code's argument-hint, OpenClaw's
metadata.openclaw…). --fix repairs what is mechanical (quote numeric metadata values, join an
allowed-tools list, add metadata.version, drop a BOM and CRLF) and nothing it is unsure of;
--diff shows those repairs as a unified diff (without --fix nothing is written).
--format github prints GitHub Actions annotations (::error file=…,line=…,col=…::…).
--changed takes changed files (as a pre-commit hook passes them) and checks the skills they are in.

Exit status: 0 all valid, 1 something invalid (or warnings with --strict), 2 usage error.
"""


def _options(fn):  # shared by validate and its alias lint
    # readable=False: an unreadable path is a finding about the skill (SK011, in the report and
    # the JSON), not a usage error that would leave --format json consumers without output.
    fn = click.argument("paths", nargs=-1, type=click.Path(path_type=Path, readable=False))(fn)
    fn = click.option("--strict", is_flag=True, help="Treat warnings as failures (exit 1).")(fn)
    fn = click.option("-q", "--quiet", is_flag=True, help="Show errors only (text and github formats).")(fn)
    fn = profile_option(fn)
    fn = exclude_option(fn)
    fn = click.option(
        "--changed",
        is_flag=True,
        help="PATHs are changed files (a pre-commit hook's): check each skill that holds one, ignore the others.",
    )(fn)
    fn = click.option("--fix", is_flag=True, help="Repair mechanical problems in SKILL.md (verified edits), then validate.")(fn)
    fn = click.option("--diff", "show_diff", is_flag=True, help="Show the repairs --fix makes as a unified diff.")(fn)
    fn = click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json", "github"]),
        default="text",
        show_default=True,
        help="Output format; json goes to stdout, progress and warnings to stderr; github prints workflow annotations.",
    )(fn)
    return fn


@click.command("validate", help=_HELP)
@_options
def validate(paths: tuple[Path, ...], strict: bool, quiet: bool, profile: str, exclude: tuple[str, ...], changed: bool, fix: bool, show_diff: bool, fmt: str) -> None:
    _run(paths, strict, fmt, quiet, profile, exclude, fix, show_diff, changed)


@click.command("lint", help="Alias of `validate`.\n\n" + _HELP)
@_options
def lint(paths: tuple[Path, ...], strict: bool, quiet: bool, profile: str, exclude: tuple[str, ...], changed: bool, fix: bool, show_diff: bool, fmt: str) -> None:
    _run(paths, strict, fmt, quiet, profile, exclude, fix, show_diff, changed)
