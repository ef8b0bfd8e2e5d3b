"""Entry points: audit a bundle, a folder, a tree of skills, or a registry reference."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from skillctl.audit.engine import audit_source
from skillctl.audit.model import AuditReport
from skillctl.audit.ruleset import RuleSet, default_rules
from skillctl.audit.sources import from_bundle, from_bundle_contents, from_folder
from skillctl.bundle import read_bundle_file
from skillctl.errors import SkillctlError
from skillctl.protocols import Store

__all__ = ["AuditProblem", "audit_bundle", "audit_folder", "audit_paths", "audit_ref", "audit_source"]


@dataclass(frozen=True)
class AuditProblem:
    """An input that could not be audited (no skill there, a refused bundle…)."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def audit_bundle(data: bytes, *, rules: RuleSet | None = None, use_allowlist: bool = True,
                 source: str | None = None) -> AuditReport:
    """Audit a ``.skill.tgz``. The archive passes every hostile-archive check first (BundleError
    otherwise). For a trust decision about someone else's skill pass ``use_allowlist=False``:
    the bundle's ``.skillaudit`` was written by its publisher."""
    return audit_source(from_bundle(data, source), rules or default_rules(), use_allowlist=use_allowlist)


def audit_folder(folder: Path, shown: str | None = None, *, rules: RuleSet | None = None,
                 use_allowlist: bool = True) -> AuditReport:
    """Audit one skill folder as it is on disk (every file except version-control metadata)."""
    return audit_source(from_folder(Path(folder), shown if shown is not None else str(folder)), rules or default_rules(),
                        use_allowlist=use_allowlist)


def audit_ref(store: Store, ref: str, *, rules: RuleSet | None = None, use_allowlist: bool = True) -> AuditReport:
    """Resolve ``ref`` in a registry, fetch the bundle (digest verified by the store) and audit it."""
    resolved = store.resolve(ref)
    data = store.fetch(resolved)
    label = f"{resolved.name}@{resolved.version}"
    return audit_bundle(data, rules=rules, use_allowlist=use_allowlist, source=label)


def audit_paths(
    paths: Iterable[Path],
    *,
    rules: RuleSet | None = None,
    use_allowlist: bool = True,
    on_report: Callable[[AuditReport], None] | None = None,
) -> tuple[list[AuditReport], list[AuditProblem]]:
    """Reports for every skill under ``paths`` (skill folders, their SKILL.md, folders of skills at
    any depth, bundle files), each skill once, plus a problem for each input that held none."""
    from skillctl.skill import discover

    rs = rules or default_rules()
    reports: list[AuditReport] = []
    problems: list[AuditProblem] = []
    seen: set[str] = set()

    def done(report: AuditReport) -> None:
        reports.append(report)
        if on_report is not None:
            on_report(report)

    for path in paths:
        path = Path(path)
        if path.is_file() and path.name != "SKILL.md":
            try:
                contents = read_bundle_file(path)
            except SkillctlError as exc:
                problems.append(AuditProblem(str(path), f"not auditable as a bundle: {exc}"))
                continue
            done(audit_source(from_bundle_contents(contents, str(path)), rs, use_allowlist=use_allowlist))
            continue
        for folder, shown, problem in discover(path):
            if problem is not None:
                problems.append(AuditProblem(shown, problem.message))
                continue
            assert folder is not None
            key = os.path.realpath(folder)
            if key in seen:
                continue
            seen.add(key)
            done(audit_source(from_folder(folder, shown), rs, use_allowlist=use_allowlist))
    return reports, problems
