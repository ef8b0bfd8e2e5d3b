"""Making the folders agents read hold what the lock says: ``install`` and ``sync``.

Every locked skill is fetched and checked (digests against the lock, then as a hostile archive)
before the first folder is written, so one bad skill changes nothing anywhere. Each target folder
(``skillctl.project.agents``: the agents' folders a project names, ``.agents/skills`` by default)
then gets every locked skill it does not hold yet, or holds in another version, as a folder with
skillctl's marker (``skillctl.project.install``). ``sync`` also removes the marked folders of
skills the lock no longer names — never a folder without the marker, which is someone else's; a
folder edited in place is reported and left alone unless ``force``. ``dry_run`` reports the same
and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillctl.bundle import BundleContents, read_artifact
from skillctl.project.lock import Lock, LockedSkill
from skillctl.project.store import ProjectStore

Progress = Callable[[str], None]


@dataclass
class SyncReport:
    written: list[str] = field(default_factory=list)  # "FOLDER/NAME (label)"
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)  # marked folders changed in place: left alone
    foreign: list[str] = field(default_factory=list)  # folders without skillctl's marker: never touched
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "written": self.written, "removed": self.removed, "unchanged": self.unchanged,
                "edited": self.edited, "foreign": self.foreign}

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        gone = "would remove" if self.dry_run else "removed"
        parts = [f"{verb} {len(self.written)}", f"{gone} {len(self.removed)}", f"{len(self.unchanged)} unchanged"]
        if self.edited:
            parts.append(f"{len(self.edited)} edited in place (left alone; --force replaces them)")
        if self.foreign:
            parts.append(f"{len(self.foreign)} not installed by skillctl (left alone)")
        return ", ".join(parts)


def marker_for(skill: LockedSkill) -> dict[str, Any]:
    """What the folder's marker records of the installed skill (the install module adds the
    files' own state)."""
    return {"name": skill.name, "source": dict(skill.source), "version": skill.version, "revision": skill.revision,
            "digest": skill.digest, "tar_digest": skill.tar_digest}


def fetch_checked(lock: Lock, store: ProjectStore, names: Sequence[str]) -> dict[str, BundleContents]:
    """The checked contents of the locked skills ``names``: digests against the lock, then every
    member as a hostile archive."""
    by_name = lock.by_name()
    out = {}
    for name in sorted(names):
        skill = by_name[name]
        resolved = store.resolved(skill)
        data = store.fetch(resolved)
        out[name] = read_artifact(data, resolved.artifact_type, expected_name=name, source=skill.label())
    return out


def sync_targets(lock: Lock, store: ProjectStore, targets: Sequence[Path], *, remove: bool, force: bool = False,
                 link_store: Path | None = None, dry_run: bool = False, progress: Progress | None = None) -> SyncReport:
    from skillctl.project.install import install_into, plan_sync, remove_installed

    by_name = lock.by_name()
    wanted = {s.name: s.tar_digest for s in lock.skills}
    report = SyncReport(dry_run=dry_run)
    plans = [(target, plan_sync(target, wanted)) for target in targets]
    needed = sorted({name for _, plan in plans for name in (*plan.write, *plan.replace)}
                    | ({name for _, plan in plans for name in plan.edited} if force else set()))
    contents = fetch_checked(lock, store, needed) if needed and not dry_run else {}
    for target, plan in plans:
        for name in plan.keep:
            report.unchanged.append(f"{target}/{name}")
        for name in plan.unmarked:
            report.foreign.append(f"{target}/{name}")
        edited = list(plan.edited)
        to_write = [*plan.write, *plan.replace, *(edited if force else [])]
        if not force:
            report.edited.extend(f"{target}/{name}" for name in edited)
        for name in sorted(to_write):
            report.written.append(f"{target}/{name} ({by_name[name].label()})")
            if not dry_run:
                install_into(target, contents[name], marker_for(by_name[name]), link_store=link_store, force=force)
                if progress:
                    progress(f"installed {by_name[name].label()} -> {target}/{name}")
        if remove:
            for name in sorted(plan.remove):
                report.removed.append(f"{target}/{name}")
                if not dry_run:
                    remove_installed(target, name, force=force)
                    if progress:
                        progress(f"removed {target}/{name} (no longer in the lock)")
    return report


def remove_from_targets(targets: Sequence[Path], names: Sequence[str], *, force: bool = False,
                        progress: Progress | None = None) -> SyncReport:
    """Delete the folders of ``names`` that skillctl installed in ``targets``; others stay."""
    from skillctl.project.install import scan, remove_installed

    report = SyncReport()
    wanted = set(names)
    for target in targets:
        for installed in scan(target):
            if installed.name not in wanted:
                continue
            where = f"{target}/{installed.name}"
            if installed.marker is None:
                report.foreign.append(where)
            elif installed.edited and not force:
                report.edited.append(where)
            else:
                remove_installed(target, installed.name, force=force)
                report.removed.append(where)
                if progress:
                    progress(f"removed {where}")
    return report
