"""Running a rule set over one skill's files: matches, signals, analyzers, combinations.

The order per file: match rules (each gated by its keywords, then one ``finditer``), signal
patterns, then the analyzers that apply to the file's kind. Combinations are evaluated once
every file has raised its signals. Then ``supersedes`` removes findings a more specific rule
already covers, and the allowlist moves accepted findings aside. Nothing here runs skill code.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, replace

from skillctl.audit import allowlist, archives, blobs, packages, pyflow, sources, unicode
from skillctl.audit.model import AuditReport, Finding, Rule, Severity
from skillctl.audit.ruleset import Matcher, RuleSet
from skillctl.audit.sources import SkillSource
from skillctl.audit.textfile import EXECUTABLE_MAGIC, TextFile
from skillctl.bundle.members import SKILL_FILE

MAX_PER_RULE_AND_FILE = 10
SCRIPT_KINDS = frozenset({"shell", "python", "powershell", "javascript"})
MAX_SIGNALS_PER_FILE = 50
_EVIDENCE = 200
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)


_SKILL_PATH = re.compile(
    r"(?:^|/)(?:skills/(?:(?P<a>[\w.-]{1,64})(?:/|$)|$)|\.\./(?P<b>[\w.-]{1,64})/(?:skill\.md|scripts/|references/|assets/))"
    # A wildcard or a variable where the skill's name goes (skills/*/SKILL.md, skills/{}/) is every skill.
    r"|(?:^|/)skills/(?:\*|\{|%s|\$)|(?:^|/)\.(?:claude|agents|codex|cursor|gemini|copilot|openclaw)/skills/?$",
    re.IGNORECASE,
)


def printable(text: str, limit: int = _EVIDENCE) -> str:
    """Evidence safe to print: invisible characters spelled out, length capped."""
    shown = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text[: limit * 2])
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@dataclass(frozen=True)
class _SignalHit:
    path: str
    line: int
    column: int
    evidence: str
    unit: tuple[int, int]  # what a line-scope combination groups by: where its statement starts (line, column)


@dataclass
class _Run:
    rules: RuleSet
    source: SkillSource
    own_names: frozenset[str]
    description: tuple[str, int, int] | None  # text, line, column
    findings: list[Finding] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)  # path -> file kind
    signals: dict[str, dict[str, list[_SignalHit]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))

    def add(self, rule: Rule | None, path: str, line: int, column: int, evidence: str, detail: str = "",
            level: Severity | None = None) -> None:
        if rule is not None:
            self.findings.append(Finding(rule, path, line, column, printable(evidence), printable(detail, 600), level=level))

    def analyzer(self, key: str, path: str, line: int, column: int, evidence: str, detail: str = "") -> None:
        self.add(self.rules.rule_for(key), path, line, column, evidence, detail)

    def is_foreign_skill(self, text: str) -> bool:
        """A path into the skills folder, or into a skill other than the one audited."""
        for m in _SKILL_PATH.finditer(text):
            named = (m.group("a") or m.group("b") or "").lower()
            if m.group("a") is None and m.group("b") is None:
                return True  # every skill, or the skills folder itself
            if not named or named not in self.own_names:
                return True
        return False

    def signal(self, name: str, path: str, line: int, column: int, evidence: str,
               unit: tuple[int, int] | None = None) -> None:
        """``unit``: where the statement holding the hit starts; by default its line (code, syntax trees)."""
        hits = self.signals[name][path]
        if len(hits) < MAX_SIGNALS_PER_FILE:
            hits.append(_SignalHit(path, line, column, printable(evidence, 120), (line, 1) if unit is None else unit))


def _evidence(file: TextFile, start: int, end: int) -> str:
    line_start, line_end = file.line_span(start)
    if line_end - line_start <= _EVIDENCE:
        return file.text[line_start:line_end].strip()
    lo = max(line_start, start - 60)
    hi = min(line_end, max(end, start) + 100, lo + _EVIDENCE)
    return ("…" if lo > line_start else "") + file.text[lo:hi].strip() + ("…" if hi < line_end else "")


def _html_comments(text: str) -> list[tuple[int, int]]:
    spans = []
    pos = text.find("<!--")
    while pos != -1:
        end = text.find("-->", pos + 4)
        stop = len(text) if end == -1 else end
        spans.append((pos + 4, stop))
        if end == -1:
            break
        pos = text.find("<!--", end + 3)
    return spans


@dataclass(frozen=True)
class _Match:
    line: int
    column: int
    evidence: str
    documentation: str | None = None  # why the text reads as documentation, not instructions
    unit: tuple[int, int] = (0, 0)  # where its statement starts: its line, or its sentence in Markdown prose


def _documentation(run: _Run, file: TextFile, start: int, line_start: int, line_end: int) -> str | None:
    """Why a match in prose is documentation of a technique rather than a step to follow.

    Security guides quote attacks: payload tables, quoted injection phrases, "example of a
    malicious…". Such matches are still reported, at the documentation severity of the rules
    file (medium), so a skill cannot hide a finding this way - only lower it."""
    if file.kind != "markdown" or run.rules.documentation is None:
        return None
    if not file.in_code_block(start):
        # Outside code: tables of payloads and quoted phrases are talked about, not run. (Inside
        # a code block, quotes are shell syntax and a table cannot occur.)
        if file.text[line_start:line_end].lstrip().startswith("|"):
            return "a Markdown table row"
        if start > line_start and file.text[start - 1] in "\"'\u201c\u2018\u00ab":
            return "quoted"
    prev_start = file.line_span(line_start - 1)[0] if line_start > 0 else line_start
    if run.rules.documentation.search(file.text, prev_start, line_end):
        return "presented as an example or an attack"
    headings = run.rules.documentation_headings
    if headings is not None and not file.in_code_block(start):
        heading = file.heading_over(start)
        if heading is not None and headings.search(heading):
            return "under a heading that lists risks or attacks"
    return None


def _matches(run: _Run, matcher: Matcher, file: TextFile, *, documentation: bool = True) -> list[_Match]:
    """Each reportable match of ``matcher`` in ``file``, at most one per line."""
    out: list[_Match] = []
    if matcher.within == "description":
        if file.path != SKILL_FILE or run.description is None:
            return out
        text, line, column = run.description
        m = matcher.regex.search(text)
        if m and not _excluded(run, matcher, m, text):
            out.append(_Match(line, column, text.strip()[:_EVIDENCE]))
        return out
    # Markdown prose is read a paragraph at a time: authors wrap sentences ("save this rule" /
    # "to your memory") and a line-by-line match would miss them. Code blocks keep their lines. A
    # line-scope combination meets in one sentence of prose, one line elsewhere.
    file = paragraphs = file.prose
    if matcher.within == "html-comment":
        spans = _html_comments(file.text)
    elif matcher.keywords:
        # Every pattern stays on one line and every match contains a keyword: search only the
        # lines that hold one (found with str.find, far faster than the regex engine).
        spans = file.keyword_lines(matcher.keywords)
    else:
        spans = [(0, len(file.text))]
    seen_lines: set[int] = set()
    for lo, hi in spans:
        for m in matcher.regex.finditer(file.text, lo, hi):
            line_start, line_end = file.line_span(m.start())
            if matcher.unless is not None and _unless(matcher, paragraphs, m.start()):
                continue
            if _excluded(run, matcher, m, file.text):
                continue
            line, column = file.position(m.start())
            if line in seen_lines:
                continue
            seen_lines.add(line)
            doc = _documentation(run, file, m.start(), line_start, line_end) if documentation and matcher.within == "file" else None
            out.append(_Match(line, column, _evidence(file, m.start(), m.end()), doc,
                              paragraphs.position(paragraphs.statement_start(m.start()))))
            if len(out) > MAX_PER_RULE_AND_FILE:
                return out
    return out


def _unless(matcher: Matcher, paragraphs: TextFile, offset: int) -> bool:
    """Whether the match's statement (or, with unless_in: paragraph, its whole line) clears it."""
    assert matcher.unless is not None
    span = paragraphs.statement_span(offset) if matcher.unless_in == "statement" else paragraphs.line_span(offset)
    return matcher.unless.search(paragraphs.text, *span) is not None


