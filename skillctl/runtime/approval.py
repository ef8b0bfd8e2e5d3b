"""Approval of shell commands before they run: dangerous ones only after a person says yes.

A policy decides per command: ``allow``, ``ask`` or ``deny``. Rules are tried in order and the
first whose pattern matches decides; a command no rule matches gets the default action. A
pattern is either a shell-style glob matched against the *whole* command (``git push*``,
``*rm -rf*``) or, with the prefix ``re:``, a regular expression searched *anywhere* in it.
Before matching, runs of spaces and tabs are folded to one space and continued lines are
joined, so ``rm  -rf`` or a tab cannot slip past ``*rm -rf*``; lines stay separated by "\\n".

Every command is judged twice: as written (quotes included, so a match inside a quoted string
counts too: a needless question costs less than a missed one), and as the shell reads its
words (``shell_view.plain_view``: quotes, backslashes, ``$IFS`` and simple variables undone, so
``\\rm -rf``, ``rm "-rf"``, ``r''m -rf``, ``rm$IFS-rf`` and ``x=rm; $x -rf`` all look like
``rm -rf``). The stricter of the two verdicts applies (deny over ask over allow): the second
reading can only add questions, never let through what the first would have stopped.

The policy guards against accidents, not against a determined adversary: ``$(echo rm) -rf``
gets past any pattern. The isolation of the container is the security boundary; approval is
the person's say over what happens inside it.

An ``Approver`` turns the policy's ``ask`` into yes or no:

    mode      on a terminal             without a terminal
    policy    prompt the person (y/N)   the policy's ``unattended`` action (default: refuse)
    all       approve                   approve
    never     refuse                    refuse

``deny`` is never overridden, not even by ``all``. ``all`` and ``never`` are explicit choices
of the person who started the run, so they apply on a terminal too; ``policy`` (the default)
prompts whenever someone can answer and otherwise refuses, because a dangerous action may
run only after a person approved it. A policy file may say ``unattended: allow`` for trusted
batch use.

Policy file (YAML, validated against ``POLICY_SCHEMA``)::

    default: allow            # action for commands no rule matches
    unattended: deny          # what 'ask' becomes with --approve policy and no terminal
    include_defaults: true    # the built-in rules are tried after these
    rules:
      - {pattern: "re:^sudo\\b", action: deny, reason: "no root in the sandbox"}
      - {pattern: "git push*", action: ask}
      - {pattern: "make test", action: allow}

Careful with ``allow`` globs that end in ``*``: ``ls*`` also allows ``ls; rm -rf /`` — the
first matching rule decides, and the built-in ``ask`` rules come after yours.
"""

from __future__ import annotations

import fnmatch
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from jsonschema.exceptions import ValidationError

from skillctl.errors import ConfigError
from skillctl.runtime.shell_view import plain_view
from skillctl.schema import schema_problems
from skillctl.yamlfile import read_yaml

Decision = Literal["allow", "ask", "deny"]
ApproveMode = Literal["never", "all", "policy"]
DECISIONS: tuple[str, ...] = ("allow", "ask", "deny")
APPROVE_MODES: tuple[str, ...] = ("never", "all", "policy")
REGEX_PREFIX = "re:"

POLICY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "skillctl approval policy",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "default": {"enum": ["allow", "ask", "deny"]},
        "unattended": {"enum": ["allow", "deny"]},
        "include_defaults": {"type": "boolean"},
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pattern", "action"],
                "additionalProperties": False,
                "properties": {
                    "pattern": {"type": "string", "minLength": 1},
                    "action": {"enum": ["allow", "ask", "deny"]},
                    "reason": {"type": "string"},
                },
            },
        },
    },
}


def normalize(command: str) -> str:
    """The command as patterns see it: continued lines (backslash-newline) joined, runs of
    spaces and tabs folded to one space, blank lines dropped, lines joined by "\n"."""
    lines = (" ".join(line.split()) for line in command.replace("\\\n", " ").splitlines())
    return "\n".join(line for line in lines if line)


def readings(command: str) -> tuple[str, ...]:
    """The texts a command is judged by: as written, and as the shell reads its words (when
    that differs), both normalised."""
    written, read = normalize(command), normalize(plain_view(command))
    return (written,) if read == written else (written, read)


