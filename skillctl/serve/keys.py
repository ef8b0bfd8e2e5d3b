"""API keys for ``skillctl serve``: made once, shown once, kept only as hashes.

The keys file is JSON, mode 0600, always replaced whole (temporary file, fsync, rename), so a
server reading it never sees half a file::

    {"format": "skillctl-serve-keys", "version": 1,
     "keys": [{"name": "ci", "scopes": ["read", "publish"], "hash": "sha256:<64 hex>",
               "prefix": "skctl_Ab3x", "created_at": 1767225600}]}

A key is ``skctl_`` and 43 URL-safe characters from ``secrets`` (256 random bits). Only its
SHA-256 is stored. A fast hash is the right one here: slow password hashes (scrypt, argon2)
exist because people choose passwords from a small space an attacker can walk through; a
256-bit random key has no such space, so a stolen keys file gives nothing to search, while a
slow hash would cost every request tens of milliseconds. ``prefix`` (the first four random
characters) lets people tell keys apart in ``key list``; it narrows nothing that matters.

Presented keys are hashed and compared against every stored hash with ``hmac.compare_digest``,
all of them every time, so neither the comparison nor the loop tells an attacker how close a
guess came or which key it resembled.

Scopes: ``read`` (list, retrieve, download), ``publish`` (create skills and versions), ``admin``
(delete, yank). They are independent; a key gets exactly the scopes it lists.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from skillctl.errors import ConfigError
from skillctl.nesting import loads_json

READ, PUBLISH, ADMIN = "read", "publish", "admin"
SCOPES = (READ, PUBLISH, ADMIN)
FORMAT = "skillctl-serve-keys"
FORMAT_VERSION = 1
KEY_PREFIX = "skctl_"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_SHOWN = 4  # random characters of a key kept in the file to tell keys apart


@dataclass(frozen=True)
class ApiKey:
    name: str
    scopes: frozenset[str]
    hash: str  # "sha256:<hex>"
    prefix: str
    created_at: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "scopes": [s for s in SCOPES if s in self.scopes], "hash": self.hash,
                "prefix": self.prefix, "created_at": self.created_at}

    def summary(self) -> dict[str, Any]:
        """What ``key list`` shows: everything but the hash."""
        doc = self.to_dict()
        del doc["hash"]
        return doc


def parse_scopes(text: str) -> frozenset[str]:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ConfigError(f"scopes must be a comma-separated list of {', '.join(SCOPES)}; got {text!r}")
    return frozenset(scopes)


def key_hash(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def _parse(doc: Any, path: Path) -> list[ApiKey]:
    where = f"keys file {path}"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("keys"), list):
        raise ConfigError(f"{where} is not a skillctl serve keys file; make one with: skillctl serve key add NAME --keys {path}")
    if doc.get("version") != FORMAT_VERSION:
        raise ConfigError(f"{where} has version {doc.get('version')!r}; this skillctl reads version {FORMAT_VERSION}")
    keys: list[ApiKey] = []
    for i, entry in enumerate(doc["keys"]):
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str) and NAME_RE.match(entry["name"])
            and isinstance(entry.get("hash"), str) and _HASH_RE.match(entry["hash"])
            and isinstance(entry.get("scopes"), list) and entry["scopes"]
            and all(s in SCOPES for s in entry["scopes"])
            and isinstance(entry.get("prefix"), str)
            and isinstance(entry.get("created_at"), int)
        )
        if not ok:
            raise ConfigError(f"{where}: entry {i} is malformed; remove it with skillctl serve key revoke, or restore the file")
        keys.append(ApiKey(entry["name"], frozenset(entry["scopes"]), entry["hash"], entry["prefix"], entry["created_at"]))
    names = [k.name for k in keys]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where} names a key twice; revoke one of them")
    return keys


def _check_mode(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"keys file {path} is not a regular file")
    if st.st_mode & 0o022:
        # Anyone who can write the file can give themselves a key.
        raise ConfigError(f"keys file {path} is writable by group or others; run: chmod 600 {path}")


def read_keys(path: Path) -> list[ApiKey]:
    """The keys in ``path``; an empty list when the file does not exist yet."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read keys file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        _check_mode(path, os.fstat(fh.fileno()))
        raw = fh.read(4 * 1024 * 1024 + 1)
    if len(raw) > 4 * 1024 * 1024:
        raise ConfigError(f"keys file {path} is over 4 MiB; it cannot be a keys file")
    try:
        doc = loads_json(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"keys file {path} is not valid JSON ({exc}); restore it or make a new one") from None
    return _parse(doc, path)


