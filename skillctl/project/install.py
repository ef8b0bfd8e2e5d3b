"""Writing skills into agents' folders, and keeping those folders in step with a lock.

Every skill folder written here carries skillctl's marker (:mod:`skillctl.project.marker`), and
that marker is the only licence to touch a folder again:

- :func:`install_into` writes ``TARGET/NAME/`` (a copy, or with a link store a link to the
  store's copy, falling back to a copy where the file system refuses links); it never replaces a
  folder without the marker (one holding exactly the files being installed is adopted: the marker
  is added), and reports instead of overwriting a marked folder edited in place, unless ``force``;
- :func:`scan` lists what a target folder holds; :func:`plan_sync` compares it with what a lock
  wants (name → ``tar_digest``) and :func:`apply` carries the plan out;
- :func:`remove_installed` deletes only a folder carrying skillctl's marker (or a link skillctl
  made), edited ones only with ``force``.

Target folders are the user's: in a project (the target's ``root``), no folder on the way to a
target is followed through a symbolic link when writing or deleting — a link a cloned repository
planted at ``.claude`` or ``.claude/skills`` is refused in one line. User folders (no ``root``)
may be reached through the user's own links (dotfiles managers link ``~/.claude``). In either,
an entry of the target (``.claude/skills/NAME``) that is a link is never followed: unless it is
a link skillctl made into its link store it is left alone, and removing one removes the link.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from skillctl.bundle.extract import write_contents
from skillctl.bundle.read import BundleContents
from skillctl.errors import BundleError, InstallError
from skillctl.fsutil import fsync_dir
from skillctl.project import linkstore
from skillctl.project import marker as markers
from skillctl.project.marker import MARKER

INSTALLED = "installed"
REPLACED = "replaced"
ADOPTED = "adopted"  # an unmarked folder already holding exactly these files got the marker
UNCHANGED = "unchanged"
REMOVED = "removed"
ABSENT = "absent"
LEFT_EDITED = "left-edited"  # marked, but edited in place: reported, not touched without force
LEFT_UNMARKED = "left-unmarked"  # not skillctl's: never touched
LEFT = frozenset({LEFT_EDITED, LEFT_UNMARKED})


@dataclass(frozen=True)
class Installed:
    """One entry of a target folder. ``ours``: skillctl installed it (a valid marker naming the
    folder, or a link into a skillctl link store); ``edited``: its files no longer match the
    marker; ``problem`` says why it is not ours or what was edited."""

    name: str
    path: Path
    marker: dict[str, Any] | None
    ours: bool
    edited: bool = False
    linked: bool = False
    problem: str = ""

    @property
    def tar_digest(self) -> str:
        return self.marker["tar_digest"] if self.marker else ""


@dataclass(frozen=True)
class Outcome:
    """What happened to one skill in one target folder; ``note`` says why for the ``left-*``
    actions, and when a link fell back to a copy."""

    name: str
    path: Path
    action: str
    linked: bool = False
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.action not in LEFT


@dataclass(frozen=True)
class SyncPlan:
    """What :func:`apply` would do to ``target`` so it holds exactly ``wanted``: ``write``
    (wanted, absent), ``replace`` (ours, another digest), ``remove`` (ours, not wanted), ``keep``
    (ours, the wanted digest), ``edited`` (ours but edited in place: left unless forced) and
    ``unmarked`` (not skillctl's: always left alone, wanted or not)."""

    target: Path
    root: Path | None
    wanted: Mapping[str, str]
    write: tuple[str, ...] = ()
    replace: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    unmarked: tuple[str, ...] = ()
    problems: Mapping[str, str] = field(default_factory=dict)

    def needed(self, *, force: bool = False) -> tuple[str, ...]:
        """The skills whose files apply needs (to write or replace)."""
        forced = tuple(n for n in self.edited if force and n in self.wanted)
        return tuple(sorted(self.write + self.replace + forced))

    @property
    def nothing_to_do(self) -> bool:
        return not (self.write or self.replace or self.remove)

    @property
    def blocked(self) -> tuple[str, ...]:
        """Wanted skills this plan cannot write without help: edited (needs force) or in the way
        of a folder skillctl did not install (needs the user)."""
        return tuple(sorted(n for n in (*self.edited, *self.unmarked) if n in self.wanted))


# ------------------------------------------------------------------ paths in a target folder


def _folders(target_dir: Path, root: Path) -> list[Path]:
    """``target_dir`` and every folder between it and ``root`` (exclusive), outermost first."""
    target = Path(os.path.abspath(target_dir))
    base = Path(os.path.abspath(root))
    if target == base:
        return [target]
    if base not in target.parents:
        raise InstallError(f"{target}: not inside {base}; a project target must lie inside its project folder")
    parts = target.relative_to(base).parts
    return [base.joinpath(*parts[: i + 1]) for i in range(len(parts))]


def _link_refused(path: Path) -> InstallError:
    try:
        where = f" (to {os.readlink(path)})"
    except OSError:
        where = ""
    return InstallError(
        f"{path}: a symbolic link{where}; skillctl does not write or delete through links in an agent's folder — "
        "replace it with a real folder, or choose another target"
    )


def _trusted_target(target: Path, create: bool) -> Path | None:
    """A target whose path is the user's own (no root): links on the way are theirs."""
    if os.path.isdir(target):
        return target
    if os.path.lexists(target):
        raise InstallError(f"{target}: not a folder (or a link to nothing); skills go into a folder there — move it away")
    if not create:
        return None
    try:
        os.makedirs(target, 0o755, exist_ok=True)
    except OSError as exc:
        raise InstallError(f"{target}: cannot create the folder ({exc.strerror}); check the target") from None
    return target


def _checked_target(target_dir: Path, root: Path | None, *, create: bool) -> Path | None:
    """``target_dir`` (absolute) after checking that neither it nor a folder between it and
    ``root`` is a link or a file; missing folders are created when ``create``, else None. With no
    ``root`` the path is trusted (:func:`_trusted_target`)."""
    if root is None:
        return _trusted_target(Path(os.path.abspath(target_dir)), create)
    folders = _folders(target_dir, root)
    if create and not os.path.lexists(root):
        try:
            os.makedirs(root, 0o755, exist_ok=True)
        except OSError as exc:
            raise InstallError(f"{root}: cannot create the folder ({exc.strerror}); check the target") from None
    for path in folders:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                st = os.lstat(path)  # made by someone else meanwhile: check what it is
            except OSError as exc:
                raise InstallError(f"{path}: cannot create the folder ({exc.strerror}); check the target") from None
            else:
                continue
        except OSError as exc:
            raise InstallError(f"{path}: cannot inspect ({exc.strerror}); check the target") from None
        if stat.S_ISLNK(st.st_mode):
            raise _link_refused(path)
        if not stat.S_ISDIR(st.st_mode):
            raise InstallError(f"{path}: not a folder; skills go into a folder there — move the file away")
    return folders[-1]


# ------------------------------------------------------------------ reading what is installed


def _inspect(target: Path, name: str) -> Installed | None:
    path = target / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Installed(name, path, None, ours=False, problem=f"cannot be inspected ({exc.strerror})")
    if stat.S_ISLNK(st.st_mode):
        return _inspect_link(path, name)
    if not stat.S_ISDIR(st.st_mode):
        return Installed(name, path, None, ours=False, problem="not a folder")
    try:
        found = markers.read(path, name)
    except markers.MarkerProblem as problem:
        return Installed(name, path, None, ours=False, problem=str(problem))
    difference = markers.tree_difference(path, found, skip_marker=True)
    return Installed(name, path, found, ours=True, edited=bool(difference), problem=difference)


def _inspect_link(path: Path, name: str) -> Installed:
    resolved = linkstore.resolve_link(path, name)
    if resolved is None:
        return Installed(name, path, None, ours=False, linked=True, problem="a link skillctl did not make")
    skill, entry = resolved
    try:
        is_dir = stat.S_ISDIR(os.lstat(skill).st_mode)
    except OSError:
        is_dir = False
    if not is_dir:  # a link to an entry that is gone: ours, and nothing to lose by replacing it
        return Installed(name, path, None, ours=True, linked=True, problem="its link store entry is missing")
    try:
        found = markers.read(entry, name)
    except markers.MarkerProblem as problem:
        return Installed(name, path, None, ours=True, edited=True, linked=True, problem=f"its link store entry: {problem}")
    if entry.name != linkstore.entry_key(found["tar_digest"]):
        return Installed(name, path, found, ours=True, edited=True, linked=True, problem="its link store entry is filed under another digest")
    difference = markers.tree_difference(skill, found, skip_marker=False)
    return Installed(name, path, found, ours=True, edited=bool(difference), linked=True,
                     problem=f"{difference} (in the link store)" if difference else "")


def scan(target_dir: Path, *, root: Path | None = None) -> list[Installed]:
    """Every skill folder (or link) in ``target_dir``, by name; [] when the folder does not
    exist. Hidden entries (skillctl's temporary folders among them) are not skills."""
    target = _checked_target(target_dir, root, create=False)
    if target is None:
        return []
    try:
        with os.scandir(target) as it:
            names = sorted(e.name for e in it if not e.name.startswith("."))
    except OSError as exc:
        raise InstallError(f"{target}: cannot list the folder ({exc.strerror}); check its permissions") from None
    found = (_inspect(target, name) for name in names)
    return [entry for entry in found if entry is not None]


# ------------------------------------------------------------------ writing and removing


def _swap_in(target: Path, name: str, build: Callable[[Path], None], *, durable: bool) -> None:
    """Make ``target/name`` what ``build(staging)`` creates as ``staging/name``: built in a
    hidden folder inside ``target`` (same file system), then renamed over the old entry, which
    is removed afterwards without following links."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".skillctl-tmp", dir=target))
    except OSError as exc:
        raise InstallError(f"{target}: cannot write there ({exc.strerror}); check its permissions") from None
    final = target / name
    old = staging / ".old"
    try:
        build(staging)
        moved = False
        if os.path.lexists(final):
            os.rename(final, old)
            moved = True
        try:
            os.rename(staging / name, final)
        except OSError:
            if moved:
                os.rename(old, final)  # put the previous entry back
            raise
        if durable:
            fsync_dir(target)
    except OSError as exc:
        raise InstallError(f"{final}: cannot install the skill ({exc.strerror}); check the folder") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy_builder(contents: BundleContents, marker: Mapping[str, Any], durable: bool) -> Callable[[Path], None]:
    def build(staging: Path) -> None:
        try:
            folder = write_contents(contents, staging, durable=durable)
        except BundleError as exc:
            raise InstallError(str(exc)) from None
        markers.write(folder, markers.record_stat(dict(marker), folder))

    return build


class _NoLink(Exception):
    """The file system refused a symbolic link (FAT, some network shares, Windows without the
    privilege): the caller copies instead."""


def _link_builder(store_skill: Path, name: str) -> Callable[[Path], None]:
    def build(staging: Path) -> None:
        try:
            os.symlink(store_skill, staging / name, target_is_directory=True)
        except OSError as exc:
            raise _NoLink(exc.strerror or str(exc)) from None

    return build


def _same_provenance(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("source", "version", "revision", "tar_digest"))


def install_into(
    target_dir: Path,
    contents: BundleContents,
    marker: Mapping[str, Any],
    *,
    link_store: Path | None = None,
    force: bool = False,
    root: Path | None = None,
    durable: bool = True,
) -> Outcome:
    """Install verified ``contents`` as ``target_dir/NAME/`` with skillctl's marker, built from
    ``marker`` (the provenance: ``source`` {kind, location, subdir?}, ``version``, ``revision``,
    ``tar_digest``; see :func:`skillctl.project.marker.build`).

    With ``link_store`` the files go once into the store (checked byte for byte against
    ``contents`` first) and ``target_dir/NAME`` becomes a link to them; where the file system
    refuses the link, a copy is written instead and the outcome's ``note`` says why. A folder
    without the marker is never replaced (``left-unmarked``; adopted if it already holds exactly
    these files); a marked one edited in place is left (``left-edited``) unless ``force``.
    ``root``: the project folder below which no folder on the way may be a link (None for a
    user folder, see :class:`skillctl.project.agents.Target`).
    """
    wanted = markers.build(contents, marker)
    name = contents.name
    target = _checked_target(target_dir, root, create=True)
    assert target is not None
    current = _inspect(target, name)
    if current is not None and not current.ours:
        if not current.linked and stat.S_ISDIR(os.lstat(current.path).st_mode) \
                and not markers.tree_difference(current.path, wanted, skip_marker=True):
            markers.write(current.path, markers.record_stat(wanted, current.path))
            return Outcome(name, current.path, ADOPTED)
        return Outcome(name, current.path, LEFT_UNMARKED,
                       note=f"{current.problem}; skillctl never replaces a folder it did not install — move it away and install again")
    if current is not None and current.edited and not force:
        return Outcome(name, current.path, LEFT_EDITED, linked=current.linked,
                       note=f"edited in place ({current.problem}); install with --force to replace it")
    if current is not None and not current.edited and current.marker \
            and current.tar_digest == wanted["tar_digest"] and current.linked == (link_store is not None):
        if not current.linked and not _same_provenance(current.marker, wanted):
            markers.write(current.path, markers.record_stat(wanted, current.path))  # same files, new pin
        return Outcome(name, current.path, UNCHANGED, linked=current.linked)
    action = REPLACED if current is not None else INSTALLED
    if link_store is not None:
        store_skill = linkstore.put(link_store, contents, wanted)
        try:
            _swap_in(target, name, _link_builder(store_skill, name), durable=durable)
            return Outcome(name, target / name, action, linked=True)
        except _NoLink as exc:
            note = f"links are refused here ({exc}); copied instead"
    else:
        note = ""
    _swap_in(target, name, _copy_builder(contents, wanted, durable), durable=durable)
    return Outcome(name, target / name, action, note=note)


def _delete(target: Path, name: str, linked: bool) -> None:
    final = target / name
    doomed = target / f".{name}.{os.urandom(4).hex()}.skillctl-removing"
    try:
        os.rename(final, doomed)  # out of the agent's sight at once, then removed
        if linked:
            os.unlink(doomed)  # the link only, never what it points at
        else:
            shutil.rmtree(doomed)  # does not follow links inside
    except OSError as exc:
        raise InstallError(f"{final}: cannot remove it ({exc.strerror}); check the folder's permissions") from None


def remove_installed(target_dir: Path, name: str, *, force: bool = False, root: Path | None = None) -> Outcome:
    """Delete ``target_dir/NAME`` if skillctl installed it (``removed``); ``absent`` when there
    is nothing; a folder without the marker is left (``left-unmarked``), an edited one too
    (``left-edited``) unless ``force``."""
    target = _checked_target(target_dir, root, create=False)
    path = Path(os.path.abspath(target_dir)) / name
    if target is None:
        return Outcome(name, path, ABSENT)
    current = _inspect(target, name)
    if current is None:
        return Outcome(name, path, ABSENT)
    if not current.ours:
        return Outcome(name, path, LEFT_UNMARKED, linked=current.linked,
                       note=f"{current.problem}; skillctl only removes what it installed")
    if current.edited and not force:
        return Outcome(name, path, LEFT_EDITED, linked=current.linked,
                       note=f"edited in place ({current.problem}); remove with --force to delete it anyway")
    _delete(target, name, current.linked)
    return Outcome(name, path, REMOVED, linked=current.linked)


# ------------------------------------------------------------------ sync


def plan_sync(target_dir: Path, wanted: Mapping[str, str], *, root: Path | None = None,
              link: bool | None = None) -> SyncPlan:
    """What it takes for ``target_dir`` to hold exactly ``wanted`` (skill name → tar_digest),
    touching nothing. Cheap when nothing changed: each installed folder costs a marker read and
    one ``lstat`` per file (files are hashed only when their inode, size, mode, mtime or ctime
    moved). ``link``: when given, an install of the other kind (copy vs link) is replaced."""
    target = Path(os.path.abspath(target_dir))
    installed = {entry.name: entry for entry in scan(target, root=root)}
    write, replace, remove, keep, edited, unmarked = [], [], [], [], [], []
    problems = {}
    for name in sorted(set(wanted) | set(installed)):
        entry = installed.get(name)
        if entry is None:
            write.append(name)
            continue
        if entry.problem:
            problems[name] = entry.problem
        if not entry.ours:
            unmarked.append(name)
        elif entry.edited:
            edited.append(name)
        elif name not in wanted:
            remove.append(name)
        elif entry.tar_digest == wanted[name] and (link is None or entry.linked == link):
            keep.append(name)
        else:
            replace.append(name)
    return SyncPlan(target, root, dict(wanted), tuple(write), tuple(replace), tuple(remove), tuple(keep),
                    tuple(edited), tuple(unmarked), problems)


def apply(
    plan: SyncPlan,
    skills: Mapping[str, tuple[BundleContents, Mapping[str, Any]]],
    *,
    link_store: Path | None = None,
    force: bool = False,
    durable: bool = True,
) -> list[Outcome]:
    """Carry ``plan`` out. ``skills`` maps each name of ``plan.needed(force=force)`` to its
    verified contents and provenance (all are required before anything is written). Removals
    first, then writes; edited and unmarked entries are reported as left. Each entry is looked
    at again as it is touched, so a change since the plan is respected, never overwritten."""
    needed = plan.needed(force=force)
    missing = [n for n in needed if n not in skills]
    if missing:
        raise InstallError(f"{plan.target}: no files were handed over for {', '.join(missing)}; fetch them first")
    outcomes = []
    doomed = list(plan.remove) + [n for n in plan.edited if force and n not in plan.wanted]
    for name in doomed:
        outcomes.append(remove_installed(plan.target, name, force=force, root=plan.root))
    for name in needed:
        contents, provenance = skills[name]
        outcomes.append(install_into(plan.target, contents, provenance, link_store=link_store, force=force,
                                     root=plan.root, durable=durable))
    for name in plan.edited:
        if not force:
            outcomes.append(Outcome(name, plan.target / name, LEFT_EDITED,
                                    note=f"edited in place ({plan.problems.get(name, '')}); sync with --force to replace it"))
    for name in plan.unmarked:
        outcomes.append(Outcome(name, plan.target / name, LEFT_UNMARKED,
                                note=f"{plan.problems.get(name, 'not installed by skillctl')}; left alone"))
    for name in plan.keep:
        outcomes.append(Outcome(name, plan.target / name, UNCHANGED))
    return outcomes

