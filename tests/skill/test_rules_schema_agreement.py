"""The published JSON Schema (schemas/frontmatter.schema.json, for editors and other tools) and
the Python rules that validate need no schema engine for agree on every verdict: on generated
front matter and on every real skill in tests/data/real-skills."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from hypothesis import given

from skillctl.skill.document import parse_skill_md
from skillctl.skill.rules import check_front_matter, frontmatter_schema

from .test_properties import SETTINGS, _document, front_matters, spec_front_matters

REAL_SKILLS = Path(__file__).resolve().parent.parent / "data" / "real-skills"
VALIDATOR = jsonschema.validators.validator_for(frontmatter_schema())(frontmatter_schema())


def verdicts(meta: dict) -> tuple[bool, bool]:
    doc, diags = parse_skill_md(_document(meta, allow_unicode=False), "S")
    assert doc is not None and not diags, diags
    ours = not any(d.severity == "error" for d in check_front_matter(doc, None, "S"))
    return ours, VALIDATOR.is_valid(doc.metadata)


def test_the_schema_is_a_valid_schema() -> None:
    type(VALIDATOR).check_schema(frontmatter_schema())


@SETTINGS
@given(spec_front_matters())
def test_agree_on_spec_shaped_front_matter(meta: dict) -> None:
    ours, schema = verdicts(meta)
    assert ours == schema, meta


@SETTINGS
@given(front_matters)
def test_agree_on_front_matter_of_any_shape(meta: dict) -> None:
    ours, schema = verdicts(meta)
    assert ours == schema, meta


@pytest.mark.parametrize("skill_md", sorted(REAL_SKILLS.rglob("SKILL.md")), ids=lambda p: p.parent.name)
def test_agree_on_every_real_skill(skill_md: Path) -> None:
    doc, _ = parse_skill_md(skill_md.read_bytes(), "S")
    assert doc is not None
    ours = not any(d.severity == "error" for d in check_front_matter(doc, None, "S"))
    assert ours == VALIDATOR.is_valid(doc.metadata), [e.message for e in VALIDATOR.iter_errors(doc.metadata)]
