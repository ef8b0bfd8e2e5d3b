"""Declared skills (``skills.yaml``) and their resolution (``skills.lock``).

``skills.yaml`` is what a project asks for; ranges allowed::

    skills:
      tally: ^1.0
      csv-sql: 1.1.0
    prereleases: false     # optional
    network: {...}         # optional: the runs' network policy (read by skillctl.egress.policy)

An optional ``environment:`` section (``python``/``debian`` lists) declares packages for the
skills' scripts; ``skillctl.env`` resolves it and keeps its result in the lock's separate
``environment`` section. An optional ``trust:`` section (``skillctl.trust.policy``) names the keys
a version must be signed by and an audit threshold; the lock then records each version's signer
key id and, in its ``trust`` section, the key id of every listed key file.

``skills.lock`` is JSON (sorted keys, stable bytes) with, per skill, the exact version, stable id
and the sha256 of the bundle and of its uncompressed tar, plus a copy of the requirements it was
resolved from, so a lock that no longer matches skills.yaml is detected (``install --frozen``
refuses it). Every install re-verifies every digest against the lock: a registry that serves
other bytes for a locked version is refused, never trusted.

Skills from a well-known site also record ``index``, the immutable versioned index the version
was found in (the format's lockfile pattern), and ``type``, the artifact's format (``archive`` or
``skill-md``; the digest is the artifact's). A frozen install reads that index directly, never
the site's mutable ``index.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from skillctl.bundle import ARTIFACT_TYPES, BUNDLE, read_artifact, sha256_digest, write_contents
from skillctl.env.declare import project_declarations
from skillctl.errors import IntegrityError, LockError, SkillctlError
from skillctl.fsutil import read_regular_text
from skillctl.nesting import loads_json
from skillctl.yamlfile import read_yaml
from skillctl.protocols import RECORD_LOCKS, Registry, RegistryReader, ResolvedSkill
from skillctl.trust.policy import parse_policy
from skillctl.registry.refs import NAME_RE, parse_ref
from skillctl.versioning import SEMVER_RE

LOCK_VERSION = 1
REQUIREMENTS_FILE = "skills.yaml"
LOCK_FILE = "skills.lock"


def project_file(lock: Path | None = None) -> Path:
    """A run's project file: the ``skills.yaml`` beside ``lock`` when one is given, else the one
    in the current folder (it may not exist). Its ``network:`` and ``trust:`` both apply."""
    return (lock.resolve().parent if lock else Path.cwd()) / REQUIREMENTS_FILE


@dataclass(frozen=True)
class Requirements:
    skills: dict[str, str]  # name -> range
    prereleases: bool = False
    # skills.yaml's `environment:` section as written (checked by skillctl.env.declare);
    # None when absent, so locks written before environments existed stay fresh.
    environment: dict[str, Any] | None = None
    # skills.yaml's `trust:` section as written (checked by skillctl.trust.policy); None when absent.
    trust: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"skills": dict(sorted(self.skills.items())), "prereleases": self.prereleases}
        if self.environment is not None:
            doc["environment"] = self.environment
        if self.trust is not None:
            doc["trust"] = self.trust
        return doc


@dataclass(frozen=True)
class LockedSkill:
    name: str
    requested: str
    id: str
    version: str
    digest: str
    tar_digest: str
    size: int
    index: str = ""  # the immutable index a well-known site listed this version in
    artifact_type: str = BUNDLE
    signer: str | None = None  # key id of the trusted key that signed it, under a trust policy

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "requested": self.requested,
            "digest": self.digest,
            "tar_digest": self.tar_digest,
            "size": self.size,
            **({"index": self.index} if self.index else {}),
            **({"type": self.artifact_type} if self.artifact_type != BUNDLE else {}),
        }
        if self.signer is not None:
            doc["signer"] = self.signer
        return doc

    def as_resolved(self, description: str = "") -> ResolvedSkill:
        return ResolvedSkill(
            self.id, self.name, self.version, description, self.digest, self.tar_digest, self.size,
            artifact_type=self.artifact_type, index_url=self.index,
        )


@dataclass(frozen=True)
class Lock:
    requirements: Requirements
    skills: tuple[LockedSkill, ...]
    # The resolved skill environment (skillctl.env.lock writes and reads it); None without one.
    environment: dict[str, Any] | None = None
    # Under a trust policy: {"keys": {KEY FILE AS WRITTEN: KEY ID}}; None without one.
    trust: dict[str, Any] | None = None

    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "lockfile_version": LOCK_VERSION,
            "requirements": self.requirements.to_dict(),
            "skills": {s.name: s.to_dict() for s in sorted(self.skills, key=lambda s: s.name)},
        }
        if self.environment is not None:
            doc["environment"] = self.environment
        if self.trust is not None:
            doc["trust"] = self.trust
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def is_stale(self, current: Requirements) -> bool:
        return self.requirements.to_dict() != current.to_dict()


def load_requirements(path: Path) -> Requirements:
    doc = read_yaml(path, error=LockError, missing=f"{path} not found; declare skills there, e.g. 'skills: {{tally: ^1.0}}'")
    if doc is None:
        doc = {}
    if not isinstance(doc, dict) or not isinstance(doc.get("skills", {}), dict):
        raise LockError(f"{path}: expected a mapping with 'skills: {{NAME: RANGE}}'")
    unknown = set(doc) - {"skills", "prereleases", "environment", "network", "trust"}
    if unknown:
        raise LockError(
            f"{path}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; allowed: skills, prereleases, environment, network, trust"
        )
    skills: dict[str, str] = {}
    for name, rng in (doc.get("skills") or {}).items():
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise LockError(f"{path}: '{name}' is not a skill name (lowercase letters, digits and '-')")
        if rng is None:
            rng = "latest"
        if not isinstance(rng, str):
            raise LockError(f"{path}: skills.{name}: write the range as a quoted string, e.g. \"{rng}\"")
        try:
            parse_ref(f"{name}@{rng}")
        except SkillctlError as exc:
            raise LockError(f"{path}: skills.{name}: {exc}") from None
        skills[name] = rng
    pre = doc.get("prereleases", False)
    if not isinstance(pre, bool):
        raise LockError(f"{path}: prereleases must be true or false")
    environment = doc.get("environment")
    if environment is not None:
        try:
            project_declarations(environment, str(path))
        except SkillctlError as exc:
            raise LockError(str(exc)) from None
    trust = doc.get("trust")
    if "trust" in doc:
        parse_policy(trust, str(path))  # ConfigError naming every problem
    return Requirements(skills, pre, environment, trust)


class LockGate(Protocol):
    """What a trust policy checks while locking (``skillctl.trust.enforce.Gate``)."""

    def key_ids(self) -> dict[str, str]: ...

    def check_all(self, registry: RegistryReader, skills: Sequence[ResolvedSkill]) -> dict[str, str | None]: ...


def resolve_lock(req: Requirements, registry: Registry, *, progress: Callable[[str], None] | None = None,
                 gate: LockGate | None = None) -> Lock:
    """Resolve every requirement; under a trust policy (``gate``) every version must pass it,
    and the lock records who signed each. Nothing is recorded in the registry before all pass."""
    resolved = []
    for name, rng in sorted(req.skills.items()):
        rec = registry.resolve(f"{name}@{rng}", prereleases=req.prereleases)
        if progress:
            progress(f"locked {name} {rng} -> {rec.version} ({rec.digest[:19]}…)")
        resolved.append((name, rng, rec))
    signers = gate.check_all(registry, [rec for _, _, rec in resolved]) if gate is not None else {}
    locked = []
    for name, rng, rec in resolved:
        # Registries that can remove versions must know which ones a lock pins; the others
        # (read-only, OCI) cannot remove them either, so there is nothing to protect.
        if RECORD_LOCKS in registry.capabilities:
            registry.mark_locked(rec)
        locked.append(
            LockedSkill(name, rng, rec.id, rec.version, rec.digest, rec.tar_digest, rec.size, rec.index_url, rec.artifact_type,
                        signers.get(name))
        )
    return Lock(req, tuple(locked), trust={"keys": gate.key_ids()} if gate is not None else None)


def read_lock(path: Path) -> Lock:
    try:
        doc = loads_json(read_regular_text(path))
    except FileNotFoundError:
        raise LockError(f"{path} not found; create it with: skillctl lock") from None
    except (OSError, ValueError) as exc:
        raise LockError(f"{path} is unreadable or not JSON ({exc}); regenerate it with: skillctl lock") from None
    try:
        if doc["lockfile_version"] != LOCK_VERSION:
            raise LockError(f"{path}: lockfile_version {doc['lockfile_version']} is not supported (expected {LOCK_VERSION})")
        r = doc["requirements"]
        req = Requirements(dict(r["skills"]), bool(r.get("prereleases", False)), r.get("environment"), r.get("trust"))
        environment = doc.get("environment")
        if environment is not None and not isinstance(environment, dict):
            raise LockError(f"{path}: environment must be an object; regenerate it with: skillctl lock")
        trust = doc.get("trust")
        if trust is not None and not (isinstance(trust, dict) and isinstance(trust.get("keys"), dict)
                                      and all(isinstance(k, str) and isinstance(v, str) for k, v in trust["keys"].items())):
            raise LockError(f"{path}: trust must be {{\"keys\": {{FILE: KEY ID}}}}; regenerate it with: skillctl lock")
        skills = []
        for name, s in doc["skills"].items():
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise LockError(f"{path}: '{name}' is not a skill name; regenerate it with: skillctl lock")
            for key in ("id", "version", "digest"):
                if not isinstance(s.get(key), str):
                    raise LockError(f"{path}: skills.{name}.{key} is missing or not a string")
            # A lock pins; a range here would be re-resolved at install time, silently.
            if not SEMVER_RE.match(s["version"]):
                raise LockError(
                    f"{path}: skills.{name}.version '{s['version']}' is not an exact version; regenerate it with: skillctl lock"
                )
            kind = s.get("type", BUNDLE)
            if kind not in ARTIFACT_TYPES or not isinstance(s.get("index", ""), str):
                raise LockError(f"{path}: skills.{name} has an unknown type {kind!r} or a malformed index; regenerate it with: skillctl lock")
            signer = s.get("signer")
            if signer is not None and not isinstance(signer, str):
                raise LockError(f"{path}: skills.{name}.signer is not a key id string")
            skills.append(
                LockedSkill(
                    name, s.get("requested", ""), s["id"], s["version"], s["digest"], s.get("tar_digest", ""), int(s.get("size", 0)),
                    s.get("index", ""), kind, signer,
                )
            )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise LockError(f"{path} is malformed ({exc!r}); regenerate it with: skillctl lock") from None
    return Lock(req, tuple(skills), environment, trust)


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            # mkstemp makes 0600; a lockfile is project content, so honour the umask like open() does.
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fh.fileno(), 0o666 & ~umask)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def resolve_locked(registry: RegistryReader, skill: LockedSkill) -> ResolvedSkill:
    """The registry's record for a locked version, refused unless it has the locked digest.

    Resolved by name and exact version, not by id: ids are per registry, and a lock must keep
    working against a mirror (``skillctl copy``) that holds the same bytes. The lock's ``index``
    (a well-known site's versioned snapshot) tells such a site where to look."""
    rec = registry.resolve(f"{skill.name}@{skill.version}", index_url=skill.index)
    if rec.digest != skill.digest:
        raise IntegrityError(
            f"{skill.name}@{skill.version}: the registry now serves {rec.digest[:19]}… but skills.lock pins "
            f"{skill.digest[:19]}…; refusing — the version was changed behind your back"
        )
    return rec


def fetch_locked(registry: RegistryReader, skill: LockedSkill) -> tuple[ResolvedSkill, bytes]:
    """Fetch exactly what the lock names, verifying the registry still serves the same bytes."""
    rec = resolve_locked(registry, skill)
    data = registry.fetch(rec)
    if sha256_digest(data) != skill.digest:
        raise IntegrityError(f"{skill.name}@{skill.version}: fetched bytes do not match skills.lock ({skill.digest[:19]}…)")
    return rec, data


def install(lock: Lock, registry: RegistryReader, dest: Path, *, progress: Callable[[str], None] | None = None,
            fetched: Mapping[str, bytes] | None = None) -> list[Path]:
    """Install every locked skill into ``dest/NAME/``; returns the folders, sorted by name.

    All bundles are fetched and checked (digest against the lock, then every member) before
    the first one is written: one bad skill leaves ``dest`` exactly as it was. ``fetched``
    holds bundles already fetched (and checked by a trust policy) by name; their digests are
    checked against the lock all the same.
    """
    checked = []
    for skill in sorted(lock.skills, key=lambda s: s.name):
        data = (fetched or {}).get(skill.name)
        if data is None:
            _, data = fetch_locked(registry, skill)
        elif sha256_digest(data) != skill.digest:
            raise IntegrityError(f"{skill.name}@{skill.version}: bytes handed to install do not match skills.lock ({skill.digest[:19]}…)")
        checked.append((skill, read_artifact(data, skill.artifact_type, expected_name=skill.name, source=f"{skill.name}@{skill.version}")))
    out = []
    for skill, contents in checked:
        folder = write_contents(contents, dest, overwrite=True)
        if progress:
            progress(f"installed {skill.name}@{skill.version} -> {folder}")
        out.append(folder)
    return out