def _write_keys(path: Path, keys: list[ApiKey]) -> None:
    doc = {"format": FORMAT, "version": FORMAT_VERSION, "keys": [k.to_dict() for k in keys]}
    data = (json.dumps(doc, indent=2) + "\n").encode("utf-8")
    # mkstemp makes the file 0600 from the start: the hashes are never readable by others, not
    # even for the moment between creating and renaming.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    from skillctl.fsutil import fsync_dir

    fsync_dir(path.parent)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise ``key add``/``revoke`` on the same file (a sibling lock file): two at once must
    not each write a file missing the other's change."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.parent / f".{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write next to keys file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def add_key(path: Path, name: str, scopes: frozenset[str], *, now: int | None = None) -> tuple[str, ApiKey]:
    """Make a key, store its hash in ``path``; returns (the key, its record). The key itself is
    never stored: this is the only time anyone sees it."""
    path = Path(path)
    if not NAME_RE.match(name):
        raise ConfigError(f"key name {name!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    with _locked(path):
        keys = read_keys(path)
        if any(k.name == name for k in keys):
            raise ConfigError(f"a key named {name!r} already exists in {path}; revoke it first or choose another name")
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(name, scopes, key_hash(secret), secret[: len(KEY_PREFIX) + _SHOWN],
                        int(time.time()) if now is None else now)
        try:
            _write_keys(path, [*keys, record])
        except OSError as exc:
            raise ConfigError(f"cannot write keys file {path}: {exc.strerror}") from None
    return secret, record


def revoke_key(path: Path, name: str) -> ApiKey:
    path = Path(path)
    with _locked(path):
        keys = read_keys(path)
        gone = next((k for k in keys if k.name == name), None)
        if gone is None:
            known = ", ".join(k.name for k in keys) or "none"
            raise ConfigError(f"no key named {name!r} in {path} (keys: {known})")
        try:
            _write_keys(path, [k for k in keys if k.name != name])
        except OSError as exc:
            raise ConfigError(f"cannot write keys file {path}: {exc.strerror}") from None
    return gone


class KeyRing:
    """The keys a running server accepts, re-read whenever the file changes (so ``key revoke``
    takes effect on the next request, without a restart). A file that turns unreadable while
    the server runs locks everyone out until it is fixed: failing closed is the only safe way
    for an access list to fail."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._hashes: list[tuple[bytes, ApiKey]] = []
        self._error: ConfigError | None = None
        self.reload()
        if self._error is not None:
            raise self._error

    def _current_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def reload(self) -> None:
        stamp = self._current_stamp()
        with self._lock:
            if stamp == self._stamp and self._stamp is not None:
                return
            try:
                keys = read_keys(self.path)
            except ConfigError as exc:
                self._error, self._hashes, self._stamp = exc, [], None
                return
            self._hashes = [(bytes.fromhex(k.hash.partition(":")[2]), k) for k in keys]
            self._error, self._stamp = None, stamp

    @property
    def keys(self) -> list[ApiKey]:
        return [k for _, k in self._hashes]

    def authenticate(self, presented: str) -> ApiKey | None:
        """The key ``presented`` is, or None. Raises ConfigError while the file is unusable."""
        self.reload()
        if self._error is not None:
            raise self._error
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
        found = None
        for stored, key in self._hashes:
            if hmac.compare_digest(digest, stored):  # no early exit: every key costs the same
                found = key
        return found
