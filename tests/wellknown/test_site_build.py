"""``build_site``: the layout, schema-valid documents, reproducible bytes, immutable snapshots."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from skillctl.errors import RegistryError
from skillctl.registry.local import LocalRegistry
from skillctl.registry.wellknown.format import SCHEMA_URI, schema_errors
from skillctl.registry.wellknown.site import SiteBuilder, build_index, build_site, build_site_from_folders

from registry.helpers import write_skill

from .conftest import WK, publish


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def doc(path: Path):
    return json.loads(path.read_text("utf-8"))


def test_layout_is_the_documented_one(site_dir: Path):
    assert sorted(files_of(site_dir)) == [
        f"{WK}/index.json",
        f"{WK}/note/v0.1.0/SKILL.md",
        f"{WK}/note/v0.1.0/index.json",
        f"{WK}/note/versions.json",
        f"{WK}/tally/v1.0.0/index.json",
        f"{WK}/tally/v1.0.0/tally.tar.gz",
        f"{WK}/tally/v1.1.0/index.json",
        f"{WK}/tally/v1.1.0/tally.tar.gz",
        f"{WK}/tally/v2.0.0-beta.1/index.json",
        f"{WK}/tally/v2.0.0-beta.1/tally.tar.gz",
        f"{WK}/tally/versions.json",
    ]


def test_latest_index_lists_newest_release_with_digest_of_the_served_bytes(site_dir: Path):
    index = doc(site_dir / WK / "index.json")
    assert index["$schema"] == SCHEMA_URI and schema_errors(index) == []
    by_name = {e["name"]: e for e in index["skills"]}
    assert [e["name"] for e in index["skills"]] == ["note", "tally"]
    tally = by_name["tally"]
    assert tally["version"] == "1.1.0" and tally["type"] == "archive"  # the pre-release is not "latest"
    assert tally["url"] == "tally/v1.1.0/tally.tar.gz"
    served = (site_dir / WK / tally["url"]).read_bytes()
    assert tally["digest"] == "sha256:" + hashlib.sha256(served).hexdigest()
    note = by_name["note"]
    assert note["type"] == "skill-md" and note["url"] == "note/v0.1.0/SKILL.md"
    assert note["digest"] == "sha256:" + hashlib.sha256((site_dir / WK / note["url"]).read_bytes()).hexdigest()


def test_snapshots_list_one_version_with_a_relative_url(site_dir: Path):
    for version in ("1.0.0", "1.1.0", "2.0.0-beta.1"):
        snap = doc(site_dir / WK / f"tally/v{version}/index.json")
        assert schema_errors(snap) == []
        assert [(e["name"], e["version"], e["url"]) for e in snap["skills"]] == [("tally", version, "tally.tar.gz")]
    assert doc(site_dir / WK / "tally/versions.json") == {"latest": "1.1.0", "versions": ["1.0.0", "1.1.0", "2.0.0-beta.1"], "yanked": []}


def test_archives_hold_the_files_at_the_root(site_dir: Path):
    with tarfile.open(fileobj=io.BytesIO((site_dir / WK / "tally/v1.1.0/tally.tar.gz").read_bytes())) as tf:
        members = {m.name: m for m in tf.getmembers()}
    assert sorted(members) == ["SKILL.md", "scripts", "scripts/run.sh"]
    assert members["scripts/run.sh"].mode == 0o755 and members["SKILL.md"].mode == 0o644
    assert all(m.mtime == 315_532_800 and m.uid == 0 and m.uname == "" for m in members.values())


def test_rebuilding_an_unchanged_registry_changes_no_byte(tmp_path: Path, source: LocalRegistry, site_dir: Path):
    before = files_of(site_dir)
    stamps = {p: p.stat().st_mtime_ns for p in site_dir.rglob("*") if p.is_file()}
    report = build_site(site_dir, source)
    assert report.written == () and report.unchanged == len(before)
    assert files_of(site_dir) == before
    assert {p: p.stat().st_mtime_ns for p in site_dir.rglob("*") if p.is_file()} == stamps  # not even rewritten
    fresh = tmp_path / "again"
    build_site(fresh, source)
    assert files_of(fresh) == before  # reproducible from scratch too


def test_a_new_version_only_adds_files_and_updates_the_mutable_two(tmp_path: Path, source: LocalRegistry, site_dir: Path):
    before = files_of(site_dir)
    publish(source, tmp_path / "src", "tally", "1.2.0")
    report = build_site(site_dir, source)
    after = files_of(site_dir)
    changed = {p for p in before if after[p] != before[p]}
    assert changed == {f"{WK}/index.json", f"{WK}/tally/versions.json"}
    assert set(after) - set(before) == {f"{WK}/tally/v1.2.0/index.json", f"{WK}/tally/v1.2.0/tally.tar.gz"}
    assert set(report.written) == changed | (set(after) - set(before))
    assert {e["name"]: e["version"] for e in doc(site_dir / WK / "index.json")["skills"]}["tally"] == "1.2.0"


def test_yanked_versions_leave_the_index_but_keep_their_snapshot(source: LocalRegistry, site_dir: Path):
    source.set_yanked("tally@1.1.0", True, "broken")
    build_site(site_dir, source)
    assert {e["name"]: e["version"] for e in doc(site_dir / WK / "index.json")["skills"]}["tally"] == "1.0.0"
    assert doc(site_dir / WK / "tally/versions.json")["yanked"] == ["1.1.0"]
    assert (site_dir / WK / "tally/v1.1.0/tally.tar.gz").exists()


def test_a_skill_with_every_version_yanked_is_left_out_of_the_index(source: LocalRegistry, site_dir: Path):
    source.set_yanked("note@0.1.0", True)
    build_site(site_dir, source)
    assert [e["name"] for e in doc(site_dir / WK / "index.json")["skills"]] == ["tally"]
    assert doc(site_dir / WK / "note/versions.json") == {"latest": None, "versions": ["0.1.0"], "yanked": ["0.1.0"]}


def test_base_url_makes_latest_urls_absolute_and_leaves_snapshots_relative(tmp_path: Path, source: LocalRegistry):
    out = tmp_path / "abs"
    build_site(out, source, base_url="https://skills.example.com/team/")
    urls = {e["name"]: e["url"] for e in doc(out / WK / "index.json")["skills"]}
    assert urls["tally"] == f"https://skills.example.com/team/{WK}/tally/v1.1.0/tally.tar.gz"
    assert doc(out / WK / "tally/v1.1.0/index.json")["skills"][0]["url"] == "tally.tar.gz"


@pytest.mark.parametrize("bad", ["ftp://x", "skills.example.com", "https://x/?q=1"])
def test_base_url_must_be_http_without_query(tmp_path: Path, source: LocalRegistry, bad: str):
    with pytest.raises(RegistryError, match="--base-url"):
        build_site(tmp_path / "o", source, base_url=bad)


def test_library_index_equals_the_written_one_and_files_need_no_folder(source: LocalRegistry, site_dir: Path):
    assert build_index(source) == doc(site_dir / WK / "index.json")
    served = {f.path: f.data for f in SiteBuilder(source).files()}
    assert served == files_of(site_dir)
    types = {f.path.rsplit(".", 1)[-1]: f.content_type for f in SiteBuilder(source).files()}
    assert types == {"json": "application/json", "gz": "application/gzip", "md": "text/markdown; charset=utf-8"}


def test_an_existing_snapshot_that_disagrees_with_the_registry_is_never_rewritten(source: LocalRegistry, site_dir: Path):
    snap = site_dir / WK / "tally/v1.0.0/index.json"
    tampered = doc(snap)
    tampered["skills"][0]["description"] = "Something else entirely."
    snap.write_text(json.dumps(tampered))
    with pytest.raises(RegistryError, match="immutable"):
        build_site(site_dir, source)
    assert doc(snap)["skills"][0]["description"] == "Something else entirely."


def test_an_existing_snapshot_whose_artifact_changed_is_refused(source: LocalRegistry, site_dir: Path):
    art = site_dir / WK / "tally/v1.0.0/tally.tar.gz"
    art.write_bytes(art.read_bytes() + b"\0")
    with pytest.raises(RegistryError, match="does not match its snapshot's digest"):
        build_site(site_dir, source)


def test_an_artifact_left_without_its_index_by_an_interrupted_build_is_replaced(source: LocalRegistry, site_dir: Path):
    expected = files_of(site_dir)
    (site_dir / WK / "tally/v1.1.0/index.json").unlink()
    (site_dir / WK / "tally/v1.1.0/tally.tar.gz").write_bytes(b"half written")
    build_site(site_dir, source)
    assert files_of(site_dir) == expected


def test_building_from_folders_keeps_versions_published_earlier(tmp_path: Path):
    out = tmp_path / "site"
    first = write_skill(tmp_path / "v1", "greet", "1.0.0")
    build_site_from_folders(out, [first])
    second = write_skill(tmp_path / "v2", "greet", "1.1.0", body="# Greet\n\nNew.\n")
    report = build_site_from_folders(out, [second])
    assert doc(out / WK / "greet/versions.json")["versions"] == ["1.0.0", "1.1.0"]
    assert (out / WK / "greet/v1.0.0/greet.tar.gz").exists()
    assert {e["version"] for e in doc(out / WK / "index.json")["skills"]} == {"1.1.0"}
    assert f"{WK}/greet/v1.0.0/index.json" not in report.written
