"""skills.yaml → skills.lock → install, against a real registry folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillctl.errors import IntegrityError, LockError, NotFoundError
from skillctl.registry.local import LocalRegistry
from skillctl.registry.lockfile import Lock, install, load_requirements, read_lock, resolve_lock, write_atomic
from skillctl.registry.prepare import prepare_folder

from .helpers import flip_byte, tree, write_skill


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "skills.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def published(reg: LocalRegistry, src: Path) -> dict[str, Path]:
    """alpha 1.0.0, 1.1.0, 2.0.0 and beta 0.3.0, 0.4.0-rc.1; returns the source folders by name@version."""
    out = {}
    for name, version in (("alpha", "1.0.0"), ("alpha", "1.1.0"), ("alpha", "2.0.0"), ("beta", "0.3.0"), ("beta", "0.4.0-rc.1")):
        folder = write_skill(src / f"{name}-{version}", name, version, files={
            "scripts/run.sh": (f"#!/bin/sh\necho {name} {version}\n", 0o755),
            "references/doc.md": f"{name} {version}\n",
        })
        reg.publish(prepare_folder(folder))
        out[f"{name}@{version}"] = folder
    return out


# ---------------------------------------------------------------------------- skills.yaml


def test_requirements_parse(tmp_path: Path) -> None:
    req = load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1.0\n  beta: '0.3.0'\n  gamma:\nprereleases: true\n"))
    assert req.skills == {"alpha": "^1.0", "beta": "0.3.0", "gamma": "latest"}
    assert req.prereleases is True
    assert load_requirements(_yaml(tmp_path, "")).skills == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("skills:\n  alpha: [^1\n", r"skills\.yaml:\d+:\d+: not valid YAML"),
        ("skills:\n  Alpha: ^1\n", "'Alpha' is not a skill name"),
        ("skills:\n  ../evil: ^1\n", "'../evil' is not a skill name"),
        ("skills:\n  alpha: 1.0\n", r"skills\.alpha: write the range as a quoted string, e\.g\. \"1\.0\""),
        ("skills:\n  alpha: 2\n", "write the range as a quoted string"),
        ("skills:\n  alpha: {min: 1}\n", "write the range as a quoted string"),
        ("skills:\n  alpha: ^banana\n", r"skills\.alpha: .*'banana' is not a version"),
        ("skill:\n  alpha: ^1\n", r"unknown key\(s\) skill; allowed: skills, prereleases"),
        ("skills:\n  alpha: ^1\nprerelease: true\n", r"unknown key\(s\) prerelease"),
        ("skills:\n  alpha: ^1\nprereleases: yes-please\n", "prereleases must be true or false"),
        ("- alpha\n- beta\n", "expected a mapping with 'skills: {NAME: RANGE}'"),
        ("skills:\n  - alpha\n", "expected a mapping"),
    ],
)
def test_requirements_errors_are_one_line_naming_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(LockError, match=message) as exc:
        load_requirements(_yaml(tmp_path, text))
    assert "\n" not in str(exc.value) and "skills.yaml" in str(exc.value)


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(LockError, match=r"skills\.yaml:3:\d+: not valid YAML"):
        load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n   beta: ^2\n"))


def test_missing_requirements_file(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="skills.yaml not found; declare skills there"):
        load_requirements(tmp_path / "skills.yaml")


# ------------------------------------------------------------------------------ lock


def test_lock_resolves_ranges_to_exact_versions_and_digests(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    req = load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n  beta: ~0.3\n"))
    lock = resolve_lock(req, reg)
    by_name = {s.name: s for s in lock.skills}
    assert by_name["alpha"].version == "1.1.0" and by_name["beta"].version == "0.3.0"
    assert by_name["alpha"].digest == reg.resolve("alpha@1.1.0").digest
    assert by_name["alpha"].id == reg.get_skill("alpha").id
    doc = json.loads(lock.to_json())
    assert doc["lockfile_version"] == 1
    assert doc["skills"]["alpha"] == {
        "id": by_name["alpha"].id,
        "version": "1.1.0",
        "requested": "^1",
        "digest": by_name["alpha"].digest,
        "tar_digest": by_name["alpha"].tar_digest,
        "size": by_name["alpha"].size,
    }
    # stable bytes: resolving again gives the same file
    assert resolve_lock(req, reg).to_json() == lock.to_json()
    # locking marks the versions as depended upon: they can no longer be removed
    with pytest.raises(Exception, match="yank it instead"):
        reg.remove("alpha@1.1.0")


def test_lock_honours_prereleases(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    assert resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  beta: ^0.3\n")), reg).skills[0].version == "0.3.0"
    pre = resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  beta: '>=0.3'\nprereleases: true\n")), reg)
    assert pre.skills[0].version == "0.4.0-rc.1"


def test_lock_fails_on_an_unknown_skill_or_unsatisfiable_range(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no skill 'gamma'"):
        resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  gamma: ^1\n")), reg)
    with pytest.raises(NotFoundError, match="no version of alpha matches '\\^3'"):
        resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^3\n")), reg)


def test_lock_file_round_trip_and_staleness(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    req = load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n"))
    lock = resolve_lock(req, reg)
    write_atomic(tmp_path / "skills.lock", lock.to_json())
    back = read_lock(tmp_path / "skills.lock")
    assert back == lock
    assert not back.is_stale(req)
    assert back.is_stale(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^2\n")))
    assert back.is_stale(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\nprereleases: true\n")))
    assert back.is_stale(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n  beta: ^0.3\n")))
    # reordering or reformatting skills.yaml is not a change
    assert not back.is_stale(load_requirements(_yaml(tmp_path, "# comment\nskills: {alpha: '^1'}\n")))


def test_lock_file_is_readable_by_everyone_who_can_read_the_project(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n")), reg)
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "skills.lock", lock.to_json())
    finally:
        os.umask(old)
    assert (tmp_path / "skills.lock").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".skills.lock")] == []


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: "{not json", "unreadable or not JSON"),
        (lambda d: {**d, "lockfile_version": 7}, "lockfile_version 7 is not supported"),
        (lambda d: {k: v for k, v in d.items() if k != "skills"}, "is malformed"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "digest": 5}}}, r"skills\.alpha\.digest is missing or not a string"),
        (lambda d: {**d, "skills": {"alpha": {**d["skills"]["alpha"], "version": "^1"}}}, r"skills\.alpha\.version '\^1' is not an exact version"),
        (lambda d: {**d, "skills": {"../x": d["skills"]["alpha"]}}, "'../x' is not a skill name"),
        (lambda d: [], "is malformed"),
    ],
)
def test_a_damaged_lock_is_refused(reg: LocalRegistry, published: dict, tmp_path: Path, mutate, message: str) -> None:
    lock = resolve_lock(load_requirements(_yaml(tmp_path, "skills:\n  alpha: ^1\n")), reg)
    doc = mutate(json.loads(lock.to_json()))
    (tmp_path / "skills.lock").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(LockError, match=message) as exc:
        read_lock(tmp_path / "skills.lock")
    assert "\n" not in str(exc.value)


def test_missing_lock(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="skills.lock not found; create it with: skillctl lock"):
        read_lock(tmp_path / "skills.lock")


# ----------------------------------------------------------------------------- install


def _lock(reg: LocalRegistry, tmp_path: Path, text: str = "skills:\n  alpha: ^1\n  beta: ^0.3\n") -> Lock:
    return resolve_lock(load_requirements(_yaml(tmp_path, text)), reg)


def test_install_round_trip(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path)
    dest = tmp_path / "project" / ".agents" / "skills"
    folders = install(lock, reg, dest)
    assert [f.name for f in folders] == ["alpha", "beta"]
    assert tree(dest / "alpha") == tree(published["alpha@1.1.0"])
    assert tree(dest / "beta") == tree(published["beta@0.3.0"])
    assert tree(dest / "alpha")["scripts/run.sh"][1] == 0o755


def test_install_is_idempotent_and_restores_local_edits(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path)
    dest = tmp_path / "skills"
    install(lock, reg, dest)
    first = tree(dest)
    install(lock, reg, dest)
    assert tree(dest) == first
    (dest / "alpha" / "references" / "doc.md").write_text("edited by hand\n")
    (dest / "alpha" / "extra.txt").write_text("not in the bundle\n")
    install(lock, reg, dest)
    assert tree(dest) == first
    assert sorted(p.name for p in dest.iterdir()) == ["alpha", "beta"]  # no temp folders left


def test_install_refuses_a_digest_that_differs_from_the_lock_and_writes_nothing(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path)
    doc = json.loads(lock.to_json())
    doc["skills"]["beta"]["digest"] = "sha256:" + "0" * 64
    (tmp_path / "skills.lock").write_text(json.dumps(doc))
    edited = read_lock(tmp_path / "skills.lock")
    dest = tmp_path / "skills"
    with pytest.raises(IntegrityError, match=r"beta@0\.3\.0: the registry now serves sha256:.*skills\.lock pins sha256:0000"):
        install(edited, reg, dest)
    assert not dest.exists()  # not even alpha, which sorts first and was fine


def test_install_refuses_a_tampered_blob_and_writes_nothing(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path)
    beta = next(s for s in lock.skills if s.name == "beta")
    flip_byte(reg.root / "blobs" / "sha256" / beta.digest.split(":")[1])
    dest = tmp_path / "skills"
    with pytest.raises(IntegrityError, match="corrupt"):
        install(lock, reg, dest)
    assert not dest.exists()


def test_install_into_an_existing_folder_keeps_it_untouched_on_failure(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path)
    dest = tmp_path / "skills"
    install(lock, reg, dest)
    before = tree(dest)
    alpha = next(s for s in lock.skills if s.name == "alpha")
    (reg.root / "blobs" / "sha256" / alpha.digest.split(":")[1]).unlink()
    (dest / "beta" / "references" / "doc.md").write_text("local edit\n")
    edited = tree(dest)
    with pytest.raises(IntegrityError, match="missing"):
        install(lock, reg, dest)
    assert tree(dest) == edited != before  # beta was not "restored" either: nothing was written


def test_install_follows_the_lock_not_the_newest_version(reg: LocalRegistry, published: dict, src: Path, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path, "skills:\n  alpha: ^1\n")
    newer = write_skill(src / "alpha-1.9.0", "alpha", "1.9.0")
    reg.publish(prepare_folder(newer))
    dest = tmp_path / "skills"
    install(lock, reg, dest)
    assert tree(dest / "alpha") == tree(published["alpha@1.1.0"])


def test_install_of_a_yanked_locked_version_still_works(reg: LocalRegistry, published: dict, tmp_path: Path) -> None:
    lock = _lock(reg, tmp_path, "skills:\n  alpha: ^1\n")
    reg.set_yanked("alpha@1.1.0", True, "bad")
    install(lock, reg, tmp_path / "skills")
    assert (tmp_path / "skills" / "alpha" / "SKILL.md").exists()
