"""SKILL.md is read with the YAML loader python-frontmatter uses, so a skill reads the same here
as in any python-frontmatter tool."""

from __future__ import annotations

import frontmatter
from frontmatter.default_handlers import SafeLoader

from skillctl.skill.document import _Loader, parse_skill_md


def test_the_loader_is_python_frontmatters() -> None:
    assert _Loader is SafeLoader


def test_metadata_reads_as_python_frontmatter_reads_it() -> None:
    text = '---\nname: demo\ndescription: d\nmetadata:\n  version: "1.0"\n  n: 1.10\n  when: 2024-01-01\n---\n\n# Body\n'
    doc, diags = parse_skill_md(text.encode(), "S")
    assert doc is not None and diags == []
    post = frontmatter.loads(text)
    assert doc.metadata == post.metadata
    assert doc.body.strip() == post.content.strip()
