"""The skills catalog of c₁: format, escaping, order, determinism, budget."""

from __future__ import annotations

import html
import re

import pytest

from skillctl.registry.local import LocalRegistry
from skillctl.runtime.catalog import READ_HINT, CatalogEntry, _render, render_catalog
from skillctl.runtime.loader import catalog_for, load_skills, resolve_all
from skillctl.runtime.prompt import system_prompt

from .conftest import EXAMPLE_NAMES


def entry(name: str, description: str = "Does things; use it when things need doing.") -> CatalogEntry:
    return CatalogEntry(name, description, f"/skills/{name}/SKILL.md")


def names_in(text: str) -> list[str]:
    return re.findall(r"<name>(.*?)</name>", text)


def descriptions_in(text: str) -> list[str]:
    return re.findall(r"<description>(.*?)</description>", text)


def test_block_shape_sorted_with_locations_and_the_cat_hint():
    text = render_catalog([entry("zeta"), entry("alpha"), entry("mid-one")]).text
    assert text.startswith("<available_skills>\n<skill>\n<name>alpha</name>\n")
    assert names_in(text) == ["alpha", "mid-one", "zeta"]
    assert re.findall(r"<location>(.*?)</location>", text) == [
        "/skills/alpha/SKILL.md", "/skills/mid-one/SKILL.md", "/skills/zeta/SKILL.md",
    ]
    lines = text.splitlines()
    assert lines[-2] == "</available_skills>"
    assert lines[-1] == READ_HINT and "`cat`" in READ_HINT
    assert text.endswith("\n")


def test_values_are_html_escaped():
    nasty = "Use <b>bold</b> & \"quotes\" when it's </description><skill> time"
    text = render_catalog([entry("esc", nasty)]).text
    [desc] = descriptions_in(text)
    assert desc == "Use &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quotes&quot; when it&#x27;s &lt;/description&gt;&lt;skill&gt; time"
    assert html.unescape(desc) == nasty
    assert text.count("<skill>") == 1  # the description could not open a second entry


def test_no_skills_means_no_block_at_all():
    assert render_catalog([]).text == ""
    assert catalog_for([]).text == ""
    prompt = system_prompt("")
    assert "<available_skills>" not in prompt and "Skills are installed" not in prompt
    assert "<available_skills>" in system_prompt(render_catalog([entry("a")]).text)


def test_same_skills_in_any_order_give_identical_bytes():
    entries = [entry(n, f"Skill {n}: use it for {n} work.") for n in ("b", "a", "d", "c", "e")]
    texts = {render_catalog(perm).text.encode() for perm in (entries, entries[::-1], entries[2:] + entries[:2])}
    assert len(texts) == 1
    assert len({system_prompt(t.decode()).encode() for t in texts}) == 1


def test_fits_exactly_at_the_budget_without_shortening():
    entries = [entry(n) for n in ("a", "b", "c")]
    full = render_catalog(entries)
    at = render_catalog(entries, budget_chars=len(full.text))
    assert at.text == full.text and not at.shortened and at.warning() is None
    below = render_catalog(entries, budget_chars=len(full.text) - 1)
    assert below.shortened and len(below.text) <= len(full.text) - 1


def test_over_budget_descriptions_are_cut_with_an_ellipsis_and_it_warns():
    entries = [entry(f"s{i:02d}", f"Skill number {i} " + "does many careful things " * 12) for i in range(12)]
    full = render_catalog(entries).text
    budget = len(full) - 1500
    cat = render_catalog(entries, budget_chars=budget)
    assert cat.shortened and cat.omitted == 0
    assert len(cat.text) <= budget
    assert names_in(cat.text) == [f"s{i:02d}" for i in range(12)]  # nobody dropped
    descs = descriptions_in(cat.text)
    assert all(d.endswith("…") and len(d) <= cat.description_limit for d in descs)
    assert 40 <= cat.description_limit < max(len(e.description) for e in entries)
    # The cut is the longest that fits: one more character per description would not.
    assert len(_render(sorted(entries, key=lambda e: e.name), cat.description_limit + 1, 0, "/skills")) > budget
    assert "descriptions cut to" in cat.warning()
    # Predictable: the same input and budget give the same bytes.
    assert render_catalog(list(reversed(entries)), budget_chars=budget).text == cat.text


def test_far_over_budget_trailing_skills_are_dropped_with_a_count_line():
    entries = [entry(f"skill-{i:02d}", "A description long enough to matter here. " * 5) for i in range(40)]
    budget = 3000
    cat = render_catalog(entries, budget_chars=budget)
    assert cat.shortened and cat.omitted > 0
    assert len(cat.text) <= budget
    kept = names_in(cat.text)
    assert kept == [f"skill-{i:02d}" for i in range(len(kept))]  # the first ones in name order
    assert len(kept) + cat.omitted == 40
    last = cat.text.splitlines()[-1]
    assert last == f"{cat.omitted} more skill(s) are not listed here to save space: run `ls /skills` to see them."
    assert f"{cat.omitted} skill(s) left out" in cat.warning()
    # As many skills as fit: keeping one more would break the budget.
    one_more = _render(entries[: len(kept) + 1], cat.description_limit, cat.omitted - 1, "/skills")
    assert len(one_more) > budget
    assert render_catalog(entries, budget_chars=budget).text == cat.text


def test_the_loader_catalog_uses_registry_metadata(example_registry: LocalRegistry):
    resolved = resolve_all(example_registry, ["tally", "csv-sql"])
    assert [r.name for r in resolved] == ["csv-sql", "tally"]
    text = catalog_for(resolved).text
    tally = example_registry.resolve("tally")
    assert f"<description>{html.escape(tally.description)}</description>" in text
    assert "<location>/skills/tally/SKILL.md</location>" in text


@pytest.mark.requires_docker
def test_two_loads_into_two_containers_give_byte_identical_catalogs(
    example_registry: LocalRegistry, agent_image, docker_client
):
    from skillctl.sandbox.docker_backend import DockerSandbox

    catalogs = []
    for refs in (list(EXAMPLE_NAMES), list(reversed(EXAMPLE_NAMES))):
        with DockerSandbox(image=agent_image, client=docker_client) as sb:
            loaded = load_skills(refs, example_registry, sb)
            listing = sb.exec("ls /skills").stdout.split()
        assert listing == sorted(EXAMPLE_NAMES)
        catalogs.append(loaded.catalog_text.encode())
    assert catalogs[0] == catalogs[1]
    assert names_in(catalogs[0].decode()) == sorted(EXAMPLE_NAMES)
    assert system_prompt(catalogs[0].decode()).encode() == system_prompt(catalogs[1].decode()).encode()
