"""What a wheel provides to ``import``, and whether a skill's imports get what they expect.

A wheel's top-level importable names come from its file list — packages (a folder with an
``__init__``), modules (``x.py``), extension modules (``x.cpython-311-x86_64-linux-gnu.so``,
``x.abi3.so``), namespace packages (a folder of code without ``__init__``: ``google`` then
provides ``google.protobuf``), ``.data/purelib`` and ``.data/platlib`` counted like the root —
together with ``*.dist-info/top_level.txt`` when the wheel has one. A wheel that ships only
``.pth`` files (it puts some other folder on ``sys.path``) provides something unknown.

The file list is the zip's central directory, so a wheel is never read whole: a cached,
hash-checked copy is read in place; otherwise only the end of the file on the index is read
with HTTP Range requests (PyPI's files host honours them) — the central directory, and
``top_level.txt`` when present — never more than ``RANGE_BUDGET`` bytes. An index that does not
honour Range gets a full, streamed, hash-checked download into the cache (``files``) when the
caller allows one. Bytes read by Range cannot be checked against the pinned sha256 (only the
total size is): the names only ever produce warnings, never decide what is installed.

What a hash-checked copy provides is kept under the wheel's sha256 and a digest of these rules
(``CACHE/env/provides/``), so a run that starts a cached environment does not open numpy's and
pandas's central directories (thousands of entries, ~35 ms) on every start; a Range read is
never kept.

``check_imports`` puts the two together: every import of a skill against what the wheels of
its resolved environment provide, as located warnings that name the import, the distribution
it was resolved to and what that provides instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from skillctl.env.imports import Choice, _canonical, alternatives_map, mapped
from skillctl.errors import EnvError

Progress = Callable[[str], None]
BLOCK = 64 * 1024
RANGE_BUDGET = 16 * 1024 * 1024  # bytes read by Range per wheel before falling back
_EXTENSION_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\..*(?:so|pyd)$")


@dataclass(frozen=True)
class Provides:
    """The importable names of one wheel: top-level names, plus ``ns.sub`` for each package
    inside a namespace package ``ns``; ``unknown`` when the wheel only ships ``.pth`` files."""

    names: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    unknown: bool = False

    def provides(self, module: str) -> bool:
        parts = module.split(".")
        if parts[0] not in self.names:
            return False
        if parts[0] in self.namespaces and len(parts) > 1:
            return ".".join(parts[:2]) in self.names
        return True

    def shown(self) -> str:
        top = sorted(n for n in self.names if n not in self.namespaces or "." in n)
        return ", ".join(f"'{n}'" for n in top[:6]) + (f" and {len(top) - 6} more" if len(top) > 6 else "") or "nothing importable"


def _module_name(filename: str) -> str | None:
    if filename.endswith(".py"):
        name = filename[:-3]
    else:
        m = _EXTENSION_RE.match(filename)
        name = m.group(1) if m else ""
    return name if name.isidentifier() else None


def names_from_listing(members: Iterable[str], top_level: str | None = None) -> Provides:
    """What a wheel with these members (zip names) provides; ``top_level``: the text of its
    ``top_level.txt``, when it has one."""
    names: set[str] = set()
    packages: set[str] = set()
    subs: dict[str, set[str]] = {}
    pth = False
    for member in members:
        if member.endswith("/"):
            continue
        parts = member.split("/")
        if parts[0].endswith(".dist-info"):
            continue
        if parts[0].endswith(".data"):
            if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                continue
            parts = parts[2:]
        if len(parts) == 1:
            if parts[0].endswith(".pth"):
                pth = True
                continue
            name = _module_name(parts[0])
            if name:
                names.add(name)
            continue
        top = parts[0]
        if not top.isidentifier():
            continue  # numpy.libs/, a vendored-library folder: nothing to import
        leaf = _module_name(parts[-1])
        if leaf is None:
            continue  # data files do not make a package
        if len(parts) == 2 and leaf == "__init__":
            packages.add(top)
        names.add(top)
        sub = parts[1] if len(parts) > 2 else leaf
        if sub.isidentifier() and sub != "__init__":
            subs.setdefault(top, set()).add(sub)
    for line in (top_level or "").splitlines():
        top = line.strip().split("/")[0]
        if top.isidentifier():
            names.add(top)
            packages.add(top)  # the wheel's own word for it: a name it provides
    namespaces = {top for top in subs if top not in packages}
    for top in namespaces:
        names.update(f"{top}.{sub}" for sub in subs[top])
    return Provides(frozenset(names), frozenset(namespaces), unknown=pth and not names)


def _listing(zf: zipfile.ZipFile) -> Provides:
    members = zf.namelist()
    top_level = None
    for member in members:
        parts = member.split("/")
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "top_level.txt":
            info = zf.getinfo(member)
            if info.file_size <= 1 << 20:
                top_level = zf.read(member).decode("utf-8", "replace")
            break
    return names_from_listing(members, top_level)


def local_provides(path: Path) -> Provides:
    """What the wheel at ``path`` provides (only its central directory is read)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return _listing(zf)
    except (zipfile.BadZipFile, OSError) as exc:
        raise EnvError(f"{path.name} is not a readable wheel ({exc})") from None


