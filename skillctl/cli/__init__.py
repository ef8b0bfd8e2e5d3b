"""The ``skillctl`` command line: thin commands over the library.

Commands are listed in ``COMMANDS`` and imported only when used, so ``skillctl validate`` does
not pay for importing the Docker SDK or the OpenAI client. ``SUMMARIES`` holds each command's
one-line summary (the first paragraph of its help), so ``skillctl --help`` imports no command
module at all; a command missing there is asked for its summary, which costs its import.
``tests/test_cli_help.py`` keeps the two in step.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from skillctl import __version__
from skillctl.errors import SkillctlError

# command name -> "module:attribute" (module relative to skillctl.cli)
COMMANDS: dict[str, str] = {
    "validate": "validate:validate",
    "agents": "agents:agents_cmd",
    "lint": "validate:lint",
    "init": "init:init_cmd",
    "version": "version:version_cmd",
    "pack": "pack:pack_cmd",
    "inspect": "pack:inspect_cmd",
    "publish": "publish:publish",
    "list": "registry_cmds:list_cmd",
    "show": "registry_cmds:show",
    "versions": "registry_cmds:versions",
    "pull": "registry_cmds:pull",
    "yank": "registry_cmds:yank",
    "unyank": "registry_cmds:unyank",
    "remove": "project:remove_cmd",
    "add": "project:add_cmd",
    "update": "project:update_cmd",
    "outdated": "project:outdated_cmd",
    "sync": "project:sync_cmd",
    "registry": "registry_admin:registry_group",
    "lock": "project:lock_cmd",
    "install": "project:install_cmd",
    "image": "image:image",
    "env": "env:env_group",
    "run": "run:run_cmd",
    "runs": "runs:runs_group",
    "catalog": "run:catalog_cmd",
    "export": "run:export_cmd",
    "copy": "copy:copy_cmd",
    "memory": "memory:memory_group",
    "audit": "audit:audit_cmd",
    "site": "site:site_group",
    "key": "trust:key_group",
    "sign": "trust:sign_cmd",
    "verify": "trust:verify_cmd",
    "eval": "eval:eval_cmd",
    "batch": "batch:batch_cmd",
    "serve": "serve:serve_group",
    "mcp": "mcp:mcp_group",
}


SUMMARIES: dict[str, str] = {
    "agents": "List the agents skills can be installed for (--agent NAME, targets:), with their folders.",
    "audit": "Audit skills for malicious or risky content, without running anything.",
    "batch": "Run every task of TASKS (JSON Lines) as its own agent run, several at once.",
    "catalog": "Print the <available_skills> block the model would see for REFs (metadata only).",
    "copy": "Copy REF from one registry to another, both ways between a folder and an OCI registry.",
    "env": "Skill environments: the packages skills' scripts import, in an image layer.",
    "eval": "Evaluate a skill: run each case of its evals/evals.json with and without it.",
    "export": "Write verified, unpacked skills into a folder, for agents that read skills from disk.",
    "image": "Build and inspect the agent image the sandbox runs.",
    "init": "Create a new skill folder NAME with SKILL.md, scripts/ and references/.",
    "inspect": "Check a .skill.tgz without unpacking it to disk, and show what it holds.",
    "install": "Install the locked skills into the agents' folders, verifying every digest.",
    "key": "Signing keys (Ed25519).",
    "lint": "Alias of `validate`.",
    "list": "List the skills in the registry with their default and latest versions.",
    "lock": "Resolve skills.yaml's entries to exact versions and digests in skills.lock.",
    "add": "Add SOURCE's skills to skills.yaml, lock them and install them.",
    "update": "Move the pins of NAME… (default: every skill) to the newest their entries allow, and install.",
    "outdated": "Show, per skill, the locked version, the newest its entry allows and the newest there is.",
    "sync": "Make every target folder hold exactly what skills.lock says.",
    "mcp": "Skills over MCP: serve a registry, project or folder to MCP hosts, and print their config blocks.",
    "memory": "Long-term memories: folders a run mounts at /memory with `skillctl run --memory NAME`.",
    "pack": "Validate and pack skills into reproducible NAME-VERSION.skill.tgz bundles.",
    "publish": "Publish skill folders or .skill.tgz bundles to the registry.",
    "pull": "Fetch a skill version, verify its digest and unpack it safely into OUT/NAME/.",
    "registry": "Make and maintain a registry (create one, verify integrity, collect garbage, rebuild a lost index, delete a version).",
    "remove": "Remove skills NAME… from skills.yaml, skills.lock and every target folder.",
    "run": "Run an agent on TASK with the given skills loaded into a sandbox.",
    "runs": "Past runs, read from their transcripts: list them, show one step by step.",
    "serve": "Serve a registry as the OpenAI and Anthropic skills APIs and as a well-known site.",
    "show": "Show a skill and the version REF resolves to (NAME, NAME@RANGE, skill_ID[@VERSION]).",
    "sign": "Sign a published NAME@VERSION and attach the signature in the registry.",
    "site": "Publish skills where any web server or CDN can serve them (/.well-known/agent-skills/).",
    "unyank": "Make a yanked NAME@VERSION resolvable by ranges again.",
    "validate": "Check skills against the Agent Skills specification.",
    "verify": "Check that REF's version carries a valid signature by one of the keys.",
    "version": "Print the version of the skill at PATH, or set it.",
    "versions": "List every version of a skill, newest first (yanked ones marked).",
    "yank": "Hide NAME@VERSION from ranges and `latest`; exact pins still fetch it.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Every word of the command line (the subcommand's included: click hands the top group
        them all) checked to be text before any command sees it."""
        for arg in args:
            _check_word(arg)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        """The command, with an error from the operating system (a file name too long, a folder
        where a file was named, a full disk) as one line naming the file, exit 1."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            named = isinstance(exc.filename, (str, bytes))  # an error on a descriptor has its number there
            where = f"{_shown(os.fsdecode(exc.filename))}: " if named else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from exc

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, from ``SUMMARIES`` instead of importing every command."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows = []
        for name in names:
            if name in SUMMARIES:
                # a stand-in command carrying the summary: click shortens it as it would the real one
                rows.append((name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"skillctl.cli.{module_name}")
        return getattr(module, attr)


def _shown(text: str, limit: int = 80) -> str:
    """``text`` as it may be printed: at most ``limit`` characters, undecodable ones escaped."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return cut.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_word(arg: str) -> None:
    # A NUL cannot come from a shell (argv is NUL-terminated) but can from a caller in-process;
    # a lone surrogate is how Python hands over bytes that are not UTF-8. Either would surface
    # deep in a command as a ValueError or UnicodeEncodeError: refuse them here, in one line.
    if "\x00" in arg:
        shown = _shown(arg.replace("\x00", "\\0"))
        raise click.UsageError(f"'{shown}' holds a NUL byte, which no name, path or value may hold")
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        raise click.UsageError(f"'{_shown(arg)}' is not valid UTF-8; skillctl takes names, paths and values as UTF-8 text "
                               "(rename the file, or check the terminal's locale)") from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skillctl")
def cli() -> None:
    """Package manager and runtime for agent skills.

    Author skills as folders with a SKILL.md, validate and pack them into reproducible bundles,
    publish them to a registry, and run an agent that uses them inside a hardened container.
    """


def main(argv: list[str] | None = None) -> None:
    """Console entry point: expected failures become one line on stderr and exit 1."""
    try:
        cli.main(args=argv, prog_name="skillctl", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except SkillctlError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
