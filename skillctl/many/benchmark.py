"""``benchmark.json``: an iteration's runs aggregated per configuration, as the Agent Skills
guide defines it — ``run_summary.{with_skill, without_skill|old_skill}`` with the ``mean`` and
``stddev`` of ``pass_rate``, ``time_seconds`` and ``tokens``, and ``delta`` (the skill minus
the baseline, as numbers) — plus the ``metadata``, ``runs[]`` and ``notes`` that Anthropic's
skill-creator writes beside them (its viewer reads those names).

``stddev`` is the sample standard deviation (n − 1; 0 for a single run). ``tokens`` is the
run's Z, the sum of the context sizes it sent (what it cost); ``time_seconds`` the whole run,
container included. A run that never started counts as pass rate 0 and is left out of time and
tokens (it has neither); the notes name it, and any run that had to be retried elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

WITH_SKILL = "with_skill"
WITHOUT_SKILL = "without_skill"
OLD_SKILL = "old_skill"


@dataclass
class RunRecord:
    """One graded run of one case in one configuration."""

    eval_id: int | str
    eval_name: str
    configuration: str
    run_number: int
    outcome: str
    expectations: list[dict[str, Any]]
    time_seconds: float
    tokens: int
    started: bool = True
    message: str = ""
    path: str = ""  # the run's folder, relative to the iteration
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for e in self.expectations if e["passed"])

    @property
    def total(self) -> int:
        return len(self.expectations)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_id": self.eval_id, "eval_name": self.eval_name, "configuration": self.configuration,
            "run_number": self.run_number, "outcome": self.outcome,
            "result": {"pass_rate": round(self.pass_rate, 4), "passed": self.passed, "failed": self.total - self.passed,
                       "total": self.total, "time_seconds": round(self.time_seconds, 3), "tokens": self.tokens,
                       "errors": 0 if self.started else 1},
            "expectations": self.expectations, "notes": self.notes, "path": self.path,
        }


def stats(values: Sequence[float], digits: int = 4) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    n = len(values)
    mean = sum(values) / n
    stddev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": round(mean, digits), "stddev": round(stddev, digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def summarize_config(records: Sequence[RunRecord]) -> dict[str, dict[str, float]]:
    ran = [r for r in records if r.started]
    return {"pass_rate": stats([r.pass_rate for r in records]),
            "time_seconds": stats([r.time_seconds for r in ran], 3),
            "tokens": stats([float(r.tokens) for r in ran], 1)}


def run_summary(records: Sequence[RunRecord], configs: tuple[str, str]) -> dict[str, Any]:
    primary, baseline = configs
    out: dict[str, Any] = {c: summarize_config([r for r in records if r.configuration == c]) for c in configs}
    out["delta"] = {key: round(out[primary][key]["mean"] - out[baseline][key]["mean"], digits)
                    for key, digits in (("pass_rate", 4), ("time_seconds", 3), ("tokens", 1))}
    return out


def notes(records: Sequence[RunRecord], configs: tuple[str, str]) -> list[str]:
    """What a reader should know: runs retried or not run, and expectations that never tell
    the configurations apart (always pass, or always fail, in both)."""
    out = [n for r in records for n in r.notes]
    verdicts: dict[str, set[bool]] = {}
    for r in records:
        if r.started:
            for e in r.expectations:
                verdicts.setdefault(f"{r.eval_name}: {e['text']}", set()).add(bool(e["passed"]))
    both = {r.configuration for r in records if r.started} >= set(configs)
    if both:
        for key, seen in sorted(verdicts.items()):
            if seen == {True}:
                out.append(f"{key!r} passes in every run of both configurations; it does not show what the skill adds")
            elif seen == {False}:
                out.append(f"{key!r} fails in every run of both configurations; check the expectation or the case")
    return out


def benchmark(records: Sequence[RunRecord], configs: tuple[str, str], metadata: dict[str, Any],
              case_order: Sequence[str]) -> dict[str, Any]:
    """The whole file; runs listed by case (in ``case_order``), configuration and run number."""
    ordered = sorted(records, key=lambda r: (case_order.index(r.eval_name), configs.index(r.configuration), r.run_number))
    return {"metadata": metadata, "runs": [r.to_dict() for r in ordered],
            "run_summary": run_summary(records, configs), "notes": notes(ordered, configs)}
