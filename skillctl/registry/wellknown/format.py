"""The Agent Skills well-known URI format: documents, layout and how strictly they are read.

An index (``/.well-known/agent-skills/index.json``)::

    {"$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
     "skills": [{"name": …, "type": "archive" | "skill-md", "description": …,
                 "url": …, "digest": "sha256:<64 hex>", "version": "1.2.0"}]}

``url`` is resolved per RFC 3986 against the URL the index was read from. The JSON Schema ships
as ``schemas/discovery-0.2.0.schema.json`` (written from the documented format; see its
``$comment``); publishing validates whole documents against it, reading validates entry by entry
so one bad entry is skipped with a warning instead of losing the whole site.

The versioned layout skillctl writes and reads, below ``/.well-known/agent-skills/``::

    index.json                     latest version of every skill (mutable)
    NAME/versions.json             {"latest": V, "versions": [...], "yanked": [...]} (mutable)
    NAME/vVERSION/index.json       that version alone (immutable snapshot)
    NAME/vVERSION/NAME.tar.gz      its archive, or NAME/vVERSION/SKILL.md for a lone SKILL.md

The format's own example of versioned snapshots is site-wide (``vX/index.json`` next to a
top-level ``versions.json`` listing site versions); that layout is read too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable
from urllib.parse import urljoin, urlsplit

from skillctl.errors import RegistryError
from skillctl.nesting import loads_json
from skillctl.registry.refs import NAME_RE
from skillctl.versioning import SemVer

SCHEMA_URI = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
KNOWN_SCHEMAS = frozenset({SCHEMA_URI})
SCHEMA_FILE = "discovery-0.2.0.schema.json"
WELL_KNOWN_DIR = ".well-known/agent-skills"
INDEX_FILE = "index.json"
VERSIONS_FILE = "versions.json"
ARCHIVE, SKILL_MD = "archive", "skill-md"
ENTRY_TYPES = (ARCHIVE, SKILL_MD)
# Entries without a version are the site's one and only version of that skill.
UNVERSIONED = "0.0.0"

# What servers must send (the format's HTTP requirements); clients tell formats by content.
CONTENT_TYPES = {
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    ".tar.gz": "application/gzip",
    ".tgz": "application/gzip",
    ".zip": "application/zip",
}

# Real sites list tens of skills; 10,000 entries with 600-character descriptions are ~8 MiB. Past
# the byte cap an index is refused while it streams in, before it is parsed (a hostile or broken
# server); past the entry cap, before any entry is looked at.
MAX_INDEX_BYTES = 8 * 1024 * 1024
MAX_INDEX_ENTRIES = 10_000
MAX_VERSIONS_BYTES = 2 * 1024 * 1024
MAX_VERSIONS = 10_000
MAX_WARNINGS_PER_DOCUMENT = 5


def content_type(path: str) -> str:
    for suffix, kind in CONTENT_TYPES.items():
        if path.endswith(suffix):
            return kind
    return "application/octet-stream"


# ---------------------------------------------------------------------------- layout


def snapshot_dir(name: str, version: str) -> str:
    return f"{name}/v{version}"


def snapshot_index_path(name: str, version: str) -> str:
    return f"{snapshot_dir(name, version)}/{INDEX_FILE}"


def versions_path(name: str) -> str:
    return f"{name}/{VERSIONS_FILE}"


def artifact_filename(name: str, entry_type: str) -> str:
    return "SKILL.md" if entry_type == SKILL_MD else f"{name}.tar.gz"


# ---------------------------------------------------------------------------- schema


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.registry.wellknown").joinpath("schemas", SCHEMA_FILE).read_text("utf-8"))


@lru_cache(maxsize=2)
def _validator(part: str) -> Any:
    from jsonschema import Draft202012Validator

    doc = schema()
    if part == "entry":
        doc = {**doc["$defs"]["skill"], "$defs": doc["$defs"]}
    return Draft202012Validator(doc)


def schema_errors(doc: Any) -> list[str]:
    """Every way ``doc`` breaks the discovery schema, as ``path: message`` lines."""
    from skillctl.schema import schema_problems, validator
    return schema_problems(doc, _validator("index"), wording=validator)


# ---------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class IndexEntry:
    """One skill of an index; ``url`` is already resolved against the index URL."""

    name: str
    type: str
    description: str
    url: str
    digest: str
    version: str | None

    @property
    def semver(self) -> SemVer:
        return SemVer.parse(self.version or UNVERSIONED)


@dataclass(frozen=True)
class VersionList:
    """A ``versions.json``: every version, newest first; ``latest`` and ``yanked`` as listed."""

    versions: tuple[SemVer, ...]
    latest: str | None
    yanked: frozenset[str]

    def is_yanked(self, v: SemVer) -> bool:
        return any(SemVer.parse(y).same_as(v) for y in self.yanked)


def _json(body: bytes, where: str) -> Any:
    try:
        return loads_json(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RegistryError(f"{where} is not valid JSON ({exc}); the site serves a broken document") from None


class _Warnings:
    """At most a few warnings per document, then one line counting the rest: an index with
    100,000 bad entries must not print 100,000 lines."""

    def __init__(self, warn: Callable[[str], None], where: str) -> None:
        self.warn, self.where, self.count = warn, where, 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if self.count <= MAX_WARNINGS_PER_DOCUMENT:
            self.warn(f"{self.where}: {message}")

    def close(self) -> None:
        if self.count > MAX_WARNINGS_PER_DOCUMENT:
            self.warn(f"{self.where}: {self.count - MAX_WARNINGS_PER_DOCUMENT} more entries skipped")


def check_schema_uri(doc: Any, where: str) -> None:
    declared = doc.get("$schema") if isinstance(doc, dict) else None
    if declared not in KNOWN_SCHEMAS:
        what = "declares no $schema" if declared is None else f"declares $schema {str(declared)[:120]!r}"
        raise RegistryError(
            f"{where} {what}, which this skillctl does not know (it reads {', '.join(sorted(KNOWN_SCHEMAS))}); "
            "refusing to read it — upgrade skillctl, or ask the publisher which format it serves"
        )


def parse_index(body: bytes, index_url: str, warn: Callable[[str], None]) -> dict[str, IndexEntry]:
    """The usable entries of an index, by name. Refuses (RegistryError, one line) a document
    that is not JSON, declares an unknown or no ``$schema``, has no ``skills`` list, lists more
    than ``MAX_INDEX_ENTRIES`` or names a skill twice. Skips, with a warning: entries of an
    unknown ``type``, entries that break the schema, URLs that are not http(s), and versions
    skillctl cannot order."""
    doc = _json(body, index_url)
    check_schema_uri(doc, index_url)
    skills = doc.get("skills")
    if not isinstance(skills, list):
        raise RegistryError(f"{index_url} has no 'skills' list; the site serves a broken index")
    if len(skills) > MAX_INDEX_ENTRIES:
        raise RegistryError(f"{index_url} lists {len(skills)} skills, over the {MAX_INDEX_ENTRIES} this client reads; refusing it")
    warnings = _Warnings(warn, index_url)
    out: dict[str, IndexEntry] = {}
    seen: set[str] = set()
    from skillctl.schema import schema_problems, summarize, validator

    check = _validator("entry")
    for i, item in enumerate(skills):
        label = f"skills[{i}]" + (f" ({item['name']!r})" if isinstance(item, dict) and isinstance(item.get("name"), str) else "")
        kind = item.get("type") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind not in ENTRY_TYPES:
            warnings(f"{label} skipped: unknown type {kind[:40]!r} (this client reads {', '.join(ENTRY_TYPES)})")
            continue
        errors = schema_problems(item, check, wording=validator, top="entry")
        if errors:
            warnings(f"{label} skipped: {summarize(errors, most=3)[:480]}")
            continue
        url = urljoin(index_url, item["url"])
        if urlsplit(url).scheme not in ("http", "https"):
            warnings(f"{label} skipped: url {item['url'][:120]!r} is not http(s)")
            continue
        version = item.get("version")
        if version is not None:
            try:
                SemVer.parse(version)
            except Exception:  # noqa: BLE001 - any version we cannot order is the same skip
                warnings(f"{label} skipped: version {version!r} is not one skillctl can order")
                continue
        name = item["name"]
        if name in seen:
            raise RegistryError(f"{index_url} lists skill '{name}' twice; refusing an ambiguous index")
        seen.add(name)
        out[name] = IndexEntry(name, kind, item["description"], url, item["digest"], version)
    warnings.close()
    return out


def parse_versions(body: bytes, where: str) -> VersionList:
    """A ``versions.json``: ``versions`` must be a list of distinct versions skillctl can order
    (at most ``MAX_VERSIONS``); ``latest`` and ``yanked`` are optional."""
    doc = _json(body, where)
    versions = doc.get("versions") if isinstance(doc, dict) else None
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise RegistryError(f"{where} has no 'versions' list of strings; the site serves a broken document")
    if len(versions) > MAX_VERSIONS:
        raise RegistryError(f"{where} lists {len(versions)} versions, over the {MAX_VERSIONS} this client reads; refusing it")
    parsed: list[SemVer] = []
    for v in versions:
        try:
            sv = SemVer.parse(v)
        except Exception:  # noqa: BLE001 - the same refusal for any unusable version
            raise RegistryError(f"{where} lists version {v[:40]!r}, which skillctl cannot order; refusing it") from None
        if any(sv.same_as(p) for p in parsed):
            raise RegistryError(f"{where} lists version {v} twice; refusing it")
        parsed.append(sv)
    yanked = doc.get("yanked", [])
    latest = doc.get("latest")
    if not isinstance(yanked, list) or not all(isinstance(v, str) for v in yanked) or not isinstance(latest, (str, type(None))):
        raise RegistryError(f"{where}: 'latest' must be a version and 'yanked' a list of versions")
    return VersionList(tuple(sorted(parsed, key=lambda v: v.order, reverse=True)), latest, frozenset(yanked))


def dumps(doc: Any) -> bytes:
    """The bytes skillctl publishes a document as: stable key order as given, two-space indent,
    UTF-8, trailing newline (the same document always gives the same bytes)."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def is_name(text: str) -> bool:
    return NAME_RE.match(text) is not None and len(text) <= 64
