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
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from skillctl.env.declare import MAX_SCRIPT_BYTES, PLAIN_REQUIREMENT_RE, Declarations, is_python_script, requirement_name, skill_declarations
from skillctl.errors import EnvError
from skillctl.fsutil import read_at_most

if TYPE_CHECKING:
    import ast

_MAP_FILE = Path(__file__).with_name("import_names.json")


@lru_cache(maxsize=1)
def import_map() -> dict[str, str]:
    import json  # only once a script imports something that is not the standard library's

    return dict(json.loads(_MAP_FILE.read_text("utf-8"))["names"])


@lru_cache(maxsize=1)
def alternatives_map() -> dict[str, tuple[str, ...]]:
    """Import name -> other distributions known to provide it (forks, headless builds)."""
    import json

    return {k: tuple(v) for k, v in json.loads(_MAP_FILE.read_text("utf-8")).get("also", {}).items()}


def mapped(module: str) -> str | None:
    """The distribution the shipped map gives for ``module`` (dotted), by the longest matching
    key; None when the map does not know it."""
    names = import_map()
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        hit = names.get(".".join(parts[:end]))
        if hit:
            return hit
    return None


def distribution_for(module: str) -> str:
    """The distribution that provides ``module`` (dotted), by the longest matching map key; a
    name the map does not know is taken to be its own distribution name (a guess)."""
    return mapped(module) or module.split(".")[0]


@dataclass(frozen=True)
class ImportUse:
    module: str  # as written: "yaml", "PIL.Image", "google.protobuf.json_format"
    file: str  # POSIX path relative to the skill
    line: int
    column: int  # 1-based
    # In a ``try:`` whose handler catches ImportError (ModuleNotFoundError, Exception, a bare
    # ``except:``), or in the handler of one: the script runs without it.
    caught: bool = False
    # The environment marker under which the import runs, from the ``if`` on a platform check
    # around it (``sys_platform == "win32"``), or of a platform-only distribution (pywin32).
    marker: str | None = None
    on_linux: bool = field(default=True, compare=False)  # whether the marker holds in the agent image

    @property
    def distribution(self) -> str:
        return distribution_for(self.module)

    @property
    def top(self) -> str:
        return self.module.partition(".")[0]

    @property
    def optional(self) -> bool:
        """The script runs without it: guarded by an ImportError handler or a platform check."""
        return self.caught or self.marker is not None

    @property
    def needed(self) -> bool:
        """Imported, unguarded, when the script runs in the (Linux) agent image."""
        return not self.caught and self.on_linux


def _is_type_checking(test: ast.expr) -> bool:
    import ast

    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


# --- guards ------------------------------------------------------------------------------------
# A platform check is kept as a small tree — ("==" | "!=", variable, value) or ("and" | "or", a,
# b) — because PEP 508 markers have no ``not``: the else branch gets the negation by De Morgan.
Marker = tuple
_LINUX = {"sys_platform": "linux", "os_name": "posix", "platform_system": "Linux"}
# sys.platform.startswith(PREFIX) -> the sys.platform value it stands for
_PLATFORM_PREFIXES = {"win": "win32", "win32": "win32", "linux": "linux", "darwin": "darwin", "cygwin": "cygwin"}
_SYSTEMS = {"windows": "Windows", "darwin": "Darwin", "linux": "Linux", "java": "Java"}
# Distributions that exist for one platform only: never an unmarked requirement.
PLATFORM_ONLY: dict[str, Marker] = {
    **{d: ("==", "sys_platform", "win32") for d in (
        "pywin32", "pywin32-ctypes", "pywinauto", "comtypes", "wmi", "winshell", "pypiwin32", "windows-curses")},
    **{d: ("==", "sys_platform", "darwin") for d in (
        "pyobjc", "pyobjc-core", "pyobjc-framework-cocoa", "pyobjc-framework-quartz", "rumps")},
}
# Handlers that catch a failed import
_CATCHING = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _negate(m: Marker) -> Marker:
    if m[0] in ("==", "!="):
        return ("!=" if m[0] == "==" else "==", m[1], m[2])
    return ("or" if m[0] == "and" else "and", _negate(m[1]), _negate(m[2]))


