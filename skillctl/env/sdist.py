"""Source distributions — only with ``--allow-sdist``, and never built or run on the host.

Building an sdist runs its build backend and its ``setup.py``: arbitrary code. Learning an
sdist's dependencies can mean building it too (dynamic metadata). So resolution never lets uv
touch an sdist:

1. uv resolves on the host with building disabled (``--no-build``: uv runs no package code and
   does not even consider an sdist); when it reports a package without a usable wheel,
2. that package's sdist is found on the index (``simple``) and downloaded, sha256-checked;
3. it is built into a wheel in a throwaway container of the agent image with the sandbox's
   hardened settings (no network, no capabilities, uid 1000, read-only root, size-capped
   /tmp: ``SKILLCTL_SDIST_SPACE``, default 2g): the sdist, wheels of its build requirements
   (resolved and hash-checked like any other wheel) and uv go in — as a tar written to disk and
   streamed to the engine, never held in memory whole —, uv builds offline from those files
   only, the wheel comes out; a build that runs out of that space says which setting to raise;
4. uv resolves again, offered the built wheels through ``--find-links`` — a wheel's metadata is
   static, so reading it runs nothing — and the loop repeats while a built wheel needs another
   package that has only an sdist.

The lock records the sdist (URL, sha256), not the wheel built from it: that wheel is a product
of this machine; another machine rebuilds it, in the same kind of container, from the same
hash-checked sdist. Built wheels are cached per (sdist sha256, target) with their sha256 beside
them, and re-hashed at each use.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Callable, Sequence
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from skillctl.env.declare import Declarations, Declared
from skillctl.env.files import Wanted, ensure_files, hash_file
from skillctl.env.resolve import Indexes, PackageFile, authenticated, resolve, run_uv, target_tags, uv_binary
from skillctl.env.simple import choose_sdist
from skillctl.env.target import Target, cache_dir
from skillctl.errors import EnvError, EnvIntegrityError

Progress = Callable[[str], None]
# PEP 517: a project without [build-system] is built with setuptools.
_DEFAULT_BUILD_REQUIRES = ["setuptools>=40.8.0"]
_BUILD_TIMEOUT_S = 900.0
_MAX_PYPROJECT_BYTES = 1 << 20
# A chain of packages each needing the next one's sdist this long is not a skill environment.
MAX_BUILDS = 16
# Zip timestamps of the built wheel (setuptools, flit, hatch honour it): rebuilding the same sdist
# in the same image then tends to give the same bytes. 1980-01-01, the earliest a zip can hold.
_SOURCE_DATE_EPOCH = "315532800"
# uv's report of a package it could not use because building is disabled.
_NEEDS_WHEEL = re.compile(r"Wheels are required for `([^`]+)` because building from source is disabled")
_PINNED = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!+_-]+) has no usable wheels")


def build_requires(sdist: Path) -> list[str]:
    """``build-system.requires`` from the sdist's pyproject.toml (read, never executed)."""
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                if len(parts) == 2 and parts[1] == "pyproject.toml" and member.isfile():
                    if member.size > _MAX_PYPROJECT_BYTES:
                        raise EnvError(f"{sdist.name}: its pyproject.toml is over {_MAX_PYPROJECT_BYTES} bytes")
                    handle = tar.extractfile(member)
                    doc = tomllib.loads(handle.read().decode("utf-8")) if handle else {}
                    requires = (doc.get("build-system") or {}).get("requires")
                    if isinstance(requires, list) and all(isinstance(r, str) for r in requires):
                        return list(requires)
                    return _DEFAULT_BUILD_REQUIRES
    except (tarfile.TarError, tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise EnvError(f"{sdist.name}: cannot read its pyproject.toml ({exc})") from None
    return _DEFAULT_BUILD_REQUIRES


DEFAULT_SPACE = "2g"
_SPACE = re.compile(r"^[1-9][0-9]*[kmg]$")


def build_space() -> str:
    """The size of a build container's /tmp: ``SKILLCTL_SDIST_SPACE`` (e.g. 4g, 512m), else 2g."""
    value = os.environ.get("SKILLCTL_SDIST_SPACE", "").strip().lower() or DEFAULT_SPACE
    if not _SPACE.match(value):
        raise EnvError(f"SKILLCTL_SDIST_SPACE={value!r} is not a size; write e.g. 4g or 512m (default {DEFAULT_SPACE})")
    return value


def _out_of_space(sdist: PackageFile, space: str) -> EnvError:
    return EnvError(f"building {sdist.filename} ran out of space: its container's /tmp holds {space} (the sdist, its "
                    "build requirements and what the build writes); set SKILLCTL_SDIST_SPACE to more (e.g. "
                    f"SKILLCTL_SDIST_SPACE={_double(space)}) and retry")


def _double(space: str) -> str:
    return f"{int(space[:-1]) * 2}{space[-1]}"


def write_tar(dest: Any, files: dict[str, Path]) -> None:
    """A tar of ``files`` (archive name -> file on disk) into the open file ``dest``, read in
    chunks: owned by 1000, folders listed so the daemon does not make them root's."""
    with tarfile.open(fileobj=dest, mode="w", format=tarfile.PAX_FORMAT) as tar:
        folders = sorted({str(Path(name).parent) for name in files} - {"."})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, 1000, 1000
            tar.addfile(info)
        for name, path in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = path.stat().st_size
            info.mode = 0o755 if name.endswith("/uv") else 0o644
            info.uid = info.gid = 1000
            with open(path, "rb") as fh:
                tar.addfile(info, fh)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _target_key(target: Target) -> str:
    return _hash(json.dumps(target.to_dict(), sort_keys=True).encode())[:16]


class SdistBuilder:
    """Builds source distributions into wheels in throwaway containers of ``base_image``."""

    def __init__(self, client: Any, base_image: str, target: Target, index: str | Indexes, *,
                 progress: Progress | None = None) -> None:
        self.client = client
        self.base_image = base_image
        self.target = target
        self.index = index
        self.say = progress or (lambda _line: None)

    def _folder(self, sdist: PackageFile) -> Path:
        return cache_dir() / "env" / "built" / sdist.sha256 / _target_key(self.target)

    def cached(self, sdist: PackageFile) -> tuple[Path, str] | None:
        """The wheel built from ``sdist`` before (re-hashed against its recorded sha256)."""
        folder = self._folder(sdist)
        wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
        if len(wheels) != 1:
            return None
        wheel = wheels[0]
        recorded = (folder / "sha256").read_text("utf-8").strip() if (folder / "sha256").is_file() else ""
        actual = hash_file(wheel)  # read in chunks: a built wheel can be large
        if actual != recorded:
            raise EnvIntegrityError(
                f"the wheel built from {sdist.filename} ({wheel}) has sha256 {actual[:16]}…, not the {recorded[:16]}… "
                f"recorded when it was built; delete {folder} to build it again"
            )
        return wheel, actual

    def wheel_for(self, sdist: PackageFile) -> tuple[Path, str]:
        """(wheel, sha256) built from ``sdist``: from the cache, else downloaded (hash-checked)
        and built in a container now."""
        hit = self.cached(sdist)
        if hit is not None:
            return hit
        try:
            named = parse_sdist_filename(sdist.filename)
        except InvalidSdistFilename:
            named = None
        if named != (sdist.name, Version(sdist.version)):
            raise EnvError(f"{sdist.filename!r} is not the source distribution of {sdist.pin}; refusing to build it")
        (path,) = ensure_files([Wanted(sdist.filename, sdist.url, sdist.sha256, sdist.size)], progress=self.say)
        name, data = self._build(sdist, path)
        # The wheel and its sha256 appear together, by renaming a folder: a concurrent build of
        # the same sdist either wins the rename or finds this one in place.
        folder = self._folder(sdist)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
        (staging / name).write_bytes(data)
        (staging / "sha256").write_text(_hash(data) + "\n", "utf-8")
        try:
            os.rename(staging, folder)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
        hit = self.cached(sdist)
        if hit is None:
            raise EnvError(f"the wheel built from {sdist.filename} is not in {folder}; delete that folder and retry")
        return hit

    def _build(self, sdist: PackageFile, path: Path) -> tuple[str, bytes]:
        requires = build_requires(path)
        self.say(f"building {sdist.filename} in a throwaway container, network off (build requirements: "
                 f"{', '.join(requires)})")
        decl = Declarations(tuple(Declared(r, sdist.name, "build-system.requires") for r in requires))
        build_env = resolve(decl, self.target, index=self.index, progress=self.say)  # wheels only
        deps = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in build_env.files], progress=self.say)
        files = {"build/uv": Path(uv_binary()), f"build/{sdist.filename}": path}
        files.update({f"build/wheels/{p.name}": p for p in deps})
        from skillctl.errors import SandboxError
        from skillctl.sandbox import open_sandbox

        space = build_space()
        # The sandbox's hardened settings; the network is named here so no default elsewhere can
        # ever give a build one.
        with tempfile.TemporaryFile(prefix="skillctl-sdist-", dir=cache_dir()) as tar, \
                open_sandbox("docker", image=self.base_image, client=self.client, network="none", tmp_size=space) as box:
            write_tar(tar, files)
            tar.seek(0)
            try:
                box.put_archive("/tmp", tar)
            except SandboxError as exc:
                if "no space left" in str(exc).lower():
                    raise _out_of_space(sdist, space) from None
                raise
            result = box.exec(
                "cd /tmp/build && ./uv build --no-config --color never --offline --no-index --find-links wheels "
                "--no-python-downloads --python /usr/bin/python3 --wheel --out-dir out -- "
                + shlex.quote(sdist.filename),
                timeout_s=_BUILD_TIMEOUT_S,
                env={"UV_CACHE_DIR": "/tmp/build/cache", "HOME": "/tmp/build", "SOURCE_DATE_EPOCH": _SOURCE_DATE_EPOCH},
            )
            if not result.ok:
                output = result.stdout + "\n" + result.stderr
                if result.outcome_type != "timeout" and "no space left on device" in output.lower():
                    raise _out_of_space(sdist, space)
                reason = "timed out" if result.outcome_type == "timeout" else _build_failure(output)
                raise EnvError(f"building {sdist.filename} failed in its container: {reason}")
            archive = box.get_archive("/tmp/build/out")
        return wheel_from_output(sdist, archive, self.target)


