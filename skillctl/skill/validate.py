"""Checking skills: one folder, a SKILL.md, or a tree holding many skills.

``check_skill`` never raises for bad input: every problem is a ``Diagnostic`` so an author sees
all of them at once. ``load_skill`` is for callers that need a valid skill (pack, publish) and
raises ``SkillError`` listing the errors.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from skillctl.errors import SkillError
from skillctl.fsutil import read_at_most
from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.discovery import Excludes, SearchLimits, discover
from skillctl.skill.document import MAX_SKILL_MD_BYTES, SkillDocument, parse_skill_md
from skillctl.skill.files import scan_folder
from skillctl.skill.ignore import load_ignore_rules
from skillctl.skill.model import Skill, declared_version, version_hint
from skillctl.skill.profiles import PROFILE_NAMES, Profile, get_profile
from skillctl.skill.refcheck import check_references
from skillctl.skill.rules import check_front_matter
from skillctl.skill.scripts import check_scripts
from skillctl.tokens import estimate_tokens, tokens_at_most

SKILL_MD = "SKILL.md"
MAX_BODY_LINES = 500
MAX_BODY_TOKENS = 5000


@dataclass(frozen=True)
class SkillReport:
    path: str  # the skill folder as shown to the user
    name: str | None
    diagnostics: tuple[Diagnostic, ...]
    skill: Skill | None = None
    is_skill: bool = True  # False: a note about the search for skills, not a skill


    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def notes(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "info"]

    def valid(self, strict: bool = False) -> bool:
        return not self.errors and not (strict and self.warnings)

    def to_dict(self, strict: bool = False) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "valid": self.valid(strict),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def _sort_key(d: Diagnostic) -> tuple[Any, ...]:
    return (d.file, d.line, d.column, d.code, d.message)


def _read_skill_md(folder: Path, shown: str) -> tuple[bytes | None, str, list[Diagnostic]]:
    """Bytes of SKILL.md (never more than the cap + 1), the shown path, and problems."""
    md = folder / SKILL_MD
    md_shown = f"{shown}/{SKILL_MD}"
    try:
        names = os.listdir(folder)
    except OSError as exc:
        return None, md_shown, [Diagnostic("SK011", f"cannot list the skill folder: {exc.strerror or exc}", shown)]
    if SKILL_MD not in names:
        other = next((n for n in names if n.lower() == "skill.md"), None)
        if other:
            return None, f"{shown}/{other}", [
                Diagnostic("SK002", f"found '{other}'; the spec requires the exact name SKILL.md — rename it", f"{shown}/{other}")
            ]
        return None, md_shown, [Diagnostic("SK001", "no SKILL.md in this folder; create one (skillctl init NAME scaffolds it)", md_shown)]
    try:
        mode = os.lstat(md).st_mode
    except OSError as exc:
        return None, md_shown, [Diagnostic("SK011", f"cannot read SKILL.md: {exc.strerror or exc}", md_shown)]
    if stat.S_ISLNK(mode):
        return None, md_shown, [Diagnostic("SK011", "SKILL.md is a symbolic link; skills must contain the file itself", md_shown)]
    if not stat.S_ISREG(mode):
        return None, md_shown, [Diagnostic("SK011", "SKILL.md is not a regular file", md_shown)]
    try:
        return read_at_most(md, MAX_SKILL_MD_BYTES + 1), md_shown, []
    except OSError as exc:
        return None, md_shown, [Diagnostic("SK011", f"cannot read SKILL.md: {exc.strerror or exc}", md_shown)]


def _body_checks(doc: SkillDocument, md_shown: str) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    body = doc.body
    if not body.strip():
        diags.append(Diagnostic("SK203", "the body is empty; write the instructions the agent should follow", md_shown, doc.body_start_line, 1))
        return diags
    n_lines = body.rstrip("\n").count("\n") + 1
    if n_lines > MAX_BODY_LINES:
        diags.append(
            Diagnostic("SK201", f"body is {n_lines} lines long; keep it under {MAX_BODY_LINES} and move detail into references/", md_shown, doc.body_start_line + MAX_BODY_LINES, 1)
        )
    # most bodies are under the budget by the cheap upper bound alone
    tokens = estimate_tokens(body) if tokens_at_most(body) > MAX_BODY_TOKENS else 0
    if tokens > MAX_BODY_TOKENS:
        diags.append(
            Diagnostic("SK202", f"body is about {tokens:,} tokens; keep it under {MAX_BODY_TOKENS:,} and move detail into references/", md_shown, doc.body_start_line, 1)
        )
    return diags


def _unversioned(doc: SkillDocument, shown: str, md_shown: str, profile: Profile) -> list[Diagnostic]:
    """SK303, a note: a skill that declares no version, which pack and publish refuse without
    --version (``skillctl.registry.prepare.choose_version``, by the same ``declared_version``).
    Valid by the spec, and a git source needs no version, so it never fails validation."""
    meta = doc.metadata
    md = meta.get("metadata", {})
    if not isinstance(md, dict) or declared_version(md) is not None or "version" in md:
        return []  # declared; or metadata no mapping (SK131), a version no string (SK132)
    top = "version" in meta
    if top and "version" not in profile.fields:
        return []  # SK161 already says: move it to metadata.version
    aside = f" ({profile.title} reads the top-level version; pack and publish read metadata.version)" if top else ""
    loc = doc.key_at("metadata")
    return [Diagnostic("SK303", f"no metadata.version, so pack and publish refuse this skill{aside}: {version_hint(shown)}",
                       md_shown, loc.line, loc.column)]


def _may_hold_python(folder: Path, paths: frozenset[str]) -> bool:
    """Whether the skill holds what the environments checker reads: a requirements.txt, a ``.py``
    file, or a file starting with a python shebang (its ``is_python_script``). Most skills hold
    none, and then the checker — ``ast``, ``packaging`` — is not even imported."""
    for rel in paths:
        name = rel.rsplit("/", 1)[-1]
        if name == "requirements.txt" or rel.endswith(".py"):
            return True
        if rel.endswith((".md", ".txt", ".json", ".yaml", ".yml", ".csv")):
            continue
        try:
            with open(os.path.join(folder, rel), "rb") as fh:
                first = fh.read(256).split(b"\n", 1)[0]
        except OSError:
            continue
        if first.startswith(b"#!") and b"python" in first:
            return True
    return False


def _environment_findings(folder: Path, shown: str, paths: frozenset[str], owner: str) -> list[Diagnostic]:
    """SK251/SK252 from the skill environments checker, imported when a skill needs it."""
    if not _may_hold_python(folder, paths):
        return []
    from skillctl.env.imports import check_folder

    return [Diagnostic(*found) for found in check_folder(folder, shown, paths, owner)]


def check_skill(folder: Path, shown: str | None = None, profile: Profile | str = "spec", *, packaging: bool = False) -> SkillReport:
    """Every problem with the skill in ``folder``; never raises for bad content.

    ``profile`` names the client whose documented front-matter extensions are accepted
    (``skillctl.skill.profiles``); the default, ``spec``, accepts the specification's fields only.
    ``packaging=True`` also notes what pack and publish need beyond the spec: a version (SK303).
    ``skillctl validate`` asks for it; a runtime reading skills from a folder needs no version.
    """
    profile = get_profile(profile) if isinstance(profile, str) else profile
    shown = shown if shown is not None else str(folder)
    raw, md_shown, diags = _read_skill_md(folder, shown)
    if raw is None:
        return SkillReport(shown, None, tuple(sorted(diags, key=_sort_key)))
    doc, parse_diags = parse_skill_md(raw, md_shown)
    diags += parse_diags
    ignore = load_ignore_rules(folder)
    scan = scan_folder(folder, shown, ignore)
    diags += scan.diagnostics
    name = None
    skill = None
    if doc is not None:
        # abspath, not .name: `validate ..` or `validate .` must compare against the real folder
        # name ("..".name is ".."); and not resolve(): a symlinked skill is named by its link.
        folder_name = Path(os.path.abspath(folder)).name
        diags += check_front_matter(doc, folder_name, md_shown, profile)
        if packaging:
            diags += _unversioned(doc, shown, md_shown, profile)
        diags += _body_checks(doc, md_shown)
        paths = scan.paths
        diags += _environment_findings(folder, shown, paths, folder_name)
        raw_name = doc.metadata.get("name")
        name = raw_name if isinstance(raw_name, str) else None
        if doc.body.strip():
            refs = check_references(folder, shown, doc.body, doc.body_start_line, paths, frozenset(scan.dirs), name or folder_name)
            diags += refs.diagnostics
            diags += check_scripts(folder, shown, scan.files, refs.executed, refs.interpreted)
        if not any(d.severity == "error" for d in diags):
            m = doc.metadata
            skill = Skill(
                path=folder,
                name=m["name"],
                description=m["description"],
                body=doc.body,
                license=m.get("license"),
                compatibility=m.get("compatibility"),
                metadata=dict(m.get("metadata") or {}),
                allowed_tools=m.get("allowed-tools"),
                files=tuple(f.rel for f in scan.files),
                body_start_line=doc.body_start_line,
            )
    return SkillReport(shown, name, tuple(sorted(diags, key=_sort_key)), skill)


def check_skill_any_profile(folder: Path, shown: str | None = None) -> SkillReport:
    """``check_skill`` under the spec, or, where that finds errors, under the first client profile
    that accepts the skill (the spec's report when none does). For skills a registry already
    took in: one published with ``--profile claude-code`` must still copy and re-index."""
    report = check_skill(folder, shown)
    if report.skill is not None:
        return report
    for name in PROFILE_NAMES:
        other = check_skill(folder, shown, name) if name != "spec" else report
        if other.skill is not None:
            return other
    return report


def load_skill(folder: Path, profile: Profile | str = "spec") -> Skill:
    """The valid skill in ``folder`` (under ``profile``), or ``SkillError`` listing every error."""
    profile = get_profile(profile) if isinstance(profile, str) else profile
    report = check_skill(folder, profile=profile)
    if report.skill is None:
        errors = report.errors or list(report.diagnostics)
        first = errors[0].format()
        under = f" --profile {profile.name}" if profile.name != "spec" else ""
        more = f" (and {len(errors) - 1} more; run: skillctl validate{under} {folder})" if len(errors) > 1 else ""
        raise SkillError(f"skill at {folder} is invalid: {first}{more}")
    return report.skill


def validate_paths(
    paths: list[Path],
    *,
    exclude: Sequence[str] = (),
    profile: Profile | str = "spec",
    limits: SearchLimits = SearchLimits(),
    packaging: bool = False,
) -> list[SkillReport]:
    """Reports for every skill found under ``paths``, in a stable order, each skill once; a
    problem or note about the search itself is a report of its own (``is_skill`` False).
    ``packaging``: see ``check_skill``."""
    profile = get_profile(profile) if isinstance(profile, str) else profile
    excludes = Excludes(exclude)
    reports: list[SkillReport] = []
    seen: set[str] = set()
    for p in paths:
        for folder, shown, problem in discover(p, excludes, limits):
            if problem is not None:
                key = f"problem:{problem.code}:{shown}"  # `validate x x` reports a bad x once
                if key not in seen:
                    seen.add(key)
                    reports.append(SkillReport(shown, None, (problem,), is_skill=problem.severity == "error"))
                continue
            assert folder is not None
            key = str(folder.resolve())
            if key in seen:
                continue
            seen.add(key)
            reports.append(check_skill(folder, shown, profile, packaging=packaging))
    return reports  # in argument order; discover() sorts the skills within each argument