def _both(a: Marker | None, b: Marker | None, op: str = "and") -> Marker | None:
    if a is None or b is None:
        return a if b is None else b
    return (op, a, b)


def marker_text(m: Marker, outer: str = "") -> str:
    if m[0] in ("==", "!="):
        return f'{m[1]} {m[0]} "{m[2]}"'
    text = f"{marker_text(m[1], m[0])} {m[0]} {marker_text(m[2], m[0])}"
    return f"({text})" if outer and outer != m[0] else text


def _holds(m: Marker, env: dict[str, str]) -> bool:
    if m[0] == "==":
        return env[m[1]] == m[2]
    if m[0] == "!=":
        return env[m[1]] != m[2]
    return (_holds(m[1], env) and _holds(m[2], env)) if m[0] == "and" else (_holds(m[1], env) or _holds(m[2], env))


def _dotted(node: ast.expr) -> str:
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _variable(node: ast.expr) -> tuple[str, bool] | None:
    """(marker variable, compared lower-cased) for ``sys.platform``, ``os.name``,
    ``platform.system()`` and ``platform.system().lower()``."""
    import ast

    lower = False
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) and node.func.attr == "lower":
        node, lower = node.func.value, True
    if isinstance(node, ast.Call) and not node.args and _dotted(node.func) == "platform.system":
        return "platform_system", lower
    name = _dotted(node)
    if name == "sys.platform":
        return "sys_platform", lower
    if name == "os.name":
        return "os_name", lower
    return None


def _value(var: str, lower: bool, text: str) -> str:
    return _SYSTEMS.get(text.lower(), text) if var == "platform_system" and lower else text


def _strings(node: ast.expr) -> list[str] | None:
    import ast

    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    if not items or not all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
        return None
    return [i.value for i in items]


def _any_of(var: str, values: list[str]) -> Marker:
    m: Marker = ("==", var, values[0])
    for v in values[1:]:
        m = ("or", m, ("==", var, v))
    return m


def _platform(test: ast.expr, named: dict[str, Marker]) -> Marker | None:
    """The marker a platform check stands for, None when ``test`` is not (only) one."""
    import ast

    if isinstance(test, ast.Name):
        return named.get(test.id)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _platform(test.operand, named)
        return None if inner is None else _negate(inner)
    if isinstance(test, ast.BoolOp):
        parts = [_platform(v, named) for v in test.values]
        if any(p is None for p in parts):
            return None
        op = "and" if isinstance(test.op, ast.And) else "or"
        out = parts[0]
        for p in parts[1:]:
            out = (op, out, p)
        return out
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
            and len(test.args) == 1 and _dotted(test.func.value) == "sys.platform":
        prefixes = _strings(test.args[0])
        values = [_PLATFORM_PREFIXES.get(p) for p in prefixes or []]
        return _any_of("sys_platform", values) if values and None not in values else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        found = _variable(left)
        if found is None and isinstance(op, (ast.Eq, ast.NotEq)):
            found, left, right = _variable(right), right, left
        if found is None:
            return None
        var, lower = found
        values = _strings(right)
        if not values:
            return None
        values = [_value(var, lower, v) for v in values]
        if isinstance(op, (ast.Eq, ast.In)):
            return _any_of(var, values)
        if isinstance(op, (ast.NotEq, ast.NotIn)):
            return _negate(_any_of(var, values))
    return None


def _body_marker(test: ast.expr, named: dict[str, Marker]) -> Marker | None:
    """What holds inside the body of ``if test:``: the whole test, or the platform checks
    among the terms of an ``and``."""
    import ast

    whole = _platform(test, named)
    if whole is not None or not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return whole
    out = None
    for value in test.values:
        out = _both(out, _platform(value, named))
    return out


