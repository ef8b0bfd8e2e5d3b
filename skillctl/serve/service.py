"""The skills API's operations on a registry, independent of the API shape that exposes them.

Every method takes the registry client of the worker thread it runs in (``RegistryWorkers``)
and uses only the ``Registry`` protocol, so the server works with any backend; what a backend
cannot do (remove on OCI, anything but reading on a well-known site) is refused as its
``UnsupportedError`` says.

How the APIs' notions map onto the registry (the README's "Serving the skills API" repeats this
for users):

- **Skill ids** are the registry's ids (``skill_`` and 24 hex digits); a path may also name a
  skill by its name.
- **Versions** are the registry's SemVer versions, as strings (``"1.2.0"``). A version's ``id``
  is ``skillver_`` and 24 hex digits of sha256("SKILL_ID@VERSION"): stable, and the same on
  every server over the same registry. Paths take the id, the version, or ``latest``.
- **latest** is the skill's newest version that is not yanked (pre-releases included, the
  registry's ``latest_version``); **default** is the newest release that is not yanked (its
  ``default_version``; the newest pre-release when there is no release). The default cannot be
  pointed elsewhere: yank what is newer.
- **Uploads** keep the version their SKILL.md declares in ``metadata.version``. Without one, a
  new skill starts at 1.0.0 and a new version of a skill is the next minor after the highest
  version it ever had, yanked ones included (1.4.2 → 1.5.0), so an upload never collides with
  a version someone may have pinned.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from skillctl.bundle import BundleContents, BundleLimits, read_artifact, repack, zip_bundle
from skillctl.errors import NotFoundError, RegistryError, SkillctlError
from skillctl.protocols import PUBLISH, REMOVE, YANK, Registry
from skillctl.registry.prepare import PreparedBundle, prepare_bundle_bytes
from skillctl.registry.records import SkillRecord, VersionRecord
from skillctl.registry.refs import NAME_RE, SKILL_ID_RE
from skillctl.serve.errors import ApiError, bad_request, not_found
from skillctl.serve.upload import Upload, declares_version, read_upload
from skillctl.versioning import SemVer

LATEST = "latest"
VERSION_ID_PREFIX = "skillver_"
FIRST_VERSION = "1.0.0"


def version_id(skill_id: str, version: str) -> str:
    return VERSION_ID_PREFIX + hashlib.sha256(f"{skill_id}@{version}".encode()).hexdigest()[:24]


def next_version(versions: list[VersionRecord]) -> str:
    """The version an upload without ``metadata.version`` gets (see the module docstring)."""
    if not versions:
        return FIRST_VERSION
    top = max((SemVer.parse(r.version) for r in versions), key=lambda v: v.order)
    return f"{top.major}.{top.minor + 1}.0"


def becomes_default(version: str, versions: list[VersionRecord]) -> bool:
    """Whether ``version`` is (or, once published, will be) the skill's default version."""
    new = SemVer.parse(version)
    live = [SemVer.parse(r.version) for r in versions if not r.yanked]
    releases = [v for v in live if not v.is_prerelease]
    if new.is_prerelease:  # a pre-release is the default only while there is no release
        return not releases and all(new.order >= v.order for v in live)
    return all(new.order >= v.order for v in releases)


@dataclass(frozen=True)
class Page:
    items: list
    has_more: bool


def page_after(items: list, key: Callable[[object], str], after: str | None, limit: int, what: str) -> Page:
    """``limit`` items following the one whose key is ``after`` (from the start without it)."""
    start = 0
    if after:
        keys = [key(i) for i in items]
        if after not in keys:
            raise bad_request(f"{what} {after!r} is not in this list; start again without it", param="after")
        start = keys.index(after) + 1
    chunk = items[start : start + limit]
    return Page(chunk, start + limit < len(items))


class _Snapshot:
    """The registry's skills, oldest first, as of one moment: lists page through the same
    snapshot, and a registry of thousands is not re-read for every page."""

    def __init__(self, skills: list[SkillRecord], generation: int) -> None:
        self.skills = sorted(skills, key=lambda s: (s.created_at, s.id))
        self.generation = generation
        self.taken = time.monotonic()


