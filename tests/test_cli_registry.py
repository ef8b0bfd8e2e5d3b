"""The package-manager commands end to end through click: pack, inspect, publish, list, show,
versions, pull, yank, unyank, remove, registry verify|gc, lock, install.

Every test runs in its own folder with its own registry (SKILLCTL_REGISTRY), HOME and data dir,
so nothing can leak into the user's default registry (``registry_cli.isolated``)."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from registry.helpers import flip_byte, tree, write_skill
from registry_cli import as_json, error_line, isolated, run, sha256_file  # noqa: F401 - isolated: autouse fixture

from skillctl.project.marker import MARKER
from skillctl.cli import cli

REPO_SKILLS = Path(__file__).resolve().parent.parent / "skills"


# ------------------------------------------------------------------------------------ pack


def test_pack_writes_name_version_bundle_whose_digest_is_printed_and_published(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.2.0")
    out = as_json(run("pack", folder, "-o", "dist", "--format", "json"))
    assert set(out) >= {"name", "version", "path", "digest", "size", "files"}
    bundle = Path(out["path"])
    assert bundle == Path("dist") / "demo-1.2.0.skill.tgz" and bundle.is_file()
    assert out["digest"] == sha256_file(bundle) and out["size"] == bundle.stat().st_size
    assert out["files"] == 2 and out["tar_digest"].startswith("sha256:")
    text = run("pack", folder, "-o", "dist2").stdout
    assert out["digest"] in text and out["tar_digest"] in text
    published = as_json(run("publish", bundle, "--format", "json"))
    assert published[0]["digest"] == out["digest"] and published[0]["status"] == "published"
    # publishing the folder packs the same bytes: unchanged
    assert as_json(run("publish", folder, "--format", "json"))[0]["status"] == "unchanged"


def _copy_shuffled(src: Path, dest: Path, seed: int) -> None:
    """Copy ``src`` file by file in a random order, with random mtimes and another umask."""
    rng = random.Random(seed)
    files = [p for p in src.rglob("*") if p.is_file()]
    rng.shuffle(files)
    old = os.umask(rng.choice([0o002, 0o022, 0o077]))
    try:
        for f in files:
            target = dest / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.read_bytes())
            os.chmod(target, (0o755 if os.access(f, os.X_OK) else 0o644) & ~rng.choice([0, 0o022, 0o077]))
            t = rng.randint(0, 2_000_000_000)
            os.utime(target, (t, t))
    finally:
        os.umask(old)


def test_pack_is_byte_reproducible_across_copies(isolated: Path) -> None:
    a, b = isolated / "a" / "tally", isolated / "b" / "tally"
    _copy_shuffled(REPO_SKILLS / "tally", a, 1)
    _copy_shuffled(REPO_SKILLS / "tally", b, 2)
    ja = as_json(run("pack", a, "-o", "out-a", "--format", "json"))
    jb = as_json(run("pack", b, "-o", "out-b", "--format", "json"))
    assert ja["digest"] == jb["digest"] and ja["tar_digest"] == jb["tar_digest"]
    assert Path(ja["path"]).read_bytes() == Path(jb["path"]).read_bytes()


def test_pack_of_a_folder_of_skills_packs_each(isolated: Path) -> None:
    out = as_json(run("pack", REPO_SKILLS, "-o", "dist", "--format", "json"))
    assert sorted(e["name"] for e in out) == sorted(p.name for p in REPO_SKILLS.iterdir() if (p / "SKILL.md").exists())
    for e in out:
        assert Path(e["path"]).name == f"{e['name']}-{e['version']}.skill.tgz"


def test_pack_refuses_an_invalid_skill_showing_every_diagnostic(isolated: Path) -> None:
    bad = isolated / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad_Name\n---\nbody\n")
    r = run("pack", bad, "-o", "dist", ok=False)
    assert "SK111" in r.stderr and "SK104" in r.stderr and "SK107" in r.stderr  # all of them, located
    assert "bad/SKILL.md:2:" in r.stderr
    assert "could not be packed" in r.stderr
    assert not (isolated / "dist").exists()


def test_pack_without_a_version_asks_for_one(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", None)
    r = run("pack", folder, "-o", "dist", ok=False)
    assert "no version; add metadata.version" in r.stderr
    assert as_json(run("pack", folder, "-o", "dist", "--version", "0.2.0", "--format", "json"))["version"] == "0.2.0"


# --------------------------------------------------------------------------------- inspect


def test_inspect_a_good_bundle(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    packed = as_json(run("pack", folder, "-o", "dist", "--format", "json"))
    info = as_json(run("inspect", packed["path"], "--format", "json"))
    assert info["name"] == "demo" and info["version"] == "1.0.0"
    assert info["digest"] == packed["digest"] and info["files"] == ["SKILL.md", "scripts/run.sh"]
    assert "demo 1.0.0" in run("inspect", packed["path"]).stdout


def _hostile(path: Path, members: list[tuple[str, bytes]], *, symlink: tuple[str, str] | None = None) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink:
            info = tarfile.TarInfo(symlink[0])
            info.type = tarfile.SYMTYPE
            info.linkname = symlink[1]
            tar.addfile(info)
    path.write_bytes(buf.getvalue())
    return path


SKILL_MD = b"---\nname: demo\ndescription: A demo.\nmetadata:\n  version: 1.0.0\n---\nbody\n"


@pytest.mark.parametrize(
    "members, symlink, named",
    [
        ([("demo/SKILL.md", SKILL_MD), ("demo/../../escape.txt", b"x")], None, "escape.txt"),
        ([("demo/SKILL.md", SKILL_MD), ("/etc/cron.d/evil", b"x")], None, "/etc/cron.d/evil"),
        ([("demo/SKILL.md", SKILL_MD)], ("demo/link", "/etc/passwd"), "demo/link"),
        ([("demo/SKILL.md", SKILL_MD), ("other/SKILL.md", SKILL_MD)], None, "other"),
    ],
)
def test_inspect_refuses_a_hostile_bundle_in_one_line(isolated: Path, members, symlink, named: str) -> None:
    bad = _hostile(isolated / "demo-1.0.0.skill.tgz", members, symlink=symlink)
    r = run("inspect", bad, ok=False)
    assert named in error_line(r)
    assert sorted(p.name for p in isolated.iterdir()) == ["demo-1.0.0.skill.tgz"]


def test_publish_and_pull_never_write_a_hostile_bundle(isolated: Path) -> None:
    bad = _hostile(isolated / "demo-1.0.0.skill.tgz", [("demo/SKILL.md", SKILL_MD), ("demo/../../escape.txt", b"x")])
    r = run("publish", bad, ok=False)
    assert "escape.txt" in error_line(r)
    assert not (isolated.parent / "escape.txt").exists()
    assert not (isolated / "registry").exists()  # refused before a registry was even made


# --------------------------------------------------------------------- publish and friends


def test_publish_a_repository_of_skills_then_only_what_changed(isolated: Path) -> None:
    shutil.copytree(REPO_SKILLS, isolated / "skills")
    first = as_json(run("publish", "skills", "--format", "json"))
    assert {e["status"] for e in first} == {"published"} and len(first) >= 4
    tally = isolated / "skills" / "tally"
    run("version", tally, "patch")
    second = {e["name"]: e["status"] for e in as_json(run("publish", "skills", "--format", "json"))}
    assert second.pop("tally") == "published"
    assert set(second.values()) == {"unchanged"}
    assert [v["version"] for v in as_json(run("versions", "tally", "--format", "json"))] == ["1.0.1", "1.0.0"]


def test_publish_refuses_other_content_under_a_published_version(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    run("publish", folder)
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho changed\n")
    r = run("publish", folder, ok=False)
    line = error_line(r)
    assert "demo@1.0.0 is already published with other content" in line and "skillctl version PATH patch" in line


def test_publish_of_several_inputs_reports_each_failure_and_publishes_the_rest(isolated: Path) -> None:
    good = write_skill(isolated / "src", "good", "1.0.0")
    nover = write_skill(isolated / "src", "nover", None)
    r = run("publish", good, nover, "--format", "json", ok=False)
    assert [(e["status"], e.get("name")) for e in as_json(r)] == [("published", "good"), ("failed", None)]
    assert "nover" in r.stderr and "1 of 2 could not be published" in r.stderr


def test_list_show_versions_json_field_names(isolated: Path) -> None:
    for v in ("1.0.0", "1.1.0", "2.0.0-rc.1"):
        run("publish", write_skill(isolated / f"src-{v}", "demo", v))
    (skill,) = as_json(run("list", "--format", "json"))
    assert {"id", "object", "name", "description", "created_at", "default_version", "latest_version"} <= set(skill)
    assert (skill["object"], skill["default_version"], skill["latest_version"]) == ("skill", "1.1.0", "2.0.0-rc.1")
    shown = as_json(run("show", "demo", "--format", "json"))
    assert shown["id"] == skill["id"] and shown["resolved"]["version"] == "1.1.0"
    assert shown["resolved"]["object"] == "skill.version" and shown["resolved"]["skill_id"] == skill["id"]
    assert as_json(run("show", "demo", "--pre", "--format", "json"))["resolved"]["version"] == "2.0.0-rc.1"
    assert as_json(run("show", f"{skill['id']}@1.0.0", "--format", "json"))["resolved"]["version"] == "1.0.0"
    versions = as_json(run("versions", "demo", "--format", "json"))
    assert [v["version"] for v in versions] == ["2.0.0-rc.1", "1.1.0", "1.0.0"]
    assert all({"object", "skill_id", "name", "version", "description", "created_at"} <= set(v) for v in versions)
    text = run("show", "demo").stdout
    assert "demo@1.1.0" in text and skill["id"] in text


@pytest.mark.parametrize(
    "args, message",
    [
        (("show", "nope"), "no skill 'nope'"),
        (("show", "demo@^9"), "no version of demo matches '^9'"),
        (("show", "demo@banana"), "'banana' is not a version"),
        (("versions", "nope"), "no skill 'nope'"),
        (("pull", "demo@2.0.0", "-o", "out"), "demo@2.0.0 is not published"),
        (("yank", "demo"), "yank needs an exact version"),
        (("unyank", "demo@^1"), "unyank needs an exact version"),
        (("registry", "remove", "demo@1", "--yes"), "registry remove needs an exact version"),
    ],
)
def test_failures_are_one_line_and_exit_1(isolated: Path, args: tuple[str, ...], message: str) -> None:
    run("publish", write_skill(isolated / "src", "demo", "1.0.0"))
    r = run(*args, ok=False)
    assert message in error_line(r)
    assert not (isolated / "out").exists()


def test_pull_round_trip(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0", files={"scripts/run.sh": ("#!/bin/sh\n", 0o755), "a/b/c.txt": "deep\n"})
    run("publish", folder)
    out = as_json(run("pull", "demo@^1", "-o", "vendor", "--format", "json"))
    assert out["path"] == str(Path("vendor") / "demo") and out["version"] == "1.0.0"
    assert tree(isolated / "vendor" / "demo") == tree(folder)
    # again: same content is fine; other content needs --force
    run("pull", "demo", "-o", "vendor")
    (isolated / "vendor" / "demo" / "a" / "b" / "c.txt").write_text("edited\n")
    assert "already exists" in error_line(run("pull", "demo", "-o", "vendor", ok=False))
    run("pull", "demo", "-o", "vendor", "--force")
    assert tree(isolated / "vendor" / "demo") == tree(folder)


def test_pull_of_a_tampered_blob_fails_and_writes_nothing_and_verify_names_it(isolated: Path) -> None:
    rec = as_json(run("publish", write_skill(isolated / "src", "demo", "1.0.0"), "--format", "json"))[0]
    flip_byte(isolated / "registry" / "blobs" / "sha256" / rec["digest"].split(":")[1])
    line = error_line(run("pull", "demo", "-o", "vendor", ok=False))
    assert "corrupt" in line and rec["digest"] in line
    assert not (isolated / "vendor").exists()
    report = as_json(run("registry", "verify", "--format", "json", ok=False))
    assert report["ok"] is False
    assert [(p["severity"], p["kind"]) for p in report["problems"]] == [("error", "corrupt")]
    assert "demo@1.0.0" in report["problems"][0]["message"]
    assert "FAILED: 1 error, 0 warnings" in run("registry", "verify", ok=False).stdout


def test_yank_unyank_via_cli(isolated: Path) -> None:
    for v in ("1.0.0", "1.1.0"):
        run("publish", write_skill(isolated / f"src-{v}", "demo", v))
    y = as_json(run("yank", "demo@1.1.0", "--reason", "bad build", "--format", "json"))
    assert y["yanked"] is True and y["yank_reason"] == "bad build"
    assert as_json(run("show", "demo", "--format", "json"))["resolved"]["version"] == "1.0.0"
    assert as_json(run("pull", "demo@1.1.0", "-o", "v", "--format", "json"))["version"] == "1.1.0"
    assert "yanked: bad build" in run("versions", "demo").stdout
    assert as_json(run("unyank", "demo@1.1.0", "--format", "json"))["yanked"] is False
    assert as_json(run("show", "demo", "--format", "json"))["resolved"]["version"] == "1.1.0"


def test_remove_only_while_never_fetched(isolated: Path) -> None:
    for v in ("1.0.0", "1.1.0"):
        run("publish", write_skill(isolated / f"src-{v}", "demo", v))
    assert as_json(run("registry", "remove", "demo@1.1.0", "--yes", "--format", "json"))["version"] == "1.1.0"
    run("pull", "demo@1.0.0", "-o", "v")
    assert "yank it instead" in error_line(run("registry", "remove", "demo@1.0.0", "--yes", ok=False))
    # without --yes and without a terminal to ask on: one line naming --yes, nothing removed
    r = CliRunner().invoke(cli, ["registry", "remove", "demo@1.0.0"], input="y\n")
    assert r.exit_code == 2 and "pass --yes" in r.output and "Aborted" not in r.output
    # a version that is not there is said before anything is asked
    r = CliRunner().invoke(cli, ["registry", "remove", "demo@9.9.9"])
    assert r.exit_code == 1 and "9.9.9" in r.output and "pass --yes" not in r.output
    assert [v["version"] for v in as_json(run("versions", "demo", "--format", "json"))] == ["1.0.0"]
    # the project command of that name points to the registry's
    r = CliRunner().invoke(cli, ["remove", "demo@1.0.0"])
    assert r.exit_code == 2 and "skillctl registry remove demo@1.0.0" in r.output


def test_registry_verify_clean_and_gc(isolated: Path) -> None:
    run("publish", write_skill(isolated / "a", "demo", "1.0.0"))
    run("publish", write_skill(isolated / "b", "demo", "1.1.0"))
    assert as_json(run("registry", "verify", "--format", "json")) == {"registry": str(isolated / "registry"), "ok": True, "problems": []}
    run("registry", "remove", "demo@1.1.0", "--yes")
    verify = as_json(run("registry", "verify", "--format", "json"))
    assert verify["ok"] is True and [p["kind"] for p in verify["problems"]] == ["orphan"]
    assert as_json(run("registry", "gc", "--format", "json"))["removed"] == []  # within the grace period
    dry = as_json(run("registry", "gc", "--grace", "0", "--dry-run", "--format", "json"))
    assert len(dry["removed"]) == 1 and dry["dry_run"] is True
    assert as_json(run("registry", "gc", "--grace", "0", "--format", "json"))["removed"] == dry["removed"]
    assert as_json(run("registry", "verify", "--format", "json"))["problems"] == []


def test_registry_admin_needs_an_existing_registry(isolated: Path) -> None:
    assert "no registry at" in error_line(run("registry", "verify", "--registry", isolated / "absent", ok=False))
    assert "no registry at" in error_line(run("registry", "gc", "--registry", isolated / "absent", ok=False))
    assert not (isolated / "absent").exists()


def test_registry_option_and_env_choose_the_registry(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    run("publish", folder)  # SKILLCTL_REGISTRY
    assert (isolated / "registry" / "registry.json").exists()
    run("publish", folder, "--registry", isolated / "other")
    assert [s["name"] for s in as_json(run("list", "--registry", isolated / "other", "--format", "json"))] == ["demo"]
    assert [s["name"] for s in as_json(run("list", "--format", "json"))] == ["demo"]
    assert not (isolated / "home").exists()  # the default registry was never touched
    r = run("list", "--registry", isolated / "src", ok=False)
    assert "is not a skillctl registry" in error_line(r)


# ------------------------------------------------------------------------ lock and install


def _project(isolated: Path, requirements: str) -> None:
    for name, v in (("alpha", "1.0.0"), ("alpha", "1.1.0"), ("beta", "0.3.0")):
        run("publish", write_skill(isolated / f"src-{name}-{v}", name, v))
    (isolated / "skills.yaml").write_text(requirements)


def skill_tree(folder: Path) -> dict:
    """An installed skill's files, without the marker install adds."""
    return {rel: v for rel, v in tree(folder).items() if rel != MARKER}


