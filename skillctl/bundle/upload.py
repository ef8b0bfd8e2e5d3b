"""Skills as the hosted skills APIs upload them, read as hostile input.

The OpenAI and Anthropic skills APIs take a skill in one of two forms:

    a zip        whose files sit in one top folder named after the skill (``my-skill/SKILL.md``)
    file parts   one multipart part per file, named by its path in that folder

Both are held to a bundle's rules: every path goes through the same ``MemberTally`` a
``.skill.tgz`` goes through (safe paths, one top folder, no duplicates or case collisions, a
path is a file or a folder, the file, size and count caps), the zip through the strict zip reader
first. Nothing is returned before every member has passed.

A multipart part carries no file mode, so ``read_file_parts`` asks its caller which files are
executable.

    read_zip_bundle(data)              → BundleContents of a zip with one top folder
    read_file_parts(parts, executable) → BundleContents of (path, bytes) pairs
    zip_bundle(contents)               → the canonical zip of contents (what the APIs download)

``zip_bundle`` writes what ``read_zip_bundle`` reads, canonically: the bundle's member order
(every folder explicit, sorted), a fixed timestamp, Unix modes 0644/0755 (folders 0755), deflate
at one level, no extra fields or comments. The same files give the same bytes, so a downloaded
zip uploaded again is byte for byte the one a later download returns.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable
from types import MappingProxyType

from skillctl.bundle.archive import NOUN, scan_zip
from skillctl.bundle.canonical import sorted_entries
from skillctl.bundle.digest import sha256_digest
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import RULE_ONE_TOP, MemberTally, Refused
from skillctl.bundle.read import BundleContents, BundleRejected, check_archive_size

_TOP_HINT = "the files must sit in one folder named after the skill, e.g. my-skill/SKILL.md"


class _Tally(MemberTally):
    """A tally that says what the layout must be when a file sits outside any folder: the usual
    mistake (a zip of the folder's contents, or an SDK sending an open file's base name)."""

    def add_file(self, path: str, size: int) -> None:
        try:
            super().add_file(path, size)
        except Refused as refused:
            if refused.rule == RULE_ONE_TOP and "/" not in path:
                raise Refused(refused.member, f"{refused.what}; {_TOP_HINT}", refused.rule) from None
            raise


def read_zip_bundle(
    data: bytes, *, expected_name: str | None = None, limits: BundleLimits = BundleLimits(), source: str | None = None
) -> BundleContents:
    """Check a zip whose files sit in one top folder (the skill's name) and return its contents,
    as ``read_bundle`` does for a ``.skill.tgz``. ``tar_digest`` is empty (there is no tar)."""
    digest = sha256_digest(data)
    label = source if source is not None else digest[:19]
    check_archive_size(data, limits, label, noun=NOUN)
    scan = scan_zip(data, limits, _Tally(limits, expected_name), label, lambda raw, is_dir: raw)
    return scan.contents(digest)


def read_file_parts(
    parts: Iterable[tuple[str, bytes]],
    executable: Callable[[str, bytes], bool],
    *,
    limits: BundleLimits = BundleLimits(),
    source: str = "upload",
) -> BundleContents:
    """Check files given as (path in the top folder, bytes) pairs and return them as a bundle's
    contents. ``executable(path, data)`` says which files unpack as 0755. ``digest`` is that of
    nothing in particular (there is no archive): callers pack the contents to get one."""
    tally = _Tally(limits)
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    try:
        for path, data in parts:
            tally.add_file(path, len(data))
            rel = path.partition("/")[2]
            files[rel] = data
            if executable(rel, data):
                executables.add(rel)
        top = tally.finish()
    except Refused as refused:
        raise BundleRejected(source, refused, sum(len(d) for d in files.values()), noun="upload") from None
    dirs = tuple(sorted(p.partition("/")[2] for p, kind in tally.kinds.items() if kind == "dir" and p != top))
    return BundleContents(
        name=top,
        files=MappingProxyType(dict(sorted(files.items()))),
        executables=frozenset(executables),
        dirs=dirs,
        digest="",
        tar_digest="",
        size=sum(len(d) for d in files.values()),
    )


_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say; nothing about when it was made
_ZIP_LEVEL = 6


def zip_bundle(contents: BundleContents) -> bytes:
    """The canonical zip of ``contents``: files under one top folder named ``contents.name``."""
    files = {rel: (data, rel in contents.executables) for rel, data in contents.files.items()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for entry in sorted_entries(contents.name, files, contents.dirs):
            is_dir = entry.data is None
            info = zipfile.ZipInfo(entry.path + "/" if is_dir else entry.path, date_time=_ZIP_TIME)
            info.create_system = 3  # Unix, so readers honour the modes below
            if is_dir:
                info.external_attr = (0o040755 << 16) | 0x10  # the MS-DOS folder bit too
                info.compress_type = zipfile.ZIP_STORED
                zf.writestr(info, b"")
            else:
                info.external_attr = (0o100755 if entry.executable else 0o100644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, entry.data, compresslevel=_ZIP_LEVEL)
    return out.getvalue()
