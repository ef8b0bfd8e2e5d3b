"""A registry as a static well-known site: the files any web server can publish.

    OUT/.well-known/agent-skills/index.json                  latest version of each skill
    OUT/.well-known/agent-skills/NAME/versions.json          every version, latest, yanked
    OUT/.well-known/agent-skills/NAME/vVERSION/index.json    immutable snapshot of one version
    OUT/.well-known/agent-skills/NAME/vVERSION/NAME.tar.gz   its archive (files at the root)
    OUT/.well-known/agent-skills/NAME/vVERSION/SKILL.md      instead, for a skill that is a SKILL.md alone

The latest index lists, per skill, the newest non-yanked release (the newest pre-release when
there is no release), pointing at the artifact inside that version's snapshot folder: artifacts
exist once. Snapshot indexes use relative URLs, so the tree can be served from any origin or path;
``base_url`` makes the latest index's URLs absolute (for clients that do not resolve relative
URLs, or a CDN in front of another origin).

Immutability: a version's snapshot folder is written once. Building into a folder that already
holds a snapshot reuses it as it is (after checking its index against the schema, the version and
description against the registry, and its artifact against the digest), so re-running on an
unchanged registry changes no byte and a new version only adds files (and rewrites the two
mutable documents). Versions the folder holds but the source no longer has (a site built from
skill folders, where each build sees one version) stay published and listed.

Artifacts are reproducible: archives are canonical tar.gz with a constant mtime, so the same files
give the same bytes (with the same zlib), and their digests are what the indexes promise.

``SiteBuilder`` is the library entry point: ``index()`` is the latest index document,
``files()`` every file with its bytes (a server can answer from it without writing a folder);
``build_site`` writes them.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from skillctl.bundle import ARCHIVE, SKILL_MD, BundleContents, archive_tar_gz, read_artifact, sha256_digest
from skillctl.errors import RegistryError
from skillctl.nesting import loads_json
from skillctl.registry.records import VersionRecord
from skillctl.registry.wellknown import format as fmt
from skillctl.versioning import SemVer

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Artifact:
    """One version as the format distributes it."""

    type: str  # "archive" | "skill-md"
    filename: str
    data: bytes
    digest: str


@dataclass(frozen=True)
class SiteFile:
    path: str  # relative to the site root, e.g. ".well-known/agent-skills/index.json"
    data: bytes
    immutable: bool

    @property
    def content_type(self) -> str:
        return fmt.content_type(self.path)


@dataclass(frozen=True)
class _Version:
    name: str
    version: str
    description: str
    yanked: bool
    record: VersionRecord | None  # None: published on the existing site only

    @property
    def semver(self) -> SemVer:
        return SemVer.parse(self.version)


def artifact_for(contents: BundleContents) -> Artifact:
    """A lone SKILL.md is published as a ``skill-md`` entry, anything more as an archive."""
    if set(contents.files) == {SKILL_FILE} and not contents.dirs:
        data = contents.files[SKILL_FILE]
        return Artifact(SKILL_MD, SKILL_FILE, data, sha256_digest(data))
    packed = archive_tar_gz(contents)
    return Artifact(ARCHIVE, fmt.artifact_filename(contents.name, ARCHIVE), packed.data, "sha256:" + packed.digest)


def _check_base_url(base_url: str | None) -> str | None:
    if base_url is None:
        return None
    try:
        parts = urlsplit(base_url)
    except ValueError:  # an unclosed "[" of an IPv6 address
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise RegistryError(f"--base-url {base_url!r} must be an http(s) URL without query or fragment, e.g. https://skills.example.com")
    return base_url.rstrip("/")


def _entry(v: _Version, artifact: Artifact, url: str) -> dict[str, Any]:
    return {
        "name": v.name,
        "type": artifact.type,
        "description": v.description,
        "url": url,
        "digest": artifact.digest,
        "version": v.version,
    }


def _index_doc(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"$schema": fmt.SCHEMA_URI, "skills": entries}


def _valid(doc: dict[str, Any], what: str) -> dict[str, Any]:
    errors = fmt.schema_errors(doc)
    if errors:  # a bug of ours, or registry content the format cannot carry
        raise RegistryError(f"{what} would not match the discovery schema: {errors[0]}")
    return doc


class SiteBuilder:
    """The site for ``registry`` (any backend: list_skills, versions, fetch).

    ``existing(path)`` returns the bytes of a file already published under that site path, or
    None; ``listing()`` the site paths already published. Both default to an empty site."""

    def __init__(
        self,
        registry: Any,
        *,
        base_url: str | None = None,
        existing: Callable[[str], bytes | None] = lambda path: None,
        listing: Callable[[], list[str]] = list,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.registry = registry
        self.base_url = _check_base_url(base_url)
        self.existing = existing
        self.listing = listing
        self.progress = progress
        self._artifacts: dict[tuple[str, str], tuple[bytes, Artifact, bool]] = {}
        self._skills: dict[str, list[_Version]] | None = None

    @staticmethod
    def site_path(rel: str) -> str:
        return f"{fmt.WELL_KNOWN_DIR}/{rel}"

    # ------------------------------------------------------------------ what is published

    def _published(self) -> dict[str, dict[str, _Version]]:
        """Versions already on the site (snapshot folders), with their listed yank state."""
        out: dict[str, dict[str, _Version]] = {}
        prefix = fmt.WELL_KNOWN_DIR + "/"
        for path in self.listing():
            parts = path[len(prefix):].split("/") if path.startswith(prefix) else []
            if len(parts) != 3 or parts[2] != fmt.INDEX_FILE or not parts[1].startswith("v") or not fmt.is_name(parts[0]):
                continue
            name, version = parts[0], parts[1][1:]
            entry = self._snapshot_entry(name, version)
            out.setdefault(name, {})[version] = _Version(name, version, entry["description"], False, None)
        for name, versions in out.items():
            body = self.existing(self.site_path(fmt.versions_path(name)))
            listed = fmt.parse_versions(body, self.site_path(fmt.versions_path(name))) if body else None
            if listed is not None:
                for version, v in list(versions.items()):
                    versions[version] = _Version(v.name, v.version, v.description, listed.is_yanked(v.semver), None)
        return out

    def skills(self) -> dict[str, list[_Version]]:
        """Every skill's versions, newest first: the registry's, plus those only the existing
        site has (immutable history is never dropped)."""
        if self._skills is not None:
            return self._skills
        published = self._published()
        skills: dict[str, list[_Version]] = {}
        for skill in self.registry.list_skills():
            versions = [_Version(r.name, r.version, r.description, r.yanked, r) for r in self.registry.versions(skill.name)]
            for version, old in published.pop(skill.name, {}).items():
                if not any(v.semver.same_as(old.semver) for v in versions):
                    versions.append(old)
            skills[skill.name] = versions
        for name, old_versions in published.items():
            skills[name] = list(old_versions.values())
        for versions in skills.values():
            versions.sort(key=lambda v: v.semver.order, reverse=True)
        self._skills = dict(sorted(skills.items()))
        return self._skills

    @staticmethod
    def latest(versions: list[_Version]) -> _Version | None:
        live = [v for v in versions if not v.yanked]
        return next((v for v in live if not v.semver.is_prerelease), live[0] if live else None)

    # ------------------------------------------------------------------ one version

    def _snapshot_entry(self, name: str, version: str) -> dict[str, Any]:
        path = self.site_path(fmt.snapshot_index_path(name, version))
        body = self.existing(path)
        assert body is not None
        try:
            doc = loads_json(body)
        except (UnicodeDecodeError, ValueError):
            doc = None
        errors = fmt.schema_errors(doc) if doc is not None else ["not JSON"]
        entries = doc.get("skills") if isinstance(doc, dict) else None
        if errors or not isinstance(entries, list) or len(entries) != 1 or entries[0]["name"] != name \
                or entries[0].get("version") != version or entries[0]["url"] != fmt.artifact_filename(name, entries[0]["type"]):
            detail = errors[0] if errors else f"it must list {name}@{version} alone, with a relative artifact URL"
            raise RegistryError(
                f"{path} in the output folder is not a snapshot skillctl can keep ({detail}); snapshots are immutable — "
                "restore it or build into an empty folder"
            )
        return entries[0]

    def snapshot(self, v: _Version) -> tuple[bytes, Artifact, bool]:
        """The snapshot index bytes and artifact of one version, and whether they are new."""
        key = (v.name, v.version)
        if key in self._artifacts:
            return self._artifacts[key]
        index_path = self.site_path(fmt.snapshot_index_path(v.name, v.version))
        old = self.existing(index_path)
        if old is not None:
            entry = self._snapshot_entry(v.name, v.version)
            if entry["description"] != v.description:
                raise RegistryError(
                    f"{index_path} in the output folder describes {v.name}@{v.version} differently from the registry; "
                    "snapshots are immutable — restore it or build into an empty folder"
                )
            artifact_path = self.site_path(f"{fmt.snapshot_dir(v.name, v.version)}/{entry['url']}")
            data = self.existing(artifact_path)
            if data is None or sha256_digest(data) != entry["digest"]:
                raise RegistryError(
                    f"{artifact_path} in the output folder is missing or does not match its snapshot's digest; "
                    "restore it or build into an empty folder"
                )
            result = (old, Artifact(entry["type"], entry["url"], data, entry["digest"]), False)
        else:
            if v.record is None:  # listed by the site, but its snapshot index is gone
                raise RegistryError(f"{index_path} vanished from the output folder while building; build again")
            data = self.registry.fetch(v.record.resolved())
            contents = read_artifact(data, v.record.artifact_type, expected_name=v.name, source=f"{v.name}@{v.version}")
            artifact = artifact_for(contents)
            doc = _valid(_index_doc([_entry(v, artifact, artifact.filename)]), index_path)
            result = (fmt.dumps(doc), artifact, True)
            if self.progress:
                self.progress(f"added {v.name}@{v.version} ({artifact.type}, {artifact.digest[:19]}…)")
        self._artifacts[key] = result
        return result

    # ------------------------------------------------------------------ documents

    def index(self) -> dict[str, Any]:
        """The latest index document (``index.json``)."""
        entries = []
        for name, versions in self.skills().items():
            v = self.latest(versions)
            if v is None:
                continue  # every version yanked: listed in versions.json only
            _, artifact, _ = self.snapshot(v)
            rel = f"{fmt.snapshot_dir(name, v.version)}/{artifact.filename}"
            url = f"{self.base_url}/{self.site_path(rel)}" if self.base_url else rel
            entries.append(_entry(v, artifact, url))
        return _valid(_index_doc(entries), self.site_path(fmt.INDEX_FILE))

    def versions_doc(self, name: str) -> dict[str, Any]:
        versions = self.skills()[name]
        latest = self.latest(versions)
        return {
            "latest": latest.version if latest else None,
            "versions": [v.version for v in reversed(versions)],
            "yanked": [v.version for v in reversed(versions) if v.yanked],
        }

    def files(self) -> Iterator[SiteFile]:
        """Every file of the site: snapshots (immutable) first, then the mutable documents."""
        for name, versions in self.skills().items():
            for v in reversed(versions):
                index_bytes, artifact, _ = self.snapshot(v)
                folder = fmt.snapshot_dir(name, v.version)
                yield SiteFile(self.site_path(f"{folder}/{artifact.filename}"), artifact.data, True)
                yield SiteFile(self.site_path(f"{folder}/{fmt.INDEX_FILE}"), index_bytes, True)
            yield SiteFile(self.site_path(fmt.versions_path(name)), fmt.dumps(self.versions_doc(name)), False)
        yield SiteFile(self.site_path(fmt.INDEX_FILE), fmt.dumps(self.index()), False)


def build_index(registry: Any, base_url: str | None = None) -> dict[str, Any]:
    """The latest ``index.json`` document for ``registry`` (every artifact is built to know its
    digest; keep a ``SiteBuilder`` to reuse them)."""
    return SiteBuilder(registry, base_url=base_url).index()


@dataclass(frozen=True)
class SiteReport:
    out: Path
    written: tuple[str, ...]  # site paths whose bytes changed or are new
    unchanged: int
    skills: int
    versions: int

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "written": list(self.written), "unchanged": self.unchanged, "skills": self.skills,
                "versions": self.versions}


def _write_atomic(target: Path, data: bytes, made: set[Path]) -> None:
    if target.parent not in made:
        target.parent.mkdir(parents=True, exist_ok=True)
        made.add(target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build_site(out: Path, registry: Any, *, base_url: str | None = None, progress: Callable[[str], None] | None = None) -> SiteReport:
    """Write (or bring up to date) the static site for ``registry`` in ``out``.

    Every file is written to a temporary name and renamed, so a server never serves half a file;
    a snapshot's artifact is written before its index, so an interrupted build leaves at worst an
    artifact without index, which the next build replaces. Existing snapshots are never
    rewritten (see the module docstring); only ``index.json`` and ``NAME/versions.json`` change."""
    out = Path(out)
    root = out / fmt.WELL_KNOWN_DIR

    def existing(path: str) -> bytes | None:
        try:
            return (out / path).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RegistryError(f"{out / path}: cannot read ({exc.strerror}); check the output folder") from None

    def listing() -> list[str]:
        if not root.is_dir():
            return []
        return sorted(p.relative_to(out).as_posix() for p in root.glob(f"*/v*/{fmt.INDEX_FILE}"))

    builder = SiteBuilder(registry, base_url=base_url, existing=existing, listing=listing, progress=progress)
    written: list[str] = []
    unchanged = 0
    made: set[Path] = set()
    try:
        for f in builder.files():
            target = out / f.path
            old = existing(f.path)
            if old == f.data:
                unchanged += 1
                continue
            _write_atomic(target, f.data, made)
            written.append(f.path)
    except OSError as exc:
        raise RegistryError(f"{out}: cannot write the site ({exc.strerror}); choose another output folder") from None
    skills = builder.skills()
    return SiteReport(out, tuple(written), unchanged, len(skills), sum(len(v) for v in skills.values()))


def build_site_from_folders(
    out: Path, folders: list[Path], *, base_url: str | None = None, progress: Callable[[str], None] | None = None
) -> SiteReport:
    """``build_site`` for skill folders (validated and packed as ``publish`` would, each at its
    ``metadata.version``) instead of a registry: they go through a scratch folder registry."""
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.prepare import prepare_folder

    with tempfile.TemporaryDirectory(prefix="skillctl-site-") as tmp:
        with LocalRegistry(Path(tmp) / "registry") as registry:
            for folder in folders:
                registry.publish(prepare_folder(folder))
            return build_site(out, registry, base_url=base_url, progress=progress)
