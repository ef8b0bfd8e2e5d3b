"""Archives shipped in a skill: what they hold, read from their directories, never unpacked.

A zip's central directory names every member and says which are encrypted even when the data
is, so a password-protected zip still shows that it carries ``setup.exe``. For members that
are not encrypted, only the first bytes are decompressed (to recognise a native executable by
its magic number), never the whole member, so a zip bomb costs nothing. 7-Zip and RAR archives
are recognised by their signature and reported as unreadable: their directories can themselves
be encrypted, and reading them would need a parser this package does not carry.

Findings are analyzer hits; the facts also become signals (``encrypted-archive``,
``archive-executable-hidden``) so that rules can combine them with the password the skill's
instructions give.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from dataclasses import dataclass

from skillctl.audit.textfile import EXECUTABLE_MAGIC

MAX_MEMBERS = 10_000  # beyond this, only the first ones are looked at
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
_OPAQUE = {b"7z\xbc\xaf\x27\x1c": "7-Zip", b"Rar!\x1a\x07": "RAR"}
# Names that run when opened or started: programs, scripts the shell or Windows runs, installers.
EXECUTABLE_SUFFIXES = frozenset({
    ".exe", ".scr", ".com", ".bat", ".cmd", ".msi", ".dll", ".sys", ".ps1", ".vbs", ".vbe", ".js", ".jse", ".wsf",
    ".hta", ".jar", ".lnk", ".sh", ".bin", ".elf", ".run", ".app", ".dylib", ".so", ".pkg", ".dmg", ".command",
    ".appimage", ".py", ".pyc",
})


@dataclass(frozen=True)
class ArchiveHit:
    analyzer: str  # archive.encrypted, archive.executable, archive.unreadable
    evidence: str
    detail: str


@dataclass
class ArchiveFacts:
    hits: list[ArchiveHit]
    signals: list[tuple[str, str]]  # (signal, evidence)


def is_archive(data: bytes) -> bool:
    return data.startswith(_ZIP) or any(data.startswith(m) for m in _OPAQUE)


def _is_executable_name(name: str) -> bool:
    base = posixpath.basename(name.rstrip("/")).lower()
    return posixpath.splitext(base)[1] in EXECUTABLE_SUFFIXES or ".app/" in name.lower()


def inspect(path: str, data: bytes) -> ArchiveFacts:
    """What the archive at ``path`` holds, as far as can be told without a password."""
    facts = ArchiveFacts([], [])
    for magic, kind in _OPAQUE.items():
        if data.startswith(magic):
            facts.hits.append(ArchiveHit("archive.unreadable", f"{kind} archive {path}", "its contents were not checked"))
            # Its contents cannot be seen: with a password in the skill, assume the worst.
            facts.signals.append(("encrypted-archive", f"{kind} archive {path}"))
            facts.signals.append(("archive-executable-hidden", f"{kind} archive {path} (contents unknown)"))
            return facts
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()[:MAX_MEMBERS]
            encrypted = [m for m in members if m.flag_bits & 0x1]
            runnable = [m for m in members if not m.is_dir() and (_is_executable_name(m.filename) or
                                                                  (not m.flag_bits & 0x1 and _starts_executable(zf, m)))]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError,
            RuntimeError) as exc:
        facts.hits.append(ArchiveHit("archive.unreadable", f"zip archive {path}", f"its directory cannot be read ({exc})"))
        return facts
    if encrypted:
        names = ", ".join(m.filename for m in encrypted[:5]) + (" …" if len(encrypted) > 5 else "")
        facts.hits.append(ArchiveHit("archive.encrypted", f"password-protected zip {path}",
                                     f"{len(encrypted)} of {len(members)} members encrypted: {names}"))
        facts.signals.append(("encrypted-archive", f"password-protected zip {path}"))
    # An encrypted member without an extension may be a native program: its bytes cannot be seen.
    runnable += [m for m in encrypted if not m.is_dir() and m not in runnable
                 and not posixpath.splitext(posixpath.basename(m.filename))[1]]
    for m in runnable[:5]:
        hidden = bool(m.flag_bits & 0x1)
        facts.hits.append(ArchiveHit("archive.executable", f"{path}: {m.filename}",
                                     "encrypted member" if hidden else f"{m.file_size} bytes"))
        if hidden:
            facts.signals.append(("archive-executable-hidden", f"{path}: {m.filename} (encrypted)"))
    return facts


def _starts_executable(zf: zipfile.ZipFile, member: zipfile.ZipInfo) -> bool:
    """Whether an unencrypted member starts with a native executable's magic number."""
    try:
        with zf.open(member) as fh:
            return fh.read(4).startswith(EXECUTABLE_MAGIC)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
        return False
