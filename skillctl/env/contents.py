"""Which Debian package ships a shared library: the suite's Contents index, verified like the others.

``dists/<suite>/main/Contents-<arch>.gz`` (or ``.xz``) lists every file of every package of the
suite. Its SHA256 and size are read from the Release that apt verified against the keyring
(``debian.verified_lists``: apt keeps no Release it could not verify), the file is downloaded
into the content-addressed cache and checked against them (``files.ensure_files``: a file with
other bytes is refused in one line), and read as a stream, a line at a time, into a compact
index of only the shared-object names in the loader's folders (``lib/…``, ``usr/lib/…``,
``…/<triplet>/`` and one folder below it): ``{soname: [package, …]}``, kept under the cache by the Contents file's
sha256 (the multi-megabyte download itself is then deleted). A mirror that cannot be reached
leaves apt's verified lists as they were, so the index of that Release is used again; when apt
has none, the latest index read for the mirror is used, with a note.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from skillctl.env.target import cache_dir
from skillctl.errors import EnvError

Progress = Callable[[str], None]
MAX_LINE = 8192
MAX_UNCOMPRESSED = 8 << 30  # bookworm's main Contents-amd64 is well under 1 GB
# A path the dynamic loader searches by default for the architecture's own libraries (lib, lib64,
# the multiarch folder; not lib32/libx32), or one folder below the multiarch one, where Debian
# keeps libraries that alternatives link into it (libblas3: …/x86_64-linux-gnu/blas/libblas.so.3).
_LIB_PATH = re.compile(rb"^(?:usr/)?lib(?:64)?/(?:[a-z0-9_]+-linux-gnu[a-z0-9_]*/(?:[^/]+/)?)?([^/]+)$")


def release_entries(text: str) -> dict[str, tuple[str, int]]:
    """``{path: (sha256, size)}`` from a Release (or clearsigned InRelease) file's SHA256 section."""
    out: dict[str, tuple[str, int]] = {}
    in_sha = False
    for line in text.splitlines():
        if line.startswith("- "):  # a dash-escaped line of a clearsigned message
            line = line[2:]
        if not line.startswith(" "):
            in_sha = line.strip() == "SHA256:"
            continue
        if in_sha:
            parts = line.split()
            if len(parts) == 3 and re.fullmatch(r"[0-9a-f]{64}", parts[0]) and parts[1].isdigit():
                out[parts[2]] = (parts[0], int(parts[1]))
    return out


def find_release(lists: Path, suite: str) -> str:
    """The text of the Release apt verified and stored in ``lists``."""
    for pattern in (f"*_dists_{suite}_InRelease", f"*_dists_{suite}_Release"):
        found = sorted(lists.glob(pattern))
        if found:
            return found[0].read_text("utf-8", errors="replace")
    raise EnvError(f"apt kept no Release for suite {suite} in {lists}; run again, or check SKILLCTL_DEBIAN_MIRROR")


def contents_entry(entries: dict[str, tuple[str, int]], arch: str) -> tuple[str, str, int] | None:
    """(path in dists/SUITE, sha256, size) of the main Contents index, compressed if possible."""
    for name in (f"main/Contents-{arch}.gz", f"main/Contents-{arch}.xz", f"main/Contents-{arch}"):
        if name in entries:
            return (name, *entries[name])
    return None


def _opener(name: str) -> Callable[[Path], IO[bytes]]:
    if name.endswith(".gz"):
        return lambda p: gzip.open(p, "rb")
    if name.endswith(".xz"):
        return lambda p: lzma.open(p, "rb")
    return lambda p: open(p, "rb")


def _lines(fh: IO[bytes]) -> Iterable[bytes]:
    """Lines of at most MAX_LINE bytes (a longer one is skipped whole), and at most MAX_UNCOMPRESSED in all."""
    total = 0
    while True:
        line = fh.readline(MAX_LINE)
        if not line:
            return
        total += len(line)
        if total > MAX_UNCOMPRESSED:
            raise EnvError(f"the Contents index is larger than {MAX_UNCOMPRESSED >> 30} GB uncompressed; refusing it")
        if not line.endswith(b"\n") and len(line) == MAX_LINE:
            while line and not line.endswith(b"\n"):
                line = fh.readline(MAX_LINE)
                total += len(line)
            continue
        yield line


