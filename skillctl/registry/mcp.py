"""``McpRegistry``: an MCP server serving the skills extension, read-only.

``--registry mcp+stdio:'COMMAND ARGS'`` or ``mcp+https://HOST/PATH`` (see ``skillctl.mcp.client``).
The same records as every registry, where the extension carries them:

- **identity** is (server, uri): a record's ``id`` is the SKILL.md URI, scoped to this server's
  URL. Names are labels: two entries named ``refunds`` are never silently one — resolving the
  name is an error naming both URIs; a ref may be the skill path (``acme/billing/refunds``) or
  the URI (``skill://acme/billing/refunds/SKILL.md``), with ``@RANGE`` as usual;
- **one version per skill**: the SemVer of the front matter's ``metadata.version`` (or a
  top-level ``version``), else ``0.0.0``;
- **the artifact** is the canonical bundle of the skill's verified files (``read_skill``), made
  when a version is resolved and kept in memory, so ``fetch`` after ``resolve`` reads nothing
  again. A record's ``manifest`` is ``manifest_digest`` of the entry; resolving with
  ``manifest=`` (a lock's pin) refuses a server that now declares other files before reading any;
- **listing** reads entries only, never files (the extension's lazy retrieval);
- **writing** is refused (``ReadOnlyRegistry``). The server is spawned or connected once, on
  first use, and kept for the registry's life.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from skillctl.errors import IntegrityError, NotFoundError, RegistryError, SkillctlError, SourceError
from skillctl.mcp import uris
from skillctl.mcp.entry import SkillEntry, manifest_digest
from skillctl.protocols import ResolvedSkill
from skillctl.registry.readonly import ReadOnlyRegistry
from skillctl.registry.records import Problem, SkillRecord, VersionRecord, summarize
from skillctl.versioning import SEMVER_RE, SemVer, VersionRange, parse_range

if TYPE_CHECKING:
    from skillctl.bundle import PackedBundle
    from skillctl.mcp.client import McpClient, ServerSpec

UNVERSIONED = "0.0.0"


def entry_version(entry: SkillEntry) -> str:
    meta = entry.frontmatter.get("metadata")
    raw = meta.get("version") if isinstance(meta, dict) else None
    if raw is None:
        raw = entry.frontmatter.get("version")
    if isinstance(raw, str):
        try:
            return str(SemVer.parse(raw))
        except SkillctlError:
            pass
    return UNVERSIONED


def split_ref(text: str) -> tuple[str, str, str]:
    """``(kind, subject, range)`` of a ref: kind ``uri`` (``skill://…/SKILL.md``), ``path``
    (``acme/billing/refunds``) or ``name``; range ``latest`` when none is given."""
    if not isinstance(text, str) or not text.strip():
        raise RegistryError("empty skill reference: write NAME, a skill path (acme/billing/refunds) or a skill URI")
    text = text.strip()
    if "://" in text:
        end = text.rfind("/" + uris.SKILL_FILE)
        if end < 0:
            raise RegistryError(f"{uris.shown(text)}: a skill URI ends in /SKILL.md")
        end += len(uris.SKILL_FILE) + 1
        uri, rest = text[:end], text[end:]
        if rest and not rest.startswith("@"):
            raise RegistryError(f"{uris.shown(text)}: write the URI, then @RANGE if any")
        return "uri", uri, rest[1:].strip() or "latest"
    head, sep, rng = text.partition("@")
    if sep and not rng.strip():
        raise RegistryError(f"skill reference {uris.shown(text)} has an empty version after '@'")
    return ("path" if "/" in head else "name"), head, (rng.strip() if sep else "latest")


class McpRegistry(ReadOnlyRegistry):
    """A read-only registry over one MCP server (see the module docstring)."""

    def __init__(self, server: "ServerSpec", *, timeout_s: float | None = None, connect_timeout_s: float | None = None,
                 token: str | None = None, warn: Callable[[str], None] | None = None) -> None:
        self.server = server
        self._timeouts = {"timeout_s": timeout_s, "connect_timeout_s": connect_timeout_s}
        self._token = token
        self._warn = warn
        self.warnings: list[str] = []
        self._client: "McpClient | None" = None
        self._listing: list[SkillEntry] | None = None
        self._built: dict[str, tuple[str, "PackedBundle", VersionRecord]] = {}  # uri -> (manifest, bundle, record)

    @classmethod
    def from_url(cls, url: str, *, insecure: bool | None = None, timeout_s: float | None = None,
                 connect_timeout_s: float | None = None, token: str | None = None,
                 warn: Callable[[str], None] | None = None) -> "McpRegistry":
        """``insecure`` allows ``mcp+http://`` to a host that is not loopback (None: ``SKILLCTL_INSECURE``);
        ``token`` is the key for an HTTP server (None: ``SKILLCTL_MCP_TOKEN``); the deadlines are
        ``McpClient``'s."""
        from skillctl.mcp.client import parse_server

        try:
            return cls(parse_server(url, insecure=bool(insecure)), timeout_s=timeout_s, connect_timeout_s=connect_timeout_s,
                       token=token, warn=warn)
        except SourceError as exc:
            raise RegistryError(str(exc)) from None

    @property
    def url(self) -> str:
        return self.server.url

    def __repr__(self) -> str:
        return f"McpRegistry({self.server.url!r})"

    def __enter__(self) -> "McpRegistry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.__exit__(None, None, None)

    @property
    def client(self) -> "McpClient":
        if self._client is None:
            from skillctl.mcp.client import McpClient

            self._client = McpClient(self.server, token=self._token, warn=self.warn, **self._timeouts).__enter__()
        return self._client

    # ------------------------------------------------------------------ entries

    def entries(self) -> list[SkillEntry]:
        """The server's valid listed entries (read once)."""
        if self._listing is None:
            self._listing = self.client.list_entries()
        return self._listing

    def _see(self) -> str:
        return f"see: skillctl list --registry {shlex.quote(self.url)}"

    def _entry(self, kind: str, subject: str) -> SkillEntry:
        if kind == "uri":
            return self.client.get_entry(subject)
        if kind == "path":
            try:
                uri = uris.skill_uri(subject)
                uris.split_skill_uri(uri)
            except uris.UriError as exc:
                raise RegistryError(f"{uris.shown(subject)} is not a skill path: {exc}") from None
            return self.client.get_entry(uri)
        named = [e for e in self.entries() if e.name == subject]
        if not named:
            raise NotFoundError(f"no skill named '{uris.shown(subject)}' in {self.url}; {self._see()}")
        if len(named) > 1:
            both = ", ".join(e.uri for e in named[:8])
            raise RegistryError(f"{self.url} serves {len(named)} skills named '{subject}' ({both}); ask for one by its "
                                f"skill path (e.g. {named[0].skill_path}) or its URI")
        return named[0]

    def _record(self, entry: SkillEntry) -> VersionRecord:
        """The entry's record with the digests of its verified files (read once per manifest)."""
        manifest = manifest_digest(entry)
        held = self._built.get(entry.uri)
        if held is not None and held[0] == manifest:
            return held[2]
        from skillctl.bundle import DEFAULT_MTIME, repack

        contents = self.client.read_skill(entry)
        packed = repack(contents, mtime=DEFAULT_MTIME)
        rec = VersionRecord(
            skill_id=entry.uri, name=entry.name, version=entry_version(entry), description=entry.description,
            digest=packed.digest, tar_digest=packed.tar_digest, size=packed.size, files=len(contents.files),
            created_at=0, front_matter=dict(entry.frontmatter),
        )
        self._built[entry.uri] = (manifest, packed, rec)
        return rec

    # ------------------------------------------------------------------ reading

    def resolve_record(self, ref: str, *, prereleases: bool = False, index_url: str = "",
                       manifest: str = "") -> VersionRecord:
        kind, subject, rng = split_ref(ref)
        wanted: VersionRange = parse_range(rng)
        entry = self._entry(kind, subject)
        version = SemVer.parse(entry_version(entry))
        exact = rng if SEMVER_RE.match(rng) else None
        if not (version.same_as(SemVer.parse(exact)) if exact else wanted.matches(version, prereleases=prereleases)):
            raise NotFoundError(f"{entry.name}@{rng}: {entry.uri} on {self.url} is {version}, which does not match "
                                "(an MCP server serves one version of each skill)")
        if manifest and manifest_digest(entry) != manifest:
            raise IntegrityError(
                f"the server now serves other files for {entry.uri} than skills.lock pins (manifest {manifest[:19]}…, now "
                f"{manifest_digest(entry)[:19] or 'dynamic'}…); refusing before reading any — run skillctl lock to accept the change"
            )
        return self._record(entry)

    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "", manifest: str = "") -> ResolvedSkill:
        rec = self.resolve_record(ref, prereleases=prereleases, manifest=manifest)
        return replace(rec.resolved(), manifest=self._built[rec.skill_id][0])

    def versions(self, name_or_id: str) -> list[VersionRecord]:
        kind, subject, _ = split_ref(name_or_id)
        return [self._record(self._entry(kind, subject))]

    def get_skill(self, name_or_id: str) -> SkillRecord:
        return summarize(self.versions(name_or_id))

    def list_skills(self) -> list[SkillRecord]:
        """Every listed skill, from its entry alone (no file is read)."""
        out = []
        for e in sorted(self.entries(), key=lambda e: (e.name, e.uri)):
            version = entry_version(e)
            out.append(SkillRecord(id=e.uri, name=e.name, description=e.description, created_at=0,
                                   latest_version=version, default_version=None if SemVer.parse(version).is_prerelease else version,
                                   versions=1))
        return out

    def fetch(self, skill: ResolvedSkill) -> bytes:
        """The canonical bundle of ``skill``'s verified files (from memory when this registry
        resolved it), refused unless its digest is ``skill.digest``."""
        held = self._built.get(skill.id)
        if held is None or (skill.manifest and held[0] != skill.manifest):
            self.resolve_record(f"{skill.id}@{skill.version}", manifest=skill.manifest)
            held = self._built[skill.id]
        packed = held[1]
        if packed.digest != skill.digest:
            raise IntegrityError(f"{skill.id} on {self.url}: the server's files now make {packed.digest[:19]}…, not the "
                                 f"resolved {skill.digest[:19]}…; refusing")
        return packed.data

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        """None: an MCP server keeps no signatures (its digests are not a trust anchor either);
        asked about a bundle the server does not serve, ``IntegrityError`` as every backend."""
        from skillctl.registry.signatures import check_same_bundle

        check_same_bundle(self.resolve_record(f"{skill.id}@{skill.version}", manifest=skill.manifest), skill, self.url)
        return []

    def verify(self) -> list[Problem]:
        problems: list[Problem] = []
        for entry in self.entries():
            try:
                self._record(entry)
            except IntegrityError as exc:
                problems.append(Problem("error", "corrupt", str(exc)))
            except SkillctlError as exc:
                problems.append(Problem("error", "invalid", str(exc)))
        return problems

    def _refuse(self, operation: str) -> Any:
        from skillctl.errors import UnsupportedError

        return UnsupportedError(f"{operation} is not supported: {self.url} is an MCP server, read-only for skillctl; "
                                "do it in the registry or folder the server serves")
