"""The ``skillctl`` command line: thin commands over the library.

Commands are listed in ``COMMANDS`` and imported only when used, so ``skillctl validate`` does
not pay for importing the Docker SDK or the OpenAI client.
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
    "publish": "registry_cmds:publish",
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
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

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
