"""Property-based tests: whatever the bytes, the parser and the checks return a result or clean
diagnostics, never an exception; and on random front matters the verdict matches an independent
statement of the spec's rules.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillctl.skill.diagnostics import CODES, Diagnostic
from skillctl.skill.document import parse_skill_md
from skillctl.skill.rules import check_front_matter
from skillctl.skill.validate import check_skill

# database=None: no .hypothesis/ folder in the working tree; failures print their example.
SETTINGS = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FIELDS = ["name", "description", "license", "compatibility", "metadata", "allowed-tools"]


def assert_well_formed(diags: list[Diagnostic] | tuple[Diagnostic, ...], raw: bytes) -> None:
    n_lines = raw.count(b"\n") + raw.count(b"\r") + 1  # generous: CR, CRLF and LF files
    for d in diags:
        assert d.code in CODES, d
        assert d.line >= 0 and d.column >= 0, d
        assert d.line <= n_lines + 1, (d, n_lines)  # +1: the (empty) body after the last line
        assert d.message.strip() and "\n" not in d.message, d
        d.format(), d.to_dict()  # both render


def parse(raw: bytes) -> None:
    doc, diags = parse_skill_md(raw, "S")
    assert_well_formed(diags, raw)
    if doc is None:
        assert any(d.severity == "error" for d in diags), "no document must come with an error"
    else:
        assert isinstance(doc.metadata, dict)
        assert_well_formed(check_front_matter(doc, "demo", "S"), raw)


# ------------------------------------------------------------------------------ never raises

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.sampled_from(["1.0", "1.0.0", "v2", "yes", "~", "null", "2024-01-01", "0x1f", ".inf", "---", "a: b", "*x", "&a"]),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
front_matters = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=12), yaml_values, max_size=8)


def _document(meta: Any, body: str = "\n# Body\n", allow_unicode: bool = True) -> bytes:
    dumped = yaml.safe_dump(meta, allow_unicode=allow_unicode, sort_keys=False)
    return ("---\n" + dumped + "---\n" + body).encode("utf-8", "surrogatepass")


@SETTINGS
@given(front_matters)
def test_random_front_matter_mappings(meta: dict) -> None:
    parse(_document(meta))


@SETTINGS
@given(yaml_values)
def test_random_front_matter_of_any_shape(value: Any) -> None:
    parse(_document(value))


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(raw: bytes) -> None:
    parse(raw)
    parse(b"---\n" + raw)
    parse(b"---\nname: demo\n" + raw + b"\n---\nbody\n")


@SETTINGS
@given(st.text(max_size=2000))
def test_random_text(text: str) -> None:
    parse(text.encode("utf-8", "surrogatepass"))
    parse(("---\n" + text + "\n---\n" + text).encode("utf-8", "surrogatepass"))


yamlish = st.text(alphabet=string.ascii_letters + string.digits + " :-[]{}&*!|>'\"#,?\n\t%@`", max_size=400)


@SETTINGS
@given(yamlish, st.text(max_size=200))
def test_yaml_punctuation_soup(front: str, body: str) -> None:
    parse(("---\n" + front + "\n---\n" + body).encode("utf-8", "surrogatepass"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prop")


@settings(SETTINGS, max_examples=60)
@given(
    st.binary(max_size=600) | front_matters.map(_document),
    st.dictionaries(
        st.sampled_from(["scripts/a.py", "scripts/b.sh", "references/r.md", "assets/x.bin", ".hidden", "deep/er/f"]),
        st.binary(max_size=64),
        max_size=4,
    ),
)
def test_check_skill_on_random_folders(scratch: Path, skill_md: bytes, files: dict[str, bytes]) -> None:
    import shutil

    folder = scratch / "demo"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(skill_md)
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    report = check_skill(folder, "demo")
    for d in report.diagnostics:
        assert d.code in CODES and d.line >= 0 and d.message.strip(), d
    assert (report.skill is not None) == report.valid()
    report.to_dict()


# ---------------------------------------------------------------- the verdict, against an oracle

NAME_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def spec_errors(meta: dict, folder: str) -> set[str]:
    """The spec's front-matter rules, stated independently of skillctl's schema and code."""
    problems: set[str] = set()
    if set(meta) - set(FIELDS):
        problems.add("unknown field")
    name = meta.get("name")
    if not (isinstance(name, str) and len(name) <= 64 and NAME_RE.fullmatch(name) and name == folder):
        problems.add("name")
    desc = meta.get("description")
    if not (isinstance(desc, str) and desc.strip() and len(desc) <= 1024):
        problems.add("description")
    if "compatibility" in meta:
        c = meta["compatibility"]
        if not (isinstance(c, str) and c.strip() and len(c) <= 500):
            problems.add("compatibility")
    if "metadata" in meta:
        m = meta["metadata"]
        if not (isinstance(m, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in m.items())):
            problems.add("metadata")
    for key in ("license", "allowed-tools"):
        if key in meta and not isinstance(meta[key], str):
            problems.add(key)
    return problems


names = st.one_of(
    st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True),
    st.text(alphabet="abcXYZ09-_. é", min_size=0, max_size=10),
    st.text(alphabet="ab", min_size=60, max_size=70),
    st.integers(),
    st.none(),
)
texts = st.one_of(st.text(min_size=0, max_size=30), st.text(alphabet="d", min_size=1020, max_size=1030), st.just("   "))
field_values = {
    "name": names,
    "description": texts | st.integers() | st.booleans() | st.lists(st.text(max_size=3), max_size=2),
    "license": st.text(max_size=10) | st.integers() | st.none(),
    "compatibility": st.text(max_size=10) | st.text(alphabet="c", min_size=495, max_size=505) | st.integers(),
    "metadata": st.dictionaries(st.text(max_size=6), st.text(max_size=6) | st.integers() | st.floats(allow_nan=False), max_size=3)
    | st.text(max_size=5)
    | st.none(),
    "allowed-tools": st.text(max_size=10) | st.lists(st.text(max_size=5), max_size=3),
    "extra": st.text(max_size=5),
}


@st.composite
def spec_front_matters(draw: st.DrawFn) -> dict:
    meta: dict = {}
    for key in ["name", "description", "license", "compatibility", "metadata", "allowed-tools", "extra"]:
        # name and description are usually present so the other rules get exercised
        if draw(st.integers(0, 9)) < (8 if key in ("name", "description") else 3):
            meta["version" if key == "extra" else key] = draw(field_values[key])
    return meta


@SETTINGS
@given(spec_front_matters())
def test_verdict_matches_the_spec(meta: dict) -> None:
    folder = meta["name"] if isinstance(meta.get("name"), str) and meta["name"].strip() else "demo"
    # escaped non-ASCII: PyYAML writes U+0085 raw but reads it back as a line break
    doc, diags = parse_skill_md(_document(meta, allow_unicode=False), "S")
    assert doc is not None and not diags, diags
    assert doc.metadata == meta  # YAML round trip: we judge what was written
    found = check_front_matter(doc, folder, "S")
    errors = [d for d in found if d.severity == "error"]
    expected = spec_errors(meta, folder)
    assert bool(errors) == bool(expected), (meta, expected, [d.format() for d in found])
    # and no problem is reported twice at the same place
    keys = [(d.code, d.line, d.column, d.message) for d in found]
    assert len(keys) == len(set(keys)), keys
