"""``skills.yaml``: what a project asks for, read in full and checked at once.

    registries:                                    # optional: names for registry URLs
      default: oci://registry.example.com/skills   # a folder, oci://… or https://site
      team: https://skills.example.com
    skills:
      tally: ^1.2                                  # a range, from the default registry
      csv-sql: {registry: team, version: ~2.0}     # a named registry (or a URL)
      brainstorming: {git: https://github.com/obra/superpowers, ref: v4.0.0, path: skills/brainstorming}
      local-helper: {path: ./skills/local-helper}  # a folder of this project
      refunds: {registry: "mcp+stdio:acme-mcp serve", version: ^0.0.0, uri: skill://acme/billing/refunds/SKILL.md}
    targets: [claude-code, codex]                  # where install/sync write (default .agents/skills)
    prereleases: false
    environment: {...}    # packages for the skills' scripts (skillctl.env.declare)
    trust: {...}          # keys and an audit threshold (skillctl.trust.policy)
    network: {...}        # the runs' network policy (skillctl.egress.policy)

A ``git:`` value is a repository URL (``https://``, ``ssh://``, ``file://``; ``git://`` and
``http://`` only with ``--insecure``) or a shorthand (``github:OWNER/REPO``, ``gitlab:…``); ``ref``
a tag, branch or commit (default: the remote's default branch); ``path`` the skill's folder in the
repository (default: the repository is searched for a skill of the entry's name). Every problem of
the file is reported at once, on one line, each naming its place. A registry entry's ``uri`` names
the skill on an MCP server (``mcp+stdio:…``, ``mcp+https://…``), where a skill is (server, URI)
and names need not be unique; ``skillctl add`` writes it.

The default registry is, in order: ``--registry``, ``SKILLCTL_REGISTRY``, ``registries.default``,
(for a locked skill) the URL the lock recorded, the user's data folder. Files written by older skillctl (only ``skills: {NAME: RANGE}``) read as
they always did.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillctl.errors import LockError, SkillctlError
from skillctl.protocols import SourceSpec
from skillctl.registry.refs import NAME_RE, parse_ref
from skillctl.yamlfile import read_yaml

REQUIREMENTS_FILE = "skills.yaml"
LOCK_FILE = "skills.lock"
DEFAULT_REGISTRY = "default"
SECTIONS = ("registries", "skills", "targets", "prereleases", "environment", "trust", "network")
_ENTRY_KEYS = {"registry": {"registry", "version", "uri"}, "git": {"git", "ref", "path"}, "path": {"path"}}


@dataclass(frozen=True)
class Entry:
    """One skill the project asks for. ``written`` is the entry as it stands in the file (a
    range string or a mapping), the lock's record of what it was resolved from. A registry
    entry's ``registry`` is the name it uses (``default`` for a plain range) or a URL."""

    name: str
    kind: str  # registry | git | path
    written: Any
    registry: str = DEFAULT_REGISTRY
    version: str = "latest"  # registry entries
    git: str = ""  # git entries: the URL or shorthand as written
    ref: str = ""
    path: str = ""  # git: folder in the repository; path: the folder
    uri: str = ""  # registry entries on an MCP server: the skill's SKILL.md URI

    @property
    def requested(self) -> str:
        """What the entry asks for, in a word: a range, a git ref, or a folder."""
        if self.kind == "registry":
            return self.version
        if self.kind == "git":
            return self.ref or "HEAD"
        return self.path