def _catches_imports(handler: ast.ExceptHandler, body: list[ast.stmt]) -> bool:
    """Whether ``handler`` makes its ``try`` an import guard: it catches ImportError or
    ModuleNotFoundError — or anything (``Exception``, a bare ``except:``) around a body of
    imports only (a broad handler around real work is error handling, not a guard) — and the
    script goes on without the module (a handler that exits or raises means it is required)."""
    import ast

    if handler.type is None:
        kinds = ["BaseException"]
    else:
        kinds = [_dotted(k).rpartition(".")[2] for k in (handler.type.elts if isinstance(handler.type, ast.Tuple)
                                                           else [handler.type])]
    if not any(k in ("ImportError", "ModuleNotFoundError") for k in kinds):
        if not any(k in _CATCHING for k in kinds) or not all(
                isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.Pass, ast.Expr)) for n in body):
            return False
    return not any(_terminates(n) for n in handler.body)


def _terminates(node: ast.stmt) -> bool:
    """``raise``, or a call of ``sys.exit``/``exit``/``quit``/``os._exit``, as a statement."""
    import ast

    if isinstance(node, ast.Raise):
        return True
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _dotted(node.value.func) in (
        "sys.exit", "exit", "quit", "os._exit", "SystemExit")


def _named_checks(tree: ast.AST) -> dict[str, Marker]:
    """Module-level flags set from a platform check: ``IS_WINDOWS = sys.platform == "win32"``."""
    import ast

    named: dict[str, Marker] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            m = _platform(node.value, named)
            if m is not None:
                named[node.targets[0].id] = m
    return named


# Import statements are statements: they sit only in the statement lists of other statements
# (and of except clauses and match cases), so the walk never descends into expressions.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(tree: ast.AST, named: dict[str, Marker] | None = None) -> Iterable[tuple[str, int, int, bool, Marker | None]]:
    """(module, line, column, caught, marker) of every absolute import, skipping ``if
    TYPE_CHECKING:`` blocks; ``caught`` and ``marker`` say what guards it (see ImportUse)."""
    import ast

    named = _named_checks(tree) if named is None else named
    stack: list[tuple[ast.AST, bool, Marker | None]] = [(tree, False, None)]
    while stack:
        node, caught, marker = stack.pop()
        if isinstance(node, ast.If):
            if _is_type_checking(node.test):
                stack.extend((n, caught, marker) for n in node.orelse)
                continue
            inside = _body_marker(node.test, named)
            whole = _platform(node.test, named)
            stack.extend((n, caught, _both(marker, inside)) for n in node.body)
            stack.extend((n, caught, _both(marker, None if whole is None else _negate(whole))) for n in node.orelse)
            continue
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            guarded = caught or any(_catches_imports(h, node.body) for h in node.handlers)
            stack.extend((n, guarded, marker) for n in node.body + node.handlers)
            stack.extend((n, caught, marker) for n in node.orelse + node.finalbody)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, node.col_offset + 1, caught, marker
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno, node.col_offset + 1, caught, marker
        for name in _BODIES:
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend((n, caught, marker) for n in children)


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


# The scanner sees no blocks: a file with a third-party import that may be guarded gets the full
# parse, whose walk tracks the guards (cheap substring tests; a file importing only the
# standard library and its own modules needs no parse at all).
_GUARD_RE = re.compile(rb"ImportError|ModuleNotFoundError|sys\.platform|os\.name|platform\.system|except:"
                       rb"|except Exception|BaseException")


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


_CLAUSES = ("except", "else", "elif", "finally")
_FLAG_RE = re.compile(r"^[A-Za-z_]\w*[ \t]*=[^=].*(?:sys\.platform|os\.name|platform\.system)")


