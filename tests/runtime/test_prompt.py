"""c₁'s system prompt: role and shell use, the catalog with how to read a skill, and the notice
that old tool results are cleared automatically — byte-identical for the same catalog."""

from __future__ import annotations

from skillctl.context import CLEARING_NOTICE
from skillctl.runtime.catalog import CatalogEntry, render_catalog
from skillctl.runtime.prompt import system_prompt
from skillctl.runtime.tools import REJECTED


def catalog() -> str:
    return render_catalog([CatalogEntry("tally", "Counts words.", "/skills/tally/SKILL.md")]).text


def test_parts_in_order():
    text = system_prompt(catalog())
    role = text.index("You are an agent working in a Linux sandbox through a shell tool")
    skills = text.index("<available_skills>")
    read_hint = text.index("read its instructions with `cat`")
    clearing = text.index(CLEARING_NOTICE)
    assert role < skills < read_hint < clearing
    # The model is told it only proposes, and what a refusal looks like.
    assert "You cannot run anything yourself" in text and REJECTED in text
    assert "/workspace" in text and "no tool call" in text


def test_clearing_notice_is_there_with_or_without_skills():
    for text in (system_prompt(""), system_prompt(catalog())):
        assert CLEARING_NOTICE in text
        assert "never stop" in text  # do not stop a long task to save space


def test_same_catalog_same_bytes():
    assert system_prompt(catalog()).encode() == system_prompt(catalog()).encode()
    assert system_prompt(catalog()) != system_prompt("")
