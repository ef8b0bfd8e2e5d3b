"""Building source distributions into wheels — only with ``--allow-sdist``, never on the host.

Building an sdist runs its build backend and its ``setup.py``: arbitrary code. It happens in a
throwaway container of the agent image with the sandbox's hardened settings (no network, no
capabilities, uid 1000, read-only root, size-capped /tmp): the sdist, wheels of its build
requirements (resolved and hash-checked on the host like any other wheel) and uv go in; uv
builds offline from those files only; the wheel comes out, is hashed, and is cached under the
sdist's sha256 so the same sdist is built once.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillctl.env.declare import Declarations, Declared
from skillctl.env.files import Wanted, ensure_files
from skillctl.env.resolve import PackageFile, Resolution, resolve, uv_binary
from skillctl.env.target import cache_dir
from skillctl.errors import EnvError

Progress = Callable[[str], None]
# PEP 517: a project without [build-system] is built with setuptools.
_DEFAULT_BUILD_REQUIRES = ["setuptools>=40.8.0"]
_BUILD_TIMEOUT_S = 900.0


def build_requires(sdist: Path) -> list[str]:
    """``build-system.requires`` from the sdist's pyproject.toml (read, never executed)."""
    try:
        with tarfile.open(sdist, "r:*") as tar:
            for member in tar:
                parts = member.name.split("/")
                if len(parts) == 2 and parts[1] == "pyproject.toml" and member.isfile():
                    handle = tar.extractfile(member)
                    doc = tomllib.loads(handle.read().decode("utf-8")) if handle else {}
                    requires = (doc.get("build-system") or {}).get("requires")
                    return list(requires) if isinstance(requires, list) else _DEFAULT_BUILD_REQUIRES
    except (tarfile.TarError, tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise EnvError(f"{sdist.name}: cannot read its pyproject.toml ({exc})") from None
    return _DEFAULT_BUILD_REQUIRES


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith("/uv") else 0o644
            info.uid = info.gid = 1000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _build_one(sdist: PackageFile, path: Path, resolution: Resolution, client: Any, base_image: str,
               say: Progress) -> PackageFile:
    out_dir = cache_dir() / "env" / "built" / sdist.sha256
    built = sorted(out_dir.glob("*.whl")) if out_dir.is_dir() else []
    if not built:
        requires = build_requires(path)
        say(f"building {sdist.filename} in a throwaway container (build requirements: {', '.join(requires)})")
        decl = Declarations(tuple(Declared(r, sdist.name, "build-system.requires") for r in requires))
        build_env = resolve(decl, resolution.target, index=resolution.index_url, progress=say)
        deps = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in build_env.files], progress=say)
        files = {"build/uv": Path(uv_binary()).read_bytes(), f"build/{sdist.filename}": path.read_bytes()}
        files.update({f"build/wheels/{p.name}": p.read_bytes() for p in deps})
        from skillctl.sandbox import open_sandbox

        with open_sandbox("docker", image=base_image, client=client, tmp_size="2g") as box:
            box.put_archive("/tmp", _tar(files), user="1000:1000")
            result = box.exec(
                "cd /tmp/build && ./uv build --no-config --color never --offline --no-index --find-links wheels "
                f"--python /usr/bin/python3 --wheel --out-dir out {sdist.filename}",
                timeout_s=_BUILD_TIMEOUT_S, env={"UV_CACHE_DIR": "/tmp/build/cache", "HOME": "/tmp/build"},
            )
            if not result.ok:
                tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
                raise EnvError(f"building {sdist.filename} failed in its container: {' | '.join(tail)}")
            archive = box.get_archive("/tmp/build/out")
        out_dir.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar:
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and name.endswith(".whl") and "/" not in name and not name.startswith("."):
                    handle = tar.extractfile(member)
                    if handle is not None:
                        tmp = out_dir / f".{name}.{os.getpid()}"
                        tmp.write_bytes(handle.read())
                        os.replace(tmp, out_dir / name)
        built = sorted(out_dir.glob("*.whl"))
        if len(built) != 1:
            raise EnvError(f"building {sdist.filename} produced {len(built)} wheels; expected one")
    wheel = built[0]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    # The built wheel enters the verified cache under its own hash; "url" records its origin.
    Path(cache_dir() / "env" / "files" / digest).mkdir(parents=True, exist_ok=True)
    target = cache_dir() / "env" / "files" / digest / wheel.name
    if not target.exists():
        target.write_bytes(wheel.read_bytes())
    return PackageFile(sdist.name, sdist.version, wheel.name, f"built-from:sha256:{sdist.sha256}", digest,
                       wheel.stat().st_size, "wheel")


def build_sdists(resolution: Resolution, client: Any, base_image: str, *, progress: Progress | None = None) -> list[PackageFile]:
    """Every file of ``resolution`` as a wheel: sdists are fetched (hash-checked) and built."""
    say = progress or (lambda _line: None)
    sdists = list(resolution.sdists)
    paths = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in sdists], progress=say)
    built = {f.name: _build_one(f, p, resolution, client, base_image, say) for f, p in zip(sdists, paths)}
    return [built.get(f.name, f) if f.kind == "sdist" else f for f in resolution.files]