def test_lock_then_frozen_install(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^1\n  beta: ~0.3\n")
    locked = as_json(run("lock", "--format", "json"))
    assert [(s["name"], s["version"]) for s in locked["skills"]] == [("alpha", "1.1.0"), ("beta", "0.3.0")]
    before = (isolated / "skills.lock").read_bytes()
    installed = as_json(run("install", "--frozen", "-o", "vendor", "--format", "json"))
    assert [(i["name"], i["version"]) for i in installed] == [("alpha", "1.1.0"), ("beta", "0.3.0")]
    assert skill_tree(isolated / "vendor" / "alpha") == tree(isolated / "src-alpha-1.1.0" / "alpha")
    assert (isolated / "vendor" / "alpha" / MARKER).is_file()  # what sync and remove recognise as theirs
    assert (isolated / "skills.lock").read_bytes() == before  # --frozen never rewrites the lock
    run("install", "--frozen", "-o", "vendor")  # idempotent
    # a new release does not change a frozen install
    run("publish", write_skill(isolated / "src-alpha-1.2.0", "alpha", "1.2.0"))
    run("install", "--frozen", "-o", "vendor2")
    assert skill_tree(isolated / "vendor2" / "alpha") == tree(isolated / "src-alpha-1.1.0" / "alpha")


def test_frozen_install_fails_without_a_lock(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^1\n")
    assert "skills.lock does not exist; run skillctl lock first" in error_line(run("install", "--frozen", "-o", "v", ok=False))
    assert not (isolated / "v").exists() and not (isolated / "skills.lock").exists()


def test_frozen_install_fails_when_the_lock_is_stale(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^1\n")
    run("lock")
    (isolated / "skills.yaml").write_text("skills:\n  alpha: ^1\n  beta: ^0.3\n")
    assert "is stale" in error_line(run("install", "--frozen", "-o", "v", ok=False))
    assert not (isolated / "v").exists()
    # without --frozen the stale lock is updated, then installed
    r = run("install", "-o", "v")
    assert "updated stale skills.lock" in r.stderr
    assert sorted(p.name for p in (isolated / "v").iterdir()) == ["alpha", "beta"]
    run("install", "--frozen", "-o", "v")


def test_install_refuses_a_lock_whose_digest_the_registry_does_not_serve(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^1\n  beta: ^0.3\n")
    run("lock")
    doc = json.loads((isolated / "skills.lock").read_text())
    doc["skills"]["beta"]["digest"] = "sha256:" + "1" * 64
    (isolated / "skills.lock").write_text(json.dumps(doc))
    assert "skills.lock pins sha256:1111" in error_line(run("install", "--frozen", "-o", "v", ok=False))
    assert not (isolated / "v").exists()


def test_install_refuses_a_tampered_blob(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^1\n")
    digest = as_json(run("lock", "--format", "json"))["skills"][0]["digest"]
    flip_byte(isolated / "registry" / "blobs" / "sha256" / digest.split(":")[1])
    assert "corrupt" in error_line(run("install", "--frozen", "-o", "v", ok=False))
    assert not (isolated / "v").exists()


@pytest.mark.parametrize(
    "requirements, message",
    [
        ("skills:\n  alpha: ^1\n   beta: ^2\n", "skills.yaml:3:8: not valid YAML"),
        ("skills:\n  Alpha: ^1\n", "'Alpha' is not a skill name"),
        ("skills:\n  alpha: 1.0\n", "write the range as a quoted string"),
        ("skillz:\n  alpha: ^1\n", "unknown key(s) skillz"),
    ],
)
def test_lock_reports_bad_requirements_in_one_line(isolated: Path, requirements: str, message: str) -> None:
    (isolated / "skills.yaml").write_text(requirements)
    assert message in error_line(run("lock", ok=False))
    assert not (isolated / "skills.lock").exists()


HUGE = "99999999999999999999.0.0"  # over 2^63 (SQLite's INTEGER), let alone the bound 2^53-1


def test_a_version_over_the_bound_is_one_line_in_every_command(isolated: Path) -> None:
    _project(isolated, "skills:\n  alpha: ^99999999999999999999\n")
    bound = "is over 9007199254740991 (2^53-1)"
    for ref in (f"alpha@{HUGE}", "alpha@^99999999999999999999", "alpha@<99999999999999999999", "alpha@1.0.0-rc.99999999999999999999"):
        for command in (["show", ref], ["versions", ref], ["pull", ref, "-o", "out"], ["yank", ref], ["unyank", ref], ["registry", "remove", "--yes", ref]):
            assert bound in error_line(run(*command, ok=False)), command
    assert bound in error_line(run("lock", ok=False))
    (isolated / "skills.yaml").write_text(f"skills:\n  alpha: {HUGE}\n")
    assert bound in error_line(run("lock", ok=False))
    assert not (isolated / "skills.lock").exists()
    # a lock that names such a version (written by hand or by another tool)
    (isolated / "skills.yaml").write_text("skills:\n  alpha: ^1\n")
    run("lock")
    doc = json.loads((isolated / "skills.lock").read_text())
    doc["skills"]["alpha"]["version"] = HUGE
    (isolated / "skills.lock").write_text(json.dumps(doc))
    assert bound in error_line(run("install", "--frozen", "-o", "v", ok=False))
    # publishing one, and bumping to one
    folder = write_skill(isolated / "src-huge", "alpha", HUGE)
    assert bound in error_line(run("publish", folder, ok=False))
    packed = run("pack", folder, "-o", "dist", ok=False)  # a line per skill that failed, then the summary
    assert bound in packed.stderr and not list(Path("dist").glob("*.tgz"))
    write_skill(isolated / "src-top", "alpha", "9007199254740991.0.0")
    assert "the major number would be over" in error_line(run("version", isolated / "src-top" / "alpha", "major", ok=False))
    assert [s["version"] for s in as_json(run("versions", "alpha", "--format", "json"))] == ["1.1.0", "1.0.0"]


def test_lock_without_requirements(isolated: Path) -> None:
    assert "skills.yaml not found" in error_line(run("lock", ok=False))
