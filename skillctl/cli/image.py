"""``skillctl image``: build and inspect the agent image (offline)."""

from __future__ import annotations

import click

from skillctl.cli.common import emit_json, format_option, library_errors, progress


@click.group("image")
def image() -> None:
    """Build and inspect the agent image the sandbox runs.

    The image is built without any registry: a Debian root filesystem is made locally with
    debootstrap (from the apt mirror this machine is configured with), imported, and the
    Dockerfile in container/ is built on top. Building is skipped when an image with the same
    recipe hash exists.
    """


@image.command("build")
@click.option(
    "--base",
    envvar="SKILLCTL_IMAGE_BASE",
    default=None,
    metavar="IMAGE",
    help="Build on this public image instead of a local debootstrap base (needs it present "
    "locally, i.e. registry access to pull it). Env: SKILLCTL_IMAGE_BASE.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the image is up to date.")
@click.option(
    "--mirror",
    envvar="SKILLCTL_DEBIAN_MIRROR",
    default=None,
    metavar="URL",
    help="Debian mirror for debootstrap (default: the one apt is configured with). "
    "Env: SKILLCTL_DEBIAN_MIRROR.",
)
@format_option
@library_errors
def build(base: str | None, force: bool, mirror: str | None, fmt: str) -> None:
    """Build the agent image if it is missing; print its reference."""
    from skillctl.sandbox.image import ensure_image, recipe

    ref = ensure_image(base=base, force=force, mirror=mirror, progress=progress)
    if fmt == "json":
        emit_json({"image": ref, "latest": "skillctl-agent:latest", "recipe": recipe(base).hash})
    else:
        click.echo(ref)


def _status(base: str | None, fmt: str) -> None:
    from skillctl.sandbox.image import image_status

    status = image_status(base=base)
    if fmt == "json":
        emit_json(status)
        return
    state = "built" if status["built"] else "not built (run `skillctl image build`)"
    click.echo(f"{status['image']}: {state}")
    click.echo(f"recipe {status['recipe'][:12]}  base {status['base']}")
    for item in status["images"]:
        mark = "*" if item["current"] else " "
        tags = ", ".join(item["tags"]) or "<untagged>"
        size_mb = item["size"] / 1e6
        click.echo(f"{mark} {item['id'][7:19]}  {size_mb:7.1f} MB  {item['created'][:19]}  {tags}")


_base_option = click.option(
    "--base", envvar="SKILLCTL_IMAGE_BASE", default=None, metavar="IMAGE",
    help="Report for a build on this public base. Env: SKILLCTL_IMAGE_BASE.",
)


@image.command("status", short_help="Show whether the current agent image is built.")
@_base_option
@format_option
@library_errors
def status(base: str | None, fmt: str) -> None:
    """Is the image for the current recipe built? Lists skillctl images (* = current)."""
    _status(base, fmt)


@image.command("ls")
@_base_option
@format_option
@library_errors
def ls(base: str | None, fmt: str) -> None:
    """Same as `status`."""
    _status(base, fmt)