def _excluded(run: _Run, matcher: Matcher, m: re.Match[str], text: str) -> bool:
    if matcher.not_own_skill is None:
        return False
    named = (m.group(matcher.not_own_skill) or "").lower()
    return named in run.own_names


def _scan_text(run: _Run, file: TextFile) -> None:
    kind, present = file.kind, run.rules.keywords_in(file.lower)
    for mr in run.rules.matches:
        # Description rules look at the parsed front matter, whatever the keywords say.
        if mr.matcher.within != "description" and not mr.matcher.wanted(kind, present):
            continue
        hits = _matches(run, mr.matcher, file)
        for n, hit in enumerate(hits):
            if n == MAX_PER_RULE_AND_FILE:
                run.findings[-1] = _with_more(run.findings[-1])
                break
            level = None
            detail = ""
            doc_level = run.rules.documentation_severity
            if hit.documentation and mr.rule.severity > doc_level:
                level, detail = doc_level, f"reported at {doc_level}, not {mr.rule.severity}: the text is {hit.documentation}"
            run.add(mr.rule, file.path, hit.line, hit.column, hit.evidence, detail, level)
            if mr.signal and not hit.documentation:
                run.signal(mr.signal, file.path, hit.line, hit.column, hit.evidence, hit.unit)
    for sig in run.rules.signals:
        if sig.matcher.wanted(kind, present):
            for hit in _matches(run, sig.matcher, file):
                if not hit.documentation:
                    run.signal(sig.id, file.path, hit.line, hit.column, hit.evidence, hit.unit)
    for hit in unicode.scan(file):
        line, column = file.position(hit.offset)
        run.analyzer(hit.analyzer, file.path, line, column, hit.evidence, hit.detail)
    _scan_blobs(run, file)
    for pk in packages.scan(file, run.rules.packages, run.rules.trusted_indexes):
        line, column = file.position(pk.offset)
        run.analyzer(pk.analyzer, file.path, line, column, pk.evidence, pk.detail)
    if kind == "python":
        result = pyflow.analyze(file.text, lambda s: _secret_signal(run.rules, s), run.is_foreign_skill)
        for h in result.hits:
            run.analyzer(h.analyzer, file.path, h.line, h.column, h.evidence, h.detail)
        for name, line, column, evidence in result.signals:
            run.signal(name, file.path, line, column, evidence)


