"""The typed skill: what a valid SKILL.md and its folder say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
        """The version the skill declares in ``metadata.version`` (the spec's convention)."""
        return self.metadata.get("version")

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
