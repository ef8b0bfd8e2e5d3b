"""The marker check written out in Python (fast enough for every sync) against the JSON Schema
that is its contract: whatever the check accepts, the schema accepts; valid markers pass both."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from skillctl.project import marker as markers

from .helpers import contents_of, provenance


def _validator() -> Draft202012Validator:
    schema = json.loads(resources.files("skillctl.project").joinpath(markers.SCHEMA_FILE).read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


VALIDATOR = _validator()


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("marker")
    contents = contents_of(work, "demo", files={"scripts/run.sh": ("#!/bin/sh\n", 0o755), "references/a b.md": "x\n"})
    built = markers.build(contents, provenance(contents))
    folder = work / "installed"
    folder.mkdir()
    for rel in built["files"]:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(contents.files[rel])
    return markers.record_stat(built, folder)


def test_a_marker_skillctl_builds_passes_both(valid):
    assert markers.problem(valid) == ""
    assert VALIDATOR.is_valid(valid)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**40) | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["SKILL.md", "../x", "/abs", "a//b", "sha256:" + "a" * 64, "demo", "demo\n", 420, 493, 420.0]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8) | st.sampled_from(
        ["sha256", "size", "mode", "kind", "location", "subdir"]), children, max_size=3),
    max_leaves=8,
)
FIELDS = ["format", "tool", "name", "source", "version", "revision", "tar_digest", "files", "dirs", "stat", "extra"]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=JSON, deep=st.booleans())
def test_whatever_the_check_accepts_the_schema_accepts(valid, field, value, deep):
    data = copy.deepcopy(valid)
    if deep and field in ("files", "stat", "source") and isinstance(data.get(field), dict):
        key = next(iter(data[field]))
        data[field][key] = value  # damage one entry inside
    elif deep and field == "files":
        data["files"][value if isinstance(value, str) else "x"] = {"sha256": "sha256:" + "0" * 64, "size": 1, "mode": 420}
    else:
        data[field] = value
    if markers.problem(data) == "":
        assert VALIDATOR.is_valid(data), data


HOSTILE = {
    "a path leaving the folder": lambda d: d["files"].update({"../../etc/passwd": d["files"]["SKILL.md"]}),
    "an absolute path": lambda d: d["dirs"].append("/etc"),
    "an empty part": lambda d: d["dirs"].append("a//b"),
    "a control character": lambda d: d["dirs"].append("a\nb"),
    "a trailing newline in the name": lambda d: d.update(name="demo\n"),
    "a boolean size": lambda d: d["files"]["SKILL.md"].update(size=True),
    "a float mode": lambda d: d["files"]["SKILL.md"].update(mode=420.0),
    "a setuid mode": lambda d: d["files"]["SKILL.md"].update(mode=0o4755),
    "a negative inode": lambda d: d["stat"].update({"SKILL.md": [-1, 0, 0]}),
    "format 2": lambda d: d.update(format=2),
    "a missing field": lambda d: d.pop("dirs"),
    "an extra field": lambda d: d.update(rm="-rf /"),
    "a short digest": lambda d: d.update(tar_digest="sha256:abc"),
}


@pytest.mark.parametrize("damage", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_markers_fail_the_check(valid, damage):
    data = copy.deepcopy(valid)
    HOSTILE[damage](data)
    assert markers.problem(data) != ""
