"""The environment's part of a project lock.

``skillctl lock`` writes the Python resolution as a PEP 751 lock beside ``skills.lock`` —
``pylock.skills.toml`` (PEP 751 names are ``pylock.toml`` or ``pylock.<name>.toml``; the
``skills`` name keeps it apart from a project's own ``pylock.toml``) — and an ``environment``
section in ``skills.lock`` that pins that file by sha256 and lists the Debian packages with
theirs::

    "environment": {
      "format": 1,
      "inputs_digest": "sha256:…",          what was declared (skills + skills.yaml)
      "declared": {...},                     the declarations themselves, for people
      "target": {"python": "3.11.2", "machine": "x86_64", "libc": "glibc 2.36", "arch": "amd64"},
      "index_url": "https://pypi.org/simple",
      "extra_index_urls": [...], "indexes": [{"url", "packages"}],   only when used; no credentials
      "pylock": "pylock.skills.toml", "pylock_digest": "sha256:…",
      "debian": [{"package", "version", "arch", "filename", "url", "sha256", "size"}, …],
      "downgrades": [{"skill", "package", "alone", "merged", "held_by"}, …]   what the merge holds back
    }

Skills with an environment of their own (skills.yaml ``environment: isolate``) add, in format 2
(format 1 — no isolated skill — is still written and read as before)::

      "isolated": {"skill-a": {"pylock": "pylock.skills-skill-a.toml", "pylock_digest": "sha256:…"}}

each its own PEP 751 lock beside skills.lock, checked the same way.

Reading it back checks the pylock's digest first: a pylock edited by hand (or by another tool)
is refused, and so is every file whose bytes differ from the sha256 the pylock names.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from skillctl.env.declare import Declarations, Declared, DeclaredIndex
from skillctl.env.prepare import Environment, index_fields
from skillctl.env.resolve import Indexes, PinnedIndex, Resolution, parse_pylock, scrub
from skillctl.env.target import Target
from skillctl.errors import EnvError, EnvIntegrityError

FORMAT = 1
FORMAT_ISOLATED = 2  # with isolated skills: an older skillctl refuses it rather than run them merged
PYLOCK_NAME = "pylock.skills.toml"


def pylock_path(lock_path: Path, skill: str | None = None) -> Path:
    """The pylock of the shared environment, or of ``skill``'s own (PEP 751: no dot in the name)."""
    return lock_path.parent / (PYLOCK_NAME if skill is None else f"pylock.skills-{skill}.toml")


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def environment_section(env: Environment, lock_path: Path) -> dict[str, Any]:
    """Write the pylock beside ``lock_path`` and return the section that pins it."""
    from skillctl.fsutil import write_atomic

    section: dict[str, Any] = {
        "format": FORMAT_ISOLATED if env.isolated else FORMAT,
        "inputs_digest": env.inputs_digest(),
        "declared": env.declarations.to_dict(),
        "target": env.target.to_dict(),
        "index_url": env.python.index_url,
        **index_fields(env.python),
        "debian": [d.to_dict() for d in env.debian],
    }
    if env.python.files:
        path = pylock_path(lock_path)
        write_atomic(path, env.python.pylock)
        section["pylock"] = path.name
        section["pylock_digest"] = _sha256(env.python.pylock.encode("utf-8"))
    if env.downgrades:
        section["downgrades"] = [d.to_dict() for d in env.downgrades]
    if env.isolated:
        section["isolated"] = {}
        for iso in env.isolated:
            path = pylock_path(lock_path, iso.skill)
            write_atomic(path, iso.python.pylock)
            section["isolated"][iso.skill] = {"pylock": path.name, "pylock_digest": _sha256(iso.python.pylock.encode("utf-8"))}
    return section


def _read_pylock(name: Any, digest: Any, lock_path: Path, target: Target, key: str) -> tuple[str, tuple[Any, ...]]:
    """(text, files) of the pylock ``name`` beside the lock, its digest checked against ``digest``."""
    where = str(lock_path)
    name = str(name)
    if "/" in name or name.startswith("."):
        raise EnvError(f"{where}: {key} must name a file beside the lock, got {name!r}")
    path = lock_path.parent / name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EnvError(f"{path}: cannot read the environment's lock ({exc.strerror or exc}); run skillctl lock") from None
    if _sha256(data) != digest:
        raise EnvIntegrityError(
            f"{path} has digest {_sha256(data)[:19]}…, but {where} pins {str(digest)[:19]}…; "
            "refusing it — run skillctl lock to re-resolve on purpose"
        )
    text = data.decode("utf-8")
    return text, parse_pylock(text, target, str(path))


