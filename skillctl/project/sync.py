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

from skillctl.bundle import DEFAULT_MTIME, BundleContents, read_artifact, repack
from skillctl.project.agents import Target
from skillctl.project.lock import Lock, LockedSkill
from skillctl.project.store import ProjectStore

Progress = Callable[[str], None]


@dataclass
class SyncReport:
    """What install/sync did (or, with ``dry_run``, would do): per folder touched or looked at, a
    ``{"name", "path", "version"}`` entry (``version``: the lock's label, e.g. ``1.1.0`` or a commit)."""

    written: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    unchanged: list[dict[str, str]] = field(default_factory=list)
    edited: list[dict[str, str]] = field(default_factory=list)  # marked folders changed in place: left alone
    foreign: list[dict[str, str]] = field(default_factory=list)  # folders without skillctl's marker: never touched
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "written": self.written, "removed": self.removed, "unchanged": self.unchanged,
                "edited": self.edited, "foreign": self.foreign}

    def per_skill(self) -> list[dict[str, str]]:
        """One entry per locked skill and folder, with what happened to it (``action``)."""
        out = []
        for action, items in (("installed", self.written), ("unchanged", self.unchanged), ("left-edited", self.edited),
                              ("left-unmarked", self.foreign)):
            out += [{**item, "action": action} for item in items]
        return sorted(out, key=lambda item: (item["path"], item["name"]))

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        gone = "would remove" if self.dry_run else "removed"
        parts = [f"{verb} {len(self.written)}", f"{gone} {len(self.removed)}", f"{len(self.unchanged)} unchanged"]
        if self.edited:
            parts.append(f"{len(self.edited)} edited in place (left alone; --force replaces them)")
        if self.foreign:
            parts.append(f"{len(self.foreign)} not installed by skillctl (left alone)")
        return ", ".join(parts)


def _item(target: Path, name: str, skill: LockedSkill | None) -> dict[str, str]:
    return {"name": name, "path": str(target / name), "version": skill.label().partition("@")[2] if skill else ""}


def marker_for(skill: LockedSkill, tar_digest: str) -> dict[str, Any]:
    """What the folder's marker records of the installed skill (the install module adds the
    files' own state)."""
    return {"name": skill.name, "source": dict(skill.source), "version": skill.version, "revision": skill.revision,
            "digest": skill.digest, "tar_digest": tar_digest}


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


def sync_targets(lock: Lock, store: ProjectStore, targets: Sequence[Target], *, remove: bool, force: bool = False,
                 link_store: Path | None = None, dry_run: bool = False, progress: Progress | None = None) -> SyncReport:
    from skillctl.project.install import LEFT_UNMARKED, install_into, plan_sync, remove_installed

    by_name = lock.by_name()
    # A site's artifact has no tar digest in the lock: the one its reader gives its files (an
    # archive's), else that of the canonical tar of its files (a lone SKILL.md), stands for it.
    early = fetch_checked(lock, store, [s.name for s in lock.skills if not s.tar_digest])
    wanted = {s.name: s.tar_digest or early[s.name].tar_digest or repack(early[s.name], mtime=DEFAULT_MTIME).tar_digest
              for s in lock.skills}
    report = SyncReport(dry_run=dry_run)
    plans = [(t, plan_sync(t.path, wanted, root=t.root, link=link_store is not None)) for t in targets]
    # A folder of a wanted skill without skillctl's marker is offered to install_into, which marks
    # it when it holds exactly the locked files (what an older skillctl wrote) and leaves it
    # alone otherwise; unmarked folders of other skills are someone else's and not reported.
    to_write = [(t, plan, sorted({*plan.write, *plan.replace, *(n for n in plan.unmarked if n in wanted),
                                  *(n for n in plan.edited if force and n in wanted)})) for t, plan in plans]
    needed = sorted({name for _, _, names in to_write for name in names} - set(early))
    contents = {**early, **(fetch_checked(lock, store, needed) if needed and not dry_run else {})}
    for target, plan, names in to_write:
        where = target.path
        report.unchanged.extend(_item(where, name, by_name.get(name)) for name in plan.keep)
        if not force:
            report.edited.extend(_item(where, name, by_name.get(name)) for name in plan.edited)
        for name in names:
            label = _item(where, name, by_name[name])
            if dry_run:
                (report.foreign if name in plan.unmarked else report.written).append(label)
                continue
            outcome = install_into(where, contents[name], marker_for(by_name[name], wanted[name]), link_store=link_store, force=force,
                                   root=target.root)
            if outcome.action == LEFT_UNMARKED:
                report.foreign.append(label)
                continue
            report.written.append(label)
            if progress:
                note = f" ({outcome.note})" if outcome.note else ""
                progress(f"{outcome.action} {by_name[name].label()} -> {where}/{name}{note}")
        if remove:
            for name in sorted({*plan.remove, *(n for n in plan.edited if force and n not in wanted)}):
                report.removed.append(_item(where, name, None))
                if not dry_run:
                    remove_installed(where, name, force=force, root=target.root)
                    if progress:
                        progress(f"removed {where}/{name} (no longer in the lock)")
    return report


def remove_from_targets(targets: Sequence[Target], names: Sequence[str], *, force: bool = False,
                        progress: Progress | None = None) -> SyncReport:
    """Delete the folders of ``names`` that skillctl installed in ``targets``; others stay."""
    from skillctl.project.install import remove_installed, scan

    report = SyncReport()
    wanted = set(names)
    for target in targets:
        for installed in scan(target.path, root=target.root):
            if installed.name not in wanted:
                continue
            item = _item(target.path, installed.name, None)
            if not installed.ours:
                report.foreign.append(item)
            elif installed.edited and not force:
                report.edited.append(item)
            else:
                remove_installed(target.path, installed.name, force=force, root=target.root)
                report.removed.append(item)
                if progress:
                    progress(f"removed {item['path']}")
    return report
