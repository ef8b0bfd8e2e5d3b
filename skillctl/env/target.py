"""The environment's target: the agent image's Python, libc and architecture.

Packages are resolved on the host for the container, not for the host's own Python (the host may
run another Python version, or a pyenv build). The image is asked once — a throwaway container
with no network prints the version of its ``/usr/bin/python3`` (the interpreter environments are
built on), glibc version, machine and Debian architecture — and the answer is cached under the
image id (an image id is a digest of its content, so the answer can never go stale).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.markers import default_environment

from skillctl.errors import EnvError
from skillctl.sandbox.programs import DPKG, PYTHON3, SH

_PROBE = (
    "import json, os, platform, sys, sysconfig; "
    "print(json.dumps({'python': platform.python_version(), 'machine': platform.machine(), "
    "'libc': os.confstr('CS_GNU_LIBC_VERSION') or '', 'implementation': sys.implementation.name, "
    "'soabi': sysconfig.get_config_var('SOABI') or ''}))"
)


def cache_dir() -> Path:
    """Where downloads, resolutions and probes are kept: ``$SKILLCTL_CACHE_DIR`` or the user cache."""
    override = os.environ.get("SKILLCTL_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("skillctl"))


@dataclass(frozen=True)
class Target:
    """What a wheel must fit: ``python`` (x.y.z), ``machine`` (x86_64), ``libc`` ("glibc 2.36"),
    ``arch`` (Debian's name: amd64)."""

    python: str
    machine: str
    libc: str
    arch: str
    implementation: str = "cpython"

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    @property
    def glibc(self) -> tuple[int, int]:
        name, _, version = self.libc.partition(" ")
        if name != "glibc" or not version:
            raise EnvError(f"the agent image's C library is '{self.libc}', not glibc; only glibc images are supported")
        major, minor = version.split(".")[:2]
        return int(major), int(minor)

    @property
    def uv_platform(self) -> str:
        """``--python-platform`` for uv: the manylinux level the image's glibc allows."""
        major, minor = self.glibc
        return f"{self.machine}-manylinux_{major}_{minor}"

    def marker_environment(self) -> dict[str, str]:
        """PEP 508 marker values inside the container (for showing what applies)."""
        env = dict(default_environment())
        env.update(
            python_version=self.python_minor,
            python_full_version=self.python,
            platform_machine=self.machine,
            sys_platform="linux",
            platform_system="Linux",
            os_name="posix",
            implementation_name=self.implementation,
            platform_python_implementation="CPython" if self.implementation == "cpython" else self.implementation,
        )
        return env

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Any) -> "Target":
        try:
            return cls(str(doc["python"]), str(doc["machine"]), str(doc["libc"]), str(doc["arch"]),
                       str(doc.get("implementation", "cpython")))
        except (KeyError, TypeError) as exc:
            raise EnvError(f"environment target is malformed ({exc!r})") from None


def inspect_image(client: Any, image: str) -> Any:
    """``image`` as the engine has it (``docker.models.images.Image``), or one ``EnvError`` line."""
    try:
        return client.images.get(image)
    except Exception as exc:
        raise EnvError(f"cannot inspect image {image}: {exc}") from None


def probe_image(client: Any, image: str, *, image_id: str | None = None) -> Target:
    """Ask ``image`` for its Python and platform (cached by image id). ``image_id``: its id, when
    the caller has inspected it already (each inspect is a round trip on every run's start)."""
    image_id = image_id or inspect_image(client, image).id
    path = cache_dir() / "env" / "targets" / f"{image_id.replace(':', '-')}.json"
    try:
        return Target.from_dict(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, EnvError):
        pass
    script = f"{PYTHON3} -I -c \"{_PROBE}\" && {DPKG} --print-architecture"
    try:
        out = client.containers.run(
            image, entrypoint=[SH, "-c", script], command=[], network_mode="none", remove=True,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], user="1000:1000",
            labels={"org.skillctl.env-probe": "1"},
            stdout=True, stderr=True,
        )
    except Exception as exc:
        raise EnvError(f"cannot ask image {image} for its Python version ({str(exc).splitlines()[0]})") from None
    lines = out.decode("utf-8", errors="replace").strip().splitlines()
    try:
        info = json.loads(lines[0])
        target = Target(info["python"], info["machine"], info["libc"], lines[1].strip(), info["implementation"])
    except (IndexError, ValueError, KeyError) as exc:
        raise EnvError(f"image {image} did not report its Python and architecture ({exc!r}): {lines[:2]}") from None
    if target.implementation != "cpython":
        raise EnvError(f"image {image} runs {target.implementation}; environments are resolved for CPython only")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(target.to_dict(), sort_keys=True), "utf-8")
    os.replace(tmp, path)
    return target
