"""What ``skillctl mcp serve`` serves: skills by path, their entries, their files.

Three kinds of catalog, one shape:

- ``registry_catalog(reg)``: every skill of a registry (any backend). ``skill://<name>/SKILL.md``
  is the version ``latest`` resolves to (the highest release that is not yanked); every version
  is also served, pinned, at ``skill://_versions/<VERSION>/<name>/SKILL.md`` — listed by
  ``skills/list`` only with ``all_versions``, always answered by ``skills/get`` and
  ``resources/read`` (the extension: a server answers for every skill it serves, listed or not).
  ``_versions`` cannot be a skill's name (names are lowercase letters, digits and hyphens), so the
  two never meet, and a pinned version is not nested inside the latest one.
- ``store_catalog(open_store)``: the skills a project's lock pins, through its ``ProjectStore``
  (every digest checked against the lock), at ``skill://<name>/SKILL.md``.
- ``folder_catalog(root)``: the skills found in a folder (``skillctl.skill.discovery``), each at
  its folder's path below ``root`` with the last segment its name, packed as ``pack`` packs them
  (``.skillignore`` honoured, links refused); a skill nested in another's folder is published too,
  at the enclosing skill's path and its folder (``skill://outer/sub/inner/SKILL.md``), while its
  files stay in the enclosing skill's entry, as the extension's Nested Skills section says.

Entries are built once per skill from its files and kept (a few hundred bytes per file); files
are kept for the ``cache_skills`` most recently read skills and loaded again when needed. A skill
whose files changed since its entry was built (a folder being edited) gets a new entry: a host
holding the old one sees a digest mismatch and refreshes with ``skills/get``, as the extension
describes. Everything runs on one worker thread (registries hold SQLite connections made there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

from skillctl.mcp import uris
from skillctl.mcp.entry import MAX_RESOURCES, MAX_TOTAL_SIZE, SkillEntry, build_entry

VERSIONS_PREFIX = "_versions"
T = TypeVar("T")


@dataclass(frozen=True)
class Served:
    path: str  # the skill path: segments below skill://, the last one the skill's name
    name: str
    listed: bool
    load: Callable[[], Mapping[str, bytes]]  # the skill's files (path in the folder -> bytes), checked
    version: str = ""


class Catalog:
    """Skills by path, with their entries and files (see the module docstring)."""

    def __init__(self, opener: Callable[[], Sequence[Served]], *, label: str, cache_skills: int = 64,
                 on_close: Callable[[], None] | None = None) -> None:
        self.label = label
        self.warn: Callable[[str], None] = lambda message: None
        self._warned: set[str] = set()
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillctl-mcp-catalog")
        self._on_close = on_close
        self._lock = threading.Lock()
        self._entries: dict[str, SkillEntry] = {}
        self._files: OrderedDict[str, Mapping[str, bytes]] = OrderedDict()
        self._cache_skills = cache_skills
        try:
            served = self._worker.submit(opener).result()
        except BaseException:
            self.close()
            raise
        self._served = {s.path: s for s in served}
        self.listed = [s for s in served if s.listed]
        prefixes: dict[str, set[tuple[str, str]]] = {}  # directory above skills -> its children (segment, kind)
        for s in served:
            parts = s.path.split("/")
            for i in range(1, len(parts)):
                kind = "skill" if i == len(parts) - 1 else "dir"
                prefixes.setdefault("/".join(parts[:i]), set()).add((parts[i], kind))
        self._prefixes = prefixes

    def close(self) -> None:
        if self._on_close is not None:
            self._worker.submit(self._on_close).result()
        self._worker.shutdown(wait=True)

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the catalog's worker thread, awaited without blocking the event loop."""
        return await asyncio.wrap_future(self._worker.submit(fn))

    # ------------------------------------------------------------------ lookups (any thread)

    def find(self, path: str) -> Served | None:
        return self._served.get(path)

    def skill_of(self, rest: str) -> tuple[Served, str] | None:
        """The served skill a resource path (``<skill-path>/<file-path>``, no scheme) falls in, and
        the file's path in it; the deepest skill wins (a nested skill's file is its own)."""
        parts = rest.split("/")
        for i in range(len(parts) - 1, 0, -1):
            served = self._served.get("/".join(parts[:i]))
            if served is not None:
                return served, "/".join(parts[i:])
        return None

    def prefix_children(self, path: str) -> set[tuple[str, str]] | None:
        return self._prefixes.get(path)

    # ------------------------------------------------------------------ entries and files (worker thread)

    def entry(self, served: Served) -> SkillEntry:
        with self._lock:
            known = self._entries.get(served.path)
        if known is not None:
            return known
        self.files(served)
        with self._lock:
            return self._entries[served.path]

    def files(self, served: Served) -> Mapping[str, bytes]:
        with self._lock:
            cached = self._files.get(served.path)
            if cached is not None:
                self._files.move_to_end(served.path)
                return cached
        files = served.load()
        entry = build_entry(served.path, files)
        if (len(files) > MAX_RESOURCES or entry.total_size > MAX_TOTAL_SIZE) and served.path not in self._warned:
            # The extension's SHOULD NOT: served anyway (a host MAY take more), but the operator is told.
            self._warned.add(served.path)
            self.warn(f"warning: {entry.uri} has {len(files)} files and {entry.total_size} bytes, beyond the extension's "
                      f"{MAX_RESOURCES} files and {MAX_TOTAL_SIZE} bytes: some hosts will refuse it")
        with self._lock:
            self._entries[served.path] = entry
            self._files[served.path] = files
            while len(self._files) > self._cache_skills:
                self._files.popitem(last=False)
        return files


