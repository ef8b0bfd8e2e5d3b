"""``skillctl validate`` / ``lint``: check skill folders against the Agent Skills spec."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option
from skillctl.skill import validate_paths


def _run(paths: tuple[Path, ...], strict: bool, fmt: str, quiet: bool) -> None:
    reports = validate_paths(list(paths) or [Path(".")])
    n_err = sum(len(r.errors) for r in reports)
    n_warn = sum(len(r.warnings) for r in reports)
    invalid = [r for r in reports if not r.valid(strict)]
    if fmt == "json":
        emit_json([r.to_dict(strict) for r in reports])
    else:
        for r in reports:
            for d in r.diagnostics:
                if quiet and d.severity == "warning":
                    continue
                click.echo(d.format())
        status = "FAILED" if invalid else "ok"
        click.echo(
            f"{status}: {len(reports)} checked, {len(reports) - len(invalid)} valid, {len(invalid)} invalid; "
            f"{n_err} error{'s' * (n_err != 1)}, {n_warn} warning{'s' * (n_warn != 1)}"
            + (" (--strict: warnings fail)" if strict and n_warn else ""),
            err=False,
        )
    sys.exit(1 if invalid else 0)


_HELP = """Check skills against the Agent Skills specification.

PATH may be a skill folder, its SKILL.md, or a folder holding many skills (searched at any
depth; default: the current folder). Every problem is reported as
`path:line:col: CODE severity message`, followed by a summary line.

Errors are what the spec forbids (bad or missing name/description, unknown fields, invalid
YAML…); warnings are what it recommends (body under 500 lines / 5,000 tokens, references that
exist and stay one level deep, runnable scripts, no junk files, SemVer in metadata.version).

Exit status: 0 all valid, 1 something invalid (or warnings with --strict), 2 usage error.
"""


def _options(fn):  # shared by validate and its alias lint
    # readable=False: an unreadable path is a finding about the skill (SK011, in the report and
    # the JSON), not a usage error that would leave --format json consumers without output.
    fn = click.argument("paths", nargs=-1, type=click.Path(path_type=Path, readable=False))(fn)
    fn = click.option("--strict", is_flag=True, help="Treat warnings as failures (exit 1).")(fn)
    fn = click.option("-q", "--quiet", is_flag=True, help="Show errors only (text format).")(fn)
    fn = format_option(fn)
    return fn


@click.command("validate", help=_HELP)
@_options
def validate(paths: tuple[Path, ...], strict: bool, quiet: bool, fmt: str) -> None:
    _run(paths, strict, fmt, quiet)


@click.command("lint", help="Alias of `validate`.\n\n" + _HELP)
@_options
def lint(paths: tuple[Path, ...], strict: bool, quiet: bool, fmt: str) -> None:
    _run(paths, strict, fmt, quiet)
