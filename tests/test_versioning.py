"""Versions and ranges (skillctl.versioning): SemVer 2 validity, the mapping onto PEP 440 for
ordering, range semantics and npm-style bumps. Pure functions, so these tests are tables."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from skillctl.errors import VersionError
from skillctl.versioning import SemVer, is_semver, parse_range, resolve

# The valid / invalid examples published with the official regular expression (semver.org FAQ,
# regex101 test set).
SEMVER_VALID = [
    "0.0.4", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.1.2+meta", "1.1.2+meta-valid",
    "1.0.0-alpha", "1.0.0-beta", "1.0.0-alpha.beta", "1.0.0-alpha.beta.1", "1.0.0-alpha.1",
    "1.0.0-alpha0.valid", "1.0.0-alpha.0valid", "1.0.0-alpha-a.b-c-somethinglong+build.1-aef.1-its-okay",
    "1.0.0-rc.1+build.1", "2.0.0-rc.1+build.123", "1.2.3-beta", "10.2.3-DEV-SNAPSHOT",
    "1.2.3-SNAPSHOT-123", "1.0.0", "2.0.0", "1.1.7", "2.0.0+build.1848", "2.0.1-alpha.1227",
    "1.0.0-alpha+beta", "1.2.3----RC-SNAPSHOT.12.9.1--.12+788", "1.2.3----R-S.12.9.1--.12+meta",
    "1.2.3----RC-SNAPSHOT.12.9.1--.12", "1.0.0+0.build.1-rc.10000aaa-kk-0.1",
    "99999999999999999999999.999999999999999999.99999999999999999", "1.0.0-0A.is.legal",
]
SEMVER_INVALID = [
    "1", "1.2", "1.2.3-0123", "1.2.3-0123.0123", "1.1.2+.123", "+invalid", "-invalid",
    "-invalid+invalid", "-invalid.01", "alpha", "alpha.beta", "alpha.beta.1", "alpha.1",
    "alpha+beta", "alpha_beta", "alpha.", "alpha..", "beta", "1.0.0-alpha_beta", "-alpha.",
    "1.0.0-alpha..", "1.0.0-alpha..1", "1.0.0-alpha...1", "1.0.0-alpha....1", "1.0.0-alpha.....1",
    "1.0.0-alpha......1", "1.0.0-alpha.......1", "01.1.1", "1.01.1", "1.1.01", "1.2.3.DEV",
    "1.2-SNAPSHOT", "1.2.31.2.3----RC-SNAPSHOT.12.09.1--..12+788", "1.2-RC-SNAPSHOT",
    "-1.0.3-gamma+b7718", "+justmeta", "9.8.7+meta+meta", "9.8.7-whatever+meta+meta",
    "99999999999999999999999.999999999999999999.99999999999999999----RC-SNAPSHOT.12.09.1--------------------------------..12",
    "", " ", "v1.2.3",
]


@pytest.mark.parametrize("text", SEMVER_VALID)
def test_semver_org_valid_examples_are_semver(text: str) -> None:
    assert is_semver(text)


@pytest.mark.parametrize("text", SEMVER_INVALID)
def test_semver_org_invalid_examples_are_refused(text: str) -> None:
    assert not is_semver(text)
    with pytest.raises(VersionError):
        SemVer.parse(text)


@pytest.mark.parametrize(
    "text",
    ["1.0.0-alpha.beta", "1.0.0-SNAPSHOT", "1.0.0-0A.is.legal", "1.0.0-alpha0.valid", "1.0.0-rc.1.2", "1.0.0-RC.1"],
)
def test_valid_semver_with_a_pre_release_we_cannot_order_is_refused_with_the_fix(text: str) -> None:
    # Valid SemVer, but no faithful PEP 440 mapping: refused, naming the pre-release and the choices.
    with pytest.raises(VersionError, match=r"unsupported pre-release .*alpha\.N, beta\.N, rc\.N"):
        SemVer.parse(text)


def test_leading_v_gets_a_specific_hint() -> None:
    with pytest.raises(VersionError, match=r"drop the leading 'v' \(write 1\.2\.3\)"):
        SemVer.parse("v1.2.3")


def test_non_string_and_overlong_versions_are_refused() -> None:
    with pytest.raises(VersionError, match="must be a string"):
        SemVer.parse(123)  # type: ignore[arg-type]
    long = "1.0.0+" + "a" * 200
    assert not is_semver(long)
    with pytest.raises(VersionError):
        SemVer.parse(long)


@pytest.mark.parametrize(
    "semver, pep440",
    [
        ("1.2.3", "1.2.3"),
        ("1.2.3-rc.1", "1.2.3rc1"),
        ("1.2.3-alpha.4", "1.2.3a4"),
        ("1.2.3-beta.2", "1.2.3b2"),
        ("1.2.3-beta", "1.2.3b0"),
        ("1.2.3-dev.7", "1.2.3.dev7"),
        ("0.0.0-alpha.0", "0.0.0a0"),
        ("1.2.3+build.9", "1.2.3"),
        ("1.2.3-rc.2+exp.sha.5114f85", "1.2.3rc2"),
    ],
)
def test_versions_map_onto_pep440(semver: str, pep440: str) -> None:
    assert SemVer.parse(semver).key == Version(pep440)


def test_build_metadata_is_kept_for_display_but_ignored_for_ordering_and_identity() -> None:
    a, b = SemVer.parse("1.0.0+a"), SemVer.parse("1.0.0+b")
    assert str(a) == "1.0.0+a" and a.public == b.public == "1.0.0"
    assert a.key == b.key and a.order == b.order and a.same_as(b)
    assert not a < b and not b < a and a <= b and b >= a
    assert SemVer.parse("1.0.0+zzz") < SemVer.parse("1.0.1+aaa")


def test_documented_precedence_chain() -> None:
    chain = ["1.0.0-dev.1", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    parsed = [SemVer.parse(v) for v in chain]
    assert all(x < y for x, y in zip(parsed, parsed[1:]))
    assert sorted(reversed(parsed)) == parsed  # order= False dataclass still sorts via __lt__


PRE = st.sampled_from(["", "dev", "alpha", "beta", "rc"])


@st.composite
def semvers(draw: st.DrawFn) -> SemVer:
    small = st.integers(0, 3) | st.integers(0, 10**6)
    kind = draw(PRE)
    pre = "" if not kind else (kind if draw(st.booleans()) else f"{kind}.{draw(small)}")
    build = draw(st.sampled_from(["", "b1", "exp.sha.5114f85"]))
    return SemVer.parse(f"{draw(small)}.{draw(small)}.{draw(small)}" + (f"-{pre}" if pre else "") + (f"+{build}" if build else ""))


@settings(max_examples=400, deadline=None)
@given(semvers(), semvers())
def test_order_tuple_agrees_with_packaging_version(a: SemVer, b: SemVer) -> None:
    # The registry compares .order in SQL; it must never disagree with PEP 440 tools.
    assert (a.order < b.order) == (a.key < b.key)
    assert (a.order == b.order) == (a.key == b.key)
    assert (a < b) == (a.key < b.key)


@settings(max_examples=200, deadline=None)
@given(semvers())
def test_text_order_and_back_round_trip(v: SemVer) -> None:
    assert SemVer.parse(str(v)) == v
    back = SemVer.from_order(v.order, v.build)
    assert back.order == v.order and back.key == v.key


# ------------------------------------------------------------------------------------ ranges

PUBLISHED = [
    "0.0.1", "0.0.2", "0.0.3-rc.1", "0.1.0", "0.1.5", "0.2.0", "1.0.0", "1.2.0", "1.2.3", "1.2.9",
    "1.3.0-beta.1", "1.3.0", "1.9.9", "2.0.0-alpha.1", "2.0.0-rc.1", "2.0.0", "2.1.0", "3.0.0-beta.2",
]


@pytest.mark.parametrize(
    "rng, stable, with_pre",
    [
        ("latest", "2.1.0", "3.0.0-beta.2"),
        ("", "2.1.0", "3.0.0-beta.2"),
        ("*", "2.1.0", "3.0.0-beta.2"),
        ("1.2.3", "1.2.3", "1.2.3"),
        ("=1.2.3", "1.2.3", "1.2.3"),
        ("==1.2.3", "1.2.3", "1.2.3"),
        ("1.2.3+whatever", "1.2.3", "1.2.3"),
        ("1.2.4", None, None),
        # partials, like npm
        ("1.2", "1.2.9", "1.2.9"),
        ("1.2.x", "1.2.9", "1.2.9"),
        ("1.2.*", "1.2.9", "1.2.9"),
        ("1", "1.9.9", "1.9.9"),
        ("1.x", "1.9.9", "1.9.9"),
        # caret
        ("^1.2", "1.9.9", "1.9.9"),
        ("^1.2.3", "1.9.9", "1.9.9"),
        ("^1.9.10", None, None),
        ("^0.1", "0.1.5", "0.1.5"),
        ("^0.1.2", "0.1.5", "0.1.5"),
        ("^0.0.1", "0.0.1", "0.0.1"),
        ("^0.0.2", "0.0.2", "0.0.2"),
        ("^0.0", "0.0.2", "0.0.3-rc.1"),
        ("^0", "0.2.0", "0.2.0"),
        ("^0.x", "0.2.0", "0.2.0"),
        ("^2.0.0-alpha.1", "2.1.0", "2.1.0"),
        # tilde
        ("~1.2.3", "1.2.9", "1.2.9"),
        ("~1.2", "1.2.9", "1.2.9"),
        ("~1", "1.9.9", "1.9.9"),
        ("~>1.2", "1.2.9", "1.2.9"),
        ("~0.0.1", "0.0.2", "0.0.3-rc.1"),
        # comparators, commas and/or spaces, operator apart from its version
        (">=1,<2", "1.9.9", "1.9.9"),
        (">=1 <2", "1.9.9", "1.9.9"),
        (">=1, <2", "1.9.9", "1.9.9"),
        (">= 1.2 , < 1.3", "1.2.9", "1.2.9"),
        (">=1.2.3 <=1.2.9 !=1.2.9", "1.2.3", "1.2.3"),
        (">1.2.3 <1.3", "1.2.9", "1.2.9"),
        (">1.2", "2.1.0", "3.0.0-beta.2"),
        (">1", "2.1.0", "3.0.0-beta.2"),
        ("<=1.2", "1.2.9", "1.2.9"),
        ("<=1", "1.9.9", "1.9.9"),
        ("<0.0.1", None, None),
        ("!=2.1.0", "2.0.0", "3.0.0-beta.2"),
        # PEP 440: "<V" never admits a pre-release of V itself, asked for or not
        ("<2", "1.9.9", "1.9.9"),
        ("<2.0.0", "1.9.9", "1.9.9"),
        ("<1.3.0", "1.2.9", "1.2.9"),
        # a range naming a pre-release makes pre-releases candidates (PEP 440's rule too)
        ("<2.0.0-rc.1", "2.0.0-alpha.1", "2.0.0-alpha.1"),
        ("2.0.0-rc.1", "2.0.0-rc.1", "2.0.0-rc.1"),
        (">=2.0.0-alpha.1 <2.0.0", None, None),  # PEP 440, as packaging
        (">=2.0.0-alpha.1 <=2.0.0-rc.1", "2.0.0-rc.1", "2.0.0-rc.1"),
        ("~1.3.0-beta.1", "1.3.0", "1.3.0"),
    ],
)
def test_range_resolution(rng: str, stable: str | None, with_pre: str | None) -> None:
    assert resolve(rng, PUBLISHED) == stable
    assert resolve(rng, PUBLISHED, prereleases=True) == with_pre


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([">=", ">", "<=", "<", "==", "!="]), semvers()), min_size=1, max_size=3), st.data())
def test_comparator_ranges_agree_with_packaging_specifiers(comparators: list[tuple[str, SemVer]], data: st.DataObject) -> None:
    # With pre-releases allowed on both sides, a comparator list means exactly what the same
    # PEP 440 specifier set means (including "<V excludes V's pre-releases").
    from packaging.specifiers import SpecifierSet

    # Candidates near the bounds (same core, other pre-release) are where rules differ.
    near = st.sampled_from([sv.core for _, sv in comparators]).flatmap(
        lambda core: st.sampled_from(["", "-dev.0", "-alpha", "-alpha.1", "-rc.3"]).map(
            lambda pre: SemVer.parse("%d.%d.%d%s" % (*core, pre))
        )
    )
    v = data.draw(near | semvers())
    ours = parse_range(" ".join(f"{op}{sv.public}" for op, sv in comparators))
    theirs = SpecifierSet(",".join(f"{op}{sv.key}" for op, sv in comparators))
    assert ours.matches(v, prereleases=True) == theirs.contains(v.key, prereleases=True)


def test_pre_releases_only_when_asked_or_named() -> None:
    only_pre = ["1.0.0-alpha.1", "1.0.0-rc.1"]
    assert resolve("latest", only_pre) is None
    assert resolve("^1", only_pre) is None
    assert resolve("^1.0.0-alpha.1", only_pre) == "1.0.0-rc.1"  # named: pre-releases are candidates
    assert resolve("latest", only_pre, prereleases=True) == "1.0.0-rc.1"
    assert resolve(">=1.0.0-alpha.1", only_pre) == "1.0.0-rc.1"


def test_less_than_a_release_excludes_its_pre_releases_even_when_asked() -> None:
    rng = parse_range("<2")
    assert not rng.matches(SemVer.parse("2.0.0-alpha.1"), prereleases=True)
    assert not rng.matches(SemVer.parse("2.0.0-dev.0"), prereleases=True)
    assert rng.matches(SemVer.parse("1.99.0-rc.1"), prereleases=True)
    assert not parse_range("<2.0.0").matches(SemVer.parse("2.0.0-alpha"), prereleases=True)
    assert not parse_range(">=1,<2").matches(SemVer.parse("2.0.0-rc.1"), prereleases=True)
    assert not parse_range("^1.2").matches(SemVer.parse("2.0.0-rc.1"), prereleases=True)
    assert not parse_range("~1.2.3").matches(SemVer.parse("1.3.0-alpha"), prereleases=True)


def test_yet_unparseable_strings_among_published_versions_are_skipped() -> None:
    assert resolve("^1", ["1.0.0", "not-a-version", "1.5.0"]) == "1.5.0"


def test_build_metadata_of_the_resolved_version_is_kept() -> None:
    assert resolve("^1", ["1.0.0+a", "1.1.0+b"]) == "1.1.0+b"


def test_exact_and_upper_bound() -> None:
    assert parse_range("1.2.3").is_exact and not parse_range("1.2").is_exact
    assert parse_range("latest").upper_bound() is None
    assert parse_range(">=1").upper_bound() is None
    assert parse_range("1.2.3").upper_bound() == ((1, 2, 3, 4, 0), True)
    order, inclusive = parse_range("^1.2 <1.5.0").upper_bound()  # type: ignore[misc]
    assert SemVer.from_order(order).public == "1.5.0-dev.0" and not inclusive
    order, inclusive = parse_range("<=1.4.0 <2").upper_bound()  # type: ignore[misc]
    assert order == (1, 4, 0, 4, 0) and inclusive
    assert parse_range("<2").lower_bound() is None
    assert parse_range("1.2.3").lower_bound() == ((1, 2, 3, 4, 0), True)
    assert parse_range(">=1.0.0 >1.2.0 >=1.1").lower_bound() == ((1, 2, 0, 4, 0), False)
    assert parse_range(">1.2.0 >=1.2.0").lower_bound() == ((1, 2, 0, 4, 0), False)
    assert parse_range("^1.2").lower_bound() == ((1, 2, 0, 4, 0), True)


@pytest.mark.parametrize(
    "bad, part",
    [
        ("abc", "'abc' is not a version"),
        ("^abc", "'abc' is not a version"),
        ("~x", "'x' is not a version"),
        ("^", "'' is not a version"),
        (">=", "operator '>=' has no version"),
        (">=1 <=x", "'x' is not a version"),
        ("1.2.3.4", "'1.2.3.4' is not a version"),
        ("01.2.3", "'01.2.3' is not a version"),
        ("1 - 2", "'-' is not a version"),
        ("1 || 2", "'||' is not a version"),
        ("=>1", "'>1' is not a version"),
        ("v1.2.3", "drop the leading 'v' in 'v1.2.3'"),
        (">=v1", "drop the leading 'v' in 'v1'"),
        ("!=1.2", "'!=' needs a full version"),
        (">=1.2.3-foo.1", "unsupported pre-release 'foo.1'"),
    ],
)
def test_invalid_ranges_name_the_bad_part(bad: str, part: str) -> None:
    with pytest.raises(VersionError) as exc:
        parse_range(bad)
    msg = str(exc.value)
    assert part in msg and "\n" not in msg


def test_overlong_and_non_string_ranges_are_refused() -> None:
    with pytest.raises(VersionError, match="limit is 256"):
        parse_range(">=1 " * 100)
    with pytest.raises(VersionError, match="must be a string"):
        parse_range(2)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ the number bound

MAX = 2**53 - 1  # MAX_VERSION_PART, npm's bound


@pytest.mark.parametrize(
    "text, part",
    [
        (f"{MAX + 1}.0.0", "major"),
        (f"0.{MAX + 1}.0", "minor"),
        (f"0.0.{MAX + 1}", "patch"),
        ("99999999999999999999.0.0", "major"),
        ("1.0.0-rc." + "9" * 20, "pre-release number"),
        ("9" * 40 + ".0.0+build", "major"),
    ],
)
def test_a_version_number_over_2_53_is_refused_in_one_line(text: str, part: str) -> None:
    assert is_semver(text)  # valid SemVer: refused by skillctl's bound, not by the grammar
    with pytest.raises(VersionError) as exc:
        SemVer.parse(text)
    msg = str(exc.value)
    assert f"{part} " in msg and f"over {MAX} (2^53-1)" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "rng", [f"^{MAX + 1}", f"~{MAX + 1}.0", f"{MAX + 1}", f"{MAX + 1}.x", f"1.{MAX + 1}", f">={MAX + 1}", f"<{MAX + 1}.0.0",
            f">1 <=1.{MAX + 1}", f"!=1.0.0-rc.{MAX + 1}", "^99999999999999999999", "=" + "9" * 200]
)
def test_a_range_with_a_number_over_2_53_is_refused_in_one_line(rng: str) -> None:
    with pytest.raises(VersionError) as exc:
        parse_range(rng)
    assert "over 9007199254740991 (2^53-1)" in str(exc.value) and "\n" not in str(exc.value)


def test_the_largest_numbers_are_accepted_and_their_ranges_resolve() -> None:
    top = f"{MAX}.{MAX}.{MAX}"
    assert SemVer.parse(top).order == (MAX, MAX, MAX, 4, 0)
    assert SemVer.parse(f"1.0.0-rc.{MAX}").order[-1] == MAX
    for rng in (f"^{MAX}", f"~{MAX}.{MAX}", f"{MAX}", f">={MAX}", f"<={MAX}.{MAX}"):
        assert resolve(rng, ["1.0.0", top]) == top, rng
        # a range's bound is part + 1 at most: still a signed 64-bit integer (SQLite's INTEGER)
        for bound in (parse_range(rng).upper_bound(), parse_range(rng).lower_bound()):
            assert bound is None or max(bound[0]) < 2**63


def test_bumping_past_the_bound_is_refused() -> None:
    with pytest.raises(VersionError, match=f"cannot bump {MAX}.0.0 \\(major\\): the major number would be over {MAX}"):
        SemVer.parse(f"{MAX}.0.0").bump("major")
    assert str(SemVer.parse(f"{MAX - 1}.0.0").bump("major")) == f"{MAX}.0.0"


# ------------------------------------------------------------------------------------ bumps


@pytest.mark.parametrize(
    "start, part, result",
    [
        ("1.2.3", "major", "2.0.0"),
        ("1.2.3", "minor", "1.3.0"),
        ("1.2.3", "patch", "1.2.4"),
        ("0.0.0", "patch", "0.0.1"),
        ("1.2.3+build.7", "patch", "1.2.4"),
        # npm: bumping a pre-release releases it when it already is that kind of release
        ("2.0.0-rc.1", "major", "2.0.0"),
        ("2.1.0-rc.1", "major", "3.0.0"),
        ("1.3.0-beta.1", "minor", "1.3.0"),
        ("1.3.1-beta.1", "minor", "1.4.0"),
        ("1.2.3-rc.1", "patch", "1.2.3"),
        ("1.2.3-alpha", "major", "2.0.0"),
    ],
)
def test_bump_follows_npm(start: str, part: str, result: str) -> None:
    assert str(SemVer.parse(start).bump(part)) == result


def test_bump_refuses_an_unknown_part() -> None:
    with pytest.raises(VersionError, match="use major, minor, patch or an explicit X.Y.Z"):
        SemVer.parse("1.0.0").bump("prerelease")


# ------------------------------------------------------------------------- skillctl version

from pathlib import Path  # noqa: E402

from click.testing import CliRunner  # noqa: E402

from skillctl.cli import cli  # noqa: E402


def _version(*args: str | Path):
    return CliRunner().invoke(cli, ["version", *map(str, args)], catch_exceptions=False)


def _skill(tmp_path: Path, front: str, *, newline: str = "\n", name: str = "demo") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    text = "---\n" + front + "---\n\n# Demo\n\nversion: 9.9.9 in the body is not metadata\n"
    (folder / "SKILL.md").write_bytes(text.replace("\n", newline).encode())
    return folder


def _changed_lines(before: bytes, after: bytes) -> list[tuple[bytes, bytes]]:
    a, b = before.split(b"\n"), after.split(b"\n")
    assert len(a) == len(b), (before, after)
    return [(x, y) for x, y in zip(a, b) if x != y]


FRONT = "name: demo\ndescription: A demo skill; use it in tests.\nlicense: MIT\nmetadata:\n  author: me\n  version: {v}\n  team: t\n"


@pytest.mark.parametrize("written", ["1.2.3", '"1.2.3"', "'1.2.3'", "1.2.3   # current release"])
def test_version_bump_rewrites_exactly_one_line(tmp_path: Path, written: str) -> None:
    skill = _skill(tmp_path, FRONT.format(v=written))
    before = (skill / "SKILL.md").read_bytes()
    r = _version(skill, "minor", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"path": str(skill), "previous": "1.2.3", "version": "1.3.0"}
    after = (skill / "SKILL.md").read_bytes()
    changes = _changed_lines(before, after)
    assert len(changes) == 1
    old, new = changes[0]
    assert old == f"  version: {written}".encode()
    assert new.startswith(b'  version: "1.3.0"')
    if b"#" in old:
        assert new.endswith(b"   # current release")  # the comment survives
    assert _version(skill).output.strip() == "1.3.0"


def test_version_keeps_crlf_line_endings(tmp_path: Path) -> None:
    skill = _skill(tmp_path, FRONT.format(v="0.9.0"), newline="\r\n")
    before = (skill / "SKILL.md").read_bytes()
    r = _version(skill, "major")
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "0.9.0 -> 1.0.0"
    after = (skill / "SKILL.md").read_bytes()
    assert after.count(b"\r\n") == before.count(b"\r\n") and b"\n" not in after.replace(b"\r\n", b"")
    assert after == before.replace(b"version: 0.9.0", b'version: "1.0.0"')


def test_version_set_explicit_keeps_file_mode(tmp_path: Path) -> None:
    skill = _skill(tmp_path, FRONT.format(v="1.0.0"))
    (skill / "SKILL.md").chmod(0o640)
    assert _version(skill, "2.0.0-rc.1").exit_code == 0
    assert _version(skill / "SKILL.md").output.strip() == "2.0.0-rc.1"
    assert (skill / "SKILL.md").stat().st_mode & 0o777 == 0o640
    assert _version(skill, "major").output.strip() == "2.0.0-rc.1 -> 2.0.0"


def test_missing_version_is_inserted_under_existing_metadata(tmp_path: Path) -> None:
    skill = _skill(tmp_path, "name: demo\ndescription: A demo skill; use it in tests.\nmetadata:\n    author: me\n")
    before = (skill / "SKILL.md").read_bytes()
    assert _version(skill).output.strip().startswith("(no version")
    r = _version(skill, "0.1.0")
    assert r.exit_code == 0, r.output
    after = (skill / "SKILL.md").read_bytes()
    # one line added, indented like its siblings, nothing else touched
    assert after == before.replace(b"metadata:\n", b'metadata:\n    version: "0.1.0"\n')


def test_empty_metadata_key_gets_the_version_not_a_second_key(tmp_path: Path) -> None:
    skill = _skill(tmp_path, "name: demo\ndescription: A demo skill; use it in tests.\nmetadata:\n")
    before = (skill / "SKILL.md").read_bytes()
    assert _version(skill, "0.1.0").exit_code == 0
    after = (skill / "SKILL.md").read_bytes()
    assert after == before.replace(b"metadata:\n", b'metadata:\n  version: "0.1.0"\n')
    assert after.count(b"metadata:") == 1


def test_missing_metadata_is_added_at_the_end_of_the_front_matter(tmp_path: Path) -> None:
    skill = _skill(tmp_path, "name: demo\ndescription: A demo skill; use it in tests.\n")
    before = (skill / "SKILL.md").read_bytes()
    assert _version(skill, "0.1.0").exit_code == 0
    after = (skill / "SKILL.md").read_bytes()
    assert after == before.replace(b"tests.\n---", b'tests.\nmetadata:\n  version: "0.1.0"\n---')


@pytest.mark.parametrize(
    "front, arg, message",
    [
        (FRONT.format(v="1.0.0"), "1.2", "invalid version '1.2'"),
        (FRONT.format(v="1.0.0"), "v2.0.0", "drop the leading 'v'"),
        (FRONT.format(v="1.0.0"), "1.0.0-SNAPSHOT", "unsupported pre-release 'SNAPSHOT'"),
        (FRONT.format(v="1.0.0"), "prerelease", "invalid version 'prerelease'"),
        ("name: demo\ndescription: A demo skill; use it in tests.\n", "patch", "has no version to bump"),
        ("name: demo\ndescription: A demo skill; use it in tests.\nmetadata: {author: me}\n", "1.0.0", "written inline"),
        ("name: demo\ndescription: A demo skill; use it in tests.\nmetadata: null\n", "1.0.0", "edit it by hand"),
        ("name: demo\ndescription: A demo skill; use it in tests.\nmetadata: [a]\n", "1.0.0", "metadata is not a mapping"),
        (FRONT.format(v="banana"), "patch", "invalid version 'banana'"),
    ],
)
def test_version_refuses_bad_input_and_leaves_the_file_alone(tmp_path: Path, front: str, arg: str, message: str) -> None:
    skill = _skill(tmp_path, front)
    before = (skill / "SKILL.md").read_bytes()
    r = _version(skill, arg)
    assert r.exit_code == 1
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert (skill / "SKILL.md").read_bytes() == before
    assert sorted(p.name for p in skill.iterdir()) == ["SKILL.md"]  # no temp file left behind


def test_version_of_a_folder_without_skill_md(tmp_path: Path) -> None:
    r = _version(tmp_path, "1.0.0")
    assert r.exit_code == 1 and "no SKILL.md" in r.output
