"""skills.yaml → skills.lock against a real registry folder and real folders: parsing every
problem at once, pins kept while skills.yaml allows them, moves reported, the lock's format (and
the one before it), and a damaged lock refused."""

from __future__ import annotations

import dataclasses

import json
import os
from pathlib import Path

import pytest

from skillctl.errors import LockError, NotFoundError
from skillctl.fsutil import write_atomic
from skillctl.project.lock import read_lock
from skillctl.project.spec import load_project

from registry.helpers import write_skill
from .conftest import publish


def _yaml(folder: Path, text: str) -> Path:
    path = folder / "skills.yaml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- skills.yaml


def test_a_project_file_parses_ranges_and_sources(project: Path) -> None:
    proj = load_project(_yaml(project, (
        "registries:\n  team: https://skills.example.com\n"
        "skills:\n  alpha: ^1.0\n  beta: '0.3.0'\n  gamma:\n"
        "  delta: {registry: team, version: ~2.0}\n"
        "  eps: {git: https://github.com/o/r, ref: v4.0.0, path: skills/eps}\n"
        "  zeta: {path: ./skills/zeta}\n"
        "targets: [claude-code, codex]\nprereleases: true\n")))
    e = proj.entries
    assert (e["alpha"].kind, e["alpha"].version, e["gamma"].version) == ("registry", "^1.0", "latest")
    assert (e["delta"].registry, e["delta"].version) == ("team", "~2.0")
    assert (e["eps"].kind, e["eps"].git, e["eps"].ref, e["eps"].path) == ("git", "https://github.com/o/r", "v4.0.0", "skills/eps")
    assert (e["zeta"].kind, e["zeta"].path) == ("path", "./skills/zeta")
    assert proj.targets == ("claude-code", "codex") and proj.prereleases is True
    assert proj.registry_url("team") == "https://skills.example.com"
    assert load_project(_yaml(project, "")).entries == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("skills:\n  alpha: [^1\n", r"skills\.yaml:\d+:\d+: not valid YAML"),
        ("skills:\n  Alpha: ^1\n", "'Alpha' is not a skill name"),
        ("skills:\n  ../evil: ^1\n", "'../evil' is not a skill name"),
        ("skills:\n  alpha: 1.0\n", r"skills\.alpha: write the range as a quoted string, e\.g\. \"1\.0\""),
        ("skills:\n  alpha: 2\n", "write the range as a quoted string"),
        ("skills:\n  alpha: {min: 1}\n", "name one source"),
        ("skills:\n  alpha: ^banana\n", r"skills\.alpha: .*'banana' is not a version"),
        ("skill:\n  alpha: ^1\n", r"unknown key\(s\) skill; allowed: registries, skills"),
        ("skills:\n  alpha: ^1\nprerelease: true\n", r"unknown key\(s\) prerelease"),
        ("skills:\n  alpha: ^1\nprereleases: yes-please\n", "prereleases: must be true or false"),
        ("- alpha\n- beta\n", "expected a mapping with 'skills: {NAME: RANGE}'"),
        ("skills:\n  - alpha\n", "skills: must be a mapping"),
        ("skills:\n  alpha: {registry: nowhere}\n", r"skills\.alpha\.registry: no registry named 'nowhere'"),
        ("skills:\n  alpha: {git: https://x/y, branch: main}\n", r"unknown key\(s\) branch for a git entry"),
        ("skills:\n  alpha: {path: ''}\n", r"skills\.alpha\.path: must be a non-empty string"),
        ("skills:\n  alpha: {registry: https://x, path: ./a}\n", "name one source"),
        ("registries: [a]\nskills: {}\n", "registries: must be a mapping"),
        ("targets: 5\n", "targets: must be a list of agent names"),
    ],
)
def test_project_file_errors_are_one_line_naming_the_problem(project: Path, text: str, message: str) -> None:
    with pytest.raises(LockError, match=message) as exc:
        load_project(_yaml(project, text))
    assert "\n" not in str(exc.value) and "skills.yaml" in str(exc.value)


def test_every_problem_of_a_project_file_is_reported_at_once(project: Path) -> None:
    with pytest.raises(LockError) as exc:
        load_project(_yaml(project, "skills:\n  Alpha: ^1\n  beta: 2\nprereleases: maybe\ntargets: 5\n"))
    text = str(exc.value)
    assert all(part in text for part in ("'Alpha' is not a skill name", "skills.beta", "prereleases:", "targets:"))