def _with_more(f: Finding) -> Finding:
    note = f"more matches of {f.rule.id} in this file are not listed"
    return replace(f, detail=f"{f.detail}; {note}" if f.detail else note)


# Signals whose patterns, found in a Python string constant, make what is read from it a secret.
# Not secret-file: a .env value sent as an API key is how every integration is written (its
# uploads are caught by the line and webhook combinations instead).
SECRET_SIGNALS = ("credential-read",)


def _secret_signal(rules: RuleSet, text: str) -> str | None:
    """The secret signal a string constant raises (a key file's path, a .env file), or None."""
    lowered = text.lower()
    for s in rules.signals:
        if s.id in SECRET_SIGNALS and s.matcher.kinds and any(k in lowered for k in s.matcher.keywords) \
                and s.matcher.regex.search(text):
            return s.id
    return None


def _scan_blobs(run: _Run, file: TextFile) -> None:
    for blob in blobs.find(file):
        line, column = file.position(blob.offset)
        if blob.decoded is not None:
            inner = _inner_findings(run, file.path, blob.decoded)
            if inner:
                worst = max(inner, key=lambda f: f.severity)
                run.analyzer("blob.payload", file.path, line, column, f"{blob.encoding} blob of {blob.length} characters",
                             f"decodes to text that {worst.rule.id} ({worst.rule.title}) flags: {worst.evidence}")
                continue
        if blobs.reportable_long(file, blob):
            what = "text" if blob.decoded is not None else "binary data"
            run.analyzer("blob.long", file.path, line, column, f"{blob.encoding} blob of {blob.length} characters",
                         f"decodes to {what}" + (f": {blob.decoded[:120]!r}" if blob.decoded else ""))


