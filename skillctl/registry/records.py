"""Registry records, with JSON shapes that follow the hosted skills APIs where they overlap
(``id``, ``object``, ``name``, ``description``, ``created_at``, ``default_version``,
``latest_version``; versions carry ``skill_id`` and ``version``).

Every registry backend returns these, so they live here, apart from any backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillctl.errors import RegistryError
from skillctl.protocols import ResolvedSkill
from skillctl.registry.refs import SKILL_ID_RE
from skillctl.versioning import SemVer


@dataclass(frozen=True)
class MirroredFrom:
    """Where a mirrored version came from: the original artifact's URL and digest (a well-known
    site serves its own archive format; the registry stores the skill as a bundle, whose digest
    differs, and keeps these so the copy can be traced and checked against the original)."""

    url: str
    digest: str

    def to_dict(self) -> dict[str, str]:
        return {"url": self.url, "digest": self.digest}

    @classmethod
    def from_dict(cls, doc: Any) -> "MirroredFrom | None":
        if isinstance(doc, dict) and isinstance(doc.get("url"), str) and isinstance(doc.get("digest"), str):
            return cls(doc["url"], doc["digest"])
        return None


@dataclass(frozen=True)
class VersionRecord:
    skill_id: str
    name: str
    version: str
    description: str
    digest: str
    tar_digest: str
    size: int
    files: int
    created_at: int  # unix seconds, as the hosted APIs report it
    yanked: bool = False
    yank_reason: str = ""
    front_matter: dict[str, Any] = field(default_factory=dict, compare=False)
    artifact_type: str = "bundle"  # see ResolvedSkill
    index_url: str = ""  # a well-known site's index listing this version
    artifact_url: str = ""  # where a well-known site serves the artifact
    mirrored_from: MirroredFrom | None = None  # the original of a version copied from a site

    def resolved(self) -> ResolvedSkill:
        return ResolvedSkill(
            id=self.skill_id,
            name=self.name,
            version=self.version,
            description=self.description,
            digest=self.digest,
            tar_digest=self.tar_digest,
            size=self.size,
            yanked=self.yanked,
            artifact_type=self.artifact_type,
            index_url=self.index_url,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "skill.version",
            "skill_id": self.skill_id,
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "digest": self.digest,
            "tar_digest": self.tar_digest,
            "size": self.size,
            "files": self.files,
            "created_at": self.created_at,
            "yanked": self.yanked,
            **({"yank_reason": self.yank_reason} if self.yank_reason else {}),
            **({"artifact_type": self.artifact_type} if self.artifact_type != "bundle" else {}),
            **({"index": self.index_url} if self.index_url else {}),
            **({"artifact_url": self.artifact_url} if self.artifact_url else {}),
            **({"mirrored_from": self.mirrored_from.to_dict()} if self.mirrored_from else {}),
        }


@dataclass(frozen=True)
class SkillRecord:
    id: str
    name: str
    description: str  # of the default version (else the latest one)
    created_at: int
    latest_version: str | None  # highest version, pre-releases included, yanked excluded
    default_version: str | None  # what "latest" resolves to: highest non-yanked release
    versions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "skill",
            "name": self.name,
            "description": self.description,
            "created_at": self.created_at,
            "default_version": self.default_version,
            "latest_version": self.latest_version,
            "versions": self.versions,
        }


def summarize(recs: list[VersionRecord]) -> SkillRecord:
    """A skill's record made from its versions, newest first, for registries that keep no
    separate row per skill: ``latest_version`` is the newest non-yanked version,
    ``default_version`` the newest non-yanked release, the description the default's."""
    live = [r for r in recs if not r.yanked]
    latest = live[0] if live else None
    default = next((r for r in live if not SemVer.parse(r.version).is_prerelease), None)
    desc = default or latest
    return SkillRecord(
        id=recs[0].skill_id,
        name=recs[0].name,
        description=desc.description if desc else "",
        created_at=min(r.created_at for r in recs),
        latest_version=latest.version if latest else None,
        default_version=default.version if default else None,
        versions=len(recs),
    )


@dataclass(frozen=True)
class PublishResult:
    status: str  # "published" | "unchanged"
    record: VersionRecord

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, **self.record.to_dict()}


@dataclass(frozen=True)
class Problem:
    """One finding of ``Registry.verify``: errors mean something is damaged, warnings do not."""

    severity: str  # "error" | "warning"
    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "kind": self.kind, "message": self.message}


def check_origin(created_at: int | None, skill_id: str | None) -> None:
    """The optional origin a mirror passes to ``publish``: a publish time and a skill id."""
    if created_at is not None and (isinstance(created_at, bool) or not isinstance(created_at, int) or created_at < 0):
        raise RegistryError(f"created_at must be unix seconds (an integer >= 0), got {created_at!r}")
    if skill_id is not None and not (isinstance(skill_id, str) and SKILL_ID_RE.match(skill_id)):
        raise RegistryError(f"skill_id must be 'skill_' and 24 hex digits, got {skill_id!r}")
