"""A git tree read as a bundle would be: from its listing, before any file's bytes are read.

``git ls-tree -r -z`` gives every entry's mode, type, object id and path without reading a blob.
From that listing alone this module finds the skill folders (the shared skill search's rules:
``skillctl.skill.discovery`` — folders holding a ``SKILL.md``, the same skipped folders, depth and
folder budget, a skill folder not searched further) and chooses each skill's files the way
``pack`` chooses them from a folder (``skillctl.bundle.collect``: built-in junk and ``.skillignore``
left out). What a bundle cannot hold is refused, naming the member:

- symbolic links (mode 120000), inside the skill or pointing out of it — a bundle never holds
  links, and ``pack`` refuses them in a folder too; one that is junk or ignored is left out;
- any entry that is not a regular file (mode 100644/100755) or a submodule;
- submodules (mode 160000, a commit of another repository): left out with a note, never fetched
  (a checkout without ``--recurse-submodules`` has an empty folder there, and ``pack`` packs no
  empty folder);
- paths, counts and sizes over ``BundleLimits`` (``MemberTally``: ``..``, control characters, depth,
  length, case collisions, file and folder counts), counts before any blob is fetched and sizes
  (``git cat-file --batch-check``, which reads an object's header, never its data) before any
  blob is read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import SKILL_FILE, MemberTally, Refused
from skillctl.skill.discovery import SKIPPED_FOLDERS, SearchLimits
from skillctl.skill.ignore import IGNORE_FILE, IgnoreRules, is_junk

FILE_MODES = {"100644": False, "100755": True}  # mode -> executable
LINK_MODE = "120000"
GITLINK_MODE = "160000"
_PLACEHOLDER = "skill"  # the top folder while the skill's own name is not read yet
RULE_LINK = "no links"
RULE_KIND = "regular files and folders only"


@dataclass(frozen=True)
class Entry:
    """One ``ls-tree -r`` line: ``path`` relative to the listed tree (UTF-8, undecodable bytes kept
    as surrogates so the path rules refuse them)."""

    mode: str
    kind: str
    oid: str
    path: str


def parse_listing(data: bytes) -> list[Entry]:
    """``git ls-tree -r -z`` output as entries."""
    entries = []
    for record in data.split(b"\0"):
        if not record:
            continue
        head, _, raw_path = record.partition(b"\t")
        mode, kind, oid = head.decode("ascii").split(" ")
        entries.append(Entry(mode, kind, oid, raw_path.decode("utf-8", "surrogateescape")))
    return entries


@dataclass
class Search:
    folders: list[str]
    notes: list[str] = field(default_factory=list)


def _children(entries: Iterable[Entry]) -> dict[str, dict[str, bool]]:
    """folder → {name: is a folder}, "" being the listed tree."""
    tree: dict[str, dict[str, bool]] = {"": {}}
    for entry in entries:
        parts = entry.path.split("/")
        for i, name in enumerate(parts):
            parent = "/".join(parts[:i])
            is_dir = i < len(parts) - 1
            tree.setdefault(parent, {})
            if is_dir or name not in tree[parent]:
                tree[parent][name] = is_dir
    return tree


def _holds_skill(names: Iterable[str]) -> bool:
    return any(n.lower() == "skill.md" for n in names)


def find_skill_folders(entries: list[Entry], limits: SearchLimits = SearchLimits()) -> Search:
    """The skill folders in the listing, as ``skillctl.skill.discovery.discover`` finds them in a
    folder: breadth first, sorted by path components, with its skipped folders, depth and folder
    budget (each bound reached is said in a note)."""
    tree = _children(entries)
    if _holds_skill(tree[""]):
        return Search([""])
    found: list[str] = []
    notes: list[str] = []
    queue: deque[tuple[str, int]] = deque([("", 0)])
    visited = 0
    too_deep: list[str] = []
    while queue:
        current, level = queue.popleft()
        stopped = False
        for name in sorted(tree.get(current, {})):
            if not tree[current][name]:
                continue
            rel = f"{current}/{name}" if current else name
            names = tree.get(rel, {})
            if name in SKIPPED_FOLDERS or "pyvenv.cfg" in names:
                continue
            if visited >= limits.folders:
                stopped = True
                break
            visited += 1
            if _holds_skill(names):
                found.append(rel)
            elif level + 1 < limits.depth:
                queue.append((rel, level + 1))
            elif any(is_dir and n not in SKIPPED_FOLDERS for n, is_dir in names.items()):
                too_deep.append(rel)
        if stopped:
            notes.append(f"searched {limits.folders} folders and stopped; name the skill's folder to find skills further in")
            break
    if too_deep:
        notes.append(f"did not search below {limits.depth} folder levels (e.g. {too_deep[0]}); name a deeper folder to find skills there")
    return Search(sorted(found, key=lambda f: f.split("/")), notes)


def group_by_folder(entries: list[Entry], folders: list[str]) -> dict[str, list[Entry]]:
    """Each skill folder's entries, paths made relative to it (skill folders never nest: the
    search does not enter a skill folder)."""
    wanted = set(folders)
    out: dict[str, list[Entry]] = {f: [] for f in folders}
    for entry in entries:
        if "" in wanted:
            out[""].append(entry)
            continue
        parts = entry.path.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in wanted:
                out[folder].append(Entry(entry.mode, entry.kind, entry.oid, "/".join(parts[i:])))
                break
    return out


def ignore_entry(entries: list[Entry]) -> Entry | None:
    """The skill's ``.skillignore``, when it is a regular file (a link is refused with the rest)."""
    return next((e for e in entries if e.path == IGNORE_FILE and e.mode in FILE_MODES), None)