def _guards_of(data: bytes, scanned: list[tuple[str, int, int]], indented: list[int]) -> list | None:
    """The scanned imports with their guards, parsing only the top-level statements that hold
    the ``indented`` lines (a guard of an import sits in the same top-level statement) and the
    module's platform flags (``IS_WINDOWS = os.name == "nt"``); None when that does not work
    out — a statement boundary inside a string literal makes a fragment that does not parse —
    and the whole file must be parsed."""
    import ast

    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")

    def top_level(i: int) -> bool:  # 0-based line that starts a top-level statement or clause
        t = lines[i]
        return bool(t) and not t[0].isspace() and t[0] != "#"

    def clause(i: int) -> bool:
        word = re.match(r"[a-z]+", lines[i])
        return word is not None and word.group() in _CLAUSES

    spans: list[tuple[int, int]] = []
    for line in sorted(set(indented)):
        if spans and spans[-1][0] <= line - 1 <= spans[-1][1]:
            continue
        start = line - 1
        while start > 0 and not (top_level(start) and not clause(start)):
            start -= 1
        end = line
        while end < len(lines) and not (top_level(end) and not clause(end)):
            end += 1
        spans.append((start, end - 1))
    named: dict[str, Marker] = {}
    try:
        for i, t in enumerate(lines):
            if _FLAG_RE.match(t):
                flag = ast.parse(t).body[0]
                m = _platform(flag.value, named) if isinstance(flag, ast.Assign) else None
                if m is not None and isinstance(flag.targets[0], ast.Name):
                    named[flag.targets[0].id] = m
        guarded: dict[tuple[str, int, int], tuple[bool, Marker | None]] = {}
        for start, end in spans:
            fragment = "\n" * start + "\n".join(lines[start:end + 1]) + "\n"
            for module, line, col, caught, marker in _imports(ast.parse(fragment), named):
                guarded[(module, line, col)] = (caught, marker)
    except (SyntaxError, ValueError, IndexError):
        return None
    out = []
    for module, line, col in scanned:
        caught, marker = guarded.get((module, line, col), (False, None))
        if col > 1 and (module, line, col) not in guarded:
            if line in indented:
                return None  # the fragments do not agree with the scanner: parse the file
        out.append((module, line, col, caught, marker))
    return out


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
        scanned = _scan(data)
        imports = None
        if scanned is not None:
            # An indented third-party import may be guarded (one at column 1 is a statement of the
            # module itself, in no block; ``wanted`` looks at the module only): the walk tells.
            indented = [line for m, line, col in scanned if col > 1 and m.partition(".")[0] not in stdlib
                        and m.partition(".")[0] not in local and (wanted is None or wanted(ImportUse(m, rel, line, col)))]
            if indented and _GUARD_RE.search(data):
                imports = _guards_of(data, scanned, indented)
                if imports is None:
                    scanned = None
        parsed = scanned is None
        if scanned is None:
            import ast

            try:
                imports = list(_imports(ast.parse(data, filename=rel)))
            except (SyntaxError, ValueError):
                continue
        elif imports is None:
            imports = [(module, line, col, False, None) for module, line, col in scanned]
        uses = []
        for module, line, col, caught, marker in imports:
            top = module.partition(".")[0]
            if top not in stdlib and top not in local:
                if marker is None:
                    marker = PLATFORM_ONLY.get(_canonical(distribution_for(module)))
                use = ImportUse(module, rel, line, col, caught, None if marker is None else marker_text(marker),
                                True if marker is None else _holds(marker, _LINUX))
                if wanted is None or wanted(use):
                    uses.append(use)
        if uses and (parsed or _parses(data, rel)):
            found += uses
    return sorted(found, key=lambda u: (u.file, u.line, u.column, u.module))


def undeclared_imports(
    paths: Iterable[str], read: Callable[[str], bytes], declared: Iterable[str]
) -> list[ImportUse]:
    """Imports that no distribution among ``declared`` (distribution names, any spelling)
    provides: neither the one the import maps to, nor one that plausibly provides it."""
    have = {_canonical(d) for d in declared}
    if not have:
        return third_party_imports(paths, read)
    return third_party_imports(paths, read, lambda u: _declared_for(u, have) is None)


def _declared_for(use: ImportUse, have: Iterable[str]) -> str | None:
    """The declared distribution (canonical) that provides ``use``, if any."""
    have = set(have)
    dist = _canonical(use.distribution)
    if dist in have:
        return dist
    return next((d for d in sorted(have) if plausible(use.module, d)), None)


