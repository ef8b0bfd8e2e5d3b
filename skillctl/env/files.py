"""Downloading environment files into a content-addressed cache, every byte checked.

A file is kept at ``CACHE/env/files/<sha256>/<filename>`` only after its bytes hashed to the
sha256 the resolution (or the lock) promised; a cached file is hashed again before each use, so
a file changed on disk is refused like one changed on the server. Downloads go through a
temporary name and a rename: an interrupted download never looks complete. A file of an index
given with credentials is fetched with them (``resolve.authenticated``); else requests reads
``~/.netrc``.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skillctl.env.target import cache_dir
from skillctl.errors import EnvError, EnvIntegrityError

Progress = Callable[[str], None]
CHUNK = 1 << 16
# A file this size or larger reports its progress while downloading.
_REPORT_ABOVE = 2 * 1024 * 1024


@dataclass(frozen=True)
class Wanted:
    """A file to have locally: where to get it and the sha256 it must have."""

    filename: str
    url: str
    sha256: str
    size: int | None = None


def hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_path(want: Wanted) -> Path:
    if "/" in want.filename or want.filename in ("", ".", ".."):
        raise EnvError(f"refusing file name {want.filename!r} from a lock or index")
    return cache_dir() / "env" / "files" / want.sha256 / want.filename


def _bar(done: int, total: int | None, width: int = 24) -> str:
    if not total:
        return f"{done / 1e6:.1f} MB"
    filled = int(width * done / total)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done / 1e6:.1f}/{total / 1e6:.1f} MB"


def _download(want: Wanted, dest: Path, say: Progress, label: str) -> None:
    import requests

    from skillctl.env.resolve import authenticated, scrub_text

    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    done = 0
    last = 0.0
    try:
        with requests.get(authenticated(want.url), stream=True, timeout=(10, 60)) as resp:
            if resp.status_code != 200:
                raise EnvError(f"downloading {want.filename} from {want.url}: HTTP {resp.status_code}")
            with open(tmp, "wb") as fh:
                for chunk in resp.iter_content(CHUNK):
                    fh.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    if want.size and done > want.size:
                        raise EnvIntegrityError(
                            f"{want.filename} from {want.url} is larger than the {want.size} bytes pinned; refusing it"
                        )
                    now = time.monotonic()
                    if (want.size or 0) >= _REPORT_ABOVE and now - last > 1.0:
                        say(f"  {label} {_bar(done, want.size)}")
                        last = now
                fh.flush()
                os.fsync(fh.fileno())
        if digest.hexdigest() != want.sha256:
            raise EnvIntegrityError(
                f"{want.filename} from {want.url} has sha256 {digest.hexdigest()[:16]}…, but {want.sha256[:16]}… "
                "is pinned; refusing it — the file changed on the index since it was resolved or locked"
            )
        os.replace(tmp, dest)
    except requests.RequestException as exc:
        raise EnvError(f"downloading {want.filename} from {want.url} failed ({type(exc).__name__}: {scrub_text(str(exc))})") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def ensure_files(wanted: Sequence[Wanted], *, progress: Progress | None = None) -> list[Path]:
    """Local, verified copies of ``wanted`` (downloaded when missing); in input order."""
    say = progress or (lambda _line: None)
    missing = [w for w in wanted if not cached_path(w).is_file()]
    if missing:
        total = sum(w.size or 0 for w in missing)
        say(f"downloading {len(missing)} file(s), {total / 1e6:.1f} MB")
    out = []
    for n, want in enumerate(wanted, 1):
        path = cached_path(want)
        if path.is_file():
            actual = hash_file(path)
            if actual != want.sha256:
                raise EnvIntegrityError(
                    f"cached {path} has sha256 {actual[:16]}…, but {want.sha256[:16]}… is pinned; delete it and retry"
                )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            label = f"{missing.index(want) + 1}/{len(missing)} {want.filename}"
            say(f"  {label}" + (f" ({want.size / 1e6:.1f} MB)" if want.size else ""))
            _download(want, path, say, label)
        out.append(path)
    return out
