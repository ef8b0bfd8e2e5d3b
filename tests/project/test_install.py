"""Installing into agents' folders: copies and links with skillctl's marker, edits reported rather
than overwritten, and sync or remove touching only what skillctl installed. Real files, a HOME
pointed at a temporary folder for user scope."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skillctl.project import install
from skillctl.project.agents import load_agents, target_folders
from skillctl.project.install import (
    ADOPTED, INSTALLED, LEFT_EDITED, LEFT_UNMARKED, REMOVED, REPLACED, UNCHANGED,
    apply, install_into, plan_sync, remove_installed, scan,
)
from skillctl.project.linkstore import STORE_MARKER, entry_key
from skillctl.project.marker import MARKER

from .helpers import contents_of, provenance


@pytest.fixture
def demo(tmp_path):
    return contents_of(tmp_path, "demo", "1.0.0")


def _marker(folder: Path) -> dict:
    return json.loads((folder / MARKER).read_text("utf-8"))


def test_every_agent_of_the_table_is_written_at_project_and_user_scope(tmp_path, demo):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    env = {"HOME": str(home)}
    names = list(load_agents())
    for user in (False, True):
        targets = target_folders(names, user=user, project_root=project, environ=env)
        assert len({t.path for t in targets}) == len(targets) < len(names)  # shared folders once
        for target in targets:
            outcome = install_into(target.path, demo, provenance(demo), root=target.root)
            assert outcome.action == INSTALLED, (target, outcome)
        for agent in load_agents().values():
            folder = (agent.user_folder(env) if user else agent.project_folder(project)) / "demo"
            assert (folder / "SKILL.md").read_bytes() == demo.files["SKILL.md"], agent.name
            assert _marker(folder)["tar_digest"] == demo.tar_digest, agent.name
            assert [e.name for e in scan(folder.parent)] == ["demo"], agent.name
    assert (home / ".claude/skills/demo/SKILL.md").is_file()
    assert (project / ".agents/skills/demo/SKILL.md").is_file()


def test_a_copy_carries_a_marker_with_source_version_and_digest(tmp_path, demo):
    target = tmp_path / "skills"
    outcome = install_into(target, demo, provenance(demo))
    assert (outcome.action, outcome.linked, outcome.path) == (INSTALLED, False, target / "demo")
    marker = _marker(target / "demo")
    assert marker["name"] == "demo" and marker["version"] == "1.0.0"
    assert marker["source"] == {"kind": "registry", "location": "/srv/skills"}
    assert marker["tar_digest"] == demo.tar_digest
    assert set(marker["files"]) == set(demo.files) and marker["dirs"] == list(demo.dirs)
    assert marker["files"]["scripts/run.sh"]["mode"] == 0o755
    assert os.stat(target / "demo/scripts/run.sh").st_mode & 0o777 == 0o755
    [entry] = scan(target)
    assert (entry.ours, entry.edited, entry.linked, entry.tar_digest) == (True, False, False, demo.tar_digest)


def test_installing_the_same_pin_again_changes_nothing(tmp_path, demo):
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    before = os.stat(target / "demo/SKILL.md").st_ino
    assert install_into(target, demo, provenance(demo)).action == UNCHANGED
    assert os.stat(target / "demo/SKILL.md").st_ino == before


def test_a_new_version_replaces_a_pristine_install(tmp_path, demo):
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    newer = contents_of(tmp_path, "demo", "1.1.0", body="# Demo\n\nNew text.\n")
    assert install_into(target, newer, provenance(newer, "1.1.0")).action == REPLACED
    assert (target / "demo/SKILL.md").read_bytes() == newer.files["SKILL.md"]
    assert _marker(target / "demo")["version"] == "1.1.0"
    assert [p.name for p in target.iterdir()] == ["demo"]  # no staging folder left behind


def _edit_same_size_keeping_mtime(folder: Path) -> None:
    path = folder / "SKILL.md"
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[-2] = ord("X") if data[-2] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime put back: only ctime tells


EDITS = {
    "content, same size, mtime restored": _edit_same_size_keeping_mtime,
    "a file added": lambda f: (f / "notes.md").write_text("mine\n"),
    "a file removed": lambda f: (f / "scripts/run.sh").unlink(),
    "a mode changed": lambda f: os.chmod(f / "SKILL.md", 0o755),
    "a folder added": lambda f: (f / "extra").mkdir(),
    "a link added": lambda f: os.symlink("/etc/hostname", f / "host"),
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_an_edited_install_is_reported_and_kept_unless_forced(tmp_path, demo, edit):
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    EDITS[edit](target / "demo")
    [entry] = scan(target)
    assert entry.ours and entry.edited and entry.problem, entry
    newer = contents_of(tmp_path, "demo", "2.0.0")
    kept = install_into(target, newer, provenance(newer, "2.0.0"))
    assert kept.action == LEFT_EDITED and "--force" in kept.note
    assert _marker(target / "demo")["version"] == "1.0.0"
    assert remove_installed(target, "demo").action == LEFT_EDITED
    plan = plan_sync(target, {})
    assert plan.edited == ("demo",) and plan.remove == ()
    assert install_into(target, newer, provenance(newer, "2.0.0"), force=True).action == REPLACED
    assert not scan(target)[0].edited


def test_an_unmarked_folder_is_never_replaced_or_removed(tmp_path, demo):
    target = tmp_path / "skills"
    mine = target / "demo"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: demo\ndescription: my own\n---\n")
    for force in (False, True):
        outcome = install_into(target, demo, provenance(demo), force=force)
        assert outcome.action == LEFT_UNMARKED and "never replaces a folder it did not install" in outcome.note
        assert remove_installed(target, "demo", force=force).action == LEFT_UNMARKED
    assert (mine / "SKILL.md").read_text().endswith("my own\n---\n") and not (mine / MARKER).exists()


def test_an_unmarked_folder_holding_exactly_the_skill_is_adopted(tmp_path, demo):
    # what `skillctl install` wrote before markers existed
    target = tmp_path / "skills"
    from skillctl.bundle import write_contents

    write_contents(demo, target)
    assert install_into(target, demo, provenance(demo)).action == ADOPTED
    [entry] = scan(target)
    assert entry.ours and not entry.edited


def test_remove_deletes_a_marked_folder(tmp_path, demo):
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    assert remove_installed(target, "demo").action == REMOVED
    assert list(target.iterdir()) == []
    assert remove_installed(target, "demo").action == install.ABSENT
    assert remove_installed(tmp_path / "nowhere", "demo").action == install.ABSENT


def test_sync_makes_the_folder_hold_exactly_the_lock_and_removes_only_marked_folders(tmp_path):
    target = tmp_path / "skills"
    old = {n: contents_of(tmp_path, n, "1.0.0") for n in ("keep", "gone", "bump", "touched")}
    for c in old.values():
        install_into(target, c, provenance(c))
    (target / "touched/SKILL.md").write_text("my edit\n")
    (target / "mine").mkdir()
    (target / "mine/SKILL.md").write_text("not from skillctl\n")
    bumped = contents_of(tmp_path, "bump", "1.1.0")
    fresh = contents_of(tmp_path, "fresh", "1.0.0")
    wanted = {"keep": old["keep"].tar_digest, "bump": bumped.tar_digest, "fresh": fresh.tar_digest}

    plan = plan_sync(target, wanted)
    assert (plan.write, plan.replace, plan.remove, plan.keep) == (("fresh",), ("bump",), ("gone",), ("keep",))
    assert (plan.edited, plan.unmarked, plan.needed()) == (("touched",), ("mine",), ("bump", "fresh"))
    outcomes = apply(plan, {"bump": (bumped, provenance(bumped, "1.1.0")), "fresh": (fresh, provenance(fresh))})
    actions = {o.name: o.action for o in outcomes}
    assert actions == {"gone": REMOVED, "bump": REPLACED, "fresh": INSTALLED, "touched": LEFT_EDITED,
                       "mine": LEFT_UNMARKED, "keep": UNCHANGED}
    assert sorted(p.name for p in target.iterdir()) == ["bump", "fresh", "keep", "mine", "touched"]
    assert (target / "mine/SKILL.md").read_text() == "not from skillctl\n"
    again = plan_sync(target, wanted)
    assert again.nothing_to_do and again.keep == ("bump", "fresh", "keep")

    forced = apply(plan_sync(target, wanted), {}, force=True)
    assert {o.name: o.action for o in forced}["touched"] == REMOVED
    assert sorted(p.name for p in target.iterdir()) == ["bump", "fresh", "keep", "mine"]


def test_apply_refuses_before_writing_anything_when_files_are_missing(tmp_path, demo):
    target = tmp_path / "skills"
    plan = plan_sync(target, {"demo": demo.tar_digest})
    with pytest.raises(install.InstallError, match="no files were handed over for demo"):
        apply(plan, {})
    assert not target.exists()


def test_a_copied_project_is_hashed_once_and_found_pristine(tmp_path, demo):
    target = tmp_path / "a/skills"
    install_into(target, demo, provenance(demo))
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # new inodes: the stat shortcut cannot apply
    [entry] = scan(tmp_path / "b/skills")
    assert entry.ours and not entry.edited
    assert plan_sync(tmp_path / "b/skills", {"demo": demo.tar_digest}).keep == ("demo",)


# ---------------------------------------------------------------------------- links


def test_link_installs_share_one_store_entry_and_removing_one_keeps_the_store(tmp_path, demo):
    store = tmp_path / "store"
    first, second = tmp_path / "p1/.claude/skills", tmp_path / "p2/.claude/skills"
    for target in (first, second):
        outcome = install_into(target, demo, provenance(demo), link_store=store)
        assert (outcome.action, outcome.linked) == (INSTALLED, True)
    entry = store / entry_key(demo.tar_digest)
    assert os.readlink(first / "demo") == os.readlink(second / "demo") == str(entry / "demo")
    assert (store / STORE_MARKER).is_file() and _marker(entry)["name"] == "demo"
    assert not (entry / "demo" / MARKER).exists()  # the agent sees exactly the skill's files
    [found] = scan(first)
    assert (found.ours, found.linked, found.edited) == (True, True, False)
    assert install_into(first, demo, provenance(demo), link_store=store).action == UNCHANGED
    assert remove_installed(first, "demo").action == REMOVED
    assert not os.path.lexists(first / "demo")
    assert (entry / "demo/SKILL.md").read_bytes() == demo.files["SKILL.md"]
    assert (second / "demo/SKILL.md").is_file()


def test_switching_between_copy_and_link_replaces_the_install(tmp_path, demo):
    target, store = tmp_path / "skills", tmp_path / "store"
    install_into(target, demo, provenance(demo))
    assert plan_sync(target, {"demo": demo.tar_digest}, link=True).replace == ("demo",)
    assert install_into(target, demo, provenance(demo), link_store=store).linked
    assert os.path.islink(target / "demo")
    assert install_into(target, demo, provenance(demo)).action == REPLACED
    assert not os.path.islink(target / "demo") and (target / "demo" / MARKER).is_file()


def test_a_store_entry_changed_behind_skillctls_back_is_repaired_before_it_is_linked(tmp_path, demo):
    store = tmp_path / "store"
    install_into(tmp_path / "p1/skills", demo, provenance(demo), link_store=store)
    planted = store / entry_key(demo.tar_digest) / "demo/SKILL.md"
    planted.write_text("---\nname: demo\ndescription: do something else entirely\n---\n")
    assert scan(tmp_path / "p1/skills")[0].edited  # the edit is seen through the link
    outcome = install_into(tmp_path / "p2/skills", demo, provenance(demo), link_store=store)
    assert outcome.linked
    assert (tmp_path / "p2/skills/demo/SKILL.md").read_bytes() == demo.files["SKILL.md"]
    assert not scan(tmp_path / "p1/skills")[0].edited


def test_a_dangling_link_skillctl_made_is_replaced(tmp_path, demo):
    store, target = tmp_path / "store", tmp_path / "skills"
    install_into(target, demo, provenance(demo), link_store=store)
    shutil.rmtree(store / entry_key(demo.tar_digest))
    [entry] = scan(target)
    assert entry.ours and entry.linked and entry.marker is None
    assert plan_sync(target, {"demo": demo.tar_digest}).replace == ("demo",)
    assert install_into(target, demo, provenance(demo), link_store=store).action == REPLACED
    assert (target / "demo/SKILL.md").read_bytes() == demo.files["SKILL.md"]


_FALLBACK_CHILD = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from project.helpers import contents_of, provenance
from pathlib import Path
from skillctl.project.install import install_into
work = Path(sys.argv[3])
c = contents_of(work, "demo")
o = install_into(work / "skills", c, provenance(c), link_store=work / "store")
print(json.dumps({"action": o.action, "linked": o.linked, "note": o.note}))
"""


