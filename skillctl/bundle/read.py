"""Reading any bundle safely: every member is checked before anything is returned.

``read_bundle`` streams the archive once: bounded gzip inflation (``inflate``), a strict tar
reader (``tarscan``) and the member rules shared with the packer (``members``). Caps are
enforced on bytes actually produced, never on sizes the archive claims. It returns only after
the whole stream, its gzip trailer and its padding have been checked, so a caller that writes
what it returns never writes anything from a bundle that turns out to be bad at its end.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from skillctl.bundle.canonical import BLOCK, RECORD, canonical_tar, resolve_mtime, sorted_entries
from skillctl.bundle.digest import format_digest, sha256_digest
from skillctl.bundle.inflate import Inflater
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import SKILL_FILE, MemberTally, Refused
from skillctl.bundle.tarscan import RULE_TAR, TRAILING_CAP, TarScanner
from skillctl.errors import BundleError

_HINTS = {
    "max_files": "raise the limit if this is intended",
    "max_dirs": "raise the limit if this is intended",
    "max_file_size": "raise the limit if this is intended",
    "max_total_size": "raise the limit if this is intended",
    "max_bundle_size": "raise the limit if this is intended",
}
_DEFAULT_HINT = "do not use this bundle; rebuild it with skillctl pack"
_FOREIGN_HINT = "do not use this archive; ask its publisher to rebuild it"


class BundleRejected(BundleError):
    """A bundle broke a reading rule. A BundleError like any other; the fields are for callers
    and tests that need more than the message: ``member`` (None for archive-wide rules), ``rule``,
    ``refused`` (the whole refusal, for callers that word their own advice) and
    ``inflated_bytes`` (decompressed bytes read when the reader stopped)."""

    def __init__(self, source: str, refused: Refused, inflated_bytes: int, *, noun: str = "bundle") -> None:
        hint = _HINTS.get(refused.rule, _DEFAULT_HINT if noun == "bundle" else _FOREIGN_HINT)
        super().__init__(f"{noun} {source}: {refused}; {hint}")
        self.source = source
        self.member = refused.member
        self.rule = refused.rule
        self.refused = refused
        self.inflated_bytes = inflated_bytes


@dataclass(frozen=True)
class BundleContents:
    """The verified contents of a bundle.

    ``files`` maps paths relative to the top folder ``name`` to bytes (read-only mapping);
    ``executables`` are the files to unpack as 0755 (the rest are 0644); ``dirs`` are every folder
    below the top one, sorted (implicit parents included). ``digest`` / ``tar_digest`` are the
    ``sha256:`` of the bundle bytes and of its uncompressed tar.
    """

    name: str
    files: Mapping[str, bytes]
    executables: frozenset[str]
    dirs: tuple[str, ...]
    digest: str
    tar_digest: str
    size: int

    @property
    def unpacked_size(self) -> int:
        return sum(len(data) for data in self.files.values())

    def mode(self, path: str) -> int:
        return 0o755 if path in self.executables else 0o644

    def read_skill_md(self) -> str:
        """``SKILL.md`` as text; BundleError when it is not UTF-8."""
        try:
            return self.files[SKILL_FILE].decode("utf-8")
        except UnicodeDecodeError:
            raise BundleError(f"bundle {self.name}: SKILL.md is not UTF-8 text; re-save it as UTF-8 and pack again") from None

    def canonical_tar(self, *, mtime: int | None = None) -> bytes:
        """These contents as a canonical uncompressed tar (the layout ``pack`` writes).

        Hand this, not the original bundle, to programs that unpack on their own (Docker's
        ``put_archive``): they then parse bytes skillctl wrote, not bytes an attacker shaped to be
        read one way here and another way there. For a bundle made by ``pack`` with the same
        mtime, ``sha256`` of the result equals ``tar_digest``.
        """
        files = {path: (data, path in self.executables) for path, data in self.files.items()}
        return canonical_tar(sorted_entries(self.name, files, self.dirs), resolve_mtime(mtime))


def max_tar_bytes(limits: BundleLimits) -> int:
    """The most decompressed bytes a bundle within ``limits`` can need: file data plus, per
    member, a header, one extended header and paddings, plus the end marker and padding.

    A backstop: the member rules already stop every stream before this, but the inflater should
    not depend on the tar reader being right to stay bounded."""
    per_member = 4 * BLOCK + limits.max_header_size
    return limits.max_total_size + (limits.max_files + limits.max_dirs) * per_member + RECORD + TRAILING_CAP


def read_bundle(
    data: bytes,
    *,
    expected_name: str | None = None,
    limits: BundleLimits = BundleLimits(),
    source: str | None = None,
) -> BundleContents:
    """Check every member of the bundle ``data`` and return its contents.

    Refuses (BundleRejected, a BundleError naming the bundle, the member and the rule):
    anything that is not exactly one gzip stream holding one well-formed tar; members other than
    regular files and folders; unsafe paths (absolute, ``..``, backslash, drive or ``:``,
    control characters, too long or deep); duplicates, case/normalisation collisions and
    file/folder clashes; more or fewer than one top folder, or one not named ``expected_name``;
    a missing ``SKILL.md``; and anything over ``limits``. ``source`` names the bundle in messages
    (default: the start of its digest).
    """
    digest = sha256_digest(data)
    label = source if source is not None else digest[:19]
    check_archive_size(data, limits, label)
    tally = MemberTally(limits, expected_name)
    scan = scan_tar_gz(data, limits, tally, label, path_of=lambda raw, is_dir: raw)
    return scan.contents(digest)


def check_archive_size(data: bytes, limits: BundleLimits, label: str, *, noun: str = "bundle") -> None:
    if len(data) > limits.max_bundle_size:
        raise BundleRejected(
            label,
            Refused(None, f"{noun} is {len(data)} bytes, over the limit of {limits.max_bundle_size}", "max_bundle_size"),
            0,
            noun=noun,
        )


@dataclass
class Scanned:
    """What a scan of an archive collected, ready to become ``BundleContents``."""

    tally: MemberTally
    size: int
    files: dict[str, bytes] = field(default_factory=dict)
    executables: set[str] = field(default_factory=set)
    tar_digest: str = ""

    def add(self, member: Any, path: str | None, read: Callable[[], bytes]) -> None:
        """One member (a tar header or zip entry: ``path``, ``is_dir``, ``size``,
        ``executable``) through the tally, under the member path ``path`` (None: the archive's
        own root folder, skipped); ``read`` is called for files only, after the caps passed."""
        if member.is_dir:
            if path is not None:
                self.tally.add_dir(path)
            return
        if path is None:
            raise Refused(member.path, "a file where the archive's root folder should be", RULE_TAR)
        self.tally.add_file(path, member.size)
        rel = path.partition("/")[2]
        self.files[rel] = read()
        if member.executable:
            self.executables.add(rel)

    def contents(self, digest: str) -> BundleContents:
        top = self.tally.top
        assert top is not None  # finish() passed
        dirs = tuple(sorted(p.partition("/")[2] for p, kind in self.tally.kinds.items() if kind == "dir" and p != top))
        return BundleContents(
            name=top,
            files=MappingProxyType(dict(sorted(self.files.items()))),
            executables=frozenset(self.executables),
            dirs=dirs,
            digest=digest,
            tar_digest=self.tar_digest,
            size=self.size,
        )


def scan_tar_gz(
    data: bytes,
    limits: BundleLimits,
    tally: MemberTally,
    label: str,
    *,
    path_of: Callable[[str, bool], str | None],
    allow_global_comment: bool = False,
    noun: str = "bundle",
) -> Scanned:
    """Stream one .tar.gz through the member rules. ``path_of(archive path, is_dir)`` gives the
    member path the tally checks (top folder first), or None to skip an entry (the archive's
    own root folder); it may raise Refused. Raises BundleRejected naming ``label``."""
    inflater = Inflater(data, max_tar_bytes(limits))
    scanner = TarScanner(inflater, limits, allow_global_comment=allow_global_comment)
    scan = Scanned(tally, len(data))
    try:
        while (header := scanner.next_member()) is not None:
            scan.add(header, path_of(header.path, header.is_dir), lambda: scanner.read_data(header))
        scanner.finish()
        tally.finish()
    except Refused as refused:
        raise BundleRejected(label, refused, inflater.produced, noun=noun) from None
    assert inflater.finished  # finish() drained the stream, which ran the gzip end checks
    scan.tar_digest = format_digest(inflater.tar_hash.hexdigest())
    return scan


def read_bundle_file(
    path: Path, *, expected_name: str | None = None, limits: BundleLimits = BundleLimits()
) -> BundleContents:
    """``read_bundle`` on a file, refusing one over ``max_bundle_size`` before reading it."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO planted where a bundle should be must not hang.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise BundleError(f"{path}: cannot read the bundle ({exc.strerror}); check the path") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BundleError(f"{path}: not a regular file; give the path of a .skill.tgz bundle")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limits.max_bundle_size + 1)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read the bundle ({exc.strerror}); check the path") from None
    finally:
        os.close(fd)
    return read_bundle(data, expected_name=expected_name, limits=limits, source=str(path))
