"""Which shared libraries an environment's ELF files need and cannot find — stdlib only.

This module runs in two places: on the host, on the members of wheels (``env infer``), and
inside the environment image itself, passed whole to the image's ``python3 -I -S -c`` (``main``):
so it imports nothing but the standard library, and never runs the files it reads (``ldd`` may
execute the program it is asked about; this reads bytes).

``read_elf`` parses the ELF header, the program headers and the ``PT_DYNAMIC`` segment of a
32- or 64-bit, little- or big-endian file: ``DT_NEEDED``, ``DT_SONAME``, ``DT_RPATH`` and
``DT_RUNPATH``, whose string offsets are mapped through the ``PT_LOAD`` segments. Every count and
offset is bounded by the file's size and by the caps below, so a truncated or hostile header is
an ``ElfError``, never a crash, a loop or a large read. Reads go forward except one rewind (the
string table usually precedes the dynamic segment), so a zip member can be read as a stream.

``unresolved`` resolves each needed name as the dynamic loader does for a library that the
interpreter opens: the file's ``DT_RPATH`` (when it has no ``DT_RUNPATH``), its ``DT_RUNPATH``
(``$ORIGIN`` is its own folder — how wheels reach their bundled ``<pkg>.libs``), then the image's
``/etc/ld.so.conf`` folders and the default ones. A candidate counts only when it is an ELF file
of the same class and machine (the loader skips the others). A name that only another shared
object of the environment has as its ``DT_SONAME`` counts as found: the loader reuses a library
already loaded under that name, and packages rely on importing one module before another.
"""

from __future__ import annotations

import csv
import fnmatch
import glob
import json
import os
import struct
import sys

MAX_PHNUM = 4096
MAX_DYN_ENTRIES = 1 << 16
MAX_STRING = 4096  # a library name or search path longer than this is refused
MAX_NEEDED = 1024
MAX_FILES = 50000  # shared objects checked in one environment
MAX_REPORTED = 2000
DEFAULT_DIRS_X86_64 = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
DEFAULT_DIRS = ("/lib", "/usr/lib")

DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
ET_DYN = 3


class ElfError(ValueError):
    """The file starts like ELF but its headers cannot be read."""


class ElfInfo:
    """What the loader reads from a shared object: its class (32/64), machine, type and dynamic names."""

    __slots__ = ("bits", "machine", "type", "soname", "needed", "rpath", "runpath")

    def __init__(self, bits, machine, type_, soname="", needed=(), rpath="", runpath=""):
        self.bits, self.machine, self.type = bits, machine, type_
        self.soname, self.needed, self.rpath, self.runpath = soname, tuple(needed), rpath, runpath

    def __repr__(self) -> str:
        return (f"ElfInfo(bits={self.bits}, machine={self.machine}, soname={self.soname!r}, needed={self.needed!r}, "
                f"rpath={self.rpath!r}, runpath={self.runpath!r})")


def _read_at(fh, pos: int, size: int, file_size: int, what: str) -> bytes:
    if pos < 0 or size < 0 or pos + size > file_size:
        raise ElfError(f"{what} at offset {pos} (+{size}) lies outside the file ({file_size} bytes)")
    fh.seek(pos)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError(f"{what} at offset {pos} is truncated")
    return data


def ident(head: bytes) -> tuple[int, str] | None:
    """(bits, struct byte order) of an ELF file's first 16 bytes; None when it is not ELF."""
    if len(head) < 16 or head[:4] != b"\x7fELF":
        return None
    bits = {1: 32, 2: 64}.get(head[4])
    order = {1: "<", 2: ">"}.get(head[5])
    if bits is None or order is None:
        raise ElfError(f"unknown ELF class {head[4]} or byte order {head[5]}")
    return bits, order


