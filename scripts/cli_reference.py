"""Write docs/cli.md, the CLI reference, from the click commands themselves.

    python scripts/cli_reference.py          # rewrite docs/cli.md
    python scripts/cli_reference.py --check  # exit 1 if docs/cli.md is out of date

Every command and group under ``skillctl.cli.cli`` is walked, subcommands included, and its
``--help`` text is rendered at a fixed width, so the page is the same on every machine.
tests/test_docs.py fails when the committed page and the commands disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = 100  # fixed: click would otherwise wrap to the terminal it finds
RUN = "python scripts/cli_reference.py"

INTRO = f"""# CLI reference

Generated from the click commands by `{RUN}`; do not edit by hand
(tests/test_docs.py fails when this page and the commands disagree). The same text is printed by `skillctl COMMAND --help`.
"""


def _commands(cmd: click.Command, ctx: click.Context):
    """``(context, command)`` for ``cmd`` and, depth first in name order, every command below it."""
    yield ctx, cmd
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH))


def render() -> str:
    """The page's text."""
    from skillctl.cli import cli

    root = click.Context(cli, info_name="skillctl", terminal_width=WIDTH, max_content_width=WIDTH, **cli.context_settings)
    parts = [INTRO]
    for ctx, cmd in _commands(cli, root):
        title = ctx.command_path
        level = "#" * (2 + max(title.count(" ") - 1, 0))  # skillctl and its commands at one level
        parts.append(f"{level} `{title}`\n\n```text\n{cmd.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        if PAGE.read_text("utf-8") != text:
            print(f"{PAGE} is out of date: run {RUN}", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(f"usage: {RUN} [--check]", file=sys.stderr)
        return 2
    PAGE.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
