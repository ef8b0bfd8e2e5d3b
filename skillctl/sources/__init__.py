"""Where a project's skills come from: one protocol (``skillctl.protocols.Source``), one module per
kind, as pip's ``vcs/`` keeps one module per version-control system.

    registry  a folder, OCI or well-known-site registry (through ``skillctl.registry.open_registry``)
    git       ``GitSource``: a git repository read through Debian's git, never through a work tree;
              ``gitspec`` parses source strings (``github:…``, ``gitlab:…``, ``git+SCHEME://…``) and
              mirrors, ``gittree`` searches a tree listing as a folder is searched, ``gitcmd`` runs
              git on hostile repositories (environment, limits, deadlines, the cache)
    path      a folder on this machine (a skill kept in the project itself)

``open_source(kind, **options)`` gives the kind's source, imported when asked for; an unknown kind
is a one-line ``SourceError`` listing the valid ones. ``pin_of`` turns checked contents into the
pin every kind returns, so git and folders describe a skill the way a registry does: the digests
of the canonical bundle ``pack`` makes of the files (at the fixed mtime, whatever
``SOURCE_DATE_EPOCH`` says), and the name, description and version its ``SKILL.md`` declares.
Their ``tar_digest`` is what is checked: the compressed bytes can differ between zlib builds.
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillctl.errors import SourceError, VersionError
from skillctl.protocols import Source, SourcePin, SourceSpec

if TYPE_CHECKING:
    from skillctl.bundle import BundleContents

# kind -> "module:class" (module relative to skillctl.sources)
KINDS: dict[str, str] = {"registry": "registry:RegistrySource", "git": "git:GitSource", "path": "path:PathSource"}


def open_source(kind: str, **options: Any) -> Source:
    target = KINDS.get(kind)
    if target is None:
        raise SourceError(f"unknown kind of skill source {kind!r}; valid: {', '.join(sorted(KINDS))}")
    module_name, attr = target.split(":")
    module = importlib.import_module(f"skillctl.sources.{module_name}")
    return getattr(module, attr)(**options)


def pin_of(spec: SourceSpec, contents: "BundleContents", *, revision: str = "", subdir: str = "",
           where: str = "") -> SourcePin:
    """The pin for checked ``contents`` found at ``spec``: digests of the canonical bundle, and
    what its ``SKILL.md`` says (a skill the validator rejects is a ``SourceError`` naming the
    first error and where it was found)."""
    from skillctl.bundle import DEFAULT_MTIME, repack, write_contents
    from skillctl.skill import check_skill
    from skillctl.versioning import SemVer

    packed = repack(contents, mtime=DEFAULT_MTIME)  # the same bytes wherever SOURCE_DATE_EPOCH says otherwise
    shown = where or f"{spec.location}{'/' + subdir if subdir else ''}"
    with tempfile.TemporaryDirectory(prefix="skillctl-source-") as tmp:
        folder = write_contents(contents, Path(tmp), durable=False)
        report = check_skill(folder, shown)
    if report.skill is None:
        first = report.errors[0].format() if report.errors else "not a valid skill"
        raise SourceError(f"{shown}: not a usable skill: {first}")
    skill = report.skill
    if not spec.name:
        spec = SourceSpec(spec.kind, spec.location, spec.ref, spec.subdir, skill.name)
    version = ""
    if skill.version is not None:
        try:
            version = str(SemVer.parse(skill.version))
        except VersionError:  # not SemVer: a version skillctl cannot order, so none
            version = ""
    return SourcePin(spec, skill.name, version, revision, packed.digest, packed.tar_digest, packed.size, subdir,
                     skill.description)