@dataclass(frozen=True)
class Rule:
    """One ``pattern → action`` line. An invalid regular expression raises ``ConfigError``."""

    pattern: str
    action: Decision
    reason: str = ""
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.action not in DECISIONS:
            raise ConfigError(f"rule {self.pattern!r}: action {self.action!r} is not one of {', '.join(DECISIONS)}")
        if self.pattern.startswith(REGEX_PREFIX):
            source, flags = self.pattern[len(REGEX_PREFIX):], 0
        else:
            # A glob covers the whole command; '*' crosses spaces and slashes alike.
            source, flags = fnmatch.translate(self.pattern), re.DOTALL
        if not source:
            raise ConfigError("rule pattern is empty; write a glob like 'git push*' or a regex like 're:^sudo\\b'")
        try:
            compiled = re.compile(source, flags)
        except re.error as exc:
            raise ConfigError(f"rule {self.pattern!r}: invalid regular expression ({exc})") from None
        object.__setattr__(self, "_compiled", compiled)

    @property
    def is_regex(self) -> bool:
        return self.pattern.startswith(REGEX_PREFIX)

    def matches(self, command: str) -> bool:
        """Whether the pattern matches ``command`` as written (after ``normalize``)."""
        return self.matches_normalized(normalize(command))

    def matches_normalized(self, text: str) -> bool:
        if self.is_regex:
            return self._compiled.search(text) is not None
        return self._compiled.match(text) is not None


@dataclass(frozen=True)
class Verdict:
    """What the policy says about one command, and why."""

    action: Decision
    rule: Rule | None = None  # None: no rule matched, the default action applies
    index: int | None = None  # 1-based position of the rule in the policy

    def describe(self) -> str:
        if self.rule is None:
            return "no rule matched, default action"
        if self.rule.reason:
            return f"rule {self.index}: {self.rule.reason}"
        return f"rule {self.index} {self.rule.pattern!r}"


# Building blocks of the built-in rules. After ``normalize`` words are separated by exactly
# one space and lines by "\n", so the rules can use plain spaces and treat a newline like ";".
# Every repetition is bounded or possessive: a rule runs on every command the model proposes,
# and a pattern that backtracks over a 100 kB heredoc would stall the run (a fork-bomb regex
# written the naive way took minutes on a 200 kB line of letters).
_START = r"(?<![^\s;&|(`/'\"])"  # a word starts here: line start, separator, quote, subshell, path
_ARGS = r"(?: [^;&|\n]{0,240}?)?"  # other arguments before the one we look for (bounded)
_END = r"(?=$|[ ;&|)\n])"  # the word ends here


# A decoder (base64/base32 -d, xxd -r, openssl base64|enc … -d, uudecode), its options right
# after its name and each repetition possessive, so that checking one costs a constant; and
# what runs decoded text.
_DECODE = (
    r"(?:\bbase(?:64|32)(?: -[^ ;&|\n]*+){0,3}? (?:-[a-zA-Z]*[dD][a-zA-Z]*+|--decode)"
    r"|\bxxd(?: -[^ ;&|\n]*+){0,3}? -[a-z]*r[a-z]*+|\bopenssl (?:base64|enc)(?: -[^ ;&|\n]*+){0,6}? -d"
    r"|\buudecode)(?=$|[ ;&|)\n])"
)
_RUNNER = r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node|php)\b"


def _flag(letter: str, long: str) -> str:
    """A short-flag cluster containing ``letter`` (``-rf``, ``-fR``) or the long form."""
    return rf"(?:-(?=[a-zA-Z]*[{letter}])[a-zA-Z]++|--{long}){_END}"


