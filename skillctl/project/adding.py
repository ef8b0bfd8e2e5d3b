"""``add`` and ``remove``: one edit of ``skills.yaml``, then the lock — or neither.

``add_to_project`` tells what SOURCE is (a git repository, a skills site, a folder, a registry
reference, an MCP server ``mcp+stdio:…``/``mcp+https://…``), finds the skills it holds, chooses the ones asked for, writes one entry per skill (a
registry version as ``^X.Y.Z`` of the newest, as ``npm install`` and ``cargo add`` do; a git
repository as its URL, ref and the skill's folder in it; a folder relative to the project; an MCP
server's skill as the server, ``^X.Y.Z`` and its SKILL.md URI) and
locks, keeping every other pin. ``remove_from_project`` drops entries and locks. Either way, if
any step fails both files are put back as they were.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillctl.errors import LockError, SourceError
from skillctl.project import edit
from skillctl.project.lock import Lock
from skillctl.project.resolve import Move
from skillctl.project.spec import DEFAULT_REGISTRY
from skillctl.protocols import SourcePin, SourceSpec


@dataclass
class AddResult:
    lock: Lock
    moves: list[Move]
    added: dict[str, Any] = field(default_factory=dict)  # name -> the entry written


def _choose(pins: list[SourcePin], skills: list[str], take_all: bool, where: str) -> list[SourcePin]:
    by_name: dict[str, SourcePin] = {}
    for pin in pins:
        if pin.name in by_name:
            raise SourceError(f"{where}: two skills named {pin.name} ({by_name[pin.name].subdir or '.'} and {pin.subdir or '.'}); "
                              "point at one folder")
        by_name[pin.name] = pin
    names = ", ".join(sorted(by_name)) or "none"
    if not by_name:
        raise SourceError(f"{where}: no skill found there")
    if skills:
        missing = [s for s in skills if s not in by_name]
        if missing:
            raise SourceError(f"{where}: no skill named {', '.join(missing)} (skills there: {names})")
        return [by_name[s] for s in skills]
    if take_all or len(by_name) == 1:
        return [by_name[n] for n in sorted(by_name)]
    raise SourceError(f"{where} holds {len(by_name)} skills ({names}); choose with --skill NAME (repeatable) or --all")


def _looks_like_folder(source: str) -> bool:
    return source.startswith(("./", "../", "/", "~")) or source in (".", "..") or os.path.isdir(source)


def _registry_name(ws: Any, url: str) -> str:
    """The project's name for the registry ``url``, else the URL itself."""
    if ws.has_project:
        for name, known in ws.project.registries.items():
            if known.rstrip("/") == url.rstrip("/"):
                return name
    return url


def entries_for(ws: Any, source: str, skills: list[str], take_all: bool) -> dict[str, Any]:
    """The skills.yaml entries SOURCE gives, by skill name."""
    from skillctl.sources.gitspec import is_git_source, parse_git_source

    if is_git_source(source):
        loc = parse_git_source(source, insecure=ws.insecure)
        pins = ws.sources.get("git").discover(SourceSpec("git", loc.url, loc.ref, loc.subdir))
        out = {}
        for pin in _choose(pins, skills, take_all, source):
            entry: dict[str, str] = {"git": loc.url}
            if loc.ref:
                entry["ref"] = loc.ref
            if pin.subdir:
                entry["path"] = pin.subdir
            out[pin.name] = entry
        return out
    if source.startswith("mcp+"):
        return _mcp_entries(ws, source, skills, take_all)
    if source.startswith(("https://", "http://")):
        pins = ws.sources.get("registry").discover(SourceSpec("registry", source))
        reg = _registry_name(ws, source)
        return {p.name: {"registry": reg, "version": f"^{p.version}"} for p in _choose(pins, skills, take_all, source)}
    if _looks_like_folder(source):
        root = Path(os.path.abspath(ws.requirements)).parent
        folder = Path(os.path.realpath(Path(source).expanduser()))
        pins = ws.sources.get("path").discover(SourceSpec("path", str(folder)))
        out = {}
        for pin in _choose(pins, skills, take_all, source):
            where = folder / pin.subdir if pin.subdir else folder
            try:
                inside = where.relative_to(root).as_posix()
                rel = "." if inside == "." else f"./{inside}"
            except ValueError:
                rel = str(where)  # outside the project: kept absolute (it will not travel with the project)
            out[pin.name] = {"path": rel}
        return out
    return _registry_entries(ws, source, skills, take_all)


