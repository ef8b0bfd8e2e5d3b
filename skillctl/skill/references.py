"""File references in a skill's Markdown: what the text points at, and how it uses it.

The spec puts references relative to the skill root ("See [the guide](references/REFERENCE.md)",
"scripts/extract.py"). Finding them in real skills means reading Markdown the way an agent does:

- a link is a link only in prose: ``[C:1](=[O:2])`` inside a code block is a SMILES string;
- a bare path counts when it names a folder of the skill (``scripts/``, ``references/``,
  ``assets/`` or one the skill has), possibly behind a placeholder for the skill's folder
  (``{baseDir}/scripts/x.py``, ``${CLAUDE_SKILL_DIR}/…``, ``<path-to-skill>/…``) or behind the
  folder it is installed as (``.claude/skills/NAME/…``); other placeholders (``{project}/…``)
  name files that are not the skill's;
- in prose, a path without an extension is usually a word ("see the references/citations
  section"); in code it is a file;
- in shell code, the word in command position is *executed directly* (``scripts/run.sh --x``),
  a word after an interpreter is *run by it* (``python scripts/x.py``) — only the first needs a
  shebang and a run bit.

Everything here is text analysis: which of these paths exist is the checker's business.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import unquote

# [text](target) and ![alt](target "title"); targets in <...> may contain spaces.
_LINK_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
# [label]: target  (a reference-style link definition)
_DEFINITION_RE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")
_LINK_TARGET_RE = re.compile(r"^[\w.~/{$<%][^\[\]]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
# a fence line, from the line break before it: a literal first character lets the regex engine
# jump from line break to line break instead of trying "^" at every position
_FENCE_LINE_RE = re.compile(r"\n {0,3}(`{3,}|~{3,})([^`\n]*)$", re.MULTILINE)
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
# a word holding a '/' (a regex that skips other words in C: most words are not paths), up to
# whitespace, quotes, brackets or shell operators; placeholders like ${SKILL_DIR} or <skill-dir> included
_PATH_TOKEN_RE = re.compile(r"[^\s`'\"()\[\]|;&=,/]*/[^\s`'\"()\[\]|;&=,]*")
# words that may name a script at the root, or a Windows path: tool.py, run.sh, scripts\x.py
_LOOSE_TOKEN_RE = re.compile(r"[^\s`'\"()\[\]|;&=,/]*(?:\\|\.(?:py|sh|bash|zsh|fish|js|mjs|cjs|ts|rb|pl|php|ps1|r|lua)\b)[^\s`'\"()\[\]|;&=,/]*", re.IGNORECASE)
_WORD_TRAILING = ".,;:!?'\""
_LINE_SUFFIX_RE = re.compile(r":\d+(?::\d+)?$")  # scripts/x.py:42 names a line of the file
_WINDOWS_PATH_RE = re.compile(r"^(\.\\)?[\w.-]+(\\[\w.-]+)+$")
_FILE_WORD_RE = re.compile(r"^[\w-][\w.-]*\.[A-Za-z0-9]+$")


def file_name_pattern(extensions: Iterable[str]) -> re.Pattern[str]:
    """Where a word names a file with one of ``extensions`` (letters first: tool.py, run.sh).

    It matches on the same lines as ``\\w\\.(py|sh|…)\\b`` but is written from the dot, with the
    word character looked behind: a literal first character lets the regex engine jump from dot
    to dot, many times faster on long text than trying a word character at every position.
    """
    return re.compile(r"\.(?=[a-z])(?<=\w\.)(?:" + "|".join(sorted(extensions)) + r")\b", re.IGNORECASE)


# a word that may name a script at the skill's root (tool.py, run.sh): worth a closer look
_SCRIPT_NAME_RE = file_name_pattern(("py", "sh", "bash", "zsh", "fish", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "ps1", "r", "lua"))
# Code fences whose lines are commands (an unlabelled fence is read as commands too: the spec's
# own example runs `scripts/extract.py` from one).
SHELL_FENCES = frozenset({"", "sh", "bash", "shell", "zsh", "console", "terminal", "shell-session", "text", "powershell", "pwsh", "ps1", "ps", "cmd", "bat", "fish"})
CONVENTIONAL_FOLDERS = ("scripts", "references", "assets")

_INTERPRETER_RE = re.compile(
    r"^(python[\d.]*|py|pypy[\d.]*|node|nodejs|deno|bun|tsx|ts-node|bash|sh|zsh|dash|ksh|fish|pwsh|powershell(\.exe)?|"
    r"ruby|perl|php|Rscript|lua|osascript|source|\.|java|go|dotnet|groovy|kotlin|swift|julia|elixir|cscript|wscript)$"
)
# Interpreters reached through a runner word: `uv run x.py`, `npx tsx x.ts`, `deno run x.ts`.
_RUNNERS = {"uv": ("run",), "uvx": (), "pipx": ("run",), "npx": (), "pnpm": ("exec", "dlx"), "bunx": (), "poetry": ("run",), "pdm": ("run",), "hatch": ("run",)}
# Words that run the next word as a command: `sudo scripts/x.sh`, `exec ./run.sh`.
_PREFIXES = frozenset({"sudo", "exec", "time", "nohup", "env", "command", "nice", "timeout", "then", "do", "else", "!"})
_SHELL_OP_RE = re.compile(r"&&|\|\||[|;&(]|\$\(")
_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_]\w*=")
_PROMPT_RE = re.compile(r"^(\s*)(\$|>|PS>|PS [^>]*>)\s")  # console prompts: $ cmd, > cmd, PS C:\> cmd
# "Run `scripts/check.sh`", "execute scripts/x.py": prose that tells the agent to run a path.
_RUN_WORDS_RE = re.compile(r"\b(run|execute|invoke|launch)( the)?( \w+)? (script|command|tool)?\s*`?$", re.IGNORECASE)


class Reference(NamedTuple):  # a tuple: real skills hold hundreds, and tuples are cheap to make
    raw: str  # as written (the placeholder or install prefix stripped)
    line: int  # 0-based line within the text
    column: int  # 0-based column of ``raw``
    kind: str  # "link" (Markdown link in prose), "prose" (bare path in prose), "code"
    role: str = ""  # in shell code: "command" (executed directly), "interpreted" (run by an interpreter)
    placeholder: bool = False  # written behind a placeholder for the skill's folder
    # False for `./name` where name is no folder of the skill: it may be the user's file
    # (./gradlew, ./src/App) — used when it exists, never reported missing
    own: bool = True
    before: str = ""  # the text of the line before the reference (for "e.g." and the like)


_PLACEHOLDER_RE = re.compile(r"\{\{?\s*([\w .-]+?)\s*\}\}?|\$\{(\w+)\}|\$(\w+)|%(\w+)%|<([\w .-]+)>")
_NOT_LOWER_RE = re.compile(r"[^a-z]")


def _skill_placeholder(text: str) -> bool | None:
    """True: a placeholder for the skill's folder; False: some other placeholder; None: not one."""
    if text[:1] not in ("{", "$", "%", "<"):
        return None  # every form starts with one of these: most words end here
    m = _PLACEHOLDER_RE.fullmatch(text)
    if m is None:
        return None
    name = _NOT_LOWER_RE.sub("", next(g for g in m.groups() if g).lower())
    if name in ("basedir", "skilldir", "skillroot", "skillpath", "skillfolder", "skilldirectory", "claudeskilldir", "thisskill", "skill"):
        return True
    return "skill" in name and any(w in name for w in ("dir", "root", "path", "folder", "location", "base"))


