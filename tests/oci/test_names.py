"""oci:// URLs, repository names and the version <-> tag mapping (no server needed)."""

from __future__ import annotations

import pytest

from skillctl.errors import RegistryError, VersionError
from skillctl.registry import open_registry
from skillctl.registry.oci.names import check_repository, parse_oci_url, tag_version, version_tag
from skillctl.versioning import SemVer


@pytest.mark.parametrize(
    "url, host, namespace",
    [
        ("oci://127.0.0.1:5000/skills", "127.0.0.1:5000", "skills"),
        ("oci://registry.example.com/team/skills", "registry.example.com", "team/skills"),
        ("oci://[::1]:5000/a.b_c__d-e--f", "[::1]:5000", "a.b_c__d-e--f"),
        ("oci://ghcr.io/acme", "ghcr.io", "acme"),
    ],
)
def test_valid_urls_parse(url: str, host: str, namespace: str) -> None:
    loc = parse_oci_url(url)
    assert (loc.host, loc.namespace, loc.url) == (host, namespace, url)
    assert loc.repository("tally") == f"{namespace}/tally"
    assert loc.skill_name(f"{namespace}/tally") == "tally"
    assert loc.skill_name(f"{namespace}/deeper/tally") is None
    assert loc.skill_name("other/tally") is None


@pytest.mark.parametrize(
    "url, says",
    [
        ("oci://127.0.0.1:5000", "names no namespace"),
        ("oci://127.0.0.1:5000/", "names no namespace"),
        ("oci://127.0.0.1:5000/Skills", "component 'Skills' must be lowercase"),
        ("oci://127.0.0.1:5000/a..b", "component 'a..b'"),
        ("oci://127.0.0.1:5000/-skills", "component '-skills'"),
        ("oci://127.0.0.1:5000/skills_", "component 'skills_'"),
        ("oci://127.0.0.1:5000/a___b", "component 'a___b'"),
        ("oci://127.0.0.1:5000/skills/", "without empty path parts"),
        ("oci://127.0.0.1:5000/a//b", "without empty path parts"),
        ("oci://user:pw@127.0.0.1:5000/skills", "do not put credentials in the URL"),
        ("oci://127.0.0.1:5000/skills?x=1", "no '?' or '#'"),
        ("oci://127.0.0.1:99999/skills", "port 99999 is out of range"),
        ("oci://bad host/skills", "is not a registry host"),
        ("oci:///skills", "is not a registry host"),
        ("oci://h/" + "a" * 256, "OCI registries allow 255"),
    ],
)
def test_invalid_urls_are_refused_with_the_rule(url: str, says: str) -> None:
    with pytest.raises(RegistryError) as exc:
        parse_oci_url(url)
    assert says in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(RegistryError):  # the same through the backend router, before any request
        open_registry(url)


def test_repository_name_length_counts_namespace_and_name() -> None:
    loc = parse_oci_url("oci://h/" + "n" * 200)
    with pytest.raises(RegistryError, match="OCI registries allow 255"):
        loc.repository("x" * 60)
    check_repository("n" * 200 + "/" + "x" * 54)  # exactly 255


@pytest.mark.parametrize(
    "version, tag",
    [("1.2.3", "1.2.3"), ("1.2.3+build.5", "1.2.3_build.5"), ("2.0.0-rc.1", "2.0.0-rc.1"), ("2.0.0-rc.1+g1-x", "2.0.0-rc.1_g1-x")],
)
def test_tags_map_plus_to_underscore_and_back(version: str, tag: str) -> None:
    assert version_tag(version) == tag
    back = tag_version(tag)
    assert back is not None and str(back) == version


@pytest.mark.parametrize("tag", ["latest", "v1.2.3", "1.2", "1.2.3_a_b", "sha256-abc.sig", "1.2.3-foo.1"])
def test_tags_that_are_not_versions_are_ignored(tag: str) -> None:
    assert tag_version(tag) is None


def test_version_too_long_for_a_tag_is_refused() -> None:
    v = "1.0.0+" + "b" * 122  # 128 characters: the longest version and the longest tag
    assert version_tag(v).startswith("1.0.0_")
    with pytest.raises(VersionError):
        version_tag("1.0.0+" + "b" * 123)  # 129 characters: not even a version
    assert SemVer.parse(v)
