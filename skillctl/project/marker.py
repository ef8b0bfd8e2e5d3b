"""skillctl's install marker: what says a folder was installed by skillctl, and with what.

Every skill folder skillctl installs carries ``.skillctl-install.json`` (:data:`MARKER`): the
skill's name, where it came from (source kind and location), its version and revision, the
``tar_digest`` that identifies its content across sources, and every file as installed (sha256,
size, mode) with every folder. ``sync`` and ``remove`` delete only folders whose marker is valid
and names the folder; a folder whose files no longer match its marker was edited in place and is
reported, not overwritten.

A marker is read back as hostile data: never through a link, never more than
:data:`MAX_MARKER_BYTES`, checked against ``install_marker.schema.json`` (:func:`problem`); its paths are only
ever compared with what a walk of the folder finds, never opened.

Telling an edited folder from a pristine one without hashing every file every time: the marker
also records each file's inode, mtime and ctime as installed (``stat``). A file that still has
them, with its recorded size and mode, is taken as unchanged; any other is hashed. Tools can set
an mtime back but not a ctime (``utime`` itself moves it), so an edit that restores the mtime is
still seen; a copied or restored folder (new inodes) is hashed once and found pristine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Mapping

from skillctl.bundle.digest import format_digest
from skillctl.bundle.read import BundleContents
from skillctl.errors import InstallError
from skillctl.fsutil import walk_no_links

MARKER = ".skillctl-install.json"
# Leftover of a marker rewrite a crash interrupted (``MARKER`` + ".tmp-…"): not an edit.
MARKER_TEMP_PREFIX = MARKER + ".tmp-"
FORMAT = 1
# 500 files (BundleLimits) at ~400 bytes each with their stat data is ~200 KiB.
MAX_MARKER_BYTES = 1024 * 1024
SCHEMA_FILE = "install_marker.schema.json"  # the contract; :func:`problem` applies it

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class MarkerProblem(Exception):
    """Why a marker is not skillctl's (a one-line reason); internal to the project layer."""