def read_elf(fh, file_size: int) -> ElfInfo | None:
    """The dynamic names of the ELF file open as ``fh`` (seekable, ``file_size`` bytes); None when
    it is not an ELF file; ``ElfError`` when its headers are damaged."""
    fh.seek(0)
    head = fh.read(64)
    kind = ident(head)
    if kind is None:
        return None
    bits, order = kind
    if bits == 64:
        fmt, ph_fmt, dyn_fmt = order + "HHIQQQIHHHHHH", order + "IIQQQQQQ", order + "qQ"
    else:
        fmt, ph_fmt, dyn_fmt = order + "HHIIIIIHHHHHH", order + "IIIIIIII", order + "iI"
    if len(head) < 16 + struct.calcsize(fmt):
        raise ElfError("the ELF header is truncated")
    (e_type, machine, _v, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum, *_rest) = struct.unpack_from(fmt, head, 16)
    ph_size = struct.calcsize(ph_fmt)
    if phnum == 0:
        return ElfInfo(bits, machine, e_type)
    if phnum > MAX_PHNUM or phentsize < ph_size:
        raise ElfError(f"{phnum} program headers of {phentsize} bytes")
    table = _read_at(fh, phoff, phentsize * phnum, file_size, "the program headers")
    loads, dynamic = [], None
    for n in range(phnum):
        fields = struct.unpack_from(ph_fmt, table, n * phentsize)
        if bits == 64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC and dynamic is None:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return ElfInfo(bits, machine, e_type)
    dyn_size = struct.calcsize(dyn_fmt)
    count = min(dynamic[1] // dyn_size, MAX_DYN_ENTRIES)
    data = _read_at(fh, dynamic[0], count * dyn_size, file_size, "the dynamic segment")
    entries: dict[int, list[int]] = {}
    for n in range(count):
        tag, value = struct.unpack_from(dyn_fmt, data, n * dyn_size)
        if tag == DT_NULL:
            break
        if tag in (DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH):
            entries.setdefault(tag, []).append(value)
    if len(entries.get(DT_NEEDED, ())) > MAX_NEEDED:
        raise ElfError(f"{len(entries[DT_NEEDED])} needed libraries")
    wanted = {t: v for t, v in entries.items() if t in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH)}
    if not wanted:
        return ElfInfo(bits, machine, e_type)
    if DT_STRTAB not in entries:
        raise ElfError("dynamic names without a string table")
    strtab = _vaddr_to_offset(entries[DT_STRTAB][0], loads)
    strsz = entries.get(DT_STRSZ, [file_size - strtab])[0]
    strsz = min(strsz, file_size - strtab)
    # Read each string once, in file order: at most one rewind for the whole file.
    offsets = sorted({off for values in wanted.values() for off in values})
    strings = {off: _string(fh, strtab, off, strsz, file_size) for off in offsets}
    first = lambda tag: strings[wanted[tag][0]] if tag in wanted else ""  # noqa: E731
    return ElfInfo(bits, machine, e_type, first(DT_SONAME), [strings[o] for o in wanted.get(DT_NEEDED, [])],
                   first(DT_RPATH), first(DT_RUNPATH))


def _vaddr_to_offset(addr: int, loads: list[tuple[int, int, int]]) -> int:
    for vaddr, offset, filesz in loads:
        if vaddr <= addr < vaddr + filesz:
            return offset + (addr - vaddr)
    raise ElfError(f"the string table's address {addr:#x} is in no loaded segment")


def _string(fh, strtab: int, off: int, strsz: int, file_size: int) -> str:
    if off >= strsz:
        raise ElfError(f"string offset {off} is past the string table ({strsz} bytes)")
    size = min(MAX_STRING + 1, strsz - off)
    raw = _read_at(fh, strtab + off, size, file_size, "a dynamic string")
    end = raw.find(b"\0")
    if end < 0:
        raise ElfError(f"a dynamic string at offset {off} is not terminated within {MAX_STRING} bytes")
    return raw[:end].decode("utf-8", errors="replace")


def read_path(path: str) -> ElfInfo | None:
    """``read_elf`` of a file on disk (None when it is not ELF or not readable)."""
    try:
        with open(path, "rb") as fh:
            return read_elf(fh, os.fstat(fh.fileno()).st_size)
    except OSError:
        return None


def is_shared_object_name(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


# ------------------------------------------------------------------------------ resolution


def search_dirs(path: str, info: ElfInfo, system: list[str]) -> list[str]:
    """Where the loader looks for the libraries ``path`` needs, in order."""
    origin = os.path.dirname(path)
    own = info.rpath if info.rpath and not info.runpath else info.runpath
    dirs = []
    for entry in own.split(":") if own else []:
        if not entry:
            continue
        entry = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        dirs.append(os.path.normpath(entry))
    return dirs + list(system)


def ld_so_conf(root: str = "/", conf: str = "etc/ld.so.conf", depth: int = 0) -> list[str]:
    """The folders ``/etc/ld.so.conf`` lists, ``include`` globs followed (at most 8 levels)."""
    out: list[str] = []
    if depth > 8:
        return out
    try:
        with open(os.path.join(root, conf), encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include "):
            pattern = line[len("include "):].strip()
            if not pattern.startswith("/"):
                pattern = os.path.join("/etc", pattern)
            for included in sorted(glob.glob(os.path.join(root, pattern.lstrip("/"))))[:256]:
                out += ld_so_conf(root, os.path.relpath(included, root), depth + 1)
        elif line.startswith("/"):
            out.append(line)
    return out


def system_dirs(machine: str = "x86_64") -> list[str]:
    defaults = DEFAULT_DIRS_X86_64 if machine == "x86_64" else DEFAULT_DIRS
    seen: list[str] = []
    for d in ld_so_conf() + list(defaults):
        if d not in seen:
            seen.append(d)
    return seen


class DiskLookup:
    """Is ``name`` in ``folder`` on this machine, as an ELF file of this class and machine?"""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, int], bool] = {}

    def __call__(self, folder: str, name: str, bits: int, machine: int) -> bool:
        path = os.path.join(folder, name)
        key = (path, bits, machine)
        if key not in self._seen:
            try:
                info = read_path(path) if os.path.isfile(path) else None
            except ElfError:
                info = None
            self._seen[key] = info is not None and info.bits == bits and info.machine == machine
        return self._seen[key]


