"""The import scanner: the validator lists a script's imports without building its syntax tree,
and must find exactly what the tree holds (module, line, column) — or leave the file to the
full parse. Each case is checked against ``ast`` itself."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from skillctl.env import imports

REAL = Path(__file__).resolve().parents[1] / "data" / "real-skills"


def by_ast(source: bytes) -> list[tuple[str, int, int]] | None:
    """Every absolute import the syntax tree holds, or None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, node.col_offset + 1) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, node.lineno, node.col_offset + 1))
    return sorted(found)


def third_party(source: bytes) -> list[tuple[str, int, int]]:
    uses = imports.third_party_imports(["x.py"], lambda rel: source)
    return [(u.module, u.line, u.column) for u in uses]


SCANNED = {
    "plain": b"import os\nimport yaml\n",
    "words in strings and comments": b"x = 'import fake'  # import fake2\ny = \"from fake3 import z\"\nimport real\n",
    "docstring": b'"""\nimport in_docstring\nfrom also import not_this\n"""\nimport after_docstring\n',
    "triple quotes holding quotes": b"s = '''it's \"import q\" '' '''\nt = \"\"\"a \\\"\"\" import r\"\"\"\nimport u\n",
    "raw string ending in an escaped quote": b"s = r'\\''; import after_raw\n",
    "escaped newline in a string": b"s = 'a\\\nimport not_code'\nimport code\n",
    "aliases and dotted names": b"import a . b as c, \\\n    d, e.f as g\n",
    "from with spaces and parentheses": b"from  x . y import (z,\n  w)\nfrom p.q import *\n",
    "relative imports": b"from . import sibling\nfrom .pkg import mod\nfrom .. import up\nfrom ...deep.er import x\nfrom .import tight\n",
    "yield from and raise from": b"def g():\n    yield from range(3)\n    raise ValueError() from None\nimport after\n",
    "nested blocks": b"if x:\n    import nested\ntry:\n    import in_try\nexcept ImportError:\n    import in_except\nfinally:\n    import in_finally\n"
    b"class C:\n    def m(self):\n        import deep\nwhile 0:\n    import dead\nelse:\n    import else_\n",
    "match cases": b"match v:\n    case 1:\n        import in_case\n",
    "one-line compound statements": b"if x: import one_line\nelse: import other; import third\n",
    "f-strings": b"name = f'{x!r} import no {y}'; import after_fstring\nrb'import no' ; import after_bytes\n",
    "look-alike names": b"importlib = 1\nfromage = 2\nmy_import = 3\nimport_x = 4\n__import__('hidden')\nx.from_ = 5\n",
    "carriage returns": b"x = 1\rimport after_cr\r\nimport after_crlf\nimport last\r",
    "byte-order mark": b"\xef\xbb\xbfimport after_bom\nimport second\n",
    "non-ASCII before an import": "é = 'ü'; import after_accent\nif 1:\n\tnom_é = 1; import after_tab\n".encode(),
    "non-ASCII identifiers": "données = 1\nimport modulé\nfrom paquet_é import x\nxfrom = 1\n".encode(),
    "form feed": b"\x0cimport after_form_feed\n",
    "utf-8 coding line": b"# -*- coding: utf-8 -*-\nimport declared_utf8\n",
    "an import last, after the word in a string": b'x = "import"\ndef f():\n    import late_one\nimport\tlast_of_all',
}


@pytest.mark.parametrize("source", SCANNED.values(), ids=SCANNED.keys())
def test_the_scanner_finds_what_the_syntax_tree_holds(source):
    expected = by_ast(source)
    assert expected is not None, "the case must be valid Python"
    found = imports._scan(source)
    assert found is not None, "the scanner must handle this case itself"
    assert sorted(found) == expected