def plausible(module: str, distribution: str) -> bool:
    """Whether ``distribution`` plausibly provides ``module``: the map says so (its entry or a
    known alternative), the names match after normalisation (``tdc`` / PyTDC, ``yaml`` /
    PyYAML), or the distribution's name holds the import name as a word (``esm`` / fair-esm).
    Never a looser guess: a wrong answer here silences a real warning."""
    dist = _canonical(distribution)
    top = module.partition(".")[0]
    hit = mapped(module)
    if hit and _canonical(hit) == dist:
        return True
    if dist in {_canonical(a) for a in alternatives_map().get(top, ())}:
        return True
    return _same_name(top, dist) or _word_in(top, dist)


def _squash(name: str) -> str:
    return _SEPARATORS_RE.sub("", name).lower()


def _same_name(top: str, dist: str) -> bool:
    imp, d = _squash(top), _squash(dist)
    return d in (imp, "py" + imp, "python" + imp, imp + "py", imp + "python")


def _word_in(top: str, dist: str) -> bool:
    words, wanted = _canonical(dist).split("-"), [w for w in top.lower().split("_") if w]
    n = len(wanted)
    return n > 0 and len(top) >= 3 and any(words[i:i + n] == wanted for i in range(len(words) - n + 1))


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


# --- evidence from the skill's own text --------------------------------------------------------
# ``pip install X``, ``pip3 install``, ``python -m pip install``, ``uv pip install``, ``uv add``,
# ``pipx install``: in a line of prose, a code block or a shell script, up to what ends a shell
# command (``;``, ``&&``, ``|``, a comment, a closing backtick or parenthesis).
_INSTALL_RE = re.compile(
    r"(?<![\w.-])(?P<command>(?:(?:python[\d.]*\s+|py\s+)?-m\s+pip|pip3?(?:\.\d+)?|uv\s+pip|uv|pipx)"
    r"\s+(?:install|add)(?![\w-]))(?P<args>[^\n`;|&#)]*)"
)
_TEXT_SUFFIXES = (".md", ".txt", ".sh", ".rst")
# Scripts too: "Run: pip install pymupdf" in a message says what the script needs.
_INSTALL_SUFFIXES = _TEXT_SUFFIXES + (".py",)
# Options that take a value (the value is not a distribution)
_VALUED = frozenset("""-r --requirement -c --constraint -e --editable -i --index-url --extra-index-url -f --find-links
    -t --target --prefix --root --python -p --platform --python-version --implementation --abi --upgrade-strategy
    --src --cache-dir --trusted-host --proxy --index --default-index --group --optional --extra --python-platform
    --build-constraint --overrides --no-binary --only-binary --config-file --log --progress-bar --suffix
    --pip-args --spec""".split())
_NAME_RE = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")


@dataclass(frozen=True)
class InstallLine:
    """A distribution the skill's text tells its user to install."""

    requirement: str  # as written: "fair-esm", "fair-esm[esmfold]>=2.0"
    name: str  # its distribution name
    file: str
    line: int
    command: str  # "pip install fair-esm"

    def where(self) -> str:
        return f"{self.file}:{self.line} `{self.command}`"


def _arguments(args: str) -> list[str]:
    import shlex

    try:
        return shlex.split(args)
    except ValueError:  # an unbalanced quote in prose
        return args.split()


def _texts(paths: Iterable[str], read: Callable[[str], bytes]) -> Iterable[tuple[str, bytes]]:
    """(path, bytes) of the skill's files that can hold install lines or name its own modules
    (.md, .txt, .sh, .rst, .py); unreadable ones are skipped (the validator reports them)."""
    for rel in paths:
        if rel.endswith(_INSTALL_SUFFIXES):
            try:
                yield rel, read(rel)
            except OSError:
                continue


