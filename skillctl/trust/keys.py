"""Ed25519 signing keys as files, and their key ids.

    NAME.key   private key, PKCS#8 PEM, unencrypted, mode 0600; refused when group or others
               may read it (as ssh refuses such a key), never overwritten
    NAME.pub   public key, SubjectPublicKeyInfo PEM — what ``openssl pkey -pubout`` writes;
               this is the file a trust policy lists and ``verify --key`` takes

Key id: ``ed25519:`` and the hex SHA-256 of the public key's DER SubjectPublicKeyInfo, i.e.
``openssl pkey -pubin -in NAME.pub -outform DER | sha256sum``. It depends on the key alone (not
the file's spelling or name), so the same key has the same id everywhere. In a DSSE envelope it
is only a hint for choosing the key: verification tries every trusted key.

Only Ed25519: deterministic signatures (the same statement signed twice gives the same bytes),
no parameters to get wrong, and 64-byte signatures whose length alone catches truncation.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from skillctl.errors import TrustError

KEYID_PREFIX = "ed25519:"
PRIVATE_SUFFIX = ".key"
PUBLIC_SUFFIX = ".pub"
# A key file is a few hundred bytes; anything far larger is not a key and is not read whole.
MAX_KEY_FILE = 16 * 1024


def key_id(public: Ed25519PublicKey) -> str:
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return KEYID_PREFIX + hashlib.sha256(der).hexdigest()


def short_id(keyid: str) -> str:
    """How messages name a key: enough hex to tell keys apart at a glance."""
    return keyid[: len(KEYID_PREFIX) + 16] if keyid.startswith(KEYID_PREFIX) else keyid[:24]


@dataclass(frozen=True)
class PublicKey:
    """A trusted (or to-be-tried) public key and where it came from."""

    keyid: str
    key: Ed25519PublicKey
    source: str  # the file it was read from, as the user wrote it


@dataclass(frozen=True)
class SigningKey:
    keyid: str
    key: Ed25519PrivateKey
    source: str

    @property
    def public(self) -> PublicKey:
        return PublicKey(self.keyid, self.key.public_key(), self.source)


@dataclass(frozen=True)
class GeneratedKey:
    private_path: Path
    public_path: Path
    keyid: str


def key_paths(name: str | Path) -> tuple[Path, Path]:
    """``NAME.key`` and ``NAME.pub`` for ``NAME`` (a trailing ``.key`` or ``.pub`` is dropped)."""
    base = Path(name)
    if base.suffix in (PRIVATE_SUFFIX, PUBLIC_SUFFIX):
        base = base.with_suffix("")
    if not base.name:
        raise TrustError(f"'{name}' names no key; write a name such as keys/team")
    return base.with_name(base.name + PRIVATE_SUFFIX), base.with_name(base.name + PUBLIC_SUFFIX)


def generate_key(name: str | Path) -> GeneratedKey:
    """Write a new key pair ``NAME.key`` (0600) and ``NAME.pub``; refuse if either exists."""
    private_path, public_path = key_paths(name)
    if not private_path.name[: -len(PRIVATE_SUFFIX)]:
        raise TrustError(f"'{name}' names no key; write a name such as keys/team")
    for path in (private_path, public_path):
        if path.exists() or path.is_symlink():
            raise TrustError(f"{path} already exists; refusing to overwrite a key — choose another NAME or move it away")
    try:
        private_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrustError(f"cannot create folder {private_path.parent}: {exc.strerror or exc}") from None
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    _write_new(private_path, pem, 0o600)
    try:
        _write_new(public_path, pub, 0o644)
    except BaseException:
        private_path.unlink()  # ours, made a moment ago: a lone private key is of no use
        raise
    return GeneratedKey(private_path, public_path, key_id(key.public_key()))


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start (never briefly readable by others)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    except FileExistsError:
        raise TrustError(f"{path} already exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise TrustError(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(path, mode)  # the umask may have narrowed it; 0644 for the public half is intended
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _read_key_file(path: Path, what: str) -> bytes:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise TrustError(f"{what} {path} is not a regular file")
        if st.st_size > MAX_KEY_FILE:
            raise TrustError(f"{what} {path} is {st.st_size} bytes; a key file is under 1 KiB — is this the right file?")
        return path.read_bytes()
    except FileNotFoundError:
        raise TrustError(f"{what} {path} not found; create a key pair with: skillctl key generate NAME") from None
    except OSError as exc:
        raise TrustError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _kind(key: object) -> str:
    """A person's name for a key type that is not Ed25519."""
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, rsa, x448, x25519

    kinds = {
        "RSA": (rsa.RSAPrivateKey, rsa.RSAPublicKey),
        "ECDSA": (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey),
        "DSA": (dsa.DSAPrivateKey, dsa.DSAPublicKey),
        "Ed448": (ed448.Ed448PrivateKey, ed448.Ed448PublicKey),
        "X25519": (x25519.X25519PrivateKey, x25519.X25519PublicKey),
        "X448": (x448.X448PrivateKey, x448.X448PublicKey),
    }
    return next((name for name, types in kinds.items() if isinstance(key, types)), type(key).__name__)


def load_signing_key(path: str | Path) -> SigningKey:
    """The private key at ``path``, refused unless it is an Ed25519 key only its owner can read."""
    p = Path(path)
    data = _read_key_file(p, "private key")
    mode = p.stat().st_mode & 0o777
    if mode & 0o077:
        raise TrustError(
            f"private key {p} is readable by others (mode {mode:04o}); restrict it with: chmod 600 {p}"
        )
    if b"PUBLIC KEY" in data and b"PRIVATE KEY" not in data:
        raise TrustError(f"{p} is a public key; sign with the private half (NAME.key)")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise TrustError(f"private key {p} is encrypted; skillctl reads unencrypted PKCS#8 keys (protect it with mode 0600)") from None
    except Exception:  # noqa: BLE001 - ValueError / UnsupportedAlgorithm: either way not a usable key
        raise TrustError(f"{p} is not a PEM private key; create one with: skillctl key generate NAME") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise TrustError(f"{p} is an {_kind(key)} key; skillctl signs with Ed25519 keys only (skillctl key generate NAME)")
    return SigningKey(key_id(key.public_key()), key, str(path))


def load_public_key(path: str | Path) -> PublicKey:
    """The Ed25519 public key at ``path`` (PEM SubjectPublicKeyInfo)."""
    p = Path(path)
    data = _read_key_file(p, "public key")
    if b"PRIVATE KEY" in data:
        raise TrustError(f"{p} holds a private key; give the public half (NAME.pub) — and keep the private one out of the project")
    try:
        key = serialization.load_pem_public_key(data)
    except Exception:  # noqa: BLE001 - ValueError / UnsupportedAlgorithm: either way not a usable key
        hint = " (an OpenSSH key? convert it: ssh-keygen -e -m PKCS8 -f FILE)" if data.startswith(b"ssh-") else ""
        raise TrustError(f"{p} is not a PEM public key{hint}; create a key pair with: skillctl key generate NAME") from None
    if not isinstance(key, Ed25519PublicKey):
        raise TrustError(f"{p} is an {_kind(key)} key; skillctl verifies Ed25519 signatures only (skillctl key generate NAME)")
    return PublicKey(key_id(key), key, str(path))
