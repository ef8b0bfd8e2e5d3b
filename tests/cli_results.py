"""Checks on what a refused command printed, shared by the tests of refusals."""

from __future__ import annotations


def one_error_line(result) -> str:
    """The single ``Error:`` line of a ``CliRunner`` result; fails on a traceback or on more
    than one error line (a refusal is one line)."""
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]