# ---------------------------------------------------------------------------- the three kinds


def registry_catalog(url: str | None, *, all_versions: bool = False, opener: Callable[[str | None], Any] | None = None) -> Catalog:
    """The skills of the registry at ``url`` (default: the default registry)."""
    state: dict[str, Any] = {}

    def open_all() -> list[Served]:
        from skillctl.registry import open_registry

        reg = (opener or (lambda u: open_registry(u, create=False)))(url)
        state["reg"] = reg
        served: list[Served] = []
        for record in sorted(reg.list_skills(), key=lambda r: r.name):
            latest = record.default_version or record.latest_version
            if latest is not None:
                served.append(Served(record.name, record.name, True, _registry_loader(reg, record.name, latest), latest))
            for v in reg.versions(record.name):
                served.append(Served(f"{VERSIONS_PREFIX}/{v.version}/{record.name}", record.name, all_versions and not v.yanked,
                                     _registry_loader(reg, record.name, v.version), v.version))
        return sorted(served, key=lambda s: (s.path.startswith(VERSIONS_PREFIX + "/"), s.path))

    return Catalog(open_all, label=url or "the default registry", on_close=lambda: state["reg"].close() if "reg" in state else None)


def _registry_loader(reg: Any, name: str, version: str) -> Callable[[], Mapping[str, bytes]]:
    def load() -> Mapping[str, bytes]:
        from skillctl.bundle import read_artifact

        rec = reg.resolve(f"{name}@{version}")
        return read_artifact(reg.fetch(rec), rec.artifact_type, expected_name=name, source=f"{name}@{version}").files

    return load


def store_catalog(open_store: Callable[[], tuple[Any, Sequence[Any]]], *, label: str,
                  on_close: Callable[[], None] | None = None) -> Catalog:
    """The locked skills of a ``ProjectStore``, checked against the lock: ``open_store()`` gives the
    store and its ``ResolvedSkill`` list (opened on the catalog's thread, like everything it reads)."""

    def load_for(store: Any, rec: Any) -> Callable[[], Mapping[str, bytes]]:
        def load() -> Mapping[str, bytes]:
            from skillctl.bundle import read_artifact

            return read_artifact(store.fetch(rec), rec.artifact_type, expected_name=rec.name, source=f"{rec.name}@{rec.version}").files

        return load

    def open_all() -> list[Served]:
        store, skills = open_store()
        return [Served(r.name, r.name, True, load_for(store, r), r.version) for r in sorted(skills, key=lambda r: r.name)]

    return Catalog(open_all, label=label, on_close=on_close)


def folder_catalog(root: Path) -> Catalog:
    """The skills in the folder ``root`` (one skill folder, or a folder of them)."""
    from skillctl.errors import SourceError

    def open_all() -> list[Served]:
        from skillctl.skill.discovery import discover

        if not root.is_dir():
            raise SourceError(f"{root}: no such folder")
        served = []
        for folder, _shown, problem in discover(root):
            if folder is None:
                if problem is not None and problem.severity == "error":
                    raise SourceError(problem.format())
                continue
            name = _declared_name(folder)
            rel = folder.resolve().relative_to(root.resolve()).as_posix()
            parent = "" if rel == "." else rel.rpartition("/")[0]
            path = f"{parent}/{name}" if parent else name
            served.append(Served(path, name, True, _folder_loader(folder, name)))
            served += _nested(folder, path)
        return sorted(served, key=lambda s: s.path)

    return Catalog(open_all, label=str(root))


def _nested(folder: Path, path: str) -> list[Served]:
    """The skills nested in the skill ``folder`` (served at ``path``): each ``SKILL.md`` below it in
    a folder named as the skill it declares — the extension's rule for a nested skill's path (its
    files are also the enclosing skill's). One whose folder has another name is not published."""
    found = []
    for md in sorted(folder.rglob(uris.SKILL_FILE)):
        inner = md.parent
        if inner == folder or md.is_symlink() or not md.is_file():
            continue
        try:
            name = _declared_name(inner)
        except Exception:  # noqa: BLE001 - an unreadable nested skill is only the enclosing skill's file
            continue
        if name != inner.name:
            continue
        rel = inner.relative_to(folder).as_posix()
        found.append(Served(f"{path}/{rel}", name, True, _folder_loader(inner, name)))
    return found


def _declared_name(folder: Path) -> str:
    """The ``name`` the folder's SKILL.md declares (the extension puts it last in the path),
    else the folder's own name; a name that cannot be a path segment is refused."""
    from skillctl.errors import SourceError
    from skillctl.skill.document import parse_skill_md

    doc, _ = parse_skill_md((folder / uris.SKILL_FILE).read_bytes(), str(folder / uris.SKILL_FILE))
    name = doc.metadata.get("name") if doc is not None and isinstance(doc.metadata, dict) else None
    name = name if isinstance(name, str) and name else folder.name
    if name in (".", "..") or "/" in name or "\\" in name or not name.isprintable():
        raise SourceError(f"{folder}: the skill's name {name!r} cannot be the last segment of its URI; fix its name")
    return name


def _folder_loader(folder: Path, name: str) -> Callable[[], Mapping[str, bytes]]:
    def load() -> Mapping[str, bytes]:
        from skillctl.bundle import DEFAULT_MTIME, pack, read_bundle

        packed = pack(folder, folder.name, mtime=DEFAULT_MTIME)
        return read_bundle(packed.data, expected_name=folder.name, source=str(folder)).files

    return load
