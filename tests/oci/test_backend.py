"""OciRegistry against a real distribution 2.8 server: the LocalRegistry contract on OCI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillctl.bundle import extract_bundle, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NotFoundError, RegistryError, VersionError
from skillctl.registry import open_registry
from skillctl.registry.oci import OciRegistry
from skillctl.registry.prepare import prepare_folder

from .helpers import bundle, write_skill

pytestmark = [pytest.mark.requires_registry]
ID_RE = re.compile(r"^skill_[0-9a-f]{24}$")


def test_publish_pull_round_trip_with_the_documented_artifact(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "src", "tally", "1.2.0+build.7")
    prepared = prepare_folder(folder)
    res = oci.publish(prepared)
    assert res.status == "published" and ID_RE.match(res.record.skill_id)
    assert (res.record.version, res.record.digest, res.record.tar_digest, res.record.size) == ("1.2.0+build.7", prepared.digest, prepared.tar_digest, prepared.size)

    # On the wire: the manifest and config exactly as docs/registries/oci.md documents them, tag with '_'.
    status, _, tags = registry_server.raw("GET", f"/v2/{ns}/tally/tags/list")
    assert status == 200 and json.loads(tags)["tags"] == ["1.2.0_build.7"]
    manifest = json.loads(registry_server.get_manifest(f"{ns}/tally", "1.2.0_build.7"))
    assert manifest["artifactType"] == "application/vnd.skillctl.skill.v1"
    assert manifest["config"]["mediaType"] == "application/vnd.skillctl.skill.config.v1+json"
    assert [(l["mediaType"], l["digest"]) for l in manifest["layers"]] == [("application/vnd.skillctl.skill.layer.v1.tar+gzip", prepared.digest)]
    assert manifest["annotations"]["org.opencontainers.image.title"] == "tally-1.2.0+build.7"
    assert manifest["annotations"]["org.opencontainers.image.version"] == "1.2.0+build.7"
    config = json.loads(registry_server.blob_file(manifest["config"]["digest"]).read_bytes())
    assert config["front_matter"]["name"] == "tally" and config["files"] == list(prepared.files)
    assert config["id"] == res.record.skill_id and config["tar_digest"] == prepared.tar_digest
    # The layer is the bundle, byte for byte.
    assert registry_server.blob_file(prepared.digest).read_bytes() == prepared.data

    rec = oci.resolve("tally@^1")
    data = oci.fetch(rec)
    assert data == prepared.data and sha256_digest(data) == rec.digest
    out = extract_bundle(data, tmp_path / "out", expected_name="tally")
    assert (out / "scripts" / "run.sh").stat().st_mode & 0o777 == 0o755


def test_open_registry_routes_oci_urls(oci_url: str) -> None:
    reg = open_registry(oci_url, insecure=True, create=False)
    assert isinstance(reg, OciRegistry) and reg.url == oci_url
    # Options are never swallowed: one the backend does not take is an error listing the valid ones.
    with pytest.raises(RegistryError, match=r"unknown option\(s\) for an oci:// registry: colour; "
                                            r"valid: attempts, backoff_s, deadline_s, insecure, password, username"):
        open_registry(oci_url, colour="blue")
    with pytest.raises(TypeError):
        OciRegistry.from_url(oci_url, create=False)  # type: ignore[call-arg]


def test_republishing_identical_bytes_is_unchanged(oci: OciRegistry, tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "src", "demo", "1.0.0")
    first = oci.publish(prepare_folder(folder))
    before = oci.client.requests
    again = oci.publish(prepare_folder(folder))
    assert (first.status, again.status) == ("published", "unchanged")
    assert again.record == first.record
    assert oci.client.requests - before <= 3  # tags + manifest (+ config): nothing was pushed


def test_other_bytes_under_a_published_version_are_refused(oci: OciRegistry, tmp_path: Path) -> None:
    first = oci.publish(bundle(tmp_path, "demo", "1.0.0", "one"))
    with pytest.raises(ImmutableVersionError) as exc:
        oci.publish(bundle(tmp_path, "demo", "1.0.0", "two"))
    assert "demo@1.0.0 is already published with other content" in str(exc.value) and "\n" not in str(exc.value)
    assert oci.resolve("demo@1.0.0").digest == first.record.digest


@pytest.mark.parametrize("first, second", [("1.0.0+a", "1.0.0+b"), ("2.0.0-alpha", "2.0.0-alpha.0")])
def test_version_identity_is_its_order_not_its_tag_spelling(oci: OciRegistry, tmp_path: Path, first: str, second: str) -> None:
    oci.publish(bundle(tmp_path, "demo", first, "one"))
    with pytest.raises(ImmutableVersionError):
        oci.publish(bundle(tmp_path, "demo", second, "two"))
    assert [v.version for v in oci.versions("demo")] == [first]


def test_ranges_prereleases_and_versions_order(oci: OciRegistry, tmp_path: Path) -> None:
    for v in ["1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1", "0.9.0"]:
        oci.publish(bundle(tmp_path, "demo", v))
    assert [r.version for r in oci.versions("demo")] == ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0", "0.9.0"]
    assert oci.resolve("demo").version == "1.10.0"
    assert oci.resolve("demo@~1.2").version == "1.2.0"
    assert oci.resolve("demo@<1.2").version == "1.0.0"
    assert oci.resolve("demo", prereleases=True).version == "2.0.0-rc.1"
    assert oci.resolve("demo@^2.0.0-rc.1").version == "2.0.0-rc.1"
    with pytest.raises(NotFoundError, match="no version of demo matches '>=3'"):
        oci.resolve("demo@>=3")
    with pytest.raises(NotFoundError, match="demo@3.0.0 is not published"):
        oci.resolve("demo@3.0.0")
    with pytest.raises(NotFoundError, match="no skill 'absent'"):
        oci.resolve("absent")


def test_ids_are_kept_across_versions_and_resolve_by_id(oci: OciRegistry, tmp_path: Path) -> None:
    a = oci.publish(bundle(tmp_path, "demo", "1.0.0")).record
    b = oci.publish(bundle(tmp_path, "demo", "1.1.0")).record
    other = oci.publish(bundle(tmp_path, "other", "1.0.0")).record
    assert a.skill_id == b.skill_id != other.skill_id
    fresh = OciRegistry.from_url(oci.url, insecure=True)  # no cache: the id is found through the catalog
    assert fresh.resolve(f"{a.skill_id}@1.0.0").version == "1.0.0"
    assert fresh.get_skill(other.skill_id).name == "other"
    with pytest.raises(NotFoundError, match="no skill with id"):
        fresh.resolve("skill_" + "f" * 24)


def test_list_and_show_summaries(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "beta", "1.0.0"))
    oci.publish(bundle(tmp_path, "beta", "1.1.0-rc.1"))
    oci.publish(bundle(tmp_path, "alpha", "0.1.0"))
    # Not ours: a repository in another namespace and a deeper one are not listed.
    OciRegistry.from_url(registry_server.url(ns + "x"), insecure=True).publish(bundle(tmp_path, "gamma", "1.0.0"))
    OciRegistry.from_url(registry_server.url(ns + "/deep"), insecure=True).publish(bundle(tmp_path, "delta", "1.0.0"))
    skills = oci.list_skills()
    assert [(s.name, s.default_version, s.latest_version, s.versions) for s in skills] == [
        ("alpha", "0.1.0", "0.1.0", 1), ("beta", "1.0.0", "1.1.0-rc.1", 2)
    ]
    beta = oci.get_skill("beta")
    recs = oci.versions("beta")
    assert beta.created_at == min(r.created_at for r in recs) > 0
    assert beta.id == recs[0].skill_id and beta.description == oci.resolve_record("beta@1.0.0").description


def test_non_version_tags_are_ignored(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))
    manifest = registry_server.get_manifest(f"{ns}/demo", "1.0.0")
    registry_server.put_manifest(f"{ns}/demo", "latest", manifest)
    registry_server.put_manifest(f"{ns}/demo", "v9.9.9", manifest)
    assert [r.version for r in oci.versions("demo")] == ["1.0.0"]
    assert oci.resolve("demo").version == "1.0.0"


def test_yank_hides_from_ranges_but_exact_pins_still_fetch(oci: OciRegistry, tmp_path: Path) -> None:
    one = oci.publish(bundle(tmp_path, "demo", "1.0.0")).record
    oci.publish(bundle(tmp_path, "demo", "1.1.0"))
    rec = oci.set_yanked("demo@1.1.0", True, "broken parser")
    assert (rec.yanked, rec.yank_reason) == (True, "broken parser")
    assert oci.resolve("demo").version == "1.0.0"
    pinned = oci.resolve("demo@1.1.0")
    assert pinned.yanked and len(oci.fetch(pinned)) == pinned.size
    assert oci.get_skill("demo").default_version == "1.0.0"
    # Yanking keeps the bundle and the config: only the manifest annotations change.
    assert oci.resolve("demo@1.1.0").digest == pinned.digest
    assert oci.set_yanked("demo@1.1.0", False).yanked is False
    assert oci.resolve("demo").version == "1.1.0"
    assert oci.resolve("demo@1.0.0") == one.resolved()
    with pytest.raises(VersionError, match="needs an exact version"):
        oci.set_yanked("demo@^1", True)


def test_remove_and_gc_are_refused_with_the_reason(oci: OciRegistry, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))
    with pytest.raises(RegistryError, match="remove is not supported on OCI registries.*yank it instead"):
        oci.remove("demo@1.0.0")
    with pytest.raises(RegistryError, match="gc is the OCI registry server's job"):
        oci.gc()
    assert oci.resolve("demo@1.0.0")


def test_verify_is_clean_then_finds_a_damaged_bundle(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    pub = oci.publish(bundle(tmp_path, "demo", "1.0.0")).record
    oci.publish(bundle(tmp_path, "other", "1.0.0"))
    assert oci.verify() == []
    blob = registry_server.blob_file(pub.digest)
    data = bytearray(blob.read_bytes())
    data[50] ^= 1
    blob.write_bytes(bytes(data))
    # and something that is not a skill under a version tag, plus a tag that is no version
    repo = f"{ns}/other"
    cfg = registry_server.push_blob(repo, b"{}")
    registry_server.put_manifest(repo, "2.0.0", {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                                 "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 2},
                                                 "layers": []})
    registry_server.put_manifest(repo, "latest", registry_server.get_manifest(repo, "1.0.0"))
    problems = OciRegistry.from_url(oci.url, insecure=True).verify()
    assert [(p.severity, p.kind) for p in problems] == [("error", "corrupt"), ("error", "invalid"), ("warning", "foreign-tag")]
    assert "demo@1.0.0" in problems[0].message and "hash" in problems[0].message
    assert "other@2.0.0" in problems[1].message and "not a skillctl skill" in problems[1].message


def test_fetch_refuses_a_resolved_skill_whose_tag_moved(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0", "one"))
    resolved = oci.resolve("demo@1.0.0")
    other = OciRegistry.from_url(registry_server.url(ns + "side"), insecure=True)
    moved = other.publish(bundle(tmp_path, "demo", "1.0.0", "two")).record
    # behind our back: copy the other manifest's blobs and point our tag at it
    body = registry_server.get_manifest(f"{ns}side/demo", "1.0.0")
    doc = json.loads(body)
    for d in (doc["config"], doc["layers"][0]):
        registry_server.push_blob(f"{ns}/demo", registry_server.blob_file(d["digest"]).read_bytes())
    registry_server.put_manifest(f"{ns}/demo", "1.0.0", body)
    with pytest.raises(IntegrityError, match="tag 1.0.0 .* now names bundle .*the tag was moved"):
        oci.fetch(resolved)
    assert oci.resolve("demo@1.0.0").digest == moved.digest
