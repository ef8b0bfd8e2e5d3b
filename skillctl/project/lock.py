"""``skills.lock``: exactly what a project installs, with where each skill came from.

JSON, sorted keys, stable bytes. Per skill: its source (``kind`` and location: a registry's name
and URL, a git repository's URL, ref and folder, or a folder of the project), the exact version
or git commit, and the digests skillctl computes for bundles — ``digest`` of the artifact (a
registry's bundle; for git and folders the canonical ``.skill.tgz`` of the files) and
``tar_digest`` of the canonical uncompressed tar, the content's identity whatever the source.
The lock also keeps a copy of the ``skills.yaml`` sections it was resolved from, so a lock that
no longer matches is detected (``install --frozen`` refuses it), the environment skillctl.env
resolved (``environment``) and, under a trust policy, the key id of every key file (``trust``).

A skill from an MCP server also records ``manifest``, the digest of the file list the server's
entry declared (and its SKILL.md URI as ``subdir``): ``install --frozen`` refuses a server that
declares other files before reading any.

Every install re-verifies every digest against the lock: a source that serves other bytes for a
locked version (a registry's replaced version, a moved git tag, a rewritten history, an edited
folder) is refused, never trusted.

Format 2 added the sources. Format 1 (every skill from the one registry given at install time)
is still read: its skills come from the default registry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillctl.bundle import ARTIFACT_TYPES, BUNDLE
from skillctl.errors import LockError
from skillctl.fsutil import write_atomic  # noqa: F401 - project files are written with it
from skillctl.protocols import ResolvedSkill, SourcePin, SourceSpec
from skillctl.registry.refs import NAME_RE
from skillctl.versioning import SEMVER_RE

LOCK_VERSION = 2
READABLE_VERSIONS = (1, 2)
_COMMIT_CHARS = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class LockedSkill:
    """One locked skill. ``source`` is JSON-ready: ``{"kind": "registry", "registry": NAME,
    "url": URL}``, ``{"kind": "git", "url", "ref", "subdir"}`` or ``{"kind": "path", "path"}``;
    ``revision`` the registry's skill id or the git commit ("" for a folder)."""

    name: str
    requested: str
    source: dict[str, str]
    version: str
    revision: str
    digest: str
    tar_digest: str
    size: int
    index: str = ""  # the immutable index a well-known site listed this version in
    artifact_type: str = BUNDLE
    signer: str | None = None  # key id of the trusted key that signed it, under a trust policy
    subdir: str = ""  # where in a git repository or folder the skill was found; an MCP skill's SKILL.md URI
    description: str = field(default="", compare=False)
    manifest: str = ""  # an MCP skill: the digest of the file list its server's entry declared

    @property
    def kind(self) -> str:
        return self.source.get("kind", "registry")

    @property
    def id(self) -> str:  # the registry's skill id, as format 1 called it
        return self.revision if self.kind == "registry" else ""

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"source": dict(self.source), "requested": self.requested, "digest": self.digest,
                               "tar_digest": self.tar_digest, "size": self.size}
        if self.version:
            doc["version"] = self.version
        if self.kind == "registry":
            doc["id"] = self.revision
        elif self.kind == "git":
            doc["commit"] = self.revision
        if self.subdir:
            doc["subdir"] = self.subdir
        if self.index:
            doc["index"] = self.index
        if self.artifact_type != BUNDLE:
            doc["type"] = self.artifact_type
        if self.signer is not None:
            doc["signer"] = self.signer
        if self.manifest:
            doc["manifest"] = self.manifest
        return doc

    def label(self) -> str:
        """``tally@1.2.0``, ``brainstorming@3f2a9c1`` (a commit), or the name alone."""
        if self.version:
            return f"{self.name}@{self.version}"
        return f"{self.name}@{self.revision[:7]}" if self.revision else self.name

    def as_resolved(self, description: str = "") -> ResolvedSkill:
        """What the loader and the environment read: for a registry skill its record; for git
        and folders the canonical bundle the lock's digests name (``ProjectStore`` serves it)."""
        return ResolvedSkill(
            self.revision if self.kind == "registry" else f"{self.kind}:{self.name}", self.name, self.version or "0.0.0",
            description or self.description, self.digest, self.tar_digest, self.size,
            artifact_type=self.artifact_type, index_url=self.index, manifest=self.manifest,
        )

    def spec(self, url: str | None = None) -> SourceSpec:
        """The source spec this skill was locked from (``url``: where its registry is now)."""
        if self.kind == "git":
            return SourceSpec("git", self.source["url"], self.source.get("ref", ""), self.source.get("subdir", ""), self.name)
        if self.kind == "path":
            return SourceSpec("path", self.source["path"], name=self.name)
        return SourceSpec("registry", url or self.source.get("url", ""), self.version, self.subdir, name=self.name)

    def pin(self, url: str | None = None) -> SourcePin:
        extra: dict[str, Any] = {}
        if self.index:
            extra["index"] = self.index
        if self.artifact_type != BUNDLE:
            extra["type"] = self.artifact_type
        if self.manifest:
            extra["manifest"] = self.manifest
        return SourcePin(self.spec(url), self.name, self.version, self.revision, self.digest, self.tar_digest, self.size,
                         self.subdir, self.description, extra)

    @classmethod
    def from_pin(cls, pin: SourcePin, *, requested: str, source: dict[str, str], signer: str | None = None) -> "LockedSkill":
        return cls(pin.name, requested, source, pin.version, pin.revision, pin.digest, pin.tar_digest, pin.size,
                   pin.extra.get("index", ""), pin.extra.get("type", BUNDLE), signer, pin.subdir, pin.description,
                   pin.extra.get("manifest", ""))


