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

Every pulled blob is verified: the manifest against its digest, the config against the manifest
and the tag, the bundle against the digest the caller resolved.
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from typing import Any, Callable, TypeVar

from skillctl.bundle import BundleLimits, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NotFoundError, RegistryError, UnsupportedError
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
        self.client.close()

    def __enter__(self) -> "OciRegistry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def _note_missing(self, what: str) -> None:
        self._missing += 1
        if self._missing > MAX_MISSING:
            raise RegistryError(
                f"registry {self.location.host} lists more than {MAX_MISSING} tags or repositories under {self.location.namespace} "
                f"that answer 'not found' (the last: {what}); it is inconsistent or hostile — stopping instead of asking for each"
            )

    def _tags(self, name: str) -> list[tuple[SemVer, str]]:
        """(version, tag) for every version tag of ``name``, newest first."""
        repo = self.location.repository(name)
        listed = self.client.tags(repo)
        if listed is None:
            self._note_missing(repo)
            listed = []
        out = [(v, t) for t in listed if (v := tag_version(t)) is not None]
        return sorted(out, key=lambda vt: vt[0].order, reverse=True)

    def _manifest(self, name: str, tag: str) -> tuple[artifact.SkillManifest, bytes] | None:
        repo = self.location.repository(name)
        got = self.client.get_manifest(repo, tag, accept=artifact.ACCEPT_MANIFESTS, max_bytes=artifact.MAX_MANIFEST_BYTES)
        if got is None:
            return None
        body, _ = got
        return artifact.parse_manifest(body, f"{self.location.host}/{repo}:{tag}"), body

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

    def _record(self, name: str, tag: str) -> VersionRecord | None:
        got = self._manifest(name, tag)
        if got is None:  # the tag vanished between listing and reading (or never had a manifest)
            self._note_missing(f"{self.location.repository(name)}:{tag}")
            return None
        manifest, _ = got
        return artifact.record(self._config(name, tag, manifest), manifest)

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

    @_command
    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False) -> VersionRecord:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        name = self._name_for(r)
        tags = self._tags(name)
        if not tags:
            raise self._not_found(r)
        exact = r.exact_version
        if exact is not None:
            want = SemVer.parse(exact)
            for v, tag in tags:
                if v.same_as(want):
                    rec = self._record(name, tag)
                    if rec is not None:
                        return self._check_id(rec, r)
            raise NotFoundError(f"{name}@{exact} is not published in {self.url}; see: skillctl versions {name} --registry {self.url}")
        for v, tag in tags:
            if not r.range.matches(v, prereleases=prereleases):
                continue
            rec = self._record(name, tag)
            if rec is not None and not rec.yanked:
                return self._check_id(rec, r)
        newest = ", ".join(str(v) for v, _ in tags[:8])
        raise NotFoundError(
            f"no version of {name} matches '{r.range}' in {self.url} (newest: {newest}; yanked versions match only by exact version)"
        )

    @staticmethod
    def _check_id(rec: VersionRecord, ref: SkillRef) -> VersionRecord:
        if ref.skill_id and rec.skill_id != ref.skill_id:
            raise NotFoundError(f"{rec.name}@{rec.version} has id {rec.skill_id}, not {ref.skill_id}")
        return rec

    @_command
    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        return self.resolve_record(ref, prereleases=prereleases).resolved()

    @_command
    def fetch(self, skill: ResolvedSkill) -> bytes:
        """The bundle bytes of ``skill``: the version's manifest must still name ``skill.digest``
        (a tag moved since resolving is refused), and the bytes must hash to it."""
        repo = self.location.repository(skill.name)
        tag = version_tag(skill.version)
        got = self._manifest(skill.name, tag)
        if got is None:
            raise NotFoundError(f"{skill.name}@{skill.version} is no longer in {self.url} (tag {tag} is gone)")
        manifest, _ = got
        if manifest.layer.digest != skill.digest:
            raise IntegrityError(
                f"{skill.name}@{skill.version}: tag {tag} in {self.url} now names bundle {manifest.layer.digest[:19]}…, "
                f"not the resolved {skill.digest[:19]}…; refusing — the tag was moved"
            )
        self._config(skill.name, tag, manifest)
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
        tags = self._tags(bundle.name)
        for v, tag in tags:
            if v.same_as(sv):
                existing = self._record(bundle.name, tag)
                if existing is None:
                    continue
                if existing.digest == bundle.digest:
                    return PublishResult("unchanged", existing)
                raise self._immutable(bundle, existing)
        sid = None
        if tags:
            newest = self._record(bundle.name, tags[0][1])
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
        self._configs[manifest.config.digest] = cfg_bytes  # ours, so the read-back needs no download
        landed = self._record(bundle.name, tag)  # read back: another client may have pushed the same tag
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
        got = self._manifest(rec.name, tag)
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
        after = self._record(rec.name, tag)
        if after is None or after.digest != rec.digest:
            raise IntegrityError(f"{rec.name}@{rec.version}: tag {tag} changed while yanking; check the registry")
        return after

    # ------------------------------------------------------------------ signatures

    def _version_manifest(self, skill: ResolvedSkill) -> tuple[str, artifact.Descriptor]:
        """The repository and the descriptor of the manifest the version's tag names now,
        refused unless that manifest still holds ``skill.digest``."""
        tag = version_tag(skill.version)
        got = self._manifest(skill.name, tag)
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
                    got = self._manifest(name, tag)
                    if got is not None:
                        manifest, _ = got
                        cfg = self._config(name, tag, manifest)
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


def _is_skill_name(name: str) -> bool:
    from skillctl.registry.refs import NAME_RE

    return NAME_RE.match(name) is not None and len(name) <= 64
