"""``WellKnownRegistry``: any web server publishing the Agent Skills well-known URI, read-only.

``--registry https://HOST`` reads ``https://HOST/.well-known/agent-skills/index.json``; a URL
ending in ``.json`` names the index itself (a site under a path, or one versioned snapshot).
The same records and semantics as the folder registry, where the format carries them:

- **skills** are the index's entries; ids are made up from the site and the name (stable, but
  per site, like every registry's ids); descriptions are the index's;
- **versions** come from ``NAME/versions.json`` and the immutable ``NAME/vVERSION/index.json``
  snapshots skillctl publishes, or from the format's site-wide ``versions.json`` and
  ``vX/index.json``; a site with neither has the one version its index lists (``0.0.0`` when the
  entry has none). ``yanked`` versions (listed in skillctl's ``versions.json``) match only by
  exact version, as everywhere;
- **resolving** the latest version reads ``index.json`` once, then pins the version's immutable
  snapshot when the site has one, so ``skillctl lock`` records it and a frozen install reads that
  snapshot (never the mutable index) and re-checks the digest there;
- **fetching** verifies the artifact's sha256 against the index before anything is unpacked,
  with a cache keyed by digest; artifacts are read by ``skillctl.bundle.read_artifact`` under the
  bundle rules (``archive``: .tar.gz or .zip with the files at the root; ``skill-md``);
- **writing** (publish, yank, remove, gc) is refused: a site is published by building it
  (``skillctl site build``) and uploading the folder;
- **a key** (``token``, else ``SKILLCTL_SITE_TOKEN``) reads a private site such as ``skillctl
  serve --keys``: it goes to the site's own origin only (see ``transport``), and documents read
  with it are revalidated at each use rather than served from the cache (see ``cache``).

Unknown ``$schema`` values are refused; entries of an unknown ``type`` are skipped with a warning.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Callable
from urllib.parse import urljoin, urlsplit, urlunsplit

from skillctl.bundle import BundleLimits, read_artifact
from skillctl.errors import IntegrityError, NotFoundError, RegistryError, SkillctlError, UnsupportedError
from skillctl.protocols import ResolvedSkill
from skillctl.registry.readonly import ReadOnlyRegistry
from skillctl.registry.records import Problem, SkillRecord, VersionRecord, summarize
from skillctl.registry.refs import SkillRef, parse_ref
from skillctl.registry.wellknown import format as fmt
from skillctl.registry.wellknown.cache import SiteCache, default_cache_dir
from skillctl.registry.wellknown.client import SiteClient
from skillctl.registry.wellknown.transport import HttpClient, SiteKey
from skillctl.versioning import SemVer

ENV_INSECURE = "SKILLCTL_INSECURE"
ENV_TOKEN = "SKILLCTL_SITE_TOKEN"
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")  # visible ASCII: what an HTTP header carries without quoting


def index_url_for(url: str) -> str:
    """The index URL a ``--registry`` URL means: as given when it ends in ``.json``, else the
    well-known path below it (``https://HOST`` → ``https://HOST/.well-known/agent-skills/index.json``)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise RegistryError(f"registry URL {url} is not a URL ({exc}); write https://HOST or the URL of its index.json") from None
    if not parts.hostname:
        raise RegistryError(f"registry URL {url} names no host; write https://HOST or the URL of its index.json")
    if "@" in parts.netloc:
        # Not echoed: the part before "@" may be a password.
        raise RegistryError("the registry URL holds credentials (user@ or user:password@); a site takes a key instead: "
                            "--token-stdin or SKILLCTL_SITE_TOKEN")
    if parts.query or parts.fragment:
        raise RegistryError(f"registry URL {url} has a query or fragment; give the site (https://HOST) or its index URL")
    if parts.path.endswith(".json"):
        return url
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/{fmt.WELL_KNOWN_DIR}/{fmt.INDEX_FILE}", "", ""))


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def site_key(site: str, token: str | None) -> SiteKey | None:
    """The key for ``site`` (its origin): ``token`` when given, else ``SKILLCTL_SITE_TOKEN``
    (unset or blank: none). A key a header cannot carry is refused without being shown."""
    if token is None:
        token = os.environ.get(ENV_TOKEN, "").strip() or None
        where = ENV_TOKEN
    else:
        where = "the key given"
    if token is None:
        return None
    if not _TOKEN_RE.fullmatch(token):
        raise RegistryError(f"{where} is not a key: a key is one word of visible ASCII characters (no spaces, "
                            "control or non-ASCII characters); check what was given")
    return SiteKey(site, token)


class WellKnownRegistry(ReadOnlyRegistry):
    """A read-only registry over one well-known index (see the module docstring); the writes of
    the ``Registry`` protocol raise ``UnsupportedError`` (``capabilities`` is empty)."""

    def __init__(self, index_url: str, client: SiteClient, *, warn: Callable[[str], None] | None = None) -> None:
        self.index_url = index_url
        self.root = urljoin(index_url, ".")  # the folder the layout's relative paths start from
        self.client = client
        self.warnings: list[str] = []
        self._warn = warn
        self._limits = BundleLimits()
        self._indexes: dict[str, dict[str, fmt.IndexEntry] | None] = {}
        self._version_lists: dict[str, fmt.VersionList | None] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        insecure: bool | None = None,
        ca_bundle: str | None = None,
        cache_dir: str | None | bool = None,
        warn: Callable[[str], None] | None = None,
        deadline_s: float = 60.0,
        attempts: int = 3,
        token: str | None = None,
    ) -> "WellKnownRegistry":
        """``insecure=None`` reads ``SKILLCTL_INSECURE`` (needed for http:// URLs); ``token``
        None reads ``SKILLCTL_SITE_TOKEN`` (a key for a private site, sent to its origin only);
        ``cache_dir`` None is the default cache, False none at all; ``warn`` receives what is
        skipped (default: a ``warning:`` line on stderr)."""
        index = index_url_for(url)
        parts = urlsplit(index)
        site = f"{parts.scheme}://{parts.netloc}"
        http = HttpClient(
            insecure=_env_flag(ENV_INSECURE) if insecure is None else insecure, ca_bundle=ca_bundle, deadline_s=deadline_s,
            attempts=attempts, key=site_key(site, token), site=site,
        )
        http.check_url(index, "the registry")
        cache = None if cache_dir is False else SiteCache(default_cache_dir() if cache_dir in (None, True) else cache_dir)
        return cls(index, SiteClient(http, cache), warn=warn)

    @property
    def url(self) -> str:
        return self.index_url

    def __repr__(self) -> str:
        return f"WellKnownRegistry({self.index_url!r})"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "WellKnownRegistry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ documents

    def _index_at(self, url: str, *, required: bool = False) -> dict[str, fmt.IndexEntry] | None:
        """The entries of the index at ``url`` (memoised), None when it does not exist."""
        if url not in self._indexes:
            body = self.client.document(url, max_bytes=fmt.MAX_INDEX_BYTES, what="reading the skills index")
            self._indexes[url] = None if body is None else fmt.parse_index(body, url, self.warn)
        entries = self._indexes[url]
        if entries is None and required:
            raise NotFoundError(
                f"no skills index at {url} (HTTP 404); check the site URL — skills are published at "
                f"https://HOST/{fmt.WELL_KNOWN_DIR}/{fmt.INDEX_FILE}"
            )
        return entries

    def _latest(self) -> dict[str, fmt.IndexEntry]:
        entries = self._index_at(self.index_url, required=True)
        assert entries is not None
        return entries

    def _version_list(self, url: str) -> fmt.VersionList | None:
        if url not in self._version_lists:
            body = self.client.document(url, max_bytes=fmt.MAX_VERSIONS_BYTES, what="reading a version list")
            self._version_lists[url] = None if body is None else fmt.parse_versions(body, url)
        return self._version_lists[url]

    def _skill_id(self, name: str) -> str:
        return "skill_" + hashlib.sha256(f"{self.root}\n{name}".encode("utf-8")).hexdigest()[:24]

    def _record(self, entry: fmt.IndexEntry, index_url: str, *, yanked: bool = False) -> VersionRecord:
        return VersionRecord(
            skill_id=self._skill_id(entry.name), name=entry.name, version=entry.version or fmt.UNVERSIONED,
            description=entry.description, digest=entry.digest, tar_digest="", size=0, files=0, created_at=0,
            yanked=yanked, artifact_type=entry.type, index_url=index_url, artifact_url=entry.url,
        )

    # ------------------------------------------------------------------ versions

    def _name_for(self, ref: SkillRef) -> str:
        if ref.name:
            return ref.name
        for name in self._latest():
            if self._skill_id(name) == ref.skill_id:
                return name
        raise NotFoundError(f"no skill with id '{ref.skill_id}' in {self.url}; see: skillctl list --registry {self.url}")

    def _candidates(self, name: str) -> list[tuple[SemVer, bool, str]]:
        """(version, yanked, URL of the immutable index listing it) for every version of
        ``name`` the site publishes, newest first; [] when it publishes no version lists."""
        own = self._version_list(urljoin(self.root, fmt.versions_path(name)))
        if own is not None:
            return [(v, own.is_yanked(v), urljoin(self.root, fmt.snapshot_index_path(name, str(v)))) for v in own.versions]
        site = self._version_list(urljoin(self.root, fmt.VERSIONS_FILE))
        if site is None:
            return []
        out = []
        for v in site.versions:  # the format's site-wide snapshots: look inside each
            url = urljoin(self.root, f"v{v}/{fmt.INDEX_FILE}")
            entry = (self._index_at(url) or {}).get(name)
            if entry is not None:
                out.append((entry.semver if entry.version else v, site.is_yanked(v), url))
        return sorted(out, key=lambda c: c[0].order, reverse=True)

    def _from_index(self, url: str, name: str, version: SemVer | None, yanked: bool = False) -> VersionRecord | None:
        entry = (self._index_at(url) or {}).get(name)
        if entry is None or (version is not None and not entry.semver.same_as(version)):
            return None
        return self._record(entry, url, yanked=yanked)

    def _pinned(self, entry: fmt.IndexEntry) -> VersionRecord:
        """The latest index's entry, pinned to an immutable snapshot listing the same artifact
        when the site has one: first where skillctl's layout puts it (one request), else among
        the site's version lists (the format's site-wide snapshots)."""
        if entry.version:
            url = urljoin(self.root, fmt.snapshot_index_path(entry.name, entry.version))
            snap = self._from_index(url, entry.name, entry.semver)
            if snap is not None and snap.digest == entry.digest:
                return snap
        for v, yanked, url in self._candidates(entry.name):
            if entry.version is None or v.same_as(entry.semver):
                snap = self._from_index(url, entry.name, v, yanked)
                if snap is not None and snap.digest == entry.digest:
                    return snap
        return self._record(entry, self.index_url)

    def _exact(self, name: str, want: SemVer, index_url: str) -> VersionRecord | None:
        if index_url:
            return self._from_index(index_url, name, want)
        candidates = self._candidates(name)
        yanked = any(y for v, y, _ in candidates if v.same_as(want))
        rec = self._from_index(urljoin(self.root, fmt.snapshot_index_path(name, str(want))), name, want, yanked)
        if rec is not None:
            return rec
        for v, y, url in candidates:
            if v.same_as(want):
                return self._from_index(url, name, v, y)
        entry = self._latest().get(name)
        if entry is not None and entry.semver.same_as(want):
            return self._pinned(entry)
        return None

    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False, index_url: str = "") -> VersionRecord:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        name = self._name_for(r)
        exact = r.exact_version
        if exact is not None:
            rec = self._exact(name, SemVer.parse(exact), index_url)
            if rec is None:
                where = index_url or self.url
                raise NotFoundError(f"{name}@{exact} is not published in {where}; see: skillctl versions {name} --registry {self.url}")
            return rec
        entry = self._latest().get(name)
        if "@" not in r.text and not prereleases and entry is not None and r.range.matches(entry.semver):
            return self._pinned(entry)  # the release the publisher lists as latest: one request
        candidates = self._candidates(name)
        for v, yanked, url in candidates:
            if not yanked and r.range.matches(v, prereleases=prereleases):
                rec = self._from_index(url, name, v)
                if rec is not None:
                    return rec
        if not candidates and entry is not None and r.range.matches(entry.semver, prereleases=prereleases):
            return self._record(entry, self.index_url)
        if entry is None and not candidates:
            raise NotFoundError(f"no skill '{name}' in {self.url}; see: skillctl list --registry {self.url}")
        newest = ", ".join(str(v) for v, _, _ in candidates[:8]) or (entry.version or fmt.UNVERSIONED if entry else "")
        raise NotFoundError(
            f"no version of {name} matches '{r.range}' in {self.url} (newest: {newest}; yanked versions match only by exact version)"
        )

    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        return self.resolve_record(ref, prereleases=prereleases, index_url=index_url).resolved()

    def versions(self, name_or_id: str) -> list[VersionRecord]:
        r = parse_ref(name_or_id)
        name = self._name_for(r)
        out = []
        for v, yanked, url in self._candidates(name):
            rec = self._from_index(url, name, v, yanked)
            if rec is None:
                self.warn(f"{url} does not list {name}@{v} although the version list names it; skipped")
                continue
            out.append(rec)
        if not out:
            entry = self._latest().get(name)
            if entry is None:
                raise NotFoundError(f"no skill '{name}' in {self.url}; see: skillctl list --registry {self.url}")
            out.append(self._pinned(entry))
        return out

    def get_skill(self, name_or_id: str) -> SkillRecord:
        return summarize(self.versions(name_or_id))

    def _summary(self, entry: fmt.IndexEntry) -> SkillRecord:
        """A skill's record from its version list and its latest entry, without reading every
        snapshot (one request per skill, none when the site publishes no version lists)."""
        candidates = self._candidates(entry.name)
        if not candidates:
            return summarize([self._record(entry, self.index_url)])
        live = [v for v, yanked, _ in candidates if not yanked]
        default = next((v for v in live if not v.is_prerelease), None)
        return SkillRecord(
            id=self._skill_id(entry.name), name=entry.name, description=entry.description, created_at=0,
            latest_version=str(live[0]) if live else None, default_version=str(default) if default else None,
            versions=len(candidates),
        )

    def list_skills(self) -> list[SkillRecord]:
        """Every skill of the latest index, summarised from its version list."""
        return [self._summary(e) for _, e in sorted(self._latest().items())]

    def fetch(self, skill: ResolvedSkill) -> bytes:
        """The artifact of ``skill``, verified against its digest (from the cache when it holds
        that digest). The site must still list that digest for that version."""
        rec = self.resolve_record(f"{skill.name}@{skill.version}", index_url=skill.index_url)
        if rec.digest != skill.digest:
            raise IntegrityError(
                f"{skill.name}@{skill.version}: {rec.index_url} now lists {rec.digest[:19]}…, not the resolved "
                f"{skill.digest[:19]}…; refusing — the published version was changed"
            )
        return self.client.artifact(
            rec.artifact_url, skill.digest, max_bytes=self._limits.max_bundle_size, what=f"{skill.name}@{skill.version}"
        )

    # ------------------------------------------------------------------ maintenance

    def verify(self) -> list[Problem]:
        """Download every listed version again (cache bypassed), check its digest and read it as
        hostile input; report each problem and go on."""
        problems: list[Problem] = []
        for name, entry in sorted(self._latest().items()):
            try:
                recs = self.versions(name)
            except SkillctlError as exc:
                problems.append(Problem("error", "invalid", f"{name}: {exc}"))
                continue
            for rec in recs:
                if rec.version == (entry.version or fmt.UNVERSIONED) and rec.digest != entry.digest:
                    problems.append(Problem("error", "inconsistent", f"{name}@{rec.version}: {self.index_url} and {rec.index_url} list different digests"))
                try:
                    data = self.client.artifact(rec.artifact_url, rec.digest, max_bytes=self._limits.max_bundle_size,
                                                what=f"{name}@{rec.version}", use_cache=False)
                    read_artifact(data, rec.artifact_type, expected_name=name, source=rec.artifact_url)
                except IntegrityError as exc:
                    problems.append(Problem("error", "corrupt", str(exc)))
                except SkillctlError as exc:
                    problems.append(Problem("error", "invalid", f"{name}@{rec.version}: {exc}"))
        return problems

    def _refuse(self, operation: str) -> UnsupportedError:
        return UnsupportedError(
            f"{operation} is not supported: {self.url} is a well-known site, read-only for skillctl; "
            "do it in the registry the site is built from, then `skillctl site build OUT --registry R` and upload OUT"
        )