def _mcp_entries(ws: Any, source: str, skills: list[str], take_all: bool) -> dict[str, Any]:
    """An MCP server's skills, chosen from its listing by name, skill path or URI before any file
    is read; each written with its URI, since on a server a skill is (server, URI) and two
    entries may share a name (asking for such a name is refused, naming both)."""
    from skillctl.mcp import uris

    listed = ws.sources.registry(source).list_skills()
    where = f"{source}"
    if skills:
        chosen = []
        for want in skills:
            if "/" in want:
                uri = want if "://" in want else uris.skill_uri(want)
                found = [r for r in listed if r.id == uri] or [_Listed(uri)]  # not listed: skills/get decides
            else:
                found = [r for r in listed if r.name == want]
            if not found:
                names = ", ".join(sorted({r.name for r in listed})) or "none"
                raise SourceError(f"{where}: no skill named {want} (skills there: {names})")
            if len(found) > 1:
                raise SourceError(f"{where} serves {len(found)} skills named {want} ({', '.join(r.id for r in found[:8])}); "
                                  f"choose one by skill path, e.g. --skill {found[0].id.split('://', 1)[1].rsplit('/', 1)[0]}")
            chosen.append(found[0].id)
    elif take_all or len(listed) == 1:
        chosen = [r.id for r in listed]
    elif not listed:
        raise SourceError(f"{where}: the server lists no skill; add one by its URI with --skill skill://…/SKILL.md")
    else:
        names = ", ".join(sorted(r.name for r in listed))
        raise SourceError(f"{where} serves {len(listed)} skills ({names}); choose with --skill NAME or skill path (repeatable) or --all")
    reg = _registry_name(ws, source)
    out: dict[str, Any] = {}
    for uri in chosen:
        pin = ws.sources.get("registry").resolve(SourceSpec("registry", source, "latest", uri))
        if pin.name in out:
            raise SourceError(f"{where}: two of the chosen skills are named {pin.name} ({out[pin.name]['uri']} and {uri}); "
                              "a project holds one skill per name, add one of them")
        out[pin.name] = {"registry": reg, "version": f"^{pin.version}", "uri": uri}
    return out


@dataclass(frozen=True)
class _Listed:
    id: str


def _check_no_replacement(ws: Any, entries: dict[str, Any]) -> None:
    """Refuse an add that would put a skill of an MCP server where skills.yaml has another skill
    of that name (another server, another URI, another kind of source): two skills are never
    silently one. Re-adding the same skill is fine."""
    if not ws.has_project:
        return
    for name, value in entries.items():
        old = ws.project.entries.get(name)
        if old is None:
            continue
        new_mcp = isinstance(value, dict) and "uri" in value
        old_mcp = old.kind == "registry" and bool(old.uri)
        if not (new_mcp or old_mcp):
            continue
        same = new_mcp and old_mcp and old.uri == value["uri"] and \
            ws.project.registry_url(old.registry) == ws.project.registry_url(value["registry"])
        if not same:
            raise SourceError(f"skills.yaml already has a skill named {name} from another source; refusing to replace it with "
                              f"{value['uri'] if new_mcp else name} — remove it first (skillctl remove {name})")


def _registry_entries(ws: Any, source: str, skills: list[str], take_all: bool) -> dict[str, Any]:
    from skillctl.registry.refs import parse_ref

    if skills or take_all:
        raise SourceError(f"{source}: --skill and --all choose among the skills of a repository, site or folder; "
                          "a registry reference names one skill")
    ref = parse_ref(source)
    if ref.name is None:
        raise SourceError(f"{source}: add a skill by name (NAME or NAME@RANGE), not by id")
    project = ws.project if ws.has_project else None
    url = ws.registry_override or (project.registry_url(DEFAULT_REGISTRY) if project else None)
    if url is None:
        from skillctl.registry import default_registry_url

        url = default_registry_url()
    wanted = ref.range.text
    pin = ws.sources.get("registry").resolve(SourceSpec("registry", url, wanted, name=ref.name))
    version = f"^{pin.version}" if wanted == "latest" else wanted
    if ws.registry_override:
        return {ref.name: {"registry": _registry_name(ws, url), "version": version}}
    return {ref.name: version}


def add_to_project(ws: Any, source: str, *, skills: list[str], take_all: bool, agents: list[str]) -> AddResult:
    if agents:
        from skillctl.project.agents import load_agents

        known = load_agents()
        unknown = [a for a in agents if a not in known]
        if unknown:
            raise LockError(f"unknown agent {unknown[0]!r}; known: {', '.join(sorted(known))} (skillctl agents)")
    entries = entries_for(ws, source, skills, take_all)
    _check_no_replacement(ws, entries)
    before = edit.snapshot(ws.requirements), edit.snapshot(ws.lock_path)
    try:
        for name, value in entries.items():
            edit.set_entry(ws.requirements, name, value)
        if agents:
            edit.add_targets(ws.requirements, agents)
        ws.forget_project()
        lock, moves = ws.lock()
    except BaseException:
        edit.restore(ws.requirements, before[0])
        edit.restore(ws.lock_path, before[1])
        ws.forget_project()
        raise
    return AddResult(lock, moves, {n: v for n, v in entries.items()})


def remove_from_project(ws: Any, names: list[str]) -> tuple[Lock, list[Move]]:
    before = edit.snapshot(ws.requirements), edit.snapshot(ws.lock_path)
    try:
        for name in names:
            edit.remove_entry(ws.requirements, name)
        ws.forget_project()
        return ws.lock()
    except BaseException:
        edit.restore(ws.requirements, before[0])
        edit.restore(ws.lock_path, before[1])
        ws.forget_project()
        raise
