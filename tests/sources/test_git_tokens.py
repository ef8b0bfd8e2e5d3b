"""Where a private repository's token goes: to the repository's origin (scheme, host, port) and
nowhere else — not to a redirect elsewhere, not to a mirror, not into a command line, a message
or the cache. The servers record every request's headers, and, while each request is served,
every process whose command line holds the token (git and its remote helper run then)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from skillctl.errors import SourceError
from skillctl.protocols import SourceSpec
from skillctl.sources.gitcmd import GitFailed, GitRunner, Output, auth_header
from skillctl.sources.git import GitSource

from .conftest import TOKEN, Servers
from .git_servers import basic_token, processes_holding

pytestmark = pytest.mark.usefixtures("clear_logs")


def alpha(url: str) -> SourceSpec:
    return SourceSpec("git", url, "v1.0.0", name="alpha")


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and TOKEN not in text and auth_header(TOKEN).split()[-1] not in text, text
    return text


def test_the_token_goes_to_the_repositorys_origin_with_every_request(servers: Servers, tmp_path: Path) -> None:
    with GitSource(token=TOKEN, environ=servers.environ(), cache_dir=tmp_path / "cache") as src:
        pin = src.resolve(alpha(servers.private.url("multi.git")))
        assert src.fetch(pin).name == "alpha"
    assert len(servers.private.log) >= 3
    assert servers.private.authorizations() == [basic_token(TOKEN)] * len(servers.private.log)


def test_the_token_can_come_from_the_environment(servers: Servers) -> None:
    with GitSource(environ=servers.environ(SKILLCTL_GIT_TOKEN=TOKEN)) as src:
        assert src.resolve(alpha(servers.private.url("multi.git"))).name == "alpha"


def test_no_token_or_a_wrong_one_is_one_line_saying_what_to_do(servers: Servers) -> None:
    with GitSource(environ=servers.environ()) as src, pytest.raises(SourceError) as exc:
        src.resolve(alpha(servers.private.url("multi.git")))
    assert "asks for credentials" in one_line(exc) and "--token-stdin" in one_line(exc)
    with GitSource(token="wrong-" + TOKEN[6:], environ=servers.environ()) as src, pytest.raises(SourceError) as exc:
        src.resolve(alpha(servers.private.url("multi.git")))
    assert "refused the token" in one_line(exc) and TOKEN[6:] not in str(exc.value)


def test_the_token_never_follows_a_redirect_to_another_origin(servers: Servers) -> None:
    with GitSource(token=TOKEN, environ=servers.environ()) as src, pytest.raises(SourceError) as exc:
        src.resolve(alpha(servers.redirector.url("multi.git")))
    assert "redirects elsewhere" in one_line(exc)
    assert servers.redirector.authorizations() == [basic_token(TOKEN)]  # the repository's own origin
    assert servers.elsewhere.log == []


def test_without_a_token_a_redirect_is_followed_and_carries_nothing(servers: Servers) -> None:
    with GitSource(environ=servers.environ()) as src:
        assert src.resolve(alpha(servers.redirector.url("multi.git"))).name == "alpha"
    assert servers.elsewhere.log and set(servers.elsewhere.authorizations()) == {None}


def test_a_mirror_of_the_repository_never_gets_its_token(servers: Servers) -> None:
    environ = servers.environ(SKILLCTL_GIT_MIRRORS=f"https://github.com/={servers.private.origin}/")
    with GitSource(token=TOKEN, environ=environ) as src, pytest.raises(SourceError) as exc:
        src.resolve(alpha("https://github.com/multi.git"))
    assert "asks for credentials" in one_line(exc)
    assert servers.private.log and set(servers.private.authorizations()) == {None}


def test_the_token_is_in_no_command_line(servers: Servers) -> None:
    with GitSource(token=TOKEN, environ=servers.environ()) as src:
        src.fetch(src.resolve(alpha(servers.private.url("multi.git"))))
    assert len(servers.private.log) >= 3 and servers.private.argv_hits == []


def test_the_command_line_watch_sees_a_token_in_argv(servers: Servers) -> None:
    # The check above can fail: a process holding the token in its argv is seen.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", TOKEN])
    try:
        deadline = time.monotonic() + 30
        while not processes_holding(TOKEN.encode()) and time.monotonic() < deadline:  # until it has started
            time.sleep(0.01)
        request = urllib.request.Request(servers.elsewhere.url("multi.git/info/refs?service=git-upload-pack"))
        ctx = __import__("ssl").create_default_context(cafile=str(servers.ca))
        urllib.request.urlopen(request, context=ctx, timeout=30).read()
    finally:
        holder.kill()
        holder.wait()
    assert any(TOKEN in hit for hit in servers.elsewhere.argv_hits)


def test_git_commands_refuse_a_token_in_their_arguments(servers: Servers, tmp_path: Path) -> None:
    runner = GitRunner(home=tmp_path, environ=servers.environ(), insecure=False, token=TOKEN,
                       origin=servers.private.origin, fetch_url=servers.private.url("multi.git"))
    with pytest.raises(GitFailed) as exc:
        runner.run(["ls-remote", f"{servers.private.origin}/{TOKEN}.git"], git_dir=tmp_path, what="listing")
    assert "refusing to put a token in a command line" in one_line(exc)


def test_what_git_prints_is_scrubbed_of_the_token(servers: Servers, tmp_path: Path) -> None:
    runner = GitRunner(home=tmp_path, environ=servers.environ(), insecure=False, token=TOKEN,
                       origin=servers.private.origin, fetch_url=servers.private.url("multi.git"))
    printed = f"fatal: unable to access 'x': header {auth_header(TOKEN)} and {TOKEN}\n".encode()
    failure = runner.failure("listing", Output(b"", printed, 128))
    assert TOKEN not in str(failure) and auth_header(TOKEN).split()[-1] not in str(failure) and "***" in str(failure)


def test_the_cache_holds_no_token(servers: Servers, tmp_path: Path) -> None:
    with GitSource(token=TOKEN, environ=servers.environ(), cache_dir=tmp_path / "cache") as src:
        src.fetch(src.resolve(alpha(servers.private.url("multi.git"))))
    secrets = (TOKEN.encode(), auth_header(TOKEN).split()[-1].encode())
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files and not [p for p in files if any(s in p.read_bytes() for s in secrets)]


@pytest.mark.parametrize("token", ["", "   ", "abc\nHost: evil", "abc\r\n"])
def test_a_token_with_a_line_break_or_nothing_in_it_is_refused(token: str) -> None:
    with pytest.raises(SourceError, match="empty or holds a line break"):
        GitSource(token=token, environ={})
