"""A shared registry folder its readers may not write: they can list, show, versions, pull,
lock and install (and see publish --dry-run refuse), and nothing they do writes to it. Tested for real, not with mode bits the test's root user would
ignore: once as uid 65534 (``setpriv``), once as root on a read-only bind mount of the folder
(``unshare --mount``). Changing the registry is refused in one line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from skillctl.registry.local import LocalRegistry

from .helpers import prepared, run_cli, tree, write_skill

NOBODY = 65534
AS_NOBODY = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """A folder everyone may traverse (pytest's own tmp is root-only) holding a registry that
    root published to and closed, as a team share would be."""
    base = Path(tempfile.mkdtemp(prefix="skillctl-shared-"))
    try:
        base.chmod(0o755)
        reg_path = base / "registry"
        with LocalRegistry(reg_path) as reg:
            for version in ("1.0.0", "1.1.0"):
                reg.publish(prepared(tmp_path, "demo", version))
        for path in [reg_path, *reg_path.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield reg_path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` and the sha256 of its bytes: a reader must change none of it."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def read_everything(reg_path: Path, out: Path, prefix: tuple[str, ...], home: Path) -> None:
    env = {"SKILLCTL_REGISTRY": str(reg_path), "HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    run = lambda *args: run_cli([str(a) for a in args], env=env, cwd=out, prefix=prefix)  # noqa: E731
    listed = run("list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert [(s["name"], s["default_version"]) for s in json.loads(listed.stdout)] == [("demo", "1.1.0")]
    shown = run("show", "demo@1.0.0", "--format", "json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["resolved"]["version"] == "1.0.0", shown.stderr
    versions = run("versions", "demo", "--format", "json")
    assert [v["version"] for v in json.loads(versions.stdout)] == ["1.1.0", "1.0.0"], versions.stderr
    pulled = run("pull", "demo@1.1.0", "-o", out)
    assert pulled.returncode == 0, pulled.stderr
    (out / "skills.yaml").write_text("skills:\n  demo: ^1.0\n")
    locked = run("lock")
    assert locked.returncode == 0, locked.stderr
    installed = run("install", "--frozen", "-o", out / "installed")
    assert installed.returncode == 0 and (out / "installed" / "demo" / "SKILL.md").is_file(), installed.stderr
    planned = run("publish", write_skill(out / "src", "demo", "2.0.0"), "--dry-run", "--format", "json")
    assert planned.returncode == 1 and "would be refused" in planned.stderr, planned.stderr
    [entry] = json.loads(planned.stdout)["skills"]
    assert entry["status"] == "refused" and "cannot be published to" in entry["reason"]
    published = run("publish", write_skill(out / "src", "demo", "2.0.0"))
    assert published.returncode == 1 and published.stderr.count("\n") == 1, published.stderr
    assert "is read-only for this user (list, show, versions and pull work)" in published.stderr
    yanked = run("yank", "demo@1.0.0")
    assert yanked.returncode == 1 and "read-only" in yanked.stderr and "Traceback" not in yanked.stderr
    assert run("key", "generate", out / "reader").returncode == 0
    signed = run("sign", "demo@1.0.0", "--key", out / "reader.key")
    assert signed.returncode == 1 and "read-only" in signed.stderr and "Traceback" not in signed.stderr, signed.stderr


def reader_folders(tmp_path: Path, owner: int) -> tuple[Path, Path]:
    out = Path(tempfile.mkdtemp(prefix="skillctl-reader-"))
    home = out / "home"
    home.mkdir()
    for path in (out, home):
        os.chown(path, owner, owner)
    return out, home


def test_a_user_without_write_permission_reads_the_registry(shared: Path, tmp_path: Path) -> None:
    if not _works([*AS_NOBODY, sys.executable, "-c", "import skillctl"]):
        pytest.skip(f"uid {NOBODY} cannot run {sys.executable} here (a private interpreter folder)")
    before = snapshot(shared)
    out, home = reader_folders(tmp_path, NOBODY)
    try:
        read_everything(shared, out, AS_NOBODY, home)
        assert tree(out / "demo") == tree(tmp_path / "src-demo-1.1.0-0" / "demo")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert snapshot(shared) == before  # not even a fetch counter, a -wal or a -shm file


def test_a_read_only_mount_of_the_registry_reads(shared: Path, tmp_path: Path) -> None:
    ro = f"mount --bind {shared} {shared} && mount -o remount,bind,ro {shared} {shared} && exec \"$@\""
    prefix = ("unshare", "--mount", "sh", "-c", ro, "sh")
    if not _works([*prefix, "true"]):
        pytest.skip("cannot make a read-only bind mount here (needs unshare and mount rights)")
    before = snapshot(shared)
    out, home = reader_folders(tmp_path, 0)
    try:
        read_everything(shared, out, prefix, home)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert snapshot(shared) == before


def test_a_reader_sees_what_a_running_writer_just_published(shared: Path, tmp_path: Path) -> None:
    # While a writer has the registry open, its newest versions may live in index.sqlite-wal:
    # the reader must use the shared WAL, not read the main file as if nothing were pending.
    if not _works([*AS_NOBODY, sys.executable, "-c", "import skillctl"]):
        pytest.skip(f"uid {NOBODY} cannot run {sys.executable} here (a private interpreter folder)")
    out, home = reader_folders(tmp_path, NOBODY)
    writer = LocalRegistry(shared)
    try:
        writer.publish(prepared(tmp_path, "demo", "1.2.0"))
        assert (shared / "index.sqlite-wal").exists()
        for extra in ("index.sqlite-wal", "index.sqlite-shm"):
            (shared / extra).chmod(0o644)
        env = {"SKILLCTL_REGISTRY": str(shared), "HOME": str(home)}
        got = run_cli(["versions", "demo", "--format", "json"], env=env, cwd=out, prefix=AS_NOBODY)
        assert got.returncode == 0, got.stderr
        assert [v["version"] for v in json.loads(got.stdout)] == ["1.2.0", "1.1.0", "1.0.0"]
    finally:
        writer.close()
        shutil.rmtree(out, ignore_errors=True)