def install_lines(paths: Iterable[str], read: Callable[[str], bytes]) -> list[InstallLine]:
    """Every distribution named by an install command in the skill's .md, .txt, .sh, .rst and
    .py files (options and their values, paths, URLs and placeholders skipped; extras and
    version specifiers kept), in file and line order."""
    found: list[InstallLine] = []
    for rel, data in _texts(sorted(paths), read):
        if b"install" not in data and b"uv add" not in data:
            continue
        text = data.decode("utf-8", "replace")
        starts: set[int] = set()  # the lines holding the words, found in C (str.find)
        for word in ("install", "uv add"):
            pos = text.find(word)
            while pos != -1:
                starts.add(text.rfind("\n", 0, pos) + 1)
                end = text.find("\n", pos)
                pos = -1 if end == -1 else text.find(word, end)
        line, counted = 1, 0
        for bol in sorted(starts):
            end = text.find("\n", bol)
            line += text.count("\n", counted, bol)
            counted = bol
            for m in _INSTALL_RE.finditer(text, bol, len(text) if end == -1 else end):
                found += _install_line(m, rel, line)
    return found


def _install_line(m: re.Match[str], rel: str, line: int) -> list[InstallLine]:
    """The distributions one install command names."""
    skip = False
    named = []
    for word in _arguments(m.group("args")):
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in _VALUED
            continue
        req = _requirement(word.rstrip(".,:;!?*"))
        if req is not None:
            named.append(req)
    if not named:
        return []
    command = " ".join([" ".join(m.group("command").split())] + [r for r, _ in named])
    return [InstallLine(r, n, rel, line, command) for r, n in named]


_REQUIREMENT_CHARS_RE = re.compile(r"[A-Za-z0-9._\-\[\],<>=!~*+;]+")
_LONE_EQUALS_RE = re.compile(r"(?<![=<>!~])=(?!=)")


def _requirement(word: str) -> tuple[str, str] | None:
    """(requirement, name) when ``word`` is a requirement a user would type, else None."""
    # paths, URLs, variables and placeholders (<package>, {name}) are no distribution names
    if not word or any(c in word for c in "/\\:${}'\"@") or word.startswith((".", "<")) or word.endswith(">") or \
            word.endswith((".whl", ".tar.gz", ".zip", ".txt", ".toml", ".py")) or word.lower() in ("pip", "install"):
        return None
    plain = PLAIN_REQUIREMENT_RE.fullmatch(word)  # most are; packaging costs the validator ~17 ms to import
    if plain:
        return (word, plain.group(1)) if _NAME_RE.match(plain.group(1)) else None
    if not _REQUIREMENT_CHARS_RE.fullmatch(word) or _LONE_EQUALS_RE.search(word):
        return None  # `file=sys.stderr`, `x|y`: not a requirement, and packaging need not say so
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(word)
    except InvalidRequirement:
        return None
    if not _NAME_RE.match(req.name) or req.url:
        return None
    return word, req.name


# --- which distribution, and how sure ---------------------------------------------------------
PROVENANCES = ("declared", "text", "map", "name", "local")


@dataclass(frozen=True)
class Choice:
    """The distribution an import is taken to come from, and why.

    ``provenance``: ``declared`` (a declared requirement provides it), ``text`` (an install line
    of the skill's own text names it), ``map`` (the shipped import-name map), ``name`` (the
    import's own name — a guess), ``local`` (the skill's own module, referenced by its text but
    not shipped: no distribution at all).
    """

    use: ImportUse
    distribution: str | None
    provenance: str
    evidence: InstallLine | None = None

    @property
    def wanted(self) -> bool:
        """Worth declaring: imported unguarded, or guarded but named by the skill's install lines
        (a script that guards its core imports to print "pip install …" still needs them)."""
        return not self.use.caught or self.evidence is not None

    @property
    def certain(self) -> bool:
        return self.provenance in ("declared", "text", "map")

    @property
    def why(self) -> str:
        if self.provenance == "declared":
            return "declared"
        if self.provenance == "text":
            return f"from {self.evidence.where()}"
        if self.provenance == "map":
            return "by the import-name map" + (f", as {self.evidence.where()}" if self.evidence else "")
        if self.provenance == "local":
            return f"unknown — check: the skill refers to its own {self.use.top}.py, which it does not ship"
        return "unknown — check: no map entry, guessed from the import name"

    def to_dict(self) -> dict[str, object]:
        u = self.use
        return {"module": u.module, "file": u.file, "line": u.line, "distribution": self.distribution,
                "provenance": self.provenance, "certain": self.certain, "why": self.why,
                "optional": u.optional, "caught": u.caught, "marker": u.marker, "needed": u.needed,
                "evidence": None if self.evidence is None else {
                    "file": self.evidence.file, "line": self.evidence.line, "command": self.evidence.command}}


