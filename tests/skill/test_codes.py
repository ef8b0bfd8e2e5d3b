"""One case per diagnostic code: the input that triggers it, and the nearest input that does not.

Each case checks code, severity, file, line and (where meaningful) column, and that an error makes
the skill invalid. Its ``near`` input differs only in the offending detail and must not produce
the code, so removing a rule turns its case red. ``test_every_code_has_a_case`` turns a new code
without a case red.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from skillctl.skill.diagnostics import CODES
from skillctl.skill.document import MAX_SKILL_MD_BYTES
from skillctl.skill.discovery import MAX_SEARCH_DEPTH, MAX_SEARCH_FOLDERS
from skillctl.skill.files import LARGE_FILE, MAX_DEPTH, MAX_ENTRIES
from skillctl.skill.validate import check_skill, validate_paths

from .helpers import BODY, DESCRIPTION, check, front_matter, make_skill, nest, only, script, touch_many, with_code

Build = Callable[[Path], str]  # builds under the cwd, returns the PATH argument to validate


@dataclass(frozen=True)
class Case:
    code: str
    build: Build
    near: Build
    file: str  # expected Diagnostic.file
    line: int
    column: int | None = None  # None: not meaningful for this code
    near_clean: bool = True  # the near input has no diagnostics at all
    case_id: str = ""
    count: int = 1  # diagnostics with this code expected from ``build``
    # check_skill: the library entry point pack/publish use on one folder. `validate` only
    # checks folders that hold a SKILL.md (others are searched for skills), so SK001 is seen here.
    # "search": the code is about the search for skills (a report of its own, not a skill's).
    # "packaging": validate_paths(packaging=True), what `skillctl validate` runs.
    api: str = "validate"
    profile: str = "spec"


def skill(**kw) -> Build:
    def build(root: Path) -> str:
        make_skill(root, **kw)
        return kw.get("folder") or kw.get("name", "demo")

    return build


def fm(extra: str = "", name: str = "demo", description: str = DESCRIPTION) -> str:
    return front_matter(name, description, extra)


def _no_skill_md(root: Path) -> str:
    (root / "demo").mkdir()
    (root / "demo" / "README.md").write_text("# not a skill\n")
    return "demo"


def _lowercase_skill_md(root: Path) -> str:
    folder = make_skill(root)
    (folder / "SKILL.md").rename(folder / "skill.md")
    return "demo"


def _skill_md_is_dir(root: Path) -> str:
    folder = root / "demo"
    (folder / "SKILL.md").mkdir(parents=True)
    return "demo"


def _skill_md_utf8(body_line: bytes) -> Build:
    def build(root: Path) -> str:
        raw = ("---\n" + fm() + "---\n\n# Demo\n\n").encode() + body_line + b"\n"
        make_skill(root, skill_md=raw)
        return "demo"

    return build


def _skill_md_sized(size: int) -> Build:
    def build(root: Path) -> str:
        head = ("---\n" + fm() + "---\n\n").encode()
        line = b"Padding text for a large instruction file.\n"
        body = (line * (size // len(line) + 1))[: size - len(head)]
        make_skill(root, skill_md=head + body)
        return "demo"

    return build


def _with_fifo(kind: str) -> Build:
    def build(root: Path) -> str:
        folder = make_skill(root)
        if kind == "fifo":
            os.mkfifo(folder / "pipe")
        else:
            (folder / "pipe").write_text("data\n")
        return "demo"

    return build


def _with_symlink(link: bool) -> Build:
    def build(root: Path) -> str:
        folder = make_skill(root)
        if link:
            os.symlink("SKILL.md", folder / "alias.md")
        else:
            (folder / "alias.md").write_text("data\n")
        return "demo"

    return build


def _with_large_file(size: int) -> Build:
    def build(root: Path) -> str:
        folder = make_skill(root, files={"assets/big.bin": b""})
        os.truncate(folder / "assets" / "big.bin", size)  # sparse: the size is what matters
        return "demo"

    return build


def _nested(levels: int) -> Build:
    def build(root: Path) -> str:
        folder = make_skill(root)
        nest(folder, levels)
        return "demo"

    return build


def _entries(count: int) -> Build:
    def build(root: Path) -> str:
        folder = make_skill(root)  # SKILL.md is one entry
        touch_many(folder / "data", count - 2)  # the data folder is another
        return "demo"

    return build


def _missing_path(root: Path) -> str:
    return "nothing-here"


def _deep_path(levels: int) -> str:
    return "/".join(["d"] * levels)


def _repo_with_folders(count: int) -> Build:
    def build(root: Path) -> str:
        make_skill(root / "repo", name="top")  # one folder
        touch_dirs(root / "repo" / "data", count - 2)  # data/ is another
        return "repo"

    return build


def _repo_with_skill_at_depth(levels: int) -> Build:
    def build(root: Path) -> str:
        make_skill(root / "repo", name="top")
        make_skill(root / "repo" / _deep_path(levels - 1), name="deep")
        return "repo"

    return build


def touch_dirs(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"d{i:05d}").mkdir()


RUN_BODY = "\n# Demo\n\n```sh\nscripts/go.py --input data.csv\n```\n"  # runs scripts/go.py directly
CHAIN_BODY = "\n# Demo\n\nSee [the notes](references/notes.md).\n"


NAME65 = "a" * 65
REF_BODY = "\n# Demo\n\nRun `scripts/go.sh` now.\n"  # the reference: line 8, column 6
LINK_BODY = "\n# Demo\n\nSee [notes]({target}) first.\n"  # link target: line 8, column 13

CASES: list[Case] = [
    # --- SK0xx: the file itself
    Case("SK001", _no_skill_md, skill(), "demo/SKILL.md", 0, api="check_skill"),
    Case("SK002", _lowercase_skill_md, skill(), "demo/skill.md", 0),
    Case("SK003", skill(skill_md=b"# Demo\n\nNo front matter here.\n"), skill(), "demo/SKILL.md", 1, 1),
    Case("SK004", skill(skill_md=("---\n" + fm() + "\n# Demo\n\nText.\n").encode()), skill(), "demo/SKILL.md", 1, 1),
    Case("SK005", skill(front_matter_text="name: demo\ndescription: use: it\n"), skill(front_matter_text='name: demo\ndescription: "use: it"\n'), "demo/SKILL.md", 3, 17),
    Case("SK006", skill(front_matter_text=f"- name: demo\n- description: {DESCRIPTION}\n"), skill(), "demo/SKILL.md", 2, 1),
    Case("SK006", skill(front_matter_text=""), skill(), "demo/SKILL.md", 1, 1, case_id="SK006-empty"),
    Case("SK007", _skill_md_utf8(b"Serve caf\xe9 au lait."), _skill_md_utf8("Serve café au lait.".encode()), "demo/SKILL.md", 8, 10),
    Case("SK008", skill(skill_md=("---\n" + fm() + "---\n\n# Demo\n").encode() + b"\x00\x01\x02"), skill(), "demo/SKILL.md", 0),
    Case("SK009", _skill_md_sized(MAX_SKILL_MD_BYTES + 1), _skill_md_sized(MAX_SKILL_MD_BYTES), "demo/SKILL.md", 0, near_clean=False),
    Case("SK010", skill(front_matter_text=fm("name: demo\n")), skill(), "demo/SKILL.md", 4, 1),
    Case("SK011", _skill_md_is_dir, skill(), "demo/SKILL.md", 0),
    Case("SK012", _missing_path, skill(), "nothing-here", 0),
    # --- SK1xx: front matter (what the spec forbids)
    Case("SK101", skill(front_matter_text=f"description: {DESCRIPTION}\n"), skill(), "demo/SKILL.md", 1, 1),
    Case("SK102", skill(front_matter_text=fm(name="42")), skill(), "demo/SKILL.md", 2, 7),
    Case("SK102", skill(front_matter_text=fm(name='""')), skill(), "demo/SKILL.md", 2, 7, case_id="SK102-empty"),
    Case("SK103", skill(name=NAME65), skill(name="a" * 64), f"{NAME65}/SKILL.md", 2, 7),
    Case("SK104", skill(name="Demo"), skill(name="demo"), "Demo/SKILL.md", 2, 7),
    Case("SK105", skill(name="demo-"), skill(name="demo"), "demo-/SKILL.md", 2, 7),
    Case("SK105", skill(name="-demo"), skill(name="demo"), "-demo/SKILL.md", 2, 7, case_id="SK105-leading"),
    Case("SK106", skill(name="de--mo"), skill(name="de-mo"), "de--mo/SKILL.md", 2, 7),
    Case("SK107", skill(folder="other"), skill(), "other/SKILL.md", 2, 7),
    Case("SK111", skill(front_matter_text="name: demo\n"), skill(), "demo/SKILL.md", 1, 1),
    Case("SK112", skill(front_matter_text=fm(description='""')), skill(), "demo/SKILL.md", 3, 14),
    Case("SK112", skill(front_matter_text=fm(description="42")), skill(), "demo/SKILL.md", 3, 14, case_id="SK112-number"),
    Case("SK112", skill(front_matter_text=fm(description='"   "')), skill(), "demo/SKILL.md", 3, 14, case_id="SK112-blank"),
    Case("SK113", skill(front_matter_text=fm(description="d" * 1025)), skill(front_matter_text=fm(description="d" * 1024)), "demo/SKILL.md", 3, 14),
    Case("SK121", skill(front_matter_text=fm('compatibility: ""\n')), skill(front_matter_text=fm("compatibility: Needs python3\n")), "demo/SKILL.md", 4, 16),
    Case("SK121", skill(front_matter_text=fm("compatibility: 3\n")), skill(front_matter_text=fm("compatibility: Needs python3\n")), "demo/SKILL.md", 4, 16, case_id="SK121-number"),
    Case("SK122", skill(front_matter_text=fm("compatibility: " + "c" * 501 + "\n")), skill(front_matter_text=fm("compatibility: " + "c" * 500 + "\n")), "demo/SKILL.md", 4, 16),
    Case("SK131", skill(front_matter_text=fm("metadata: just text\n")), skill(front_matter_text=fm("metadata:\n  author: me\n")), "demo/SKILL.md", 4, 11),
    Case("SK132", skill(front_matter_text=fm("metadata:\n  build: 7\n")), skill(front_matter_text=fm('metadata:\n  build: "7"\n')), "demo/SKILL.md", 5, 10),
    Case("SK132", skill(front_matter_text=fm("metadata:\n  1: one\n  2: two\n")), skill(front_matter_text=fm('metadata:\n  "1": one\n  "2": two\n')), "demo/SKILL.md", 5, 3, case_id="SK132-keys", count=2),
    # a block list starts on the line after its key: the key's line is where the value is
    Case("SK141", skill(front_matter_text=fm("allowed-tools:\n  - Bash\n  - Read\n")), skill(front_matter_text=fm("allowed-tools: Bash Read\n")), "demo/SKILL.md", 4, 1),
    Case("SK141", skill(front_matter_text=fm("allowed-tools: [Bash, Read]\n")), skill(front_matter_text=fm("allowed-tools: Bash Read\n")), "demo/SKILL.md", 4, 16, case_id="SK141-flow"),
    Case("SK151", skill(front_matter_text=fm("license: 2\n")), skill(front_matter_text=fm("license: Apache-2.0\n")), "demo/SKILL.md", 4, 10),
    # an unknown field is shown at its key, whatever its value looks like
    Case("SK161", skill(front_matter_text=fm("version: 1.0.0\n")), skill(front_matter_text=fm('metadata:\n  version: "1.0.0"\n')), "demo/SKILL.md", 4, 1),
    Case("SK161", skill(front_matter_text=fm("requires:\n  mcp:\n    - rube\n")), skill(), "demo/SKILL.md", 4, 1, case_id="SK161-block"),
    Case("SK161", skill(front_matter_text=fm("argument-hint: [file]\n")), skill(), "demo/SKILL.md", 4, 1, case_id="SK161-flow"),
    Case(
        "SK162",
        skill(front_matter_text=fm('disable-model-invocation: "yes"\n')),
        skill(front_matter_text=fm("disable-model-invocation: true\n")),
        "demo/SKILL.md", 4, 27, profile="claude-code",
    ),
    Case(
        "SK162",
        skill(front_matter_text=fm("metadata:\n  short-description: " + "s" * 1025 + "\n")),
        skill(front_matter_text=fm("metadata:\n  short-description: " + "s" * 1024 + "\n")),
        "demo/SKILL.md", 5, 22, profile="codex", case_id="SK162-codex-length",
    ),
    # --- SK2xx: warnings (what the spec recommends, packaging hygiene)
    Case("SK201", skill(body="line\n" * 501), skill(body="line\n" * 500), "demo/SKILL.md", 5 + 500, 1),
    Case("SK202", skill(body="t" * (5001 * 4)), skill(body="t" * (5000 * 4)), "demo/SKILL.md", 5, 1),
    Case("SK203", skill(body=""), skill(), "demo/SKILL.md", 5, 1),
    Case("SK203", skill(body="\n\n   \n"), skill(), "demo/SKILL.md", 5, 1, case_id="SK203-blank"),
    Case("SK204", skill(skill_md=b"\xef\xbb\xbf" + ("---\n" + fm() + "---\n" + BODY).encode()), skill(), "demo/SKILL.md", 1, 1),
    Case("SK211", skill(body=REF_BODY), skill(body=REF_BODY, files={"scripts/go.sh": script()}), "demo/SKILL.md", 8, 6),
    Case("SK211", skill(body=LINK_BODY.format(target="references/notes.md")), skill(body=LINK_BODY.format(target="references/notes.md"), files={"references/notes.md": "# Notes\n"}), "demo/SKILL.md", 8, 13, case_id="SK211-link"),
    # a chain: SKILL.md → notes.md → more.md (line 3, column 5 of notes.md); folder depth alone is fine
    Case(
        "SK212",
        skill(body=CHAIN_BODY, files={"references/notes.md": "# N\n\nAlso [more](more.md).\n", "references/more.md": "# M\n"}),
        skill(body=CHAIN_BODY + "And [more](references/more.md).\n", files={"references/notes.md": "# N\n\nAlso [more](more.md).\n", "references/more.md": "# M\n"}),
        "demo/references/notes.md", 3, 13,
    ),
    Case("SK213", skill(body=LINK_BODY.format(target="../shared/notes.md")), skill(body=LINK_BODY.format(target="shared/notes.md"), files={"shared/notes.md": "# N\n"}), "demo/SKILL.md", 8, 13),
    Case("SK213", skill(body=LINK_BODY.format(target="/etc/notes.md")), skill(body=LINK_BODY.format(target="etc/notes.md"), files={"etc/notes.md": "# N\n"}), "demo/SKILL.md", 8, 13, case_id="SK213-absolute"),
    # only a file the instructions run directly needs a shebang
    Case("SK221", skill(body=RUN_BODY, files={"scripts/go.py": ("print('hi')\n", 0o755)}), skill(body=RUN_BODY, files={"scripts/go.py": script("#!/usr/bin/env python3\nprint('hi')\n")}), "demo/scripts/go.py", 1, 1),
    Case("SK222", skill(files={"scripts/go.sh": ("#!/bin/sh\necho ok\n", 0o644)}), skill(files={"scripts/go.sh": script()}), "demo/scripts/go.sh", 0),
    Case("SK222", skill(body=RUN_BODY, files={"scripts/go.py": ("#!/usr/bin/env python3\n", 0o644)}), skill(body=RUN_BODY, files={"scripts/go.py": script("#!/usr/bin/env python3\n")}), "demo/scripts/go.py", 0, case_id="SK222-run-directly"),
    Case("SK231", _with_symlink(True), _with_symlink(False), "demo/alias.md", 0),
    Case("SK232", _with_large_file(LARGE_FILE + 1), _with_large_file(LARGE_FILE), "demo/assets/big.bin", 0),
    Case("SK233", skill(files={".DS_Store": b"\x00\x00\x00\x01Bud1"}), skill(), "demo/.DS_Store", 0),
    Case("SK233", skill(files={"scripts/__pycache__/go.cpython-311.pyc": b"\x00"}), skill(), "demo/scripts/__pycache__", 0, case_id="SK233-pycache"),
    Case("SK233", skill(files={".env": "TOKEN=x\n"}), skill(files={"env": "TOKEN=x\n"}), "demo/.env", 0, case_id="SK233-hidden"),
    Case("SK234", _with_fifo("fifo"), _with_fifo("file"), "demo/pipe", 0),
    Case("SK235", _nested(MAX_DEPTH + 1), _nested(MAX_DEPTH), "demo/" + _deep_path(MAX_DEPTH + 1), 0),
    Case("SK236", _entries(MAX_ENTRIES + 1), _entries(MAX_ENTRIES), "demo", 0),
    Case("SK237", _repo_with_folders(MAX_SEARCH_FOLDERS + 1), _repo_with_folders(MAX_SEARCH_FOLDERS), "repo", 0, api="search"),
    Case("SK241", skill(front_matter_text=fm('metadata:\n  version: "v1.0.0"\n')), skill(front_matter_text=fm('metadata:\n  version: "1.0.0"\n')), "demo/SKILL.md", 5, 12),
    Case("SK241", skill(front_matter_text=fm('metadata:\n  version: "1.0.0-preview"\n')), skill(front_matter_text=fm('metadata:\n  version: "1.0.0-rc.1"\n')), "demo/SKILL.md", 5, 12, case_id="SK241-pre-release"),
    Case("SK251", skill(files={"scripts/go.py": script("#!/usr/bin/env python3\nimport json\nimport yaml\n")}),
         skill(files={"scripts/go.py": script("#!/usr/bin/env python3\n# /// script\n# dependencies = [\"pyyaml\"]\n# ///\nimport json\nimport yaml\n")}),
         "demo/scripts/go.py", 3, 1),
    Case("SK252", skill(files={"scripts/go.py": script("#!/usr/bin/env python3\nimport json\n"), "requirements.txt": ("-e .\n", 0o644)}),
         skill(files={"scripts/go.py": script("#!/usr/bin/env python3\nimport json\n"), "requirements.txt": ("six\n", 0o644)}),
         "demo", 0),
    # --- SK3xx: notes
    Case("SK301", skill(front_matter_text=fm('metadata:\n  version: "1.0"\n')), skill(front_matter_text=fm('metadata:\n  version: "1.0.0"\n')), "demo/SKILL.md", 5, 12),
    Case("SK302", _repo_with_skill_at_depth(MAX_SEARCH_DEPTH + 1), _repo_with_skill_at_depth(MAX_SEARCH_DEPTH), "repo", 0, api="search"),
    # what pack and publish refuse: no metadata.version (noted when asked, as `skillctl validate` asks)
    Case("SK303", skill(), skill(front_matter_text=fm('metadata:\n  version: "0.1.0"\n')), "demo/SKILL.md", 1, 1, api="packaging"),
    Case("SK303", skill(front_matter_text=fm("metadata:\n  author: me\n")), skill(front_matter_text=fm('metadata:\n  author: me\n  version: "1.0"\n')),
         "demo/SKILL.md", 4, 1, api="packaging", near_clean=False, case_id="SK303-metadata-without-version"),
]


def _ids(case: Case) -> str:
    return case.case_id or case.code


def _run(case: Case, path: str):
    if case.api == "check_skill":
        return check_skill(Path(path), path, case.profile)
    reports = validate_paths([Path(path)], profile=case.profile, packaging=case.api == "packaging")
    if case.api == "search":
        notes = [r for r in reports if not r.is_skill]
        if notes:
            return only(notes)
        return only([r for r in reports if r.name != "top"] or reports)
    return only(reports)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_code_is_reported_at_its_location(case: Case, in_tmp: Path) -> None:
    report = _run(case, case.build(in_tmp))
    found = with_code(report, case.code)
    assert len(found) == case.count, [d.format() for d in report.diagnostics]
    d = found[0]
    severity = CODES[case.code][0]
    assert d.severity == severity
    assert (d.file, d.line) == (case.file, case.line), d.format()
    if case.column is not None:
        assert d.column == case.column, d.format()
    assert d.message.strip() and "\n" not in d.message
    if severity == "error":
        assert not report.valid(), "an error must make the skill invalid"
        assert report.skill is None
    elif severity == "warning":
        assert not report.valid(strict=True), "a warning must fail --strict"
    else:
        assert report.valid(strict=True), "a note never fails, not even --strict"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_nearest_valid_input_is_not_reported(case: Case, in_tmp: Path) -> None:
    report = _run(case, case.near(in_tmp))
    assert case.code not in {d.code for d in report.diagnostics}, [d.format() for d in report.diagnostics]
    assert report.valid(), [d.format() for d in report.errors]
    if case.near_clean:
        assert report.diagnostics == (), [d.format() for d in report.diagnostics]
        assert report.skill is not None


def test_every_code_has_a_case() -> None:
    """A new code in CODES without a case here goes red (and a case for an unknown code too)."""
    covered = {c.code for c in CASES}
    assert covered == set(CODES), f"no case for {sorted(set(CODES) - covered)}; unknown {sorted(covered - set(CODES))}"


def test_codes_are_stable_and_well_formed() -> None:
    for code, (severity, title) in CODES.items():
        assert len(code) == 5 and code.startswith("SK") and code[2:].isdigit(), code
        # SK0xx/SK1xx are errors (the spec forbids), SK2xx warnings (it recommends), SK3xx notes
        assert severity == {"2": "warning", "3": "info"}.get(code[2], "error"), code
        assert title and title == title.strip()