def _build_failure(output: str) -> str:
    """uv's reason on one line: the build's last words before uv's ``error:``, then its causes."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.strip().startswith("hint:")]
    at = next((i for i, ln in enumerate(lines) if ln.startswith("error:")), len(lines))
    picked = lines[max(0, at - 3):at] + [ln for ln in lines[at:] if ln.startswith("cause:")]
    return " | ".join(picked or lines[-3:])[:600] or "no output"


def wheel_from_output(sdist: PackageFile, archive: bytes, target: Target) -> tuple[str, bytes]:
    """The one wheel in a build container's output (a tar): named for this sdist and fitting
    the target. The build ran the sdist's code, so its output is checked like any hostile
    archive: only regular files are read, and only a single .whl is accepted."""
    wheels: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar:
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and name.endswith(".whl"):
                    handle = tar.extractfile(member)
                    if handle is not None:
                        wheels.append((name, handle.read()))
    except (tarfile.TarError, EOFError) as exc:
        raise EnvError(f"building {sdist.filename} gave an unreadable output ({exc})") from None
    if len(wheels) != 1:
        raise EnvError(f"building {sdist.filename} produced {len(wheels)} wheels; expected one")
    name, data = wheels[0]
    try:
        project, version, _, tags = parse_wheel_filename(name)
    except InvalidWheelFilename:
        raise EnvError(f"building {sdist.filename} produced {name!r}, not a wheel file name") from None
    if project != sdist.name or version != Version(sdist.version):
        raise EnvError(f"building {sdist.filename} produced {name}, a wheel of another project or version")
    if not set(tags) & set(target_tags(target)):
        raise EnvError(f"building {sdist.filename} produced {name}, which Python {target.python} on "
                       f"{target.uv_platform} cannot install")
    return name, data


# ------------------------------------------------------------------------------ resolving


def _requires_dist(wheel: Path) -> list[Requirement]:
    """``Requires-Dist`` of a built wheel's METADATA (a static file: nothing runs)."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise EnvError(f"{wheel.name} has {len(names)} .dist-info/METADATA files; expected one")
        headers = BytesHeaderParser().parsebytes(zf.read(names[0]))
    out = []
    for value in headers.get_all("Requires-Dist") or []:
        try:
            out.append(Requirement(value))
        except InvalidRequirement:
            continue  # uv refuses the wheel itself if its metadata is broken
    return out