@dataclass(frozen=True)
class Lock:
    requirements: dict[str, Any]  # the skills.yaml sections it was resolved from (Project.requirements_doc)
    skills: tuple[LockedSkill, ...]
    # The resolved skill environment (skillctl.env.lock writes and reads it); None without one.
    environment: dict[str, Any] | None = None
    # Under a trust policy: {"keys": {KEY FILE AS WRITTEN: KEY ID}}; None without one.
    trust: dict[str, Any] | None = None
    format: int = LOCK_VERSION  # what the file said; always written as LOCK_VERSION
    # Skills whose requires-python is not held against the agent image: skills.yaml's
    # environment.ignore-requires-python and the --ignore-requires-python given to lock.
    ignore_requires_python: tuple[str, ...] = ()

    @property
    def trust_section(self) -> Any:
        """The ``trust:`` section the lock was written under (None without one)."""
        return self.requirements.get("trust")

    @property
    def environment_section(self) -> Any:
        return self.requirements.get("environment")

    def by_name(self) -> dict[str, LockedSkill]:
        return {s.name: s for s in self.skills}

    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "lockfile_version": LOCK_VERSION,
            "requirements": self.requirements,
            "skills": {s.name: s.to_dict() for s in sorted(self.skills, key=lambda s: s.name)},
        }
        if self.environment is not None:
            doc["environment"] = self.environment
        if self.trust is not None:
            doc["trust"] = self.trust
        if self.ignore_requires_python:
            doc["ignore_requires_python"] = sorted(self.ignore_requires_python)
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def is_stale(self, current: dict[str, Any]) -> bool:
        """Whether ``current`` (``Project.requirements_doc()``) asks for something else."""
        return _comparable(self.requirements) != _comparable(current)


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in doc.items() if v is not None}
    out.setdefault("prereleases", False)
    if not out.get("registries"):
        out.pop("registries", None)
    return out


def _fail(path: Path, what: str) -> LockError:
    return LockError(f"{path}: {what}; regenerate it with: skillctl lock")


def _source_of(path: Path, name: str, s: dict[str, Any], fmt: int) -> dict[str, str]:
    if fmt == 1:
        return {"kind": "registry", "registry": "default", "url": ""}
    source = s.get("source")
    if not isinstance(source, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in source.items()):
        raise _fail(path, f"skills.{name}.source is missing or not an object of strings")
    kind = source.get("kind")
    needed = {"registry": ("registry", "url"), "git": ("url", "ref"), "path": ("path",)}.get(kind or "")
    if needed is None:
        raise _fail(path, f"skills.{name}.source.kind {kind!r} is not registry, git or path")
    missing = [k for k in needed if k not in source]
    if missing:
        raise _fail(path, f"skills.{name}.source has no {missing[0]}")
    return dict(source)


