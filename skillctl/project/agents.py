"""The agents that read skills from disk, and the folders each of them reads.

The table is data, shipped as ``agents.json`` beside this module (validated against
``agents.schema.json`` by the tests): per agent its project folder (relative to the project
root), its user folder (in the home folder, moved by the environment variables the agent
honours, such as ``CLAUDE_CONFIG_DIR`` or ``XDG_CONFIG_HOME``), how to tell it is installed
here, and the documentation the entry was checked against.

Several agents read the same folder (``.agents/skills`` in a project is read by Codex, Cursor,
Gemini CLI, Copilot, Amp…): :func:`target_folders` gives each folder once, with every agent it
serves, so a skill is written there once.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from skillctl.errors import ConfigError

# What install writes when no agent is named: the folder most agents read in a project, and its
# counterpart in the home folder (read by Codex, Cursor, Gemini CLI, Copilot, OpenCode, Pi…).
DEFAULT_TARGET = ".agents/skills"
DEFAULT_USER_TARGET = "~/.agents/skills"

TABLE_FILE = "agents.json"
SCHEMA_FILE = "agents.schema.json"


@dataclass(frozen=True)
class EnvOverride:
    """``$var/path`` when ``var`` is set (``path`` "" is the variable's folder itself)."""

    var: str
    path: str = ""


@dataclass(frozen=True)
class Location:
    """A folder on this machine: the first of ``env`` that is set, else ``default`` (``~/…`` is
    the home folder, ``$HOME``)."""

    default: str
    env: tuple[EnvOverride, ...] = ()

    def resolve(self, environ: Mapping[str, str]) -> Path:
        """The folder, for the environment ``environ``. An override set to a relative path is a
        ConfigError, except for ``XDG_*`` variables, which the XDG spec says to ignore then."""
        for override in self.env:
            value = environ.get(override.var, "")
            if not value:
                continue
            if not os.path.isabs(value):
                if override.var.startswith("XDG_"):
                    continue
                raise ConfigError(
                    f"{override.var}={value!r} is not an absolute path; set it to an absolute folder or unset it"
                )
            return Path(os.path.normpath(os.path.join(value, override.path) if override.path else value))
        if self.default.startswith("~/"):
            return home_folder(environ) / self.default[2:]
        return Path(self.default)

    def variables(self) -> tuple[str, ...]:
        return tuple(o.var for o in self.env)


@dataclass(frozen=True)
class Agent:
    """One row of the table. ``checked`` is ``agent-docs`` when the folders were checked against
    the agent's own documentation (``docs``), ``vercel-labs/skills`` when they come from that
    project's table only."""

    name: str
    display: str
    project: str
    user: Location
    detect_paths: tuple[Location, ...]
    detect_commands: tuple[str, ...]
    docs: str
    checked: str
    comment: str = ""
    aliases: tuple[str, ...] = ()

    def project_folder(self, project_root: Path) -> Path:
        return Path(os.path.abspath(project_root)) / self.project

    def user_folder(self, environ: Mapping[str, str]) -> Path:
        return self.user.resolve(environ)

    def detected(self, environ: Mapping[str, str]) -> bool:
        """True when one of the agent's folders exists or one of its commands is on ``PATH``."""
        for location in self.detect_paths:
            try:
                path = location.resolve(environ)
            except ConfigError:  # no usable HOME or a bad override: this clue says nothing
                continue
            if os.path.exists(path):
                return True
        search = environ.get("PATH", "")
        return any(shutil.which(command, path=search) for command in self.detect_commands)


@dataclass(frozen=True)
class Target:
    """A folder skills are written into, with the agents (table names) that read it; ``agents``
    is empty for the default target, which no agent was named for. ``root``: for a project
    target, the project folder, below which no folder on the way to ``path`` may be a link (a
    cloned repository could plant one); None for a user folder, whose path is the user's own and
    may go through links (a dotfiles manager's ``~/.claude``). Either way the entries inside
    ``path`` are never followed."""

    path: Path
    agents: tuple[str, ...] = ()
    root: Path | None = None


def home_folder(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        raise ConfigError("HOME is not set to an absolute folder; set HOME, or install into the project (without --user)")
    return Path(os.path.normpath(home))


def _location(raw: Any) -> Location:
    if isinstance(raw, str):
        return Location(default=raw)
    env = tuple(EnvOverride(var=e["var"], path=e.get("path", "")) for e in raw.get("env", ()))
    return Location(default=raw["default"], env=env)


def _agent(raw: Mapping[str, Any]) -> Agent:
    detect = raw.get("detect", {})
    return Agent(
        name=raw["name"],
        display=raw["display"],
        project=raw["project"],
        user=_location(raw["user"]),
        detect_paths=tuple(_location(p) for p in detect.get("paths", ())),
        detect_commands=tuple(detect.get("commands", ())),
        docs=raw["docs"],
        checked=raw["checked"],
        comment=raw.get("comment", ""),
        aliases=tuple(raw.get("aliases", ())),
    )


def read_table() -> dict[str, Any]:
    """The shipped table, as JSON data (the tests validate it against the schema)."""
    return json.loads(resources.files(__package__).joinpath(TABLE_FILE).read_text("utf-8"))


@lru_cache(maxsize=1)
def _agents() -> dict[str, Agent]:
    try:
        rows = read_table()["agents"]
        return {row["name"]: _agent(row) for row in rows}
    except (KeyError, TypeError, ValueError) as exc:  # a broken installation, not bad input
        raise ConfigError(f"the agents table {TABLE_FILE} shipped with skillctl is damaged ({exc}); reinstall skillctl") from None


def load_agents() -> dict[str, Agent]:
    """Every agent of the table by name, in the table's (alphabetical) order."""
    return dict(_agents())


@lru_cache(maxsize=1)
def _by_alias() -> dict[str, str]:
    return {alias: agent.name for agent in _agents().values() for alias in (agent.name, *agent.aliases)}


def find_agent(name: str) -> Agent:
    """The agent called ``name`` or one of its aliases; ConfigError listing the valid names."""
    return _resolve([name])[0]


def _resolve(names: Iterable[str]) -> list[Agent]:
    agents, aliases = _agents(), _by_alias()
    found, unknown = [], []
    for name in names:
        key = aliases.get(name.strip().lower())
        if key is None:
            unknown.append(name)
        else:
            found.append(agents[key])
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        raise ConfigError(
            f"unknown agent{'s' if len(unknown) > 1 else ''} {listed}; valid agents: {', '.join(agents)} "
            "(skillctl agents lists them with their folders)"
        )
    return found


def target_folders(
    names: Iterable[str], *, user: bool, project_root: Path, environ: Mapping[str, str]
) -> list[Target]:
    """The folders to write for the agents ``names`` (table names or aliases), in the order
    first named; a folder read by several of them appears once, listing them all. No names: the
    default folder (``DEFAULT_TARGET`` in the project, ``DEFAULT_USER_TARGET`` with ``user``).
    Unknown names: one ConfigError naming every one of them and the valid names."""
    agents = _resolve(list(names))
    project_root = Path(os.path.abspath(project_root))
    if not agents:
        if user:
            return [Target(home_folder(environ) / DEFAULT_USER_TARGET[2:], (), None)]
        return [Target(project_root / DEFAULT_TARGET, (), project_root)]
    order: list[Path] = []
    served: dict[Path, list[str]] = {}
    roots: dict[Path, Path | None] = {}
    for agent in agents:
        if user:
            path, root = agent.user_folder(environ), None
        else:
            path, root = agent.project_folder(project_root), project_root
        if path not in served:
            order.append(path)
            served[path] = []
            roots[path] = root
        if agent.name not in served[path]:
            served[path].append(agent.name)
    return [Target(path, tuple(served[path]), roots[path]) for path in order]


def detect(environ: Mapping[str, str]) -> dict[str, bool]:
    """Per agent (table order): whether it looks installed here — one of its folders exists,
    or one of its commands is on ``environ['PATH']``."""
    return {name: agent.detected(environ) for name, agent in _agents().items()}


def describe(environ: Mapping[str, str], project_root: Path) -> list[dict[str, Any]]:
    """The table as plain rows for people and ``--format json``: each agent's folders resolved
    for this machine, the agents it shares its project folder with, and whether it is detected.
    A user folder that cannot be resolved (no HOME, a relative override) carries the reason in
    ``user_error`` instead of failing the whole listing."""
    agents = _agents()
    sharing: dict[str, list[str]] = {}
    for agent in agents.values():
        sharing.setdefault(agent.project, []).append(agent.name)
    rows = []
    for agent in agents.values():
        try:
            user_folder, user_error = str(agent.user_folder(environ)), ""
        except ConfigError as exc:
            user_folder, user_error = "", str(exc)
        rows.append({
            "name": agent.name,
            "display": agent.display,
            "aliases": list(agent.aliases),
            "project": agent.project,
            "project_folder": str(agent.project_folder(project_root)),
            "shares_project_folder_with": [n for n in sharing[agent.project] if n != agent.name],
            "user_folder": user_folder,
            "user_env": list(agent.user.variables()),
            "user_error": user_error,
            "detected": agent.detected(environ),
            "docs": agent.docs,
            "checked": agent.checked,
            "comment": agent.comment,
        })
    return rows
