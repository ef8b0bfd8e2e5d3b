"""Resolving declared requirements for the container, on the host, with uv.

``uv pip compile --python-version X.Y.Z --python-platform ARCH-manylinux_A_B --format
pylock.toml`` resolves for the agent image's interpreter, not the host's, and writes a PEP 751
lock: exact versions and, per package, the one file that fits the target with its URL, size and
sha256. uv always runs with building disabled (``--no-build``): building a source distribution —
or learning the dependencies of one with dynamic metadata — runs its code, and uv then neither
builds nor even considers an sdist. Only wheels are accepted by default; with ``allow_sdist``
the packages uv finds no wheel for are built from their sdists in throwaway containers and
offered back to uv as wheels (``sdist``), so still nothing of theirs runs on the host.

Indexes: one index URL (``--index-url``), extra ones (``--extra-index-url``, searched before it,
as uv does: a package comes from the first index that has it), and indexes that packages are
pinned to (skills.yaml ``environment.indexes`` with ``packages:``): a pinned package is resolved
only from its index (uv's explicit index and ``[tool.uv.sources]``, through a generated
pyproject.toml), whatever the other indexes offer. Every package of the pylock records the index
it came from (``index``). Credentials in an index URL (``https://user:token@host/simple``) are
given to uv and to downloads only: everything printed, cached or locked names the URL without them
(``scrub``); a lock's URLs get their credentials again at use, from the index URLs of that
invocation (options, ``SKILLCTL_INDEX_URL``, ``SKILLCTL_EXTRA_INDEX_URL``) or ``~/.netrc``.

A resolution is cached under the hash of its inputs (requirements, target, indexes, options,
uv's version), so a second run with the same skills needs neither the index nor uv. That makes the
check of a merge cheap: ``downgrades`` resolves each skill alone (and in pairs, to name who holds
a package back) and lists what the merged resolution has at a lower version. A failed resolution
names every requirement uv cannot install at once (``_failure``), and a platform-only one as such.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import tomllib
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, Union
from urllib.parse import unquote, urlparse, urlsplit, urlunsplit

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from skillctl.env.declare import Declarations, Declared
from skillctl.env.target import Target, cache_dir
from skillctl.errors import EnvError

DEFAULT_INDEX = "https://pypi.org/simple"
Progress = Callable[[str], None]


_CREDENTIALS: dict[str, str] = {}  # scheme://host:port/path (scrubbed) -> the URL with credentials


def scrub(url: str) -> str:
    """``url`` without ``user:password@``: what may be printed, cached or locked."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL urllib can read ("http://[::1"): uv refuses it later, in one line
        return scrub_text(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def scrub_text(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` (uv's messages) without its credentials."""
    return re.sub(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@", r"\1", text)


def _remember(url: str) -> str:
    """Keep ``url``'s credentials for this process (``authenticated``); return it scrubbed."""
    clean = scrub(url)
    if clean != url:
        _CREDENTIALS[clean.rstrip("/")] = url.rstrip("/")
    return clean


def authenticated(url: str) -> str:
    """``url`` with the credentials of the index URL it lies under, when this process was given
    one with credentials (an option, or ``SKILLCTL_INDEX_URL``/``SKILLCTL_EXTRA_INDEX_URL``…);
    else ``url`` (requests and uv then read ``~/.netrc``)."""
    if scrub(url) != url:
        return url
    for value in (os.environ.get("SKILLCTL_INDEX_URL"), os.environ.get("UV_INDEX_URL"), os.environ.get("PIP_INDEX_URL"),
                  *_env_extra_urls()):
        if value:  # a locked run resolves nothing: its downloads find credentials here too
            _remember(value.rstrip("/"))
    best = ""
    for clean in _CREDENTIALS:
        if (url == clean or url.startswith(clean + "/")) and len(clean) > len(best):
            best = clean
    if not best:  # a file of that index, on the same host (/files/… beside /simple)
        try:
            parts = urlsplit(url)
            best = next((c for c in _CREDENTIALS if urlsplit(c)[:2] == parts[:2]), "")
            return urlunsplit(parts._replace(netloc=urlsplit(_CREDENTIALS[best]).netloc)) if best else url
        except ValueError:
            return url
    return _CREDENTIALS[best] + url[len(best):]


def _env_extra_urls() -> tuple[str, ...]:
    return tuple(u for u in os.environ.get("SKILLCTL_EXTRA_INDEX_URL", "").split() if u)


@dataclass(frozen=True)
class PinnedIndex:
    """An index some packages come from, and only from it (skills.yaml ``environment.indexes``)."""

    url: str  # without credentials
    packages: tuple[str, ...]  # canonical names

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "packages": list(self.packages)}


@dataclass(frozen=True)
class Indexes:
    """Where packages come from: ``url`` (``--index-url``), ``extra`` (``--extra-index-url``,
    searched first, as uv does) and ``pinned`` indexes. URLs are kept without credentials;
    ``authenticated`` gives them back at use."""

    url: str = DEFAULT_INDEX
    extra: tuple[str, ...] = ()
    pinned: tuple[PinnedIndex, ...] = ()

    def key(self) -> Any:
        """What the resolution cache key holds: the URL alone when there is only one index, as before."""
        if not self.extra and not self.pinned:
            return self.url
        return {"url": self.url, "extra": list(self.extra), "pinned": [p.to_dict() for p in self.pinned]}

    def for_package(self, name: str) -> str:
        """The index a package comes from when it has no wheel (its sdist is looked up there)."""
        for pin in self.pinned:
            if canonicalize_name(name) in pin.packages:
                return pin.url
        return self.url

    def with_pinned(self, pinned: Sequence[PinnedIndex]) -> "Indexes":
        return Indexes(self.url, self.extra, tuple(self.pinned) + tuple(pinned))


IndexOption = Union[str, Indexes, None]


def index_url(explicit: str | None = None) -> str:
    """The package index: the option, else ``SKILLCTL_INDEX_URL``, ``UV_INDEX_URL``,
    ``PIP_INDEX_URL``, else PyPI — without credentials (kept for use: ``authenticated``)."""
    for value in (explicit, os.environ.get("SKILLCTL_INDEX_URL"), os.environ.get("UV_INDEX_URL"),
                  os.environ.get("PIP_INDEX_URL")):
        if value:
            return _remember(value.rstrip("/"))
    return DEFAULT_INDEX


def indexes(option: IndexOption = None, extra: Sequence[str] = (), pinned: Sequence[PinnedIndex] = ()) -> Indexes:
    """The indexes of one invocation: ``option`` (a URL, or ``Indexes`` already made), extra
    URLs (else ``SKILLCTL_EXTRA_INDEX_URL``, space-separated) and pinned ones."""
    if isinstance(option, Indexes):
        base = option
    else:
        base = Indexes(index_url(option), tuple(_remember(u.rstrip("/")) for u in (extra or _env_extra_urls())))
    return base.with_pinned(pinned) if pinned else base


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
    """``uv --version`` (part of every resolution's and environment image's key). Asking costs a
    process, ~25 ms on each run's start; the answer is kept in the cache under the binary's path,
    size, inode and times, so a replaced or upgraded uv is asked again."""
    try:
        st = os.stat(binary)
    except OSError:
        st = None
    kept = None
    if st is not None:
        key = f"{os.path.realpath(binary)}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
        kept = cache_dir() / "env" / "uv-version" / hashlib.sha256(key.encode()).hexdigest()[:32]
        try:
            text = kept.read_text("utf-8").strip()
            if text:
                return text
        except OSError:
            pass
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    version = out.stdout.strip()
    if not version:
        return "uv (unknown version)"  # not kept: asked again next time
    if kept is not None:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
            tmp.write_text(version, "utf-8")
            os.replace(tmp, kept)
        except OSError:
            pass  # a read-only cache: asked again next time
    return version


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
    index: str = ""  # the index it came from (without credentials), as the pylock records it

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
    pylock: str  # the PEP 751 text uv wrote (each package's ``index`` added)
    indexes: Indexes | None = None  # every index it used (None: only index_url)

    def index_list(self) -> Indexes:
        return self.indexes or Indexes(self.index_url)

    @property
    def wheels(self) -> tuple[PackageFile, ...]:
        return tuple(f for f in self.files if f.kind == "wheel")

    @property
    def sdists(self) -> tuple[PackageFile, ...]:
        return tuple(f for f in self.files if f.kind == "sdist")


# ------------------------------------------------------------------------------ tags


def target_tags(target: Target) -> list[Tag]:
    """Wheel tags the target's interpreter accepts, most specific first (pip's order)."""
    return list(_tag_ranks(target))


@lru_cache(maxsize=8)
def _tag_ranks(target: Target) -> dict[Tag, int]:
    """``target_tags`` by rank, made once per target: ~900 tags, which every parse of a cached
    resolution (each run's start) built again."""
    return {tag: i for i, tag in enumerate(_make_tags(target))}


def _make_tags(target: Target) -> list[Tag]:
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


def _best_wheel(name: str, wheels: list[dict[str, Any]], rank: dict[Tag, int]) -> dict[str, Any] | None:
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
    tags = _tag_ranks(target)
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
        files.append(PackageFile(name, version, _filename(url, entry), url, sha, int(size) if size else None, kind,
                                 scrub(str(pkg.get("index") or ""))))
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


def resolution_key(lines: list[str], target: Target, index: str | Indexes, allow_sdist: bool, uv: str) -> str:
    where = index.key() if isinstance(index, Indexes) else index
    doc = {"requirements": lines, "target": target.to_dict(), "index": where, "allow_sdist": allow_sdist, "uv": uv}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _pyproject(lines: Sequence[str], pinned: Sequence[PinnedIndex]) -> str:
    """A project whose dependencies are ``lines``, each pinned package bound to its explicit
    index: the only input through which ``uv pip compile`` takes per-package indexes."""
    doc = ['[project]', 'name = "skillctl-environment"', 'version = "0"',
           "dependencies = [" + ", ".join(json.dumps(line) for line in lines) + "]", ""]
    sources = []
    for n, pin in enumerate(pinned, 1):
        doc += ["[[tool.uv.index]]", f'name = "pinned-{n}"', f"url = {json.dumps(authenticated(pin.url))}",
                "explicit = true", ""]
        sources += [f'{json.dumps(name)} = {{ index = "pinned-{n}" }}' for name in pin.packages]
    return "\n".join(doc + ["[tool.uv.sources]"] + sources) + "\n"


def run_uv(lines: list[str], target: Target, index: str | Indexes, *,
           find_links: Path | None = None) -> tuple[int, str, str]:
    """(exit status, pylock text, stderr) of one ``uv pip compile``, building disabled;
    ``find_links``: a folder of wheels built from sdists, offered beside the index. ``index``: a
    URL or ``Indexes``; with pinned indexes a package pinned there that only a dependency pulls in
    is made a direct requirement and resolved again, since uv binds only direct ones to an index."""
    where = index if isinstance(index, Indexes) else Indexes(index)
    status, text, stderr = _compile(lines, target, where, find_links)
    if status == 0 and where.pinned:
        pinned = {n for p in where.pinned for n in p.packages}
        direct = {canonicalize_name(Requirement(line).name) for line in lines}
        pulled = sorted(pinned & _pylock_names(text) - direct)
        if pulled:
            status, text, stderr = _compile(list(lines) + pulled, target, where, find_links)
    return status, text, stderr


def _pylock_names(text: str) -> set[str]:
    return {canonicalize_name(str(p.get("name", ""))) for p in tomllib.loads(text).get("packages", [])}


def _compile(lines: Sequence[str], target: Target, where: Indexes, find_links: Path | None) -> tuple[int, str, str]:
    uv = uv_binary()
    with tempfile.TemporaryDirectory(prefix="skillctl-resolve-") as tmp:
        out = Path(tmp) / "pylock.toml"
        if where.pinned:
            direct = {canonicalize_name(Requirement(line).name) for line in lines}
            bound = [PinnedIndex(p.url, tuple(n for n in p.packages if n in direct)) for p in where.pinned]
            req_in = Path(tmp) / "pyproject.toml"
            req_in.write_text(_pyproject(lines, [p for p in bound if p.packages]), "utf-8")
        else:
            req_in = Path(tmp) / "requirements.in"
            req_in.write_text("\n".join(lines) + "\n", "utf-8")
        extra = [arg for url in where.extra for arg in ("--extra-index-url", authenticated(url))]
        cmd = [
            uv, "pip", "compile", str(req_in), "--output-file", str(out), "--format", "pylock.toml",
            "--python-version", target.python, "--python-platform", target.uv_platform,
            "--index-url", authenticated(where.url), *extra, "--no-config", "--no-header", "--quiet",
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
        return proc.returncode, text, scrub_text(proc.stderr)


REASON_LIMIT = 2000  # characters of uv's explanation kept in a message: whole, unless it is huge


def _reason(stderr: str, limit: int = REASON_LIMIT) -> str:
    """uv's explanation on one line (its box-drawing decoration removed), cut only when longer
    than ``limit`` and then at a word's end, marked with "…"."""
    parts = [ln.strip().lstrip("×╰─▶│ ").strip() for ln in stderr.splitlines()]
    text = " ".join(p for p in parts if p)
    if not text:
        return "uv failed without a message"
    if len(text) <= limit:
        return text
    cut = text[:limit + 1]
    at = cut.rfind(" ")
    return (cut[:at] if at > limit // 2 else cut[:limit]).rstrip(" ,;:") + " …"


# uv's hint when a package has wheels, but none for the target: "Wheels are available for
# `pywin32` (v311) on the following platforms: `win32`, `win_amd64`, `win_arm64`".
_PLATFORMS_HINT = re.compile(r"Wheels are available for `([^`]+)` \(v[^)]*\) on the following platforms?: ((?:`[^`]+`(?:, )?)+)")
# The requirements uv names as the user's own: "you require numpy>=99", "you require pywin32".
_YOU_REQUIRE = re.compile(r"you require ([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_OS_OF_PLATFORM = (("win", "Windows", "sys_platform == 'win32'"), ("macosx", "macOS", "sys_platform == 'darwin'"))
MAX_FAILURE_ROUNDS = 8  # uv calls spent finding every requirement that cannot be installed


def platform_only(stderr: str) -> dict[str, tuple[str, str]]:
    """Packages uv found wheels for only on other operating systems: name -> (the systems, in
    words; the environment marker that would leave them out on Linux)."""
    out = {}
    for name, listed in _PLATFORMS_HINT.findall(stderr):
        platforms = re.findall(r"`([^`]+)`", listed)
        systems = []
        for prefix, system, marker in _OS_OF_PLATFORM:
            if any(p.startswith(prefix) for p in platforms):
                systems.append((system, marker))
        if platforms and all(p.startswith(tuple(prefix for prefix, _, _ in _OS_OF_PLATFORM)) for p in platforms):
            words = " and ".join(s for s, _ in systems)
            marker = systems[0][1] if len(systems) == 1 else "sys_platform != 'linux'"
            out[canonicalize_name(name)] = (words, marker)
    return out


def _who(decl: Declarations, name: str) -> str:
    """Who declares distribution ``name``: "skill-a (scripts/x.py (PEP 723)), skill-b (…)"."""
    found = [f"{d.owner} ({d.source})" for d in decl.python if d.name == name]
    return ", ".join(dict.fromkeys(found)) or "a dependency of the declared requirements"


def _problem(name: str, stderr: str, target: Target, allow_sdist: bool) -> str:
    """What is wrong with requirement ``name``, in uv's ``stderr`` of the attempt it failed."""
    others = platform_only(stderr)
    if name in others:
        systems, marker = others[name]
        return (f"{name} publishes wheels only for {systems}; add a marker `; {marker}` to the requirement or drop "
                "it")
    for dependency, (systems, _) in others.items():
        return (f"{name} depends on {dependency}, which publishes wheels only for {systems}; pin a version of {name} "
                "that does not, or drop it")
    if re.search(rf"\b{re.escape(name)} was not found in the package registry", stderr):
        return f"{name} is not on the package index; check its name"
    if not allow_sdist and ("building from source is disabled" in stderr or "no usable wheels" in stderr
                            or "has no wheels" in stderr):
        return (f"{name} has no wheel for Python {target.python} on {target.uv_platform}; pass --allow-sdist to build "
                "it in a throwaway container")
    return _reason(stderr, 400)


def _without(decl: Declarations, names: set[str]) -> Declarations:
    return dataclasses.replace(decl, python=tuple(d for d in decl.python if d.name not in names))  # indexes kept


def _unresolvable(decl: Declarations, target: Target, index: str, stderr: str,
                  find_links: Path | None) -> list[tuple[list[str], str]]:
    """Every declared requirement uv cannot install, found round by round: the ones uv names
    as the user's are left out and the rest resolved again (at most ``MAX_FAILURE_ROUNDS``
    more uv calls); [(names, uv's stderr of the round that named them)]."""
    found: list[tuple[list[str], str]] = []
    remaining = decl
    for _ in range(MAX_FAILURE_ROUNDS):
        declared = {d.name for d in remaining.python}
        names = sorted({canonicalize_name(n) for n in _YOU_REQUIRE.findall(stderr)} & declared)
        if not names:
            break
        found.append((names, stderr))
        remaining = _without(remaining, set(names))
        lines = requirement_lines(remaining, target)
        if not lines:
            break
        status, _, stderr = run_uv(lines, target, index, find_links=find_links)
        if status == 0:
            break
    return found


def _failure(decl: Declarations, target: Target, index: str, allow_sdist: bool, stderr: str,
             find_links: Path | None = None) -> EnvError:
    """The clearest error for a failed resolution: every requirement that cannot be installed
    (with who declares it), or a conflict between two owners, named."""
    reason = _reason(stderr)
    # With --allow-sdist a round would have to build sdists again: only the first failure then.
    rounds = [] if allow_sdist else _unresolvable(decl, target, index, stderr, find_links)
    # Independent failures (each alone in its round): all of them at once. A conflict makes uv
    # name both sides in one round; that is the pair search's to explain below.
    single = [names[0] for names, _ in rounds if len(names) == 1]
    if len(rounds) > 1 and len(single) == len(rounds):
        problems = [f"{_problem(name, text, target, allow_sdist)} (declared by {_who(decl, name)})"
                    for (name,), text in ((names, text) for names, text in rounds)]
        return EnvError(f"cannot resolve the environment: {len(problems)} requirements cannot be installed: "
                        + "; ".join(problems))
    for name, (systems, marker) in platform_only(stderr).items():
        return EnvError(
            f"{name} publishes wheels only for {systems}, and the agent image is Linux ({target.uv_platform}); add a "
            f"marker `; {marker}` to the requirement or drop it (declared by {_who(decl, name)})"
        )
    if not allow_sdist and ("building from source is disabled" in stderr or "no usable wheels" in stderr
                            or "has no wheels" in stderr):
        return EnvError(
            f"no wheel for Python {target.python} on {target.uv_platform}: {reason.rstrip('.')}. Only wheels are installed by "
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
            return EnvError(f"requirements conflict between {a} and {b}: {clash}; {reason.rstrip('.')}. To run both, give one an "
                            f"environment of its own: environment: isolate: [{b}] in skills.yaml, or --isolate-env {b}")
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


def invocation_indexes(decl: Declarations, index: IndexOption = None) -> Indexes:
    """The indexes of a resolution: the invocation's (``index``: a URL or ``Indexes``) plus what
    ``decl`` declares (skills.yaml ``environment.indexes``): pinned ones, and extra ones."""
    pinned = tuple(PinnedIndex(d.url, d.packages) for d in decl.indexes if d.packages)
    where = indexes(index, pinned=pinned)
    extra = tuple(d.url for d in decl.indexes if not d.packages and d.url not in where.extra)
    return Indexes(where.url, where.extra + extra, where.pinned) if extra else where


def _origin(name: str, sha256: str, where: Indexes) -> str:
    """The index a package's file came from: its pinned index; the only index; else the first
    index (in uv's order: extra ones, then the index URL) that lists a file with that sha256."""
    for pin in where.pinned:
        if name in pin.packages:
            return pin.url
    if not where.extra:
        return where.url
    from skillctl.env.simple import project_files

    for url in (*where.extra, where.url):
        try:
            if any(f.sha256 == sha256 for f in project_files(authenticated(url), name)):
                return url
        except EnvError:
            continue
    return where.url


def with_origins(text: str, target: Target, where: Indexes) -> str:
    """uv's pylock with each package's ``index`` (PEP 751: the index it came from) filled in."""
    from skillctl.env.sdist import dump_toml

    doc = tomllib.loads(text)
    files = {f.name: f for f in parse_pylock(text, target)}
    for pkg in doc.get("packages", []):
        chosen = files.get(canonicalize_name(str(pkg.get("name", ""))))
        if chosen is not None and not pkg.get("index"):
            pkg["index"] = _origin(chosen.name, chosen.sha256, where)
    out = dump_toml(doc)
    if scrub_text(out) != out:
        raise EnvError("the resolution names an index with its credentials; refusing to keep it (please report this)")
    return out


def resolve(
    decl: Declarations,
    target: Target,
    *,
    index: IndexOption = None,
    allow_sdist: bool = False,
    builder: Any = None,
    refresh: bool = False,
    ignore_requires_python: Collection[str] = (),
    progress: Progress | None = None,
) -> Resolution:
    """Resolve ``decl``'s Python requirements for ``target`` (cached by inputs).

    ``index``: a URL or ``Indexes`` (default: ``index_url()``), plus the indexes ``decl``
    declares. With ``allow_sdist``, ``builder`` (a ``skillctl.env.sdist.SdistBuilder``) builds the
    packages that have no wheel, each in a throwaway container. ``ignore_requires_python``: the
    skills whose ``requires-python`` is not held against the target (see ``check_requires_python``).
    """
    say = progress or (lambda _line: None)
    check_requires_python(decl, target, ignore_requires_python)
    where = invocation_indexes(decl, index)
    shown = where.url + "".join(f", {u}" for u in where.extra) + "".join(
        f", {p.url} (only {', '.join(p.packages)})" for p in where.pinned)
    recorded = where if (where.extra or where.pinned) else None
    lines = requirement_lines(decl, target)
    if not lines:
        return Resolution(target, where.url, (), "", recorded)
    uv = uv_binary()
    key = resolution_key(lines, target, where, allow_sdist, uv_version(uv))
    cached = cache_dir() / "env" / "resolutions" / f"{key}.pylock.toml"
    if cached.is_file() and not refresh:
        text = cached.read_text("utf-8")
        say(f"environment: {len(lines)} requirement(s) resolved before (cache {key[:12]})")
        return Resolution(target, where.url, parse_pylock(text, target, str(cached)), text, recorded)
    say(f"resolving {len(lines)} requirement(s) for Python {target.python} on {target.uv_platform} from {shown}")
    with tempfile.TemporaryDirectory(prefix="skillctl-built-") as links:
        if allow_sdist:
            from skillctl.env.sdist import resolve_with_sdists

            status, text, stderr = resolve_with_sdists(lines, target, where, builder, Path(links), say)
        else:
            status, text, stderr = run_uv(lines, target, where)
        if status != 0:
            raise _failure(decl, target, where, allow_sdist, scrub_text(stderr), Path(links) if allow_sdist else None)
    text = with_origins(text, target, where)
    files = parse_pylock(text, target)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, cached)
    for f in files:
        say(f"  {f.pin} {f.filename}" + (f" from {f.index}" if recorded else ""))
    return Resolution(target, where.url, files, text, recorded)


# ------------------------------------------------------------------------------ downgrades

MAX_PAIR_OWNERS = 8  # up to this many owners, pairs are resolved to name who holds a package back


@dataclass(frozen=True)
class Downgrade:
    """A package the merged resolution holds below what ``skill`` alone would get."""

    skill: str
    package: str
    alone: str
    merged: str
    held_by: tuple[str, ...] = ()  # the other owners that, each with this skill, hold it back

    def to_dict(self) -> dict[str, Any]:
        return {"skill": self.skill, "package": self.package, "alone": self.alone, "merged": self.merged,
                "held_by": list(self.held_by)}

    def message(self) -> str:
        held = f" (held back by {', '.join(self.held_by)})" if self.held_by else ""
        return f"skill {self.skill}: {self.package} {self.alone} alone → {self.merged} with the others{held}"


def python_owners(decl: Declarations, target: Target) -> list[str]:
    """Owners with at least one Python requirement that applies in the container, in order."""
    return [o for o in dict.fromkeys(d.owner for d in decl.python) if requirement_lines(decl.for_owners([o]), target)]


def downgrades(decl: Declarations, merged: Resolution, target: Target, *, index: str | None = None,
               allow_sdist: bool = False, builder: Any = None, refresh: bool = False,
               ignore_requires_python: Collection[str] = (), progress: Progress | None = None) -> tuple[Downgrade, ...]:
    """Every package ``merged`` (the resolution of all of ``decl``) holds at a lower version than
    a skill's requirements alone get. Each skill is resolved alone — cached like any resolution,
    so this costs nothing the second time —, and, with few owners, with each other owner to
    name who holds a package back. Nothing is resolved when fewer than two owners declare
    Python requirements; the project's own requirements are a holder, never checked alone.
    ``refresh`` re-resolves each skill alone (as ``lock`` does the merge); pairs, which only name
    the holder, come from the cache when there."""
    from packaging.version import Version

    from skillctl.env.declare import PROJECT

    owners = python_owners(decl, target)
    if len(owners) < 2:
        return ()
    say = progress or (lambda _line: None)
    skills = [o for o in owners if o != PROJECT]
    say(f"environment: checking {len(skills)} skill(s) alone for packages the merge holds back")
    have = {f.name: f.version for f in merged.files}

    def alone(part: Declarations, again: bool = False) -> dict[str, str] | None:
        try:
            res = resolve(part, target, index=index, allow_sdist=allow_sdist, builder=builder, refresh=again,
                          ignore_requires_python=ignore_requires_python)
        except EnvError:
            return None  # cannot be resolved alone or in this pair: nothing to compare with
        return {f.name: f.version for f in res.files}

    out = []
    for skill in skills:
        own = alone(decl.for_owners([skill]), refresh)
        lower = sorted(name for name, version in (own or {}).items()
                       if name in have and Version(have[name]) < Version(version))
        if not lower:
            continue
        pairs: dict[str, dict[str, str] | None] = {}
        if len(owners) <= MAX_PAIR_OWNERS:
            pairs = {other: alone(decl.for_owners([skill, other])) for other in owners if other != skill}
        for name in lower:
            held = tuple(other for other, got in pairs.items()
                         if got is not None and name in got and Version(got[name]) < Version(own[name]))
            out.append(Downgrade(skill, name, own[name], have[name], held))
    return tuple(out)
