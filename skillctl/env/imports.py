"""Which third-party modules a skill's scripts import, and which of them nothing declares.

Scripts are parsed with ``ast`` — never imported or run. An import is *third-party* unless it is
in the standard library (``sys.stdlib_module_names``), relative, or a module of the skill itself
(a ``.py`` file or a folder holding one anywhere in the skill: scripts put their own folder on
``sys.path`` and import their neighbours). Its distribution comes from the shipped import-name
map (``import_names.json``: ``PIL`` → Pillow, ``yaml`` → PyYAML, ``sklearn`` → scikit-learn…);
a name not in the map is taken to be its own distribution name.

This module is a leaf (standard library and ``packaging`` only): the validator calls
``undeclared_imports`` without pulling in the rest of the environment machinery.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from packaging.utils import canonicalize_name

from skillctl.env.declare import MAX_SCRIPT_BYTES, Declarations, is_python_script, skill_declarations
from skillctl.errors import EnvError

_MAP_FILE = Path(__file__).with_name("import_names.json")


@lru_cache(maxsize=1)
def import_map() -> dict[str, str]:
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
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterable[tuple[str, int, int]]:
    """(module, line, column) of every absolute import, skipping ``if TYPE_CHECKING:`` blocks."""
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
        stack.extend(ast.iter_child_nodes(node))


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


def third_party_imports(paths: Iterable[str], read: Callable[[str], bytes]) -> list[ImportUse]:
    """Every import of a module that is neither standard library nor part of the skill."""
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
        try:
            tree = ast.parse(data, filename=rel)
        except (SyntaxError, ValueError):
            continue  # not Python 3 source (or not Python at all): nothing to say about imports
        for module, line, col in _imports(tree):
            top = module.split(".")[0]
            if top in stdlib or top in local:
                continue
            found.append(ImportUse(module, rel, line, col))
    return sorted(found, key=lambda u: (u.file, u.line, u.column, u.module))


def undeclared_imports(
    paths: Iterable[str], read: Callable[[str], bytes], declared: Iterable[str]
) -> list[ImportUse]:
    """Imports whose distribution is not among ``declared`` (distribution names, any spelling)."""
    have = {canonicalize_name(d) for d in declared}
    return [u for u in third_party_imports(paths, read) if canonicalize_name(u.distribution) not in have]


def folder_reader(folder: Path) -> Callable[[str], bytes]:
    def read(rel: str) -> bytes:
        with open(folder / rel, "rb") as fh:
            return fh.read(MAX_SCRIPT_BYTES + 1)

    return read


def check_folder(folder: Path, shown: str, paths: Iterable[str], owner: str) -> list[tuple[str, str, str, int, int]]:
    """Findings for the validator as (code, message, file shown, line, column) tuples.

    SK251: a script imports a module no declared requirement provides; SK252: the skill's own
    declaration (PEP 723 block, requirements.txt) cannot be used.
    """
    paths = list(paths)
    read = folder_reader(folder)
    try:
        decl = skill_declarations(owner, paths, read)
    except EnvError as exc:
        return [("SK252", f"{exc}", shown, 0, 0)]
    declared = [_name(d.requirement) for d in decl.python]
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