def _wanted(name: str, requirements: Sequence[Requirement], target: Target) -> SpecifierSet:
    """Every version bound on ``name`` that applies in the container (extras left out)."""
    env = {**target.marker_environment(), "extra": ""}
    spec = SpecifierSet()
    for req in requirements:
        if canonicalize_name(req.name) == name and (req.marker is None or req.marker.evaluate(env)):
            spec &= req.specifier
    return spec


def _next_sdist(stderr: str, built: dict[tuple[str, str], Path], lines: Sequence[str], index: str | Indexes,
                target: Target) -> PackageFile | None:
    """The next source distribution to build, from uv's report of what has no usable wheel;
    None when uv's failure is of another kind or names only what was built already."""
    pins: dict[str, str] = {}
    for name, version in _PINNED.findall(stderr):
        try:
            pins[canonicalize_name(name)] = str(Version(version))
        except InvalidVersion:
            continue
    known = [Requirement(line) for line in lines]
    for wheel in built.values():
        known += _requires_dist(wheel)
    for raw in dict.fromkeys(_NEEDS_WHEEL.findall(stderr)):
        name = canonicalize_name(raw)
        if name in pins:
            if (name, pins[name]) in built:
                continue
            wanted = SpecifierSet(f"=={pins[name]}")
        elif any(n == name for n, _ in built):
            continue  # its newest allowed version is built; uv needs something no sdist here offers
        else:
            wanted = _wanted(name, known, target)
        where = index.for_package(name) if isinstance(index, Indexes) else index
        return choose_sdist(authenticated(where), name, wanted, target)
    return None


