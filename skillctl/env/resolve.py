"""Resolving declared requirements for the container, on the host, with uv.

``uv pip compile --python-version X.Y.Z --python-platform ARCH-manylinux_A_B --format
pylock.toml`` resolves for the agent image's interpreter, not the host's, and writes a PEP 751
lock: exact versions and, per package, the one file that fits the target with its URL, size and
sha256. uv always runs with building disabled (``--no-build``): building a source distribution —
or learning the dependencies of one with dynamic metadata — runs its code, and uv then neither
builds nor even considers an sdist. Only wheels are accepted by default; with ``allow_sdist``
the packages uv finds no wheel for are built from their sdists in throwaway containers and
offered back to uv as wheels (``sdist``), so still nothing of theirs runs on the host.

A resolution is cached under the hash of its inputs (requirements, target, index, options, uv's
version), so a second run with the same skills needs neither the index nor uv.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
import tomllib
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from skillctl.env.declare import Declarations, Declared
from skillctl.env.target import Target, cache_dir
from skillctl.errors import EnvError

DEFAULT_INDEX = "https://pypi.org/simple"
Progress = Callable[[str], None]


def index_url(explicit: str | None = None) -> str:
    """The package index: the option, else ``SKILLCTL_INDEX_URL``, ``UV_INDEX_URL``,
    ``PIP_INDEX_URL``, else PyPI."""
    for value in (explicit, os.environ.get("SKILLCTL_INDEX_URL"), os.environ.get("UV_INDEX_URL"),
                  os.environ.get("PIP_INDEX_URL")):
        if value:
            return value.rstrip("/")
    return DEFAULT_INDEX


# Trust the platform's certificate store, as Debian's own tools do: uv otherwise trusts only its
# bundled roots, and an index behind a TLS-inspecting proxy (its CA added to
# ca-certificates) fails with "Failed to fetch". Both spellings: UV_NATIVE_TLS for older uv
# releases, UV_SYSTEM_CERTS for newer ones; each ignores the one it does not know.
UV_TLS_ENV = {"UV_NATIVE_TLS": "1", "UV_SYSTEM_CERTS": "1"}


def uv_binary() -> str:
    """uv, from this interpreter's scripts folder (where the ``uv`` dependency installs it),
    ``$SKILLCTL_UV``, or ``PATH``."""
    override = os.environ.get("SKILLCTL_UV")
    candidates = [override] if override else []
    candidates += [str(Path(sysconfig.get_path("scripts")) / "uv"), shutil.which("uv") or ""]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise EnvError("uv is not installed, and it resolves skill environments: pip install uv (or set SKILLCTL_UV)")


@lru_cache(maxsize=4)
def uv_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "uv (unknown version)"


@dataclass(frozen=True)
class PackageFile:
    """One file of the environment: a wheel (or, with --allow-sdist, a source distribution)."""

    name: str  # canonical distribution name
    version: str
    filename: str
    url: str
    sha256: str
    size: int | None
    kind: str = "wheel"  # or "sdist"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class Resolution:
    target: Target
    index_url: str
    files: tuple[PackageFile, ...]
    pylock: str  # the PEP 751 text uv wrote

    @property
    def wheels(self) -> tuple[PackageFile, ...]:
        return tuple(f for f in self.files if f.kind == "wheel")

    @property
    def sdists(self) -> tuple[PackageFile, ...]:
        return tuple(f for f in self.files if f.kind == "sdist")


# ------------------------------------------------------------------------------ tags


def target_tags(target: Target) -> list[Tag]:
    """Wheel tags the target's interpreter accepts, most specific first (pip's order)."""
    major, minor = (int(x) for x in target.python.split(".")[:2])
    glibc_major, glibc_minor = target.glibc
    arch = target.machine
    platforms = [f"manylinux_{glibc_major}_{m}_{arch}" for m in range(glibc_minor, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    for m, alias in legacy.items():
        if m <= glibc_minor:
            platforms.insert(platforms.index(f"manylinux_2_{m}_{arch}") + 1, f"{alias}_{arch}")
    platforms.append(f"linux_{arch}")
    abi = f"cp{major}{minor}"
    return list(cpython_tags((major, minor), [abi], platforms)) + list(
        compatible_tags((major, minor), abi, platforms)
    )


def _filename(url: str, entry: dict[str, Any]) -> str:
    return str(entry.get("name") or unquote(PurePosixPath(urlparse(url).path).name))


def _best_wheel(name: str, wheels: list[dict[str, Any]], tags: list[Tag]) -> dict[str, Any] | None:
    rank = {tag: i for i, tag in enumerate(tags)}
    best: tuple[int, dict[str, Any]] | None = None
    for wheel in wheels:
        fname = _filename(str(wheel.get("url", "")), wheel)
        try:
            _, _, _, wheel_tags = parse_wheel_filename(fname)
        except Exception:
            continue
        score = min((rank[t] for t in wheel_tags if t in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, wheel)
    return best[1] if best else None


def parse_pylock(text: str, target: Target, where: str = "pylock.toml") -> tuple[PackageFile, ...]:
    """The file to install per package of a PEP 751 lock, for ``target``."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"{where} is not valid TOML ({exc}); regenerate it with: skillctl lock") from None
    if str(doc.get("lock-version", "")).split(".")[0] != "1":
        raise EnvError(f"{where}: lock-version {doc.get('lock-version')!r} is not supported (expected 1.x)")
    tags = target_tags(target)
    files = []
    for pkg in doc.get("packages", []):
        name, version = canonicalize_name(str(pkg.get("name", ""))), str(pkg.get("version", ""))
        if not name or not version:
            raise EnvError(f"{where}: a package has no name or version; regenerate it with: skillctl lock")
        entry, kind = _best_wheel(name, list(pkg.get("wheels") or []), tags), "wheel"
        if entry is None and pkg.get("sdist"):
            entry, kind = pkg["sdist"], "sdist"
        if entry is None:
            raise EnvError(
                f"{where}: {name} {version} has no wheel for Python {target.python} on {target.uv_platform}"
            )
        url = str(entry.get("url") or "")
        sha = str((entry.get("hashes") or {}).get("sha256") or "")
        if not url or len(sha) != 64:
            raise EnvError(f"{where}: {name} {version} has no URL or no sha256; every file must be pinned by hash")
        size = entry.get("size")
        files.append(PackageFile(name, version, _filename(url, entry), url, sha, int(size) if size else None, kind))
    return tuple(sorted(files, key=lambda f: f.name))