def test_bad_yaml_names_the_line(project: Path) -> None:
    with pytest.raises(LockError, match=r"skills\.yaml:3:\d+: not valid YAML"):
        load_project(_yaml(project, "skills:\n  alpha: ^1\n   beta: ^2\n"))


def test_missing_project_file(project: Path) -> None:
    with pytest.raises(LockError, match="skills.yaml not found; declare skills there"):
        load_project(project / "skills.yaml")


# ------------------------------------------------------------------------------ lock


def test_lock_resolves_ranges_to_exact_versions_digests_and_sources(reg, published, lock_of, project) -> None:
    lock = lock_of("skills:\n  alpha: ^1\n  beta: ~0.3\n")
    by_name = lock.by_name()
    assert by_name["alpha"].version == "1.1.0" and by_name["beta"].version == "0.3.0"
    assert by_name["alpha"].digest == reg.resolve("alpha@1.1.0").digest
    assert by_name["alpha"].id == reg.get_skill("alpha").id
    doc = json.loads((project / "skills.lock").read_text())
    assert doc["lockfile_version"] == 2
    assert doc["skills"]["alpha"] == {
        "source": {"kind": "registry", "registry": "default", "url": str(reg.root)},
        "id": by_name["alpha"].id,
        "version": "1.1.0",
        "requested": "^1",
        "digest": by_name["alpha"].digest,
        "tar_digest": by_name["alpha"].tar_digest,
        "size": by_name["alpha"].size,
    }
    # stable bytes: locking again gives the same file
    before = (project / "skills.lock").read_bytes()
    lock_of()
    assert (project / "skills.lock").read_bytes() == before
    # locking marks the versions as depended upon: they can no longer be removed
    with pytest.raises(Exception, match="yank it instead"):
        reg.remove("alpha@1.1.0")


def test_lock_keeps_the_pins_skills_yaml_still_allows(reg, src, published, lock_of, workspace, project) -> None:
    lock_of("skills:\n  alpha: ^1\n  beta: ^0.3\n")
    publish(reg, src, "alpha", "1.2.0")
    publish(reg, src, "beta", "0.3.5")
    with workspace() as ws:
        lock, moves = ws.lock()
    assert moves == [] and lock.by_name()["alpha"].version == "1.1.0"  # unchanged file: nothing moves
    # a range that no longer allows the pin moves it — and only it
    (project / "skills.yaml").write_text("skills:\n  alpha: ^1.2\n  beta: ^0.3\n")
    with workspace() as ws:
        lock, moves = ws.lock()
    assert [m.line() for m in moves] == ["alpha 1.1.0 -> 1.2.0"] and lock.by_name()["beta"].version == "0.3.0"
    # update one, then all
    with workspace() as ws:
        lock, moves = ws.lock(upgrade={"beta"})
    assert [m.line() for m in moves] == ["beta 0.3.0 -> 0.3.5"]
    publish(reg, src, "alpha", "1.3.0")
    with workspace() as ws:
        lock, moves = ws.lock(upgrade=True)
    assert [m.line() for m in moves] == ["alpha 1.2.0 -> 1.3.0"]
    with workspace() as ws, pytest.raises(Exception, match="no skill named gamma"):
        ws.lock(upgrade={"gamma"})


def test_lock_reports_added_and_removed_skills(reg, published, lock_of, workspace, project) -> None:
    lock_of("skills:\n  alpha: ^1\n")
    (project / "skills.yaml").write_text("skills:\n  beta: ^0.3\n")
    with workspace() as ws:
        _, moves = ws.lock()
    assert [m.line() for m in moves] == ["removed alpha@1.1.0", "added beta@0.3.0"]


def test_a_lock_of_the_previous_format_is_read_and_its_pins_kept(reg, src, published, lock_of, workspace, project) -> None:
    lock_of("skills:\n  alpha: ^1\n")
    doc = json.loads((project / "skills.lock").read_text())
    doc["lockfile_version"] = 1
    for skill in doc["skills"].values():
        del skill["source"]
    (project / "skills.lock").write_text(json.dumps(doc))
    old = read_lock(project / "skills.lock")
    assert old.format == 1 and old.skills[0].source == {"kind": "registry", "registry": "default", "url": ""}
    publish(reg, src, "alpha", "1.5.0")
    with workspace() as ws:
        lock, moves = ws.lock()
    assert moves == [] and lock.by_name()["alpha"].version == "1.1.0"  # kept, though 1.5.0 is newer
    assert json.loads((project / "skills.lock").read_text())["lockfile_version"] == 2