def _declarations(doc: Any, where: str) -> Declarations:
    try:
        parts = {key: tuple(Declared(str(d["requirement"]), str(d["owner"]), str(d["source"])) for d in doc.get(key, []))
                 for key in ("python", "requires_python", "debian")}
        indexes = tuple(DeclaredIndex(scrub(str(d["url"])), tuple(str(n) for n in d["packages"]), str(d["owner"]),
                                      str(d["source"])) for d in doc.get("indexes", []))
    except (KeyError, TypeError, AttributeError) as exc:
        raise EnvError(f"{where}: environment.declared is malformed ({exc!r}); regenerate it with: skillctl lock") from None
    return Declarations(parts["python"], parts["requires_python"], parts["debian"], {}, indexes)


def environment_from_section(section: Any, lock_path: Path) -> Environment:
    """The locked environment, with the pylock's digest checked against the lock."""
    from skillctl.env.debian import DebianPackage

    from skillctl.env.declare import check_skill_name
    from skillctl.env.prepare import Isolated
    from skillctl.env.resolve import Downgrade

    where = str(lock_path)
    if not isinstance(section, dict) or section.get("format") not in (FORMAT, FORMAT_ISOLATED):
        raise EnvError(f"{where}: the environment section is missing its format {FORMAT}; regenerate it with: skillctl lock")
    target = Target.from_dict(section.get("target"))
    index = str(section.get("index_url", ""))
    text = ""
    files: tuple[Any, ...] = ()
    if section.get("pylock"):
        text, files = _read_pylock(section["pylock"], section.get("pylock_digest"), lock_path, target, "environment.pylock")
    isolated = []
    entries = section.get("isolated") or {}
    if not isinstance(entries, dict):
        raise EnvError(f"{where}: environment.isolated is malformed; regenerate it with: skillctl lock")
    for skill, entry in sorted(entries.items()):
        check_skill_name(skill, f"{where}: environment.isolated")
        if not isinstance(entry, dict) or not entry.get("pylock"):
            raise EnvError(f"{where}: environment.isolated.{skill} names no pylock; regenerate it with: skillctl lock")
        iso_text, iso_files = _read_pylock(entry["pylock"], entry.get("pylock_digest"), lock_path, target,
                                           f"environment.isolated.{skill}.pylock")
        isolated.append(Isolated(skill, Resolution(target, index, iso_files, iso_text)))
    try:
        debian = tuple(DebianPackage.from_dict(d) for d in section.get("debian", []))
    except (KeyError, TypeError, ValueError) as exc:
        raise EnvError(f"{where}: environment.debian is malformed ({exc!r}); regenerate it with: skillctl lock") from None
    try:
        downgrades = tuple(Downgrade(str(d["skill"]), str(d["package"]), str(d["alone"]), str(d["merged"]),
                                     tuple(map(str, d.get("held_by", ())))) for d in section.get("downgrades", []))
    except (KeyError, TypeError, AttributeError) as exc:
        raise EnvError(f"{where}: environment.downgrades is malformed ({exc!r}); regenerate it with: skillctl lock") from None
    decl = _declarations(section.get("declared") or {}, where)
    pinned = _indexes(section, index, where)
    return Environment(decl, Resolution(target, index, files, text, pinned), debian,
                       tuple(Isolated(i.skill, Resolution(target, index, i.python.files, i.python.pylock, pinned)) for i in isolated),
                       downgrades)


def _indexes(section: dict[str, Any], index: str, where: str) -> Indexes | None:
    if "extra_index_urls" not in section and "indexes" not in section:
        return None
    try:
        extra = tuple(scrub(str(u)) for u in section.get("extra_index_urls") or [])
        pinned = tuple(PinnedIndex(scrub(str(p["url"])), tuple(str(n) for n in p["packages"]))
                       for p in section.get("indexes") or [])
    except (KeyError, TypeError) as exc:
        raise EnvError(f"{where}: environment.indexes is malformed ({exc!r}); regenerate it with: skillctl lock") from None
    return Indexes(index, extra, pinned)