def resolve_with_sdists(lines: Sequence[str], target: Target, index: str | Indexes, builder: SdistBuilder | None,
                        links: Path, say: Progress, *, max_builds: int = MAX_BUILDS) -> tuple[int, str, str]:
    """(exit status, pylock text, uv's stderr) of a resolution that may use sdists, each built
    in a container; the pylock names the sdists, not the wheels built here."""
    built: dict[tuple[str, str], Path] = {}
    sdists: dict[tuple[str, str], PackageFile] = {}
    while True:  # each round builds an sdist not built before, or ends
        status, text, stderr = run_uv(list(lines), target, index, find_links=links)
        if status == 0:
            return 0, pylock_with_sdists(text, sdists), ""
        sdist = _next_sdist(stderr, built, lines, index, target)
        if sdist is None:
            return status, "", stderr
        if len(built) >= max_builds:
            raise EnvError(f"more than {max_builds} source distributions would have to be built ({sdist.pin} next); "
                           "declare packages that publish wheels instead")
        if builder is None:
            raise EnvError(f"{sdist.pin} has only a source distribution; building it needs the agent image "
                           "(skillctl env build --allow-sdist)")
        say(f"{sdist.pin} has no wheel for Python {target.python}: building {sdist.filename} in a container")
        wheel, _ = builder.wheel_for(sdist)
        shutil.copyfile(wheel, links / wheel.name)
        built[(sdist.name, sdist.version)] = wheel
        sdists[(sdist.name, sdist.version)] = sdist


# ------------------------------------------------------------------------------ the pylock


def pylock_with_sdists(text: str, sdists: dict[tuple[str, str], PackageFile]) -> str:
    """uv's pylock with every package built here recorded as its sdist (URL, size, sha256)
    instead of the local wheel uv saw; unchanged when nothing was built."""
    if not sdists:
        return text
    doc = tomllib.loads(text)
    for pkg in doc.get("packages", []):
        key = (canonicalize_name(str(pkg.get("name", ""))), str(Version(str(pkg.get("version", "0")))))
        sdist = sdists.get(key)
        if sdist is None:
            continue
        pkg.pop("wheels", None)
        pkg.pop("index", None)  # where uv saw the wheel (find-links); the sdist's index is filled in after
        entry: dict[str, Any] = {"name": sdist.filename, "url": sdist.url}
        if sdist.size:
            entry["size"] = sdist.size
        entry["hashes"] = {"sha256": sdist.sha256}
        pkg["sdist"] = entry
    out = dump_toml(doc)
    if "file://" in out or tomllib.loads(out) != doc:
        raise EnvError("the resolution names a file on this machine; refusing to lock it (please report this)")
    return out


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(value: str) -> str:
    # JSON's escapes are TOML's, except that TOML also wants DEL escaped.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise EnvError(f"cannot write {type(value).__name__} into a pylock")


def dump_toml(doc: dict[str, Any]) -> str:
    """A PEP 751 document as TOML: top-level keys, then one ``[[packages]]`` table each
    (nested tables inline, as uv writes them)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if k != "packages"]
    for pkg in doc.get("packages", []):
        lines += ["", "[[packages]]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in pkg.items()]
    return "\n".join(lines) + "\n"
