"""What an audit produces: severities, findings and one report per skill (plain data)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from skillctl.errors import ConfigError


class Severity(enum.IntEnum):
    """Ordered, so ``finding.severity >= Severity.HIGH`` reads as it should."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | Severity) -> Severity:
        if isinstance(value, Severity):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            names = ", ".join(str(s) for s in cls)
            raise ConfigError(f"unknown severity {value!r}; use one of {names}") from None


SEVERITY_NAMES = tuple(str(s) for s in Severity)


@dataclass(frozen=True)
class Rule:
    """A rule's identity and the advice that goes with each of its findings."""

    id: str
    title: str
    severity: Severity
    category: str
    why: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "severity": str(self.severity), "category": self.category,
                "why": self.why, "fix": self.fix}


@dataclass(frozen=True)
class Finding:
    """One problem at one place. ``path`` is relative to the skill's root; ``line``/``column``
    are 1-based (columns count Unicode code points). ``evidence`` is what was matched, made
    printable (invisible characters shown as ``<U+XXXX>``); ``detail`` adds what the rule alone
    cannot say (the decoded hidden text, the package a name imitates…)."""

    rule: Rule
    path: str
    line: int
    column: int
    evidence: str
    detail: str = ""
    accepted_reason: str | None = None  # set when an allowlist entry accepted this finding
    level: Severity | None = None  # when the context lowers the rule's severity (documentation)

    @property
    def severity(self) -> Severity:
        return self.level if self.level is not None else self.rule.severity

    @property
    def accepted(self) -> bool:
        return self.accepted_reason is not None

    def location(self, root: str = "") -> str:
        path = f"{root}/{self.path}" if root else self.path
        return f"{path}:{self.line}:{self.column}"

    def to_dict(self, root: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule.id,
            "title": self.rule.title,
            "severity": str(self.severity),
            "category": self.rule.category,
            "path": f"{root}/{self.path}" if root else self.path,
            "line": self.line,
            "column": self.column,
            "evidence": self.evidence,
            "detail": self.detail,
            "why": self.rule.why,
            "fix": self.rule.fix,
        }
        if self.accepted_reason is not None:
            out["accepted"] = self.accepted_reason
        return out


@dataclass(frozen=True)
class AuditReport:
    """Everything the audit found in one skill.

    ``findings`` are the active ones (what ``worst_severity`` and ``--fail-on`` look at);
    ``accepted`` are those an allowlist entry accepted, kept with their reason so nothing is
    hidden. ``source`` is what was audited (a folder, a bundle file, a registry reference) and
    ``root`` the prefix that makes finding paths usable from the current folder (empty for a
    bundle). ``digest`` is the bundle's sha256 when a bundle was audited.
    """

    name: str
    source: str
    root: str = ""
    digest: str | None = None
    files: int = 0
    findings: tuple[Finding, ...] = ()
    accepted: tuple[Finding, ...] = ()
    rules_used: tuple[Rule, ...] = field(default=(), repr=False)

    @property
    def worst_severity(self) -> Severity | None:
        """The highest severity among active findings; None when there are none."""
        return max((f.severity for f in self.findings), default=None)

    def at_or_above(self, threshold: Severity | str) -> tuple[Finding, ...]:
        level = Severity.parse(threshold)
        return tuple(f for f in self.findings if f.severity >= level)

    def fails(self, threshold: Severity | str | None) -> bool:
        """True when an active finding is at or above ``threshold`` (None: never)."""
        return threshold is not None and bool(self.at_or_above(threshold))

    def counts(self) -> dict[str, int]:
        out = {name: 0 for name in SEVERITY_NAMES}
        for f in self.findings:
            out[str(f.severity)] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst_severity
        return {
            "name": self.name,
            "source": self.source,
            "digest": self.digest,
            "files": self.files,
            "worst_severity": str(worst) if worst is not None else None,
            "counts": self.counts(),
            "findings": [f.to_dict(self.root) for f in self.findings],
            "accepted": [f.to_dict(self.root) for f in self.accepted],
        }
