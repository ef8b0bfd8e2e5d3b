"""Auditing skills before they run: static analysis of SKILL.md, references and scripts.

Nothing is executed or imported: files are read as bytes, Python is parsed with ``ast`` only,
everything else is matched with linear-time patterns. Rules are data (``rules.yaml``, checked
against ``rules.schema.json``); a skill's ``.skillaudit`` lists findings its authors accept.

    audit_bundle(data)            → AuditReport of a .skill.tgz (hostile-archive checks first)
    audit_folder(path)            → AuditReport of one skill folder
    audit_paths([paths])          → [AuditReport] for folders, trees of skills and bundle files
    report.worst_severity         → Severity | None (active findings only)
    report.fails("high")          → True when a finding is at or above the threshold

A trust policy calls ``audit_bundle(data).fails(threshold)``; the shipped rules are compiled
once per process, so each call costs only the scan.
"""

from skillctl.audit.api import AuditProblem, audit_bundle, audit_folder, audit_paths, audit_ref, audit_source
from skillctl.audit.model import SEVERITY_NAMES, AuditReport, Finding, Rule, Severity
from skillctl.audit.ruleset import RuleSet, default_rules, load_rules

__all__ = [
    "SEVERITY_NAMES",
    "AuditProblem",
    "AuditReport",
    "Finding",
    "Rule",
    "RuleSet",
    "Severity",
    "audit_bundle",
    "audit_folder",
    "audit_paths",
    "audit_ref",
    "audit_source",
    "default_rules",
    "load_rules",
]