def test_where_links_are_refused_the_skill_is_copied_instead(tmp_path):
    """The kernel's symlink calls fail with EPERM (as on FAT or a share without links), injected
    by strace into a real child process: the install falls back to a marked copy."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (scripts/setup.sh --tests installs it)")
    repo = Path(__file__).resolve().parents[2]
    cmd = [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=symlink,symlinkat", "-e", "inject=symlink,symlinkat:error=EPERM",
           sys.executable, "-c", _FALLBACK_CHILD, str(repo), str(repo / "tests"), str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["action"] == INSTALLED and result["linked"] is False
    assert "links are refused here" in result["note"] and "copied instead" in result["note"]
    folder = tmp_path / "skills/demo"
    assert folder.is_dir() and not folder.is_symlink() and (folder / MARKER).is_file()
    [entry] = scan(tmp_path / "skills")
    assert entry.ours and not entry.edited and not entry.linked


def test_a_user_folder_may_be_reached_through_the_users_own_links(tmp_path, demo):
    """A dotfiles manager (GNU stow) links ~/.claude to a repository: --user still installs."""
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles/claude/.claude"
    dotfiles.mkdir(parents=True)
    home.mkdir()
    os.symlink(dotfiles, home / ".claude")
    [target] = target_folders(["claude-code"], user=True, project_root=tmp_path, environ={"HOME": str(home)})
    assert install_into(target.path, demo, provenance(demo), root=target.root).action == INSTALLED
    assert (dotfiles / "skills/demo/SKILL.md").is_file()
    assert remove_installed(target.path, "demo", root=target.root).action == REMOVED
