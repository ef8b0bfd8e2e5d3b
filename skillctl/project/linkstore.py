"""The link store behind ``--link``: each skill version once on disk, target folders link to it.

Layout (``STORE/`` is :func:`default_link_store` unless given)::

    STORE/.skillctl-store                     says "this folder is a skillctl link store"
    STORE/sha256-<hex>/NAME/                  the skill's files, exactly (no marker inside)
    STORE/sha256-<hex>/.skillctl-install.json the marker of that entry (name, source, files…)

An entry is keyed by the ``tar_digest`` its skill was pinned to. Before a link to an entry is
made, the entry is compared byte for byte with the verified contents being installed and
rewritten if it differs: a store entry someone changed is repaired, never linked to. A link in a
target folder counts as skillctl's only when it points exactly at ``STORE/sha256-<hex>/NAME``
of a folder holding ``.skillctl-store``, NAME being the link's own name; removing it removes the
link, never what it points at. Entries are shared between projects and are not pruned.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Mapping

from skillctl.bundle.extract import write_contents
from skillctl.bundle.read import BundleContents
from skillctl.errors import BundleError, InstallError
from skillctl.project import marker as markers

STORE_MARKER = ".skillctl-store"
_KEY_PREFIX = "sha256-"


def default_link_store() -> Path:
    """Where ``--link`` keeps skills unless told otherwise: the user data folder's ``store``."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("skillctl")) / "store"


def entry_key(tar_digest: str) -> str:
    return _KEY_PREFIX + tar_digest.removeprefix("sha256:")


def _is_key(name: str) -> bool:
    hexpart = name.removeprefix(_KEY_PREFIX)
    return name.startswith(_KEY_PREFIX) and len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def prepare(store: Path) -> Path:
    """The store folder, created with its ``.skillctl-store`` file if new (absolute path)."""
    store = Path(os.path.abspath(store))
    try:
        store.mkdir(parents=True, exist_ok=True)
        if not store.is_dir():
            raise InstallError(f"{store}: the link store is not a folder; choose another with --link-store")
        mark = store / STORE_MARKER
        if not os.path.lexists(mark):
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                os.write(fd, b'{"format": 1, "tool": "skillctl"}\n')
            finally:
                os.close(fd)
        elif not stat.S_ISREG(os.lstat(mark).st_mode):
            raise InstallError(f"{mark}: not a regular file; this folder is not a skillctl link store")
    except FileExistsError:
        pass  # another install created it at the same moment
    except OSError as exc:
        raise InstallError(f"{store}: cannot use it as the link store ({exc.strerror}); choose another") from None
    return store


def put(store: Path, contents: BundleContents, marker: Mapping[str, Any]) -> Path:
    """The store's folder for ``contents`` (pinned as ``marker['tar_digest']``), written or
    repaired so that it holds exactly those bytes; returns ``STORE/sha256-<hex>/NAME``."""
    store = prepare(store)
    entry = store / entry_key(marker["tar_digest"])
    if os.path.lexists(entry) and not _real_dir(entry):
        raise InstallError(f"{entry}: a store entry that is not a folder (a link?); remove it and install again")
    try:
        entry.mkdir(exist_ok=True)
        skill = write_contents(contents, entry, overwrite=True)
    except BundleError as exc:
        raise InstallError(str(exc)) from None
    except OSError as exc:
        raise InstallError(f"{entry}: cannot write the store entry ({exc.strerror}); check the link store") from None
    try:
        current = markers.read(entry, contents.name)
        if current["tar_digest"] != marker["tar_digest"] or markers.tree_difference(skill, current, skip_marker=False):
            raise markers.MarkerProblem("stale")
    except markers.MarkerProblem:
        markers.write(entry, markers.record_stat(dict(marker), skill))
    return skill


def resolve_link(link: Path, name: str) -> tuple[Path, Path] | None:
    """``(STORE/sha256-<hex>/NAME, STORE/sha256-<hex>)`` when the link ``link`` is one skillctl
    makes for the skill ``name``; None for any other link (left alone as not skillctl's)."""
    try:
        target = os.readlink(link)
    except OSError:
        return None
    if not os.path.isabs(target):
        return None
    skill = Path(os.path.normpath(target))
    if str(skill) != target.rstrip("/") or skill.name != name:
        return None  # no "..", no detours: exactly the path skillctl writes
    entry = skill.parent
    if not _is_key(entry.name):
        return None
    try:
        if not stat.S_ISREG(os.lstat(entry.parent / STORE_MARKER).st_mode):
            return None
    except OSError:
        return None
    return skill, entry
