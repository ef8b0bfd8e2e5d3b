"""Audit reports as a SARIF 2.1.0 log, the format GitHub code scanning uploads.

One run, tool ``skillctl`` with a rule descriptor per rule (title, why, fix, default level and
the ``security-severity`` score GitHub uses to rank alerts: critical 9.5, high 8.0, medium 5.5,
low 3.0, info 1.0). Each finding is a result at ``path:line:column`` (columns in Unicode code
points, declared by ``columnKind``), with a stable ``partialFingerprints`` entry so alerts keep
their identity when lines move. Accepted findings are results with an ``inSource`` suppression
carrying the ``.skillaudit`` reason. Inputs that could not be audited are tool notifications.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from skillctl import __version__
from skillctl.audit.api import AuditProblem
from skillctl.audit.model import AuditReport, Finding, Rule, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note",
          Severity.INFO: "note"}
_SCORE = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "3.0", Severity.INFO: "1.0"}


def _uri(path: str) -> str:
    if path.startswith("/"):
        return "file://" + quote(path)
    return quote(str(PurePosixPath(path)))


def _descriptor(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": "".join(w.capitalize() for w in rule.title.replace("'", "").replace("-", " ").split()),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.why},
        "help": {"text": f"{rule.why}\nFix: {rule.fix}", "markdown": f"{rule.why}\n\n**Fix:** {rule.fix}"},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {
            "tags": ["security", rule.category],
            "security-severity": _SCORE[rule.severity],
            "precision": "medium",
            "problem.severity": "error" if rule.severity >= Severity.HIGH else "warning" if rule.severity == Severity.MEDIUM else "recommendation",
        },
    }


def _result(f: Finding, report: AuditReport, index: dict[str, int]) -> dict[str, Any]:
    path = f"{report.root}/{f.path}" if report.root else f.path
    text = f.rule.title + (f": {f.detail}" if f.detail else "")
    fingerprint = hashlib.sha256(f"{f.rule.id}\0{path}\0{f.evidence}".encode()).hexdigest()[:32]
    region: dict[str, Any] = {"startLine": f.line, "startColumn": f.column}
    if f.evidence:
        region["snippet"] = {"text": f.evidence}
    result: dict[str, Any] = {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "level": _LEVEL[f.severity],
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}, "region": region}}],
        "partialFingerprints": {"skillctlAudit/v1": fingerprint},
        "properties": {"severity": str(f.severity), "skill": report.name, "source": report.source},
    }
    if f.accepted_reason is not None:
        result["suppressions"] = [{"kind": "inSource", "justification": f.accepted_reason}]
    return result


def to_sarif(reports: Sequence[AuditReport], problems: Sequence[AuditProblem] = (), rules: Sequence[Rule] = ()) -> dict[str, Any]:
    """A SARIF 2.1.0 log of ``reports``; ``rules`` lists every rule that could fire (all of the
    rule set), so code scanning shows the same rule list on every run."""
    all_rules = list(rules) or sorted({f.rule.id: f.rule for r in reports for f in (*r.findings, *r.accepted)}.values(),
                                      key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(all_rules)}
    results = [_result(f, r, index) for r in reports for f in (*r.findings, *r.accepted)]
    invocation: dict[str, Any] = {"executionSuccessful": not problems}
    if problems:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": str(p)}} for p in problems
        ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "skillctl",
                "fullName": "skillctl audit",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_descriptor(rule) for rule in all_rules],
            }},
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }],
    }
