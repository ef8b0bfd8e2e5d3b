"""Publishing without surprises: `publish --dry-run` and `pack --dry-run` show what would happen
and write nothing; `--profile` lets a skill valid for a client be packed and published;
`publish --format json` lists failures too; a search of a folder that is no project finding
more than 20 skills needs --yes; the output is a line per skill and a summary."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from registry.helpers import write_skill
from registry_cli import as_json, error_line, isolated, run, sha256_file  # noqa: F401 - isolated: autouse fixture
from skillctl.cli.publish import UNCONFIRMED_SEARCH_LIMIT


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes: a dry run must leave it exactly so. Not the
    index's -shm file: SQLite's shared memory, which every reader of the index maps and marks."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------- publish --dry-run


def test_a_dry_run_lists_each_skill_with_its_files_and_writes_nothing(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.2.0", files={"scripts/run.sh": ("#!/bin/sh\necho ok\n", 0o755), "a.txt": "abc\n"})
    before = _snapshot(isolated)
    plan = as_json(run("publish", "src", "--dry-run", "--format", "json"))
    assert _snapshot(isolated) == before and not (isolated / "registry").exists()  # no registry made either
    assert (plan["dry_run"], plan["registry"], plan["registry_exists"]) == (True, str(isolated / "registry"), False)
    (entry,) = plan["skills"]
    assert (entry["status"], entry["name"], entry["version"], entry["source"]) == ("new", "demo", "1.2.0", "src/demo")
    assert entry["files"] == [
        {"path": rel, "size": (folder / rel).stat().st_size, "digest": _sha256((folder / rel).read_bytes())}
        for rel in ("SKILL.md", "a.txt", "scripts/run.sh")
    ]
    assert plan["summary"] == {"new": 1, "unchanged": 0, "refused": 0}
    # what the dry run said is what publishing does
    published = as_json(run("publish", "src", "--format", "json"))[0]
    assert (published["digest"], published["tar_digest"], published["size"]) == (entry["digest"], entry["tar_digest"], entry["size"])


def test_a_dry_run_tells_unchanged_from_refused_and_why(isolated: Path) -> None:
    write_skill(isolated / "src", "same", "1.0.0")
    changed = write_skill(isolated / "src", "changed", "1.0.0")
    run("publish", "src")
    (changed / "scripts" / "run.sh").write_text("#!/bin/sh\necho other\n")
    write_skill(isolated / "src", "unversioned", None)
    (isolated / "src" / "bad").mkdir()
    (isolated / "src" / "bad" / "SKILL.md").write_text("---\nname: Bad\n---\nbody\n")
    write_skill(isolated / "src", "fresh", "0.1.0")
    before = _snapshot(isolated)
    r = run("publish", "src", "--dry-run", "--format", "json", ok=False)  # exit 1: publish would refuse some
    assert _snapshot(isolated) == before  # the registry too: index, blobs, counts untouched
    by_source = {Path(e["source"]).name: e for e in as_json(r)["skills"]}
    assert {k: e["status"] for k, e in by_source.items()} == {
        "bad": "refused", "changed": "refused", "fresh": "new", "same": "unchanged", "unversioned": "refused"}
    assert "changed@1.0.0 is already published with other content" in by_source["changed"]["reason"]
    assert "no version; add metadata.version" in by_source["unversioned"]["reason"]
    assert "skill at src/bad is invalid" in by_source["bad"]["reason"] and "SK111" in by_source["bad"]["reason"]
    assert "dry run: 3 of 5 would be refused" in error_line(r) and "nothing was written" in error_line(r)
    # the text form says the same, one line per skill plus its files
    text = run("publish", "src", "--dry-run", ok=False).stdout
    assert "unchanged same@1.0.0" in text and "new       fresh@0.1.0" in text and "refused" in text
    assert "scripts/run.sh" in text


def test_a_dry_run_finds_two_inputs_at_odds_within_one_run(isolated: Path) -> None:
    write_skill(isolated / "a", "demo", "1.0.0")
    write_skill(isolated / "b", "demo", "1.0.0", body="# Demo\n\nOther words.\n")
    plan = as_json(run("publish", "a/demo", "b/demo", "--dry-run", "--format", "json", ok=False))
    assert [e["status"] for e in plan["skills"]] == ["new", "refused"]
    assert "has other content in a/demo" in plan["skills"][1]["reason"]


# -------------------------------------------------------------------------- pack --dry-run


def test_pack_dry_run_lists_bundles_and_writes_no_folder_or_file(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    plan = as_json(run("pack", folder, "-o", "dist", "--dry-run", "--format", "json"))
    assert not (isolated / "dist").exists()
    (entry,) = plan["skills"]
    assert (entry["status"], entry["target"]) == ("new", str(Path("dist") / "demo-1.0.0.skill.tgz"))
    packed = as_json(run("pack", folder, "-o", "dist", "--format", "json"))
    assert (packed["digest"], packed["size"], packed["files"]) == (entry["digest"], entry["size"], len(entry["files"]))
    assert as_json(run("pack", folder, "-o", "dist", "--dry-run", "--format", "json"))["skills"][0]["status"] == "unchanged"
    before = (isolated / "dist" / "demo-1.0.0.skill.tgz").read_bytes()
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho changed\n")
    assert as_json(run("pack", folder, "-o", "dist", "--dry-run", "--format", "json"))["skills"][0]["status"] == "changed"
    assert (isolated / "dist" / "demo-1.0.0.skill.tgz").read_bytes() == before
    r = run("pack", write_skill(isolated / "src", "nover", None), "-o", "dist", "--dry-run", ok=False)
    assert "refused" in r.stdout and "no version" in r.stdout and "would be refused" in error_line(r)


# ------------------------------------------------------------------------------- --profile

CLAUDE_SKILL = """---
name: review
description: Reviews a pull request when asked to; use it for code review.
argument-hint: "[pr-number]"
disable-model-invocation: true
allowed-tools: [Bash, Read]
metadata:
  version: "1.0.0"