@dataclass
class Chosen:
    files: list[Entry]
    notes: list[str]


def choose_files(entries: list[Entry], ignore: IgnoreRules) -> Chosen:
    """The entries ``pack`` would take from a checkout of this folder (junk and ignored ones left
    out, submodules skipped with a note); Refused for a link or another kind of entry."""
    excluded_dirs: dict[str, bool] = {}

    def dir_excluded(rel_dir: str) -> bool:
        known = excluded_dirs.get(rel_dir)
        if known is None:
            parent, _, name = rel_dir.rpartition("/")
            known = (bool(parent) and dir_excluded(parent)) or is_junk(name, True) or ignore.ignored(rel_dir, is_dir=True)
            excluded_dirs[rel_dir] = known
        return known

    files: list[Entry] = []
    notes: list[str] = []
    for entry in entries:
        parent, _, name = entry.path.rpartition("/")
        if parent and dir_excluded(parent):
            continue
        junk = is_junk(name, False)
        if entry.mode in FILE_MODES:
            if not (junk or ignore.ignored(entry.path)):
                files.append(entry)
        elif entry.mode == GITLINK_MODE:
            if not dir_excluded(entry.path):
                notes.append(f"submodule {entry.path!r} left out: submodules are never fetched")
        elif not (junk or (entry.path != IGNORE_FILE and ignore.ignored(entry.path))):
            # As pack treats a link or special file in a folder: an error unless left out.
            if entry.mode == LINK_MODE:
                raise Refused(entry.path, "a symbolic link; a bundle holds no links, so replace it with a copy of its target", RULE_LINK)
            raise Refused(entry.path, f"an entry of mode {entry.mode}, not a regular file", RULE_KIND)
    return Chosen(files, notes)


def tally(name: str, files: Iterable[tuple[str, int]], limits: BundleLimits) -> None:
    """The bundle member rules on (path in the skill, size) pairs; Refused naming the first
    broken, by its path in the skill. Sizes may be 0 to check names and counts before any size
    is known."""
    members = MemberTally(limits, expected_name=name)
    try:
        members.add_dir(name)
        for rel, size in files:
            members.add_file(f"{name}/{rel}", size)
        members.finish()
    except Refused as refused:
        raise in_skill(refused, name) from None


def in_skill(refused: Refused, name: str) -> Refused:
    """``refused`` with its member named by its path in the skill (the top folder ``name`` is
    the bundle's, not the repository's); None for the skill as a whole."""
    prefix = f"{name}/"
    member = refused.member
    if member is not None:
        member = member[len(prefix):] if member.startswith(prefix) else (None if member == name else member)
    return Refused(member, refused.what.replace(prefix, ""), refused.rule)


def precheck(folder_name: str | None, files: list[Entry], limits: BundleLimits) -> None:
    """Names and counts, before anything is fetched; ``folder_name`` None for a skill at the top
    of the repository (its name is read from its SKILL.md later)."""
    tally(folder_name or _PLACEHOLDER, ((e.path, 0) for e in files), limits)


def check_sizes(folder_name: str | None, files: list[Entry], sizes: dict[str, int], limits: BundleLimits) -> None:
    """Sizes as git's object headers give them, before any blob is read."""
    tally(folder_name or _PLACEHOLDER, ((e.path, sizes[e.oid]) for e in files), limits)


def has_skill_file(files: list[Entry]) -> bool:
    return any(e.path == SKILL_FILE for e in files)
