"""``skillctl copy``: mirror skill versions between registries, digests preserved."""

from __future__ import annotations

import click

from skillctl.cli.common import (
    checked_registry_url,
    emit_json,
    format_option,
    given_access,
    library_errors,
    open_registry_for_cli,
    registry_access_options,
)
from skillctl.words import count


@click.command("copy")
@click.argument("ref")
@click.option("--from", "src_url", required=True, metavar="URL", callback=checked_registry_url, help="Source registry: a folder path, oci://HOST[:PORT]/NAMESPACE or https://HOST (a skills site).")
@click.option("--to", "dst_url", required=True, metavar="URL", callback=checked_registry_url, help="Target registry: a folder path or oci://HOST[:PORT]/NAMESPACE.")
@click.option("--pre", "prereleases", is_flag=True, help="Let a range in REF match pre-releases.")
@registry_access_options
@format_option
@library_errors
def copy_cmd(ref: str, src_url: str, dst_url: str, prereleases: bool, fmt: str) -> None:
    """Copy REF from one registry to another, both ways between a folder and an OCI registry.

    REF without a version (NAME or skill_ID) copies every version, yanked ones included; NAME@VERSION
    or NAME@RANGE copies one. Bundles are copied byte for byte, so digests (and skills.lock files)
    stay valid; running it again changes nothing. A version the target holds with other content
    is reported and never overwritten. --insecure and credentials apply to every oci:// registry,
    --token-stdin to the https:// site.
    """
    from skillctl.registry.mirror import copy_skills

    def is_site(url: str) -> bool:
        return url.startswith(("https://", "http://"))

    if given_access().get("token") and not (is_site(src_url) or is_site(dst_url)):
        raise click.UsageError("--token-stdin is the key of a well-known site (https://HOST), and neither --from nor --to is one")
    # The key is for the site side; token=None keeps it from the other side, which would refuse it.
    # Only the target may be made new (and the command says so); a missing source is an error.
    source = open_registry_for_cli(src_url, origin="--from", **({} if is_site(src_url) else {"token": None}))
    target = open_registry_for_cli(dst_url, create=True, **({} if is_site(dst_url) else {"token": None}))

    def show(res) -> None:
        if fmt == "text":
            line = f"{res.status:<9} {res.name}@{res.version}  {res.digest}{'  (yanked)' if res.yanked else ''}"
            click.echo(line if res.status != "failed" else f"{line}\n  error: {res.error}", err=res.status == "failed")

    results = copy_skills(ref, source, target, prereleases=prereleases, progress=show)
    if fmt == "json":
        emit_json([r.to_dict() for r in results])
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise click.ClickException(f"{len(failed)} of {count(len(results), 'version')} could not be copied to {target.url} (see above)")
