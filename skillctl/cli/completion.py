"""``skillctl completion SHELL``: print click's completion script for bash, zsh or fish."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Load it in the shell's start-up file, e.g. for bash in ~/.bashrc:
    eval "$(skillctl completion bash)"; for zsh in ~/.zshrc: eval "$(skillctl completion zsh)";
    for fish: skillctl completion fish > ~/.config/fish/completions/skillctl.fish.
    The script asks skillctl itself (through _SKILLCTL_COMPLETE) what to complete, so it
    follows new commands and options without being written again.
    """
    from click.shell_completion import get_completion_class

    from skillctl.cli import cli

    cls = get_completion_class(shell)
    assert cls is not None  # click ships all three shells
    click.echo(cls(cli, {}, "skillctl", "_SKILLCTL_COMPLETE").source(), nl=False)
