"""Target folders are the user's, and what is in them is hostile until checked: a link planted
where skillctl writes or deletes is never followed out of the folder, and a marker is data from
disk — bounded, schema-checked, naming its own folder — before it licenses anything."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from skillctl.errors import InstallError
from skillctl.project.install import LEFT_UNMARKED, REMOVED, install_into, plan_sync, remove_installed, scan
from skillctl.project.linkstore import STORE_MARKER, entry_key
from skillctl.project.marker import MARKER, MAX_MARKER_BYTES

from .helpers import contents_of, provenance, tree


@pytest.fixture
def demo(tmp_path):
    return contents_of(tmp_path / "build", "demo", "1.0.0")


@pytest.fixture
def outside(tmp_path):
    """A folder of the user's that a planted link points at; it must come out as it went in."""
    folder = tmp_path / "outside"
    (folder / "demo").mkdir(parents=True)
    (folder / "demo/SKILL.md").write_text("the user's own file\n")
    (folder / "precious.txt").write_text("keep me\n")
    return folder


@pytest.mark.parametrize("planted", [".claude", ".claude/skills"])
def test_a_link_planted_on_the_way_to_the_target_is_refused_in_one_line(tmp_path, demo, outside, planted):
    project = tmp_path / "project"
    (project / planted).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, project / planted)
    before = tree(outside)
    target = project / ".claude/skills"
    for action in (lambda: install_into(target, demo, provenance(demo), root=project, force=True),
                   lambda: remove_installed(target, "demo", root=project, force=True),
                   lambda: scan(target, root=project),
                   lambda: plan_sync(target, {}, root=project)):
        with pytest.raises(InstallError) as err:
            action()
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{project / planted}: a symbolic link (to {outside})")
        assert "does not write or delete through links" in message
    assert tree(outside) == before


def test_a_link_planted_as_the_skill_folder_is_left_alone_and_never_followed(tmp_path, demo, outside):
    target = tmp_path / "project/.claude/skills"
    target.mkdir(parents=True)
    os.symlink(outside / "demo", target / "demo")
    # even a marker that would be valid for this skill does not make the link skillctl's
    install_into(tmp_path / "elsewhere", demo, provenance(demo))
    shutil.copy(tmp_path / "elsewhere/demo" / MARKER, outside / "demo" / MARKER)
    before = tree(outside)
    [entry] = scan(target)
    assert (entry.ours, entry.linked, entry.problem) == (False, True, "a link skillctl did not make")
    for force in (False, True):
        assert install_into(target, demo, provenance(demo), force=force).action == LEFT_UNMARKED
        assert remove_installed(target, "demo", force=force).action == LEFT_UNMARKED
    plan = plan_sync(target, {})
    assert plan.unmarked == ("demo",) and plan.remove == ()
    assert tree(outside) == before and os.readlink(target / "demo") == str(outside / "demo")


def _fake_store_link(tmp_path: Path, demo, *, with_store_marker: bool, detour: bool = False) -> Path:
    """A link that looks like skillctl's but points into a folder that is not a link store, or
    into a real one by a detour."""
    store = tmp_path / "fake-store"
    entry = store / entry_key(demo.tar_digest)
    (entry / "demo").mkdir(parents=True)
    (entry / "demo/SKILL.md").write_text("planted\n")
    if with_store_marker:
        (store / STORE_MARKER).write_text("{}")
    target = tmp_path / "skills"
    target.mkdir()
    pointed = f"{entry}/../{entry.name}/demo" if detour else str(entry / "demo")
    os.symlink(pointed, target / "demo")
    return target


@pytest.mark.parametrize("with_store_marker,detour", [(False, False), (True, True)], ids=["no-store-marker", "detour"])
def test_a_link_into_something_that_is_not_exactly_a_store_entry_is_not_skillctls(tmp_path, demo, with_store_marker, detour):
    target = _fake_store_link(tmp_path, demo, with_store_marker=with_store_marker, detour=detour)
    [entry] = scan(target)
    assert not entry.ours
    assert remove_installed(target, "demo", force=True).action == LEFT_UNMARKED
    assert os.path.islink(target / "demo")


def test_removing_a_linked_install_removes_the_link_only(tmp_path, demo):
    store, target = tmp_path / "store", tmp_path / "skills"
    install_into(target, demo, provenance(demo), link_store=store)
    entry = store / entry_key(demo.tar_digest) / "demo"
    before = tree(entry)
    assert remove_installed(target, "demo").action == REMOVED
    assert tree(entry) == before


def test_force_removing_an_edited_folder_does_not_follow_a_link_inside_it(tmp_path, demo, outside):
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    os.symlink(outside, target / "demo/evil")
    before = tree(outside)
    assert remove_installed(target, "demo", force=True).action == REMOVED
    assert tree(outside) == before and not os.path.lexists(target / "demo")


def _install_then(tmp_path: Path, demo, damage) -> Path:
    target = tmp_path / "skills"
    install_into(target, demo, provenance(demo))
    damage(target / "demo" / MARKER)
    return target


def _valid_marker(path: Path) -> dict:
    return json.loads(path.read_text())


def _rewrite(path: Path, data) -> None:
    path.unlink()
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


HOSTILE_MARKERS = {
    "missing": lambda p: p.unlink(),
    "over the size cap": lambda p: _rewrite(p, json.dumps(_valid_marker(p)) + " " * MAX_MARKER_BYTES),
    "not JSON": lambda p: _rewrite(p, "{not json"),
    "nested a million deep": lambda p: _rewrite(p, "[" * 1_000_000 + "]" * 1_000_000),
    "another skill's name": lambda p: _rewrite(p, {**_valid_marker(p), "name": "other"}),
    "a file path leaving the folder": lambda p: _rewrite(p, {**_valid_marker(p), "files": {"../../etc/passwd": {
        "sha256": "sha256:" + "0" * 64, "size": 1, "mode": 420}}}),
    "an unknown field": lambda p: _rewrite(p, {**_valid_marker(p), "delete": "everything"}),
    "not skillctl's tool": lambda p: _rewrite(p, {**_valid_marker(p), "tool": "other"}),
    "a link to a valid marker": lambda p: (os.rename(p, p.with_name("real.json")), os.symlink("real.json", p)),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
}


@pytest.mark.parametrize("damage", list(HOSTILE_MARKERS), ids=list(HOSTILE_MARKERS))
def test_a_hostile_marker_makes_the_folder_not_skillctls(tmp_path, demo, damage):
    target = _install_then(tmp_path, demo, HOSTILE_MARKERS[damage])
    [entry] = scan(target)
    assert not entry.ours and entry.marker is None and entry.problem
    assert remove_installed(target, "demo", force=True).action == LEFT_UNMARKED
    plan = plan_sync(target, {})
    assert plan.unmarked == ("demo",) and plan.remove == ()
    assert (target / "demo/SKILL.md").is_file()


def test_a_fifo_in_place_of_the_marker_is_refused_without_hanging(tmp_path, demo):
    target = _install_then(tmp_path, demo, lambda p: (p.unlink(), os.mkfifo(p)))
    result = {}
    worker = threading.Thread(target=lambda: result.update(entries=scan(target)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "reading the marker blocked on a FIFO"
    [entry] = result["entries"]
    assert not entry.ours and "not a regular file" in entry.problem
