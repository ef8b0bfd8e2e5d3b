"""``skillctl --help`` lists every command with its summary without importing any command module,
and ``skillctl validate`` loads only what validating needs (the per-commit cost)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from skillctl.cli import COMMANDS, SUMMARIES, cli

EXAMPLE = Path(__file__).resolve().parent.parent / "skills" / "tally"


def _modules_after(args: list[str]) -> tuple[str, list[str]]:
    """Run the CLI in a fresh interpreter; return its stdout and the modules it imported."""
    code = (
        "import io, json, sys, contextlib\n"
        "from skillctl.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        main({args!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps([out.getvalue(), sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    output, modules = json.loads(done.stdout)
    return output, modules


def test_every_command_has_its_summary_in_the_table() -> None:
    ctx = click.Context(cli)
    assert set(SUMMARIES) == set(COMMANDS), "add the one-line summary of a new command to SUMMARIES"
    for name in COMMANDS:
        real = cli.get_command(ctx, name).get_short_help_str(10_000)
        assert click.Command(name, help=SUMMARIES[name]).get_short_help_str(10_000) == real, name


def test_help_lists_every_command_without_importing_one() -> None:
    output, modules = _modules_after(["--help"])
    assert [m for m in modules if m.startswith("skillctl.cli.")] == []
    listed = [line.split(None, 1) for line in output.split("Commands:\n", 1)[1].splitlines()]
    assert [name for name, _ in listed] == sorted(COMMANDS)
    for name, summary in listed:  # click's short help: the summary, cut to the width with "..."
        assert SUMMARIES[name].startswith(summary.removesuffix("...")), (name, summary)


def test_validating_one_skill_loads_no_schema_engine_registry_or_sdk() -> None:
    output, modules = _modules_after(["validate", str(EXAMPLE)])
    assert output.startswith("ok: 1 checked, 1 valid")
    # The example's script imports only the standard library and declares nothing: its imports are
    # scanned, but nothing parses requirements (packaging, tomllib) or checks that it compiles (symtable).
    heavy = {"jsonschema", "docker", "openai", "requests", "pathspec", "skillctl.registry", "skillctl.bundle", "skillctl.runtime",
             "packaging", "tomllib", "symtable"}
    assert sorted(m for m in modules if m in heavy or m.split(".")[0] in heavy) == []


def test_plainly_written_requirements_are_read_without_packaging() -> None:
    # requirements.txt holds `markitdown[xlsx]>=0.1.0`: its name is all the check needs
    skill = Path(__file__).resolve().parent / "data" / "real-skills" / "github+awesome-copilot" / "skills" / "convert-excel-to-md"
    output, modules = _modules_after(["validate", "--quiet", str(skill)])  # --quiet: no SK303 note (it has no version)
    assert output.startswith("ok: 1 checked, 1 valid"), output
    assert [m for m in modules if m.split(".")[0] == "packaging"] == []
