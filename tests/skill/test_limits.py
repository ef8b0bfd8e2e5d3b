"""The spec's limits, exactly at the boundary and one past it.

Lengths are counted in characters (not bytes): a 1,024-character description in accented
letters is still within the limit. Token budgets use the per-script estimate from skillctl.tokens.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillctl.skill.files import LARGE_FILE
from skillctl.skill.validate import MAX_BODY_LINES, MAX_BODY_TOKENS
from skillctl.tokens import estimate_tokens

from .helpers import check, codes, front_matter, make_skill, only


def _codes_for(root: Path, **kw) -> list[str]:
    make_skill(root, **kw)
    return codes(only(check(kw.get("folder") or kw.get("name", "demo"))))


def test_spec_constants_are_the_spec_values() -> None:
    # The numbers come from the Agent Skills spec (ANCHORS.md), not from this implementation.
    assert (MAX_BODY_LINES, MAX_BODY_TOKENS, LARGE_FILE) == (500, 5000, 5 * 1024 * 1024)


@pytest.mark.parametrize(("length", "expected"), [(1, []), (64, []), (65, ["SK103"])])
def test_name_length(in_tmp: Path, length: int, expected: list[str]) -> None:
    name = ("ab-" * 30)[: length - 1] + "z"  # hyphens inside, never at an end, never doubled
    assert len(name) == length
    assert _codes_for(in_tmp, name=name) == expected


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("d" * 1024, []),
        ("d" * 1025, ["SK113"]),
        ("é" * 1024, []),  # characters, not UTF-8 bytes (2,048 here)
        ("é" * 1025, ["SK113"]),
        ("x", []),
    ],
    ids=["1024", "1025", "1024-accented", "1025-accented", "1"],
)
def test_description_length(in_tmp: Path, description: str, expected: list[str]) -> None:
    assert _codes_for(in_tmp, front_matter_text=front_matter(description=description)) == expected


@pytest.mark.parametrize(("length", "expected"), [(1, []), (500, []), (501, ["SK122"])])
def test_compatibility_length(in_tmp: Path, length: int, expected: list[str]) -> None:
    extra = "compatibility: " + "c" * length + "\n"
    assert _codes_for(in_tmp, front_matter_text=front_matter(extra=extra)) == expected


@pytest.mark.parametrize(("lines", "expected"), [(MAX_BODY_LINES, []), (MAX_BODY_LINES + 1, ["SK201"])])
def test_body_lines(in_tmp: Path, lines: int, expected: list[str]) -> None:
    body = "".join(f"Step {i}.\n" for i in range(lines))
    assert _codes_for(in_tmp, body=body) == expected


def test_trailing_blank_lines_do_not_count(in_tmp: Path) -> None:
    body = "Step.\n" * MAX_BODY_LINES + "\n\n\n"
    assert _codes_for(in_tmp, body=body) == []


def _body_of_tokens(tokens: int, script: str) -> str:
    """A one-line body whose estimate is exactly ``tokens``."""
    per_token = {"ascii": "w" * 4, "cyrillic": "ж" * 2, "cjk": "字"}[script]
    body = per_token * tokens
    assert estimate_tokens(body) == tokens
    return body


@pytest.mark.parametrize("script", ["ascii", "cyrillic", "cjk"])
@pytest.mark.parametrize(("tokens", "expected"), [(MAX_BODY_TOKENS, []), (MAX_BODY_TOKENS + 1, ["SK202"])])
def test_body_tokens(in_tmp: Path, script: str, tokens: int, expected: list[str]) -> None:
    body = _body_of_tokens(tokens, script)
    assert _codes_for(in_tmp, body=body) == expected


def test_body_tokens_use_the_per_script_estimate_not_chars_over_4(in_tmp: Path) -> None:
    # 12,000 Cyrillic characters: chars/4 says 3,000 tokens (fine), per script 6,000 (too long).
    body = "ж" * 12_000
    assert len(body) / 4 < MAX_BODY_TOKENS < estimate_tokens(body)
    assert _codes_for(in_tmp, body=body) == ["SK202"]


@pytest.mark.parametrize(("size", "expected"), [(LARGE_FILE, []), (LARGE_FILE + 1, ["SK232"])])
def test_file_size(in_tmp: Path, size: int, expected: list[str]) -> None:
    folder = make_skill(in_tmp, files={"assets/data.bin": b""})
    os.truncate(folder / "assets" / "data.bin", size)
    assert codes(only(check("demo"))) == expected
