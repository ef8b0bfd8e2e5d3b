"""``skillctl outdated``: per locked skill, what is installed, what its entry would take now, and
the newest there is — as ``npm outdated`` and ``cargo outdated`` report them.

- ``current``: the lock's pin;
- ``wanted``: what ``update NAME`` would lock — the newest version inside the range (registry),
  the commit the ref names now (git; for a branch, its head), the folder's files now;
- ``latest``: the newest regardless of the entry — the registry's latest release, the git
  remote's default branch head; for a folder the same as wanted.

A skill is outdated when wanted or latest differ from current. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skillctl.errors import SkillctlError
from skillctl.project.lock import Lock
from skillctl.project.resolve import version_label
from skillctl.project.sources import ProjectSources, describe_source, source_record
from skillctl.project.spec import Project


@dataclass(frozen=True)
class Row:
    name: str
    source: str
    current: str
    wanted: str
    latest: str
    problem: str = ""  # a source that could not be asked, in one line

    @property
    def outdated(self) -> bool:
        return not self.problem and (self.wanted != self.current or self.latest != self.current)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "current": self.current, "wanted": self.wanted,
                "latest": self.latest, "outdated": self.outdated, **({"problem": self.problem} if self.problem else {})}


def outdated(project: Project, lock: Lock, sources: ProjectSources, *, registry_override: str | None = None,
             insecure: bool = False) -> list[Row]:
    rows = []
    locked = lock.by_name()
    for name in sorted(project.entries):
        entry = project.entries[name]
        spec = project.source_spec(entry, registry_override=registry_override, insecure=insecure)
        where = describe_source(source_record(entry, spec))
        current_skill = locked.get(name)
        current = (version_label(current_skill.kind, current_skill.version, current_skill.revision, current_skill.tar_digest)
                   if current_skill is not None else "-")
        try:
            source = sources.get(spec.kind)
            wanted_pin = source.resolve(spec, prereleases=project.prereleases)
            newest_pin = source.newest(spec) or wanted_pin
        except SkillctlError as exc:
            rows.append(Row(name, where, current, "?", "?", str(exc)))
            continue
        rows.append(Row(name, where, current, version_label(spec.kind, wanted_pin.version, wanted_pin.revision, wanted_pin.tar_digest),
                        version_label(spec.kind, newest_pin.version, newest_pin.revision, newest_pin.tar_digest)))
    return rows
