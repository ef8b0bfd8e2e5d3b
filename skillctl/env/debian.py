"""Debian packages for an environment, resolved on the host with apt, from the configured mirror.

apt runs with a private state (its own sources, lists and cache under the skillctl cache) whose
``dpkg`` status is the **agent image's** (copied out of the image once): so the packages it
prints are exactly the missing ones — the named packages plus every dependency the image lacks —
each with its URL, size and SHA256 from the mirror's signed index. ``--no-install-recommends``
keeps the set small. Nothing is installed on the host; the .debs are downloaded into the
verified cache and installed into the environment image by ``dpkg -i`` during its offline build.

The mirror and suite are the agent image's (``SKILLCTL_DEBIAN_MIRROR``/``find_mirror``,
``SKILLCTL_DEBIAN_SUITE``); the signing keyring is Debian's (``SKILLCTL_DEBIAN_KEYRING`` to use
another, e.g. a private mirror's).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from skillctl.env.target import Target, cache_dir
from skillctl.errors import EnvError

Progress = Callable[[str], None]
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# apt's "unmet dependencies" lines: " pkg : Depends: other but it is not installable" and the
# indented continuation lines of the same package.
_UNMET_LINE = re.compile(r"^\s+(\S+ : )?\s*(Pre-Depends|Depends|Conflicts|Breaks): ")
_URI_LINE = re.compile(r"^'(?P<url>[^']+)' (?P<file>\S+) (?P<size>\d+) SHA256:(?P<sha>[0-9a-f]{64})$")


@dataclass(frozen=True)
class DebianPackage:
    package: str
    version: str
    arch: str
    filename: str
    url: str
    sha256: str
    size: int

    @property
    def pin(self) -> str:
        return f"{self.package}={self.version}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "DebianPackage":
        sha = str(doc["sha256"])
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise ValueError(f"sha256 of {doc.get('filename')} is not 64 hex digits")
        return cls(str(doc["package"]), str(doc["version"]), str(doc["arch"]), str(doc["filename"]),
                   str(doc["url"]), sha, int(doc["size"]))


def mirror_and_suite() -> tuple[str, str]:
    from skillctl.sandbox.image import debian_suite, find_mirror

    suite = debian_suite()
    return find_mirror(suite).rstrip("/"), suite


def image_dpkg_status(client: Any, image: str) -> bytes:
    """``/var/lib/dpkg/status`` of ``image`` (cached by image id)."""
    image_id = client.images.get(image).id
    path = cache_dir() / "env" / "targets" / f"{image_id.replace(':', '-')}.dpkg-status"
    if path.is_file():
        return path.read_bytes()
    container = client.containers.create(image, command=["10"], network_disabled=True,
                                         labels={"org.skillctl.env-probe": "1"})
    try:
        stream, _ = container.get_archive("/var/lib/dpkg/status")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile("status")
            data = member.read() if member else b""
    finally:
        container.remove(force=True)
    if not data:
        raise EnvError(f"image {image} has no dpkg status; Debian packages need a Debian-based agent image")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return data


def _apt(root: Path, status: Path, arch: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    options = {
        # Only this configuration: the host's apt.conf.d (AppStream, proxies for other mirrors…)
        # must not change what is resolved.
        "Dir::Etc::Parts": str(root / "apt.conf.d"),
        "Dir::Etc::SourceList": str(root / "sources.list"),
        "Dir::Etc::SourceParts": str(root / "sources.list.d"),
        "Dir::Etc::Preferences": str(root / "preferences"),
        "Dir::Etc::PreferencesParts": str(root / "preferences.d"),
        "Dir::State::Lists": str(root / "lists"),
        "Dir::Cache": str(root / "cache"),
        "Dir::State::status": str(status),
        "APT::Architecture": arch,
        "APT::Architectures": arch,
        "APT::Install-Recommends": "false",
        "APT::Sandbox::User": "root",
        "Debug::NoLocking": "true",
        "Acquire::Languages": "none",
        "Acquire::ForceHash": "SHA256",  # --print-uris shows the strongest hash, not MD5
    }
    cmd = ["apt-get", "-q"]
    for key, value in options.items():
        cmd += ["-o", f"{key}={value}"]
    try:
        return subprocess.run(cmd + list(args), capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise EnvError("apt-get is not installed; Debian packages for environments are resolved with it on the host") from None


def _parse_uris(text: str, arch: str) -> list[DebianPackage]:
    out = []
    for line in text.splitlines():
        m = _URI_LINE.match(line.strip())
        if not m:
            if line.startswith("'"):
                raise EnvError(f"apt printed a download without a SHA256 ({line.strip()[:120]}); refusing to use it")
            continue
        filename = m.group("file")
        parts = unquote(filename)[: -len(".deb")].split("_")
        if len(parts) != 3:
            raise EnvError(f"apt printed an unexpected file name {filename!r}")
        package, version, file_arch = parts
        out.append(DebianPackage(package, version, file_arch or arch, filename, m.group("url"), m.group("sha"),
                                 int(m.group("size"))))
    return sorted(out, key=lambda p: p.package)


def apt_root(mirror: str, suite: str, arch: str, keyring: str) -> Path:
    """The private apt state for this mirror, suite, architecture and keyring (made when missing)."""
    root = cache_dir() / "env" / "apt" / hashlib.sha256(f"{mirror} {suite} {arch} {keyring}".encode()).hexdigest()[:16]
    for sub in ("lists/partial", "cache/archives/partial", "sources.list.d", "preferences.d", "apt.conf.d"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "sources.list").write_text(f"deb [signed-by={keyring}] {mirror} {suite} main\n", "utf-8")
    return root


def update_lists(root: Path, status: Path, arch: str, mirror: str, suite: str) -> None:
    """``apt-get update`` in ``root``: afterwards its ``lists/`` hold the mirror's Release, checked
    against the keyring, and the indexes it lists, checked against it; any failure is one line."""
    update = _apt(root, status, arch, ["update"])
    if update.returncode != 0 or "W: GPG error" in update.stderr or "NO_PUBKEY" in update.stderr:
        # Every warning and error: the first names the cause (not signed, NO_PUBKEY, a hash
        # mismatch), the last is apt's summary.
        said = [" ".join(ln.split()) for ln in update.stderr.splitlines() if ln.startswith(("E:", "W:"))]
        detail = "; ".join(said)[:600] or (update.stderr.strip().splitlines() or ["no message"])[-1]
        raise EnvError(f"apt could not read the Debian mirror {mirror} ({suite}): {detail}")


def verified_lists(arch: str) -> tuple[Path, str, str]:
    """(apt's ``lists/`` folder just updated from the mirror, mirror, suite): the Release there
    is the one apt verified against the keyring (apt keeps none it could not verify)."""
    mirror, suite = mirror_and_suite()
    keyring = os.environ.get("SKILLCTL_DEBIAN_KEYRING", DEFAULT_KEYRING)
    root = apt_root(mirror, suite, arch, keyring)
    status = root / "status"
    if not status.is_file():
        status.write_bytes(b"")
    update_lists(root, status, arch, mirror, suite)
    return root / "lists", mirror, suite


def resolve_debian(
    names: Sequence[str],
    target: Target,
    *,
    client: Any,
    base_image: str,
    refresh: bool = False,
    progress: Progress | None = None,
) -> list[DebianPackage]:
    """The .debs (named packages and the dependencies the image lacks) with their sha256."""
    say = progress or (lambda _line: None)
    mirror, suite = mirror_and_suite()
    keyring = os.environ.get("SKILLCTL_DEBIAN_KEYRING", DEFAULT_KEYRING)
    status_bytes = image_dpkg_status(client, base_image)
    key_doc = {"names": sorted(names), "mirror": mirror, "suite": suite, "arch": target.arch, "keyring": keyring,
               "status": hashlib.sha256(status_bytes).hexdigest()}
    key = hashlib.sha256(json.dumps(key_doc, sort_keys=True).encode()).hexdigest()
    cached = cache_dir() / "env" / "resolutions" / f"{key}.debian.json"
    if cached.is_file() and not refresh:
        say(f"environment: Debian packages resolved before (cache {key[:12]})")
        return [DebianPackage.from_dict(d) for d in json.loads(cached.read_text("utf-8"))]
    root = apt_root(mirror, suite, target.arch, keyring)
    status = root / "status"
    status.write_bytes(status_bytes)
    say(f"resolving Debian package(s) {', '.join(names)} from {mirror} {suite}")
    update_lists(root, status, target.arch, mirror, suite)
    plan = _apt(root, status, target.arch, ["install", "--print-uris", "-qq", "-y", *names])
    if plan.returncode != 0:
        # At quiet level 2 apt leaves out its explanation (which dependency cannot be met): ask
        # again, simulating, at level 1.
        told = _apt(root, status, target.arch, ["-o", "quiet=1", "install", "--simulate", *names])
        unmet = [" ".join(ln.split()) for ln in told.stdout.splitlines() if _UNMET_LINE.match(ln)]
        errors = [ln.strip() for ln in plan.stderr.splitlines() if ln.startswith("E:")] or [plan.stderr.strip()]
        raise EnvError(f"Debian package(s) {', '.join(names)} cannot be installed on the agent image: "
                       f"{'; '.join(unmet + errors)}")
    packages = _parse_uris(plan.stdout, target.arch)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([p.to_dict() for p in packages], indent=1), "utf-8")
    os.replace(tmp, cached)
    for p in packages:
        say(f"  {p.pin} {p.filename}")
    return packages