DEFERRED = {
    # (source, the third-party imports the full parse finds)
    "TYPE_CHECKING block": (
        b"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas\nelse:\n    import numpy\n",
        [("numpy", 5, 5)],
    ),
    "TYPE_CHECKING among other blocks": (
        b"import typing\nif typing.TYPE_CHECKING:\n    import hidden\nelif x:\n    import in_elif\n"
        b"try:\n    import t1\nexcept E:\n    import t2\nelse:\n    import t3\nfinally:\n    import t4\n"
        b"with w:\n    import w1\nfor i in r:\n    import f1\nelse:\n    import f2\n"
        b"async def a():\n    async with w:\n        import a1\nclass K:\n    import k1\n"
        b"match m:\n    case 1:\n        import m1\n",
        [("in_elif", 5, 5), ("t1", 7, 5), ("t2", 9, 5), ("t3", 11, 5), ("t4", 13, 5), ("w1", 15, 5), ("f1", 17, 5),
         ("f2", 19, 5), ("a1", 22, 9), ("k1", 24, 5), ("m1", 27, 9)],
    ),
    "another encoding": (b"# -*- coding: latin-1 -*-\nx = '\xe9'\nimport yaml\n", [("yaml", 3, 1)]),
    "not UTF-8": (b"x = '\xe9'\nimport yaml\n", []),  # no encoding line: not Python source
}


@pytest.mark.parametrize(("source", "expected"), DEFERRED.values(), ids=DEFERRED.keys())
def test_what_the_scanner_cannot_vouch_for_gets_the_full_parse(source, expected):
    assert imports._scan(source) is None
    assert third_party(source) == expected


def test_a_file_that_does_not_parse_has_no_imports_to_report():
    assert third_party(b"import requests\nprint 'python 2'\n") == []
    assert third_party(b"import requests\nx = (\n") == []
    assert third_party(b"import requests\n\x00\n") == []


def test_a_file_only_the_symbol_table_refuses_still_reports_its_imports():
    # `nonlocal` at module level parses (ast accepts it); only compiling refuses it
    source = b"nonlocal x\nimport requests\n"
    assert by_ast(source) == [("requests", 2, 1)]
    assert third_party(source) == [("requests", 2, 1)]


def _python_files():
    stdlib = Path(os.__file__).parent
    yield from sorted(p for p in stdlib.glob("*.py"))
    yield from sorted(p for p in stdlib.glob("[a-z]*/*.py") if "site-packages" not in p.parts and "test" not in p.parts)
    yield from sorted(REAL.rglob("*.py"))


def test_the_scanner_agrees_with_the_syntax_tree_on_the_standard_library_and_real_skills():
    checked = 0
    for path in _python_files():
        source = path.read_bytes()
        found = imports._scan(source)
        if found is None:
            continue
        expected = by_ast(source)
        if expected is None:
            continue
        assert sorted(found) == expected, path
        checked += 1
    assert checked > 200


def test_a_third_party_import_that_may_be_guarded_gets_the_full_parse_and_its_guard():
    source = (b"import sys\ntry:\n    import in_try\nexcept ImportError:\n    import in_except\nfinally:\n"
              b"    import in_finally\nif sys.platform == 'win32':\n    import winonly\n")
    assert imports._scan(source) is not None  # the scanner lists them; the guards need the walk
    uses = imports.third_party_imports(["x.py"], lambda rel: source)
    assert [(u.module, u.line, u.column, u.caught, u.marker) for u in uses] == [
        ("in_try", 3, 5, True, None), ("in_except", 5, 5, True, None), ("in_finally", 7, 5, False, None),
        ("winonly", 9, 5, False, 'sys_platform == "win32"')]


def test_guards_read_from_top_level_fragments_agree_with_the_whole_file_walk():
    checked = 0
    for path in _python_files():
        source = path.read_bytes()
        scanned = imports._scan(source)
        indented = [line for _m, line, col in scanned or [] if col > 1]
        if not indented or by_ast(source) is None:
            continue
        fragments = imports._guards_of(source, scanned, indented)
        if fragments is None:
            continue  # a boundary inside a literal: the whole file is parsed instead
        whole = sorted(imports._imports(ast.parse(source)))
        assert sorted(fragments) == whole, path
        checked += 1
    assert checked > 100


def test_a_fragment_cut_inside_a_string_falls_back_to_the_whole_file():
    source = (b'def f():\n    s = """\nnot code:\n"""\n    try:\n        import extlib\n    except ImportError:\n'
              b"        pass\n")
    scanned = imports._scan(source)
    assert imports._guards_of(source, scanned, [6]) is None
    assert [(u.module, u.caught) for u in imports.third_party_imports(["x.py"], lambda rel: source)] == [("extlib", True)]
