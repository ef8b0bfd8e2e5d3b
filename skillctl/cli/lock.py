"""``skillctl lock`` and ``skillctl install``."""

from __future__ import annotations

from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option
from skillctl.errors import LockError
from skillctl.registry.lockfile import LOCK_FILE, REQUIREMENTS_FILE, install, load_requirements, read_lock, resolve_lock, write_atomic

_req_opt = click.option("--requirements", "req_path", type=click.Path(dir_okay=False, path_type=Path), default=Path(REQUIREMENTS_FILE), show_default=True, help="Declared skills and ranges.")
_lock_opt = click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=Path(LOCK_FILE), show_default=True, help="Lockfile.")


@click.command("lock")
@_req_opt
@_lock_opt
@registry_option
@format_option
@library_errors
def lock_cmd(req_path: Path, lock_path: Path, registry_url: str | None, fmt: str) -> None:
    """Resolve skills.yaml's ranges to exact versions and digests in skills.lock."""
    req = load_requirements(req_path)
    reg = open_registry_for_cli(registry_url)
    lock = resolve_lock(req, reg, progress=progress)
    write_atomic(lock_path, lock.to_json())
    if fmt == "json":
        emit_json({"lock": str(lock_path), "skills": [{"name": s.name, **s.to_dict()} for s in lock.skills]})
    else:
        click.echo(f"wrote {lock_path} ({len(lock.skills)} skill{'s' * (len(lock.skills) != 1)})")


@click.command("install")
@_req_opt
@_lock_opt
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".agents/skills"), show_default=True, help="Folder to install skills into (OUT/NAME/).")
@click.option("--frozen", is_flag=True, help="Install exactly what skills.lock says; fail if it is missing or stale.")
@registry_option
@format_option
@library_errors
def install_cmd(req_path: Path, lock_path: Path, out_dir: Path, frozen: bool, registry_url: str | None, fmt: str) -> None:
    """Install the locked skills into a folder, verifying every digest.

    Without --frozen a missing or stale lock is (re)created first. With --frozen the lock must
    exist and match skills.yaml (when present); nothing is re-resolved.
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
            lock = resolve_lock(req, reg, progress=progress)
            write_atomic(lock_path, lock.to_json())
    folders = install(lock, reg, out_dir, progress=progress)
    if fmt == "json":
        emit_json([{"name": s.name, "version": s.version, "digest": s.digest, "path": str(f)} for s, f in zip(sorted(lock.skills, key=lambda s: s.name), folders)])
    else:
        click.echo(f"installed {len(folders)} skill{'s' * (len(folders) != 1)} into {out_dir}")