# The built-in rules: ask before what is obviously destructive, allow everything else.
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(rf"re:{_START}rm{_ARGS} {_flag('rR', 'recursive')}", "ask", "recursive delete"),
    Rule(rf"re:{_START}find{_ARGS} (?:-delete|-(?:exec|execdir|ok|okdir) (?:[^ ;&|\n]*/)?rm){_END}", "ask",
         "find that deletes files"),
    # Only with an operand: "git add dd" names a file; "dd if=… of=…" is the tool.
    Rule(rf"re:{_START}dd (?:if|of|bs|count|conv|seek|skip|iflag|oflag|status)=", "ask",
         "dd writes raw blocks"),
    Rule(rf"re:{_START}(?:mkfs(?:\.\w++)?|mke2fs|mkswap|wipefs){_END}", "ask", "creates or wipes a filesystem"),
    Rule(rf"re:{_START}(?:shutdown|reboot|halt|poweroff){_END}|{_START}(?:tel)?init [06]{_END}"
         rf"|\bsystemctl (?:poweroff|reboot|halt){_END}", "ask", "stops the machine"),
    Rule(rf"re:{_START}ch(?:mod|own|grp){_ARGS} {_flag('R', 'recursive')}", "ask",
         "recursive permission or owner change"),
    Rule(rf"re:\bgit(?: -[Cc] [^ ;&|\n]++| --?[\w-]++(?:=[^ ;&|\n]*+)?){{0,4}} push{_ARGS} "
         rf"(?:--force(?:-with-lease)?(?:=[^ ;&|\n]*+)?{_END}|-(?=[a-zA-Z]*f)[a-zA-Z]++{_END}|\+[^ ;&|\n]+)",
         "ask", "force push rewrites shared history"),
    Rule(r"re:\b(?:curl|wget)\b[^;&|\n]{0,400}+(?:\|[^;&|\n]{0,200}+){0,3}?\| ?(?:sudo )?(?:env )?"
         r"(?:ba|z|da|k|fi)?sh\b", "ask", "runs a script straight from the network"),
    Rule(r"re:(?:\b(?:ba|z|da|k)?sh|\bsource)\b[^;&|\n]{0,80}?(?:\$\(|<\() ?(?:curl|wget)\b", "ask",
         "runs a script straight from the network"),
    # Decoded text run as code: the shape of obfuscated payloads (base64 -d | sh, eval "$(… -d)").
    Rule(rf"re:{_DECODE}[^;&|\n]{{0,200}}+(?:\|[^;&|\n]{{0,200}}+){{0,3}}?\| ?(?:sudo )?(?:env )?{_RUNNER}"
         # … or a substitution whose first command, or a command after one of its pipes, decodes
         rf"|(?:\beval|\bsource|\b(?:ba|z|da|k)?sh(?: -[a-z]++)*+) [\"']?[$<]\( ?"
         rf"(?:[^;&|\n)]{{0,200}}+\| ?){{0,3}}?{_DECODE}"
         r"|\b(?:exec|eval)\([^\n]{0,60}?\b(?:b64|b32|b16|b85|a85)decode\(",
         "ask", "decodes text and runs it"),
    # Bounded name and a lookbehind: with a free ``([\w:.]+)`` and a backreference, this one
    # regex took minutes on a long run of letters.
    Rule(r"re:(?<![\w:.])([\w:.]{1,64}) ?\(\) ?\{[^}]{0,64}?\1 ?\| ?\1 ?&", "ask", "fork bomb"),
    Rule(r"re:(?:>|\btee(?: -[^ ;&|\n]++){0,4} |\bof=) ?/dev/"
         r"(?!(?:null|zero|stdout|stderr|tty|random|urandom)\b|fd/|shm/|pts/)", "ask", "writes to a device"),
)


@dataclass(frozen=True)
class ApprovalPolicy:
    """Ordered rules, first match wins; ``default_action`` for commands no rule matches;
    ``unattended`` is what ``ask`` becomes when nobody can answer (``--approve policy``)."""

    rules: tuple[Rule, ...] = ()
    default_action: Decision = "allow"
    unattended: Literal["allow", "deny"] = "deny"

    def decide(self, command: str) -> Verdict:
        """The stricter verdict of ``command`` as written and as the shell reads it."""
        verdicts = [self._first_match(text) for text in readings(command)]
        return max(verdicts, key=lambda v: DECISIONS.index(v.action))  # the first of equals: as written

    def _first_match(self, text: str) -> Verdict:
        for i, rule in enumerate(self.rules, start=1):
            if rule.matches_normalized(text):
                return Verdict(rule.action, rule, i)
        return Verdict(self.default_action)

    @classmethod
    def default(cls) -> "ApprovalPolicy":
        """Ask for obviously destructive commands, allow the rest."""
        return cls(DEFAULT_RULES)

    @classmethod
    def from_mapping(cls, data: Any, *, source: str = "approval policy") -> "ApprovalPolicy":
        """Build a policy from parsed YAML; ``ConfigError`` names ``source`` and each problem."""
        if data is None:
            data = {}
        problems = schema_problems(data, POLICY_SCHEMA, wording=_wording)
        if problems:
            raise ConfigError(f"{source}: {'; '.join(problems)}")
        rules: list[Rule] = []
        for i, raw in enumerate(data.get("rules", [])):
            try:
                rules.append(Rule(raw["pattern"], raw["action"], raw.get("reason", "")))
            except ConfigError as exc:
                raise ConfigError(f"{source}: rules[{i}]: {exc}") from None
        if data.get("include_defaults", True):
            rules.extend(DEFAULT_RULES)
        return cls(tuple(rules), data.get("default", "allow"), data.get("unattended", "deny"))

    @classmethod
    def load(cls, path: str | Path) -> "ApprovalPolicy":
        """Read a policy file (YAML); every failure is a one-line ``ConfigError``."""
        p = Path(path)
        data = read_yaml(p, error=ConfigError, missing=f"approval policy file {p} does not exist; check the path")
        return cls.from_mapping(data, source=str(p))


