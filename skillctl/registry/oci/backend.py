"""``OciRegistry``: the registry commands against an OCI distribution registry.

Same methods, records and semantics as ``LocalRegistry`` where OCI can support them:

- **versions** are the repository's tags that parse as versions (other tags are ignored);
  ranges are resolved here, client-side, exactly as for the folder registry;
- **immutability is enforced by this client**, because distribution's tags are mutable: before
  pushing, the tag list is read; a tag for the same version (same order, so ``1.0.0+a`` and
  ``1.0.0+b`` are one version) with the same bundle digest makes the publish "unchanged", with
  another digest an ``ImmutableVersionError``. After pushing, the tag is read back and must hold
  our bundle. What remains is a race: two clients publishing the same new version at the same
  moment can both pass the check (distribution has no conditional PUT); the read-back turns most
  of these into an error for the loser, but a push landing after the read-back wins silently.
  Lockfiles pin bundle digests, so such a change is still refused at install and run time;
- **ids** live in the config blob; the first publish of a name makes one, later publishes (and
  ``copy``, when the repository is new) reuse the newest version's id. Finding a skill by id
  reads the catalog (below);
- **yank/unyank** rewrite the version's manifest with a ``vnd.skillctl.yanked`` annotation: same
  config, same bundle, so locks and exact pins are unaffected; registries with immutable tags
  (Harbor, ECR options) refuse the rewrite, and so yank is unavailable there;
- **list** and lookups by id need ``/v2/_catalog``, filtered by the namespace; some registries
  (GHCR, Docker Hub, ECR without permission) disable it, and say so in one line;
- **remove**, **gc** and **mark_locked** raise ``UnsupportedError`` (``capabilities`` lacks
  them): OCI registries cannot record that a version was fetched or locked (the rule ``remove``
  depends on), and garbage collection is the server's job (distribution: ``registry
  garbage-collect``);
- **verify** re-reads every manifest, config and bundle under the namespace and re-hashes them;
- **signatures** are artifacts whose ``subject`` is the version's manifest, found through the
  referrers API or the ``sha256-<hex>`` referrers tag (``referrers``); a yank attaches them to
  the rewritten manifest before the tag moves, so they stay with the version.

The work of one command is bounded: listings by the client's limits, and tags (or catalog
repositories) that are listed but answer 404 by ``MAX_MISSING`` per command — a registry listing
200,000 tags whose manifests are gone would otherwise cost a request each.

Every pulled blob is verified: the manifest against its digest, the config (or, for ``resolve``,
the manifest's annotations) against the manifest and the tag, the bundle against the digest the
caller resolved.

**Requests.** An exact pin (``NAME@1.2.3``) reads the version's manifest by its tag, without
listing tags (only when that spelling is absent are the tags listed, for a version published as
``1.2.3+build``); ``resolve`` takes the record from the manifest's annotations, so it reads no
config blob (manifests of an older skillctl lack them: then it does). A connection pool per
registry (the client's session) serves every skill.

**Runs.** Inside ``with registry:`` (one command's work: ``skillctl pull``, an install, a run) the
registry takes one view of the repositories it reads: each skill's tag list and each version's
manifest are read at most once, so a range resolves with one listing however often it is asked,
and ``fetch`` after ``resolve`` reads only the bundle — an exact pin is one manifest and one blob.
Outside a run every call reads afresh (a long-lived holder such as ``serve`` sees a yank at once),
and ``fetch`` re-reads the tag, refusing a resolved version whose tag has moved since. Writes
(publish, yank, signatures) always read afresh and drop what the run kept of that repository; a
run's ``fetch`` whose kept manifest names another bundle reads the tag again before refusing.
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from typing import Any, Callable, TypeVar

from skillctl.bundle import BundleLimits, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NotFoundError, RegistryError, UnsupportedError, VersionError
from skillctl.protocols import PUBLISH, SIGN, YANK, ResolvedSkill
from skillctl.registry.oci import artifact
from skillctl.registry.oci.auth import find_credentials
from skillctl.registry.oci.client import DEFAULT_DEADLINE_S, ENV_TIMEOUT, DistributionClient, is_access_error
from skillctl.registry.oci.names import OciLocation, parse_oci_url, tag_version, version_tag
from skillctl.registry.oci.referrers import SignatureStore, is_referrers_tag
from skillctl.registry.prepare import PreparedBundle
from skillctl.registry.records import Problem, PublishResult, SkillRecord, VersionRecord, check_origin, summarize
from skillctl.registry.refs import SKILL_ID_RE, SkillRef, parse_ref, require_exact
from skillctl.registry.signatures import check_envelope, check_same_bundle
from skillctl.versioning import SemVer

ENV_INSECURE = "SKILLCTL_INSECURE"
# Listed tags (or repositories) that turn out not to exist, per command: a few vanish in a race
# with a deletion; many mean the registry is inconsistent or hostile.
MAX_MISSING = 20

_F = TypeVar("_F", bound=Callable[..., Any])


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def env_seconds(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise RegistryError(f"{name}={text!r} is not a positive number of seconds; unset it or set e.g. {name}={default:g}")
    return value


def _command(method: _F) -> _F:
    """A public entry point: the work budget (``MAX_MISSING``) counts from its outermost call."""

    @functools.wraps(method)
    def run(self: "OciRegistry", *args: Any, **kwargs: Any) -> Any:
        if self._depth == 0:
            self._missing = 0
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    return run  # type: ignore[return-value]


class OciRegistry:
    """Skills in ``NAMESPACE/NAME`` repositories of one OCI registry (see the module docstring);
    a ``skillctl.protocols.Registry`` that can publish, yank and keep signatures."""

    capabilities = frozenset({PUBLISH, YANK, SIGN})

    def __init__(self, location: OciLocation, client: DistributionClient) -> None:
        self.location = location
        self.client = client
        self._configs: dict[str, bytes] = {}  # config blobs by digest: content-addressed, safe to keep
        self._names_by_id: dict[str, str] = {}
        # What a run (``with registry:``) has read, by repository: not content-addressed, so kept
        # only until the run ends (see the module docstring).
        self._runs = 0
        self._tag_lists: dict[str, list[str] | None] = {}
        self._manifests: dict[tuple[str, str], tuple[artifact.SkillManifest, bytes] | None] = {}
        self._max_bundle = BundleLimits().max_bundle_size
        self._depth = 0
        self._missing = 0
        self._signatures = SignatureStore(client)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        insecure: bool | None = None,
        username: str | None = None,
        password: str | None = None,
        attempts: int = 3,
        backoff_s: float = 0.2,
        deadline_s: float | None = None,
    ) -> "OciRegistry":
        """``oci://HOST[:PORT]/NAMESPACE``. ``insecure=None`` reads ``SKILLCTL_INSECURE``;
        ``deadline_s=None`` (the total time one HTTP exchange may take) reads
        ``SKILLCTL_REGISTRY_TIMEOUT``, else 300 s; credentials are looked up lazily (see
        ``auth``) on the registry's first 401."""
        loc = parse_oci_url(url)
        plain = env_flag(ENV_INSECURE) if insecure is None else insecure
        client = DistributionClient(
            loc.host, insecure=plain, attempts=attempts, backoff_s=backoff_s,
            deadline_s=env_seconds(ENV_TIMEOUT, DEFAULT_DEADLINE_S) if deadline_s is None else deadline_s,
            credentials=lambda: find_credentials(loc.host, username=username, password=password),
        )
        return cls(loc, client)

    @property
    def url(self) -> str:
        return self.location.url

    def __repr__(self) -> str:
        return f"OciRegistry({self.url!r})"

    def close(self) -> None:
        self._end_run()
        self.client.close()

    def __enter__(self) -> "OciRegistry":
        """Start a run: reads are kept until it ends (the module docstring says what for)."""
        self._runs += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _end_run(self) -> None:
        self._runs = 0
        self._tag_lists.clear()
        self._manifests.clear()

    def _forget(self, repo: str) -> None:
        """Drop what the run kept of ``repo``: it is being written."""
        self._tag_lists.pop(repo, None)
        for key in [k for k in self._manifests if k[0] == repo]:
            del self._manifests[key]

    # ------------------------------------------------------------------ reading

    def _note_missing(self, what: str) -> None:
        self._missing += 1
        if self._missing > MAX_MISSING:
            raise RegistryError(
                f"registry {self.location.host} lists more than {MAX_MISSING} tags or repositories under {self.location.namespace} "
                f"that answer 'not found' (the last: {what}); it is inconsistent or hostile — stopping instead of asking for each"
            )

    def _tags(self, name: str, *, fresh: bool = False) -> list[tuple[SemVer, str]]:
        """(version, tag) for every version tag of ``name``, newest first; inside a run listed
        once (unless ``fresh``)."""
        repo = self.location.repository(name)
        if self._runs and not fresh and repo in self._tag_lists:
            listed = self._tag_lists[repo]
        else:
            listed = self.client.tags(repo)
            if self._runs:
                self._tag_lists[repo] = listed
        if listed is None:
            self._note_missing(repo)
            listed = []
        out = [(v, t) for t in listed if (v := tag_version(t)) is not None]
        return sorted(out, key=lambda vt: vt[0].order, reverse=True)

    def _manifest(self, name: str, tag: str, *, fresh: bool = False) -> tuple[artifact.SkillManifest, bytes] | None:
        """The manifest under ``tag`` (parsed, and its bytes), None if absent; inside a run
        read once (unless ``fresh``)."""
        repo = self.location.repository(name)
        if self._runs and not fresh and (repo, tag) in self._manifests:
            return self._manifests[(repo, tag)]
        got = self.client.get_manifest(repo, tag, accept=artifact.ACCEPT_MANIFESTS, max_bytes=artifact.MAX_MANIFEST_BYTES)
        out = None if got is None else (artifact.parse_manifest(got[0], f"{self.location.host}/{repo}:{tag}"), got[0])
        if self._runs:
            self._manifests[(repo, tag)] = out
        return out

    def _config(self, name: str, tag: str, manifest: artifact.SkillManifest) -> artifact.SkillConfig:
        repo = self.location.repository(name)
        where = f"{self.location.host}/{repo}:{tag}"
        version = tag_version(tag)
        assert version is not None
        data = self._configs.get(manifest.config.digest)
        if data is None:
            data = self.client.get_blob(repo, manifest.config.digest, size=manifest.config.size, max_bytes=artifact.MAX_CONFIG_BYTES)
        # parsed for every manifest, cached or not: the name/version/layer checks are per tag
        cfg = artifact.parse_config(data, manifest, name=name, version=version, where=where)
        self._configs[manifest.config.digest] = data
        self._names_by_id.setdefault(cfg.skill_id, name)
        return cfg

    def _listed_manifest(self, name: str, tag: str, *, fresh: bool = False) -> artifact.SkillManifest | None:
        got = self._manifest(name, tag, fresh=fresh)
        if got is None:  # the tag vanished between listing and reading (or never had a manifest)
            self._note_missing(f"{self.location.repository(name)}:{tag}")
            return None
        return got[0]

    def _record(self, name: str, tag: str, *, fresh: bool = False) -> VersionRecord | None:
        manifest = self._listed_manifest(name, tag, fresh=fresh)
        return None if manifest is None else artifact.record(self._config(name, tag, manifest), manifest)

    def _resolved(self, name: str, tag: str, manifest: artifact.SkillManifest) -> ResolvedSkill:
        """The version as ``resolve`` returns it: from the annotations, else from the config."""
        version = tag_version(tag)
        assert version is not None
        where = f"{self.location.host}/{self.location.repository(name)}:{tag}"
        got = artifact.resolved_from_annotations(manifest, name=name, version=version, where=where)
        if got is None:  # published by a skillctl that did not annotate: the config has it
            return artifact.record(self._config(name, tag, manifest), manifest).resolved()
        self._names_by_id.setdefault(got.id, name)
        return got

    def _name_for(self, ref: SkillRef) -> str:
        if ref.name:
            return ref.name
        assert ref.skill_id is not None
        if ref.skill_id in self._names_by_id:
            return self._names_by_id[ref.skill_id]
        for name in self._catalog_names():
            tags = self._tags(name)
            if tags:
                rec = self._record(name, tags[0][1])
                if rec is not None and rec.skill_id == ref.skill_id:
                    return name
        raise NotFoundError(f"no skill with id '{ref.skill_id}' in registry {self.url}; see: skillctl list --registry {self.url}")

    def _catalog_names(self) -> list[str]:
        names = (self.location.skill_name(r) for r in self.client.catalog())
        return sorted({n for n in names if n is not None and SKILL_ID_RE.match(n) is None and _is_skill_name(n)})

    def _not_found(self, ref: SkillRef) -> NotFoundError:
        return NotFoundError(f"no skill '{ref.subject}' in registry {self.url}; see: skillctl list --registry {self.url}")

    def _pick(self, r: SkillRef, prereleases: bool) -> tuple[str, str, artifact.SkillManifest]:
        """(name, tag, manifest) of the version ``r`` resolves to."""
        name = self._name_for(r)
        exact = r.exact_version
        if exact is not None:
            try:
                tag = version_tag(exact)
            except VersionError:
                tag = ""  # longer than a tag may be: nothing can be published under it
            got = self._manifest(name, tag) if tag else None
            if got is not None:  # the pin's own spelling: no listing
                return name, tag, got[0]
        # a range, or an exact pin published under another spelling of the version (1.0.0+b for 1.0.0)
        tags = self._tags(name)
        if not tags:
            raise self._not_found(r)
        if exact is not None:
            want = SemVer.parse(exact)
            for v, tag in tags:
                if v.same_as(want) and (manifest := self._listed_manifest(name, tag)) is not None:
                    return name, tag, manifest
            raise NotFoundError(f"{name}@{exact} is not published in {self.url}; see: skillctl versions {name} --registry {self.url}")
        for v, tag in tags:
            if not r.range.matches(v, prereleases=prereleases):
                continue
            manifest = self._listed_manifest(name, tag)
            if manifest is not None and not manifest.yanked:
                return name, tag, manifest
        newest = ", ".join(str(v) for v, _ in tags[:8])
        raise NotFoundError(
            f"no version of {name} matches '{r.range}' in {self.url} (newest: {newest}; yanked versions match only by exact version)"
        )

    @_command
    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False) -> VersionRecord:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        name, tag, manifest = self._pick(r, prereleases)
        rec = artifact.record(self._config(name, tag, manifest), manifest)
        self._check_id(rec.skill_id, rec, r)
        return rec

    @staticmethod
    def _check_id(skill_id: str, rec: VersionRecord | ResolvedSkill, ref: SkillRef) -> None:
        if ref.skill_id and skill_id != ref.skill_id:
            raise NotFoundError(f"{rec.name}@{rec.version} has id {skill_id}, not {ref.skill_id}")

    @_command
    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        """The version ``ref`` names, without reading its config when the manifest's annotations
        carry the record (an exact pin: one manifest request)."""
        r = parse_ref(ref)
        name, tag, manifest = self._pick(r, prereleases)
        got = self._resolved(name, tag, manifest)
        self._check_id(got.id, got, r)
        return got

    @_command
    def fetch(self, skill: ResolvedSkill) -> bytes:
        """The bundle bytes of ``skill``: the version's manifest must still name ``skill.digest``
        (a tag moved since resolving is refused; inside a run, the manifest the run read, read
        again when it names another bundle), and the bytes must hash to it."""
        repo = self.location.repository(skill.name)
        tag = version_tag(skill.version)
        got = self._manifest(skill.name, tag)
        if self._runs and (got is None or got[0].layer.digest != skill.digest):
            got = self._manifest(skill.name, tag, fresh=True)  # what the run kept may be older than the caller's pin
        if got is None:
            raise NotFoundError(f"{skill.name}@{skill.version} is no longer in {self.url} (tag {tag} is gone)")
        manifest, _ = got
        if manifest.layer.digest != skill.digest:
            raise IntegrityError(
                f"{skill.name}@{skill.version}: tag {tag} in {self.url} now names bundle {manifest.layer.digest[:19]}…, "
                f"not the resolved {skill.digest[:19]}…; refusing — the tag was moved"
            )
        self._resolved(skill.name, tag, manifest)  # the manifest must still be this skill's, at this version
        return self.client.get_blob(repo, skill.digest, size=manifest.layer.size, max_bytes=self._max_bundle)

    @_command
    def versions(self, name_or_id: str) -> list[VersionRecord]:
        r = parse_ref(name_or_id)
        name = self._name_for(r)
        tags = self._tags(name)
        if not tags:
            raise self._not_found(r)
        return [rec for _, tag in tags if (rec := self._record(name, tag)) is not None]

    @_command
    def get_skill(self, name_or_id: str) -> SkillRecord:
        return summarize(self.versions(name_or_id))

    @_command
    def list_skills(self) -> list[SkillRecord]:
        out = []
        for name in self._catalog_names():
            try:
                recs = self.versions(name)
            except NotFoundError:
                continue  # a repository with no version tags (all deleted) is not a skill
            if recs:
                out.append(summarize(recs))
        return out

    # ------------------------------------------------------------------ writing

    @_command
    def publish(self, bundle: PreparedBundle, *, created_at: int | None = None, skill_id: str | None = None) -> PublishResult:
        """Push ``bundle`` as ``NAME:VERSION``; "unchanged" when that version already holds
        these bytes, ImmutableVersionError when it holds others. ``created_at`` (default: now)
        and ``skill_id`` (used only for a repository's first version) let ``copy`` keep them."""
        sv = SemVer.parse(bundle.version)
        check_origin(created_at, skill_id)
        if sha256_digest(bundle.data) != bundle.digest:
            raise IntegrityError(f"{bundle.name}@{bundle.version}: bundle bytes do not match their digest")
        if bundle.size > self._max_bundle:
            raise RegistryError(f"{bundle.name}@{bundle.version}: bundle is {bundle.size} bytes, over the {self._max_bundle}-byte limit")
        repo = self.location.repository(bundle.name)
        tags = self._tags(bundle.name, fresh=True)  # writes never trust what a run kept
        for v, tag in tags:
            if v.same_as(sv):
                existing = self._record(bundle.name, tag, fresh=True)
                if existing is None:
                    continue
                if existing.digest == bundle.digest:
                    return PublishResult("unchanged", existing)
                raise self._immutable(bundle, existing)
        sid = None
        if tags:
            newest = self._record(bundle.name, tags[0][1], fresh=True)
            sid = newest.skill_id if newest is not None else None
        if sid is None:
            sid = skill_id or "skill_" + secrets.token_hex(12)
        cfg = artifact.SkillConfig(
            sid, bundle.name, str(sv), bundle.description, bundle.front_matter, bundle.digest, bundle.tar_digest,
            bundle.size, tuple(bundle.files), bundle.mirrored_from,
        )
        cfg_bytes, manifest = artifact.build(cfg, int(time.time()) if created_at is None else created_at)
        tag = version_tag(str(sv))
        # Blobs first: a manifest is only accepted once everything it names is there. A new
        # repository has no blobs worth asking about; uploading again would be harmless anyway.
        self.client.push_blob(repo, cfg_bytes, manifest.config.digest, check_exists=bool(tags))
        self.client.push_blob(repo, bundle.data, bundle.digest, check_exists=bool(tags))
        self.client.put_manifest(repo, tag, manifest.to_bytes(), artifact.MANIFEST_MEDIA_TYPE)
        self._forget(repo)
        self._configs[manifest.config.digest] = cfg_bytes  # ours, so the read-back needs no download
        landed = self._record(bundle.name, tag, fresh=True)  # read back: another client may have pushed the same tag
        if landed is None or landed.digest != bundle.digest:
            raise ImmutableVersionError(
                f"{bundle.name}@{sv} was pushed concurrently by another client with other content; "
                f"the registry now holds {landed.digest[:19] + '…' if landed else 'nothing'} — bump the version"
            )
        return PublishResult("published", landed)

    @staticmethod
    def _immutable(bundle: PreparedBundle, rec: VersionRecord) -> ImmutableVersionError:
        return ImmutableVersionError(
            f"{bundle.name}@{rec.version} is already published with other content ({rec.digest[:19]}…, "
            f"now {bundle.digest[:19]}…); versions are immutable — bump it: skillctl version PATH patch"
        )

    def _exact(self, ref: str, verb: str) -> VersionRecord:
        return self.resolve_record(require_exact(ref, verb))

    @_command
    def set_yanked(self, ref: str, yanked: bool, reason: str = "") -> VersionRecord:
        rec = self._exact(ref, "yank" if yanked else "unyank")
        tag = version_tag(rec.version)
        got = self._manifest(rec.name, tag, fresh=True)
        if got is None:
            raise NotFoundError(f"{rec.name}@{rec.version} vanished from {self.url} while yanking")
        manifest, _ = got
        if manifest.layer.digest != rec.digest:
            raise IntegrityError(f"{rec.name}@{rec.version}: tag {tag} changed while yanking; run the command again")
        if manifest.yanked != yanked or (yanked and manifest.yank_reason != reason):
            repo = self.location.repository(rec.name)
            body = manifest.with_yank(yanked, reason).to_bytes()
            new = artifact.Descriptor(artifact.MANIFEST_MEDIA_TYPE, sha256_digest(body), len(body))
            # The rewritten manifest has a new digest: push it untagged, attach the signatures to
            # it, and only then move the tag, so that no moment shows the version unsigned.
            self.client.put_manifest(repo, new.digest, body, artifact.MANIFEST_MEDIA_TYPE)
            self._signatures.carry(repo, sha256_digest(got[1]), new, rec.digest, f"{rec.name}@{rec.version}")
            self.client.put_manifest(repo, tag, body, artifact.MANIFEST_MEDIA_TYPE)
            self._forget(repo)
        after = self._record(rec.name, tag, fresh=True)
        if after is None or after.digest != rec.digest:
            raise IntegrityError(f"{rec.name}@{rec.version}: tag {tag} changed while yanking; check the registry")
        return after

    # ------------------------------------------------------------------ signatures

    def _version_manifest(self, skill: ResolvedSkill) -> tuple[str, artifact.Descriptor]:
        """The repository and the descriptor of the manifest the version's tag names now,
        refused unless that manifest still holds ``skill.digest``."""
        tag = version_tag(skill.version)
        got = self._manifest(skill.name, tag, fresh=True)  # signatures hang on the manifest the tag names now
        if got is None:
            raise NotFoundError(f"{skill.name}@{skill.version} is not published in {self.url}")
        manifest, body = got
        cfg = self._config(skill.name, tag, manifest)
        check_same_bundle(artifact.record(cfg, manifest), skill, self.url)
        return self.location.repository(skill.name), artifact.Descriptor(artifact.MANIFEST_MEDIA_TYPE, sha256_digest(body), len(body))

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        repo, manifest = self._version_manifest(skill)
        return self._signatures.envelopes(repo, manifest.digest)

    def attach_signature(self, skill: ResolvedSkill, envelope: bytes) -> str:
        label = f"{skill.name}@{skill.version}"
        check_envelope(envelope, label)
        repo, manifest = self._version_manifest(skill)
        return self._signatures.attach(repo, manifest, envelope, skill.digest, label)

    def remove(self, ref: str) -> VersionRecord:
        raise UnsupportedError(
            f"remove is not supported on OCI registries ({self.url}): they cannot tell whether anyone fetched or locked "
            f"a version; yank it instead (skillctl yank {ref})"
        )

    def gc(self, *, dry_run: bool = False, grace_s: int = 0) -> list[str]:
        raise UnsupportedError(
            f"gc is the OCI registry server's job ({self.url}), e.g. `registry garbage-collect CONFIG` for distribution; "
            "skillctl never deletes blobs there"
        )

    def mark_locked(self, skill: ResolvedSkill) -> None:
        raise UnsupportedError(
            f"an OCI registry ({self.url}) cannot record which versions lockfiles pin; it cannot remove versions either, "
            "so the lock needs no protection there"
        )

    @_command
    def verify(self) -> list[Problem]:
        """Re-read and re-hash every version under the namespace (needs the catalog)."""
        problems: list[Problem] = []
        for name in self._catalog_names():
            repo = self.location.repository(name)
            listed = self.client.tags(repo)
            if listed is None:
                self._note_missing(repo)
                continue
            for tag in sorted(listed):
                if is_referrers_tag(tag):
                    continue  # an index of signatures (referrers tag schema), not a version
                if tag_version(tag) is None:
                    problems.append(Problem("warning", "foreign-tag", f"{repo}:{tag} is not a version tag; skillctl ignores it"))
                    continue
                try:
                    got = self._manifest(name, tag, fresh=True)
                    if got is not None:
                        manifest, _ = got
                        cfg = self._config(name, tag, manifest)
                        self._check_annotations(name, tag, manifest, cfg)
                        self.client.get_blob(repo, cfg.digest, size=manifest.layer.size, max_bytes=self._max_bundle)
                except IntegrityError as exc:
                    problems.append(Problem("error", "corrupt", f"{name}@{tag}: {exc}"))
                    continue
                except RegistryError as exc:
                    if is_access_error(exc):  # not a damaged version: the registry itself is out of reach
                        raise
                    problems.append(Problem("error", "invalid", f"{name}@{tag}: {exc}"))
                    continue
                if got is None:
                    problems.append(Problem("warning", "missing", f"{repo}:{tag} is listed but has no manifest (deleted meanwhile?)"))
                    self._note_missing(f"{repo}:{tag}")
        return problems


    def _check_annotations(self, name: str, tag: str, manifest: artifact.SkillManifest, cfg: artifact.SkillConfig) -> None:
        """Pulls trust the annotations instead of the config: they must say the same."""
        where = f"{self.location.host}/{self.location.repository(name)}:{tag}"
        version = tag_version(tag)
        assert version is not None
        annotated = artifact.resolved_from_annotations(manifest, name=name, version=version, where=where)
        from_config = artifact.record(cfg, manifest).resolved()
        if annotated is not None and annotated != from_config:
            fields = [f for f in ("id", "version", "description", "tar_digest") if getattr(annotated, f) != getattr(from_config, f)]
            raise IntegrityError(f"{where}: manifest annotations disagree with the config ({', '.join(fields)}); pulls would "
                                 "take the annotations — the copy was altered after publishing: yank it and publish a new version")


def _is_skill_name(name: str) -> bool:
    from skillctl.registry.refs import NAME_RE

    return NAME_RE.match(name) is not None and len(name) <= 64
