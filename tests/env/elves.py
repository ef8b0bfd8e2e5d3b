"""ELF shared objects for the system-library tests: real ones compiled by gcc, and synthetic ones
(any class and byte order, or damaged on purpose) written byte by byte."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

C_SOURCE = "int skl_value(void) { return 42; }\n"
OMP_SOURCE = "#include <omp.h>\nint skl_threads(void) { return omp_get_max_threads(); }\n"


def gcc(out: Path, *flags: str, source: str = C_SOURCE) -> Path:
    """``gcc -shared -fPIC`` of ``source`` into ``out`` (skipped when gcc is missing)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed (apt-get install gcc)")
    src = out.with_suffix(".c")
    src.write_text(source)
    # --no-as-needed: every library named is recorded as needed, whether the code calls it or not.
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", str(out), str(src), *flags], check=True,
                   capture_output=True)
    return out


def synthetic(bits: int = 64, order: str = "<", *, machine: int = 62, needed=(), soname: str = "", rpath: str = "",
              runpath: str = "") -> bytearray:
    """A minimal ET_DYN file: header, PT_LOAD (the whole file), PT_DYNAMIC, string table, dynamic."""
    strings = bytearray(b"\0")
    offsets = {}
    for s in [*needed, soname, rpath, runpath]:
        if s and s not in offsets:
            offsets[s] = len(strings)
            strings += s.encode() + b"\0"
    tags = [(1, offsets[n]) for n in needed]
    tags += [(t, offsets[s]) for t, s in ((14, soname), (15, rpath), (29, runpath)) if s]
    if bits == 64:
        eh, ph, dyn_fmt, ph_fmt = 64, 56, order + "qQ", order + "IIQQQQQQ"
        head_fmt = order + "HHIQQQIHHHHHH"
    else:
        eh, ph, dyn_fmt, ph_fmt = 52, 32, order + "iI", order + "IIIIIIII"
        head_fmt = order + "HHIIIIIHHHHHH"
    base = 0x10000
    str_off = eh + 2 * ph
    dyn_off = str_off + len(strings)
    dynamic = b"".join(struct.pack(dyn_fmt, t, v) for t, v in tags + [(5, base + str_off), (10, len(strings)), (0, 0)])
    size = dyn_off + len(dynamic)
    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 1 if order == "<" else 2, 1]) + bytes(9)
    header = ident + struct.pack(head_fmt, 3, machine, 1, 0, eh, 0, 0, eh, ph, 2, 0, 0, 0)
    if bits == 64:
        load = struct.pack(ph_fmt, 1, 5, 0, base, base, size, size, 0x1000)
        dyn = struct.pack(ph_fmt, 2, 6, dyn_off, base + dyn_off, base + dyn_off, len(dynamic), len(dynamic), 8)
    else:
        load = struct.pack(ph_fmt, 1, 0, base, base, size, size, 5, 0x1000)
        dyn = struct.pack(ph_fmt, 2, dyn_off, base + dyn_off, base + dyn_off, len(dynamic), len(dynamic), 6, 4)
    return bytearray(header + load + dyn + strings + dynamic)