def _wording(err: ValidationError) -> tuple[list[Any], str]:
    """The policy's words (the key stays in the place: ``rules[0].action: 'x' is not one of …``)."""
    if err.validator == "enum":
        what = f"{err.instance!r} is not one of {', '.join(err.validator_value)}"
    elif err.validator == "additionalProperties":
        known = err.schema.get("properties", {})
        extra = [k for k in err.instance if k not in known]
        what = f"unknown key {', '.join(map(repr, extra))} (allowed: {', '.join(known)})"
    elif err.validator == "required":
        what = f"missing {', '.join(repr(k) for k in err.validator_value if k not in err.instance)}"
    elif err.validator == "type":
        what = f"must be {'a mapping' if err.validator_value == 'object' else 'a list' if err.validator_value == 'array' else 'a ' + str(err.validator_value)}"
    elif err.validator == "minLength":
        what = "must not be empty"
    else:
        what = err.message
    return list(err.absolute_path), what


class Approver:
    """Turns a policy's verdict into ``(approved, reason)`` for one command.

    ``input``/``output`` are where the person is asked (default: stdin and stderr, so stdout
    stays clean for the answer and ``--format json``); ``interactive`` defaults to whether both
    are terminals. Prompts are serialised: commands of one call may be checked from threads.
    """

    def __init__(
        self,
        policy: ApprovalPolicy | None = None,
        *,
        mode: ApproveMode = "policy",
        input: TextIO | None = None,  # noqa: A002 - the prompt's input stream
        output: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        if mode not in APPROVE_MODES:
            raise ConfigError(f"approval mode {mode!r} is not one of {', '.join(APPROVE_MODES)}")
        self.policy = policy if policy is not None else ApprovalPolicy.default()
        self.mode = mode
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stderr
        if interactive is None:
            interactive = _isatty(self.input) and _isatty(self.output)
        self.interactive = interactive
        self._lock = threading.Lock()

    def approve(self, command: str) -> tuple[bool, str]:
        """Whether ``command`` may run, and a short reason for the transcript."""
        verdict = self.policy.decide(command)
        why = verdict.describe()
        if verdict.action == "allow":
            return True, f"allowed by policy ({why})"
        if verdict.action == "deny":
            return False, f"denied by policy ({why})"
        if self.mode == "all":
            return True, f"approved by --approve all ({why})"
        if self.mode == "never":
            return False, f"refused by --approve never ({why})"
        if self.interactive:
            return self._prompt(command, why)
        if self.policy.unattended == "allow":
            return True, f"approved unattended by the policy ({why})"
        return False, f"refused: needs approval ({why}) and there is no terminal to ask; use --approve all to allow"

    def _prompt(self, command: str, why: str) -> tuple[bool, str]:
        with self._lock:
            self.output.write(f"\nThe agent wants to run a command that needs approval ({why}):\n")
            self.output.write(f"  $ {command}\nRun it? [y/N] ")
            self.output.flush()
            answer = self.input.readline()
        if answer.strip().lower() in ("y", "yes"):
            return True, f"approved by the user ({why})"
        return False, f"rejected by the user ({why})"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False