# ------------------------------------------------------------------------------ kept answers

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@lru_cache(maxsize=1)
def _rules_digest() -> str:
    """This module's source, hashed: a kept answer names the rules that made it, so a change to
    them (a new kind of module, a fix) reads every wheel again instead of trusting old answers."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def _kept_path(sha256: str) -> Path | None:
    from skillctl.env.target import cache_dir

    if not _SHA256.match(sha256):
        return None  # not a sha256: never a file name
    return cache_dir() / "env" / "provides" / f"{sha256}-{_rules_digest()}.json"


def kept_provides(sha256: str) -> Provides | None:
    """What the wheel with ``sha256`` provides, as read from a hash-checked copy before (None
    when never read, or under other rules, or unreadable)."""
    path = _kept_path(sha256)
    if path is None:
        return None
    try:
        doc = json.loads(path.read_text("utf-8"))
        return Provides(frozenset(doc["names"]), frozenset(doc["namespaces"]), bool(doc["unknown"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep_provides(sha256: str, provides: Provides) -> None:
    """Keep what a hash-checked wheel provides, under its sha256 (a wheel's bytes never change
    under one: the answer is good for as long as these rules are). Never for a Range read, whose
    bytes could not be checked."""
    path = _kept_path(sha256)
    if path is None:
        return
    doc = {"names": sorted(provides.names), "namespaces": sorted(provides.namespaces), "unknown": provides.unknown}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True), "utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the answer is read from the wheel next time


class RangeUnsupported(Exception):
    """The server answered a Range request with something other than the range."""


class RangeFile:
    """A read-only, seekable view of a remote file through HTTP Range requests, reading whole
    ``BLOCK``s, keeping the blocks it read, and refusing to read more than ``budget`` bytes."""

    def __init__(self, url: str, size: int | None, session: Any, budget: int = RANGE_BUDGET) -> None:
        self.url, self.session, self.budget = url, session, budget
        self.blocks: dict[int, bytes] = {}
        self.fetched = 0
        self.requests = 0
        self.pos = 0
        self.size = size if size else self._probe_size()

    def _probe_size(self) -> int:
        # Without a pinned size: one Range request for the last block tells the total.
        data, total = self._get_range(None, BLOCK)
        self.size = total
        first = max(0, total - len(data))
        self._store(first, data)
        return total

    def _get_range(self, start: int | None, length: int) -> tuple[bytes, int]:
        import requests

        spec = f"bytes=-{length}" if start is None else f"bytes={start}-{start + length - 1}"
        if self.fetched + length > self.budget:
            raise RangeUnsupported(f"more than {self.budget} bytes of central directory")
        self.requests += 1
        try:
            with self.session.get(self.url, headers={"Range": spec}, stream=True, timeout=(10, 60)) as resp:
                if resp.status_code != 206:
                    raise RangeUnsupported(f"HTTP {resp.status_code} to a Range request")
                m = re.match(r"bytes (\d+)-(\d+)/(\d+)$", resp.headers.get("Content-Range", ""))
                if not m:
                    raise RangeUnsupported("no usable Content-Range")
                total = int(m.group(3))
                if getattr(self, "size", None) and total != self.size:
                    raise RangeUnsupported(f"the file has {total} bytes, not the {self.size} pinned")
                want = int(m.group(2)) - int(m.group(1)) + 1
                data = b"".join(resp.iter_content(BLOCK))
                if len(data) != want or want > length:
                    raise RangeUnsupported("a short or oversized range")
        except requests.RequestException as exc:
            raise RangeUnsupported(f"{type(exc).__name__}: {exc}") from None
        self.fetched += len(data)
        return data, total

    def _store(self, start: int, data: bytes) -> None:
        # only whole blocks (or the file's last, partial one) are kept
        first = -(-start // BLOCK)
        for index in range(first, (start + len(data)) // BLOCK + 1):
            lo = index * BLOCK - start
            chunk = data[lo:lo + BLOCK]
            if chunk and (len(chunk) == BLOCK or index * BLOCK + len(chunk) == self.size):
                self.blocks[index] = chunk

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        first, last = self.pos // BLOCK, (end - 1) // BLOCK
        missing = [i for i in range(first, last + 1) if i not in self.blocks]
        if missing:
            lo, hi = missing[0] * BLOCK, min(self.size, (missing[-1] + 1) * BLOCK)
            data, _ = self._get_range(lo, hi - lo)
            self._store(lo, data)
        out = b"".join(self.blocks[i] for i in range(first, last + 1))
        start = self.pos - first * BLOCK
        data = out[start:start + end - self.pos]
        self.pos += len(data)
        return data

    def close(self) -> None:
        self.blocks.clear()


def remote_provides(url: str, size: int | None, session: Any = None) -> tuple[Provides, RangeFile]:
    """What the wheel at ``url`` provides, read by Range requests (``RangeUnsupported`` when
    the server does not honour them)."""
    import requests

    remote = RangeFile(url, size, session or requests.Session())
    try:
        with zipfile.ZipFile(remote) as zf:  # type: ignore[arg-type]
            return _listing(zf), remote
    except (zipfile.BadZipFile, EOFError, ValueError, KeyError) as exc:
        raise RangeUnsupported(f"not a readable zip ({exc})") from None
    finally:
        remote.close()


def wheel_provides(files: Sequence[Any], *, download: bool = True, progress: Progress | None = None,
                   session: Any = None) -> dict[str, tuple[Any, Provides | None]]:
    """For each resolved wheel (``PackageFile``): what it provides, by canonical distribution
    name — kept from an earlier read of a hash-checked copy (``kept_provides``), else from the
    cached copy, else by Range requests, else (``download``) from a full hash-checked download;
    None where none of these could tell."""
    from skillctl.env.files import Wanted, cached_path, ensure_files

    say = progress or (lambda _line: None)
    out: dict[str, tuple[Any, Provides | None]] = {}
    for f in files:
        if getattr(f, "kind", "wheel") != "wheel" or not f.filename.endswith(".whl"):
            out[_canonical(f.name)] = (f, None)  # an sdist: what its built wheel provides is not known here
            continue
        want = Wanted(f.filename, f.url, f.sha256, f.size)
        found: Provides | None = kept_provides(f.sha256)
        path = cached_path(want)
        try:
            if found is not None:
                pass  # read from a hash-checked copy before: a cached run does not open the zips again
            elif path.is_file():
                found = local_provides(path)
                keep_provides(f.sha256, found)
            else:
                try:
                    found = remote_provides(f.url, f.size, session)[0]
                except RangeUnsupported as why:
                    if download:
                        say(f"reading {f.filename}'s file list by Range failed ({why}); downloading it")
                        found = local_provides(ensure_files([want], progress=progress)[0])
                        keep_provides(f.sha256, found)
        except EnvError as exc:
            say(f"cannot tell what {f.filename} provides: {exc}")
        out[_canonical(f.name)] = (f, found)
    return out


# ------------------------------------------------------------------------------ the check


@dataclass(frozen=True)
class ImportCheck:
    """One import that the resolved environment does not provide as expected."""

    owner: str
    file: str
    line: int
    module: str
    distribution: str | None  # what the import was taken to come from
    resolved: str | None  # "tdc 0.1" when that distribution is in the environment
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"owner": self.owner, "file": self.file, "line": self.line, "module": self.module,
                "distribution": self.distribution, "resolved": self.resolved, "message": self.message}


def _suggestion(choice: Choice, resolved_name: str) -> str:
    top = choice.use.top
    names = []
    hit = mapped(choice.use.module)
    if hit and _canonical(hit) != _canonical(resolved_name):
        names.append(hit)
    names += [a for a in alternatives_map().get(top, ()) if _canonical(a) != _canonical(resolved_name)]
    if choice.evidence is not None and _canonical(choice.evidence.name) != _canonical(resolved_name):
        names.append(choice.evidence.name)
    names = list(dict.fromkeys(names))
    return f" ({' or '.join(names)}?)" if names else " (see the skill's documentation)"


def check_imports(choices: Iterable[tuple[str, Choice]], provided: Mapping[str, tuple[Any, Provides | None]],
                  marker_env: Mapping[str, str] | None = None) -> list[ImportCheck]:
    """Located warnings for the imports (``(owner, Choice)``, as ``imports.choices_of`` makes
    them) that no resolved wheel provides. An import guarded by a platform check that does
    not hold (``marker_env``: the target's marker environment; default, Linux) or only by an
    ImportError handler the skill's text does not ask to fill is left alone."""
    known = [p for _f, p in provided.values() if p is not None]
    out: list[ImportCheck] = []
    seen: set[tuple[str, str, str]] = set()
    for owner, c in choices:
        use = c.use
        if not c.wanted or not _applies(use, marker_env):
            continue
        if any(p.provides(use.module) for p in known):
            continue
        key = (owner, use.file, use.top)
        if key in seen:
            continue
        seen.add(key)
        where = f"{owner}/{use.file}:{use.line}"
        entry = provided.get(_canonical(c.distribution)) if c.distribution else None
        if entry is not None:
            f, p = entry
            if p is None or p.unknown:
                continue  # cannot tell what it provides: no claim either way
            resolved = f"{f.name} {f.version}"
            message = (f"{where}: imports '{use.top}', but {resolved} (the distribution it was resolved to) provides "
                       f"{p.shown()}; declare the distribution that provides it{_suggestion(c, f.name)}")
            out.append(ImportCheck(owner, use.file, use.line, use.module, c.distribution, resolved, message))
        elif c.provenance == "local":
            out.append(ImportCheck(owner, use.file, use.line, use.module, None, None,
                                   f"{where}: imports '{use.top}', the skill's own module (its text refers to {use.top}.py), "
                                   "which the skill does not ship and no resolved distribution provides"))
        else:
            out.append(ImportCheck(owner, use.file, use.line, use.module, c.distribution, None,
                                   f"{where}: imports '{use.top}', which no distribution of the environment provides; "
                                   f"declare '{c.distribution}' ({c.why})"))
    return out


def _applies(use: Any, marker_env: Mapping[str, str] | None) -> bool:
    if use.marker is None:
        return True
    if marker_env is None:
        return use.on_linux
    from packaging.markers import Marker

    return Marker(use.marker).evaluate(dict(marker_env))