def test_lock_honours_prereleases(reg, published, lock_of) -> None:
    assert lock_of("skills:\n  beta: ^0.3\n").skills[0].version == "0.3.0"
    # 0.3.0 still satisfies the new entry, so it stays pinned until asked to move
    assert lock_of("skills:\n  beta: '>=0.3'\nprereleases: true\n").skills[0].version == "0.3.0"
    assert lock_of(upgrade=True).skills[0].version == "0.4.0-rc.1"


def test_lock_fails_on_an_unknown_skill_or_unsatisfiable_range_and_writes_nothing(reg, published, lock_of, project) -> None:
    with pytest.raises(NotFoundError, match="no skill 'gamma'"):
        lock_of("skills:\n  gamma: ^1\n")
    with pytest.raises(NotFoundError, match="no version of alpha matches '\\^3'"):
        lock_of("skills:\n  alpha: ^3\n")
    assert not (project / "skills.lock").exists()


def test_lock_file_round_trip_and_staleness(reg, published, lock_of, project) -> None:
    lock = lock_of("skills:\n  alpha: ^1\n")
    back = read_lock(project / "skills.lock")
    assert back == lock
    ignoring = dataclasses.replace(lock, ignore_requires_python=("alpha",))
    (project / "skills.lock").write_text(ignoring.to_json())
    assert read_lock(project / "skills.lock") == ignoring
    (project / "skills.lock").write_text(lock.to_json())
    assert "ignore_requires_python" not in lock.to_json()

    def stale(text: str) -> bool:
        return back.is_stale(load_project(_yaml(project, text)).requirements_doc())

    assert not stale("skills:\n  alpha: ^1\n")
    assert stale("skills:\n  alpha: ^2\n")
    assert stale("skills:\n  alpha: ^1\nprereleases: true\n")
    assert stale("skills:\n  alpha: ^1\n  beta: ^0.3\n")
    assert stale("registries: {default: /elsewhere}\nskills:\n  alpha: ^1\n")
    # reordering or reformatting skills.yaml is not a change; neither are targets
    assert not stale("# comment\nskills: {alpha: '^1'}\ntargets: [codex]\n")


def test_a_folder_skill_is_locked_by_its_files_and_relocked_when_they_change(project, lock_of, workspace) -> None:
    write_skill(project / "skills", "helper", "0.2.0")
    lock = lock_of("skills:\n  helper: {path: ./skills/helper}\n")
    helper = lock.by_name()["helper"]
    assert helper.source == {"kind": "path", "path": "./skills/helper"} and helper.version == "0.2.0"
    assert helper.tar_digest.startswith("sha256:") and helper.revision == ""
    (project / "skills" / "helper" / "notes.md").write_text("new\n")
    with workspace() as ws:
        lock, moves = ws.lock()
    assert len(moves) == 1 and moves[0].line().startswith("helper 0.2.0 (")
    assert lock.by_name()["helper"].tar_digest != helper.tar_digest


def test_lock_file_is_readable_by_everyone_who_can_read_the_project(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "skills.lock", "{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "skills.lock").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".skills.lock")] == []


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: "{not json", "is unreadable or not JSON"),
        (lambda d: {**d, "lockfile_version": 7}, "lockfile_version 7 is not supported"),
        (lambda d: {k: v for k, v in d.items() if k != "skills"}, "skills must be an object"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "digest": 5}}}, r"skills\.alpha\.digest is missing or not a string"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "version": "^1"}}}, r"skills\.alpha\.version '\^1' is not an exact version"),
        (lambda d: {**d, "skills": {"../x": d["skills"]["alpha"]}}, "'../x' is not a skill name"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "source": {"kind": "ftp"}}}}, "source.kind 'ftp'"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "source": {"kind": "git", "url": "x", "ref": ""},
                                              "commit": "abc"}}}, "is not a full commit id"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "size": "big"}}}, r"skills\.alpha\.size is not a size"),
        (lambda d: [], "not a JSON object"),
        (lambda d: {**d, "ignore_requires_python": "alpha"}, "ignore_requires_python must be a list of skill names"),
        (lambda d: {**d, "ignore_requires_python": ["../x"]}, "ignore_requires_python must be a list of skill names"),
    ],
)
def test_a_damaged_lock_is_refused(reg, published, lock_of, project, mutate, message: str) -> None:
    lock_of("skills:\n  alpha: ^1\n")
    doc = mutate(json.loads((project / "skills.lock").read_text()))
    (project / "skills.lock").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(LockError, match=message) as exc:
        read_lock(project / "skills.lock")
    assert "\n" not in str(exc.value)


def test_missing_lock(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="skills.lock not found; create it with: skillctl lock"):
        read_lock(tmp_path / "skills.lock")