@dataclass(frozen=True)
class Project:
    path: Path  # skills.yaml
    entries: dict[str, Entry] = field(default_factory=dict)
    registries: dict[str, str] = field(default_factory=dict)
    targets: tuple[str, ...] = ()
    prereleases: bool = False
    environment: dict[str, Any] | None = None
    trust: dict[str, Any] | None = None
    network: Any = None
    has_network: bool = False

    @property
    def root(self) -> Path:
        return Path(os.path.abspath(self.path)).parent

    def requirements_doc(self) -> dict[str, Any]:
        """What a lock records of this file, to tell later whether it is still current. Files
        with only ranges give exactly what locks written before sources existed recorded."""
        doc: dict[str, Any] = {"skills": {n: self.entries[n].written for n in sorted(self.entries)}, "prereleases": self.prereleases}
        if self.registries:
            doc["registries"] = dict(sorted(self.registries.items()))
        if self.environment is not None:
            doc["environment"] = self.environment
        if self.trust is not None:
            doc["trust"] = self.trust
        return doc

    def registry_url(self, name: str, *, override: str | None = None) -> str:
        """The URL of registry ``name`` (or ``name`` itself when it is a URL or a folder path):
        ``default`` is ``override`` (``--registry``), else this file's ``registries.default``, else
        ``SKILLCTL_REGISTRY`` or the user's folder."""
        from skillctl.registry import default_registry_url

        if name == DEFAULT_REGISTRY:
            return override or self.registries.get(DEFAULT_REGISTRY) or default_registry_url()
        if name in self.registries:
            return self.registries[name]
        return name  # a URL written in place

    def source_spec(self, entry: Entry, *, registry_override: str | None = None, insecure: bool = False) -> SourceSpec:
        """Where ``entry`` comes from, as the sources take it."""
        if entry.kind == "registry":
            return SourceSpec("registry", self.registry_url(entry.registry, override=registry_override), entry.version, entry.uri,
                              name=entry.name)
        if entry.kind == "git":
            from skillctl.sources.gitspec import parse_git_source

            text = entry.git if _is_shorthand(entry.git) or entry.git.startswith("git+") else f"git+{entry.git}"
            loc = parse_git_source(text, insecure=insecure)
            return SourceSpec("git", loc.url, entry.ref or loc.ref, entry.path or loc.subdir, entry.name)
        return SourceSpec("path", entry.path, name=entry.name)


def _is_shorthand(text: str) -> bool:
    return "://" not in text and not text.startswith("git+")


def _problem_list(problems: list[str], path: Path) -> LockError:
    shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
    return LockError(f"{path}: {shown}")


