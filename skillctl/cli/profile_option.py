"""``--profile``: the client whose documented front-matter fields a command accepts (validate,
pack, publish), so a skill valid for that client packs and publishes as it validates."""

from __future__ import annotations

import click

from skillctl.skill.profiles import PROFILE_NAMES

profile_option = click.option(
    "--profile",
    type=click.Choice(PROFILE_NAMES),
    default="spec",
    show_default=True,
    envvar="SKILLCTL_PROFILE",
    help="Also accept what this client documents beyond the spec (fields and their types). Env: SKILLCTL_PROFILE.",
)
