"""A tree listing searched and chosen from exactly as a folder would be: the shared skill search
(``skillctl.skill.discovery``) and ``pack``'s choice of files, compared on the same layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.bundle import collect_files
from skillctl.bundle.members import Refused
from skillctl.skill.discovery import SearchLimits, discover
from skillctl.skill.ignore import IgnoreRules
from skillctl.sources.gittree import Entry, choose_files, find_skill_folders

LAYOUT = [
    "SKILLS.txt",
    "skills/a/SKILL.md", "skills/a/nested/SKILL.md", "skills/a/x.txt",
    "skills/b/skill.md",
    "skills/group/c/SKILL.md",
    ".claude/skills/d/SKILL.md",
    "node_modules/pkg/skills/e/SKILL.md",
    "env/pyvenv.cfg", "env/lib/f/SKILL.md",
    "deep/1/2/3/4/5/g/SKILL.md",
    "deep/1/2/3/4/h/SKILL.md",
]


def entries(paths: list[str]) -> list[Entry]:
    return [Entry("100644", "blob", "0" * 40, p) for p in paths]


def materialise(root: Path, paths: list[str]) -> Path:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x")
    return root


@pytest.mark.parametrize("limits", [SearchLimits(), SearchLimits(depth=3), SearchLimits(folders=5)], ids=["default", "depth3", "folders5"])
def test_the_listing_search_finds_what_the_shared_search_finds_on_disk(tmp_path: Path, limits: SearchLimits) -> None:
    root = materialise(tmp_path / "repo", LAYOUT)
    on_disk = [str(f.folder.relative_to(root)) for f in discover(root, limits=limits) if f.folder is not None]
    found = find_skill_folders(entries(LAYOUT), limits)
    assert found.folders == on_disk
    notes = [f.problem.code for f in discover(root, limits=limits) if f.problem is not None and f.problem.code != "SK012"]
    assert len(found.notes) == len(notes), (found.notes, notes)


def test_a_skill_at_the_top_is_the_only_one() -> None:
    assert find_skill_folders(entries(["SKILL.md", "skills/a/SKILL.md"])).folders == [""]


FILES = {
    ".skillignore": "drafts/\n*.log\n*.lnk\n",
    "SKILL.md": "x", "keep.txt": "x", "a.log": "x", "drafts/x.md": "x", ".DS_Store": "x",
    "__pycache__/m.pyc": "x", "notes.txt~": "x", "sub/.git/config": "x", "sub/ok.md": "x",
}


def test_the_files_chosen_are_those_pack_chooses_from_a_checkout(tmp_path: Path) -> None:
    folder = tmp_path / "skill"
    for path, text in FILES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (folder / "cache.lnk").symlink_to("keep.txt")  # ignored: pack skips it, so must we
    import pathspec

    rules = IgnoreRules(pathspec.GitIgnoreSpec.from_lines(FILES[".skillignore"].splitlines()))
    listed = entries(sorted(FILES)) + [Entry("120000", "blob", "1" * 40, "cache.lnk")]
    chosen = choose_files(listed, rules)
    assert [e.path for e in chosen.files] == [f.path for f in collect_files(folder)]


def test_a_link_that_is_not_ignored_is_refused_as_pack_refuses_it() -> None:
    with pytest.raises(Refused) as exc:
        choose_files(entries(["SKILL.md"]) + [Entry("120000", "blob", "1" * 40, "docs/link.md")], IgnoreRules(None))
    assert exc.value.member == "docs/link.md" and exc.value.rule == "no links"


def test_a_submodule_is_left_out_with_a_note() -> None:
    chosen = choose_files(entries(["SKILL.md"]) + [Entry("160000", "commit", "2" * 40, "vendor/lib")], IgnoreRules(None))
    assert [e.path for e in chosen.files] == ["SKILL.md"] and chosen.notes == ["submodule 'vendor/lib' left out: submodules are never fetched"]
