"""``skillctl lock`` and ``skillctl install``."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option
from skillctl.errors import LockError
from skillctl.registry.lockfile import LOCK_FILE, REQUIREMENTS_FILE, install, load_requirements, read_lock, resolve_lock, write_atomic

_req_opt = click.option("--requirements", "req_path", type=click.Path(dir_okay=False, path_type=Path), default=Path(REQUIREMENTS_FILE), show_default=True, help="Declared skills and ranges.")
_env_opts = [
    click.option("--index-url", "index", envvar="SKILLCTL_INDEX_URL", metavar="URL", help="Package index for the skills' declared requirements. Env: SKILLCTL_INDEX_URL (else UV_INDEX_URL, PIP_INDEX_URL, PyPI)."),
    click.option("--allow-sdist", is_flag=True, help="Accept source distributions where no wheel fits (built in a throwaway container, never here)."),
    click.option("--image", metavar="IMAGE", help="Agent image whose Python the environment is resolved for (default: the one `skillctl image build` makes)."),
]


def env_options(f):
    for opt in reversed(_env_opts):
        f = opt(f)
    return f


def _lock_with_environment(lock, reg, lock_path: Path, index, allow_sdist, image):
    """The lock plus its resolved environment (pylock written beside it), when anything is declared."""
    import dataclasses

    from skillctl.env.prepare import lock_environment
    from skillctl.sandbox.image import ensure_image

    section = lock_environment(lock, reg, lock_path, base_image=image or ensure_image(progress=progress), index=index,
                               allow_sdist=allow_sdist, progress=progress) if _declares_anything(lock, reg) else None
    return dataclasses.replace(lock, environment=section)


def _declares_anything(lock, reg) -> bool:
    from skillctl.env.prepare import declarations_of

    if lock.requirements.environment:
        return True
    return not declarations_of([s.as_resolved() for s in lock.skills], reg).empty


def _resolve(req, req_path: Path, reg):
    """The lock for ``req``; under a trust policy every version must pass it first."""
    from skillctl.trust.enforce import gate_for_requirements

    gate = gate_for_requirements(req, req_path.parent, where=str(req_path), progress=progress)
    return resolve_lock(req, reg, progress=progress, gate=gate)


_lock_opt = click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=Path(LOCK_FILE), show_default=True, help="Lockfile.")


@click.command("lock")
@_req_opt
@_lock_opt
@env_options
@registry_option
@format_option
@library_errors
def lock_cmd(req_path: Path, lock_path: Path, index, allow_sdist, image, registry_url: str | None, fmt: str) -> None:
    """Resolve skills.yaml's ranges to exact versions and digests in skills.lock.

    When the skills (PEP 723 blocks, requirements.txt) or skills.yaml's `environment:` declare
    packages, the environment is resolved too: pylock.skills.toml beside the lock (pinned there
    by digest) and the Debian packages with their sha256 in the lock's `environment` section.
    """
    req = load_requirements(req_path)
    reg = open_registry_for_cli(registry_url)
    lock = _lock_with_environment(_resolve(req, req_path, reg), reg, lock_path, index, allow_sdist, image)
    write_atomic(lock_path, lock.to_json())
    if fmt == "json":
        emit_json({"lock": str(lock_path), "skills": [{"name": s.name, **s.to_dict()} for s in lock.skills],
                   "environment": lock.environment})
    else:
        env = " with its environment" if lock.environment else ""
        click.echo(f"wrote {lock_path} ({len(lock.skills)} skill{'s' * (len(lock.skills) != 1)}{env})")


@click.command("install")
@_req_opt
@_lock_opt
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".agents/skills"), show_default=True, help="Folder to install skills into (OUT/NAME/).")
@click.option("--frozen", is_flag=True, help="Install exactly what skills.lock says; fail if it is missing or stale.")
@env_options
@registry_option
@format_option
@library_errors
def install_cmd(req_path: Path, lock_path: Path, out_dir: Path, frozen: bool, index, allow_sdist, image, registry_url: str | None, fmt: str) -> None:
    """Install the locked skills into a folder, verifying every digest.

    Without --frozen a missing or stale lock is (re)created first. With --frozen the lock must
    exist and match skills.yaml (when present); nothing is re-resolved. A locked environment's
    files are downloaded (or re-hashed) too, each checked against its pinned sha256, so a later
    `run --lock` needs no network.

    Under a trust policy (skills.yaml `trust:`), every version must still be signed by the key
    the lock recorded and pass the audit threshold; one refused version installs nothing.
    """
    reg = open_registry_for_cli(registry_url)
    if frozen:
        if not lock_path.exists():
            raise LockError(f"--frozen: {lock_path} does not exist; run skillctl lock first")
        lock = read_lock(lock_path)
        if req_path.exists() and lock.is_stale(load_requirements(req_path)):
            raise LockError(f"--frozen: {lock_path} is stale ({req_path} changed since it was written); run skillctl lock")
    else:
        req = load_requirements(req_path)
        lock = read_lock(lock_path) if lock_path.exists() else None
        if lock is None or lock.is_stale(req):
            progress(f"{'creating' if lock is None else 'updating stale'} {lock_path}")
            lock = _lock_with_environment(_resolve(req, req_path, reg), reg, lock_path, index, allow_sdist, image)
            write_atomic(lock_path, lock.to_json())
    from skillctl.env.prepare import locked_environment
    from skillctl.trust.enforce import check_lock

    # Before anything else is downloaded or written: the lock's trust policy, on every version.
    base = req_path.parent if req_path.exists() else lock_path.parent
    checked = check_lock(lock, reg, base, where=str(req_path if req_path.exists() else lock_path), progress=progress)
    locked_environment(lock, lock_path, progress=progress, fetch=True)
    folders = install(lock, reg, out_dir, progress=progress, fetched=checked)
    if fmt == "json":
        emit_json([{"name": s.name, "version": s.version, "digest": s.digest, "path": str(f)} for s, f in zip(sorted(lock.skills, key=lambda s: s.name), folders)])
    else:
        click.echo(f"installed {len(folders)} skill{'s' * (len(folders) != 1)} into {out_dir}")
