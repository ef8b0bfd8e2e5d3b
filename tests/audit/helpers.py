"""Builders for the audit tests: skill folders with chosen files, their bundles, one audit."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from registry.helpers import write_skill
from skillctl.audit import AuditReport, audit_bundle, audit_folder
from skillctl.bundle import pack

CORPUS = Path(__file__).resolve().parent.parent / "data" / "audit-corpus"
REAL_SKILLS = Path(__file__).resolve().parent.parent / "data" / "real-skills"


def make_skill(root: Path, body: str = "# Demo\n\nDo the task.\n", files: Mapping[str, str | bytes] | None = None,
               *, name: str = "demo", description: str = "Demo skill for audit tests; use it when testing skillctl.") -> Path:
    return write_skill(root, name, body=body, description=description, files=dict(files or {}))


def audit(root: Path, body: str = "# Demo\n\nDo the task.\n", files: Mapping[str, str | bytes] | None = None,
          **kw: str) -> AuditReport:
    return audit_folder(make_skill(root, body, files, **kw))


def rules_of(report: AuditReport, at_least: str = "info") -> set[str]:
    return {f.rule.id for f in report.at_or_above(at_least)}


def bundle_of(folder: Path) -> bytes:
    return pack(folder, folder.name).data


def audit_as_bundle(folder: Path) -> AuditReport:
    return audit_bundle(bundle_of(folder))
