"""Which third-party modules a skill's scripts import, and which of them nothing declares.

Scripts are parsed with ``ast`` — never imported or run. An import is *third-party* unless it is
in the standard library (``sys.stdlib_module_names``), relative, or a module of the skill itself
(a ``.py`` file or a folder holding one anywhere in the skill: scripts put their own folder on
``sys.path`` and import their neighbours). Its distribution comes from the shipped import-name
map (``import_names.json``: ``PIL`` → Pillow, ``yaml`` → PyYAML, ``sklearn`` → scikit-learn…);
a name not in the map is taken to be its own distribution name.

Most scripts are not parsed into a tree at all: a scanner (one regular expression that steps over
comments and string literals) lists the import statements of a valid file exactly as ``ast``
does, and the file is then only checked to parse (by the symbol-table pass, which builds no
Python objects). A file the scanner cannot vouch for — ``TYPE_CHECKING`` blocks, an encoding
other than UTF-8, f-strings under the grammar of Python 3.12+ — gets the full parse.

This module is a leaf (standard library and ``packaging`` only): the validator calls
``undeclared_imports`` without pulling in the rest of the environment machinery, and
``packaging`` is imported only when a skill declares something.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from skillctl.env.declare import MAX_SCRIPT_BYTES, Declarations, is_python_script, requirement_name, skill_declarations
from skillctl.errors import EnvError
from skillctl.fsutil import read_at_most

if TYPE_CHECKING:
    import ast

_MAP_FILE = Path(__file__).with_name("import_names.json")


@lru_cache(maxsize=1)
def import_map() -> dict[str, str]:
    import json  # only once a script imports something that is not the standard library's

    return dict(json.loads(_MAP_FILE.read_text("utf-8"))["names"])


def distribution_for(module: str) -> str:
    """The distribution that provides ``module`` (dotted), by the longest matching map key."""
    names = import_map()
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        hit = names.get(".".join(parts[:end]))
        if hit:
            return hit
    return parts[0]


@dataclass(frozen=True)
class ImportUse:
    module: str  # as written: "yaml", "PIL.Image", "google.protobuf.json_format"
    file: str  # POSIX path relative to the skill
    line: int
    column: int  # 1-based

    @property
    def distribution(self) -> str:
        return distribution_for(self.module)


def _is_type_checking(test: ast.expr) -> bool:
    import ast

    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


# Import statements are statements: they sit only in the statement lists of other statements
# (and of except clauses and match cases), so the walk never descends into expressions.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(tree: ast.AST) -> Iterable[tuple[str, int, int]]:
    """(module, line, column) of every absolute import, skipping ``if TYPE_CHECKING:`` blocks."""
    import ast

    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, node.col_offset + 1
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno, node.col_offset + 1
        for name in _BODIES:
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(children)


# --- the scanner -------------------------------------------------------------------------------
# In a file that parses, once comments and string literals are stepped over, the keyword
# ``import`` occurs only in import statements and ``from`` only there, in ``yield from`` and in
# ``raise … from``. Literals are matched whole from their quote: a prefix (r, b, f, u) does not
# change where one ends, since a backslash escapes the next character even in a raw string. A
# keyword is a whole word: no identifier character (ASCII word or any non-ASCII one) on either
# side; the look-behind sits after the literal so the regex engine can skip ahead to candidates.
# an identifier character: an ASCII letter, digit or underscore, or any non-ASCII character
# (written as "no other ASCII character": a class spanning all of Unicode is slow to compile)
_IDC = r"[^\x00-/:-@\[-^`{-\x7f]"
_AFTER = f"(?!{_IDC})"
_NAME = f"{_IDC}+"
_SPACE = r"(?:[ \t\f]|\\\n)*"  # blanks and backslash continuations
_DOTTED = f"{_NAME}(?:{_SPACE}\\.{_SPACE}{_NAME})*"
_ALIAS = f"{_DOTTED}(?:{_SPACE}as{_AFTER}{_SPACE}{_NAME})?"
_ALIAS_RE = re.compile(f"(?P<module>{_DOTTED})(?:{_SPACE}as{_AFTER}{_SPACE}{_NAME})?")
_SCAN_RE = re.compile(
    r"#[^\n]*"
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    # from MODULE import … (relative: from . import x, from .a import b)
    f"|from(?<!{_IDC}from){_AFTER}{_SPACE}(?P<source>(?:\\.{_SPACE})*(?:{_DOTTED})?){_SPACE}import{_AFTER}"
    # import a.b as c, d
    f"|import(?<!{_IDC}import){_AFTER}{_SPACE}(?P<names>{_ALIAS}(?:{_SPACE},{_SPACE}{_ALIAS})*)",
    re.DOTALL,
)
_BLANKS_RE = re.compile(r"[\s\\]+")  # `a . b` and `a.\<newline>b` are the module a.b
_CODING_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
# Python 3.12 lets an f-string's replacement fields hold its own quotes and comments
# (PEP 701): such a literal is no longer found by its quotes alone.
_NESTING_FSTRINGS = sys.version_info >= (3, 12)
_FSTRING_RE = re.compile(f"(?<!{_IDC})[rRbBuU]?[fFtT][rRbB]?['\"]") if _NESTING_FSTRINGS else None


def _is_utf8(encoding: str) -> bool:
    name = encoding.lower().replace("_", "-")
    return name in ("utf-8", "utf8") or name.startswith("utf-8-")


def _scan(data: bytes) -> list[tuple[str, int, int]] | None:
    """The (module, line, column) of every absolute import of ``data`` — exactly what the walk
    over ``ast.parse(data)`` yields, provided the file parses — or None when only the full
    parse can tell (see the module's docstring)."""
    if b"TYPE_CHECKING" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # another encoding (or not source): the parser decides
    if text.startswith("\ufeff"):
        text = text[1:]  # the parser drops a byte-order mark; columns start after it
    if "coding" in text[:400]:
        for line in text.split("\n", 2)[:2]:
            cookie = _CODING_RE.match(line)
            if cookie and not _is_utf8(cookie.group(1)):
                return None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # the parser's line ends
    if _FSTRING_RE is not None and _FSTRING_RE.search(text):
        return None
    found: list[tuple[str, int, int]] = []
    # Every import statement holds the word "import": none starts after its last occurrence, so
    # the scan stops there (most scripts import at the top, and the rest of the file is skipped).
    last = text.rfind("import")
    line, pos = 1, 0
    ascii_only = text.isascii()
    for m in _SCAN_RE.finditer(text):
        if m.start() > last:
            break
        kind = m.lastgroup  # None for a comment or a literal: most matches
        if kind is None:
            continue
        source, names = m.group("source"), m.group("names")
        if names is None and (not source or source.startswith(".")):
            continue  # yield/raise … from, or a relative import
        start = m.start()
        line += text.count("\n", pos, start)
        pos = start
        bol = text.rfind("\n", 0, start) + 1
        # ast counts columns in UTF-8 bytes
        column = (start - bol if ascii_only else len(text[bol:start].encode("utf-8"))) + 1
        if names is None:
            found.append((_BLANKS_RE.sub("", source), line, column))
        else:
            found += [(_BLANKS_RE.sub("", a.group("module")), line, column) for a in _ALIAS_RE.finditer(names)]
    return found


def _parses(data: bytes, filename: str) -> bool:
    """Whether ``ast.parse(data)`` succeeds. The symbol-table pass parses the same way and
    builds no Python objects; it refuses a little more (``nonlocal`` at module level), so only
    its refusals are put to ``ast.parse``."""
    import symtable

    try:
        symtable.symtable(data, filename, "exec")
        return True
    except Exception:  # noqa: BLE001 - any refusal: the parser itself decides
        pass
    import ast

    try:
        ast.parse(data, filename=filename)
    except (SyntaxError, ValueError):
        return False
    return True


def local_modules(paths: Iterable[str]) -> set[str]:
    """Top-level names the skill provides itself: every ``.py`` file's stem and every folder
    that holds Python files (``references/func.py`` makes ``references`` and ``func``)."""
    names: set[str] = set()
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        parts = rel.split("/")
        names.add(parts[-1][:-3])
        names.update(parts[:-1])
    return names


def third_party_imports(
    paths: Iterable[str], read: Callable[[str], bytes], wanted: Callable[[ImportUse], bool] | None = None
) -> list[ImportUse]:
    """Every import of a module that is neither standard library nor part of the skill (and,
    given ``wanted``, that it keeps). A script that does not parse has nothing to say about its
    imports (not Python 3 source, or not Python at all); whether it parses is asked only of a
    script that has imports to report."""
    paths = sorted(paths)
    local = local_modules(paths)
    stdlib = sys.stdlib_module_names
    found: list[ImportUse] = []
    for rel in paths:
        if rel.endswith((".md", ".txt", ".json", ".yaml", ".yml", ".csv")):
            continue
        try:
            data = read(rel)
        except OSError:
            continue  # the validator reports unreadable files itself
        if len(data) > MAX_SCRIPT_BYTES or not is_python_script(rel, data[:256]):
            continue
        imports = _scan(data)
        parsed = imports is None
        if imports is None:
            import ast

            try:
                imports = list(_imports(ast.parse(data, filename=rel)))
            except (SyntaxError, ValueError):
                continue
        uses = []
        for module, line, col in imports:
            top = module.partition(".")[0]
            if top not in stdlib and top not in local:
                use = ImportUse(module, rel, line, col)
                if wanted is None or wanted(use):
                    uses.append(use)
        if uses and (parsed or _parses(data, rel)):
            found += uses
    return sorted(found, key=lambda u: (u.file, u.line, u.column, u.module))


def undeclared_imports(
    paths: Iterable[str], read: Callable[[str], bytes], declared: Iterable[str]
) -> list[ImportUse]:
    """Imports whose distribution is not among ``declared`` (distribution names, any spelling)."""
    have = {_canonical(d) for d in declared}
    if not have:
        return third_party_imports(paths, read)
    return third_party_imports(paths, read, lambda u: _canonical(u.distribution) not in have)


_SEPARATORS_RE = re.compile(r"[-_.]+")


def _canonical(name: str) -> str:
    """A distribution name normalised as PEP 503 defines it (packaging's canonicalize_name,
    without importing packaging for it)."""
    return _SEPARATORS_RE.sub("-", name).lower()


def folder_reader(folder: Path) -> Callable[[str], bytes]:
    def read(rel: str) -> bytes:
        return read_at_most(os.path.join(folder, rel), MAX_SCRIPT_BYTES + 1)

    return read


def _scripts_kept(read: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """``read``, remembering the Python scripts: the declarations and then the imports are read
    from the same files, and only the scripts are read the second time."""
    kept: dict[str, bytes] = {}

    def read_once(rel: str) -> bytes:
        data = kept.get(rel)
        if data is None:
            data = read(rel)
            if len(data) <= MAX_SCRIPT_BYTES and is_python_script(rel, data[:256]):
                kept[rel] = data
        return data

    return read_once


def check_folder(folder: Path, shown: str, paths: Iterable[str], owner: str) -> list[tuple[str, str, str, int, int]]:
    """Findings for the validator as (code, message, file shown, line, column) tuples.

    SK251: a script imports a module no declared requirement provides; SK252: the skill's own
    declaration (PEP 723 block, requirements.txt) cannot be used.
    """
    paths = list(paths)
    read = _scripts_kept(folder_reader(folder))
    try:
        decl = skill_declarations(owner, paths, read, requirement_name)
    except EnvError as exc:
        return [("SK252", f"{exc}", shown, 0, 0)]
    declared = [d.requirement for d in decl.python]  # names
    out = []
    reported: set[tuple[str, str]] = set()
    for use in undeclared_imports(paths, read, declared):
        key = (use.file, use.distribution)
        if key in reported:
            continue
        reported.add(key)
        top = use.module.split(".")[0]
        out.append((
            "SK251",
            f"imports '{top}' but no declared requirement provides it; declare '{use.distribution}' in a "
            "PEP 723 block or requirements.txt (`skillctl env infer` prints one)",
            f"{shown}/{use.file}", use.line, use.column,
        ))
    return out


def _name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


@dataclass(frozen=True)
class Inferred:
    """What ``skillctl env infer`` suggests for one skill."""

    declared: tuple[str, ...]  # requirements the skill already declares
    missing: tuple[str, ...]  # distributions its scripts import that nothing declares
    uses: tuple[ImportUse, ...]

    def requirements(self) -> list[str]:
        return list(self.declared) + list(self.missing)

    def pep723_block(self, requires_python: str | None = None) -> str:
        lines = ["# /// script"]
        if requires_python:
            lines.append(f'# requires-python = "{requires_python}"')
        reqs = self.requirements()
        if reqs:
            lines.append("# dependencies = [")
            lines += [f'#     "{r}",' for r in reqs]
            lines.append("# ]")
        else:
            lines.append("# dependencies = []")
        lines.append("# ///")
        return "\n".join(lines) + "\n"


def infer(folder: Path, owner: str, paths: Iterable[str]) -> Inferred:
    paths = list(paths)
    read = folder_reader(folder)
    decl: Declarations = skill_declarations(owner, paths, read)
    declared = tuple(dict.fromkeys(d.requirement for d in decl.python))
    uses = undeclared_imports(paths, read, [_name(r) for r in declared])
    missing = tuple(sorted({u.distribution for u in uses}, key=str.lower))
    return Inferred(declared, missing, tuple(uses))
