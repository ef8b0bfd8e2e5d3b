"""The artifact format: what we write, and refusal of every malformed thing read back."""

from __future__ import annotations

import json

import pytest

from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError, RegistryError
from skillctl.registry.oci import artifact
from skillctl.versioning import SemVer

BUNDLE = "sha256:" + "ab" * 32


def config(**over) -> artifact.SkillConfig:
    base = dict(
        skill_id="skill_" + "0" * 24, name="tally", version="1.2.3+b1", description="Counts words; use it for tallies.",
        front_matter={"name": "tally", "description": "Counts words; use it for tallies.", "metadata": {"version": "1.2.3+b1"}},
        digest=BUNDLE, tar_digest="sha256:" + "cd" * 32, size=321, files=("tally/SKILL.md", "tally/scripts/t.py"),
    )
    base.update(over)
    return artifact.SkillConfig(**base)


def test_manifest_layout_is_the_documented_one() -> None:
    cfg_bytes, manifest = artifact.build(config(), created_at=1_700_000_000)
    doc = json.loads(manifest.to_bytes())
    assert doc["schemaVersion"] == 2
    assert doc["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert doc["artifactType"] == "application/vnd.skillctl.skill.v1"
    assert doc["config"] == {"mediaType": "application/vnd.skillctl.skill.config.v1+json", "digest": sha256_digest(cfg_bytes), "size": len(cfg_bytes)}
    assert doc["layers"] == [
        {"mediaType": "application/vnd.skillctl.skill.layer.v1.tar+gzip", "digest": BUNDLE, "size": 321,
         "annotations": {"org.opencontainers.image.title": "tally-1.2.3+b1.skill.tgz"}}
    ]
    assert doc["annotations"] == {
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z",
        "org.opencontainers.image.description": "Counts words; use it for tallies.",
        "org.opencontainers.image.title": "tally-1.2.3+b1",
        "org.opencontainers.image.version": "1.2.3+b1",
        # what resolving needs besides the layer, so that a pull reads no config
        "vnd.skillctl.id": "skill_" + "0" * 24,
        "vnd.skillctl.digest": BUNDLE,
        "vnd.skillctl.tar-digest": "sha256:" + "cd" * 32,
    }
    cfg = json.loads(cfg_bytes)
    assert cfg == {
        "schema": 1, "id": "skill_" + "0" * 24, "name": "tally", "version": "1.2.3+b1",
        "description": "Counts words; use it for tallies.", "front_matter": config().front_matter,
        "digest": BUNDLE, "tar_digest": "sha256:" + "cd" * 32, "size": 321, "files": ["tally/SKILL.md", "tally/scripts/t.py"],
    }
    # canonical bytes: the same inputs give the same config and manifest digests
    assert artifact.build(config(), 1_700_000_000)[1].to_bytes() == manifest.to_bytes()
    assert cfg_bytes == artifact.build(config(), 1)[0]


def test_round_trip_to_a_record() -> None:
    cfg_bytes, manifest = artifact.build(config(), created_at=1_700_000_000)
    parsed = artifact.parse_manifest(manifest.to_bytes(), "here")
    assert parsed == manifest
    cfg = artifact.parse_config(cfg_bytes, parsed, name="tally", version=SemVer.parse("1.2.3"), where="here")
    rec = artifact.record(cfg, parsed)
    assert (rec.name, rec.version, rec.digest, rec.files, rec.created_at, rec.yanked) == ("tally", "1.2.3+b1", BUNDLE, 2, 1_700_000_000, False)


def test_yank_annotation_changes_only_the_manifest_annotations() -> None:
    _, manifest = artifact.build(config(), created_at=5)
    yanked = manifest.with_yank(True, "broken parser")
    assert (yanked.yanked, yanked.yank_reason, yanked.config, yanked.layer) == (True, "broken parser", manifest.config, manifest.layer)
    assert yanked.annotations[artifact.ANN_CREATED] == manifest.annotations[artifact.ANN_CREATED]
    back = yanked.with_yank(False)
    assert back.to_bytes() == manifest.to_bytes()


def _mutated(change) -> bytes:
    _, manifest = artifact.build(config(), created_at=5)
    doc = json.loads(manifest.to_bytes())
    change(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    "data, says",
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[]", "not an OCI image manifest"),
        (_mutated(lambda d: d.update(schemaVersion=1)), "not an OCI image manifest"),
        (_mutated(lambda d: d.update(mediaType="application/vnd.oci.image.index.v1+json")), "not a skillctl skill"),
        (_mutated(lambda d: d["config"].update(mediaType="application/vnd.oci.image.config.v1+json")), "config media type"),
        (_mutated(lambda d: d["layers"].append(d["layers"][0])), "exactly one layer"),
        (_mutated(lambda d: d.update(layers=[])), "exactly one layer"),
        (_mutated(lambda d: d["layers"][0].update(mediaType="application/vnd.oci.image.layer.v1.tar")), "layer media type"),
        (_mutated(lambda d: d["layers"][0].update(digest="md5:abc")), "sha256 digest"),
        (_mutated(lambda d: d["layers"][0].update(digest="sha256:" + "AB" * 32)), "sha256 digest"),
        (_mutated(lambda d: d["config"].update(size=-1)), "size"),
        (_mutated(lambda d: d["config"].update(size=2 * 1024 * 1024)), "over the 1 MiB cap"),
        (_mutated(lambda d: d.update(annotations={"a": 1})), "annotations"),
        (b" " * (4 * 1024 * 1024 + 1), "over the 4 MiB cap"),
    ],
)
def test_malformed_manifests_are_refused(data: bytes, says: str) -> None:
    with pytest.raises(RegistryError) as exc:
        artifact.parse_manifest(data, "reg/x:1.0.0")
    assert says in str(exc.value) and str(exc.value).startswith("reg/x:1.0.0: ") and "\n" not in str(exc.value)


