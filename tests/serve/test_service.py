"""The mapping rules between the registry and the APIs, as plain functions."""

from __future__ import annotations

import hashlib

import pytest

from skillctl.registry.records import VersionRecord
from skillctl.serve.errors import ApiError
from skillctl.serve.service import becomes_default, next_version, page_after, version_id

SKILL = "skill_" + "ab" * 12


def recs(*versions: str, yanked: tuple[str, ...] = ()) -> list[VersionRecord]:
    return [VersionRecord(SKILL, "demo", v, "d", "sha256:" + "0" * 64, "", 0, 1, 0, v in yanked) for v in versions]


@pytest.mark.parametrize("versions, expected", [
    ((), "1.0.0"),
    (("1.0.0",), "1.1.0"),
    (("1.4.2", "1.0.0"), "1.5.0"),
    (("2.0.0-rc.1", "1.9.0"), "2.1.0"),
    (("0.3.0",), "0.4.0"),
])
def test_next_version_is_the_next_minor_after_the_highest(versions, expected) -> None:
    assert next_version(recs(*versions)) == expected


def test_next_version_counts_yanked_versions() -> None:
    assert next_version(recs("1.1.0", "1.0.0", yanked=("1.1.0",))) == "1.2.0"


@pytest.mark.parametrize("new, versions, yanked, expected", [
    ("1.0.0", (), (), True),
    ("1.1.0", ("1.0.0",), (), True),
    ("1.0.1", ("1.1.0",), (), False),
    ("1.0.1", ("1.1.0",), ("1.1.0",), True),  # yanked versions are not the default
    ("2.0.0-rc.1", ("1.0.0",), (), False),  # a pre-release never beats a release
    ("2.0.0-rc.1", ("1.0.0-beta.1",), (), True),  # …but is the default while there is none
    ("1.0.0", ("1.0.0",), (), True),  # the same version again
])
def test_becomes_default(new, versions, yanked, expected) -> None:
    assert becomes_default(new, recs(*versions, yanked=yanked)) is expected


def test_version_ids_are_stable_and_differ_per_skill_and_version() -> None:
    assert version_id(SKILL, "1.0.0") == "skillver_" + hashlib.sha256(f"{SKILL}@1.0.0".encode()).hexdigest()[:24]
    assert len({version_id(SKILL, "1.0.0"), version_id(SKILL, "1.0.1"), version_id("skill_" + "cd" * 12, "1.0.0")}) == 3


def test_page_after() -> None:
    items = list("abcde")
    first = page_after(items, str, None, 2, "after")
    assert (first.items, first.has_more) == (["a", "b"], True)
    last = page_after(items, str, "c", 2, "after")
    assert (last.items, last.has_more) == (["d", "e"], False)
    assert page_after(items, str, "e", 2, "after").items == []
    with pytest.raises(ApiError) as caught:
        page_after(items, str, "z", 2, "after")
    assert caught.value.status == 400
