"""Checking what a skill's Markdown refers to: missing files (SK211), reference chains (SK212),
paths that leave the skill (SK213); and collecting which files it runs directly.

SK211 reports a path only when it is clearly a file of this skill that is not there: not a
placeholder for somebody else's folder, not an example (``path/to/file.ext``), not the user's
own project file (``README.md``), not a word in prose. A glob counts when it matches a file.
Each warning says what to do, with the nearest existing file when there is one (``reference/``
vs ``references/``, ``security.md`` vs ``Security.md``, a script that lives in a sibling skill).

SK212 follows the spec's advice on *chains*: "Keep file references one level deep from SKILL.md.
Avoid deeply nested reference chains." A Markdown file SKILL.md refers to may itself refer to
others; those others are reached through a chain unless SKILL.md refers to them directly too.
Folder depth does not matter (``references/api/v2.md`` linked from SKILL.md is one level).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from skillctl.fsutil import read_at_most
from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.references import _SCHEME_RE, Reference, file_name_pattern, find_references, is_glob, normalise, split_token

SPEC_CHAIN_ADVICE = "Keep file references one level deep from SKILL.md. Avoid deeply nested reference chains."
MARKDOWN = (".md", ".markdown", ".mdx")
MAX_REFERENCED_MD_BYTES = 1024 * 1024
# Files of the user's project that instructions talk about ("update the README.md").
_PROJECT_FILES = frozenset(
    {"readme", "readme.md", "changelog.md", "contributing.md", "agents.md", "claude.md", "gemini.md", "copilot-instructions.md",
     "package.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "cargo.toml", "go.mod", "makefile",
     "dockerfile", "license", "license.md", "license.txt", ".gitignore", ".env", "tsconfig.json"}
)
# Example paths in instructions: path/to/file.ext, your-file.md, foo/bar, references/filename.md.
_EXAMPLE_RE = re.compile(r"(^|/)(path/to(/|$)|(your|my)([-_]\w*)?([./]|$)|(foo|bar|baz|xxx+|filename|file|name|\.\.\.|…)([./]|$))", re.IGNORECASE)
# Placeholders inside a path: <name>, {{NAME}}, ${input:x}, $VAR, phaseN.md, module-N-x.md.
_PLACEHOLDER_IN_PATH_RE = re.compile(r"<[^>]*>|\{\{|\$\{|\$[A-Za-z_]|%\w+%|(?<![A-Za-z])[NX](?![A-Za-z])|(?<=[a-z])[NX](?=[._-]|$)")
# "Example: `scripts/rotate_pdf.py`", "e.g. references/finance.md": a path shown, not used.
_EXAMPLE_CONTEXT_RE = re.compile(r"\b(e\.g\.|eg\.|examples?\b|for instance|such as|i\.e\.)", re.IGNORECASE)
_SLASH_COMMAND_RE = re.compile(r"^/[\w-]+(:[\w-]+)?$")
# a path to a Markdown file, as a link target or a word: "[x](a.md)", "see references/b.md" —
# found by its extension, then read back to where the word starts (a regex that tried every
# position as a start would be quadratic on long files)
_MARKDOWN_EXT_RE = re.compile(r"\.(?:md|markdown|mdx)(?![\w/-])", re.IGNORECASE)
_WORD_RE = re.compile(r"[^\s()<>\[\]`'\"|*,;=]+")
# script files whose mention in a referenced file may be a command (see scripts.SHEBANGS)
_SCRIPT_EXTENSIONS = frozenset({"py", "sh", "bash", "zsh", "fish", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "ps1", "r", "lua"})
_SCRIPT_MENTION_RE = file_name_pattern(_SCRIPT_EXTENSIONS)


def _word_start(text: str, end: int) -> int | None:
    """Where the word ending at ``end`` starts (at most 256 characters back), None without one:
    the match of ``[word characters]+$`` searched in ``text[end - 256 : end]``, found by matching
    the reversed window from its end instead of trying every start. Like ``$``, a word may also
    end just before a line break that ends the window."""
    low = max(0, end - 256)
    if end > low and text[end - 1] == "\n":
        end -= 1
    word = _WORD_RE.match(text[low:end][::-1])
    return None if word is None else end - word.end()


@dataclass
class ReferenceFindings:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # files run directly (command position in shell code) -> where first: (file shown, line, col)
    executed: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    # files run through an interpreter somewhere (python scripts/x.py)
    interpreted: set[str] = field(default_factory=set)


def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    body = m.group(1)
    span = re.fullmatch(r"(\w)\.\.(\w)", body)  # shell ranges: {a..i}, {1..5}
    alts = [chr(c) for c in range(ord(span.group(1)), ord(span.group(2)) + 1)] if span else body.split(",")
    return [x for alt in alts for x in _expand_braces(pattern[: m.start()] + alt + pattern[m.end() :])]


def _glob_matches(pattern: str, paths: frozenset[str]) -> bool:
    return any(fnmatch.fnmatchcase(p, pat) for pat in _expand_braces(pattern) for p in paths)


class _Checker:
    def __init__(self, folder: Path, shown: str, files: frozenset[str], dirs: frozenset[str], own_name: str) -> None:
        self.folder = folder
        self.shown = shown
        self.files = files
        self.dirs = dirs
        self.own_name = own_name
        self.top = frozenset(d for d in dirs if "/" not in d and not d.startswith("."))
        self.found = ReferenceFindings()
        self._lower: dict[str, str] | None = None

    def shown_path(self, rel: str) -> str:
        return f"{self.shown}/{rel}" if self.shown else rel

    def exists(self, rel: str) -> bool:
        return rel in self.files or rel in self.dirs

    # --------------------------------------------------------------------------- advice

    def suggestion(self, target: str) -> str:
        if self._lower is None:
            self._lower = {p.lower(): p for p in sorted(self.files | self.dirs)}
        same = self._lower.get(target.lower())
        if same:
            return f"; it exists as '{same}' — file names are case-sensitive on Linux, fix the spelling"
        import difflib  # only when a file is missing

        close = difflib.get_close_matches(target, sorted(self.files | self.dirs), n=1, cutoff=0.8)
        if close:
            return f"; did you mean '{close[0]}'?"
        return "; add the file or fix the path"

    # --------------------------------------------------------------------------- SKILL.md

    def check_skill_md(self, body: str, md_shown: str, first_line: int) -> list[str]:
        """SK211/SK213 for SKILL.md's references; returns the Markdown files it refers to."""
        direct: list[str] = []
        reported: set[tuple[str, str]] = set()
        for ref in find_references(body, self.own_name, self.top):
            line, col = first_line + ref.line, ref.column + 1
            target, escapes = normalise(ref.raw)
            if escapes:
                if ref.kind == "link" and _SLASH_COMMAND_RE.match(ref.raw):
                    continue  # [/deploy](/deploy): a slash command, not a file
                if ref.kind != "link" and not ref.role and not self.exists_outside(ref.raw):
                    continue  # `../lib/x` in an example of the user's code: not this skill's file
                if ("SK213", ref.raw) not in reported:
                    reported.add(("SK213", ref.raw))
                    self.found.diagnostics.append(Diagnostic("SK213", self.outside_message(ref.raw), md_shown, line, col))
                continue
            if not target or target == ".":
                continue
            self.note_use(ref, target, md_shown, line, col)
            if self.exists(target):
                if target.lower().endswith(MARKDOWN) and target != "SKILL.md" and target not in direct:
                    direct.append(target)
                continue
            outside = self.outside_copy(target)
            if outside is not None:
                message = (
                    f"referenced file '{target}' is not in the skill but at '{outside}', outside it; a skill is installed on "
                    "its own — move the file into the skill"
                )
            elif not self.worth_reporting(ref, target):
                continue
            elif is_glob(target):
                if _glob_matches(target, self.files | self.dirs):
                    continue
                message = f"no file matches '{target}'; add the files or fix the pattern"
            else:
                message = f"referenced file '{target}' does not exist in the skill{self.suggestion(target)}"
            if ("SK211", target) not in reported:
                reported.add(("SK211", target))
                self.found.diagnostics.append(Diagnostic("SK211", message, md_shown, line, col))
        return direct

    def worth_reporting(self, ref: Reference, target: str) -> bool:
        """Whether a missing ``target`` is clearly a file of this skill that is not there."""
        if not ref.own or _EXAMPLE_RE.search(target) or _PLACEHOLDER_IN_PATH_RE.search(ref.raw) or ":" in target:
            return False
        last = target.rsplit("/", 1)[-1]
        if ref.kind == "link":
            return "/" in target or last.lower() not in _PROJECT_FILES
        if _EXAMPLE_CONTEXT_RE.search(ref.before):
            return False  # "e.g. `./scripts/deploy.sh`": shown, not used
        if ref.role:
            return True  # run by the instructions: it must be there
        if "." not in last:
            return False  # a folder or a word ("the references/citations section")
        if ref.placeholder:
            return True  # explicitly in the skill's folder ({baseDir}/…)
        # a mention into a folder the skill does not have is about some other tree (the user's
        # project, a skill being written): only a folder the skill has makes it the skill's
        return target.split("/", 1)[0] in self.top

    def outside_copy(self, target: str) -> str | None:
        """The path, relative to the skill, of ``target`` found in a folder above the skill (a
        plugin's shared scripts/, the repository root), if it is there."""
        if "/" not in target or is_glob(target):
            return None
        here = Path(os.path.abspath(self.folder))
        for up in range(1, 4):
            base = here.parents[up - 1] if up <= len(here.parents) else None
            if base is None or base == base.parent:
                break
            if (base / target).is_file():
                return "/".join([".."] * up + [target])
        return None

    def exists_outside(self, raw: str) -> bool:
        if raw.startswith("/"):
            return False
        return os.path.exists(os.path.normpath(os.path.join(os.path.abspath(self.folder), raw.split("#", 1)[0])))

    def outside_message(self, raw: str) -> str:
        target = posixpath.normpath(raw.split("#", 1)[0])
        where = ""
        if target.startswith("../"):
            parts = target.split("/")
            if len(parts) > 2 and parts[1] != ".." and (Path(os.path.abspath(self.folder)).parent / "/".join(parts[1:])).exists():
                where = f" (it is in the sibling skill '{parts[1]}')"
        return (
            f"reference '{raw}' points outside the skill folder{where}; it will not exist once the skill is installed on its own "
            "— copy the file into the skill"
        )

    def note_use(self, ref: Reference, target: str, shown: str, line: int, col: int) -> None:
        if ref.role == "command":
            self.found.executed.setdefault(target, (shown, line, col))
        elif ref.role == "interpreted":
            self.found.interpreted.add(target)

    # --------------------------------------------------------------------------- chains

    def follow(self, direct: list[str]) -> None:
        """SK212 for Markdown files reached only through another referenced file; and the
        commands those files give (they are instructions too).

        Referenced files can be long and many, so they are not read line by line: one pass
        finds the Markdown paths they name (a link, a path in prose or in code — each makes the
        agent read on), and only lines naming one of the skill's scripts are read as commands."""
        first_level = set(direct) | {"SKILL.md"}
        has_scripts = any(f.rsplit(".", 1)[-1].lower() in _SCRIPT_EXTENSIONS for f in self.files)
        # lines naming a script-like file (one pattern: an alternation of every script's name
        # would be slow on long files)
        commands = _SCRIPT_MENTION_RE if has_scripts else None
        for rel in direct:
            text = self.read(rel)
            if text is None:
                continue
            base = posixpath.dirname(rel)
            if commands is not None:
                for ref in find_references(text, self.own_name, self.top, commands):
                    target = self.resolve(ref, base)
                    if target is not None:
                        self.note_use(ref, target, self.shown_path(rel), ref.line + 1, ref.column + 1)
            further: list[tuple[str, int]] = []  # (target, offset in text)
            for m in _MARKDOWN_EXT_RE.finditer(text):
                start = _word_start(text, m.start())
                if start is None:
                    continue
                token = text[start : m.end()]
                if token.startswith("//") or _SCHEME_RE.match(token):
                    continue
                split = split_token(token, self.own_name, self.top)
                link = text.endswith("](", 0, start) or text.endswith("](<", 0, start)
                if not link and "/" not in token:
                    continue  # a bare name ("update SOURCES.md") may be any tree's file: links only
                ref = Reference(split[0] if split else token, 0, 0, "link" if link and not split else "prose")
                target = self.resolve(ref, base)
                if target is None or target in first_level or target not in self.files:
                    continue
                if all(t != target for t, _ in further):
                    further.append((target, start + (len(token) - len(ref.raw) if split else 0)))
            if further:
                (first, offset) = further[0]
                line = text.count("\n", 0, offset) + 1
                col = offset - (text.rfind("\n", 0, offset) + 1) + 1
                more = ""
                if len(further) > 1:
                    names = ", ".join(t for t, _ in further[1:4]) + (", …" if len(further) > 4 else "")
                    more = f" and {len(further) - 1} more ({names})"
                self.found.diagnostics.append(
                    Diagnostic(
                        "SK212",
                        f"'{first}'{more} can only be reached through '{rel}' (SKILL.md → {rel} → {first}); "
                        f"the spec: \"{SPEC_CHAIN_ADVICE}\" — link {'them' if more else 'it'} from SKILL.md directly, "
                        f"or fold {'them' if more else 'it'} into {rel}",
                        self.shown_path(rel),
                        line,
                        col,
                    )
                )

    def resolve(self, ref: Reference, base: str) -> str | None:
        """A reference inside a referenced file → an existing path, or None. Links are relative
        to their file (Markdown); bare paths to the skill root (the spec). Either is tried."""
        candidates = [posixpath.join(base, ref.raw), ref.raw] if ref.kind == "link" else [ref.raw, posixpath.join(base, ref.raw)]
        for raw in candidates:
            target, escapes = normalise(raw)
            if not escapes and target and self.exists(target):
                return target
        return None

    def read(self, rel: str) -> str | None:
        try:
            return read_at_most(os.path.join(self.folder, rel), MAX_REFERENCED_MD_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None


def check_references(
    folder: Path, shown: str, body: str, body_start_line: int, files: frozenset[str], dirs: frozenset[str], own_name: str
) -> ReferenceFindings:
    checker = _Checker(folder, shown, files, dirs, own_name)
    md_shown = checker.shown_path("SKILL.md")
    direct = checker.check_skill_md(body, md_shown, body_start_line)
    checker.follow(direct)
    return checker.found