def build(contents: BundleContents, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The marker for installing ``contents``, from ``provenance``: ``source`` ({kind, location,
    subdir?}), ``version``, ``revision``, and optionally ``name`` and ``tar_digest``, which must
    then be those of ``contents`` (a pin for one skill never labels another's files)."""
    source = provenance.get("source") or {}
    name = provenance.get("name", contents.name)
    if name != contents.name:
        raise InstallError(f"the marker for {contents.name} names {name!r}; install each skill with its own pin")
    tar_digest = provenance.get("tar_digest") or contents.tar_digest
    if contents.tar_digest and tar_digest != contents.tar_digest:
        raise InstallError(
            f"{contents.name}: its files have tar digest {contents.tar_digest} but the pin says {tar_digest}; "
            "fetch the skill again"
        )
    marker: dict[str, Any] = {
        "format": FORMAT,
        "tool": "skillctl",
        "name": contents.name,
        "source": {"kind": str(source.get("kind", "")), "location": str(source.get("location", ""))},
        "version": str(provenance.get("version", "")),
        "revision": str(provenance.get("revision", "")),
        "tar_digest": tar_digest,
        "files": {
            rel: {"sha256": format_digest(hashlib.sha256(data).hexdigest()), "size": len(data), "mode": contents.mode(rel)}
            for rel, data in contents.files.items()
        },
        "dirs": list(contents.dirs),
    }
    if source.get("subdir"):
        marker["source"]["subdir"] = str(source["subdir"])
    wrong = problem(marker)
    if wrong:
        raise InstallError(f"{contents.name}: cannot record this install ({wrong}); check the pin it came from")
    return marker


def provenance_of(pin: Any) -> dict[str, Any]:
    """The provenance :func:`build` takes, from a ``skillctl.protocols.SourcePin``."""
    source = {"kind": pin.spec.kind, "location": pin.spec.location}
    if pin.subdir or pin.spec.subdir:
        source["subdir"] = pin.subdir or pin.spec.subdir
    return {"name": pin.name, "source": source, "version": pin.version, "revision": pin.revision,
            "tar_digest": pin.tar_digest}


def record_stat(marker: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``marker`` with the ``stat`` of each of its files as they are now in ``folder`` (just
    written): what lets a later check skip hashing them."""
    cache = {}
    for rel in marker["files"]:
        st = os.lstat(folder / rel)
        cache[rel] = [st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    return {**marker, "stat": cache}


def encode(marker: Mapping[str, Any]) -> bytes:
    return (json.dumps(marker, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def write(folder: Path, marker: Mapping[str, Any]) -> None:
    """Write ``folder/MARKER`` atomically (a new file renamed over the old one), never through a
    link: the temporary file is created with O_EXCL|O_NOFOLLOW and the rename replaces a link
    planted at MARKER rather than following it."""
    data = encode(marker)
    tmp = folder / f"{MARKER_TEMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o644)
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, folder / MARKER)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InstallError(f"{folder / MARKER}: cannot write skillctl's marker ({exc.strerror}); check the folder") from None


_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_KIND = re.compile(r"[a-z][a-z0-9-]*")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# No leading /, no empty, "." or ".." part, no backslash or control character.
_PATH = re.compile(r"(?!/)(?!.*(^|/)\.{0,2}(/|$))[^\\\x00-\x1f]+", re.S)
_TOP = {"format", "tool", "name", "source", "version", "revision", "tar_digest", "files", "dirs", "stat"}
_REQUIRED = _TOP - {"stat"}
_MAX_ENTRIES = 10000


def _text(value: Any, limit: int, pattern: re.Pattern[str] | None = None) -> bool:
    return isinstance(value, str) and len(value) <= limit and (pattern is None or pattern.fullmatch(value) is not None)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def problem(data: Any) -> str:
    """The first way ``data`` breaks ``install_marker.schema.json`` ("" when it does not).

    Written out rather than run through jsonschema: a sync reads every marker of every target
    folder, and the generic validator cost ~3 ms per small marker, most of a sync's time. At
    least as strict as the schema (tests/project/test_marker.py checks both on generated and
    damaged markers): whatever this accepts, the schema accepts.
    """
    if not isinstance(data, dict):
        return "top level: not a mapping"
    keys = set(data)
    if keys - _TOP or _REQUIRED - keys:
        return f"top level: fields {sorted(set(map(str, keys ^ _REQUIRED)) - {'stat'})} are unexpected or missing"
    if type(data["format"]) is not int or data["format"] != FORMAT or data["tool"] != "skillctl":
        return "format/tool: not a skillctl marker of format 1"
    if not _text(data["name"], 64, _NAME):
        return "name: not a skill name"
    source = data["source"]
    if not isinstance(source, dict) or not {"kind", "location"} <= set(source) <= {"kind", "location", "subdir"} \
            or not _text(source["kind"], 32, _KIND) or not _text(source["location"], 4096) \
            or not _text(source.get("subdir", ""), 4096):
        return "source: not {kind, location[, subdir]}"
    if not _text(data["version"], 256) or not _text(data["revision"], 256):
        return "version/revision: not short strings"
    if not _text(data["tar_digest"], 71, _DIGEST):
        return "tar_digest: not a sha256 digest"
    files = data["files"]
    if not isinstance(files, dict) or len(files) > _MAX_ENTRIES:
        return "files: not a mapping of at most 10000 paths"
    for path, entry in files.items():
        if not _text(path, 1024, _PATH):
            return "files: a path that is not a safe relative path"
        if not isinstance(entry, dict) or set(entry) != {"sha256", "size", "mode"} or not _text(entry["sha256"], 71, _DIGEST) \
                or not _count(entry["size"]) or entry["mode"] not in (0o644, 0o755) or isinstance(entry["mode"], (bool, float)):
            return f"files.{path}: not {{sha256, size, mode}}"
    dirs = data["dirs"]
    if not isinstance(dirs, list) or len(dirs) > _MAX_ENTRIES or not all(_text(d, 1024, _PATH) for d in dirs) \
            or len(set(dirs)) != len(dirs):
        return "dirs: not a list of distinct safe relative paths"
    cache = data.get("stat", {})
    if not isinstance(cache, dict) or len(cache) > _MAX_ENTRIES:
        return "stat: not a mapping of at most 10000 paths"
    for path, numbers in cache.items():
        if not _text(path, 1024, _PATH) or not isinstance(numbers, list) or len(numbers) != 3 or not all(map(_count, numbers)):
            return "stat: an entry that is not [inode, mtime_ns, ctime_ns]"
    return ""


def read(folder: Path, expected_name: str) -> dict[str, Any]:
    """The valid marker in ``folder`` for the skill ``expected_name``; MarkerProblem saying why
    there is none (missing, a link or special file, too big, not JSON, not the schema, another
    name)."""
    path = folder / MARKER
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK)
    except FileNotFoundError:
        raise MarkerProblem("no skillctl marker") from None
    except OSError as exc:
        raise MarkerProblem(f"its marker cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MarkerProblem("its marker is not a regular file")
        if st.st_size > MAX_MARKER_BYTES:
            raise MarkerProblem(f"its marker is {st.st_size} bytes, over {MAX_MARKER_BYTES}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_MARKER_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_MARKER_BYTES:
        raise MarkerProblem(f"its marker is over {MAX_MARKER_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise MarkerProblem("its marker is not JSON") from None
    wrong = problem(data)
    if wrong:
        raise MarkerProblem(f"its marker is not valid ({wrong})")
    if data["name"] != expected_name:
        raise MarkerProblem(f"its marker names another skill ({data['name']!r})")
    return data


def tree_difference(folder: Path, marker: Mapping[str, Any], *, skip_marker: bool) -> str:
    """How ``folder`` differs from the files and folders ``marker`` records ("" when it holds
    exactly them, bytes and modes). Walks without following links; a link or special file
    anywhere is a difference. ``skip_marker``: the marker itself (and a leftover temporary one)
    at the top is not part of the skill."""
    files: Mapping[str, Mapping[str, Any]] = marker["files"]
    cache: Mapping[str, list[int]] = marker.get("stat") or {}
    seen_files = 0
    seen_dirs: set[str] = set()
    try:
        for rel, st in walk_no_links(folder):
            if skip_marker and "/" not in rel and (rel == MARKER or rel.startswith(MARKER_TEMP_PREFIX)):
                continue
            if stat.S_ISDIR(st.st_mode):
                seen_dirs.add(rel)
                continue
            recorded = files.get(rel)
            if recorded is None:
                return f"{rel} was added"
            if not stat.S_ISREG(st.st_mode):
                return f"{rel} is no longer a regular file"
            if st.st_size != recorded["size"] or stat.S_IMODE(st.st_mode) != recorded["mode"]:
                return f"{rel} was changed"
            if cache.get(rel) != [st.st_ino, st.st_mtime_ns, st.st_ctime_ns] and _sha256(folder / rel, st.st_size) != recorded["sha256"]:
                return f"{rel} was changed"
            seen_files += 1
    except OSError as exc:
        return f"a folder in it cannot be read ({exc.strerror})"
    if seen_files != len(files):
        missing = sorted(set(files) - _present(folder, files))
        return f"{missing[0] if missing else 'a file'} was removed"
    dirs = set(marker["dirs"])
    if seen_dirs != dirs:
        extra = sorted(seen_dirs - dirs)
        return f"{extra[0]}/ was added" if extra else f"{sorted(dirs - seen_dirs)[0]}/ was removed"
    return ""


def _present(folder: Path, files: Mapping[str, Any]) -> set[str]:
    return {rel for rel in files if os.path.lexists(folder / rel)}


def _sha256(path: Path, size: int) -> str:
    """sha256 of a regular file read without following a link, at most ``size`` + 1 bytes (a file
    growing while read differs anyway)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK)
    except OSError:
        return ""
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            remaining = size + 1
            while remaining > 0:
                chunk = fh.read(min(remaining, 1024 * 1024))
                if not chunk:
                    break
                digest.update(chunk)
                remaining -= len(chunk)
    finally:
        os.close(fd)
    return format_digest(digest.hexdigest())
