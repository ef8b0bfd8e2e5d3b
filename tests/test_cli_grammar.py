"""One CLI grammar: every command's help walked and held to the same rules — ``-o/--output`` for
outputs (old spellings hidden, deprecated), summaries written for the command table and never
cut, no seed symbols, one word per severity, plurals said right, confirmations that refuse in
one line without a terminal, tables as wide as the terminal, shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from registry.helpers import write_skill
from registry_cli import as_json, isolated, run  # noqa: F401 - isolated: autouse fixture
from skillctl.cli import COMMANDS, SUMMARIES, cli
from skillctl.words import SEVERITY_WORD, count

CLI_SOURCE = Path(__file__).resolve().parent.parent / "skillctl" / "cli"

# Groups whose subcommands are not walked yet (none: every command is held to these rules).
NOT_YET: set[tuple[str, ...]] = set()

# Spellings an output took before -o/--output, and the commands that write an output.
OLD_OUTPUT = {"--out", "--to", "--dir", "--dest", "--output-dir", "--out-dir"}
WRITES_OUTPUT = {"install", "pull", "pack", "export", "init", "run", "batch"}
# `copy --to` names the target registry (a URL, paired with --from), not an output file.
NOT_AN_OUTPUT = {(("copy",), "--to")}

SEED_SYMBOLS = re.compile(r"K_max|c₁|\bc1\b|(?<![\w.])Z(?![\w.])")
TABLE_WIDTH = 80  # the command tables must hold every summary whole at this width


def _walk(group: click.Group, path: tuple[str, ...], ctx: click.Context):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        yield path + (name,), cmd, group
        if isinstance(cmd, click.Group) and path + (name,) not in NOT_YET:
            yield from _walk(cmd, path + (name,), click.Context(cmd, info_name=name, parent=ctx))


ROOT = click.Context(cli, info_name="skillctl")
ALL = list(_walk(cli, (), ROOT))
IDS = [" ".join(p) for p, _, _ in ALL]


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], env={"COLUMNS": str(TABLE_WIDTH)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_walk_sees_every_command_and_group() -> None:
    assert {p[0] for p, _, _ in ALL} == set(COMMANDS)
    assert {"registry remove", "memory clear", "serve key add", "env show", "site build"} <= set(IDS)


@pytest.mark.parametrize(("path", "cmd", "group"), ALL, ids=IDS)
def test_summary_is_a_sentence_the_table_shows_whole(path, cmd, group) -> None:
    summary = cmd.get_short_help_str(10_000)
    assert re.fullmatch(r"[A-Z].*[.)]", summary) and summary.endswith("."), f"{' '.join(path)}: {summary!r}"
    siblings = group.list_commands(ROOT) if group is cli else list(group.commands)
    room = (TABLE_WIDTH - 2) - 6 - max(map(len, siblings))  # click's table: indent, name column, spacing
    assert len(summary) <= room, f"{' '.join(path)}: {len(summary)} > {room} characters: {summary!r}"
    assert cmd.get_short_help_str(room) == summary  # nothing cut by click either
    table = _help(path[:-1])
    assert f"  {path[-1]:<{max(map(len, siblings))}}  {summary}\n" in table, table


@pytest.mark.parametrize(("path", "cmd", "group"), ALL, ids=IDS)
def test_outputs_are_spelled_dash_o_dash_dash_output(path, cmd, group) -> None:
    visible = [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden]
    for option in visible:
        old = [o for o in option.opts if o in OLD_OUTPUT and (path, o) not in NOT_AN_OUTPUT]
        assert not old, f"{' '.join(path)}: {old} is an output: spell it -o/--output"
        if "-o" in option.opts or "--output" in option.opts:
            assert {"-o", "--output"} <= set(option.opts), f"{' '.join(path)}: {option.opts}"
    if path[0] in WRITES_OUTPUT and len(path) == 1:
        assert any({"-o", "--output"} <= set(o.opts) for o in visible), f"{path[0]} has no -o/--output"
    assert "--out " not in _help(path) and "--dir " not in _help(path)


@pytest.mark.parametrize(("path", "cmd", "group"), ALL, ids=IDS)
def test_help_uses_words_not_seed_symbols(path, cmd, group) -> None:
    text = _help(path) + " ".join(SUMMARIES.values())
    assert not SEED_SYMBOLS.findall(text), f"{' '.join(path)}: {SEED_SYMBOLS.findall(text)}"


@pytest.mark.parametrize(("old", "args"), [
    ("--out", ["pack", "skills/demo"]),
    ("--dir", ["init", "fresh"]),
])
def test_old_output_spellings_still_work_for_a_release_and_say_so(tmp_path: Path, old: str, args: list[str]) -> None:
    write_skill(tmp_path / "skills", "demo")
    result = CliRunner().invoke(cli, [*args, old, str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == f"{old} is deprecated; use -o/--output"
    assert any((tmp_path / "out").iterdir())
    both = CliRunner().invoke(cli, [*args, old, "a", "-o", "b"])
    assert both.exit_code == 2 and "give the output once" in both.output


def test_a_required_output_given_by_its_old_name_counts() -> None:
    missing = CliRunner().invoke(cli, ["export", "demo"])
    assert missing.exit_code == 2 and "Missing option '-o' / '--output'" in missing.output
    old = CliRunner().invoke(cli, ["export", "demo", "--to", "agents"])
    assert "is deprecated; use -o/--output" in old.output and "Missing option" not in old.output


def test_counts_say_one_and_many_right() -> None:
    assert [count(1, "file"), count(0, "file"), count(2, "file"), count(2, "entry", "entries")] == \
        ["1 file", "0 files", "2 files", "2 entries"]


def test_no_command_pluralises_by_hand() -> None:
    by_hand = re.compile(r"""\w\(s\)|\{'s' \*|\{"s" \*""")
    found = [f"{f.name}:{n}" for f in sorted(CLI_SOURCE.glob("*.py")) if not f.name.startswith("mcp")
             for n, line in enumerate(f.read_text("utf-8").splitlines(), 1) if by_hand.search(line)]
    assert found == [], "use skillctl.words.count: " + ", ".join(found)


def test_a_severity_has_one_word_in_lines_and_in_the_count(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Demo skill; use it when testing.\n---\n\nDo it.\n")
    out = run("validate", skill).output  # no metadata.version: note SK303
    assert f"SK303 {SEVERITY_WORD['info']} " in out and out.rstrip().endswith(f", {count(1, SEVERITY_WORD['info'])}")
    assert " info " not in out


def test_confirmations_refuse_without_a_terminal_after_checking_the_target() -> None:
    run("publish", write_skill(Path("src"), "demo", "1.0.0"))
    missing = CliRunner().invoke(cli, ["registry", "remove", "demo@9.9.9"])
    assert missing.exit_code == 1 and "--yes" not in missing.output
    refused = CliRunner().invoke(cli, ["registry", "remove", "demo@1.0.0"], input="y\n")
    assert (refused.exit_code, refused.output) == (
        2, "Error: registry remove demo@1.0.0: no terminal to confirm on; pass --yes to go ahead\n")
    no_memory = CliRunner().invoke(cli, ["memory", "clear", "nope"])
    assert no_memory.exit_code == 1 and "no memory nope" in no_memory.output and "--yes" not in no_memory.output
    Path("notes").mkdir()
    (Path("notes") / "MEMORY.md").write_text("- a fact\n")
    refused = CliRunner().invoke(cli, ["memory", "clear", "./notes"], input="y\n")
    assert (refused.exit_code, refused.output) == (
        2, "Error: memory clear ./notes: no terminal to confirm on; pass --yes to go ahead\n")
    assert (Path("notes") / "MEMORY.md").is_file()


def test_list_uses_the_terminal_width_and_marks_cuts() -> None:
    long = "Turns long meeting notes into decisions, owners and dates; use it when notes pile up. " * 3
    run("publish", write_skill(Path("src"), "notes", "1.0.0", description=long.strip()))
    rows = {}
    for columns in (60, 120, 400):
        rows[columns] = CliRunner().invoke(cli, ["list"], env={"COLUMNS": str(columns)}, catch_exceptions=False).stdout.rstrip("\n")
    assert rows[120].endswith("…") and len(rows[120]) == 120
    assert rows[60].endswith("…") and len(rows[60]) < len(rows[120])
    assert rows[400].endswith(long.strip()[-20:])  # room for all of it: nothing cut, no mark
    assert as_json(run("list", "--format", "json"))[0]["description"] == long.strip()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_for_each_shell(shell: str) -> None:
    script = run("completion", shell).output
    assert "_SKILLCTL_COMPLETE" in script and "skillctl" in script and script.count("\n") > 5


def test_the_bash_script_completes_commands_through_skillctl_itself() -> None:
    env = {**os.environ, "_SKILLCTL_COMPLETE": "bash_complete", "COMP_WORDS": "skillctl comp", "COMP_CWORD": "1"}
    code = "from skillctl.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "plain,completion" in done.stdout.splitlines()


def test_run_eval_and_batch_take_the_same_run_options() -> None:
    from skillctl.cli.run_options import RUN_KEYS

    def described(name: str) -> dict[str, tuple]:
        params = {p.name: p for p in cli.get_command(ROOT, name).params}
        return {k: (tuple(params[k].opts), repr(params[k].type), params[k].default, params[k].help) for k in RUN_KEYS}

    assert described("run") == described("eval") == described("batch")
    assert len(RUN_KEYS) >= 11


def test_parallel_runs_never_prompt_under_the_default_approval() -> None:
    from skillctl.cli.many_options import run_settings

    base = {"base_url": None, "max_steps": 30, "max_seconds": None, "max_tokens": None, "context_budget": 100_000,
            "timeout_ms": 60_000, "sandbox_name": "docker", "allow_unsafe_local": False, "image": None,
            "memory_limit": "1g", "cpus": None}
    assert run_settings(None, {**base, "approve": "policy"}).approve == "never"
    assert run_settings(None, {**base, "approve": "all"}).approve == "all"
    assert run_settings(None, {**base, "approve": "policy"}).sandbox_settings == {"memory_limit": "1g"}


@pytest.mark.parametrize("command", ["eval", "batch"])
def test_a_zero_ram_limit_is_a_bad_option_not_a_traceback(tmp_path: Path, command: str) -> None:
    # -j is worked out by dividing the machine's memory by the limit: 0 once ended in ZeroDivisionError
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "t"}\n')
    target = [str(tasks)] if command == "batch" else [str(write_skill(tmp_path, "demo"))]
    result = CliRunner().invoke(cli, [command, *target, "--model", "script:x.yaml", "--memory-limit", "0"])
    assert result.exit_code == 2 and "'--memory-limit': '0' is no RAM limit" in result.output, result.output
