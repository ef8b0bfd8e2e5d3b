"""Hostile repositories, and hostile configuration around them, against GitSource.

Each repository holds a valid ``skills/good`` beside ``skills/bad``, one attack each: asked for
``bad``, the source refuses in one line naming the member and the rule (or, for what a checkout
would do behind its back, simply never does it); asked to discover, it returns ``good`` and says
why ``bad`` was left out. Nothing is written outside the cache folder, and no marker appears.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tools import MEASURE

from skillctl.errors import SourceError
from skillctl.protocols import SourceSpec
from skillctl.sources.git import GitSource, GitTreeRefused

from .conftest import TOKEN, Servers
from .git_servers import GIT, clean_env


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder and a cache folder; the test asserts nothing else appears."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


def written_outside_the_cache(place: Path) -> list[str]:
    return sorted(str(p.relative_to(place)) for p in place.rglob("*") if "cache" not in p.relative_to(place).parts[:1]
                  and p.name != "cwd" and "config" not in p.relative_to(place).parts[:1])


def bad(servers: Servers, attack: str, place: Path, **kwargs) -> SourceError:
    with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache", **kwargs) as src:
        with pytest.raises(SourceError) as exc:
            src.resolve(SourceSpec("git", servers.daemon.url(f"hostile-{attack}.git"), name="bad"))
    message = str(exc.value)
    assert "\n" not in message and len(message) < 600, message
    assert written_outside_the_cache(place) == []
    return exc.value


def discover(servers: Servers, attack: str, place: Path, url: str | None = None) -> tuple[list[str], list[str]]:
    notes: list[str] = []
    with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache", progress=notes.append) as src:
        pins = src.discover(SourceSpec("git", url or servers.daemon.url(f"hostile-{attack}.git")))
    return [p.name for p in pins], notes


@pytest.mark.parametrize("attack, member", [("link-out", "skills/bad/escape"), ("link-in", "skills/bad/again.md")])
def test_a_symbolic_link_is_refused_whether_it_leaves_the_skill_or_not(servers: Servers, place: Path, attack: str, member: str) -> None:
    err = bad(servers, attack, place)
    assert isinstance(err, GitTreeRefused) and err.member == member and err.rule == "no links", err
    names, notes = discover(servers, attack, place)
    assert names == ["good"] and any("skills/bad" in n and "symbolic link" in n for n in notes), notes


def test_a_gigabyte_blob_is_refused_by_its_size_before_it_is_read(servers: Servers, place: Path) -> None:
    # In a process of its own, measured by a go-between (tools.MEASURE), to know the peak memory of
    # the process that would have read it.
    code = f"""
import json, sys
from skillctl.errors import SourceError
from skillctl.protocols import SourceSpec
from skillctl.sources.git import GitSource
env = json.loads(sys.argv[1])
with GitSource(insecure=True, environ=env, cache_dir={str(place / "cache")!r}) as src:
    try:
        src.resolve(SourceSpec("git", {servers.daemon.url("hostile-big.git")!r}, name="bad"))
        print(json.dumps(["installed"]))
    except SourceError as exc:
        print(json.dumps([str(exc), getattr(exc, "rule", None)]))