def unresolved(path: str, info: ElfInfo, system: list[str], lookup, provided: set[str]) -> list[str]:
    """The names ``info`` (the file at ``path``) needs that no search folder holds."""
    missing = []
    dirs = search_dirs(path, info, system)
    for name in info.needed:
        if "/" in name or name in provided:
            continue
        if not any(lookup(d, name, info.bits, info.machine) for d in dirs):
            missing.append(name)
    return missing


# ------------------------------------------------------------------------------ in the image


def _owners(venv: str) -> dict[str, tuple[str, str]]:
    """Installed file (absolute path) -> (distribution, version), from each dist-info's RECORD."""
    out: dict[str, tuple[str, str]] = {}
    for record in glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "*.dist-info", "RECORD"))[:10000]:
        info_dir = os.path.dirname(record)
        site = os.path.dirname(info_dir)
        name, _, version = os.path.basename(info_dir)[: -len(".dist-info")].partition("-")
        dist = (name, version)
        try:
            with open(record, encoding="utf-8", errors="replace", newline="") as fh:
                for row in csv.reader(fh):
                    if row and row[0] and fnmatch.fnmatch(os.path.basename(row[0]), "*.so*"):
                        out[os.path.normpath(os.path.join(site, row[0]))] = dist
        except (OSError, csv.Error):
            continue
    return out


def check_tree(venv: str, machine: str) -> dict:
    """Every shared object under ``venv`` and the libraries it needs that the image lacks."""
    files: list[tuple[str, ElfInfo]] = []
    unreadable: list[dict] = []
    truncated = False
    for folder, subdirs, names in os.walk(venv):
        subdirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not is_shared_object_name(name) or os.path.islink(path) or not os.path.isfile(path):
                continue
            if len(files) >= MAX_FILES:
                truncated = True
                break
            try:
                info = read_path(path)
            except ElfError as exc:
                unreadable.append({"file": path, "error": str(exc)})
                continue
            if info is not None and info.type == ET_DYN:
                files.append((path, info))
    provided = {info.soname for _, info in files if info.soname} | {os.path.basename(p) for p, _ in files}
    system = system_dirs(machine)
    lookup = DiskLookup()
    owners = _owners(venv)
    missing = []
    for path, info in files:
        for name in unresolved(path, info, system, lookup, provided):
            dist, version = owners.get(path, ("", ""))
            missing.append({"file": path, "needs": name, "distribution": dist, "version": version})
    return {"checked": len(files), "missing": missing[:MAX_REPORTED], "more": max(0, len(missing) - MAX_REPORTED),
            "unreadable": unreadable[:50], "truncated": truncated, "system_dirs": system}


def list_libraries(machine: str) -> dict:
    """The names (files and links) in the image's library folders, for checking wheels on the host."""
    system = system_dirs(machine)
    names: dict[str, list[str]] = {}
    for folder in system:
        try:
            entries = sorted(os.listdir(folder))[:200000]
        except OSError:
            continue
        names[folder] = [n for n in entries if is_shared_object_name(n) and os.path.isfile(os.path.join(folder, n))]
    return {"system_dirs": system, "libraries": names}


def main(argv: list[str]) -> int:
    """``check VENV`` or ``list``: prints one JSON document."""
    machine = os.uname().machine
    if argv[:1] == ["check"] and len(argv) == 2:
        print(json.dumps(check_tree(argv[1], machine)))
        return 0
    if argv[:1] == ["list"]:
        print(json.dumps(list_libraries(machine)))
        return 0
    print("usage: elfcheck check VENV | list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
