"""The well-known backend against a real static server on loopback: resolution, pinning,
verification, caching, the format's rules for unknown schemas and types, TLS."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from tools import require_tool

from skillctl.bundle import read_artifact
from skillctl.errors import IntegrityError, NotFoundError, RegistryError
from skillctl.registry import open_registry
from skillctl.project.registry_lock import fetch_locked, install_locked, lock_skills
from skillctl.registry.wellknown import index_url_for
from skillctl.registry.wellknown.format import SCHEMA_URI

from .conftest import WK
from .server import SiteServer, make_test_ca, reply

SKILL_MD = b"---\nname: {name}\ndescription: {name} from a hand-written site.\n---\n\n# {name}\n"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_index(root: Path, skills: list[dict], *, schema: str | None = SCHEMA_URI, path: str = "index.json") -> Path:
    target = root / WK / path
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = {"skills": skills} if schema is None else {"$schema": schema, "skills": skills}
    target.write_text(json.dumps(doc))
    return target


# --- reading what skillctl publishes --------------------------------------------------------


def test_registry_url_means_the_well_known_index():
    assert index_url_for("https://example.com") == f"https://example.com/{WK}/index.json"
    assert index_url_for("https://example.com/team/") == f"https://example.com/team/{WK}/index.json"
    assert index_url_for("https://cdn.example.com/x/index.json") == "https://cdn.example.com/x/index.json"


def test_list_versions_and_show(server: SiteServer, open_site):
    reg = open_site(server.url)
    assert [(s.name, s.default_version) for s in reg.list_skills()] == [("note", "0.1.0"), ("tally", "1.1.0")]
    assert [(r.version, r.artifact_type) for r in reg.versions("tally")] == [("2.0.0-beta.1", "archive"), ("1.1.0", "archive"), ("1.0.0", "archive")]
    skill = reg.get_skill("tally")
    assert (skill.default_version, skill.latest_version, skill.versions) == ("1.1.0", "2.0.0-beta.1", 3)
    assert reg.get_skill(skill.id).name == "tally"  # ids are stable per site


def test_ranges_prereleases_and_exact_pins(server: SiteServer, open_site):
    reg = open_site(server.url)
    assert reg.resolve("tally").version == "1.1.0"
    assert reg.resolve("tally@~1.0").version == "1.0.0"
    assert reg.resolve("tally@^2.0.0-beta.1").version == "2.0.0-beta.1"
    assert reg.resolve("tally@>=1", prereleases=True).version == "2.0.0-beta.1"
    assert reg.resolve("note@0.1.0").artifact_type == "skill-md"
    with pytest.raises(NotFoundError, match="no version of tally matches"):
        reg.resolve("tally@^3")
    with pytest.raises(NotFoundError, match="no skill 'ghost'"):
        reg.resolve("ghost")


def test_yanked_versions_match_only_exact_pins(source, site_dir: Path, server: SiteServer, open_site):
    from skillctl.registry.wellknown.site import build_site

    source.set_yanked("tally@1.1.0", True)
    build_site(site_dir, source)
    reg = open_site(server.url)
    assert reg.resolve("tally@^1").version == "1.0.0"
    pinned = reg.resolve_record("tally@1.1.0")
    assert pinned.yanked and pinned.version == "1.1.0"


def test_latest_resolves_from_the_index_and_pins_the_immutable_snapshot(server: SiteServer, open_site):
    reg = open_site(server.url)
    rec = reg.resolve("tally")
    assert rec.index_url == f"{server.url}/{WK}/tally/v1.1.0/index.json"
    assert server.requests() == [f"/{WK}/index.json", f"/{WK}/tally/v1.1.0/index.json"]


def test_fetch_verifies_and_unpacks_the_spec_layout(server: SiteServer, open_site, source):
    reg = open_site(server.url)
    rec = reg.resolve("tally@1.0.0")
    data = reg.fetch(rec)
    assert sha(data) == rec.digest
    contents = read_artifact(data, rec.artifact_type, expected_name="tally")
    original = source.resolve("tally@1.0.0")
    from skillctl.bundle import read_bundle

    assert dict(contents.files) == dict(read_bundle(source.fetch(original)).files)


def test_fetch_refuses_bytes_that_do_not_match_the_index(server: SiteServer, site_dir: Path, open_site, tmp_path: Path):
    art = site_dir / WK / "tally/v1.1.0/tally.tar.gz"
    tampered = art.read_bytes()[:-8] + b"tampered"
    art.write_bytes(tampered)
    reg = open_site(server.url)
    with pytest.raises(IntegrityError, match="promises") as caught:
        reg.fetch(reg.resolve("tally"))
    assert "\n" not in str(caught.value) and "nothing was unpacked" in str(caught.value)
    assert not (tmp_path / "cache" / "blobs" / "sha256" / hashlib.sha256(tampered).hexdigest()).exists()  # not cached


def test_artifacts_come_from_the_cache_by_digest(server: SiteServer, open_site):
    first = open_site(server.url)
    first.fetch(first.resolve("tally"))
    server.clear()
    second = open_site(server.url)
    second.fetch(second.resolve("tally"))
    assert f"/{WK}/tally/v1.1.0/tally.tar.gz" not in server.requests()


def test_no_cache_documents_are_revalidated_with_etags(server: SiteServer, open_site):
    open_site(server.url).list_skills()
    server.clear()
    open_site(server.url).list_skills()
    (req,) = [r for r in server.log if r.path.endswith("/index.json")]
    assert req.headers.get("If-None-Match", "").startswith('"')  # asked conditionally: a 304 came back


def test_no_cache_wins_over_max_age(site_dir: Path, open_site):
    with SiteServer(site_dir, cache_control="max-age=3600, no-cache") as srv:
        open_site(srv.url).list_skills()
        srv.clear()
        open_site(srv.url).list_skills()
        assert f"/{WK}/index.json" in srv.requests()  # asked again despite max-age
        assert all(r.headers.get("If-None-Match") for r in srv.log)


def test_a_version_republished_after_resolving_is_refused_at_fetch(server: SiteServer, site_dir: Path, open_site):
    reg = open_site(server.url, cache_dir=False)
    resolved = reg.resolve("tally@1.0.0")
    art = site_dir / WK / "tally/v1.0.0/tally.tar.gz"
    art.write_bytes(art.read_bytes() + b"\0")
    snap = site_dir / WK / "tally/v1.0.0/index.json"
    doc = json.loads(snap.read_text())
    doc["skills"][0]["digest"] = sha(art.read_bytes())
    snap.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError, match="was changed"):
        open_site(server.url, cache_dir=False).fetch(resolved)


def test_max_age_documents_are_not_asked_for_again(site_dir: Path, open_site):
    with SiteServer(site_dir, cache_control="public, max-age=3600") as srv:
        open_site(srv.url).list_skills()
        srv.clear()
        assert [s.name for s in open_site(srv.url).list_skills()] == ["note", "tally"]
        assert srv.requests() == []


def test_no_store_documents_are_not_kept(site_dir: Path, open_site, tmp_path: Path):
    with SiteServer(site_dir, cache_control="no-store") as srv:
        open_site(srv.url).list_skills()
        assert not (tmp_path / "cache" / "documents").exists() or not any((tmp_path / "cache" / "documents").iterdir())


def test_lock_pins_snapshots_and_a_frozen_install_never_reads_the_mutable_index(server: SiteServer, open_site, tmp_path: Path):
    lock = lock_skills({"tally": "^1", "note": "*"}, open_site(server.url))
    by_name = {s.name: s for s in lock.skills}
    assert by_name["tally"].index == f"{server.url}/{WK}/tally/v1.1.0/index.json"
    assert by_name["note"].artifact_type == "skill-md"
    server.clear()
    folders = install_locked(lock, open_site(server.url, cache_dir=False), tmp_path / "out")
    assert [f.name for f in folders] == ["note", "tally"]
    assert f"/{WK}/index.json" not in server.requests()
    assert (tmp_path / "out" / "tally" / "scripts" / "run.sh").stat().st_mode & 0o111


def test_a_frozen_install_refuses_a_snapshot_changed_behind_its_back(server: SiteServer, site_dir: Path, open_site):
    lock = lock_skills({"tally": "^1"}, open_site(server.url))
    snap = site_dir / WK / "tally/v1.1.0/index.json"
    doc = json.loads(snap.read_text())
    doc["skills"][0]["digest"] = sha(b"other")
    snap.write_text(json.dumps(doc))
    with pytest.raises(IntegrityError, match="skills.lock pins"):
        fetch_locked(open_site(server.url, cache_dir=False), lock.skills[0])


def test_write_operations_are_refused_in_one_line(server: SiteServer, open_site):
    reg = open_site(server.url)
    for call in (lambda: reg.publish(None), lambda: reg.set_yanked("tally@1.0.0", True), lambda: reg.remove("tally@1.0.0"), reg.gc):
        with pytest.raises(RegistryError, match="read-only") as caught:
            call()
        assert "\n" not in str(caught.value)


def test_verify_reports_a_damaged_artifact(server: SiteServer, site_dir: Path, open_site):
    reg = open_site(server.url)
    assert reg.verify() == []
    art = site_dir / WK / "tally/v1.0.0/tally.tar.gz"
    art.write_bytes(art.read_bytes() + b"x")
    problems = open_site(server.url).verify()
    assert [p.kind for p in problems] == ["corrupt"] and "tally@1.0.0" in problems[0].message


def test_missing_site_is_one_line(tmp_path: Path, open_site):
    (tmp_path / "empty").mkdir()
    with SiteServer(tmp_path / "empty") as srv:
        with pytest.raises(NotFoundError, match="no skills index at"):
            open_site(srv.url).list_skills()


# --- the format's rules -------------------------------------------------------------------


def test_unknown_schema_is_refused(tmp_path: Path, open_site):
    write_index(tmp_path / "s", [], schema="https://schemas.agentskills.io/discovery/9.0.0/schema.json")
    with SiteServer(tmp_path / "s") as srv, pytest.raises(RegistryError, match="does not know") as caught:
        open_site(srv.url).list_skills()
    assert "9.0.0" in str(caught.value)


def test_absent_schema_is_refused(tmp_path: Path, open_site):
    write_index(tmp_path / "s", [], schema=None)
    with SiteServer(tmp_path / "s") as srv, pytest.raises(RegistryError, match="declares no \\$schema"):
        open_site(srv.url).list_skills()


def test_unknown_types_and_broken_entries_are_skipped_with_a_warning(tmp_path: Path, open_site):
    root = tmp_path / "s"
    md = SKILL_MD.replace(b"{name}", b"plain")
    (root / WK).mkdir(parents=True)
    (root / WK / "plain.md").write_bytes(md)
    good = {"name": "plain", "type": "skill-md", "description": "d", "url": "plain.md", "digest": sha(md)}
    write_index(root, [
        good,
        {"name": "future", "type": "mcp-resource-template", "description": "d", "url": "x", "digest": sha(b"")},
        {"name": "nodigest", "type": "archive", "description": "d", "url": "x.zip"},
        {"name": "local", "type": "archive", "description": "d", "url": "file:///etc/passwd", "digest": sha(b"")},
    ])
    warnings: list[str] = []
    with SiteServer(root) as srv:
        reg = open_site(srv.url, warn=warnings.append)
        assert [s.name for s in reg.list_skills()] == ["plain"]
    assert len(warnings) == 3
    assert "unknown type 'mcp-resource-template'" in warnings[0]
    assert "'digest' is a required property" in warnings[1]
    assert "not http(s)" in warnings[2]


def test_an_index_naming_a_skill_twice_is_refused(tmp_path: Path, open_site):
    entry = {"name": "twice", "type": "skill-md", "description": "d", "url": "a.md", "digest": sha(b"")}
    write_index(tmp_path / "s", [entry, entry])
    with SiteServer(tmp_path / "s") as srv, pytest.raises(RegistryError, match="twice"):
        open_site(srv.url).list_skills()


def test_plain_http_needs_insecure(server: SiteServer):
    with pytest.raises(RegistryError, match="plain http.*--insecure"):
        open_registry(server.url)


# --- interop: a site written by hand in another tool's layout ---------------------------------


def _hand_site(root: Path) -> dict[str, bytes]:
    """index.json at the origin, a .zip (with explicit folder entries), a tar made like
    ``tar -C dir .``, a skill-md entry, a site-wide versions.json with one snapshot, and
    relative, path-absolute and absolute URLs."""
    wk = root / WK
    (wk / "zipped").mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("SKILL.md", SKILL_MD.replace(b"{name}", b"zipped"))
        zf.writestr(zipfile.ZipInfo("scripts/"), b"")
        info = zipfile.ZipInfo("scripts/go.sh")
        info.external_attr = 0o100755 << 16
        info.create_system = 3
        zf.writestr(info, b"#!/bin/sh\necho go\n")
    zipped = buf.getvalue()
    (wk / "zipped" / "zipped.zip").write_bytes(zipped)
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w:gz", format=tarfile.GNU_FORMAT) as tf:
        for name, data in (("./", None), ("./SKILL.md", SKILL_MD.replace(b"{name}", b"tarred")), ("./refs/", None), ("./refs/a.md", b"a\n")):
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    tarred = tbuf.getvalue()
    (root / "cdn").mkdir()
    (root / "cdn" / "tarred.tar.gz").write_bytes(tarred)
    md = SKILL_MD.replace(b"{name}", b"plain")
    (wk / "plain").mkdir()
    (wk / "plain" / "SKILL.md").write_bytes(md)
    write_index(root, [
        {"name": "zipped", "type": "archive", "description": "A zip.", "url": "zipped/zipped.zip", "digest": sha(zipped), "x-extra": 1},
        {"name": "tarred", "type": "archive", "description": "A tar.", "url": "/cdn/tarred.tar.gz", "digest": sha(tarred)},
        {"name": "plain", "type": "skill-md", "description": "Markdown.", "url": f"/{WK}/plain/SKILL.md", "digest": sha(md)},
    ])
    # The format's own versioning example: site-wide versions with one snapshot.
    (wk / "versions.json").write_text(json.dumps({"latest": "0.1.0", "versions": ["0.1.0"]}))
    write_index(root, [{"name": "plain", "version": "0.1.0", "type": "skill-md", "description": "Markdown.",
                        "url": "../plain/SKILL.md", "digest": sha(md)}], path="v0.1.0/index.json")
    return {"zipped": zipped, "tarred": tarred, "plain": md}


def test_a_hand_written_site_in_another_tools_layout_is_consumed(tmp_path: Path, open_site):
    artifacts = _hand_site(tmp_path / "hand")
    with SiteServer(tmp_path / "hand") as srv:
        reg = open_site(srv.url)
        assert [s.name for s in reg.list_skills()] == ["plain", "tarred", "zipped"]
        for name in ("zipped", "tarred", "plain"):
            rec = reg.resolve(name)
            data = reg.fetch(rec)
            assert data == artifacts[name]
            contents = read_artifact(data, rec.artifact_type, expected_name=name)
            assert contents.files["SKILL.md"].startswith(b"---\nname: " + name.encode())
        assert read_artifact(reg.fetch(reg.resolve("zipped")), "archive", expected_name="zipped").executables == {"scripts/go.sh"}
        assert reg.resolve("tarred").version == "0.0.0"  # no version listed: the site's only one
        plain = reg.resolve("plain")  # pinned to the format's site-wide snapshot
        assert plain.version == "0.1.0" and plain.index_url == f"{srv.url}/{WK}/v0.1.0/index.json"


def test_https_with_a_private_ca(tmp_path: Path, site_dir: Path, open_site, monkeypatch: pytest.MonkeyPatch):
    require_tool("openssl")
    ca, cert, key = make_test_ca(tmp_path / "tls")
    with SiteServer(site_dir, tls=(cert, key)) as srv:
        with pytest.raises(RegistryError, match="certificate not trusted.*REQUESTS_CA_BUNDLE"):
            open_site(srv.url, insecure=False).list_skills()
        assert [s.name for s in open_site(srv.url, insecure=False, ca_bundle=str(ca)).list_skills()] == ["note", "tally"]
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))
        reg = open_registry(srv.url)
        assert reg.fetch(reg.resolve("tally"))
        reg.close()


def test_a_lock_reads_the_snapshot_it_recorded_even_when_the_site_moved_on(tmp_path: Path, open_site):
    """The format's site-wide snapshots sit at no predictable per-skill path: only the lock's
    recorded index finds them once the latest index and the version list have changed."""
    _hand_site(tmp_path / "hand")
    with SiteServer(tmp_path / "hand") as srv:
        lock = lock_skills({"plain": "*"}, open_site(srv.url))
        assert lock.skills[0].index == f"{srv.url}/{WK}/v0.1.0/index.json"
        write_index(tmp_path / "hand", [])  # the skill is gone from the latest index
        (tmp_path / "hand" / WK / "versions.json").unlink()
        folders = install_locked(lock, open_site(srv.url, cache_dir=False), tmp_path / "out")
        assert (folders[0] / "SKILL.md").read_bytes().startswith(b"---\nname: plain")