def parse_contents(fh: IO[bytes]) -> dict[str, list[str]]:
    """``{soname: [package, …]}`` from a Contents stream (``path   section/package[,…]`` lines)."""
    index: dict[str, set[str]] = {}
    for line in _lines(fh):
        if not (line.startswith(b"usr/lib") or line.startswith(b"lib")) or b".so" not in line:
            continue
        parts = line.rstrip(b"\n").rsplit(None, 1)
        if len(parts) != 2:
            continue
        match = _LIB_PATH.match(parts[0].rstrip())
        if not match:
            continue
        name = match.group(1).decode("utf-8", errors="replace")
        if not (name.endswith(".so") or ".so." in name):
            continue
        for location in parts[1].decode("utf-8", errors="replace").split(","):
            package = location.rsplit("/", 1)[-1].strip()
            if package:
                index.setdefault(name, set()).add(package)
    return {name: sorted(packages) for name, packages in sorted(index.items())}


def policy_name(soname: str) -> str:
    """The package name Debian policy gives the library ``soname`` (libgomp.so.1 → libgomp1)."""
    stem, _, version = soname.partition(".so")
    version = version.lstrip(".").split(".")[0]
    if not version:
        return stem
    return f"{stem}-{version}" if stem[-1:].isdigit() else f"{stem}{version}"


def ranked(soname: str, packages: Iterable[str]) -> list[str]:
    """Packages that ship ``soname``, the policy-named runtime package first, -dev and -dbg ones last."""
    expected = policy_name(soname)
    return sorted(packages, key=lambda p: (p != expected, p.endswith(("-dev", "-dbg", "-dbgsym")), p))


def _write_json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True), "utf-8")
    os.replace(tmp, path)


def soname_index(arch: str, *, progress: Progress | None = None) -> dict[str, list[str]]:
    """The compact soname → packages index of the configured mirror's suite (see the module)."""
    from skillctl.env.debian import verified_lists
    from skillctl.env.files import Wanted, ensure_files

    say = progress or (lambda _line: None)
    folder = cache_dir() / "env" / "contents"
    try:
        lists, mirror, suite = verified_lists(arch)
        release = find_release(lists, suite)
    except EnvError as exc:
        from skillctl.env.debian import mirror_and_suite

        mirror, suite = mirror_and_suite()
        latest = folder / f"{_mirror_key(mirror, suite, arch)}.latest"
        if latest.is_file():
            cached = folder / f"{latest.read_text('utf-8').strip()}.json"
            if cached.is_file():
                say(f"system libraries: using the Contents index read before ({exc})")
                return json.loads(cached.read_text("utf-8"))
        raise
    entry = contents_entry(release_entries(release), arch)
    if entry is None:
        raise EnvError(f"the signed Release of {mirror} {suite} lists no main/Contents-{arch}(.gz|.xz); "
                       "the Debian package of a missing library cannot be named")
    name, sha256, size = entry
    cached = folder / f"{sha256}.json"
    if not cached.is_file():
        say(f"reading the Contents index of {mirror} {suite} ({size / 1e6:.1f} MB) to name Debian packages")
        url = f"{mirror}/dists/{suite}/{name}"
        [path] = ensure_files([Wanted(f"{suite}-{name.replace('/', '-')}", url, sha256, size)], progress=progress)
        started = time.monotonic()
        with _opener(name)(path) as fh:
            try:
                index = parse_contents(fh)
            except (OSError, EOFError, lzma.LZMAError) as exc:
                raise EnvError(f"the Contents index {url} cannot be read ({exc})") from None
        _write_json(cached, index)
        path.unlink(missing_ok=True)  # the compact index is all that is read again
        say(f"  {len(index)} shared-object names in {time.monotonic() - started:.1f}s")
    (folder / f"{_mirror_key(mirror, suite, arch)}.latest").write_text(sha256, "utf-8")
    return json.loads(cached.read_text("utf-8"))


def _mirror_key(mirror: str, suite: str, arch: str) -> str:
    return hashlib.sha256(f"{mirror} {suite} {arch}".encode()).hexdigest()[:16]