"""
    measured = place / "measured"
    out = subprocess.run([sys.executable, "-c", MEASURE, str(measured), sys.executable, "-c", code, json.dumps(servers.environ())],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    message, rule = json.loads(out.stdout)
    max_rss_kib = int(measured.read_text().split()[1])
    assert rule == "max_file_size" and "'skills/bad/big.bin'" in message and "1073741824 bytes" in message, message
    assert max_rss_kib < 300 * 1024, f"peak memory {max_rss_kib} KiB: the blob was read"
    assert discover(servers, "big", place)[0] == ["good"]


def test_a_hundred_thousand_files_are_refused_by_count_before_any_blob_is_fetched(servers: Servers, place: Path) -> None:
    err = bad(servers, "many", place)
    assert isinstance(err, GitTreeRefused) and err.rule == "max_files" and "more than 500 files" in str(err)
    objects = subprocess.run(
        [GIT, "--git-dir", str(next((place / "cache").glob("*.git"))), "cat-file", "--batch-all-objects", "--batch-check"],
        capture_output=True, text=True, check=True, env=clean_env()).stdout.split("\n")
    assert not [line for line in objects if " blob " in line]


@pytest.mark.parametrize(
    "attack, rule, shown",
    [("dotdot", None, None), ("dotgit", None, None),
     ("control", "no NUL or control characters", "evil\\x0aname.txt"), ("deep", "max_depth", "levels deep")],
)
def test_names_with_dotdot_dotgit_control_characters_or_too_deep_are_refused(
    servers: Servers, place: Path, attack: str, rule: str | None, shown: str | None
) -> None:
    err = bad(servers, attack, place)
    if rule is None:  # git's own object checks stop the fetch (transfer.fsckObjects)
        assert "git refused what the server sent" in str(err), err
    else:
        assert isinstance(err, GitTreeRefused) and err.rule == rule and shown in str(err), err
    assert not list(Path("/").glob("outside.txt")) and not (place / "outside.txt").exists()


def test_a_submodule_is_left_out_with_a_note_and_never_fetched(servers: Servers, place: Path, clear_logs) -> None:
    notes: list[str] = []
    with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache", progress=notes.append) as src:
        pin = src.resolve(SourceSpec("git", servers.daemon.url("hostile-submodule.git"), name="bad"))
        contents = src.fetch(pin)
    assert sorted(contents.files) == [".gitmodules", "SKILL.md"]
    assert any("submodule 'vendor' left out" in n for n in notes), notes
    assert servers.submodule_target.log == []
    assert written_outside_the_cache(place) == []


def marker_script(folder: Path, name: str) -> Path:
    script = folder / f"{name}.sh"
    script.write_text(f"#!/bin/sh\necho ran > {folder / (name + '.marker')}\ncat\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def hostile_config(place: Path, servers: Servers) -> tuple[Path, dict[str, str]]:
    """A global git configuration (and HOME, XDG and GIT_* variables) full of things git would
    run or obey: filters, hooks, templates, upload-pack hooks, credential helpers, URL rewrites."""
    folder = place / "config"
    (folder / "hooks").mkdir(parents=True)
    (folder / "template" / "hooks").mkdir(parents=True)
    for hook in ("post-checkout", "reference-transaction", "post-merge", "pre-auto-gc", "fsmonitor-watchman"):
        for where in (folder / "hooks", folder / "template" / "hooks"):
            (where / hook).write_text(f"#!/bin/sh\ntouch {folder / 'hook.marker'}\n")
            (where / hook).chmod(0o755)
    smudge, helper, packhook, fsmon = (marker_script(folder, n) for n in ("smudge", "helper", "packhook", "fsmonitor"))
    config = f"""[filter "x"]
