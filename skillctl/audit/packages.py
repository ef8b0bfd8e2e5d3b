"""Package installs in instructions and scripts: look-alike names, unvetted sources, no pins.

Install commands (pip, uv, poetry, pipx, npm, pnpm, yarn, bun, npx) are found by pattern and
their arguments split shell-style; ``requirements*.txt`` files are read line by line. Each
requirement is checked:

- a look-alike: not a well-known name itself, but one edit (insert, delete, replace or swap two
  neighbours) from one, or spelled with non-ASCII look-alike characters → ``packages.lookalike``;
- an unvetted source: a URL, a bare IP, plain HTTP, or an extra/custom index that is not in
  ``trusted_indexes`` → ``packages.untrusted-source``; a VCS checkout without a commit →
  ``packages.unpinned-vcs``;
- no version pin → ``packages.unpinned`` (one finding per command).

The well-known names and trusted indexes are data in the rules file (``packages:``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from skillctl.audit.textfile import TextFile

_INSTALL = re.compile(
    r"(?:^|[\s;&|(`\"'])(?P<tool>pip[23]?(?:\.\d{1,2})?[ \t]{1,4}install|python[23]?(?:\.\d{1,2})?[ \t]{1,4}-m[ \t]{1,4}pip[ \t]{1,4}install"
    r"|uv[ \t]{1,4}pip[ \t]{1,4}install|uv[ \t]{1,4}add|uv[ \t]{1,4}tool[ \t]{1,4}install|pipx[ \t]{1,4}install|poetry[ \t]{1,4}add"
    r"|npm[ \t]{1,4}(?:install|i|add)|pnpm[ \t]{1,4}(?:add|install|i)|yarn[ \t]{1,4}(?:global[ \t]{1,4})?add|bun[ \t]{1,4}(?:add|install|i)"
    r"|npx[ \t]{1,4}(?:-y[ \t]{1,4}|--yes[ \t]{1,4})?)(?P<args>[^\n;&|#`)]{0,600})",
    re.IGNORECASE,
)
_REQUIREMENTS_FILE = re.compile(r"(?:^|/)requirements[\w.-]{0,40}\.(?:txt|in)$")
_IP_HOST = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
# \w, not [A-Za-z0-9]: a name spelled with Cyrillic or Greek look-alikes must be read whole.
_PY_NAME = re.compile(r"^(\w[\w.-]{0,200})")
_NPM_SPEC = re.compile(r"^(@[a-z0-9._-]{1,100}/)?([a-z0-9._-]{1,214})(?:@(.{1,100}))?$", re.IGNORECASE)
# pip options that take a value (the value is not a package).
_PIP_VALUE_OPTS = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target",
                             "--prefix", "--root", "--python-version", "--platform", "--implementation", "--abi",
                             "-f", "--find-links", "--src", "--cache-dir", "--log", "--progress-bar", "--python",
                             "--upgrade-strategy", "-p", "--with", "--group", "--extra", "--proxy", "--cert",
                             "--client-cert", "--timeout", "--retries", "--exists-action", "--report", "--only-binary",
                             "--no-binary", "--config-settings", "-C", "--global-option", "--build-option"})
_INDEX_OPTS = frozenset({"-i", "--index-url", "--extra-index-url", "--index", "--default-index", "--registry",
                         "--trusted-host"})
_NPM_VALUE_OPTS = frozenset({"--prefix", "-w", "--workspace", "--tag", "--cache", "--userconfig", "--package", "-p"})
_PLACEHOLDER = re.compile(r"[<>{}$%\[\]*]|\.\.\.|^-")


@dataclass(frozen=True)
class PkgHit:
    analyzer: str
    offset: int
    evidence: str
    detail: str


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]{1,50}", "-", name).lower()


def _one_edit(a: str, b: str) -> bool:
    """True when a and b differ by exactly one insert, delete, replace or adjacent swap."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1:]


def lookalike_of(name: str, known: frozenset[str]) -> str | None:
    """The well-known name ``name`` imitates, or None."""
    if not name.isascii():
        ascii_name = name.encode("ascii", "ignore").decode()
        return next((k for k in known if _normalize(k) == _normalize(ascii_name) or _one_edit(_normalize(ascii_name), _normalize(k))), name)
    norm = _normalize(name)
    if norm in known or len(norm) < 5:
        return None
    for k in known:
        kn = _normalize(k)
        if len(kn) < 5 or abs(len(kn) - len(norm)) > 1:
            continue
        # Names that differ only by a trailing digit are usually real siblings (boto/boto3, pypdf/pypdf2).
        if norm.rstrip("0123456789") == kn.rstrip("0123456789"):
            continue
        if _one_edit(norm, kn):
            return k
    return None


def _host(url: str) -> str:
    try:
        return (urlsplit(url if "://" in url else "https://" + url).hostname or "").lower()
    except ValueError:
        return ""


def _split(args: str) -> list[str]:
    try:
        return shlex.split(args, comments=False, posix=True)
    except ValueError:
        return args.split()