def _scan_archive(run: _Run, path: str, data: bytes) -> None:
    facts = archives.inspect(path, data)
    for hit in facts.hits:
        run.analyzer(hit.analyzer, path, 1, 1, hit.evidence, hit.detail)
    for name, evidence in facts.signals:
        run.signal(name, path, 1, 1, evidence)


def _inner_findings(run: _Run, path: str, decoded: str) -> list[Finding]:
    """High and critical findings of the match rules on decoded text (one level deep)."""
    inner = TextFile(path + "#decoded", decoded.encode("utf-8"))
    inner.kind = "shell"
    sub = _Run(run.rules, run.source, run.own_names, None)
    inner_present = run.rules.keywords_in(inner.lower)
    for mr in run.rules.matches:
        if mr.matcher.within == "file" and mr.matcher.wanted("shell", inner_present):
            for hit in _matches(sub, mr.matcher, inner, documentation=False):
                sub.add(mr.rule, path, hit.line, hit.column, hit.evidence)
    return [f for f in sub.findings if f.severity >= Severity.HIGH]


def _combinations(run: _Run) -> None:
    for combo in run.rules.combinations:
        per_signal = [run.signals.get(s, {}) for s in combo.all_of]
        if not all(per_signal):
            continue
        if combo.scope == "scripts":
            # Across the skill's scripts: one file may read a secret and another send it.
            per_signal = [{p: h for p, h in hits.items() if run.kinds.get(p) in SCRIPT_KINDS} for hits in per_signal]
            if not all(per_signal):
                continue
            last = per_signal[-1]
            at = last[sorted(last)[0]][0]
            run.add(combo.rule, at.path, at.line, at.column, at.evidence, _combo_detail(combo.all_of, per_signal, None))
            continue
        if combo.scope == "skill":
            last = per_signal[-1]
            first_path = sorted(last)[0]
            at = last[first_path][0]
            run.add(combo.rule, at.path, at.line, at.column, at.evidence, _combo_detail(combo.all_of, per_signal, None))
            continue
        paths = set.intersection(*(set(p) for p in per_signal))
        for path in sorted(paths):
            if combo.scope == "line":
                units = set.intersection(*({h.unit for h in p[path]} for p in per_signal))
                if combo.ordered:
                    units = {u for u in units if _in_order([[h for h in p[path] if h.unit == u] for p in per_signal])}
                for unit in sorted(units)[:MAX_PER_RULE_AND_FILE]:
                    at = next(h for h in per_signal[-1][path] if h.unit == unit)
                    run.add(combo.rule, path, at.line, at.column, at.evidence, "")
            else:
                at = per_signal[-1][path][0]
                run.add(combo.rule, path, at.line, at.column, at.evidence, _combo_detail(combo.all_of, per_signal, path))


def _in_order(hits: list[list[_SignalHit]]) -> bool:
    """Whether one hit of each signal can be picked with each after the one before."""
    at = (0, 0)
    for group in hits:
        later = [(h.line, h.column) for h in group if (h.line, h.column) > at]
        if not later:
            return False
        at = min(later)
    return True


def _combo_detail(names: tuple[str, ...], per_signal: list[dict[str, list[_SignalHit]]], path: str | None) -> str:
    parts = []
    for name, hits in zip(names, per_signal):
        where = path if path is not None else sorted(hits)[0]
        h = hits[where][0]
        parts.append(f"{name} at {h.path}:{h.line}: {h.evidence}")
    return "; ".join(parts)


def _supersede(run: _Run) -> list[Finding]:
    """Drop findings a more specific rule already made: on the same line; for a combination, in
    the same file; for a combination across scripts or the skill, anywhere in the skill."""
    combos = {c.rule.id for c in run.rules.combinations}
    wide = {c.rule.id for c in run.rules.combinations if c.scope in ("scripts", "skill")}
    present: dict[str, set[tuple[str, int]]] = defaultdict(set)
    files_with: dict[str, set[str]] = defaultdict(set)
    for f in run.findings:
        present[f.rule.id].add((f.path, f.line))
        files_with[f.rule.id].add(f.path)
    kept = []
    for f in run.findings:
        dropped = False
        for rid, gone in run.rules.supersedes.items():
            if f.rule.id in gone and rid != f.rule.id:
                if f.rule.id in wide and files_with[rid]:
                    dropped = True
                elif f.rule.id in combos and f.path in files_with[rid]:
                    dropped = True
                elif (f.path, f.line) in present[rid]:
                    dropped = True
        if not dropped:
            kept.append(f)
    return kept