def _parse_cfg(cfg_bytes: bytes, manifest=None, name="tally", version="1.2.3"):
    if manifest is None:
        _, manifest = artifact.build(config(), 5)
        manifest = artifact.SkillManifest(
            artifact.Descriptor(artifact.CONFIG_MEDIA_TYPE, sha256_digest(cfg_bytes), len(cfg_bytes)), manifest.layer, manifest.annotations
        )
    return artifact.parse_config(cfg_bytes, manifest, name=name, version=SemVer.parse(version), where="w")


def test_config_must_hash_to_its_descriptor() -> None:
    cfg_bytes, manifest = artifact.build(config(), 5)
    with pytest.raises(IntegrityError, match="config blob does not match its digest"):
        artifact.parse_config(cfg_bytes + b" ", manifest, name="tally", version=SemVer.parse("1.2.3"), where="w")


@pytest.mark.parametrize(
    "cfg, name, version, exc_type, says",
    [
        (config(digest="sha256:" + "ef" * 32), "tally", "1.2.3", IntegrityError, "config names bundle"),
        (config(size=1), "tally", "1.2.3", IntegrityError, "config names bundle"),
        (config(), "other", "1.2.3", IntegrityError, "is for skill 'tally', not 'other'"),
        (config(), "tally", "1.2.4", IntegrityError, "not the tag's 1.2.4"),
        (config(version="garbage"), "tally", "1.2.3", IntegrityError, "not the tag's"),
    ],
)
def test_config_must_agree_with_manifest_and_tag(cfg, name, version, exc_type, says) -> None:
    with pytest.raises(exc_type, match=says):
        _parse_cfg(cfg.to_bytes(), name=name, version=version)


@pytest.mark.parametrize(
    "body, says",
    [
        (b"nope", "not valid JSON"),
        (json.dumps({"schema": 2}).encode(), "not a skillctl config"),
        (json.dumps({"schema": 1, "id": "x"}).encode(), "lacks fields"),
        (artifact.canonical_json({**json.loads(config().to_bytes()), "files": "x"}), "lacks fields"),
    ],
)
def test_malformed_configs_are_refused(body: bytes, says: str) -> None:
    with pytest.raises(RegistryError, match=says):
        _parse_cfg(body)
