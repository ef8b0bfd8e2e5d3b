"""Checking skills: one folder, a SKILL.md, or a tree holding many skills.

``check_skill`` never raises for bad input: every problem is a ``Diagnostic`` so an author sees
all of them at once. ``load_skill`` is for callers that need a valid skill (pack, publish) and
raises ``SkillError`` listing the errors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from skillctl.env.imports import check_folder
from skillctl.errors import SkillError
from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.document import MAX_SKILL_MD_BYTES, SkillDocument, parse_skill_md
from skillctl.skill.files import MAX_DEPTH, scan_folder
from skillctl.skill.ignore import is_junk, load_ignore_rules
from skillctl.skill.model import Skill
from skillctl.skill.references import depth, find_references
from skillctl.skill.rules import check_front_matter
from skillctl.tokens import estimate_tokens

SKILL_MD = "SKILL.md"
MAX_BODY_LINES = 500
MAX_BODY_TOKENS = 5000


@dataclass(frozen=True)
class SkillReport:
    path: str  # the skill folder as shown to the user
    name: str | None
    diagnostics: tuple[Diagnostic, ...]
    skill: Skill | None = None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

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
    if md.is_symlink():
        return None, md_shown, [Diagnostic("SK011", "SKILL.md is a symbolic link; skills must contain the file itself", md_shown)]
    if not md.is_file():
        return None, md_shown, [Diagnostic("SK011", "SKILL.md is not a regular file", md_shown)]
    try:
        with open(md, "rb") as fh:
            return fh.read(MAX_SKILL_MD_BYTES + 1), md_shown, []
    except OSError as exc:
        return None, md_shown, [Diagnostic("SK011", f"cannot read SKILL.md: {exc.strerror or exc}", md_shown)]


def _body_checks(doc: SkillDocument, md_shown: str, files: frozenset[str], dirs: frozenset[str]) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    body = doc.body
    lines = body.rstrip("\n").split("\n") if body.strip() else []
    if not body.strip():
        diags.append(Diagnostic("SK203", "the body is empty; write the instructions the agent should follow", md_shown, doc.body_start_line, 1))
        return diags
    if len(lines) > MAX_BODY_LINES:
        diags.append(
            Diagnostic("SK201", f"body is {len(lines)} lines long; keep it under {MAX_BODY_LINES} and move detail into references/", md_shown, doc.body_start_line + MAX_BODY_LINES, 1)
        )
    tokens = estimate_tokens(body)
    if tokens > MAX_BODY_TOKENS:
        diags.append(
            Diagnostic("SK202", f"body is about {tokens:,} tokens; keep it under {MAX_BODY_TOKENS:,} and move detail into references/", md_shown, doc.body_start_line, 1)
        )
    reported: set[tuple[str, str]] = set()
    for ref in find_references(body):
        line, col = doc.body_start_line + ref.line, ref.column + 1
        if ref.escapes:
            key = ("SK213", ref.raw)
            if key not in reported:
                diags.append(Diagnostic("SK213", f"reference '{ref.raw}' points outside the skill folder; it will not exist once the skill is installed", md_shown, line, col))
                reported.add(key)
            continue
        if ref.target not in files and ref.target not in dirs:
            key = ("SK211", ref.target)
            if key not in reported:
                diags.append(Diagnostic("SK211", f"referenced file '{ref.target}' does not exist in the skill (or is excluded by .skillignore)", md_shown, line, col))
                reported.add(key)
        elif depth(ref.target) > 1:
            key = ("SK212", ref.target)
            if key not in reported:
                diags.append(Diagnostic("SK212", f"reference '{ref.target}' is {depth(ref.target)} folders deep; the spec recommends one level (e.g. references/file.md)", md_shown, line, col))
                reported.add(key)
    return diags


def check_skill(folder: Path, shown: str | None = None) -> SkillReport:
    """Every problem with the skill in ``folder``; never raises for bad content."""
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
        diags += check_front_matter(doc, folder_name, md_shown)
        diags += _body_checks(doc, md_shown, scan.paths, frozenset(scan.dirs))
        diags += [Diagnostic(*found) for found in check_folder(folder, shown, scan.paths, folder_name)]
        raw_name = doc.metadata.get("name")
        name = raw_name if isinstance(raw_name, str) else None
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


def load_skill(folder: Path) -> Skill:
    """The valid skill in ``folder``, or ``SkillError`` listing every error."""
    report = check_skill(folder)
    if report.skill is None:
        errors = report.errors or list(report.diagnostics)
        first = errors[0].format()
        more = f" (and {len(errors) - 1} more; run: skillctl validate {folder})" if len(errors) > 1 else ""
        raise SkillError(f"skill at {folder} is invalid: {first}{more}")
    return report.skill


# ------------------------------------------------------------------------------ discovery


def _has_skill_md(path: Path) -> bool:
    try:
        return any(n.lower() == "skill.md" for n in os.listdir(path))
    except OSError:
        return False


def discover(path: Path) -> Iterator[tuple[Path | None, str, Diagnostic | None]]:
    """Skill folders under ``path`` as (folder, shown, None), or (None, shown, problem).

    ``path`` may be a SKILL.md, a skill folder, or a folder of skills at any depth. Skill folders
    are not searched for nested skills; hidden and junk folders are skipped; symbolic links are
    not followed below the given path (no loops).
    """
    shown = str(path)
    try:
        st = path.stat()  # follows the link the user named explicitly
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            yield None, shown, Diagnostic("SK012", "path is a symbolic-link loop", shown)
        elif isinstance(exc, FileNotFoundError):
            yield None, shown, Diagnostic("SK012", "no such file or folder", shown)
        else:
            yield None, shown, Diagnostic("SK011", f"cannot access: {exc.strerror or exc}", shown)
        return
    import stat as _stat

    if not _stat.S_ISDIR(st.st_mode):
        if path.name.lower() == "skill.md":
            parent = path.parent
            yield parent, str(parent) if str(path) != path.name else ".", None
        else:
            yield None, shown, Diagnostic("SK012", "not a skill: give a skill folder, its SKILL.md, or a folder of skills", shown)
        return
    if _has_skill_md(path):
        yield path, shown, None
        return
    # The walk below is a stack; results are buffered and yielded sorted by path components
    # (skills/a before skills/b before skills/group/c), so output and pack order are predictable.
    found: list[tuple[Path | None, str, Diagnostic | None]] = []
    stack: list[tuple[Path, int]] = [(path, 0)]
    while stack:
        current, level = stack.pop()
        try:
            children = sorted(os.scandir(current), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            found.append((None, str(current), Diagnostic("SK011", f"cannot list folder: {exc.strerror or exc}", str(current))))
            continue
        for entry in children:
            if entry.name.startswith(".") or is_junk(entry.name, True):
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            child = Path(entry.path)
            if _has_skill_md(child):
                found.append((child, str(child), None))
            elif level + 1 < MAX_DEPTH:
                stack.append((child, level + 1))
    yield from sorted(found, key=lambda item: Path(item[1]).parts)
    # "no skills found" only when the search really happened: if ``path`` itself could not be
    # listed, the SK011 above says everything.
    if not any(folder is not None or where == str(path) for folder, where, _ in found):
        yield None, shown, Diagnostic("SK012", "no skills found: no folder here contains a SKILL.md", shown)


def validate_paths(paths: list[Path]) -> list[SkillReport]:
    """Reports for every skill found under ``paths``, in a stable order, each skill once."""
    reports: list[SkillReport] = []
    seen: set[str] = set()
    for p in paths:
        for folder, shown, problem in discover(p):
            if problem is not None:
                key = f"problem:{problem.code}:{shown}"  # `validate x x` reports a bad x once
                if key not in seen:
                    seen.add(key)
                    reports.append(SkillReport(shown, None, (problem,)))
                continue
            assert folder is not None
            key = str(folder.resolve())
            if key in seen:
                continue
            seen.add(key)
            reports.append(check_skill(folder, shown))
    return reports  # in argument order; discover() sorts the skills within each argument
