"""The ``skillctl`` command line: thin commands over the library.

Commands are listed in ``COMMANDS`` and imported only when used, so ``skillctl validate`` does
not pay for importing the Docker SDK or the OpenAI client. ``SUMMARIES`` holds each command's
one-line summary (the first paragraph of its help), so ``skillctl --help`` imports no command
module at all; a command missing there is asked for its summary, which costs its import.
``tests/test_cli_help.py`` keeps the two in step.
"""

from __future__ import annotations

import importlib
import sys

import click

from skillctl import __version__
from skillctl.errors import SkillctlError

# command name -> "module:attribute" (module relative to skillctl.cli)
COMMANDS: dict[str, str] = {
    "validate": "validate:validate",
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
    "remove": "registry_cmds:remove",
    "registry": "registry_admin:registry_group",
    "lock": "lock:lock_cmd",
    "install": "lock:install_cmd",
    "image": "image:image",
    "env": "env:env_group",
    "run": "run:run_cmd",
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
}


SUMMARIES: dict[str, str] = {
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
    "install": "Install the locked skills into a folder, verifying every digest.",
    "key": "Signing keys (Ed25519).",
    "lint": "Alias of `validate`.",
    "list": "List the skills in the registry with their default and latest versions.",
    "lock": "Resolve skills.yaml's ranges to exact versions and digests in skills.lock.",
    "memory": "Long-term memories: folders a run mounts at /memory with `skillctl run --memory NAME`.",
    "pack": "Validate and pack skills into reproducible NAME-VERSION.skill.tgz bundles.",
    "publish": "Publish skill folders or .skill.tgz bundles to the registry.",
    "pull": "Fetch a skill version, verify its digest and unpack it safely into OUT/NAME/.",
    "registry": "Make and maintain a registry (create an empty one, verify integrity, collect garbage, rebuild a lost index).",
    "remove": "Delete NAME@VERSION — only if it was never fetched or locked.",
    "run": "Run an agent on TASK with the given skills loaded into a sandbox.",
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
