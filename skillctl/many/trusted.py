"""A project's trust policy on the skills of a batch or an eval, applied before any run starts.

Runs may go to machines that cannot read the project's key files (a Ray node), so the policy is
applied here, once per distinct reference, and each job then names the exact version that passed
(a ``ResolvedSkill``: name, version, digest): wherever the job runs it loads those bytes or fails,
never a version published in between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from skillctl.protocols import ResolvedSkill

if TYPE_CHECKING:
    from skillctl.trust.enforce import Gate


def pin_trusted(gate: Gate, registry_url: str | None, refs: Iterable[str]) -> dict[str, ResolvedSkill]:
    """Each distinct reference resolved in ``registry_url`` and passed through ``gate``, by
    reference; one ``TrustError`` naming every refused version."""
    from skillctl.registry import open_registry

    distinct = list(dict.fromkeys(refs))
    if not distinct:
        return {}
    with open_registry(registry_url, create=False) as reg:
        resolved = {ref: reg.resolve(ref) for ref in distinct}
        versions = {(r.name, r.version, r.digest): r for r in resolved.values()}
        gate.check_all(reg, list(versions.values()))
    return resolved
