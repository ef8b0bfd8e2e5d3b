"""The repositories and servers the git source is tested against, built once per session.

``servers.root`` holds the bare repositories; ``git daemon`` (``servers.daemon``) and smart HTTP
(``servers.http``: plain, ``servers.private``: TLS + token, ``servers.redirector``: TLS, redirects
everything to ``servers.elsewhere``) serve all of them, and ``file://`` reaches them too.

Repositories:

- ``multi.git``: ``skills/alpha``, ``skills/beta`` (an executable script), ``skills/group/gamma``
  and a README; tag ``v1.0.0`` (lightweight) on the first commit, ``v1.1.0`` (annotated) on the
  second (alpha changed), ``main`` there, branch ``dev`` one commit further (adds ``delta``).
  ``github/obra/superpowers.git`` is the same repository, for mirrors of ``github:``.
- ``hostile-*.git``: ``skills/good`` (a valid skill) beside ``skills/bad``, one attack each.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from wellknown.server import make_test_ca

from .git_servers import Blob, Exe, GitDaemon, GitHttpServer, Gitlink, Link, Repo, skill_md

TOKEN = "skctl_gittoken-0123456789abcdefghijklmnopqrstuvwxyzABCD"
GIGABYTE = 1024 * 1024 * 1024


@dataclass
class Multi:
    v1: str  # commit of tag v1.0.0
    v11: str  # commit of tag v1.1.0 (main)
    dev: str  # commit of branch dev


@dataclass
class Servers:
    root: Path
    daemon: GitDaemon
    http: GitHttpServer
    private: GitHttpServer
    elsewhere: GitHttpServer
    redirector: GitHttpServer
    ca: Path
    multi: Multi
    submodule_target: GitHttpServer

    def file_url(self, name: str) -> str:
        return f"file://{self.root / name}"

    def environ(self, **extra: str) -> dict[str, str]:
        """What a GitSource reads in these tests: the test CA, nothing of the user's."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_SSL_CAINFO": str(self.ca)}
        env.update(extra)
        return env


def good_skill(prefix: str = "skills/good") -> dict:
    return {f"{prefix}/SKILL.md": skill_md("good", version="1.0.0"), f"{prefix}/notes.txt": b"fine\n"}


def build_multi(root: Path) -> Multi:
    repo = Repo(root / "multi.git")
    base = {
        "README.md": b"# several skills\n",
        "skills/alpha/SKILL.md": skill_md("alpha", version="1.0.0"),
        "skills/alpha/notes.txt": b"alpha notes\n",
        "skills/beta/SKILL.md": skill_md("beta", body="Run scripts/run.sh.\n"),
        "skills/beta/scripts/run.sh": Exe(b"#!/bin/sh\necho beta\n"),
        "skills/group/gamma/SKILL.md": skill_md("gamma", version="0.3.0"),
    }
    v1 = repo.commit(base, message="first")
    repo.tag("v1.0.0", v1)
    second = dict(base, **{"skills/alpha/SKILL.md": skill_md("alpha", version="1.1.0"), "skills/alpha/more.txt": b"more\n"})
    v11 = repo.commit(second, message="second", parent=v1)
    repo.tag("v1.1.0", v11, annotated=True)
    dev = repo.commit(dict(second, **{"skills/delta/SKILL.md": skill_md("delta")}), message="dev", parent=v11, ref="refs/heads/dev")
    return Multi(v1, v11, dev)


def build_hostile(root: Path, submodule_url: str) -> None:
    def hostile(name: str, bad: dict) -> Repo:
        repo = Repo(root / f"hostile-{name}.git")
        repo.commit({**good_skill(), "skills/bad/SKILL.md": skill_md("bad"), **bad})
        return repo

    hostile("link-out", {"skills/bad/escape": Link("../../../../../../etc/passwd")})
    hostile("link-in", {"skills/bad/again.md": Link("SKILL.md")})
    big = Repo(root / "hostile-big.git")
    oid = big.zero_blob(GIGABYTE)  # 4.5 MB in the repository, a gigabyte when read
    big.commit({**good_skill(), "skills/bad/SKILL.md": skill_md("bad"), "skills/bad/big.bin": Blob(oid)})
    Repo(root / "hostile-many.git").many_files("skills/bad", 100_000)
    hostile("attrs", {
        "skills/bad/.gitattributes": b"* filter=x\n*.txt text eol=crlf\nexport.txt export-subst\n",
        "skills/bad/lines.txt": b"one\ntwo\n",
        "skills/bad/export.txt": b"$Format:%H$\n",
    })
    other = Repo(root / "vendored.git")
    vendored = other.commit({"lib.txt": b"vendored\n"})
    hostile("submodule", {
        "skills/bad/.gitmodules": f'[submodule "vendor"]\n\tpath = vendor\n\turl = {submodule_url}\n'.encode(),
        "skills/bad/vendor": Gitlink(vendored),
        ".gitmodules": f'[submodule "skills/bad/vendor"]\n\tpath = skills/bad/vendor\n\turl = {submodule_url}\n'.encode(),
    })
    hostile("dotdot", {"skills/bad/../../outside.txt": b"escaped\n"})
    hostile("dotgit", {"skills/bad/.git/config": b"[core]\n\tfsmonitor = false\n"})
    hostile("control", {"skills/bad/evil\nname.txt": b"forged line\n"})
    hostile("deep", {"skills/bad/" + "/".join(f"d{i}" for i in range(20)) + "/deep.txt": b"deep\n"})
    # A server that ignores partial-fetch filters, with 3 MB nobody asked for beside the skill.
    noise = os.urandom(3 * 1024 * 1024)
    Repo(root / "nofilter.git", allow_filter=False).commit({**good_skill(), "assets/noise.bin": noise})


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("git-servers")
    root = tmp / "repos"
    root.mkdir()
    ca, cert, key = make_test_ca(tmp / "tls")
    daemon = GitDaemon(root).start()
    http = GitHttpServer(root).start()
    private = GitHttpServer(root, token=TOKEN, tls=(cert, key), watch=TOKEN).start()
    elsewhere = GitHttpServer(root, tls=(cert, key), watch=TOKEN).start()
    redirector = GitHttpServer(root, tls=(cert, key), redirect_to=elsewhere.origin).start()
    submodule_target = GitHttpServer(root).start()
    try:
        multi = build_multi(root)
        (root / "github" / "obra").mkdir(parents=True)
        shutil.copytree(root / "multi.git", root / "github" / "obra" / "superpowers.git")
        build_hostile(root, submodule_target.url("vendored.git"))
        yield Servers(root, daemon, http, private, elsewhere, redirector, ca, multi, submodule_target)
    finally:
        for server in (http, private, elsewhere, redirector, submodule_target):
            server.stop()
        daemon.stop()


@pytest.fixture
def scratch(servers: Servers, request: pytest.FixtureRequest):
    """A fresh copy of ``multi.git`` under the served folder, for a test that rewrites history."""
    name = f"scratch-{request.node.name[:40]}-{os.getpid()}.git".replace("[", "-").replace("]", "")
    shutil.copytree(servers.root / "multi.git", servers.root / name)
    yield Repo(servers.root / name, create=False), name
    shutil.rmtree(servers.root / name, ignore_errors=True)


@pytest.fixture
def clear_logs(servers: Servers):
    for server in (servers.http, servers.private, servers.elsewhere, servers.redirector, servers.submodule_target):
        server.log.clear()
        server.argv_hits.clear()
    yield

