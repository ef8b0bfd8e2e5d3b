"""GitSource against real repositories served by ``git daemon``, smart HTTP and ``file://``:
refs, discovery, subfolders, digests equal to ``pack``'s, mirrors, rewritten history, the cache."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from skillctl.bundle import pack
from skillctl.errors import IntegrityError, SourceError
from skillctl.fsutil import tar_data_filter
from skillctl.protocols import Source, SourcePin, SourceSpec
from skillctl.sources.git import GitSource
from skillctl.sources.gitspec import parse_git_source

from .conftest import Servers
from .git_servers import GIT, Repo, clean_env, skill_md

TRANSPORTS = ["file", "daemon", "http"]


def url_of(servers: Servers, transport: str, name: str = "multi.git") -> str:
    if transport == "file":
        return servers.file_url(name)
    if transport == "daemon":
        return servers.daemon.url(name)
    return servers.http.url(name)


@pytest.fixture
def source(servers: Servers):
    notes: list[str] = []
    with GitSource(insecure=True, environ=servers.environ(), progress=notes.append) as src:
        src.notes = notes  # type: ignore[attr-defined]
        yield src


def spec(url: str, ref: str = "", subdir: str = "", name: str = "") -> SourceSpec:
    return SourceSpec("git", url, ref, subdir, name)


def packed_from_git_archive(servers: Servers, commit: str, folder: str, name: str, tmp: Path) -> str:
    """The tar_digest ``skillctl pack`` gives for ``folder`` as ``git archive`` writes it out."""
    data = subprocess.run([GIT, "--git-dir", str(servers.root / "multi.git"), "archive", commit, folder],
                          capture_output=True, check=True, env=clean_env()).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tmp, **tar_data_filter())
    return pack(tmp / folder, name).tar_digest


def test_git_source_is_a_source(source: GitSource) -> None:
    assert isinstance(source, Source) and source.kind == "git"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_discover_finds_every_skill_of_a_repository_with_the_shared_search(servers: Servers, source: GitSource, transport: str) -> None:
    pins = source.discover(spec(url_of(servers, transport), "v1.0.0"))
    assert [(p.name, p.subdir, p.version) for p in pins] == [
        ("alpha", "skills/alpha", "1.0.0"), ("beta", "skills/beta", ""), ("gamma", "skills/group/gamma", "0.3.0")]
    assert {p.revision for p in pins} == {servers.multi.v1}
    assert all(p.extra == {"ref_kind": "tag", "ref_name": "v1.0.0"} and p.spec.name == p.name for p in pins)


def test_every_transport_gives_the_same_pin(servers: Servers, source: GitSource) -> None:
    pins = {t: source.resolve(spec(url_of(servers, t), "v1.1.0", name="alpha")) for t in TRANSPORTS}
    assert len({(p.revision, p.tar_digest, p.digest, p.size) for p in pins.values()}) == 1


def test_digests_are_those_pack_makes_of_the_same_files(servers: Servers, source: GitSource, tmp_path: Path) -> None:
    for name, folder in (("alpha", "skills/alpha"), ("beta", "skills/beta")):
        pin = source.resolve(spec(servers.daemon.url("multi.git"), "v1.1.0", name=name))
        assert pin.tar_digest == packed_from_git_archive(servers, servers.multi.v11, folder, name, tmp_path / name)


@pytest.mark.parametrize(
    "ref, commit, kind",
    [("v1.0.0", "v1", "tag"), ("v1.1.0", "v11", "tag"), ("dev", "dev", "branch"), ("", "v11", "default"),
     ("refs/tags/v1.0.0", "v1", "tag"), ("refs/heads/dev", "dev", "branch")],
)
def test_tags_annotated_tags_branches_and_the_default_branch(servers: Servers, source: GitSource, ref: str, commit: str, kind: str) -> None:
    expected = getattr(servers.multi, commit)
    pin = source.resolve(spec(servers.daemon.url("multi.git"), ref, name="alpha"))
    assert (pin.revision, pin.extra["ref_kind"]) == (expected, kind)
    assert source.resolve_ref(servers.daemon.url("multi.git"), ref) == expected


def test_a_commit_ref_pins_that_commit(servers: Servers, source: GitSource) -> None:
    pin = source.resolve(spec(servers.http.url("multi.git"), servers.multi.v1, name="alpha"))
    assert pin.revision == servers.multi.v1 and pin.version == "1.0.0" and pin.extra == {"ref_kind": "commit"}
    assert source.fetch(pin).files["SKILL.md"] == skill_md("alpha", version="1.0.0")


def test_fetch_returns_exactly_the_pinned_files_with_modes(servers: Servers, source: GitSource) -> None:
    pin = source.resolve(spec(servers.file_url("multi.git"), "v1.1.0", name="beta"))
    with GitSource(insecure=True, environ=servers.environ()) as fresh:  # as install --frozen would
        contents = fresh.fetch(pin)
    assert contents.name == "beta" and sorted(contents.files) == ["SKILL.md", "scripts/run.sh"]
    assert contents.executables == {"scripts/run.sh"} and contents.dirs == ("scripts",)
    assert (contents.tar_digest, contents.digest, contents.size) == (pin.tar_digest, pin.digest, pin.size)


def test_a_subdir_is_searched_or_is_the_skill(servers: Servers, source: GitSource) -> None:
    url = servers.daemon.url("multi.git")
    assert [p.name for p in source.discover(spec(url, "v1.0.0", "skills/group"))] == ["gamma"]
    assert [p.subdir for p in source.discover(spec(url, "v1.0.0", "skills/beta"))] == ["skills/beta"]
    pin = source.resolve(spec(url, "v1.0.0", "skills/beta", name="beta"))
    assert pin.subdir == "skills/beta" and pin.spec.subdir == "skills/beta"


def test_a_source_string_resolves_as_written(servers: Servers, source: GitSource) -> None:
    loc = parse_git_source(f"git+{servers.daemon.url('multi.git')}@dev#path=skills", insecure=True)
    assert [p.name for p in source.discover(spec(loc.url, loc.ref, loc.subdir))] == ["alpha", "beta", "delta", "gamma"]


@pytest.mark.parametrize(
    "ref, subdir, name, says",
    [("v9", "", "alpha", "no tag or branch named 'v9'"),
     ("v1.0.0", "nowhere", "alpha", "no folder 'nowhere'"),
     ("v1.0.0", "", "zeta", "no skill named 'zeta'; skills there: alpha, beta, gamma"),
     ("v1.0.0", "README.md", "alpha", "no folder 'README.md'"),
     ("0" * 40, "", "alpha", "does not have it")],
)
def test_what_is_not_there_is_one_line(servers: Servers, source: GitSource, ref: str, subdir: str, name: str, says: str) -> None:
    with pytest.raises(SourceError) as exc:
        source.resolve(spec(servers.daemon.url("multi.git"), ref, subdir, name))
    assert says in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_a_name_that_is_both_a_tag_and_a_branch_is_ambiguous(servers: Servers, source: GitSource, scratch) -> None:
    repo, name = scratch
    repo.branch("v1.0.0", servers.multi.dev)
    with pytest.raises(SourceError, match="both a tag and a branch; write refs/tags/v1.0.0 or refs/heads/v1.0.0"):
        source.resolve(spec(servers.daemon.url(name), "v1.0.0", name="alpha"))
    assert source.resolve(spec(servers.daemon.url(name), "refs/heads/v1.0.0", name="delta")).revision == servers.multi.dev


def test_a_missing_repository_is_one_line(servers: Servers, source: GitSource) -> None:
    for url in (servers.daemon.url("nope.git"), servers.http.url("nope.git"), servers.file_url("nope.git")):
        with pytest.raises(SourceError) as exc:
            source.resolve(spec(url, "v1", name="x"))
        assert "\n" not in str(exc.value) and url in str(exc.value), str(exc.value)


def test_newest_is_the_default_branch_head_whatever_the_ref(servers: Servers, source: GitSource) -> None:
    newest = source.newest(spec(servers.daemon.url("multi.git"), "v1.0.0", name="alpha"))
    assert newest is not None and newest.revision == servers.multi.v11 and newest.version == "1.1.0"
    assert newest.extra["ref_kind"] == "default" and newest.extra["ref_name"] == "main"


def test_mirrors_map_github_to_the_loopback_daemon_and_the_pin_keeps_the_original(servers: Servers) -> None:
    environ = servers.environ(SKILLCTL_GIT_MIRRORS=f"https://github.com/={servers.daemon.url('github/')}")
    loc = parse_git_source("github:obra/superpowers/skills/alpha@v1.0.0")
    with GitSource(insecure=True, environ=environ) as src:
        pin = src.resolve(spec(loc.url, loc.ref, loc.subdir, "alpha"))
        assert pin.spec.location == "https://github.com/obra/superpowers.git" and pin.revision == servers.multi.v1
        assert src.fetch(pin).tar_digest == pin.tar_digest


def test_a_git_mirror_still_needs_insecure(servers: Servers) -> None:
    environ = servers.environ(SKILLCTL_GIT_MIRRORS=f"https://github.com/={servers.daemon.url('github/')}")
    with GitSource(environ=environ) as src, pytest.raises(SourceError, match="--insecure"):
        src.resolve(spec("https://github.com/obra/superpowers.git", "v1.0.0", name="alpha"))


# ------------------------------------------------------------------ moved tags, rewritten history


def rewrite_history(repo: Repo, files: dict) -> str:
    """Force-push a new root commit to main and both tags, drop dev, forget the old objects."""
    new = repo.commit(files, message="rewritten")  # a root commit: no parent
    for tag in ("v1.0.0", "v1.1.0"):
        repo.tag(tag, new)
    repo.delete_ref("refs/heads/dev")
    repo.prune()
    return new


def multi_files() -> dict:
    return {"skills/alpha/SKILL.md": skill_md("alpha", version="1.0.0"), "skills/alpha/notes.txt": b"alpha notes\n"}


def test_a_moved_tag_still_installs_the_pinned_commit_while_the_server_has_it(servers: Servers, scratch) -> None:
    repo, name = scratch
    with GitSource(insecure=True, environ=servers.environ()) as src:
        pin = src.resolve(spec(servers.daemon.url(name), "v1.0.0", name="alpha"))
    repo.tag("v1.0.0", servers.multi.dev)  # moved; the old commit is still main's parent
    with GitSource(insecure=True, environ=servers.environ()) as src:
        assert src.fetch(pin).tar_digest == pin.tar_digest
        assert src.resolve(pin.spec).tar_digest != pin.tar_digest  # what update would see


def test_history_rewritten_under_a_tag_refuses_naming_skill_ref_commit_and_both_digests(servers: Servers, scratch) -> None:
    repo, name = scratch
    with GitSource(insecure=True, environ=servers.environ()) as src:
        pin = src.resolve(spec(servers.daemon.url(name), "v1.0.0", name="alpha"))
    new = rewrite_history(repo, {**multi_files(), "skills/alpha/notes.txt": b"something else\n"})
    with GitSource(insecure=True, environ=servers.environ()) as src, pytest.raises(IntegrityError) as exc:
        src.fetch(pin)
    message = str(exc.value)
    for part in ("skill alpha", "tag v1.0.0", pin.revision, "no longer on", new, pin.tar_digest, "now sha256:"):
        assert part in message, message
    assert "\n" not in message


def test_history_rewritten_with_the_same_files_still_refuses_the_gone_commit(servers: Servers, scratch) -> None:
    repo, name = scratch
    with GitSource(insecure=True, environ=servers.environ()) as src:
        pin = src.resolve(spec(servers.daemon.url(name), "v1.0.0", name="alpha"))
    new = rewrite_history(repo, multi_files())
    with GitSource(insecure=True, environ=servers.environ()) as src, pytest.raises(SourceError) as exc:
        src.fetch(pin)
    assert not isinstance(exc.value, IntegrityError)
    assert f"commit {pin.revision} (tag v1.0.0) is no longer on" in str(exc.value) and new in str(exc.value)
    assert "same files" in str(exc.value)


def test_a_pinned_commit_that_is_gone_says_so(servers: Servers, scratch) -> None:
    repo, name = scratch
    with GitSource(insecure=True, environ=servers.environ()) as src:
        pin = src.resolve(spec(servers.http.url(name), servers.multi.v1, name="alpha"))
    rewrite_history(repo, multi_files())
    with GitSource(insecure=True, environ=servers.environ()) as src, pytest.raises(SourceError) as exc:
        src.fetch(pin)
    assert f"skill alpha: commit {pin.revision}" in str(exc.value) and "no longer on" in str(exc.value)


def test_a_pin_whose_digest_is_not_the_commits_files_is_refused(servers: Servers, source: GitSource) -> None:
    pin = source.resolve(spec(servers.daemon.url("multi.git"), "v1.0.0", name="alpha"))
    forged = SourcePin(pin.spec, pin.name, pin.version, pin.revision, pin.digest, "sha256:" + "0" * 64, pin.size,
                       pin.subdir, extra=pin.extra)
    with pytest.raises(IntegrityError) as exc:
        source.fetch(forged)
    message = str(exc.value)
    for part in ("skill alpha", "tag v1.0.0", pin.revision, "sha256:" + "0" * 64, pin.tar_digest):
        assert part in message, message


# ------------------------------------------------------------------ the cache


def test_a_shared_cache_folder_serves_concurrent_users(servers: Servers, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    results: list[object] = []

    def one(i: int) -> None:
        try:
            with GitSource(insecure=True, environ=servers.environ(), cache_dir=cache) as src:
                pins = src.discover(spec(servers.daemon.url("multi.git"), ("v1.0.0", "dev")[i % 2]))
                results.append(sorted((p.name, p.tar_digest) for p in pins))
        except Exception as exc:  # noqa: BLE001 - reported below
            results.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert len(results) == 6 and len({str(r) for r in results}) == 2
    assert oct((cache).stat().st_mode & 0o777) == "0o700"


def test_a_temporary_cache_is_removed_on_close(servers: Servers) -> None:
    src = GitSource(insecure=True, environ=servers.environ())
    src.resolve(spec(servers.daemon.url("multi.git"), "v1.0.0", name="alpha"))
    root = src.store.root
    assert root.is_dir()
    src.close()
    assert not root.exists()


def test_one_skill_costs_three_exchanges_and_reads_never_fetch_behind_our_back(servers: Servers, clear_logs) -> None:
    # refs (ls-remote), the commit's trees, then the skill's files in one batch. A read that
    # found a blob missing and fetched it itself (a partial clone's "promisor" remote) would add
    # one exchange per file.
    with GitSource(insecure=True, environ=servers.environ()) as src:
        src.resolve(spec(servers.http.url("multi.git"), "v1.1.0", name="alpha"))
    posts = [r.path for r in servers.http.log if r.method == "POST"]
    assert posts == ["/multi.git/git-upload-pack"] * 3, [(r.method, r.path) for r in servers.http.log]


def test_skillignore_and_junk_leave_out_what_pack_leaves_out(servers: Servers, source: GitSource, tmp_path: Path) -> None:
    from .git_servers import Link

    name = f"ignores-{os.getpid()}.git"
    repo = Repo(servers.root / name)
    files = {
        "tool/SKILL.md": skill_md("tool"), "tool/.skillignore": b"drafts/\n*.log\n*.lnk\n", "tool/keep.txt": b"keep\n",
        "tool/a.log": b"log\n", "tool/drafts/x.md": b"draft\n", "tool/.DS_Store": b"junk", "tool/__pycache__/m.pyc": b"junk",
        "tool/cache.lnk": Link("keep.txt"),
    }
    commit = repo.commit(files)
    try:
        pin = source.resolve(spec(servers.daemon.url(name), name="tool"))
        assert sorted(source.fetch(pin).files) == ["SKILL.md", "keep.txt"]
        data = subprocess.run([GIT, "--git-dir", str(repo.path), "archive", commit, "tool"], capture_output=True,
                              check=True, env=clean_env()).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp_path, **tar_data_filter())
        assert pin.tar_digest == pack(tmp_path / "tool", "tool").tar_digest
    finally:
        shutil.rmtree(repo.path)


def test_a_repository_that_is_one_skill_is_named_by_its_skill_md(servers: Servers, source: GitSource) -> None:
    name = f"single-{os.getpid()}.git"
    repo = Repo(servers.root / name)
    repo.commit({"SKILL.md": skill_md("solo"), "ref.md": b"see\n"})
    try:
        pins = source.discover(spec(servers.http.url(name)))
        assert [(p.name, p.subdir) for p in pins] == [("solo", "")]
        assert source.fetch(source.resolve(spec(servers.http.url(name), name="solo"))).name == "solo"
        with pytest.raises(SourceError, match="is named 'solo', not 'other'"):
            source.resolve(spec(servers.http.url(name), name="other"))
    finally:
        shutil.rmtree(repo.path)


def test_an_invalid_skill_md_is_one_line_naming_the_problem(servers: Servers, source: GitSource) -> None:
    name = f"invalid-{os.getpid()}.git"
    repo = Repo(servers.root / name)
    repo.commit({"skills/x/SKILL.md": skill_md("y"), **{f"skills/ok/{k}": v for k, v in {"SKILL.md": skill_md("ok")}.items()}})
    notes: list[str] = []
    try:
        with pytest.raises(SourceError) as exc:
            source.resolve(spec(servers.daemon.url(name), name="x"))
        assert "SK107" in str(exc.value) and "\n" not in str(exc.value)
        with GitSource(insecure=True, environ=servers.environ(), progress=notes.append) as src:
            assert [p.name for p in src.discover(spec(servers.daemon.url(name)))] == ["ok"]
        assert any("left out" in n and "skills/x" in n for n in notes)
    finally:
        shutil.rmtree(repo.path)