def _locked_skill(path: Path, name: Any, s: Any, fmt: int) -> LockedSkill:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(path, f"'{name}' is not a skill name")
    if not isinstance(s, dict):
        raise _fail(path, f"skills.{name} is not an object")
    source = _source_of(path, name, s, fmt)
    kind = source["kind"]
    for key in ("digest",) + (("id", "version") if kind == "registry" else ("commit",) if kind == "git" else ()):
        if not isinstance(s.get(key), str):
            raise LockError(f"{path}: skills.{name}.{key} is missing or not a string")
    version = s.get("version", "")
    # A lock pins; a range here would be re-resolved at install time, silently.
    if not isinstance(version, str) or (version and not SEMVER_RE.match(version)):
        raise _fail(path, f"skills.{name}.version '{version}' is not an exact version")
    revision = s.get("id", "") if kind == "registry" else s.get("commit", "") if kind == "git" else ""
    if kind == "git" and (len(revision) != 40 or not set(revision) <= _COMMIT_CHARS):
        raise _fail(path, f"skills.{name}.commit '{revision}' is not a full commit id (40 hex digits)")
    artifact_type = s.get("type", BUNDLE)
    if artifact_type not in ARTIFACT_TYPES or not isinstance(s.get("index", ""), str):
        raise _fail(path, f"skills.{name} has an unknown type {artifact_type!r} or a malformed index")
    signer = s.get("signer")
    if signer is not None and not isinstance(signer, str):
        raise LockError(f"{path}: skills.{name}.signer is not a key id string")
    requested, tar_digest, subdir = s.get("requested", ""), s.get("tar_digest", ""), s.get("subdir", "")
    if not all(isinstance(v, str) for v in (requested, tar_digest, subdir)):
        raise _fail(path, f"skills.{name} has a non-string requested, tar_digest or subdir")
    size = s.get("size", 0)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _fail(path, f"skills.{name}.size is not a size")
    manifest = s.get("manifest", "")
    if not isinstance(manifest, str) or (manifest and not manifest.startswith("sha256:")):
        raise _fail(path, f"skills.{name}.manifest is not a sha256: digest")
    if kind != "registry" and not tar_digest:
        raise _fail(path, f"skills.{name} has no tar_digest, which a {kind} source is checked against")
    return LockedSkill(name, requested, source, version, revision, s["digest"], tar_digest, size, s.get("index", ""),
                       artifact_type, signer, subdir, manifest=manifest)


def parse_lock(doc: Any, path: Path) -> Lock:
    if not isinstance(doc, dict):
        raise _fail(path, "not a JSON object")
    fmt = doc.get("lockfile_version")
    if fmt not in READABLE_VERSIONS:
        raise LockError(f"{path}: lockfile_version {fmt!r} is not supported (this skillctl reads {', '.join(map(str, READABLE_VERSIONS))}); "
                        "upgrade skillctl, or regenerate the lock with: skillctl lock")
    req = doc.get("requirements")
    if not isinstance(req, dict) or not isinstance(req.get("skills", {}), dict):
        raise _fail(path, "requirements is missing or malformed")
    environment = doc.get("environment")
    if environment is not None and not isinstance(environment, dict):
        raise _fail(path, "environment must be an object")
    trust = doc.get("trust")
    if trust is not None and not (isinstance(trust, dict) and isinstance(trust.get("keys"), dict)
                                  and all(isinstance(k, str) and isinstance(v, str) for k, v in trust["keys"].items())):
        raise _fail(path, "trust must be {\"keys\": {FILE: KEY ID}}")
    skills = doc.get("skills")
    if not isinstance(skills, dict):
        raise _fail(path, "skills must be an object")
    ignored = doc.get("ignore_requires_python", [])
    if not isinstance(ignored, list) or not all(isinstance(n, str) and NAME_RE.match(n) for n in ignored):
        raise _fail(path, "ignore_requires_python must be a list of skill names")
    locked = tuple(_locked_skill(path, name, s, fmt) for name, s in skills.items())
    return Lock(dict(req), locked, environment, trust, fmt, tuple(ignored))


def read_lock(path: Path) -> Lock:
    from skillctl.fsutil import read_regular_text
    from skillctl.nesting import loads_json

    try:
        # A FIFO planted as skills.lock is refused, not waited on; nesting is bounded before parsing.
        doc = loads_json(read_regular_text(path))
    except FileNotFoundError:
        raise LockError(f"{path} not found; create it with: skillctl lock") from None
    except (OSError, ValueError) as exc:
        raise LockError(f"{path} is unreadable or not JSON ({exc}); regenerate it with: skillctl lock") from None
    return parse_lock(doc, path)