# ------------------------------------------------------------------------------ resolving


def check_requires_python(decl: Declarations, target: Target, ignore: Collection[str] = (),
                          progress: Progress | None = None) -> None:
    """Every ``requires-python`` a skill declares must admit the image's Python — whether or not
    the skill has anything else to resolve — except for the skills in ``ignore`` (the user's
    ``--ignore-requires-python``, or skills.yaml's ``environment.ignore-requires-python``), which
    are named on ``progress`` instead."""
    for pin in decl.requires_python:
        if SpecifierSet(pin.requirement).contains(target.python, prereleases=True):
            continue
        if pin.owner in ignore:
            if progress is not None:
                progress(f"warning: {pin.owner}: {pin.source} requires Python {pin.requirement}; the agent image has "
                         f"Python {target.python} and it is used all the same (--ignore-requires-python {pin.owner})")
            continue
        raise EnvError(
            f"{pin.owner}: {pin.source} requires Python {pin.requirement}, but the agent image has Python "
            f"{target.python}; build the agent image on a newer Debian (SKILLCTL_DEBIAN_SUITE=trixie skillctl "
            f"image build), or, if its scripts run on {target.python} all the same, pass --ignore-requires-python "
            f"{pin.owner} (or list it under environment.ignore-requires-python in skills.yaml; the lock records it)"
        )


def _applies(declared: Declared, target: Target) -> bool:
    req = Requirement(declared.requirement)
    return req.marker is None or req.marker.evaluate(target.marker_environment())


def requirement_lines(decl: Declarations, target: Target) -> list[str]:
    """The requirements uv resolves: every one whose markers hold in the container, deduplicated."""
    return sorted({d.requirement for d in decl.python if _applies(d, target)})


def resolution_key(lines: list[str], target: Target, index: str, allow_sdist: bool, uv: str) -> str:
    doc = {"requirements": lines, "target": target.to_dict(), "index": index, "allow_sdist": allow_sdist, "uv": uv}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def run_uv(lines: list[str], target: Target, index: str, *, find_links: Path | None = None) -> tuple[int, str, str]:
    """(exit status, pylock text, stderr) of one ``uv pip compile``, building disabled;
    ``find_links``: a folder of wheels built from sdists, offered beside the index."""
    uv = uv_binary()
    with tempfile.TemporaryDirectory(prefix="skillctl-resolve-") as tmp:
        req_in = Path(tmp) / "requirements.in"
        out = Path(tmp) / "pylock.toml"
        req_in.write_text("\n".join(lines) + "\n", "utf-8")
        cmd = [
            uv, "pip", "compile", str(req_in), "--output-file", str(out), "--format", "pylock.toml",
            "--python-version", target.python, "--python-platform", target.uv_platform,
            "--index-url", index, "--no-config", "--no-header", "--quiet",
            "--cache-dir", str(cache_dir() / "uv"),
            # uv's promise for --no-build: "resolving will not run arbitrary Python code". It
            # never picks an sdist then, so one with dynamic metadata is never built here to
            # learn its dependencies (--allow-sdist builds sdists in containers instead).
            "--no-build",
        ]
        if find_links is not None:
            cmd += ["--find-links", str(find_links)]
        # Only our options count: a user's UV_*/PIP_* settings (extra indexes, find-links,
        # constraints) must not change what a skill environment resolves to.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
        env.update(UV_TLS_ENV)
        env["UV_PYTHON_DOWNLOADS"] = "never"
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, check=False)
        text = out.read_text("utf-8") if proc.returncode == 0 and out.exists() else ""
        return proc.returncode, text, proc.stderr


