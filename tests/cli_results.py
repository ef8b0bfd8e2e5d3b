"""Checks on what a refused command printed, shared by the tests of refusals."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner, Result


def one_error_line(result) -> str:
    """The single ``Error:`` line of a ``CliRunner`` result; fails on a traceback or on more
    than one error line (a refusal is one line)."""
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def run_in(where: Path, *args: str, ok: bool = True) -> Result:
    """``skillctl ARGS`` run in the folder ``where`` (as a person would, from the project), checked
    to end as ``ok`` says and without a traceback."""
    from skillctl.cli import cli

    old = os.getcwd()
    os.chdir(where)
    try:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    assert "Traceback" not in result.output
    assert (result.exit_code == 0) == ok, result.output
    return result
