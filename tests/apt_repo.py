"""A real, signed Debian repository on loopback, made from tiny packages the tests describe.

Packages are built with ``dpkg-deb --build`` from package trees, indexed with
``apt-ftparchive`` (``Packages``, ``Contents-ARCH.gz``, ``Release`` with SHA256 sums), and the ``Release`` is signed
(``InRelease`` and ``Release.gpg``) with a throwaway key made in a temporary ``GNUPGHOME``. apt
then resolves against it exactly as against a Debian mirror — signature, index hashes, per-file
SHA256 — over HTTP on 127.0.0.1. Tests play an attacker by changing files after signing, or by
publishing unsigned or signed with another key.

Needs ``dpkg-deb`` (dpkg), ``apt-ftparchive`` (apt-utils) and ``gpg`` (gnupg); scripts/setup.sh --tests
installs them.
"""

from __future__ import annotations

import functools
import gzip
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# command -> the Debian package that has it
TOOLS = {"dpkg-deb": "dpkg", "apt-ftparchive": "apt-utils", "gpg": "gnupg", "gpgconf": "gnupg"}


class SigningKey:
    """A throwaway OpenPGP key in its own GNUPGHOME; ``keyring`` is its public key for apt."""

    def __init__(self, name: str) -> None:
        # Short path: gpg-agent's socket lives in the home and socket paths are capped at 108 bytes.
        self.home = Path(tempfile.mkdtemp(prefix="skgpg-", dir="/tmp"))
        self.home.chmod(0o700)
        self._gpg("--quick-generate-key", f"{name} <{name}@example.invalid>", "ed25519", "sign", "never")
        self.keyring = self.home / "keyring.gpg"
        self.keyring.write_bytes(self._gpg("--export").stdout)

    def _gpg(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["gpg", "--homedir", str(self.home), "--batch", "--yes", "--pinentry-mode", "loopback",
                               "--passphrase", "", *args], capture_output=True, check=True)

    def sign(self, release: Path) -> None:
        self._gpg("--clearsign", "--output", str(release.with_name("InRelease")), str(release))
        self._gpg("--armor", "--detach-sign", "--output", str(release.with_name("Release.gpg")), str(release))

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


@dataclass
class DebPackage:
    name: str
    version: str
    depends: str = ""
    files: dict[str, tuple[str | bytes, int]] = field(default_factory=dict)  # path -> (text or bytes, mode)
    folders: dict[str, int] = field(default_factory=dict)  # path -> mode


class AptRepo:
    """``root`` holds ``pool/`` and ``dists/SUITE/``; ``url`` serves it once entered."""

    def __init__(self, root: Path, suite: str, arch: str) -> None:
        self.root = root
        self.suite = suite
        self.arch = arch
        self.debs: dict[str, Path] = {}  # package name -> .deb in the pool
        self.root.mkdir(parents=True, exist_ok=True)
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/debian"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, pkg: DebPackage, workdir: Path) -> Path:
        tree = workdir / f"{pkg.name}-tree"
        (tree / "DEBIAN").mkdir(parents=True)
        control = (f"Package: {pkg.name}\nVersion: {pkg.version}\nArchitecture: all\n"
                   f"Maintainer: skillctl tests <tests@example.invalid>\n")
        if pkg.depends:
            control += f"Depends: {pkg.depends}\n"
        control += f"Description: {pkg.name}, made by the skillctl tests\n"
        (tree / "DEBIAN" / "control").write_text(control)
        for rel, (text, mode) in pkg.files.items():
            path = tree / rel.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            path.chmod(mode)
        for rel, mode in pkg.folders.items():
            path = tree / rel.lstrip("/")
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(mode)
        pool = self.root / "debian" / "pool" / "main" / pkg.name[0] / pkg.name
        pool.mkdir(parents=True, exist_ok=True)
        deb = pool / f"{pkg.name}_{pkg.version}_all.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)],
                       capture_output=True, check=True)
        self.debs[pkg.name] = deb
        return deb

    @property
    def dist(self) -> Path:
        return self.root / "debian" / "dists" / self.suite

    def publish(self, key: SigningKey | None) -> None:
        """Write Packages and Release for the pool; sign the Release with ``key`` (None: unsigned)."""
        top = self.root / "debian"
        binary = self.dist / "main" / f"binary-{self.arch}"
        binary.mkdir(parents=True, exist_ok=True)
        packages = subprocess.run(["apt-ftparchive", "packages", "pool/main"], cwd=top, capture_output=True,
                                  check=True).stdout
        (binary / "Packages").write_bytes(packages)
        # The Contents index (every file of every package, as Debian publishes it), listed and
        # hashed in the Release like the package index.
        contents = subprocess.run(["apt-ftparchive", "contents", "pool/main"], cwd=top, capture_output=True,
                                  check=True).stdout
        (self.dist / "main" / f"Contents-{self.arch}.gz").write_bytes(gzip.compress(contents, mtime=0))
        for stale in ("Release", "InRelease", "Release.gpg"):
            (self.dist / stale).unlink(missing_ok=True)
        release = subprocess.run(
            ["apt-ftparchive", "-o", f"APT::FTPArchive::Release::Suite={self.suite}",
             "-o", f"APT::FTPArchive::Release::Codename={self.suite}",
             "-o", f"APT::FTPArchive::Release::Architectures={self.arch}",
             "-o", "APT::FTPArchive::Release::Components=main",
             "-o", "APT::FTPArchive::Release::Origin=skillctl-tests", "release", "."],
            cwd=self.dist, capture_output=True, check=True).stdout
        (self.dist / "Release").write_bytes(release)
        if key is not None:
            key.sign(self.dist / "Release")

    def __enter__(self) -> "AptRepo":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass
