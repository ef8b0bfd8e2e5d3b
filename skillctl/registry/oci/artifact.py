"""The skill artifact: how one skill version is laid out in an OCI registry.

One OCI image manifest per version::

    {
      "schemaVersion": 2,
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "artifactType": "application/vnd.skillctl.skill.v1",
      "config": {"mediaType": "application/vnd.skillctl.skill.config.v1+json", ...},
      "layers": [{"mediaType": "application/vnd.skillctl.skill.layer.v1.tar+gzip", ...}],
      "annotations": {"org.opencontainers.image.title": NAME-VERSION, ".version": VERSION,
                      ".description": ..., ".created": RFC 3339 publish time,
                      "vnd.skillctl.id": ID, "vnd.skillctl.digest": BUNDLE_DIGEST,
                      "vnd.skillctl.tar-digest": TAR_DIGEST}
    }

The config blob is canonical JSON (sorted keys, no spaces, UTF-8) holding the record: id, name,
version, description, parsed front matter, bundle digest and tar digest, size and file list, and
for a version mirrored from a well-known site ``mirrored_from`` (the original artifact's URL and
digest). The
one layer is the canonical bundle, byte for byte, so its descriptor digest *is* the bundle digest
a lockfile pins. ``artifactType`` follows image-spec 1.1; OCI 1.0 registries (distribution 2.8)
store the manifest verbatim and identify artifacts by the config media type, which is ours too.

``created`` is the publish time (kept by ``skillctl copy``), not a constant: ``versions`` and
``show`` report when a version appeared, as the hosted skills APIs do. Reproducibility is not
lost by it: the bundle, its digest and the config are the same bytes wherever they are published;
only the manifest digest carries the time, and nothing pins manifest digests. Yanking adds the
``vnd.skillctl.yanked`` annotation to the manifest (same config and layer).

The annotations carry everything a resolved version (``ResolvedSkill``) needs besides the layer
descriptor, so resolving and pulling an exact pin reads the manifest and the layer, never the
config (``resolved_from_annotations``). Manifests published before skillctl wrote the id and
tar-digest annotations lack them; for those the config is read, as before. The full record
(front matter, file list, mirror origin) is in the config only: ``versions`` and ``show`` read it.

Everything read back is hostile until checked: sizes are capped before reading, JSON must parse
to the exact shape above, and the config must agree with the manifest and the tag.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError, RegistryError
from skillctl.nesting import loads_json
from skillctl.protocols import ResolvedSkill
from skillctl.registry.records import MirroredFrom, VersionRecord
from skillctl.registry.refs import SKILL_ID_RE
from skillctl.versioning import SemVer

ARTIFACT_TYPE = "application/vnd.skillctl.skill.v1"
CONFIG_MEDIA_TYPE = "application/vnd.skillctl.skill.config.v1+json"
LAYER_MEDIA_TYPE = "application/vnd.skillctl.skill.layer.v1.tar+gzip"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
# What we Accept when reading a tag: our manifest, plus the shapes others may have put there,
# so that we can name them instead of failing on a content-type mismatch.
ACCEPT_MANIFESTS = ", ".join(
    [
        MANIFEST_MEDIA_TYPE,
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)

ANN_TITLE = "org.opencontainers.image.title"
ANN_VERSION = "org.opencontainers.image.version"
ANN_DESCRIPTION = "org.opencontainers.image.description"
ANN_CREATED = "org.opencontainers.image.created"
ANN_YANKED = "vnd.skillctl.yanked"
ANN_YANK_REASON = "vnd.skillctl.yank-reason"
ANN_ID = "vnd.skillctl.id"
ANN_DIGEST = "vnd.skillctl.digest"
ANN_TAR_DIGEST = "vnd.skillctl.tar-digest"

CONFIG_SCHEMA = 1
# distribution 2.8 has no manifest size limit and newer registries use 4 MiB: a manifest of ours
# is ~1 KiB, so anything near the cap is hostile and is refused before it is parsed.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_CONFIG_BYTES = 1024 * 1024


def canonical_json(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def rfc3339(ts: int) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class SkillConfig:
    """The config blob: everything a VersionRecord needs except publish time and yank state."""

    skill_id: str
    name: str
    version: str
    description: str
    front_matter: dict[str, Any]
    digest: str
    tar_digest: str
    size: int
    files: tuple[str, ...]
    mirrored_from: MirroredFrom | None = None  # a mirrored well-known artifact's URL and digest

    def to_bytes(self) -> bytes:
        return canonical_json(
            {
                **({"mirrored_from": self.mirrored_from.to_dict()} if self.mirrored_from else {}),
                "schema": CONFIG_SCHEMA,
                "id": self.skill_id,
                "name": self.name,
                "version": self.version,
                "description": self.description,
                "front_matter": self.front_matter,
                "digest": self.digest,
                "tar_digest": self.tar_digest,
                "size": self.size,
                "files": list(self.files),
            }
        )


@dataclass(frozen=True)
class SkillManifest:
    config: Descriptor
    layer: Descriptor
    annotations: dict[str, str]

    @property
    def created_at(self) -> int:
        return parse_rfc3339(self.annotations.get(ANN_CREATED, "")) or 0

    @property
    def yanked(self) -> bool:
        return self.annotations.get(ANN_YANKED) == "true"

    @property
    def yank_reason(self) -> str:
        return self.annotations.get(ANN_YANK_REASON, "") if self.yanked else ""

    def to_bytes(self) -> bytes:
        return canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_MEDIA_TYPE,
                "artifactType": ARTIFACT_TYPE,
                "config": self.config.to_dict(),
                "layers": [{**self.layer.to_dict(), "annotations": {ANN_TITLE: self.annotations.get(ANN_TITLE, "") + ".skill.tgz"}}],
                "annotations": dict(sorted(self.annotations.items())),
            }
        )

    def with_yank(self, yanked: bool, reason: str = "") -> "SkillManifest":
        ann = {k: v for k, v in self.annotations.items() if k not in (ANN_YANKED, ANN_YANK_REASON)}
        if yanked:
            ann[ANN_YANKED] = "true"
            if reason:
                ann[ANN_YANK_REASON] = reason
        return SkillManifest(self.config, self.layer, ann)


def build(config: SkillConfig, created_at: int) -> tuple[bytes, SkillManifest]:
    """The config bytes and the manifest for one version."""
    cfg = config.to_bytes()
    manifest = SkillManifest(
        Descriptor(CONFIG_MEDIA_TYPE, sha256_digest(cfg), len(cfg)),
        Descriptor(LAYER_MEDIA_TYPE, config.digest, config.size),
        {
            # title carries name-version so the layer annotation names the bundle file
            ANN_TITLE: f"{config.name}-{config.version}",
            ANN_VERSION: config.version,
            ANN_DESCRIPTION: config.description,
            ANN_CREATED: rfc3339(created_at),
            # what resolving needs beyond the layer descriptor: pulls then skip the config blob
            ANN_ID: config.skill_id,
            ANN_DIGEST: config.digest,  # binds them to the layer, as the config's digest does
            ANN_TAR_DIGEST: config.tar_digest,
        },
    )
    return cfg, manifest


_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and _DIGEST_RE.fullmatch(value) is not None


def _descriptor(doc: Any, where: str) -> Descriptor:
    if not isinstance(doc, dict):
        raise RegistryError(f"{where} is not a descriptor object")
    mt, dg, size = doc.get("mediaType"), doc.get("digest"), doc.get("size")
    if not isinstance(mt, str) or not _is_digest(dg) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RegistryError(f"{where} needs mediaType, a sha256 digest and a size")
    return Descriptor(mt, dg, size)


def parse_manifest(data: bytes, where: str) -> SkillManifest:
    """A skill manifest from registry bytes, or one-line RegistryError saying what it is instead."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise RegistryError(f"{where}: manifest is {len(data)} bytes, over the {MAX_MANIFEST_BYTES // 1048576} MiB cap; refusing it")
    try:
        doc = loads_json(data)
    except ValueError as exc:
        raise RegistryError(f"{where}: manifest is not valid JSON ({exc}); the registry serves a damaged manifest") from None
    if not isinstance(doc, dict) or doc.get("schemaVersion") != 2:
        raise RegistryError(f"{where}: not an OCI image manifest (schemaVersion 2 object expected)")
    mt = doc.get("mediaType", MANIFEST_MEDIA_TYPE)
    if mt != MANIFEST_MEDIA_TYPE:
        raise RegistryError(f"{where}: is a {mt}, not a skillctl skill; it was not published by skillctl")
    config = _descriptor(doc.get("config"), f"{where}: config")
    if config.media_type != CONFIG_MEDIA_TYPE:
        raise RegistryError(f"{where}: not a skillctl skill (config media type {config.media_type}, expected {CONFIG_MEDIA_TYPE})")
    layers = doc.get("layers")
    if not isinstance(layers, list) or len(layers) != 1:
        raise RegistryError(f"{where}: a skill manifest has exactly one layer, this one has {len(layers) if isinstance(layers, list) else 'no list of'} layers")
    layer = _descriptor(layers[0], f"{where}: layer")
    if layer.media_type != LAYER_MEDIA_TYPE:
        raise RegistryError(f"{where}: layer media type {layer.media_type} is not {LAYER_MEDIA_TYPE}")
    if config.size > MAX_CONFIG_BYTES:
        raise RegistryError(f"{where}: config blob claims {config.size} bytes, over the {MAX_CONFIG_BYTES // 1048576} MiB cap")
    ann = doc.get("annotations", {})
    if not isinstance(ann, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in ann.items()):
        raise RegistryError(f"{where}: manifest annotations must map strings to strings")
    return SkillManifest(config, layer, ann)


_CONFIG_STR = ("id", "name", "version", "description", "digest", "tar_digest")


def parse_config(data: bytes, manifest: SkillManifest, *, name: str, version: SemVer, where: str) -> SkillConfig:
    """The config blob, checked against the manifest that named it and the tag it came from."""
    if sha256_digest(data) != manifest.config.digest:
        raise IntegrityError(f"{where}: config blob does not match its digest {manifest.config.digest[:19]}…; refusing it")
    try:
        doc = loads_json(data)
    except ValueError as exc:
        raise RegistryError(f"{where}: config blob is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != CONFIG_SCHEMA:
        raise RegistryError(f"{where}: config blob is not a skillctl config (schema {CONFIG_SCHEMA}); upgrade skillctl if it is newer")
    if not all(isinstance(doc.get(k), str) for k in _CONFIG_STR) or not isinstance(doc.get("front_matter"), dict) \
            or not isinstance(doc.get("files"), list) or not all(isinstance(f, str) for f in doc["files"]) \
            or not isinstance(doc.get("size"), int):
        raise RegistryError(f"{where}: config blob lacks fields or has wrong types (id, name, version, digest, files…)")
    mirrored = MirroredFrom.from_dict(doc.get("mirrored_from"))
    if "mirrored_from" in doc and mirrored is None:
        raise RegistryError(f"{where}: config blob has a malformed mirrored_from (url and digest strings expected)")
    cfg = SkillConfig(
        doc["id"], doc["name"], doc["version"], doc["description"], doc["front_matter"], doc["digest"], doc["tar_digest"],
        doc["size"], tuple(doc["files"]), mirrored,
    )
    if cfg.digest != manifest.layer.digest or cfg.size != manifest.layer.size:
        raise IntegrityError(
            f"{where}: config names bundle {cfg.digest[:19]}… but the manifest's layer is {manifest.layer.digest[:19]}…; refusing it"
        )
    if cfg.name != name:
        raise IntegrityError(f"{where}: config is for skill '{cfg.name}', not '{name}'; refusing it")
    try:
        same = SemVer.parse(cfg.version).same_as(version)
    except Exception:  # noqa: BLE001 - any unparsable version is the same refusal
        same = False
    if not same:
        raise IntegrityError(f"{where}: config is for version '{cfg.version[:40]}', not the tag's {version}; refusing it")
    return cfg


def record(cfg: SkillConfig, manifest: SkillManifest) -> VersionRecord:
    return VersionRecord(
        skill_id=cfg.skill_id, name=cfg.name, version=cfg.version, description=cfg.description, digest=cfg.digest,
        tar_digest=cfg.tar_digest, size=cfg.size, files=len(cfg.files), created_at=manifest.created_at,
        yanked=manifest.yanked, yank_reason=manifest.yank_reason, front_matter=cfg.front_matter, mirrored_from=cfg.mirrored_from,
    )


def resolved_from_annotations(manifest: SkillManifest, *, name: str, version: SemVer, where: str) -> ResolvedSkill | None:
    """The version as ``resolve`` returns it, from the manifest alone; None when the manifest
    lacks the id / tar-digest annotations (published by an older skillctl: read the config).
    Checked as the config is: the annotations must name this skill and the tag's version, and
    carry a well-formed id and digest; anything else is refused, never silently completed."""
    ann = manifest.annotations
    if not any(k in ann for k in (ANN_ID, ANN_DIGEST, ANN_TAR_DIGEST)):
        return None
    sid, digest, tar_digest, ver = ann.get(ANN_ID, ""), ann.get(ANN_DIGEST, ""), ann.get(ANN_TAR_DIGEST, ""), ann.get(ANN_VERSION, "")
    if not SKILL_ID_RE.match(sid) or not _is_digest(digest) or not _is_digest(tar_digest) or ANN_DESCRIPTION not in ann:
        raise RegistryError(
            f"{where}: manifest annotations lack a valid {ANN_ID}, {ANN_DIGEST}, {ANN_TAR_DIGEST} or {ANN_DESCRIPTION}; refusing it"
        )
    if digest != manifest.layer.digest:
        raise IntegrityError(
            f"{where}: manifest annotations name bundle {digest[:19]}… but the manifest's layer is {manifest.layer.digest[:19]}…; refusing it"
        )
    try:
        same = SemVer.parse(ver).same_as(version)
    except Exception:  # noqa: BLE001 - any unparsable version is the same refusal
        same = False
    if not same:
        raise IntegrityError(f"{where}: manifest annotations are for version '{ver[:40]}', not the tag's {version}; refusing it")
    if ann.get(ANN_TITLE) != f"{name}-{ver}":
        raise IntegrityError(f"{where}: manifest title '{ann.get(ANN_TITLE, '')[:60]}' is not skill '{name}' at {ver}; refusing it")
    return ResolvedSkill(
        id=sid, name=name, version=ver, description=ann[ANN_DESCRIPTION], digest=manifest.layer.digest, tar_digest=tar_digest,
        size=manifest.layer.size, yanked=manifest.yanked,
    )
