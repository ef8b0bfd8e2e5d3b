"""A lock's skills as a ``Store``, for what reads skills by reference: the loader of a run, the
environment, ``export`` and ``catalog``.

Registry skills come from their registries (the URL the project names now, else the one the lock
recorded), checked against the lock's digests; git and folder skills are served as the canonical
bundle of their files, whose digest the lock records, so everything downstream reads them like any
bundle. A reference the lock does not pin exactly (``run --skill`` beside a lock) goes to the
``fallback`` registry.
"""

from __future__ import annotations

from skillctl.bundle import DEFAULT_MTIME, repack, sha256_digest
from collections.abc import Callable

from skillctl.errors import IntegrityError, NotFoundError
from skillctl.project.lock import Lock, LockedSkill
from skillctl.project.sources import ProjectSources
from skillctl.protocols import RegistryReader, ResolvedSkill
from skillctl.registry.refs import parse_ref


class ProjectStore:
    def __init__(self, lock: Lock, sources: ProjectSources, *, urls: dict[str, str] | None = None,
                 fallback: Callable[[], RegistryReader] | None = None) -> None:
        """``urls``: where each locked registry skill's registry is now, by skill name (default:
        the URL the lock recorded); ``fallback`` opens the registry for references the lock does
        not pin, when one comes."""
        self.lock = lock
        self.sources = sources
        self._fallback = fallback
        self._urls = dict(urls or {})
        self._by_name = lock.by_name()
        self._bundles: dict[str, bytes] = {}  # git and folder skills' canonical bundles, by name

    def url_of(self, skill: LockedSkill) -> str:
        return self._urls.get(skill.name) or skill.source.get("url", "")

    def locked(self) -> list[ResolvedSkill]:
        """Every locked skill, checked: a registry's record must still carry the locked digest."""
        return [self.resolved(s) for s in sorted(self.lock.skills, key=lambda s: s.name)]

    def resolved(self, skill: LockedSkill) -> ResolvedSkill:
        """A registry skill's record (still of the locked digest); for git and folder skills, their
        files fetched and checked against the locked ``tar_digest`` now, served as a bundle whose
        digest is that of the bytes this machine packs (zlib builds may compress differently)."""
        if skill.kind == "registry":
            url = self.url_of(skill)
            try:
                return self.sources.registry_record(skill.pin(url))
            except NotFoundError as exc:
                raise NotFoundError(f"{exc} — skills.lock takes {skill.name} from {url}; name the team's registry in "
                                    "skills.yaml (registries: {default: URL}) or pass --registry URL") from None
        data = self._bundle(skill)
        rec = skill.as_resolved()
        return ResolvedSkill(rec.id, rec.name, rec.version, rec.description, sha256_digest(data), rec.tar_digest, len(data))

    def _bundle(self, skill: LockedSkill) -> bytes:
        if skill.name not in self._bundles:
            contents = self.sources.get(skill.kind).fetch(skill.pin())  # refused unless its tar_digest is the locked one
            self._bundles[skill.name] = repack(contents, mtime=DEFAULT_MTIME).data
        return self._bundles[skill.name]

    # ------------------------------------------------------------------ Store

    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        parsed = parse_ref(ref)
        skill = self._by_name.get(parsed.name or "")
        if skill is not None and (parsed.exact_version is None and parsed.range.text == "latest" or parsed.exact_version == skill.version):
            return self.resolved(skill)
        if self._fallback is None:
            raise NotFoundError(f"{ref}: not in the lock ({', '.join(sorted(self._by_name)) or 'no skills'})")
        return self._fallback().resolve(ref, prereleases=prereleases, index_url=index_url)

    def fetch(self, skill: ResolvedSkill) -> bytes:
        locked = self._by_name.get(skill.name)
        if locked is not None and locked.kind != "registry" and locked.tar_digest == skill.tar_digest:
            return self._bundle(locked)
        if locked is not None and locked.kind == "registry" and locked.digest == skill.digest:
            return self.sources.registry(self.url_of(locked)).fetch(skill)
        if self._fallback is None:
            raise IntegrityError(f"{skill.name}@{skill.version}: not the version the lock pins")
        return self._fallback().fetch(skill)

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        locked = self._by_name.get(skill.name)
        if locked is not None and locked.kind == "registry" and locked.digest == skill.digest:
            return self.sources.registry(self.url_of(locked)).signatures(skill)
        return self._fallback().signatures(skill) if self._fallback is not None else []
