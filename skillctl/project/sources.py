"""The sources one command reads, opened once and closed together, and what the lock records of
each: a registry's name and URL, a git repository's URL, ref and folder, a folder of the project.

The project layer never asks which kind of source it holds beyond this module: it turns entries
into specs (``Project.source_spec``), asks ``ProjectSources.get(kind)`` for the source, and
records ``source_record``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from skillctl.protocols import RegistryReader, ResolvedSkill, Source, SourcePin, SourceSpec
from skillctl.project.spec import DEFAULT_REGISTRY, Entry, Project

if TYPE_CHECKING:
    from skillctl.sources.registry import RegistrySource

Progress = Callable[[str], None]


class ProjectSources:
    """Every source a command needs, made when first asked for. ``registry_opener`` opens a
    registry URL (the CLI's carries ``--insecure`` and credentials); ``git_options`` go to
    ``GitSource`` (``insecure``, ``token``, ``progress``…)."""

    def __init__(self, root: Path, *, registry_opener: Callable[[str], RegistryReader] | None = None,
                 git_options: dict[str, Any] | None = None) -> None:
        self.root = root
        self._registry_opener = registry_opener
        self._git_options = dict(git_options or {})
        self._open: dict[str, Source] = {}

    def get(self, kind: str) -> Source:
        if kind not in self._open:
            from skillctl.sources import open_source

            options: dict[str, Any] = {}
            if kind == "registry":
                options = {"opener": self._registry_opener} if self._registry_opener else {}
            elif kind == "git":
                options = self._git_options
            elif kind == "path":
                options = {"base": self.root}
            self._open[kind] = open_source(kind, **options)
        return self._open[kind]

    def registry(self, url: str) -> RegistryReader:
        """The registry at ``url`` (for what only registries do: signatures, locks)."""
        return self._registries().registry(url)

    def registry_record(self, pin: SourcePin) -> ResolvedSkill:
        """The registry's record for a registry pin, refused unless it has the pinned digest."""
        return self._registries().resolved(pin)

    def _registries(self) -> "RegistrySource":
        from skillctl.sources.registry import RegistrySource

        source = self.get("registry")
        assert isinstance(source, RegistrySource)
        return source

    def close(self) -> None:
        for source in self._open.values():
            close = getattr(source, "close", None)
            if close is not None:
                close()
        self._open.clear()

    def __enter__(self) -> "ProjectSources":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def source_record(entry: Entry, spec: SourceSpec) -> dict[str, str]:
    """What the lock records of where ``entry`` comes from (portable: a git URL as written
    before any mirror, a folder relative to the project)."""
    if spec.kind == "registry":
        on_server = {"uri": spec.subdir} if spec.subdir else {}  # an MCP skill: (server, uri) is its identity
        return {"kind": "registry", "registry": entry.registry, "url": spec.location, **on_server}
    if spec.kind == "git":
        return {"kind": "git", "url": spec.location, "ref": spec.ref, "subdir": spec.subdir}
    return {"kind": "path", "path": spec.location}


def describe_source(source: dict[str, str]) -> str:
    """One short phrase for messages and tables: ``registry team (https://…)``, ``git …@v4``."""
    kind = source.get("kind", "registry")
    if kind == "git":
        where = source.get("url", "")
        sub = source.get("subdir", "")
        return f"git {where}{'#' + sub if sub else ''}{'@' + source['ref'] if source.get('ref') else ''}"
    if kind == "path":
        return f"folder {source.get('path', '')}"
    name, url = source.get("registry", "default"), source.get("url", "")
    where = f"registry {name} ({url})" if url else f"registry {name}"
    return f"{where} {source['uri']}" if source.get("uri") else where


def locked_registry_url(source: dict[str, str], project: "Project | None" = None, override: str | None = None) -> str:
    """Where a locked registry skill's registry is now: ``--registry`` for the default registry,
    else the URL the project's ``registries:`` gives its name, else the one the lock recorded,
    else (a lock of format 1) ``SKILLCTL_REGISTRY`` or the user's folder."""
    from skillctl.registry import default_registry_url

    name = source.get("registry", DEFAULT_REGISTRY)
    if name == DEFAULT_REGISTRY and override:
        return override
    if project is not None and name in project.registries:
        return project.registries[name]
    if source.get("url"):
        return source["url"]
    return default_registry_url() if name == DEFAULT_REGISTRY else name