def _mentions(paths: Iterable[str], read: Callable[[str], bytes], names: set[str]) -> set[str]:
    """Which of ``names`` the skill's text or scripts refer to as its own file (``icons.py``)."""
    if not names:
        return set()
    hit: set[str] = set()
    for _rel, data in _texts(paths, read):
        for name in names - hit:
            if f"{name}.py".encode() in data and re.search(
                    r"(?<![\w.-])" + re.escape(name) + r"\.py(?!\w)", data.decode("utf-8", "replace")):
                hit.add(name)
    return hit


def choose(uses: Iterable[ImportUse], declared: Iterable[str], evidence: Iterable[InstallLine],
           local_refs: Iterable[str] = ()) -> list[Choice]:
    """The distribution of each use, with its provenance (see ``Choice``)."""
    have = {_canonical(d): d for d in declared}
    lines = list(evidence)
    named = {_canonical(e.name) for e in lines}
    local = set(local_refs)
    out = []
    for use in uses:
        hit = _declared_for(use, have)
        if hit is not None:
            out.append(Choice(use, have[hit], "declared"))
            continue
        dist = mapped(use.module)
        if dist is not None and _canonical(dist) in named:
            out.append(Choice(use, dist, "map", next(e for e in lines if _canonical(e.name) == _canonical(dist))))
            continue
        # Against a map entry only a close match counts; a name guess yields to any plausible one.
        close = [e for e in lines if _same_name(use.top, e.name)
                 or _canonical(e.name) in {_canonical(a) for a in alternatives_map().get(use.top, ())}]
        loose = [] if dist is not None else [e for e in lines if _word_in(use.top, e.name)]
        pick = (close or loose or [None])[0]
        if pick is not None:
            out.append(Choice(use, pick.name, "text", pick))
        elif dist is not None:
            out.append(Choice(use, dist, "map"))
        elif use.top in local:
            out.append(Choice(use, None, "local"))
        else:
            out.append(Choice(use, use.top, "name"))
    return out


def choices_of(paths: list[str], read: Callable[[str], bytes], declared: list[str]) -> list[Choice]:
    """Every third-party import of a skill (its files ``paths``, read by ``read``; ``declared``:
    the distribution names it declares) with the distribution it is taken to come from."""
    uses = third_party_imports(paths, read)
    if not uses:
        return []
    unmapped = {u.top for u in uses if mapped(u.module) is None}
    return choose(uses, declared, install_lines(paths, read), _mentions(paths, read, unmapped))


def check_folder(folder: Path, shown: str, paths: Iterable[str], owner: str) -> list[tuple[str, str, str, int, int]]:
    """Findings for the validator as (code, message, file shown, line, column) tuples.

    SK251: a script imports, unguarded, a module no declared requirement provides (an import
    the script guards — ImportError handler, or a platform check that does not hold on Linux —
    is optional and not reported); SK252: the skill's own declaration (PEP 723 block,
    requirements.txt) cannot be used.
    """
    paths = list(paths)
    read = _scripts_kept(folder_reader(folder))
    try:
        decl = skill_declarations(owner, paths, read, requirement_name)
    except EnvError as exc:
        return [("SK252", f"{exc}", shown, 0, 0)]
    declared = [d.requirement for d in decl.python]  # names
    uses = [u for u in undeclared_imports(paths, read, declared) if u.on_linux]
    if not uses:
        return []
    unmapped = {u.top for u in uses if mapped(u.module) is None}
    out = []
    reported: set[tuple[str, str]] = set()
    for c in choose(uses, declared, install_lines(paths, read), _mentions(paths, read, unmapped)):
        use = c.use
        if not c.wanted:
            continue  # optional: guarded by an ImportError handler, and the text does not ask for it
        key = (use.file, c.distribution or use.top)
        if key in reported:
            continue
        reported.add(key)
        if c.provenance == "local":
            message = (f"imports '{use.top}', which looks like the skill's own module (its text refers to "
                       f"{use.top}.py) but is not in the skill; ship it, or declare the distribution that provides it")
        else:
            why = {"text": f" ({c.why})", "name": " (a guess from the import name: check it)"}.get(c.provenance, "")
            message = (f"imports '{use.top}' but no declared requirement provides it; declare '{c.distribution}'{why} "
                       "in a PEP 723 block or requirements.txt (`skillctl env infer` prints one)")
        out.append(("SK251", message, f"{shown}/{use.file}", use.line, use.column))
    return out