def fences(text: str) -> list[tuple[int, int, str]]:
    """The code fences of ``text`` as (first line, last line, language): 0-based line numbers,
    both fence lines included, language "" when unlabelled. An unclosed fence runs to the end."""
    out: list[tuple[int, int, str]] = []
    open_at: tuple[int, str, int, str] | None = None  # line, fence char, fence length, language
    line = pos = 0
    # searched in "\n" + text: a match starts at the offset, in text, of its line's first character
    for m in _FENCE_LINE_RE.finditer("\n" + text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        fence, rest = m.group(1), m.group(2)
        if open_at is None:
            open_at = (line, fence[0], len(fence), rest.split()[0].lower().strip("{}.") if rest.split() else "")
        elif fence[0] == open_at[1] and len(fence) >= open_at[2] and not rest.strip():
            out.append((open_at[0], line, open_at[3]))
            open_at = None
    if open_at is not None:
        out.append((open_at[0], text.count("\n"), open_at[3]))
    return out


def _languages(text: str, n_lines: int) -> list[str | None]:
    """Per line: None outside code fences, else the fence's language."""
    langs: list[str | None] = [None] * n_lines
    if "```" in text or "~~~" in text:
        for first, last, lang in fences(text):
            langs[first : last + 1] = [lang] * (min(last, n_lines - 1) - first + 1)
    return langs


def _spans(line: str) -> list[tuple[int, int]]:
    return [(m.start(2), m.end(2)) for m in _CODE_SPAN_RE.finditer(line)]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def _clean_token(token: str) -> str:
    token = token.rstrip(_WORD_TRAILING)
    return _LINE_SUFFIX_RE.sub("", token) if ":" in token else token


def split_token(token: str, own_name: str, folders: frozenset[str]) -> tuple[str, bool] | None:
    """A path-like word → (path relative to the skill root, behind a placeholder), or None when
    the word is not a path into this skill (a URL, an absolute path, another placeholder, a
    path in the user's project)."""
    if token.startswith(("//", "/")) or _SCHEME_RE.match(token) or token.count("{") != token.count("}"):
        return None
    placeholder = False
    head, sep, rest = token.partition("/")
    kind = _skill_placeholder(head)
    if kind is not None:
        if not kind:
            return None  # {project}/… or $HOME/…: not this skill's files
        placeholder, token = True, rest
    segments = token.split("/")
    first = segments[0]
    if first == "." and len(segments) > 1:
        return "/".join(segments[1:]), placeholder
    if first == "..":
        return token, placeholder
    if first in folders or first in CONVENTIONAL_FOLDERS:
        return token, placeholder
    # installed copies: .claude/skills/NAME/…, ~/.agents/skills/NAME/…, skills/NAME/…
    for i in range(len(segments) - 1):
        if segments[i] == own_name and i > 0 and segments[i - 1] == "skills":
            return "/".join(segments[i + 1 :]), True
    return None


def _next_state(expect: str, runner_words: tuple[str, ...], bare: str) -> tuple[str, tuple[str, ...]]:
    """One shell word read: what the following word is. ``expect`` is "command" (the word a
    shell executes comes next), "runner" (after uv, npx…), "script" (after an interpreter: the
    file it runs comes next) or "" (arguments)."""
    if expect == "command":
        if _ASSIGNMENT_RE.match(bare) or bare in _PREFIXES or bare.startswith("-"):
            return expect, runner_words
        if bare in _RUNNERS:
            return "runner", _RUNNERS[bare]
        if (bare.startswith("/") or "/" not in bare) and _INTERPRETER_RE.match(bare.rsplit("/", 1)[-1]):  # python3, /usr/bin/python3
            return "script", ()
        return "", ()
    if expect == "runner":
        if bare in runner_words or bare.startswith("-"):
            return expect, runner_words
        if _INTERPRETER_RE.match(bare) or bare in ("tsx", "ts-node"):
            return "script", ()
        return "", ()
    if expect == "script":
        if bare.startswith("-"):
            return ("", ()) if bare in ("-m", "-c", "-e", "--eval") else (expect, runner_words)  # -m: a module follows
        if bare in ("run", "exec"):  # deno run, go run, dotnet run
            return expect, runner_words
        return "", ()
    return "", ()


_ROLES = {"command": "command", "runner": "interpreted", "script": "interpreted"}


def _role_at(code: str, pos: int) -> str:
    """How shell ``code`` uses the word starting at ``pos``: "command" (executed directly),
    "interpreted" (the script an interpreter is given) or "" (another argument)."""
    if pos > 0 and code[pos - 1] not in " \t'\"(;&|`":
        return ""  # inside a word: --out=scripts/x, an argument's value
    start = 0
    for m in _SHELL_OP_RE.finditer(code, 0, pos):
        if m.group() == "(" and m.start() > 0 and code[m.start() - 1] not in " \t;&|(":
            continue  # f(x), [text](target): not a subshell
        start = m.end()
    expect: str = "command"
    runner_words: tuple[str, ...] = ()
    for word in code[start:pos].split():
        bare = word.strip("'\"")
        if bare:
            expect, runner_words = _next_state(expect, runner_words, bare)
    return _ROLES.get(expect, "")


def find_references(
    text: str, own_name: str = "", folders: frozenset[str] = frozenset(), only: re.Pattern[str] | None = None
) -> list[Reference]:
    """Every reference in Markdown ``text`` (a SKILL.md body or a referenced Markdown file).

    ``own_name`` is the skill's name (to read ``.claude/skills/NAME/x`` as ``x``); ``folders``
    its top-level folders, whose paths count as references like ``scripts/…`` do. ``only``, when
    given, skips the lines it does not match (a caller that wants some references, fast).
    """
    refs: list[Reference] = []
    numbers: list[int] | range
    if only is not None:  # the lines holding a match, found in one pass over the text
        numbers, line, pos = [], 0, 0
        for m in only.finditer(text):
            line += text.count("\n", pos, m.start())
            pos = m.start()
            if not numbers or numbers[-1] != line:
                numbers.append(line)
        if not numbers:
            return refs  # most referenced files: nothing to split into lines or fences
        # nothing after the last line holding a match is read: a fence further down cannot
        # change what the lines above it are
        end = text.find("\n", pos)
        if end >= 0:
            text = text[:end]
    lines = text.split("\n")
    langs = _languages(text, len(lines))
    if only is None:
        numbers = range(len(lines))
    for i in numbers:
        line = lines[i]
        lang = langs[i]
        if lang is not None:
            shell = lang in SHELL_FENCES
            # a path has a '/'; in commands a script at the root is a word like tool.py
            if "/" not in line and not (shell and ("\\" in line or _SCRIPT_NAME_RE.search(line))):
                continue
            if _FENCE_RE.match(line):
                continue
            body = _PROMPT_RE.sub(lambda m: " " * len(m.group()), line) if shell and line.lstrip()[:1] in ("$", ">", "P") else line
            refs += _code_references(body, 0, "", i, own_name, folders, shell, single_word_is_command=True)
            continue
        if "/" not in line and "](" not in line and "]:" not in line and (
            "`" not in line or ("\\" not in line and not _SCRIPT_NAME_RE.search(line))
        ):
            # neither a path, a link, nor code that could name a file (what inline code is read
            # for: a '/', a '\\' or a script's name, all of which the line would show): most lines
            continue
        spans = _spans(line) if "`" in line else []
        link_spans: list[tuple[int, int]] = []
        links = list(_LINK_RE.finditer(line)) + list(_DEFINITION_RE.finditer(line)) if "](" in line or "]:" in line else []
        for m in links:
            if _inside(m.start(), spans):
                continue  # `[x](y)` inside a code span is code
            link_spans.append(m.span())
            raw = m.group(1)
            col = m.start(1)
            if raw.startswith("<") and raw.endswith(">"):
                raw, col = raw[1:-1], col + 1
            if not raw or raw.startswith("#") or _SCHEME_RE.match(raw) or raw.startswith("//"):
                continue  # anchors, URLs, mailto:
            if not _LINK_TARGET_RE.match(raw):
                continue  # [C:1](=[O:2]) is chemistry, not a link to a file
            head, _, rest = raw.partition("/")
            kind = _skill_placeholder(head)
            if kind is False:
                continue
            refs.append(
                Reference(rest if kind else raw, i, col + (len(head) + 1 if kind else 0), "link", placeholder=bool(kind), before=line[: m.start()])
            )
        for a, b in spans:
            code = line[a:b]
            if "/" in code or "\\" in code or _SCRIPT_NAME_RE.search(code):
                refs += _code_references(code, a, line[:a], i, own_name, folders, shell=True, single_word_is_command=False)
        for m in _PATH_TOKEN_RE.finditer(line) if "/" in line else ():
            if (spans and _inside(m.start(), spans)) or (link_spans and any(a <= m.start() < b for a, b in link_spans)):
                continue
            token = _clean_token(m.group())
            split = split_token(token, own_name, folders)
            if split is None:
                continue
            path, placeholder = split
            role = "command" if not token.endswith("/") and _RUN_WORDS_RE.search(line, max(0, m.start() - 48), m.start()) else ""
            refs.append(
                Reference(
                    path, i, m.start() + len(token) - len(path), "prose", role, placeholder, _own(token, folders), line[: m.start()]
                )
            )
    return refs


def _code_references(
    code: str, offset: int, prefix: str, line: int, own_name: str, folders: frozenset[str], shell: bool, single_word_is_command: bool
) -> list[Reference]:
    out: list[Reference] = []
    candidates = list(_PATH_TOKEN_RE.finditer(code)) if "/" in code else []
    if shell and ("\\" in code or _SCRIPT_NAME_RE.search(code) is not None):
        candidates = sorted(candidates + list(_LOOSE_TOKEN_RE.finditer(code)), key=lambda m: m.start())
    if not candidates:
        return out
    for m in candidates:
        word = m.group()
        role = _role_at(code, m.start()) if shell and not word.endswith("/") else ""  # a folder is not run
        # an inline `scripts/x.py` alone is a mention, not a command: it runs only with arguments
        # or an explicit ./ (in a fenced block, a line holding only the path runs it)
        if role == "command" and not single_word_is_command and not word.startswith("./") and len(code.split()) == 1:
            role = "command" if _RUN_WORDS_RE.search(prefix, max(0, len(prefix) - 48)) else ""
        if "/" not in word:
            if _WINDOWS_PATH_RE.match(word):
                word = word.replace("\\", "/")  # python scripts\\convert.py: the same file
            elif role and _FILE_WORD_RE.match(word):
                # `python3 tool.py`, `run.sh --x`: a file at the skill's root, if it has one
                out.append(Reference(word, line, offset + m.start(), "code", role, own=False, before=prefix + code[: m.start()]))
                continue
            else:
                continue
        token = _clean_token(word)
        split = split_token(token, own_name, folders)
        if split is None:
            if role == "interpreted" and "/" in token:
                # python /path/to/skill/scripts/x.py: which folder is unknown, but x.py is run
                # through an interpreter — its name is worth knowing (no run bit needed)
                name = posixpath.basename(token)
                out.append(Reference(name, line, offset + m.start() + len(token) - len(name), "code", role, own=False))
            continue
        path, placeholder = split
        out.append(Reference(path, line, offset + m.start() + len(token) - len(path), "code", role, placeholder, _own(token, folders), prefix + code[: m.start()]))
    return out


def _own(token: str, folders: frozenset[str]) -> bool:
    """False for ``./name…`` where ``name`` is not a folder of the skill (nor a conventional one)."""
    if not token.startswith("./"):
        return True
    first = token[2:].split("/", 1)[0]
    return first in folders or first in CONVENTIONAL_FOLDERS


def normalise(raw: str) -> tuple[str, bool]:
    """``raw`` → (POSIX path relative to its base, escapes the base)."""
    path = unquote(raw.split("#", 1)[0].split("?", 1)[0] if not is_glob(raw) else raw.split("#", 1)[0]).strip()
    if path.startswith("./"):
        path = path[2:]
    norm = posixpath.normpath(path) if path else ""
    escapes = norm == ".." or norm.startswith("../") or path.startswith("/")
    return ("" if escapes else norm), escapes


def is_glob(path: str) -> bool:
    return "*" in path or "?" in path or "{" in path
