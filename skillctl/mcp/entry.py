"""The extension's ``Skill`` entry: ``{uri, frontmatter, resources}`` with every file's digest.

Both directions go through here, so what ``skillctl mcp serve`` sends is what the client checks:

- ``build_entry(skill_path, files)`` (server): the entry for a skill's files, in path order;
  ``frontmatter`` is the ``SKILL.md`` front matter as JSON (``frontmatter_json``), digests are
  ``sha256:`` of the bytes served.
- ``parse_entry(obj, server)`` (client): an entry from a server, checked as hostile input — the URI's
  structure, the last segment equal to ``frontmatter.name``, ``resources`` a list of
  ``{uri, digest, size}`` inside the skill (each once, ``SKILL.md`` among them) or ``"dynamic"``,
  digests of 64 lowercase hex, sizes whole numbers; anything else is one ``EntryError`` line.
- ``check_limits(entry, limits)``: the per-skill limits, from the entry alone, before any file is
  read: the extension's 512 resources and 16 MiB, and skillctl's bundle limits (files, sizes).
- ``manifest_digest(entry)``: the ``sha256:`` of the ``(path, digest, size)`` list, what a lock
  pins so that a server serving other files for the skill is refused before anything is read.

YAML values JSON has no word for (dates, binary, sets) become strings, the same way on both
sides, so a client compares the front matter it parses with the entry field by field.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from skillctl.bundle import BundleLimits
from skillctl.errors import SourceError
from skillctl.mcp import uris

MAX_RESOURCES = 512  # the extension's per-skill limits: every conforming host accepts up to these
MAX_TOTAL_SIZE = 16 * 1024 * 1024
DYNAMIC = "dynamic"
_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


class EntryError(SourceError):
    """A skill entry from a server that breaks the extension's rules or skillctl's limits."""


@dataclass(frozen=True)
class FileEntry:
    uri: str
    path: str  # in the skill's folder
    digest: str
    size: int


@dataclass(frozen=True)
class SkillEntry:
    uri: str  # of the SKILL.md
    skill_path: str
    frontmatter: Mapping[str, Any]
    resources: tuple[FileEntry, ...] | None  # None: "dynamic"

    @property
    def name(self) -> str:
        return uris.skill_name(self.skill_path)

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else ""

    @property
    def dynamic(self) -> bool:
        return self.resources is None

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.resources or ())

    def to_wire(self) -> dict[str, Any]:
        resources: Any = DYNAMIC if self.resources is None else [
            {"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.resources
        ]
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _jsonable(value: Any, depth: int = 0) -> Any:
    if depth > 64:  # the YAML reader bounds nesting already; this is a backstop
        raise EntryError("front matter nested too deep")
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v, depth + 1) for v in value), key=repr)
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def frontmatter_json(skill_md: bytes, shown: str) -> dict[str, Any]:
    """The front matter of ``skill_md`` as a JSON object; ``EntryError`` when there is none."""
    from skillctl.skill.document import parse_skill_md

    doc, diags = parse_skill_md(skill_md, shown)
    if doc is None or not isinstance(doc.metadata, dict):
        first = next((d.format() for d in diags if d.severity == "error"), "no YAML front matter")
        raise EntryError(f"{shown}: {first}")
    return _jsonable(doc.metadata)


def build_entry(skill_path: str, files: Mapping[str, bytes], *, scheme: str = uris.SCHEME) -> SkillEntry:
    """The entry of the skill at ``skill_path`` whose files (path in the folder → bytes) are ``files``."""
    uri = uris.skill_uri(skill_path, scheme)
    resources = tuple(
        FileEntry(uris.file_uri(skill_path, rel, scheme), rel, digest_of(data), len(data))
        for rel, data in sorted(files.items())
    )
    return SkillEntry(uri, skill_path, frontmatter_json(files[uris.SKILL_FILE], uri), resources)


def manifest_digest(entry: SkillEntry) -> str:
    """``sha256:`` of the entry's files as ``[[path, digest, size], …]`` in path order (compact
    JSON); "" for a dynamic entry, which cannot be pinned."""
    if entry.resources is None:
        return ""
    listing = sorted([f.path, f.digest, f.size] for f in entry.resources)
    return digest_of(json.dumps(listing, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def parse_entry(obj: Any, server: str) -> SkillEntry:
    """A ``Skill`` entry from ``server`` (named in messages), checked; ``EntryError`` otherwise."""
    if not isinstance(obj, dict):
        raise EntryError(f"{server}: a skill entry is not an object")
    uri = obj.get("uri")
    try:
        _scheme, skill_path = uris.split_skill_uri(uri)
    except uris.UriError as exc:
        raise EntryError(f"{server}: {exc}") from None
    where = f"{server}: {uris.shown(uri)}"
    fm = obj.get("frontmatter")
    if not isinstance(fm, dict):
        raise EntryError(f"{where}: the entry has no frontmatter object")
    name = fm.get("name")
    if not isinstance(name, str) or not isinstance(fm.get("description"), str):
        raise EntryError(f"{where}: frontmatter must carry name and description as strings")
    if name != uris.skill_name(skill_path):
        raise EntryError(f"{where}: the URI's last segment is {uris.skill_name(skill_path)!r} but frontmatter.name is "
                         f"{uris.shown(name)!r}; the extension requires them to be equal")
    raw = obj.get("resources", ...)
    if raw == DYNAMIC:
        return SkillEntry(uri, skill_path, fm, None)
    if not isinstance(raw, list):
        raise EntryError(f"{where}: resources must be a list of files or \"dynamic\"; the entry cannot be loaded")
    if len(raw) > MAX_RESOURCES:  # before looking at any item: a list of 100k costs nothing more
        raise EntryError(f"{where}: {len(raw)} resources, more than the extension's {MAX_RESOURCES} per skill; refusing it")
    seen: dict[str, FileEntry] = {}
    for item in raw:
        f = _file_entry(item, uri, where)
        if f.path in seen:
            raise EntryError(f"{where}: {uris.shown(f.uri)} is listed twice")
        seen[f.path] = f
    if uris.SKILL_FILE not in seen:
        raise EntryError(f"{where}: resources does not list the SKILL.md itself; an incomplete manifest cannot be verified")
    return SkillEntry(uri, skill_path, fm, tuple(seen[p] for p in sorted(seen)))


def _file_entry(item: Any, skill_uri: str, where: str) -> FileEntry:
    if not isinstance(item, dict):
        raise EntryError(f"{where}: a resource is not an object")
    uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    try:
        path = uris.file_path(skill_uri, uri)
    except uris.UriError as exc:
        raise EntryError(f"{where}: {exc}") from None
    if not isinstance(digest, str) or not _DIGEST_RE.match(digest):
        raise EntryError(f"{where}: {uris.shown(uri)}: digest must be sha256: and 64 lowercase hex characters")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise EntryError(f"{where}: {uris.shown(uri)}: size must be a whole number of bytes")
    return FileEntry(uri, path, digest, size)


def mcp_limits() -> BundleLimits:
    """The bundle limits for a skill read from an MCP server: the extension's (512 files, 16 MiB
    in all, which every conforming host must accept, so one file may be as large), the bundle's
    rules for everything else (paths, depth, folders)."""
    return BundleLimits(max_files=MAX_RESOURCES, max_file_size=MAX_TOTAL_SIZE, max_total_size=MAX_TOTAL_SIZE)


def check_limits(entry: SkillEntry, limits: BundleLimits, server: str) -> None:
    """Refuse, from the entry alone, a skill larger than ``limits`` allow (see ``mcp_limits``)."""
    if entry.resources is None:
        return
    where = f"{server}: {uris.shown(entry.uri)}"
    if len(entry.resources) > limits.max_files:
        raise EntryError(f"{where}: {len(entry.resources)} files, more than the {limits.max_files} a skill may have")
    if entry.total_size > limits.max_total_size:
        raise EntryError(f"{where}: the files declare {entry.total_size} bytes in all, more than the "
                         f"{limits.max_total_size} a skill may have")
    big = next((f for f in entry.resources if f.size > limits.max_file_size), None)
    if big is not None:
        raise EntryError(f"{where}: {big.path} declares {big.size} bytes, more than the {limits.max_file_size} a file may have")