def _name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name


@dataclass(frozen=True)
class Inferred:
    """What ``skillctl env infer`` suggests for one skill."""

    declared: tuple[str, ...]  # requirements the skill already declares
    missing: tuple[str, ...]  # requirements for what its scripts import that nothing declares (markers kept)
    uses: tuple[ImportUse, ...]  # the undeclared imports
    choices: tuple[Choice, ...] = ()  # every third-party import, with its distribution and provenance
    optional: tuple[str, ...] = ()  # distributions only imported under an ImportError guard: not added
    unknown: tuple[str, ...] = ()  # distributions in ``missing`` that are guesses, and missing local modules

    def requirements(self) -> list[str]:
        return list(self.declared) + list(self.missing)

    def _comment(self, requirement: str) -> str:
        return "  # unknown — check" if requirement.split(";")[0].strip() in self.unknown else ""

    def requirement_lines(self) -> list[str]:
        return list(self.declared) + [m + self._comment(m) for m in self.missing]

    def pep723_block(self, requires_python: str | None = None) -> str:
        lines = ["# /// script"]
        if requires_python:
            lines.append(f'# requires-python = "{requires_python}"')
        reqs = self.requirements()
        if reqs:
            lines.append("# dependencies = [")
            lines += [f"#     {_toml_string(r)},{self._comment(r) if r in self.missing else ''}" for r in reqs]
            lines.append("# ]")
        else:
            lines.append("# dependencies = []")
        lines.append("# ///")
        return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML string for a requirement: a literal one ('…') when it holds a marker's quotes."""
    if '"' in text and "'" not in text:
        return f"'{text}'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _requirement_of(dist: str, choices: list[Choice]) -> str | None:
    """One requirement for a distribution from all the imports of it: unmarked when any of them
    is needed everywhere, else under the markers of its platform checks; None when every use is
    caught (optional)."""
    kept = [c for c in choices if c.wanted]
    if not kept:
        return None
    base = next((c.evidence.requirement for c in choices if c.evidence is not None and c.provenance == "text"), dist)
    markers = sorted({c.use.marker for c in kept})
    if None in markers:
        return base
    joined = " or ".join(f"({m})" if " and " in m or " or " in m else m for m in markers)
    return f"{base}; {joined}"


def infer(folder: Path, owner: str, paths: Iterable[str]) -> Inferred:
    paths = list(paths)
    read = folder_reader(folder)
    decl: Declarations = skill_declarations(owner, paths, read)
    declared = tuple(dict.fromkeys(d.requirement for d in decl.python))
    choices = choices_of(paths, read, [_name(r) for r in declared])
    by_dist: dict[str, list[Choice]] = {}
    for c in choices:
        if c.provenance not in ("declared", "local"):
            by_dist.setdefault(c.distribution, []).append(c)
    missing, optional = [], []
    for dist in sorted(by_dist, key=str.lower):
        req = _requirement_of(dist, by_dist[dist])
        (optional if req is None else missing).append(dist if req is None else req)
    guessed = {c.distribution for c in choices if c.provenance == "name"}
    local = {c.use.top for c in choices if c.provenance == "local"}
    unknown = tuple(sorted(guessed - set(optional), key=str.lower)) + tuple(sorted(local))
    uses = tuple(c.use for c in choices if c.provenance != "declared")
    return Inferred(declared, tuple(missing), uses, tuple(choices), tuple(optional), unknown)