\tsmudge = {smudge}
\tclean = {smudge}
\tprocess = {smudge}
\trequired = true
[core]
\thooksPath = {folder / 'hooks'}
\tfsmonitor = {fsmon}
\tsshCommand = {helper}
[init]
\ttemplateDir = {folder / 'template'}
[uploadpack]
\tpackObjectsHook = {packhook}
[credential]
\thelper = !{helper}
[url "file:///nonexistent/"]
\tinsteadOf = {servers.daemon.url('')}
\tinsteadOf = {servers.http.origin}/
\tinsteadOf = {servers.private.origin}/
\tinsteadOf = file://{servers.root}/
[protocol]
\tallow = always
"""
    (folder / "gitconfig").write_text(config)
    (folder / "home" / ".config" / "git").mkdir(parents=True)
    (folder / "home" / ".gitconfig").write_text(config)
    (folder / "home" / ".config" / "git" / "config").write_text(config)
    (folder / "home" / ".config" / "git" / "attributes").write_text("* filter=x\n")
    hostile_env = {
        "GIT_CONFIG_GLOBAL": str(folder / "gitconfig"), "GIT_CONFIG_SYSTEM": str(folder / "gitconfig"),
        "HOME": str(folder / "home"), "XDG_CONFIG_HOME": str(folder / "home" / ".config"),
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": str(folder / "hooks"),
        "GIT_CONFIG_PARAMETERS": f"'core.hookspath'='{folder / 'hooks'}'", "GIT_SSH_COMMAND": str(helper),
        "GIT_ASKPASS": str(helper), "SSH_ASKPASS": str(helper), "GIT_TEMPLATE_DIR": str(folder / "template"),
        "GIT_DIR": str(folder), "GIT_OBJECT_DIRECTORY": str(folder), "GIT_EXEC_PATH": str(folder),
        "GIT_ALLOW_PROTOCOL": "ext:file:git:http:https", "GIT_SSL_NO_VERIFY": "1",
    }
    return folder, hostile_env


def test_attributes_filters_and_every_hook_of_the_users_configuration_are_ignored(
    servers: Servers, place: Path, hostile_config, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, hostile_env = hostile_config
    for key, value in hostile_env.items():
        monkeypatch.setenv(key, value)  # as if the user's shell had them
    environ = servers.environ(**hostile_env)
    urls = [servers.file_url("hostile-attrs.git"), servers.daemon.url("hostile-attrs.git"), servers.http.url("hostile-attrs.git")]
    for i, url in enumerate(urls):
        with GitSource(insecure=True, environ=environ, cache_dir=place / "cache" / str(i)) as src:
            pin = src.resolve(SourceSpec("git", url, name="bad"))
            contents = src.fetch(pin)
        # The committed bytes: no smudge, no export-subst, no end-of-line conversion.
        assert contents.files["lines.txt"] == b"one\ntwo\n"
        assert contents.files["export.txt"] == b"$Format:%H$\n"
        assert contents.files[".gitattributes"].startswith(b"* filter=x")
    # A private repository without a token: the credential helper would be asked, and is not.
    with GitSource(insecure=True, environ=environ, cache_dir=place / "cache" / "p") as src, pytest.raises(SourceError) as exc:
        src.resolve(SourceSpec("git", servers.private.url("multi.git"), name="alpha"))
    assert "credentials" in str(exc.value) and "SKILLCTL_GIT_TOKEN" in str(exc.value)
    assert sorted(p.name for p in folder.glob("*.marker")) == []
    assert not [p for p in (place / "cache").rglob("hooks/*")], "a template was copied"


def test_a_server_that_ignores_filters_cannot_write_more_than_the_fetch_cap(servers: Servers, place: Path) -> None:
    url = servers.daemon.url("nofilter.git")
    cap = 1024 * 1024
    with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache", max_fetch_bytes=cap) as src:
        with pytest.raises(SourceError) as exc:
            src.resolve(SourceSpec("git", url, name="good"))
    assert f"more than {cap} bytes" in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    assert max(p.stat().st_size for p in (place / "cache").rglob("*") if p.is_file()) <= cap
    with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache2") as src:
        assert src.resolve(SourceSpec("git", url, name="good")).name == "good"  # the default cap holds 3 MB


def test_a_token_never_reaches_a_hostile_repositorys_submodule_or_messages(servers: Servers, place: Path, clear_logs) -> None:
    with GitSource(insecure=True, token=TOKEN, environ=servers.environ(), cache_dir=place / "cache") as src:
        with pytest.raises(SourceError) as exc:
            src.resolve(SourceSpec("git", servers.http.url("hostile-link-out.git"), name="bad"))
        src.resolve(SourceSpec("git", servers.http.url("hostile-submodule.git"), name="bad"))
    assert TOKEN not in str(exc.value)
    assert servers.submodule_target.log == []


def test_a_server_that_never_answers_costs_one_deadline_in_one_line(servers: Servers, place: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])  # and never say a word

    threading.Thread(target=accept, daemon=True).start()
    url = f"git://127.0.0.1:{listener.getsockname()[1]}/multi.git"
    try:
        with GitSource(insecure=True, environ=servers.environ(), cache_dir=place / "cache", timeout_s=2) as src:
            with pytest.raises(SourceError) as exc:
                src.resolve(SourceSpec("git", url, "v1.0.0", name="alpha"))
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert "did not finish within 2 s" in str(exc.value) and "\n" not in str(exc.value)
