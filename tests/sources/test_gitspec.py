"""Git source strings: every accepted shape, and each refusal in one line naming the shapes."""

from __future__ import annotations

import pytest

from skillctl.errors import ConfigError, SourceError
from skillctl.sources.gitspec import (
    ACCEPTED,
    GitLocation,
    apply_mirrors,
    check_url,
    is_git_source,
    parse_git_source,
    parse_mirrors,
    url_origin,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("github:obra/superpowers", GitLocation("https://github.com/obra/superpowers.git")),
        ("github:obra/superpowers@v4.0.0", GitLocation("https://github.com/obra/superpowers.git", "v4.0.0")),
        ("github:obra/superpowers/skills/brainstorming@v4.0.0",
         GitLocation("https://github.com/obra/superpowers.git", "v4.0.0", "skills/brainstorming")),
        ("github:o/r.git/skills/x", GitLocation("https://github.com/o/r.git", "", "skills/x")),
        (f"github:o/r@{COMMIT}", GitLocation("https://github.com/o/r.git", COMMIT)),
        ("github:o/r@release/1.0", GitLocation("https://github.com/o/r.git", "release/1.0")),
        ("gitlab:group/repo/skills/x@v1", GitLocation("https://gitlab.com/group/repo.git", "v1", "skills/x")),
        ("gitlab:group/sub/repo//skills/x@v1", GitLocation("https://gitlab.com/group/sub/repo.git", "v1", "skills/x")),
        ("gitlab:group/sub/repo//", GitLocation("https://gitlab.com/group/sub/repo.git")),
        ("git+https://git.example.com/team/skills.git@v2#path=skills/pdf",
         GitLocation("https://git.example.com/team/skills.git", "v2", "skills/pdf")),
        ("git+https://git.example.com:8443/team/skills", GitLocation("https://git.example.com:8443/team/skills")),
        ("git+ssh://git@github.com/o/r.git@main", GitLocation("ssh://git@github.com/o/r.git", "main")),
        ("git+file:///srv/repos/skills.git#path=a/b", GitLocation("file:///srv/repos/skills.git", "", "a/b")),
    ],
)
def test_accepted_shapes(text: str, expected: GitLocation) -> None:
    assert is_git_source(text)
    assert parse_git_source(text) == expected


@pytest.mark.parametrize(
    "text, says",
    [
        ("github:obra", "OWNER/REPO"),
        ("github:-o/r", "OWNER/REPO"),
        ("github:o_o/r", "GitHub owner"),
        ("github:o/r@", "empty"),
        ("github:o/r@-upload-pack=touch x", "white space"),
        ("github:o/r@-evil", "starts with '-'"),
        ("github:o/r@a..b", "not a valid git ref"),
        ("github:o/r@v1.lock", "not a valid git ref"),
        ("github:o/r@x^{}", "~^:?*["),
        ("github:o/r/../../etc", "refused"),
        ("github:o/r//skills", "subgroup"),
        ("gitlab:g/sub/r//../x", "refused"),
        ("github:o/r/a\x01b", "control character"),
        ("git+https://user:secret@example.com/r.git", "credentials in the URL"),
        ("git+https://user@example.com/r.git", "credentials in the URL"),
        ("git+ssh://git:pw@example.com/r.git", "no password"),
        ("git+https://example.com/r.git?x=1", "query"),
        ("git+https://example.com/r.git#subdirectory=x", "#path=PATH"),
        ("git+https://example.com/r.git#path=../x", "refused"),
        ("git+https://example.com/", "no repository path"),
        ("git+https://example.com/a/../b.git", "'..'"),
        ("git+ftp://example.com/r.git", "scheme"),
        ("git+ext::sh -c touch% /tmp/x", "white space"),
        ("git+file://host/r.git", "names no host"),
        ("https://github.com/o/r", "starts with 'git+'"),
        ("git@github.com:o/r.git", "scp-style"),
        ("tally@^1", "not a git source"),
    ],
)
def test_refused_shapes_say_what_and_how_in_one_line(text: str, says: str) -> None:
    with pytest.raises(SourceError) as exc:
        parse_git_source(text)
    message = str(exc.value)
    assert says in message and "\n" not in message, message
    assert "secret" not in message and ":pw@" not in message, message


def test_a_refusal_lists_the_accepted_shapes() -> None:
    with pytest.raises(SourceError) as exc:
        parse_git_source("github:obra")
    assert ACCEPTED in str(exc.value)


@pytest.mark.parametrize("scheme", ["git", "http"])
def test_git_and_http_need_insecure(scheme: str) -> None:
    text = f"git+{scheme}://127.0.0.1:9418/r.git@v1"
    with pytest.raises(SourceError, match="--insecure"):
        parse_git_source(text)
    assert parse_git_source(text, insecure=True) == GitLocation(f"{scheme}://127.0.0.1:9418/r.git", "v1")


def test_is_git_source_tells_git_from_registry_refs_sites_and_folders() -> None:
    assert not any(is_git_source(t) for t in ("tally@^1", "https://skills.example.com", "./skills/x", "oci://r/x"))


def test_a_lock_url_is_checked_as_strictly_as_a_source_string() -> None:
    assert check_url("https://example.com/r.git", insecure=False) == "https://example.com/r.git"
    for bad in ("ext::sh -c id", "https://u:p@example.com/r", "git://example.com/r", "-uhttps://x/r", "file://h/r"):
        with pytest.raises(SourceError):
            check_url(bad, insecure=False)


def test_mirrors_map_the_longest_prefix_and_keep_the_rest() -> None:
    mirrors = parse_mirrors("https://github.com/=file:///srv/m/github/  https://github.com/obra/=git://127.0.0.1:9/obra/")
    assert apply_mirrors("https://github.com/obra/superpowers.git", mirrors) == "git://127.0.0.1:9/obra/superpowers.git"
    assert apply_mirrors("https://github.com/o/r.git", mirrors) == "file:///srv/m/github/o/r.git"
    assert apply_mirrors("https://github.com.example.net/o/r.git", mirrors) == "https://github.com.example.net/o/r.git"
    assert apply_mirrors("https://gitlab.com/o/r.git", mirrors) == "https://gitlab.com/o/r.git"


@pytest.mark.parametrize("text", ["https://github.com/", "https://github.com=file:///m/", "https://github.com/=file:///m", "x=y"])
def test_bad_mirror_pairs_are_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_mirrors(text)
    assert "SKILLCTL_GIT_MIRRORS" in str(exc.value) and "\n" not in str(exc.value)


def test_the_origin_a_token_is_bound_to() -> None:
    assert url_origin("https://GitHub.com/o/r.git") == "https://github.com"
    assert url_origin("https://github.com:443/o/r.git") == "https://github.com"
    assert url_origin("https://127.0.0.1:8443/o/r.git") == "https://127.0.0.1:8443"
    assert url_origin("http://127.0.0.1/o") != url_origin("https://127.0.0.1/o")