---

# Review

Read the diff and comment.
"""


def _claude_skill(root: Path) -> Path:
    folder = root / "review"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(CLAUDE_SKILL)
    return folder


def test_a_skill_valid_for_claude_code_packs_and_publishes_with_its_profile(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _claude_skill(isolated / "src")
    assert run("validate", "--profile", "claude-code", folder).exit_code == 0
    assert "SK161" in run("pack", folder, "-o", "dist", ok=False).stderr  # the spec alone refuses it
    assert "argument-hint" in error_line(run("publish", folder, ok=False))
    assert not (isolated / "registry").exists()
    packed = as_json(run("pack", folder, "-o", "dist", "--profile", "claude-code", "--format", "json"))
    assert Path(packed["path"]).is_file()
    assert as_json(run("publish", packed["path"], "--profile", "claude-code", "--format", "json"))[0]["status"] == "published"
    monkeypatch.setenv("SKILLCTL_PROFILE", "claude-code")  # as validate reads it
    assert as_json(run("publish", folder, "--format", "json"))[0]["status"] == "unchanged"
    assert as_json(run("publish", folder, "--dry-run", "--format", "json"))["skills"][0]["status"] == "unchanged"


def test_a_skill_published_under_a_profile_copies_and_is_reindexed(isolated: Path) -> None:
    run("publish", _claude_skill(isolated / "src"), "--profile", "claude-code")
    copied = as_json(run("copy", "review", "--from", isolated / "registry", "--to", isolated / "mirror", "--format", "json"))
    assert [c["status"] for c in copied] == ["published"]
    (isolated / "registry" / "index.sqlite").unlink()
    report = as_json(run("registry", "rebuild-index", "--format", "json"))
    assert [r["name"] for r in report["recovered"]] == ["review"] and report["unrecovered"] == []


# --------------------------------------------------------------------- publish --format json


def test_json_lists_every_input_in_order_failures_included(isolated: Path) -> None:
    write_skill(isolated / "src", "a-good", "1.0.0")
    write_skill(isolated / "src", "b-unversioned", None)
    write_skill(isolated / "src", "c-good", "1.0.0")
    r = run("publish", "src", "--format", "json", ok=False)
    entries = as_json(r)
    assert [(e["status"], e.get("name")) for e in entries] == [("published", "a-good"), ("failed", None), ("published", "c-good")]
    failed = entries[1]
    assert failed["source"] == "src/b-unversioned" and "no version" in failed["error"]
    assert r.stderr.splitlines()[-1].startswith("Error: 1 of 3 could not be published (see above); 2 published")


def test_json_of_a_single_refused_input_is_its_failure(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    run("publish", folder)
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho other\n")
    r = run("publish", folder, "--format", "json", ok=False)
    [entry] = as_json(r)
    assert (entry["status"], entry["name"], entry["version"]) == ("failed", "demo", "1.0.0")
    assert "already published with other content" in entry["error"] and entry["error"] in error_line(r)


# ------------------------------------------------------------------------ a search by mistake


def _many(root: Path, n: int) -> Path:
    for i in range(n):
        write_skill(root / f"folder-{i:02d}", f"skill-{i:02d}", "1.0.0")
    return root


def test_publishing_a_search_of_a_folder_that_is_no_project_needs_yes(isolated: Path) -> None:
    slip = _many(isolated / "tmp", UNCONFIRMED_SEARCH_LIMIT + 1)
    line = error_line(run("publish", slip, ok=False))
    assert f"the search found {UNCONFIRMED_SEARCH_LIMIT + 1} skills" in line and "--dry-run" in line and "--yes" in line
    assert not (isolated / "registry").exists()
    plan = as_json(run("publish", slip, "--dry-run", "--format", "json"))
    assert plan["summary"]["new"] == UNCONFIRMED_SEARCH_LIMIT + 1
    r = run("publish", slip, "--yes")
    # one line per skill on stdout, the summary (and the new registry) on stderr
    assert len(r.stdout.splitlines()) == UNCONFIRMED_SEARCH_LIMIT + 1
    assert all(line.startswith("published ") for line in r.stdout.splitlines())
    assert r.stderr.splitlines()[-1] == f"{UNCONFIRMED_SEARCH_LIMIT + 1} published, 0 unchanged in {isolated / 'registry'}"


def test_the_limit_leaves_projects_named_skills_and_small_folders_alone(isolated: Path) -> None:
    run("publish", _many(isolated / "few", UNCONFIRMED_SEARCH_LIMIT))  # at the limit: fine
    team = _many(isolated / "team", UNCONFIRMED_SEARCH_LIMIT + 1)
    (team / "skills.yaml").write_text("skills: {}\n")
    run("publish", team)
    repo = _many(isolated / "repo", UNCONFIRMED_SEARCH_LIMIT + 1)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    run("publish", repo / "folder-00" / "skill-00", repo)  # a skill folder named on its own; a search inside a git repository
    assert len(as_json(run("list", "--format", "json"))) == UNCONFIRMED_SEARCH_LIMIT + 1
