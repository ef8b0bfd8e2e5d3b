"""Exact locations: a diagnostic about a field points at its key, one about a value at the value;
a block value starts on the line after its key, so a problem with it as a whole is shown at the
key. Tested for block, flow and inline forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import check, front_matter, make_skill, only, with_code

# SKILL.md lines: 1 '---', 2 name, 3 description, 4.. the extra front matter below.


@pytest.mark.parametrize(
    ("extra", "code", "line", "column"),
    [
        # unknown field: always its key, whatever the value looks like
        ("version: 1.0.0\n", "SK161", 4, 1),  # inline
        ("argument-hint: [file]\n", "SK161", 4, 1),  # flow
        ("requires:\n  mcp:\n    - rube\n", "SK161", 4, 1),  # block mapping: not 5:3
        ("tags:\n- a\n- b\n", "SK161", 4, 1),  # block sequence at the key's indent
        ('  "when_to_use": x\n'.lstrip(), "SK161", 4, 1),  # quoted key
        # a value of the wrong type: at the value…
        ("license: 2\n", "SK151", 4, 10),  # inline
        ("allowed-tools: [Bash, Read]\n", "SK141", 4, 16),  # flow
        ("metadata:\n  build: 7\n", "SK132", 5, 10),  # inline, under metadata
        ("metadata:\n  tags: [a, b]\n", "SK132", 5, 9),  # flow, under metadata
        ("metadata: {build: 7}\n", "SK132", 4, 19),  # inside a flow mapping
        # …unless it is a block collection: then at its key
        ("allowed-tools:\n  - Bash\n", "SK141", 4, 1),
        ("metadata:\n  requires:\n    bins: [uv]\n", "SK132", 5, 3),  # not 6:5
        ("metadata:\n  tags:\n    - a\n", "SK132", 5, 3),  # not 6:5, "one line low"
        ("metadata:\n  - a\n", "SK131", 4, 1),
        ("license:\n  - MIT\n", "SK151", 4, 1),
        # a non-string key under metadata: at that key
        ("metadata:\n  1: one\n", "SK132", 5, 3),
        # a duplicated key: at the second one
        ("metadata:\n  a: b\n  a: c\n", "SK010", 6, 3),
    ],
)
def test_field_and_value_locations(in_tmp: Path, extra: str, code: str, line: int, column: int) -> None:
    make_skill(in_tmp, front_matter_text=front_matter(extra=extra))
    [d] = with_code(only(check("demo")), code)
    assert (d.line, d.column) == (line, column), d.format()


@pytest.mark.parametrize(
    ("fm", "code", "line", "column"),
    [
        ("name: demo\ndescription:\n  - a list\n", "SK112", 3, 1),  # block value → key
        ("name: demo\ndescription: [a list]\n", "SK112", 3, 14),  # flow value → value
        ("name:\n  - demo\ndescription: d\n", "SK102", 2, 1),
        ("name: Demo\ndescription: d\n", "SK104", 2, 7),
        ('name: "demo"\ndescription: >-\n  folded text\ncompatibility: ""\n', "SK121", 5, 16),
    ],
)
def test_name_and_description_locations(in_tmp: Path, fm: str, code: str, line: int, column: int) -> None:
    make_skill(in_tmp, front_matter_text=fm)
    [d] = with_code(only(check("demo")), code)
    assert (d.line, d.column) == (line, column), d.format()


def test_locations_after_a_multi_line_value(in_tmp: Path) -> None:
    fm = "name: demo\ndescription: |\n  line one\n  line two\nextra: x\nmetadata:\n  n: 1\n"
    make_skill(in_tmp, front_matter_text=fm)
    report = only(check("demo"))
    assert [(d.code, d.line, d.column) for d in report.diagnostics] == [("SK161", 6, 1), ("SK132", 8, 6)]
