"""Copy skill versions between registries of any kind (folder ⇄ OCI, OCI ⇄ OCI, folder ⇄ folder,
and from a well-known site into either).

``REF`` without a version copies every version of the skill, yanked ones included, oldest
first; ``NAME@VERSION`` or ``NAME@RANGE`` copies the one version it resolves to. Each bundle is
fetched (digest verified by the source), checked as a hostile archive holding a valid skill, and
published unchanged to the target, so its digest is the same there — a lock written against one
registry installs from the other. Copying is idempotent: versions the target already holds with
the same bytes are "unchanged"; a target version with *other* bytes is reported and left alone
(never overwritten). A yanked source version is yanked in the target too (a target's own yanks
are kept). Targets keep the source's publish time and, for a skill new to them, its id (unless
another of their skills already has that id: ids are per registry). Signatures travel with their
version, byte for byte (the statements sign the bundle digest, which the copy keeps); a target
already holding some of them keeps one copy of each.

A well-known site serves its own artifact format (files at the archive root, or a lone
SKILL.md), not bundles: each version becomes the bundle ``pack`` would make of the same files,
and the record keeps the original artifact's URL and digest (``mirrored_from``). A converted
version has another digest, so no signature of the original could hold for it: none is carried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from skillctl.bundle import BUNDLE, sha256_digest
from skillctl.errors import IntegrityError, RegistryError, SkillctlError, UnsupportedError
from skillctl.protocols import SIGN, Registry, RegistryReader
from skillctl.registry.prepare import prepare_artifact_bytes
from skillctl.registry.records import MirroredFrom, VersionRecord
from skillctl.registry.refs import parse_ref


@dataclass(frozen=True)
class CopyResult:
    name: str
    version: str
    digest: str  # of the bundle in the target (the source's, unless converted from another format)
    status: str  # "published" | "unchanged" | "failed"
    yanked: bool = False
    error: str = ""
    origin_digest: str = ""  # the original artifact's, when it was converted
    signatures: int = 0  # signatures newly attached in the target

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version, "digest": self.digest, "status": self.status,
                               "yanked": self.yanked, "signatures": self.signatures}
        if self.origin_digest:
            out["origin_digest"] = self.origin_digest
        if self.error:
            out["error"] = self.error
        return out


def source_versions(source: RegistryReader, ref: str, *, prereleases: bool = False) -> list[VersionRecord]:
    """What ``ref`` selects in ``source``: every version (oldest first) or the one it resolves to."""
    parsed = parse_ref(ref)
    if "@" not in parsed.text:
        return list(reversed(source.versions(parsed.text)))
    return [source.resolve_record(parsed, prereleases=prereleases)]


def mirrored_from(rec: VersionRecord) -> MirroredFrom | None:
    """What a copy of ``rec`` records as its original: the site's artifact when ``rec`` is one,
    else what ``rec`` itself was mirrored from (a copy of a copy keeps the first original)."""
    if rec.artifact_url:
        return MirroredFrom(rec.artifact_url, rec.digest)
    return rec.mirrored_from


def copy_version(source: RegistryReader, target: Registry, rec: VersionRecord) -> CopyResult:
    converted = rec.artifact_type != BUNDLE
    envelopes = [] if converted else source.signatures(rec.resolved())
    if envelopes and SIGN not in target.capabilities:  # refused before anything is copied
        raise UnsupportedError(f"{rec.name}@{rec.version} is signed, but {target.url} cannot keep signatures; copy it to another registry")
    data = source.fetch(rec.resolved())
    actual = sha256_digest(data)
    if actual != rec.digest:  # the source verified them, so this only trips on a broken source
        raise IntegrityError(f"{rec.name}@{rec.version}: bytes from {source.url} hash to {actual[:19]}…, not {rec.digest[:19]}…")
    prepared = prepare_artifact_bytes(
        data, rec.artifact_type, name=rec.name, source=f"{rec.name}@{rec.version} from {source.url}", version=rec.version,
        mirrored_from=mirrored_from(rec), profile=None,  # the source took it in, perhaps under a client's profile
    )
    res = target.publish(prepared, created_at=rec.created_at or None, skill_id=rec.skill_id)
    if res.record.digest != prepared.digest:
        raise IntegrityError(f"{rec.name}@{rec.version}: {target.url} stored {res.record.digest[:19]}…, not {prepared.digest[:19]}…")
    carried = 0
    for envelope in envelopes:
        carried += target.attach_signature(res.record.resolved(), envelope) == "attached"
    yanked = res.record.yanked
    if rec.yanked and not yanked:
        yanked = target.set_yanked(f"{rec.name}@{res.record.version}", True, rec.yank_reason).yanked
    return CopyResult(rec.name, res.record.version, prepared.digest, res.status, yanked,
                      origin_digest=rec.digest if converted else "", signatures=carried)


def copy_skills(
    ref: str,
    source: RegistryReader,
    target: Registry,
    *,
    prereleases: bool = False,
    progress: Callable[[CopyResult], None] | None = None,
) -> list[CopyResult]:
    """Copy what ``ref`` selects from ``source`` to ``target``; a version that cannot be copied
    is reported as "failed" with its one-line reason and the others still go."""
    if source.url == target.url:
        raise RegistryError(f"--from and --to are the same registry ({source.url}); nothing to copy")
    out: list[CopyResult] = []
    for rec in source_versions(source, ref, prereleases=prereleases):
        try:
            res = copy_version(source, target, rec)
        except SkillctlError as exc:
            res = CopyResult(rec.name, rec.version, rec.digest, "failed", rec.yanked, str(exc))
        out.append(res)
        if progress:
            progress(res)
    return out
