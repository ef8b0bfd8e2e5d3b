"""Rules are data: YAML files checked against ``rules.schema.json``, compiled once.

The shipped ``rules.yaml`` holds every rule; ``--rules FILE`` adds more with the same format.
Three kinds of rule:

- ``match``: a regular expression over a file (or only inside its HTML comments, or the skill's
  description), with keywords that must appear first so most files are skipped at C speed;
- ``combination``: fires when named *signals* (regex matches or facts the Python analysis
  reports, e.g. ``credential-read`` and ``network-send``) meet on one line, in one file, or in
  one skill;
- ``analyzer``: a check written in code (hidden Unicode, Python syntax trees, encoded blobs,
  package installs) whose findings carry the rule's id, severity and advice.

Every pattern passes ``regexcheck.compile_safe`` (linear time on hostile input), ids are unique
across all files, and combinations may only name signals that exist.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from skillctl.audit.model import Rule, Severity
from skillctl.audit.regexcheck import UnsafePattern, compile_safe
from skillctl.errors import ConfigError
from skillctl.fsutil import read_regular
from skillctl.nesting import NestingError, check_yaml
from skillctl.schema import schema_problems, summarize, validator

RULES_SCHEMA = "rules.schema.json"
SHIPPED_RULES = "rules.yaml"
# Every file kind except binary: what a match rule looks at unless it says otherwise.
TEXT_KINDS = frozenset({"markdown", "shell", "python", "powershell", "javascript", "text"})
# Analyzer keys implemented in code; a rule file can give each one id, severity and advice.
ANALYZERS = (
    "unicode.tags", "unicode.bidi", "unicode.zero-width-run", "unicode.variation-selectors", "unicode.invisible",
    "python.decode-exec", "python.remote-exec", "python.dynamic-exec", "python.credential-flow",
    "python.dns-exfil", "python.skill-write", "python.syntax-error",
    "blob.payload", "blob.long",
    "archive.encrypted", "archive.executable", "archive.unreadable",
    "packages.lookalike", "packages.untrusted-source", "packages.unpinned", "packages.unpinned-vcs",
    "files.link", "files.executable", "files.truncated", "files.skipped",
    "allowlist.invalid", "allowlist.unused",
)
_MAX_RULE_FILE = 1024 * 1024


@dataclass(frozen=True)
class Matcher:
    regex: re.Pattern[str]
    keywords: tuple[str, ...]  # lowercase; at least one must occur in the file
    kinds: frozenset[str]
    within: str  # "file", "html-comment" or "description"
    unless: re.Pattern[str] | None  # a matched line that also matches this is not reported
    not_own_skill: str | None  # group naming a skill; matches naming the audited skill are ignored
    unless_in: str = "statement"  # or "paragraph": where `unless` looks in Markdown prose

    def wanted(self, kind: str, present: frozenset[str]) -> bool:
        """Whether a file of ``kind`` holding the keywords ``present`` can match at all."""
        if kind not in self.kinds:
            return False
        return not self.keywords or not present.isdisjoint(self.keywords)


@dataclass(frozen=True)
class MatchRule:
    rule: Rule
    matcher: Matcher
    signal: str | None  # also raise this signal where it matches


@dataclass(frozen=True)
class Signal:
    id: str
    matcher: Matcher


@dataclass(frozen=True)
class Combination:
    rule: Rule
    all_of: tuple[str, ...]
    scope: str  # "line", "file", "scripts" or "skill"
    ordered: bool = False  # on one line: the signals occur in the order all_of lists them


@dataclass
class RuleSet:
    rules: dict[str, Rule] = field(default_factory=dict)
    matches: list[MatchRule] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    combinations: list[Combination] = field(default_factory=list)
    analyzers: dict[str, Rule] = field(default_factory=dict)
    supersedes: dict[str, frozenset[str]] = field(default_factory=dict)
    packages: dict[str, frozenset[str]] = field(default_factory=dict)
    trusted_indexes: frozenset[str] = frozenset()
    installers: frozenset[str] = frozenset()
    sources: list[str] = field(default_factory=list)
    documentation: re.Pattern[str] | None = None  # markers of text that documents a technique
    documentation_severity: Severity = Severity.MEDIUM
    documentation_headings: re.Pattern[str] | None = None  # headings over prose that lists risks
    _keywords: tuple[tuple[str, tuple[str, ...]], ...] | None = field(default=None, repr=False)

    def keywords_in(self, lowered: str) -> frozenset[str]:
        """The keywords of all rules that occur in ``lowered``: each looked up once per file
        (str ``in`` is a C substring search), then every rule asks this set."""
        if self._keywords is None:
            words = {k for m in self.matches for k in m.matcher.keywords} | {k for s in self.signals for k in s.matcher.keywords}
            # Shortest first, each with the shorter keywords it contains: when "without" is absent,
            # "without telling" need not be searched for.
            ordered = sorted(words, key=lambda k: (len(k), k))
            self._keywords = tuple((k, tuple(s for s in ordered if len(s) < len(k) and s in k)) for k in ordered)
        found: set[str] = set()
        for k, parts in self._keywords:
            if all(p in found for p in parts) and k in lowered:
                found.add(k)
        return frozenset(found)

    def rule_for(self, analyzer: str) -> Rule | None:
        return self.analyzers.get(analyzer)

    def signal_ids(self) -> set[str]:
        ids = {s.id for s in self.signals} | {m.signal for m in self.matches if m.signal}
        return ids | PYTHON_SIGNALS | ARCHIVE_SIGNALS


# Signals the Python analysis raises from syntax trees (see pyflow).
PYTHON_SIGNALS = frozenset({"credential-read", "secret-file", "network-send", "download", "exec"})
# Signals the archive analysis raises from what an archive holds (see archives).
ARCHIVE_SIGNALS = frozenset({"encrypted-archive", "archive-executable-hidden"})


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.audit").joinpath(RULES_SCHEMA).read_text(encoding="utf-8"))


def _compile(pattern: str, case_sensitive: bool, where: str) -> re.Pattern[str]:
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    try:
        return compile_safe(pattern, flags)
    except UnsafePattern as exc:
        raise ConfigError(f"{where}: pattern refused: {exc}") from None


def _expand(pattern: str, rs: RuleSet) -> str:
    if "{installers}" not in pattern:
        return pattern
    hosts = "|".join(re.escape(h) for h in sorted(rs.installers)) or "(?!)"
    return pattern.replace("{installers}", f"https?://(?:{hosts})")


def _matcher(spec: dict[str, Any], where: str, rs: RuleSet) -> Matcher:
    case = bool(spec.get("case_sensitive", False))
    regex = _compile(_expand(spec["pattern"], rs), case, where)
    not_own = spec.get("not_own_skill")
    if not_own is not None and not_own not in regex.groupindex:
        raise ConfigError(f"{where}: not_own_skill names group {not_own!r}, which the pattern does not define")
    unless = _compile(_expand(spec["unless"], rs), case, f"{where} (unless)") if "unless" in spec else None
    kinds = frozenset(spec.get("files", sorted(TEXT_KINDS)))
    return Matcher(regex, tuple(k.lower() for k in spec.get("keywords", ())), kinds, spec.get("within", "file"),
                   unless, not_own, spec.get("unless_in", "statement"))


def _add_file(rs: RuleSet, doc: Any, label: str) -> None:
    errors = schema_problems(doc, _schema(), wording=validator, pointer=True)
    if errors:
        raise ConfigError(f"{label}: {summarize(errors)}; see the format in skillctl/audit/{RULES_SCHEMA}")
    # Installers first: patterns below may use {installers}.
    rs.installers |= frozenset(h.lower() for h in doc.get("installers", ()))
    for spec in doc.get("signals", []):
        # Several entries may share an id: each adds patterns to the same signal.
        rs.signals.append(Signal(spec["id"], _matcher(spec["match"], f"{label}: signal {spec['id']}", rs)))
    pending: list[tuple[dict[str, Any], Rule]] = []
    for spec in doc.get("rules", []):
        rid = spec["id"]
        if rid in rs.rules:
            raise ConfigError(f"{label}: rule {rid} is already defined; choose another id")
        rule = Rule(rid, spec["title"], Severity.parse(spec["severity"]), spec["category"], spec["why"].strip(),
                    spec["fix"].strip())
        rs.rules[rid] = rule
        where = f"{label}: rule {rid}"
        if "match" in spec:
            rs.matches.append(MatchRule(rule, _matcher(spec["match"], where, rs), spec["match"].get("signal")))
        elif "analyzer" in spec:
            key = spec["analyzer"]
            if key in rs.analyzers:
                raise ConfigError(f"{where}: analyzer {key!r} already reports as {rs.analyzers[key].id}")
            rs.analyzers[key] = rule
        else:
            pending.append((spec, rule))
        if spec.get("supersedes"):
            rs.supersedes[rid] = frozenset(spec["supersedes"])
    known = rs.signal_ids()
    for spec, rule in pending:
        combo = spec["combination"]
        missing = [s for s in combo["all_of"] if s not in known]
        if missing:
            raise ConfigError(f"{label}: rule {rule.id}: unknown signal {missing[0]!r}; define it under signals:")
        rs.combinations.append(Combination(rule, tuple(combo["all_of"]), combo.get("scope", "file"),
                                           bool(combo.get("ordered", False))))
    if "documentation" in doc:
        spec = doc["documentation"]
        rs.documentation = _compile(spec["markers"], False, f"{label}: documentation markers")
        rs.documentation_severity = Severity.parse(spec.get("severity", "medium"))
        if "headings" in spec:
            rs.documentation_headings = _compile(spec["headings"], False, f"{label}: documentation headings")
    packages = doc.get("packages", {})
    for ecosystem in ("pypi", "npm"):
        names = {n.lower() for n in packages.get(ecosystem, ())}
        rs.packages[ecosystem] = rs.packages.get(ecosystem, frozenset()) | frozenset(names)
    rs.trusted_indexes |= frozenset(h.lower() for h in packages.get("trusted_indexes", ()))
    for rid, gone in rs.supersedes.items():
        unknown = [g for g in gone if g not in rs.rules]
        if unknown:
            raise ConfigError(f"{label}: rule {rid} supersedes unknown rule {unknown[0]}")


def _load_yaml(text: str, label: str) -> Any:
    try:
        check_yaml(text)
        return yaml.safe_load(text)
    except NestingError as exc:
        raise ConfigError(f"{label}: {exc}; fix the file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{label}: not valid YAML{at}; fix the file") from None


def load_rules(extra: tuple[Path, ...] | list[Path] = ()) -> RuleSet:
    """The shipped rules plus every file in ``extra`` (ConfigError naming the file and rule)."""
    if not extra:
        return default_rules()
    rs = _build_default()
    for path in extra:
        label = str(path)
        try:
            raw = read_regular(path, _MAX_RULE_FILE + 1)  # a FIFO named here must not hang the audit
        except OSError as exc:
            raise ConfigError(f"{label}: cannot read the rules file ({exc.strerror or exc})") from None
        if len(raw) > _MAX_RULE_FILE:
            raise ConfigError(f"{label}: rules file over {_MAX_RULE_FILE} bytes; split it")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{label}: not UTF-8 text; save it as UTF-8") from None
        rs.sources.append(label)
        _add_file(rs, _load_yaml(text, label), label)
    return rs


def _build_default() -> RuleSet:
    rs = RuleSet()
    label = f"skillctl/audit/{SHIPPED_RULES}"
    rs.sources.append(label)
    text = resources.files("skillctl.audit").joinpath(SHIPPED_RULES).read_text(encoding="utf-8")
    _add_file(rs, _load_yaml(text, label), label)
    return rs


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The shipped rules, compiled once per process (the trust policy calls this per version)."""
    return _build_default()
