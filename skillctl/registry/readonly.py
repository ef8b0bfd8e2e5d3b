"""``ReadOnlyRegistry``: the write half of the ``Registry`` protocol for backends that can only
read (a web index of skills, a mirror someone else fills).

A read-only backend implements the ``RegistryReader`` methods and inherits these, so every write
raises ``UnsupportedError`` naming the registry, the operation and what to do instead; its
``capabilities`` are empty, which is how callers and the conformance suite know to skip writes.
Signatures are read like everything else: a backend that has some overrides ``signatures``;
the default answers that this registry keeps none.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from skillctl.errors import UnsupportedError
from skillctl.protocols import ResolvedSkill


class ReadOnlyRegistry:
    """Mixin: refuses every write of the ``Registry`` protocol. Subclasses set ``url``."""

    capabilities: frozenset[str] = frozenset()
    url: str
    warnings: list[str]  # what a remote registry said that did not stop a read, for callers to show
    _warn: Callable[[str], None] | None = None

    def warn(self, message: str) -> None:
        """Keep ``message`` and hand it to the ``warn`` callback the backend was given, else stderr."""
        self.warnings.append(message)
        if self._warn is not None:
            self._warn(message)
        else:
            print(f"warning: {message}", file=sys.stderr)

    def _refuse(self, operation: str) -> UnsupportedError:
        return UnsupportedError(
            f"{operation} is not supported: the registry {self.url} is read-only; "
            "do it in the registry this one is published from"
        )

    def publish(self, bundle: Any, *, created_at: int | None = None, skill_id: str | None = None) -> Any:
        raise self._refuse("publish")

    def set_yanked(self, ref: str, yanked: bool, reason: str = "") -> Any:
        raise self._refuse("yank" if yanked else "unyank")

    def remove(self, ref: str) -> Any:
        raise self._refuse("remove")

    def gc(self, *, dry_run: bool = False, grace_s: int = 0) -> list[str]:
        raise self._refuse("gc")

    def mark_locked(self, skill: ResolvedSkill) -> None:
        raise self._refuse("recording a lock")

    def attach_signature(self, skill: ResolvedSkill, envelope: bytes) -> str:
        raise self._refuse("attaching a signature")

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        from skillctl.registry.signatures import check_same_bundle

        check_same_bundle(self.resolve_record(f"{skill.name}@{skill.version}"), skill, self.url)  # type: ignore[attr-defined]
        return []
