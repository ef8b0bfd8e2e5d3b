"""``skillctl audit``: static analysis of skills before they run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from skillctl.cli.common import emit_json, progress, registry_opener, registry_option
from skillctl.errors import SkillctlError
from skillctl.words import count

_FAIL_CHOICES = ["info", "low", "medium", "high", "critical", "none"]
_SHOW_CHOICES = ["info", "low", "medium", "high", "critical"]

_HELP = """Audit skills for malicious or risky content, without running anything.

TARGET is a skill folder, its SKILL.md, a folder holding many skills (any depth), a .skill.tgz
bundle, or - when no such file exists - a registry reference (NAME, NAME@RANGE, skill_ID[@VERSION])
fetched from --registry. Every file is read as text or parsed (Python with ast); no skill code
is executed or imported.

Rules (skillctl/audit/rules.yaml; add yours with --rules FILE) look for prompt injection and
instruction hijacking, hidden Unicode (decoded), download-and-execute, obfuscated execution,
credential access with network sends, exfiltration, persistence, destructive commands,
instructions fetched at run time, look-alike or unpinned package installs, and writes into other
skills. Each finding: path:line:col, rule id, severity, evidence; the rules that fired are
explained (why, how to fix) at the end.

A skill's .skillaudit file accepts reviewed findings, each with a reason; accepted findings are
listed but do not fail the audit (--no-allowlist ignores the file).

Exit status: 0 nothing at or above --fail-on; 1 a finding at or above it, or a target that could
not be audited; 2 usage error.
"""


@click.command("audit", help=_HELP)
@click.argument("targets", nargs=-1, metavar="TARGET...")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text", show_default=True,
              help="text for people; json; sarif (SARIF 2.1.0, for GitHub code scanning). json/sarif go to stdout.")
@click.option("--fail-on", "fail_on", type=click.Choice(_FAIL_CHOICES), default="high", show_default=True,
              envvar="SKILLCTL_AUDIT_FAIL_ON", help="Exit 1 when a finding is at or above this severity (none: never). "
              "Env: SKILLCTL_AUDIT_FAIL_ON.")
@click.option("--min-severity", "min_severity", type=click.Choice(_SHOW_CHOICES), default="low", show_default=True,
              help="Leave out findings below this severity from the output (they never fail the audit anyway unless "
              "--fail-on is lower).")
@click.option("--rules", "rule_files", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Extra rules file (same format as the shipped rules.yaml); may be repeated.")
@click.option("--no-allowlist", is_flag=True, help="Ignore .skillaudit files (for skills someone else wrote).")
@registry_option
def audit_cmd(targets: tuple[str, ...], fmt: str, fail_on: str, min_severity: str, rule_files: tuple[Path, ...],
              no_allowlist: bool, registry_url: str | None) -> None:
    from skillctl.audit import Severity, audit_paths, load_rules
    from skillctl.audit.api import AuditProblem, audit_ref

    try:
        rules = load_rules(list(rule_files))
    except SkillctlError as exc:
        raise click.ClickException(str(exc)) from exc
    paths: list[Path] = []
    refs: list[str] = []
    for target in targets or (".",):
        path = Path(target)
        if path.exists() or path.is_symlink() or "/" in target or target in (".", ".."):
            paths.append(path)
        else:
            refs.append(target)
    use_allowlist = not no_allowlist
    reports, problems = audit_paths(paths, rules=rules, use_allowlist=use_allowlist)
    if refs:
        try:
            registry = registry_opener(registry_url)()
        except SkillctlError as exc:  # no registry (nothing is created): a problem of every ref, reported with the rest
            registry, unopened = None, exc
        for ref in refs:
            try:
                if registry is None:
                    raise unopened
                reports.append(audit_ref(registry, ref, rules=rules, use_allowlist=use_allowlist))
            except SkillctlError as exc:
                problems.append(AuditProblem(ref, f"not a file or folder here, and not auditable from the registry: {exc}"))

    shown_min = Severity.parse(min_severity)
    threshold = None if fail_on == "none" else Severity.parse(fail_on)
    failing = [r for r in reports if r.fails(threshold)]
    failed = bool(failing or problems)
    if fmt == "sarif":
        from skillctl.audit.sarif import to_sarif

        visible = [_only(r, shown_min) for r in reports]
        click.echo(json.dumps(to_sarif(visible, problems, list(rules.rules.values())), indent=2, ensure_ascii=False))
    elif fmt == "json":
        emit_json(_json(reports, problems, shown_min, fail_on, failed))
    else:
        _text(reports, problems, shown_min, threshold)
    if fmt != "text":
        progress(_summary(reports, problems, threshold, failing))
    sys.exit(1 if failed else 0)


def _only(report, shown_min):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(report, findings=tuple(f for f in report.findings if f.severity >= shown_min),
                   accepted=tuple(f for f in report.accepted if f.severity >= shown_min))


def _json(reports, problems, shown_min, fail_on, failed):  # type: ignore[no-untyped-def]
    from skillctl import __version__

    skills = []
    for r in reports:
        d = _only(r, shown_min).to_dict()
        d["counts"] = r.counts()  # counts cover every finding, shown or not
        skills.append(d)
    totals = {name: sum(r.counts()[name] for r in reports) for name in reports[0].counts()} if reports else {}
    return {
        "tool": {"name": "skillctl", "version": __version__},
        "fail_on": fail_on,
        "failed": failed,
        "summary": {"skills": len(reports), "problems": len(problems), "counts": totals,
                    "accepted": sum(len(r.accepted) for r in reports)},
        "skills": skills,
        "problems": [{"source": p.source, "message": p.message} for p in problems],
    }


def _text(reports, problems, shown_min, threshold) -> None:  # type: ignore[no-untyped-def]
    fired = {}
    for r in reports:
        shown = [f for f in r.findings if f.severity >= shown_min]
        accepted = [f for f in r.accepted if f.severity >= shown_min]
        for f in shown:
            click.echo(f"{f.location(r.root)}: {f.rule.id} {f.severity} {f.rule.title}")
            click.echo(f"    evidence: {f.evidence}")
            if f.detail:
                click.echo(f"    detail:   {f.detail}")
            fired[f.rule.id] = f.rule
        for f in accepted:
            click.echo(f"{f.location(r.root)}: {f.rule.id} {f.severity} (accepted: {f.accepted_reason})")
    for p in problems:
        click.echo(f"{p}", err=True)
    if fired:
        click.echo("")
        for rule in sorted(fired.values(), key=lambda x: x.id):
            click.echo(f"{rule.id} {rule.title}: {rule.why}")
            click.echo(f"    fix: {rule.fix}")
    failing = [r for r in reports if r.fails(threshold)]
    click.echo(_summary(reports, problems, threshold, failing))


def _summary(reports, problems, threshold, failing) -> str:  # type: ignore[no-untyped-def]
    counts = {name: sum(r.counts()[name] for r in reports) for name in ("critical", "high", "medium", "low", "info")}
    accepted = sum(len(r.accepted) for r in reports)
    status = "FAILED" if failing or problems else "ok"
    gate = f"{len(failing)} at or above {threshold}" if threshold is not None else "--fail-on none"
    parts = ", ".join(f"{n} {name}" for name, n in counts.items())
    extra = f", {accepted} accepted" if accepted else ""
    trouble = f"; {len(problems)} could not be audited" if problems else ""
    return f"{status}: {count(len(reports), 'skill')} audited, {gate}; {parts}{extra}{trouble}"
