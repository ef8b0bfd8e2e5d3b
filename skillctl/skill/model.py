"""The typed skill: what a valid SKILL.md and its folder say."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

# "1.0", the spec's own example of metadata.version, names release 1.0.0.
_MAJOR_MINOR_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def as_semver(declared: str) -> str:
    """A declared version as the SemVer skillctl needs: ``1.0`` → ``1.0.0``; others unchanged
    (a version that is not SemVer at all is refused where one is needed)."""
    return f"{declared}.0" if _MAJOR_MINOR_RE.match(declared) else declared


def declared_version(metadata: Mapping[str, Any]) -> str | None:
    """The version a skill's ``metadata`` mapping declares, as a SemVer; None when it declares
    none. Pack and publish read a version from here only (else they need ``--version``), and
    ``validate`` notes a skill without one (SK303) by the same test."""
    declared = metadata.get("version")
    return as_semver(declared) if isinstance(declared, str) else None


def version_hint(where: str) -> str:
    """What to do about a skill that declares no version, as publish and validate both say it."""
    return f"add metadata.version to SKILL.md (skillctl version {where} 0.1.0) or pass --version"


@dataclass(frozen=True)
class Skill:
    path: Path  # the skill folder
    name: str
    description: str
    body: str
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None
    files: tuple[str, ...] = ()  # POSIX paths relative to the folder, sorted, ignores applied
    body_start_line: int = 1

    @property
    def version(self) -> str | None:
        """The version the skill declares in ``metadata.version`` (the spec's convention), as a
        SemVer: ``1.0`` reads as ``1.0.0``. ``front_matter()`` keeps what was written."""
        return declared_version(self.metadata)

    def front_matter(self) -> dict[str, Any]:
        """The front matter as written (fields left out when absent), for bundle configs."""
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.license is not None:
            out["license"] = self.license
        if self.compatibility is not None:
            out["compatibility"] = self.compatibility
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.allowed_tools is not None:
            out["allowed-tools"] = self.allowed_tools
        return out