class _ZipCache:
    """Downloads by bundle digest, within a byte budget (least recently used out first): the
    same bytes are asked for again and again, and making them is a read, an inflate and a
    deflate."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> bytes | None:
        with self._lock:
            data = self._items.get(digest)
            if data is not None:
                self._items.move_to_end(digest)
            return data

    def put(self, digest: str, data: bytes) -> None:
        if len(data) > self.budget:
            return
        with self._lock:
            if digest in self._items:
                return
            self._items[digest] = data
            self._size += len(data)
            while self._size > self.budget:
                _, old = self._items.popitem(last=False)
                self._size -= len(old)


class SkillService:
    """The operations. ``refresh_s``: how old a listing snapshot may get before the registry is
    read again (writes through this server refresh it at once; other writers to the same
    registry show up within this time). ``audit_gate``: refuse uploads with audit findings at or
    above this severity (None: no audit, like ``skillctl publish``)."""

    def __init__(
        self,
        *,
        limits: BundleLimits = BundleLimits(),
        refresh_s: float = 5.0,
        zip_cache_bytes: int = 64 * 1024 * 1024,
        audit_gate: str | None = None,
    ) -> None:
        self.limits = limits
        self.refresh_s = refresh_s
        self.audit_gate = audit_gate
        self.generation = 0  # bumped by every write through this server
        self._snapshot: _Snapshot | None = None
        self._snapshot_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._zips = _ZipCache(zip_cache_bytes)

    # ------------------------------------------------------------------ reading

    def skills(self, reg: Registry) -> list[SkillRecord]:
        """Every skill, oldest first (by creation time, then id), from a recent snapshot.

        After a write through this server the snapshot is retaken before anyone reads it (a
        client sees its own upload in the next list). A snapshot that is merely old is retaken
        by one caller while the others go on reading it, so a registry of thousands never
        stalls every list at once."""
        snap = self._snapshot
        if snap is not None and snap.generation == self.generation:
            if time.monotonic() - snap.taken <= self.refresh_s or not self._snapshot_lock.acquire(blocking=False):
                return snap.skills
            try:
                return self._take_snapshot(reg).skills
            finally:
                self._snapshot_lock.release()
        with self._snapshot_lock:
            snap = self._snapshot
            if snap is not None and snap.generation == self.generation and time.monotonic() - snap.taken <= self.refresh_s:
                return snap.skills  # another caller just took it
            return self._take_snapshot(reg).skills

    def _take_snapshot(self, reg: Registry) -> _Snapshot:
        generation = self.generation  # read first: a write during list_skills makes the next call retake it
        self._snapshot = _Snapshot(reg.list_skills(), generation)
        return self._snapshot

    def skill(self, reg: Registry, ref: str) -> SkillRecord:
        if not (SKILL_ID_RE.match(ref) or (NAME_RE.match(ref) and len(ref) <= 64)):
            raise not_found(f"no skill {ref!r}: a skill is named by its id (skill_…) or its name")
        return reg.get_skill(ref)

    def versions(self, reg: Registry, ref: str) -> tuple[SkillRecord, list[VersionRecord]]:
        """The skill and its versions, newest first (yanked ones included)."""
        skill = self.skill(reg, ref)
        return skill, reg.versions(skill.id)

    def version(self, reg: Registry, ref: str, key: str) -> tuple[SkillRecord, VersionRecord]:
        """One version of a skill by ``latest``, its id, or its version string."""
        skill = self.skill(reg, ref)
        if key == LATEST:
            if skill.latest_version is None:
                raise not_found(f"every version of {skill.name} is yanked; name a version exactly")
            return skill, reg.resolve_record(f"{skill.id}@{skill.latest_version}")
        if key.startswith(VERSION_ID_PREFIX):
            found = next((r for r in reg.versions(skill.id) if version_id(skill.id, r.version) == key), None)
            if found is None:
                raise not_found(f"{skill.name} has no version with id {key}")
            return skill, found
        try:
            SemVer.parse(key)
        except SkillctlError:
            raise not_found(f"{skill.name} has no version {key!r}: give a version (1.2.0), a version id (skillver_…) or 'latest'") from None
        return skill, reg.resolve_record(f"{skill.id}@{key}")

    def download(self, reg: Registry, ref: str, key: str | None) -> tuple[VersionRecord, bytes]:
        """A version as the canonical zip of its files (one top folder named after the skill);
        ``key`` None: the default version."""
        skill = self.skill(reg, ref)
        if key is None:
            default = skill.default_version or skill.latest_version
            if default is None:
                raise not_found(f"every version of {skill.name} is yanked; download a version by its number")
            key = default
        _, rec = self.version(reg, skill.id, key)
        cached = self._zips.get(rec.digest)
        if cached is not None:
            return rec, cached
        data = reg.fetch(rec.resolved())  # digest checked by the registry
        contents = read_artifact(data, rec.artifact_type, expected_name=rec.name, source=f"{rec.name}@{rec.version}")
        out = zip_bundle(contents)
        self._zips.put(rec.digest, out)
        return rec, out

    # ------------------------------------------------------------------ writing

    def _changed(self) -> None:
        self.generation += 1

    @staticmethod
    def _require(reg: Registry, capability: str, doing: str, instead: str) -> None:
        if capability not in reg.capabilities:
            raise ApiError(400, f"the registry behind this server ({type(reg).__name__}) cannot {doing}; {instead}")

    def _prepare(self, contents: BundleContents, version: str | None) -> PreparedBundle:
        packed = repack(contents)
        return prepare_bundle_bytes(packed.data, source=f"upload of {contents.name}", version=version)

    def _audit(self, prepared: PreparedBundle) -> None:
        if self.audit_gate is None:
            return
        from skillctl.audit import audit_bundle  # noqa: PLC0415 - only servers with an audit gate pay for it

        # The uploader wrote the skill's .skillaudit: it cannot vouch for its own upload.
        report = audit_bundle(prepared.data, use_allowlist=False, source=f"{prepared.name}@{prepared.version}")
        failing = report.at_or_above(self.audit_gate)
        if failing:
            f = failing[0]
            raise bad_request(
                f"upload of {prepared.name} refused by the audit: {f.location(prepared.name)}: {f.rule.id} {f.severity} "
                f"{f.rule.title} ({len(failing)} finding(s) at or above {self.audit_gate}; see: skillctl audit)"
            )

    @staticmethod
    def _existing(reg: Registry, name: str) -> list[VersionRecord]:
        """The versions of the skill named ``name``; none when there is no such skill, or when
        ``name`` cannot be a skill's (validation then says what is wrong with it)."""
        if not NAME_RE.match(name) or len(name) > 64:
            return []
        try:
            return reg.versions(name)
        except NotFoundError:
            return []

    def publish(
        self, reg: Registry, upload: Upload, *, into: str | None, default: bool | None = None
    ) -> tuple[SkillRecord, VersionRecord]:
        """Publish an upload as a new skill (``into`` None) or as a version of skill ``into``,
        under the same rules as ``skillctl publish``; returns the skill and the version.

        Reading, validating, packing and auditing happen outside the write lock, against the
        versions as they were then (a doomed upload is refused before the costly part); under
        the lock only the version is decided again, against every version now there, and the
        registry commits. A slow upload never holds up another."""
        self._require(reg, PUBLISH, "publish", "publish to the registry it is served from")
        target = self.skill(reg, into) if into is not None else None
        contents = read_upload(upload, self.limits)
        if target is not None and contents.name != target.name:
            raise bad_request(
                f"this upload is the skill '{contents.name}' (its top folder), not '{target.name}'; "
                f"a skill's versions keep its name — create '{contents.name}' as a skill of its own", param="files"
            )
        declared = declares_version(contents)
        existing = self._existing(reg, contents.name)
        self._refuse_existing(target, contents.name, existing)
        prepared = self._prepare(contents, None if declared else next_version(existing))
        prepared = self._decide(prepared, existing, declared, target, default)
        self._audit(prepared)
        with self._write_lock:  # the next-version rule must see every version, ours included
            prepared = self._decide(prepared, self._existing(reg, contents.name), declared, target, default)
            result = reg.publish(prepared)
            self._changed()
        return reg.get_skill(result.record.skill_id), result.record

    @staticmethod
    def _refuse_existing(target: SkillRecord | None, name: str, existing: list[VersionRecord]) -> None:
        if target is None and existing:
            skill_id = existing[0].skill_id
            raise ApiError(
                409,
                f"a skill named '{name}' already exists ({skill_id}); add a version to it instead: POST /skills/{skill_id}/versions",
            )

    def _decide(
        self, prepared: PreparedBundle, existing: list[VersionRecord], declared: bool, target: SkillRecord | None,
        default: bool | None,
    ) -> PreparedBundle:
        """``prepared`` with the version it gets next to ``existing`` (the one SKILL.md declares,
        or the next minor), refused when the skill exists but should not, or when ``default``
        asks for what that version will not be. Only the version changes: it is in no file."""
        self._refuse_existing(target, prepared.name, existing)
        if not declared:
            prepared = replace(prepared, version=next_version(existing))
        if default is not None and default != becomes_default(prepared.version, existing):
            raise bad_request(
                f"{prepared.name}@{prepared.version} would {'not ' if default else ''}become the default version, and "
                "the default cannot be chosen here: it is always the newest release that is not yanked — "
                + ("give the upload a higher version" if default else "leave 'default' out, or yank the version afterwards"),
                param="default",
            )
        return prepared

    def check_default(self, reg: Registry, ref: str, version: str) -> SkillRecord:
        """Setting the default version: accepted when it already is the default (the default
        is computed, see the module docstring); refused with the way to get there otherwise."""
        skill, rec = self.version(reg, ref, version)
        if skill.default_version is not None and SemVer.parse(rec.version).same_as(SemVer.parse(skill.default_version)):
            return skill
        raise bad_request(
            f"{skill.name}'s default version is {skill.default_version or 'none'}: always the newest release that is not "
            f"yanked, so it cannot be set to {rec.version}; yank the newer releases to make {rec.version} the default",
            param="default_version",
        )

    def remove_version(self, reg: Registry, ref: str, key: str) -> VersionRecord:
        skill, rec = self.version(reg, ref, key)
        return self._remove(reg, skill, rec)

    def _remove(self, reg: Registry, skill: SkillRecord, rec: VersionRecord) -> VersionRecord:
        self._require(reg, REMOVE, "delete versions", f"yank {skill.name}@{rec.version} instead (POST …/versions/{rec.version}/yank)")
        try:
            with self._write_lock:
                removed = reg.remove(f"{skill.id}@{rec.version}")
                self._changed()
        except (NotFoundError, ApiError):
            raise
        except RegistryError as exc:  # the registry refused: someone may depend on the version
            raise ApiError(409, f"{exc} (over this API: POST …/versions/{rec.version}/yank)") from None
        return removed

    def remove_skill(self, reg: Registry, ref: str) -> SkillRecord:
        """Delete every version of a skill. A version the registry will not delete (one that
        was downloaded or locked) stays; the answer names what stayed, and why."""
        skill, versions = self.versions(reg, ref)
        refused: list[str] = []
        for rec in reversed(versions):  # oldest first
            try:
                self._remove(reg, skill, rec)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                refused.append(f"{rec.version}: {exc.message}")
        if refused:
            kept = len(refused)
            raise ApiError(409, f"{skill.name}: {len(versions) - kept} of {len(versions)} versions deleted; {kept} kept — {refused[0]}")
        return skill

    def set_yanked(self, reg: Registry, ref: str, key: str, yanked: bool, reason: str) -> VersionRecord:
        skill, rec = self.version(reg, ref, key)
        self._require(reg, YANK, "yank versions", "yank them in the registry this server reads")
        with self._write_lock:
            out = reg.set_yanked(f"{skill.id}@{rec.version}", yanked, reason)
            self._changed()
        return out
