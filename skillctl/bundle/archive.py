"""Skill artifacts in the Agent Skills distribution format, read and written as hostile input.

The well-known URI format (agentskills.io, "Well-Known URI") distributes a skill as one artifact:

    skill-md   the SKILL.md file alone
    archive    a .tar.gz or .zip whose files sit at the archive root (no wrapper folder)

skillctl's own bundles (``.skill.tgz``) wrap the files in one top folder named after the skill.
Both are read into the same ``BundleContents`` under the same rules and caps: the archive's paths
are checked as they are written (no absolute paths, no ``..``…), then placed under the skill's
name and fed to the same ``MemberTally`` a bundle goes through, so duplicates, case collisions,
links, devices, sizes and counts are refused exactly as for bundles. The archive format is told
by its first bytes (gzip or zip), not by a file name or a server's Content-Type: the bytes are
what the digest pins, and a format chosen from them cannot be argued with.

Other tools' archives are accepted as they commonly come: ``tar -C DIR -czf x.tar.gz .`` (paths
start with ``./`` and the root folder ``./`` is listed), ``git archive`` (a leading global header
with only the commit id as comment), ``zip -r`` (explicit folder entries).

    read_artifact(data, type, expected_name=…)   → BundleContents (BundleRejected if hostile)
    archive_tar_gz(contents)                      → the reproducible .tar.gz, files at the root
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from types import MappingProxyType

from skillctl.bundle.canonical import DEFAULT_MTIME, Entry, TarGz, canonical_tar, gzip_bytes, sorted_entries
from skillctl.bundle.digest import sha256_digest
from skillctl.bundle.inflate import GZIP_MAGIC
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import RULE_HAS_SKILL, SKILL_FILE, MemberTally, Refused
from skillctl.bundle.paths import member_path_problem
from skillctl.bundle.read import BundleContents, BundleRejected, Scanned, check_archive_size, read_bundle, scan_tar_gz
from skillctl.bundle.zipscan import ZIP_MAGIC, ZipScanner

BUNDLE = "bundle"  # skillctl's .skill.tgz: one top folder named after the skill
ARCHIVE = "archive"  # the well-known format's .tar.gz or .zip, files at the root
SKILL_MD = "skill-md"  # the well-known format's lone SKILL.md
ARTIFACT_TYPES = (BUNDLE, ARCHIVE, SKILL_MD)

NOUN = "archive"  # how refusals name what they refuse (a bundle is skillctl's own)
RULE_FORMAT = "a .tar.gz or .zip archive"
RULE_SKILL_MD = "SKILL.md is UTF-8 text within max_file_size"


class _RootlessPaths:
    """Maps an archive path (files at the root) to the member path the tally checks."""

    def __init__(self, name: str, limits: BundleLimits) -> None:
        self.name = name
        self.limits = limits

    def __call__(self, raw: str, is_dir: bool) -> str | None:
        # "./x" is how tar -C DIR . spells "x": every reader strips it, so it means one thing.
        path = raw[2:] if raw.startswith("./") else raw
        if is_dir and path in ("", "."):
            return None  # the archive's root folder itself
        problem = member_path_problem(path, self.limits)
        if problem is not None:
            raise Refused(raw, problem.what, problem.rule)
        return f"{self.name}/{path}"


class _Tally(MemberTally):
    """A tally whose refusals name members as the archive spells them (without the skill name
    the reader puts in front)."""

    def _strip(self, refused: Refused) -> Refused:
        prefix = f"{self.expected_name}/"
        member = refused.member
        if member is not None and member.startswith(prefix):
            member = member[len(prefix):]
        return Refused(member, refused.what.replace(prefix, ""), refused.rule)

    def add_dir(self, path: str) -> None:
        try:
            super().add_dir(path)
        except Refused as refused:
            raise self._strip(refused) from None

    def add_file(self, path: str, size: int) -> None:
        try:
            super().add_file(path, size)
        except Refused as refused:
            raise self._strip(refused) from None

    def finish(self) -> str:
        if self.top is None:
            raise Refused(None, "the archive has no members", RULE_HAS_SKILL)
        if self.kinds.get(f"{self.top}/{SKILL_FILE}") != "file":
            wrapper = sorted({p.split("/")[1] for p in self.kinds if p.count("/") >= 1})
            hint = ""
            if len(wrapper) == 1 and self.kinds.get(f"{self.top}/{wrapper[0]}/{SKILL_FILE}") == "file":
                hint = f"; it is inside '{wrapper[0]}/' — the format puts the skill's files at the archive root"
            raise Refused(SKILL_FILE, f"missing at the archive root{hint}", RULE_HAS_SKILL)
        return self.top


def scan_zip(
    data: bytes, limits: BundleLimits, tally: MemberTally, label: str, path_of: Callable[[str, bool], str | None]
) -> Scanned:
    """A .zip through the member rules, as ``scan_tar_gz`` does for a .tar.gz (``path_of`` maps
    an archive path to the member path the tally checks). Raises BundleRejected naming ``label``."""
    scanner = ZipScanner(data, limits)
    scan = Scanned(tally, len(data))
    try:
        for member in scanner.members():
            scan.add(member, path_of(member.path, member.is_dir), lambda: scanner.read_data(member))
        tally.finish()
    except Refused as refused:
        raise BundleRejected(label, refused, sum(len(f) for f in scan.files.values()), noun=NOUN) from None
    return scan


def read_archive(data: bytes, name: str, *, limits: BundleLimits = BundleLimits(), source: str | None = None) -> BundleContents:
    """Check a well-known archive of skill ``name`` (.tar.gz or .zip, files at the root) and
    return its contents, as ``read_bundle`` does for a bundle. ``tar_digest`` is the digest of
    the uncompressed tar for a .tar.gz, empty for a .zip."""
    digest = sha256_digest(data)
    label = source if source is not None else digest[:19]
    check_archive_size(data, limits, label, noun=NOUN)
    tally = _Tally(limits, name)
    path_of = _RootlessPaths(name, limits)
    if data[:2] == GZIP_MAGIC:
        scan = scan_tar_gz(data, limits, tally, label, path_of=path_of, allow_global_comment=True, noun=NOUN)
    elif data[:4] == ZIP_MAGIC:
        scan = scan_zip(data, limits, tally, label, path_of)
    else:
        raise BundleRejected(label, Refused(None, "neither gzip nor zip data", RULE_FORMAT), 0, noun=NOUN)
    return scan.contents(digest)


def read_skill_md(data: bytes, name: str, *, limits: BundleLimits = BundleLimits(), source: str | None = None) -> BundleContents:
    """A lone SKILL.md as the contents of skill ``name`` (UTF-8, at most ``max_file_size``)."""
    digest = sha256_digest(data)
    label = source if source is not None else digest[:19]
    if len(data) > limits.max_file_size:
        refused = Refused(SKILL_FILE, f"file is {len(data)} bytes, over the limit of {limits.max_file_size}", "max_file_size")
        raise BundleRejected(label, refused, 0, noun=NOUN)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleRejected(label, Refused(SKILL_FILE, "is not UTF-8 text", RULE_SKILL_MD), 0, noun=NOUN) from None
    return BundleContents(name, MappingProxyType({SKILL_FILE: bytes(data)}), frozenset(), (), digest, "", len(data))


def read_artifact(
    data: bytes,
    artifact_type: str,
    *,
    expected_name: str,
    limits: BundleLimits = BundleLimits(),
    source: str | None = None,
) -> BundleContents:
    """Read any skill artifact by its type (``bundle``, ``archive`` or ``skill-md``)."""
    if artifact_type == BUNDLE:
        return read_bundle(data, expected_name=expected_name, limits=limits, source=source)
    if artifact_type == ARCHIVE:
        return read_archive(data, expected_name, limits=limits, source=source)
    if artifact_type == SKILL_MD:
        return read_skill_md(data, expected_name, limits=limits, source=source)
    raise ValueError(f"unknown artifact type {artifact_type!r}; expected one of {', '.join(ARTIFACT_TYPES)}")


def archive_entries(contents: BundleContents) -> list[Entry]:
    """The canonical entries of ``contents`` with the files at the root: the bundle's layout
    (sorted, explicit folders) without its top folder."""
    files = {rel: (data, rel in contents.executables) for rel, data in contents.files.items()}
    prefix = contents.name + "/"
    return [
        Entry(e.path[len(prefix):], e.data, e.executable)
        for e in sorted_entries(contents.name, files, contents.dirs)
        if e.path != contents.name
    ]


def archive_tar_gz(contents: BundleContents, *, mtime: int = DEFAULT_MTIME) -> TarGz:
    """The reproducible .tar.gz of ``contents`` with the files at the archive root: the same
    canonical bytes as a bundle (sorted, fixed mtime, no owners, modes 0644/0755) minus the top
    folder. The mtime is a constant, not SOURCE_DATE_EPOCH, so the bytes depend on the skill's
    files alone. Compressed in this thread: the contents are already in memory and small, where
    ``tar_gz``'s second thread costs more than it saves (the bytes are the same either way)."""
    tar = canonical_tar(archive_entries(contents), mtime)
    data = gzip_bytes(tar)
    return TarGz(data=data, digest=hashlib.sha256(data).hexdigest(), tar_digest=hashlib.sha256(tar).hexdigest())