@dataclass
class _Install:
    ecosystem: str
    names: list[tuple[str, bool]]  # (name, pinned)
    sources: list[str]  # why a source is unvetted
    branches: list[str] = field(default_factory=list)  # VCS installs without a commit


def _parse(tool: str, args: str, trusted: frozenset[str]) -> _Install:
    tool_l = tool.lower()
    npm = tool_l.split()[0] in ("npm", "pnpm", "yarn", "bun", "npx")
    inst = _Install("npm" if npm else "pypi", [], [])
    tokens = _split(args)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        opt, _, inline = tok.partition("=")
        if opt in _INDEX_OPTS:
            value = inline or (tokens[i] if i < len(tokens) else "")
            if not inline:
                i += 1
            host = _host(value)
            if host and host not in trusted:
                inst.sources.append(f"{opt} {value}")
            continue
        if tok.startswith("-"):
            if not inline and opt in (_NPM_VALUE_OPTS if npm else _PIP_VALUE_OPTS):
                i += 1
            continue
        if _PLACEHOLDER.search(tok) or tok in (".", "..") or tok.startswith(("./", "../", "/", "~")):
            continue
        if "://" in tok or tok.startswith(("git+", "git@", "github:", "gitlab:")):
            host = _host(tok.split("+", 1)[1] if tok.startswith("git+") else tok)
            if host and _IP_HOST.match(host):
                inst.sources.append(f"{tok} (a bare IP address)")
            elif tok.startswith("http://"):
                inst.sources.append(f"{tok} (plain HTTP)")
            elif tok.startswith(("git+", "git@", "github:", "gitlab:")) and not re.search(r"@[0-9a-f]{7,40}\b|#[0-9a-f]{7,40}\b", tok):
                inst.branches.append(tok)
            elif host and host not in trusted and not tok.startswith(("git+", "git@")):
                inst.sources.append(f"{tok} (an archive from {host})")
            continue
        if tok.endswith((".whl", ".tar.gz", ".zip", ".tgz")):
            continue  # a local file: the audit of that file is someone else's
        if npm:
            m = _NPM_SPEC.match(tok)
            if m:
                inst.names.append(((m.group(1) or "") + m.group(2), bool(m.group(3)) and m.group(3) not in ("latest", "next")))
            if tool_l.startswith("npx"):
                break  # npx runs one package; what follows are its own arguments
        else:
            m = _PY_NAME.match(tok)
            if m:
                rest = tok[m.end():]
                name = m.group(1)
                if name.lower() in ("install", "add", "pip", "python", "python3", "and", "or", "then", "the", "with"):
                    continue
                inst.names.append((name.split("[")[0], "==" in rest or "===" in rest or "@" in rest))
    return inst


def _hits(inst: _Install, offset: int, evidence: str, known: dict[str, frozenset[str]]) -> Iterator[PkgHit]:
    for source in inst.sources:
        yield PkgHit("packages.untrusted-source", offset, evidence, source)
    for branch in inst.branches:
        yield PkgHit("packages.unpinned-vcs", offset, evidence, f"{branch} (a branch, not a commit)")
    unpinned: list[str] = []
    for name, pinned in inst.names:
        base = name.split("/")[-1] if inst.ecosystem == "npm" and name.startswith("@") else name
        target = lookalike_of(base, known.get(inst.ecosystem, frozenset())) if not name.startswith("@") else None
        if target is not None:
            detail = f"{name!r} looks like the well-known {inst.ecosystem} package {target!r}" if target != name else \
                f"{name!r} has non-ASCII characters that look like Latin letters"
            yield PkgHit("packages.lookalike", offset, evidence, detail)
        elif not pinned:
            unpinned.append(name)
    if unpinned:
        yield PkgHit("packages.unpinned", offset, evidence, f"no version pinned for {', '.join(unpinned[:8])}"
                     + (f" and {len(unpinned) - 8} more" if len(unpinned) > 8 else ""))


def scan(file: TextFile, known: dict[str, frozenset[str]], trusted: frozenset[str]) -> Iterator[PkgHit]:
    text = file.text
    if _REQUIREMENTS_FILE.search(file.path):
        yield from _requirements(file, known, trusted)
        return
    lowered = file.lower
    if not any(k in lowered for k in ("install", " add ", "npx ", "add\t")):
        return
    for m in _INSTALL.finditer(text):
        tool, args = m.group("tool"), m.group("args")
        inst = _parse(tool, args, trusted)
        start = m.start("tool")
        line_start, line_end = file.line_span(start)
        yield from _hits(inst, start, text[line_start:line_end].strip()[:200], known)


def _requirements(file: TextFile, known: dict[str, frozenset[str]], trusted: frozenset[str]) -> Iterator[PkgHit]:
    offset = 0
    for raw in file.text.split("\n"):
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            if line.startswith("-"):
                inst = _parse("pip install", line, trusted)
            else:
                inst = _parse("pip install", shlex.quote(line.split(";", 1)[0].strip()), trusted)
            yield from _hits(inst, offset, raw.strip()[:200], known)
        offset += len(raw) + 1
