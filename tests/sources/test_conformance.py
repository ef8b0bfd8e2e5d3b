"""One contract, every kind of skill source (``skillctl.protocols.Source``): what a source holding
the skills ``alpha`` and ``beta`` must answer, and what it must refuse. A new kind is done when it
passes here. Each backend is real: a folder registry, a folder of skills, a bare git repository
read over ``file://`` by Debian's git (the git servers themselves are tested in test_git_*.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from registry.helpers import write_skill
from skillctl.errors import IntegrityError, NotFoundError, SkillctlError, SourceError
from skillctl.protocols import Source, SourceSpec
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder
from skillctl.sources import open_source
from skillctl.sources.registry import Borrowed


@dataclass
class Case:
    source: Source
    spec: SourceSpec  # where alpha and beta are (no name)
    change_alpha: Callable[[], None]  # make what the spec points at hold other files for alpha
    elsewhere: Callable[[], Source] | None = None  # the same source on another machine (no cache)

    def fresh(self) -> Source:
        return self.elsewhere() if self.elsewhere is not None else self.source


def _skills(root: Path, alpha_body: str = "# Alpha\n") -> None:
    write_skill(root, "alpha", "1.0.0", body=alpha_body)
    write_skill(root, "beta", "0.2.0")


def _registry_case(tmp_path: Path) -> Case:
    reg = LocalRegistry(tmp_path / "registry")
    src = tmp_path / "src"
    _skills(src)
    for name in ("alpha", "beta"):
        reg.publish(prepare_folder(src / name))

    def change() -> None:
        # A registry never changes a version: a newer one appears (resolution moves), and the old
        # pin's bytes are replaced behind its back by flipping a byte of its blob.
        rec = reg.resolve("alpha@1.0.0")
        blob = reg.root / "blobs" / "sha256" / rec.digest.split(":")[1]
        data = bytearray(blob.read_bytes())
        data[100] ^= 1
        blob.write_bytes(bytes(data))

    return Case(open_source("registry", opener=lambda url: Borrowed(reg)), SourceSpec("registry", str(reg.root), "latest"), change)


def _path_case(tmp_path: Path) -> Case:
    root = tmp_path / "project" / "skills"
    _skills(root)
    return Case(open_source("path", base=tmp_path / "project"), SourceSpec("path", "./skills"),
                lambda: (root / "alpha" / "SKILL.md").write_text((root / "alpha" / "SKILL.md").read_text() + "\nmore\n"))


def _git_case(tmp_path: Path) -> Case:
    from .git_servers import Repo, clean_env, skill_md

    repo = Repo(tmp_path / "skills.git")
    files = {"skills/alpha/SKILL.md": skill_md("alpha", version="1.0.0", body="# Alpha\n"),
             "skills/beta/SKILL.md": skill_md("beta", version="0.2.0")}
    repo.commit(files)

    def change() -> None:
        # History rewritten: main is a new commit with other files, the old one pruned away.
        repo.commit({**files, "skills/alpha/SKILL.md": skill_md("alpha", version="1.0.0", body="# Alpha, rewritten\n")})
        repo.prune()

    source = open_source("git", environ=clean_env(), cache_dir=tmp_path / "git-cache")
    # This machine's cache still holds the pinned commit — the pinned files, rightly served; a
    # teammate's machine has to ask the server, which no longer has it.
    return Case(source, SourceSpec("git", f"file://{repo.path}", "main", "skills"), change,
                lambda: open_source("git", environ=clean_env(), cache_dir=tmp_path / "elsewhere"))


CASES = {"registry": _registry_case, "path": _path_case, "git": _git_case}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return CASES[request.param](tmp_path)


def test_discover_finds_every_skill_with_its_pin(case: Case) -> None:
    pins = {p.name: p for p in case.source.discover(case.spec)}
    assert sorted(pins) == ["alpha", "beta"]
    assert (pins["alpha"].version, pins["beta"].version) == ("1.0.0", "0.2.0")
    for pin in pins.values():
        assert pin.spec.name == pin.name and pin.spec.kind == case.spec.kind
        assert pin.digest.startswith("sha256:") and pin.tar_digest.startswith("sha256:") and pin.size > 0
        assert pin.description


def test_resolve_names_one_skill_and_agrees_with_discover(case: Case) -> None:
    found = {p.name: p for p in case.source.discover(case.spec)}
    pin = case.source.resolve(dataclasses.replace(case.spec, name="beta"))
    assert (pin.name, pin.version, pin.tar_digest, pin.revision) == ("beta", "0.2.0", found["beta"].tar_digest, found["beta"].revision)


def test_an_unknown_name_is_one_line(case: Case) -> None:
    with pytest.raises((SourceError, NotFoundError)) as exc:
        case.source.resolve(dataclasses.replace(case.spec, name="gamma"))
    assert "gamma" in str(exc.value) and "\n" not in str(exc.value)


def test_fetch_gives_the_pinned_files_checked(case: Case) -> None:
    pin = case.source.resolve(dataclasses.replace(case.spec, name="alpha"))
    contents = case.source.fetch(pin)
    assert contents.name == "alpha" and "SKILL.md" in contents.files
    assert b"# Alpha" in contents.files["SKILL.md"]


def test_fetch_refuses_what_is_no_longer_the_pin(case: Case) -> None:
    pin = case.source.resolve(dataclasses.replace(case.spec, name="alpha"))
    case.change_alpha()
    with pytest.raises(SkillctlError) as exc:
        case.fresh().fetch(pin)
    assert isinstance(exc.value, (IntegrityError, SourceError)) and "\n" not in str(exc.value)
    assert "alpha" in str(exc.value)


def test_newest_is_a_pin_or_none(case: Case) -> None:
    newest = case.source.newest(dataclasses.replace(case.spec, name="alpha"))
    assert newest is None or newest.name == "alpha"