def _entry(name: str, value: Any, problems: list[str], registries: dict[str, str]) -> Entry | None:
    where = f"skills.{name}"
    if value is None:
        value = "latest"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        problems.append(f"{where}: write the range as a quoted string, e.g. \"{value}\"")
        return None
    if isinstance(value, str):
        try:
            parse_ref(f"{name}@{value}")
        except SkillctlError as exc:
            problems.append(f"{where}: {exc}")
            return None
        return Entry(name, "registry", value, version=value)
    if not isinstance(value, dict):
        problems.append(f"{where}: write a range (\"^1.2\") or a mapping with registry:, git: or path:")
        return None
    kinds = [k for k in ("registry", "git", "path") if k in value]
    if "git" in value:
        kinds = ["git"]  # a git entry's path: is the folder inside the repository
    if not kinds and "version" in value:
        kinds = ["registry"]
    if len(kinds) != 1 or ("registry" in value and "path" in value):
        problems.append(f"{where}: name one source: registry: (with version:), git: (with ref:, path:) or path:")
        return None
    kind = kinds[0]
    unknown = sorted(set(map(str, value)) - _ENTRY_KEYS[kind])
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(unknown)} for a {kind} entry; allowed: {', '.join(sorted(_ENTRY_KEYS[kind]))}")
        return None
    bad = [k for k, v in value.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        problems.append(f"{where}.{bad[0]}: must be a non-empty string")
        return None
    if kind == "registry":
        version = value.get("version", "latest")
        reg = value.get("registry", DEFAULT_REGISTRY)
        try:
            parse_ref(f"{name}@{version}")
        except SkillctlError as exc:
            problems.append(f"{where}.version: {exc}")
            return None
        if reg != DEFAULT_REGISTRY and reg not in registries and not _looks_like_location(reg):
            known = ", ".join(sorted(registries)) or "none"
            problems.append(f"{where}.registry: no registry named {reg!r} in registries: (named: {known}); name it there or write its URL")
            return None
        return Entry(name, "registry", dict(value), registry=reg, version=version, uri=value.get("uri", ""))
    if kind == "git":
        return Entry(name, "git", dict(value), git=value["git"], ref=value.get("ref", ""), path=value.get("path", "").strip("/"))
    return Entry(name, "path", dict(value), path=value["path"])


def _looks_like_location(text: str) -> bool:
    return "://" in text or text.startswith(("/", "./", "../", "~", "mcp+"))


def parse_project(doc: Any, path: Path) -> Project:
    """The project ``doc`` (parsed YAML) describes; ``LockError`` naming every problem."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise LockError(f"{path}: expected a mapping with 'skills: {{NAME: RANGE}}'")
    problems: list[str] = []
    unknown = sorted(set(map(str, doc)) - set(SECTIONS))
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(SECTIONS)}")
    registries: dict[str, str] = {}
    raw_regs = doc.get("registries") or {}
    if not isinstance(raw_regs, dict):
        problems.append("registries: must be a mapping of NAME: URL")
    else:
        for key, url in raw_regs.items():
            if not isinstance(key, str) or not NAME_RE.match(key):
                problems.append(f"registries: {key!r} is not a name (lowercase letters, digits and '-')")
            elif not isinstance(url, str) or not url.strip():
                problems.append(f"registries.{key}: must be a URL or a folder path")
            else:
                registries[key] = url.strip()
    entries: dict[str, Entry] = {}
    raw_skills = doc.get("skills", {})
    if raw_skills is None:
        raw_skills = {}
    if not isinstance(raw_skills, dict):
        problems.append("skills: must be a mapping of NAME: RANGE or NAME: {source}")
        raw_skills = {}
    for name, value in raw_skills.items():
        if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
            problems.append(f"'{name}' is not a skill name (lowercase letters, digits and '-')")
            continue
        entry = _entry(name, value, problems, registries)
        if entry is not None:
            entries[name] = entry
    targets = doc.get("targets") or []
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, list) or not all(isinstance(t, str) and t.strip() for t in targets):
        problems.append("targets: must be a list of agent names, e.g. [claude-code, codex]")
        targets = []
    pre = doc.get("prereleases", False)
    if not isinstance(pre, bool):
        problems.append("prereleases: must be true or false")
    environment = doc.get("environment")
    if environment is not None:
        from skillctl.env.declare import project_declarations

        try:
            project_declarations(environment, str(path))
        except SkillctlError as exc:
            problems.append(str(exc).removeprefix(f"{path}: "))
    trust = doc.get("trust")
    if "trust" in doc:
        from skillctl.trust.policy import parse_policy

        try:
            parse_policy(trust, str(path))
        except SkillctlError as exc:
            problems.append(str(exc).removeprefix(f"{path}: "))
    if problems:
        raise _problem_list(problems, path)
    return Project(path, entries, registries, tuple(t.strip() for t in targets), bool(pre), environment, trust,
                   doc.get("network"), "network" in doc)


def load_project(path: Path) -> Project:
    doc = read_yaml(path, error=LockError, missing=f"{path} not found; declare skills there, e.g. 'skills: {{tally: ^1.0}}', "
                    "or start with: skillctl add SOURCE")
    return parse_project(doc, path)


def project_file(lock: Path | None = None) -> Path:
    """A run's project file: the ``skills.yaml`` beside ``lock`` when one is given, else the one
    in the current folder (it may not exist). Its ``network:`` and ``trust:`` both apply."""
    return (Path(os.path.abspath(lock)).parent if lock else Path.cwd()) / REQUIREMENTS_FILE
