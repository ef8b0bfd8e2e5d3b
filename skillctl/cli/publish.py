"""``skillctl publish``: skill folders and bundles into the registry, with ``--dry-run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skillctl.cli.common import emit_json, exclude_option, format_option, library_errors, open_registry_for_cli, progress, registry_opener, registry_option
from skillctl.cli.dry_run import about, show_plan
from skillctl.cli.profile_option import profile_option
from skillctl.errors import NoRegistryError, SkillctlError

# More skills than this, found by searching a folder that is no project, need --yes: a slip such
# as `publish /tmp` found 282 skills in unrelated folders and published them all.
UNCONFIRMED_SEARCH_LIMIT = 20


def _is_project(folder: Path) -> bool:
    """A folder a team keeps skills in: it has a skills.yaml, or it is inside a git repository."""
    folder = folder.resolve()
    return (folder / "skills.yaml").is_file() or any((d / ".git").exists() for d in (folder, *folder.parents))


def publish_inputs(paths: tuple[Path, ...], exclude: tuple[str, ...] = (), *, confirmed: bool = True) -> list[Path]:
    """Bundle files as given; folders expanded to the skills they hold. Unless ``confirmed``, a
    search of a folder that is no project finding more than ``UNCONFIRMED_SEARCH_LIMIT`` skills
    is refused before anything is read."""
    from skillctl.cli.pack import skill_folders

    out: list[Path] = []
    for p in paths:
        if p.is_file() and p.name != "SKILL.md":
            out.append(p)
            continue
        found = skill_folders((p,), exclude)
        searched = p.is_dir() and not (p / "SKILL.md").exists()
        if not confirmed and searched and len(found) > UNCONFIRMED_SEARCH_LIMIT and not _is_project(p):
            raise click.ClickException(
                f"{p}: the search found {len(found)} skills, and {p} is not a project (no skills.yaml, not in a git "
                f"repository); see them with --dry-run, then publish them all with --yes, or name the skill folders"
            )
        out += found
    return out


def _open_for_dry_run(registry_url: str | None):
    """The registry to compare with and its URL; None for a folder registry not there yet."""
    try:
        reg = registry_opener(registry_url)()
    except NoRegistryError as exc:
        return None, exc.path
    return reg, reg.url


@click.command("publish")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--version", "version", help="Version to publish as, when SKILL.md has no metadata.version.")
@click.option("--sign", "sign_key", type=click.Path(dir_okay=False, path_type=Path), metavar="NAME.key",
              help="Sign each published version with this private key (see skillctl sign).")
@click.option("--dry-run", is_flag=True,
              help="Write nothing: list each skill with its version, files, sizes and digests, and whether it is new, "
              "unchanged or refused (and why).")
@click.option("--yes", is_flag=True,
              help=f"Publish every skill a search finds, even more than {UNCONFIRMED_SEARCH_LIMIT} in a folder that is not a "
              "project (no skills.yaml, not in a git repository).")
@profile_option
@exclude_option
@registry_option
@format_option
@library_errors
def publish(paths: tuple[Path, ...], version: str | None, sign_key: Path | None, dry_run: bool, yes: bool, profile: str,
            exclude: tuple[str, ...], registry_url: str | None, fmt: str) -> None:
    """Publish skill folders or .skill.tgz bundles to the registry.

    Folders are validated (--profile: with a client's documented fields) and packed on the
    fly; a folder of many skills publishes each one (found as `validate` finds them; --exclude
    leaves folders out). More than 20 skills found in a folder that is not a project (no
    skills.yaml, not in a git repository) need --yes. Publishing identical content again is a
    no-op ("unchanged"), so publishing a whole repository publishes exactly what changed. A
    version is immutable: other content under an existing version is refused — bump the
    version (skillctl version PATH patch). A registry folder that does not exist yet is created
    (and said so on stderr). One line per skill, then a summary.

    --dry-run writes nothing at all (no registry is created) and lists what would happen.

    With --sign, each version (also an unchanged one) gets a signed attestation: a DSSE envelope
    with an in-toto statement naming the bundle, the git repository and commit of its folder,
    and the audit summary.
    """
    from skillctl.registry.plan import plan_publish, prepare_each

    inputs = publish_inputs(paths, exclude, confirmed=yes or dry_run)
    if dry_run:
        reg, url = _open_for_dry_run(registry_url)
        if reg is None and fmt == "text":
            progress(f"no registry at {url} yet: publish would create it")
        try:
            planned = plan_publish(prepare_each(inputs, version=version, profile=profile), reg)
            show_plan(planned, fmt, {"registry": url, "registry_exists": reg is not None})
        finally:
            if reg is not None:
                reg.close()  # the index's -wal file goes with its last connection: a dry run leaves no trace
        return
    key = None
    if sign_key is not None:  # a bad key is refused before anything is published
        from skillctl.trust.keys import load_signing_key

        key = load_signing_key(sign_key)
    reg = None  # opened (and, when missing, created) once a skill is ready to go in
    entries: list[dict[str, Any]] = []  # in input order, failures too (JSON lists both)
    results: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for path, prepared in prepare_each(inputs, version=version, profile=profile):
        try:
            if isinstance(prepared, SkillctlError):
                raise prepared
            if reg is None:
                reg = open_registry_for_cli(registry_url, create=True)
            res = reg.publish(prepared)
            signed = _sign_published(reg, res.record, key, prepared.data, path) if key is not None else None
        except SkillctlError as exc:
            known = {} if isinstance(prepared, SkillctlError) else {"name": prepared.name, "version": prepared.version}
            failed.append({"status": "failed", "source": str(path), **known, "error": str(exc)})
            entries.append(failed[-1])
            if len(inputs) > 1:
                click.echo(f"{'failed':<9} {about(str(path), str(exc))}", err=True)
            continue
        results.append({**res.to_dict(), **({"signature": signed.to_dict()} if signed else {})})
        entries.append(results[-1])
        if fmt == "text":
            click.echo(f"{res.status:<9} {res.record.name}@{res.record.version}  {res.record.digest}  ({res.record.skill_id})")
            if signed:
                from skillctl.cli.trust import signed_line

                click.echo(signed_line(signed))
    if fmt == "json":
        emit_json(entries)
    if len(inputs) == 1 and failed:  # one input: its error is the one line, no summary needed
        raise click.ClickException(about(failed[0]["source"], failed[0]["error"]))
    counts = ", ".join(f"{sum(r['status'] == s for r in results)} {s}" for s in ("published", "unchanged"))
    into = f" in {reg.url}" if reg is not None else ""
    if failed:
        raise click.ClickException(f"{len(failed)} of {len(inputs)} could not be published (see above); {counts}{into}")
    if fmt == "text":
        progress(f"{counts}{into}" if inputs else "no skills found: nothing was published")


def _sign_published(reg, record, key, data: bytes, path: Path):
    from skillctl.trust.sign import sign_version

    return sign_version(reg, record, key, data=data, source_folder=path if path.is_dir() else None)