def _file_notes(run: _Run) -> None:
    src = run.source
    for path in sorted(src.truncated):
        run.analyzer("files.truncated", path, 1, 1, path, f"only the first {sources.MAX_FILE_BYTES} bytes were read")
    for path, target in src.links:
        escapes = target.startswith("/") or ".." in target.split("/")
        run.analyzer("files.link", path, 1, 1, f"{path} -> {target}", "points outside the skill" if escapes else "")
    for note in src.skipped:
        run.analyzer("files.skipped", ".", 1, 1, note)


def _front_matter(source: SkillSource) -> tuple[set[str], tuple[str, int, int] | None]:
    from skillctl.skill.document import parse_skill_md

    raw = source.files.get(SKILL_FILE)
    names = {source.name.lower()}
    if raw is None:
        return names, None
    doc, _problems = parse_skill_md(raw, SKILL_FILE)
    if doc is None:
        return names, None
    name = doc.metadata.get("name")
    if isinstance(name, str):
        names.add(name.strip().lower())
    description = doc.metadata.get("description")
    if not isinstance(description, str):
        return names, None
    where = doc.where("description")
    return names, (description, where.line, where.column)


def _apply_allowlist(run: _Run, findings: list[Finding], use: bool) -> tuple[list[Finding], list[Finding]]:
    raw = run.source.files.get(allowlist.ALLOWLIST_FILE)
    if raw is None or not use:
        return findings, []
    entries, problems = allowlist.parse(raw)
    invalid = run.rules.rule_for("allowlist.invalid")
    extra = [Finding(invalid, allowlist.ALLOWLIST_FILE, p.line, p.column, p.evidence, p.detail) for p in problems if invalid]
    active, accepted = [], []
    used: set[int] = set()
    for f in findings:
        entry = next((e for e in entries if e.matches(f.rule.id, f.path, f.line)), None)
        if entry is None:
            active.append(f)
        else:
            used.add(id(entry))
            accepted.append(replace(f, accepted_reason=entry.reason))
    unused = run.rules.rule_for("allowlist.unused")
    for e in entries:
        if id(e) not in used and unused is not None:
            extra.append(Finding(unused, allowlist.ALLOWLIST_FILE, e.at_line, 1, f"{e.rule} {e.path or ''}".strip(),
                                 "no finding matched this entry"))
    return active + extra, accepted


def audit_source(source: SkillSource, rules: RuleSet, *, use_allowlist: bool = True) -> AuditReport:
    """Audit one skill's files with ``rules``."""
    names, description = _front_matter(source)
    run = _Run(rules, source, frozenset(names), description)
    for path, data in source.files.items():
        if path == allowlist.ALLOWLIST_FILE:
            continue
        file = TextFile(path, data)
        run.kinds[path] = file.kind
        if archives.is_archive(data):
            _scan_archive(run, path, data)
            continue
        if file.is_binary:
            if data.startswith(EXECUTABLE_MAGIC):
                run.analyzer("files.executable", path, 1, 1, path, f"starts with {data[:4]!r}")
            continue
        _scan_text(run, file)
    _combinations(run)
    _file_notes(run)
    findings = _supersede(run)
    active, accepted = _apply_allowlist(run, findings, use_allowlist)
    key = lambda f: (f.path, f.line, f.column, f.rule.id)  # noqa: E731
    return AuditReport(
        name=source.name,
        source=source.source,
        root=source.root,
        digest=source.digest,
        files=len(source.files),
        findings=tuple(sorted(active, key=key)),
        accepted=tuple(sorted(accepted, key=key)),
        rules_used=tuple(rules.rules.values()),
    )