def _reason(stderr: str) -> str:
    """uv's explanation on one line (its box-drawing decoration removed)."""
    parts = [ln.strip().lstrip("×╰─▶│ ").strip() for ln in stderr.splitlines()]
    return " ".join(p for p in parts if p)[:600] or "uv failed without a message"


def _failure(decl: Declarations, target: Target, index: str, allow_sdist: bool, stderr: str,
             find_links: Path | None = None) -> EnvError:
    """The clearest error for a failed resolution: a conflict between two owners, named."""
    reason = _reason(stderr)
    if not allow_sdist and ("building from source is disabled" in stderr or "no usable wheels" in stderr
                            or "has no wheels" in stderr):
        return EnvError(
            f"no wheel for Python {target.python} on {target.uv_platform}: {reason}. Only wheels are installed by "
            "default (building a source distribution runs its code); pass --allow-sdist to build it in a throwaway "
            "container"
        )
    owners = decl.owners()
    if len(owners) > 1:
        def fails(part: Declarations) -> bool:
            return run_uv(requirement_lines(part, target), target, index, find_links=find_links)[0] != 0

        for a, b in itertools.combinations(owners, 2):
            pair = decl.for_owners([a, b])
            if not fails(pair):
                continue
            if fails(decl.for_owners([a])) or fails(decl.for_owners([b])):
                break  # one alone fails: not a conflict between two owners
            clash = _clashing(pair, a, b)
            return EnvError(f"requirements conflict between {a} and {b}: {clash}; {reason}")
    return EnvError(f"cannot resolve the environment ({', '.join(owners)}): {reason}")


def _clashing(pair: Declarations, a: str, b: str) -> str:
    """Name the two requirements on the same distribution, or both owners' full lists."""
    left = [d for d in pair.python if d.owner == a]
    right = [d for d in pair.python if d.owner == b]
    for x in left:
        for y in right:
            if x.name == y.name:
                return f"{a} requires '{x.requirement}' ({x.source}) but {b} requires '{y.requirement}' ({y.source})"
    return (f"{a} requires {', '.join(repr(d.requirement) for d in left)} and {b} requires "
            f"{', '.join(repr(d.requirement) for d in right)}, which cannot be installed together")


def resolve(
    decl: Declarations,
    target: Target,
    *,
    index: str | None = None,
    allow_sdist: bool = False,
    builder: Any = None,
    refresh: bool = False,
    ignore_requires_python: Collection[str] = (),
    progress: Progress | None = None,
) -> Resolution:
    """Resolve ``decl``'s Python requirements for ``target`` (cached by inputs).

    With ``allow_sdist``, ``builder`` (a ``skillctl.env.sdist.SdistBuilder``) builds the
    packages that have no wheel, each in a throwaway container. ``ignore_requires_python``: the
    skills whose ``requires-python`` is not held against the target (see ``check_requires_python``).
    """
    say = progress or (lambda _line: None)
    check_requires_python(decl, target, ignore_requires_python)
    index = index_url(index)
    lines = requirement_lines(decl, target)
    if not lines:
        return Resolution(target, index, (), "")
    uv = uv_binary()
    key = resolution_key(lines, target, index, allow_sdist, uv_version(uv))
    cached = cache_dir() / "env" / "resolutions" / f"{key}.pylock.toml"
    if cached.is_file() and not refresh:
        text = cached.read_text("utf-8")
        say(f"environment: {len(lines)} requirement(s) resolved before (cache {key[:12]})")
        return Resolution(target, index, parse_pylock(text, target, str(cached)), text)
    say(f"resolving {len(lines)} requirement(s) for Python {target.python} on {target.uv_platform} from {index}")
    with tempfile.TemporaryDirectory(prefix="skillctl-built-") as links:
        if allow_sdist:
            from skillctl.env.sdist import resolve_with_sdists

            status, text, stderr = resolve_with_sdists(lines, target, index, builder, Path(links), say)
        else:
            status, text, stderr = run_uv(lines, target, index)
        if status != 0:
            raise _failure(decl, target, index, allow_sdist, stderr, Path(links) if allow_sdist else None)
    files = parse_pylock(text, target)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, cached)
    for f in files:
        say(f"  {f.pin} {f.filename}")
    return Resolution(target, index, files, text)
