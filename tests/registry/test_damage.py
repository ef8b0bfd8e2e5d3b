"""A damaged registry folder, damaged by the tests themselves: the index deleted, emptied or torn
inside, blobs replaced by a link to /dev/zero, a FIFO, a folder or a file far larger than
recorded. Every command answers in one line and nothing is deleted because of the damage;
``registry verify`` reports it (exit 1); ``registry rebuild-index`` rebuilds what the blobs
can tell and says what they cannot."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillctl.cli import cli
from skillctl.errors import RegistryError
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder

from .helpers import prepared, run_cli, tree, write_skill

GiB = 1024 ** 3


def cli_run(*args: object) -> Result:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def one_line_failure(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1, result.output
    return result.output


def blob_names(reg_path: Path) -> set[str]:
    return {p.name for p in (reg_path / "blobs" / "sha256").iterdir()}


def populate(reg_path: Path, tmp_path: Path) -> dict[str, str]:
    """demo 1.0.0, 1.1.0 (yanked), 2.0.0-rc.1 and other 0.1.0: version -> digest."""
    reg = LocalRegistry(reg_path)
    out = {}
    for name, version in (("demo", "1.0.0"), ("demo", "1.1.0"), ("demo", "2.0.0-rc.1"), ("other", "0.1.0")):
        out[f"{name}@{version}"] = reg.publish(prepared(tmp_path, name, version)).record.digest
    reg.set_yanked("demo@1.1.0", True, "broken")
    reg.close()
    return out


def drop_index(reg_path: Path, how: str) -> None:
    for suffix in ("-wal", "-shm"):
        (reg_path / f"index.sqlite{suffix}").unlink(missing_ok=True)
    if how == "missing":
        (reg_path / "index.sqlite").unlink()
    else:
        (reg_path / "index.sqlite").write_bytes(b"")


def tear_pages(reg_path: Path, first: int = 2, count: int | None = None) -> None:
    """Garbage over ``count`` pages from page ``first`` (default: every page but the first, so
    the header and the schema still read and the rows do not)."""
    index = reg_path / "index.sqlite"
    conn = sqlite3.connect(index)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    for suffix in ("-wal", "-shm"):
        (reg_path / f"index.sqlite{suffix}").unlink(missing_ok=True)
    data = bytearray(index.read_bytes())
    start = (first - 1) * page
    end = len(data) if count is None else start + count * page
    assert len(data) >= end > start, "too small an index to tear"
    data[start:end] = bytes((i * 7 + 13) % 251 for i in range(end - start))
    index.write_bytes(bytes(data))


def root_page(reg_path: Path, name: str) -> int:
    conn = sqlite3.connect(reg_path / "index.sqlite")
    try:
        return conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


# ------------------------------------------------------------------ a lost or empty index


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_a_lost_index_is_damage_not_an_empty_registry(tmp_path: Path, how: str) -> None:
    reg_path = tmp_path / "registry"
    populate(reg_path, tmp_path)
    blobs = blob_names(reg_path)
    drop_index(reg_path, how)
    folder = write_skill(tmp_path / "src", "fresh", "1.0.0")
    for args in (["list"], ["versions", "demo"], ["show", "demo"], ["pull", "demo", "-o", tmp_path / "out"], ["publish", folder]):
        text = one_line_failure(cli_run(*args, "--registry", reg_path))
        assert f"registry {reg_path} is damaged: {reg_path / 'index.sqlite'} is unusable" in text
        assert f"skillctl registry rebuild-index --registry {reg_path}" in text

    result = cli_run("registry", "verify", "--registry", reg_path, "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and report["problems"][0]["kind"] == "index"
    assert "is damaged" in report["problems"][0]["message"]
    assert not [p for p in report["problems"] if p["kind"] == "orphan"]  # nothing is called garbage

    text = one_line_failure(cli_run("registry", "gc", "--grace", "0", "--registry", reg_path))
    assert "is damaged" in text
    assert blob_names(reg_path) == blobs  # gc deleted nothing
    index = reg_path / "index.sqlite"
    assert (not index.exists()) if how == "missing" else index.stat().st_size == 0  # and nothing was "healed" into an empty registry


def test_rebuild_index_recovers_every_version_the_blobs_can_tell(tmp_path: Path) -> None:
    reg_path = tmp_path / "registry"
    digests = populate(reg_path, tmp_path)
    reg = LocalRegistry(reg_path)
    unversioned = prepare_folder(write_skill(tmp_path / "nov", "cli-versioned", None), version="3.0.0")
    reg.publish(unversioned)  # its version lives only in the index
    reg.close()
    junk = os.urandom(2000)
    junk_name = hashlib.sha256(junk).hexdigest()
    (reg_path / "blobs" / "sha256" / junk_name).write_bytes(junk)
    drop_index(reg_path, "missing")

    result = cli_run("registry", "rebuild-index", "--registry", reg_path, "--format", "json")
    assert result.exit_code == 0, result.output
    assert "read 6/6 blobs" in result.stderr  # progress, on stderr
    report = json.loads(result.stdout)
    got = {f"{r['name']}@{r['version']}": r["digest"] for r in report["recovered"]}
    assert got == digests
    lost = {u["blob"]: u for u in report["unrecovered"]}
    assert set(lost) == {unversioned.digest[7:], junk_name}
    assert "no metadata.version" in lost[unversioned.digest[7:]]["reason"]
    assert "not a usable skill bundle" in lost[junk_name]["reason"]
    assert all(u["kept_at"] == f"lost+found/sha256/{u['blob']}" for u in lost.values())
    assert report["old_index"] is None and any("yank state" in x for x in report["not_recoverable"])

    out = tmp_path / "out"
    assert cli_run("pull", "demo@1.0.0", "-o", out, "--registry", reg_path).exit_code == 0
    assert tree(out / "demo") == tree(tmp_path / "src-demo-1.0.0-0" / "demo")
    versions = json.loads(cli_run("versions", "demo", "--registry", reg_path, "--format", "json").output)
    assert [(v["version"], v["yanked"]) for v in versions] == [("2.0.0-rc.1", False), ("1.1.0", False), ("1.0.0", False)]
    assert cli_run("registry", "verify", "--registry", reg_path).exit_code == 0
    assert cli_run("registry", "gc", "--grace", "0", "--registry", reg_path).output.endswith("0 files removed\n")
    assert (reg_path / "lost+found" / "sha256" / junk_name).read_bytes() == junk  # out of gc's reach, not deleted
    text = one_line_failure(cli_run("registry", "remove", "demo@1.0.0", "--yes", "--registry", reg_path))
    assert "yank it instead" in text  # fetch counts are unknown after a rebuild: treated as depended on
    text = one_line_failure(cli_run("registry", "rebuild-index", "--registry", reg_path))
    assert "is healthy" in text and "nothing was changed" in text


def test_rebuild_index_keeps_a_torn_index_for_salvage(tmp_path: Path) -> None:
    reg_path = tmp_path / "registry"
    digests = populate(reg_path, tmp_path)
    tear_pages(reg_path)
    torn = (reg_path / "index.sqlite").read_bytes()
    result = cli_run("registry", "rebuild-index", "--registry", reg_path)
    assert result.exit_code == 0, result.output
    assert "4 versions of 2 skills recovered, 0 blobs not" in result.output
    (aside,) = reg_path.glob("index.sqlite.damaged-*")
    assert aside.read_bytes() == torn and f"the old index is kept as {aside}" in result.output
    with LocalRegistry(reg_path) as reg:
        assert reg.resolve("other").digest == digests["other@0.1.0"]


def test_rebuild_index_is_refused_for_oci_registries() -> None:
    text = one_line_failure(cli_run("registry", "rebuild-index", "--registry", "oci://127.0.0.1:9/ns", "--insecure"))
    assert "only a folder registry has an index for skillctl to rebuild" in text


# ---------------------------------------------------------------- damage inside the index


def test_interior_damage_to_the_index_is_one_line_everywhere(tmp_path: Path) -> None:
    reg_path = tmp_path / "registry"
    populate(reg_path, tmp_path)
    blobs = blob_names(reg_path)
    tear_pages(reg_path)
    folder = write_skill(tmp_path / "src", "fresh", "1.0.0")
    for args in (["list"], ["versions", "demo"], ["show", "demo"], ["pull", "demo", "-o", tmp_path / "out"], ["publish", folder],
                 ["yank", "demo@1.0.0"], ["registry", "gc", "--grace", "0"]):
        text = one_line_failure(cli_run(*args, "--registry", reg_path))
        assert "is damaged" in text and "rebuild-index" in text, (args, text)
    result = cli_run("registry", "verify", "--registry", reg_path)
    assert result.exit_code == 1
    assert result.output.startswith("error: index: ") and "FAILED" in result.output
    assert blob_names(reg_path) == blobs


def test_gc_refuses_when_the_index_fails_its_quick_check(tmp_path: Path) -> None:
    reg_path = tmp_path / "registry"
    populate(reg_path, tmp_path)
    blobs = blob_names(reg_path)
    tear_pages(reg_path, first=root_page(reg_path, "versions_digest"), count=1)  # the index gc would read digests from
    text = one_line_failure(cli_run("registry", "gc", "--grace", "0", "--registry", reg_path))
    assert "refusing to collect garbage" in text or "is damaged" in text
    assert blob_names(reg_path) == blobs


# ------------------------------------------------------------------- hostile blob files


def swap_blob(path: Path, how: str) -> None:
    path.unlink()
    if how == "dev-zero-link":
        os.symlink("/dev/zero", path)
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "directory":
        path.mkdir()
    else:  # a sparse file of 8 GiB: reading it whole would need 8 GiB of memory
        with open(path, "wb") as fh:
            fh.truncate(8 * GiB)


@pytest.mark.parametrize(
    "how, says",
    [
        ("dev-zero-link", "is a symbolic link, not a regular file"),
        ("fifo", "is a FIFO, not a regular file"),
        ("directory", "is a directory, not a regular file"),
        ("huge-sparse", "is larger than its recorded"),
    ],
)
def test_a_blob_replaced_by_a_hostile_file_is_refused_without_reading_it(tmp_path: Path, how: str, says: str) -> None:
    reg_path = tmp_path / "registry"
    digests = populate(reg_path, tmp_path)
    digest = digests["demo@1.0.0"]
    swap_blob(reg_path / "blobs" / "sha256" / digest[7:], how)
    env = {"SKILLCTL_REGISTRY": str(reg_path), "HOME": str(tmp_path)}
    # in a child with 2 GiB of address space: a reader that reads everything fails instead of the
    # machine; one that blocks on the FIFO hits the timeout
    run = lambda *args: run_cli([str(a) for a in args], env=env, cwd=tmp_path, timeout=60, memory_bytes=2 * GiB)  # noqa: E731

    pulled = run("pull", "demo@1.0.0", "-o", tmp_path / "out")
    assert pulled.returncode == 1 and says in pulled.stderr and "Traceback" not in pulled.stderr
    assert pulled.stderr.count("\n") == 1
    verified = run("registry", "verify", "--format", "json")
    assert verified.returncode == 1
    kinds = {p["kind"] for p in json.loads(verified.stdout)["problems"]}
    assert kinds & {"unsafe", "size"}, verified.stdout

    folder = tmp_path / "src-demo-1.0.0-0" / "demo"  # what populate() published as demo@1.0.0
    assert prepare_folder(folder).digest == digest
    published = run("publish", folder)
    if how == "directory":  # not ours to remove: one line, and the registry is unchanged
        assert published.returncode == 1 and "cannot store blob" in published.stderr and "Traceback" not in published.stderr
        return
    assert published.returncode == 0, published.stderr  # a publish of the same bytes repairs the blob
    assert run("pull", "demo@1.0.0", "-o", tmp_path / "out2").returncode == 0
    assert (reg_path / "blobs" / "sha256" / digest[7:]).is_file() and not (reg_path / "blobs" / "sha256" / digest[7:]).is_symlink()
