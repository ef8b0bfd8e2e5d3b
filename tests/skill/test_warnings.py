"""Warnings worth reading: each rule fires on what an author would fix, not on the look-alikes
found in real skills (placeholders, example paths, globs, prose, code, slash commands, scripts
run through an interpreter), and says what to do."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillctl.errors import SkillctlError
from skillctl.registry.prepare import prepare_folder
from skillctl.skill.refcheck import SPEC_CHAIN_ADVICE

from .helpers import BODY_START, check, codes, make_skill, only, script, with_code


def messages(report, code: str) -> list[str]:
    return [d.message for d in with_code(report, code)]


def body(*lines: str) -> str:
    return "\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------ SK211: missing files


@pytest.mark.parametrize(
    "line",
    [
        "Run `python3 {baseDir}/scripts/go.py` now.",
        "Run `python3 ${CLAUDE_SKILL_DIR}/scripts/go.py`.",
        "See [the notes]({baseDir}/references/notes.md).",
        "Load <skill-dir>/references/notes.md when needed.",
    ],
)
def test_a_placeholder_for_the_skill_folder_is_checked_behind_it(in_tmp: Path, line: str) -> None:
    make_skill(in_tmp, body=body(line))
    [d] = with_code(only(check("demo")), "SK211")
    assert "does not exist in the skill" in d.message
    # and with the file there, nothing to say
    make_skill(in_tmp, body=body(line), files={"scripts/go.py": "print()\n", "references/notes.md": "# N\n"})
    assert codes(only(check("demo"))) == []


@pytest.mark.parametrize(
    "line",
    [
        "Write the output to `{project}/scripts/out.py`.",  # somebody else's folder
        "Save it as `path/to/file.ext`.",  # an example path
        "Name it `references/your-topic.md`.",
        "Read every `references/setup-*` file.",  # a glob that matches
        "The references/citations section lists them.",  # prose: a word, not a file
        "Update the user's [README](README.md).",  # the user's own project file
        "Example: `scripts/rotate_pdf.py` for PDF rotation.",  # shown as an example
        "Run `./gradlew build` in the project.",  # the user's file, not a skill folder
        "Put checks under `scripts/ci/`.",  # a folder named in passing
        "For phase N read `references/phaseN.md`.",  # a placeholder letter
        "Store it in `assets/<name>.json`.",
    ],
)
def test_look_alikes_are_not_missing_files(in_tmp: Path, line: str) -> None:
    make_skill(in_tmp, body=body(line), files={"references/setup-linux.md": "# L\n", "scripts/ok.sh": script()})
    assert codes(only(check("demo"))) == [], line


def test_a_glob_that_matches_nothing_is_reported(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("Read `references/setup-*.md` first."), files={"references/other.md": "# O\n"})
    assert messages(only(check("demo")), "SK211") == ["no file matches 'references/setup-*.md'; add the files or fix the pattern"]


def test_brace_globs_and_shell_ranges(in_tmp: Path) -> None:
    files = {"references/vector-a-x.md": "#\n", "references/vector-b-y.md": "#\n"}
    make_skill(in_tmp, body=body("Read `references/vector-{a..b}-*.md` and `references/vector-{a,b}-*.md`."), files=files)
    assert codes(only(check("demo"))) == []


def test_wrong_case_is_named(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("See [security](references/security.md)."), files={"references/Security.md": "# S\n"})
    [message] = messages(only(check("demo")), "SK211")
    assert "it exists as 'references/Security.md'" in message and "case-sensitive" in message


def test_nearest_file_is_suggested(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("See [api](reference/api.md)."), files={"references/api.md": "# A\n", "reference/.keep": ""})
    [message] = messages(only(check("demo")), "SK211")
    assert "did you mean 'references/api.md'?" in message


def test_a_file_found_above_the_skill_is_named(in_tmp: Path) -> None:
    # a plugin keeping shared scripts next to its skills/ folder: the skill installed alone lacks them
    (in_tmp / "plugin" / "scripts").mkdir(parents=True)
    (in_tmp / "plugin" / "scripts" / "plan.py").write_text("print()\n")
    make_skill(in_tmp / "plugin" / "skills", body=body("Run `python3 scripts/plan.py --all`."))
    [message] = messages(only(check("plugin/skills/demo")), "SK211")
    assert "is not in the skill but at '../../scripts/plan.py'" in message and "move the file into the skill" in message


def test_a_script_run_by_the_instructions_must_exist_even_in_a_folder_the_skill_lacks(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("```bash", "python3 scripts/go.py", "```"))
    [d] = with_code(only(check("demo")), "SK211")
    assert (d.line, d.column) == (BODY_START + 2, 9)


def test_a_path_mentioned_into_a_folder_the_skill_lacks_is_about_another_tree(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("A `scripts/rotate_pdf.py` would help a skill like this."))
    assert codes(only(check("demo"))) == []
    make_skill(in_tmp, body=body("A `scripts/rotate_pdf.py` would help a skill like this."), files={"scripts/other.py": ""})
    assert codes(only(check("demo"))) == ["SK211"]


# ------------------------------------------------------------------ SK212: reference chains


def test_chain_is_reported_once_per_intermediate_file_with_the_spec_quoted(in_tmp: Path) -> None:
    files = {
        "references/index.md": "# I\n\n[a](a.md), [b](b.md) and [c](c.md).\n",
        "references/a.md": "#\n", "references/b.md": "#\n", "references/c.md": "#\n",
    }
    make_skill(in_tmp, body=body("Start with [the index](references/index.md)."), files=files)
    [d] = with_code(only(check("demo")), "SK212")
    assert d.file == "demo/references/index.md" and (d.line, d.column) == (3, 5)
    assert d.message.startswith("'references/a.md' and 2 more (references/b.md, references/c.md) can only be reached through")
    assert f'"{SPEC_CHAIN_ADVICE}"' in d.message
    assert SPEC_CHAIN_ADVICE == "Keep file references one level deep from SKILL.md. Avoid deeply nested reference chains."


def test_folder_depth_alone_is_not_a_chain(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("See [v2](references/api/v2/spec.md)."), files={"references/api/v2/spec.md": "# S\n"})
    assert codes(only(check("demo"))) == []


def test_bare_paths_in_a_referenced_file_are_read_from_the_skill_root(in_tmp: Path) -> None:
    files = {"references/guide.md": "Also read references/extra.md.\n", "references/extra.md": "#\n"}
    make_skill(in_tmp, body=body("Read [the guide](references/guide.md)."), files=files)
    assert codes(only(check("demo"))) == ["SK212"]
    make_skill(in_tmp, body=body("Read [the guide](references/guide.md) and [extra](references/extra.md)."), files=files)
    assert codes(only(check("demo"))) == []


def test_a_script_or_a_back_link_to_skill_md_is_no_chain(in_tmp: Path) -> None:
    files = {"references/guide.md": "Back to [SKILL.md](../SKILL.md); run `python3 scripts/x.py`.\n", "scripts/x.py": "print()\n"}
    make_skill(in_tmp, body=body("Read [the guide](references/guide.md)."), files=files)
    assert codes(only(check("demo"))) == []


# ------------------------------------------------------------------ SK213: outside the skill


def test_slash_commands_are_not_paths(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("Then run [/deploy](/deploy) or [/plugin:review](/plugin:review)."))
    assert codes(only(check("demo"))) == []


def test_a_file_of_a_sibling_skill_is_named(in_tmp: Path) -> None:
    make_skill(in_tmp / "skills", name="shared", files={"references/tools.md": "# T\n"})
    make_skill(in_tmp / "skills", body=body("See `../shared/references/tools.md` for the tool list."))
    [message] = messages(only(check("skills/demo")), "SK213")
    assert "(it is in the sibling skill 'shared')" in message and "copy the file into the skill" in message


def test_parent_paths_in_example_code_are_the_users(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("```ruby", "require_relative '../lib/server'", "```", "Project at `../ml-service`."))
    assert codes(only(check("demo"))) == []


def test_a_link_out_of_the_skill_is_reported_even_when_missing(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("See [the README](../../README.md#scripts)."))
    assert codes(only(check("demo"))) == ["SK213"]


# ------------------------------------------------------------------ SK221/SK222: run directly


def test_a_script_run_through_an_interpreter_needs_no_shebang_or_run_bit(in_tmp: Path) -> None:
    text = body("```bash", "python3 scripts/a.py", "pwsh -File scripts/b.ps1", "node scripts/c.jsx", "```")
    make_skill(in_tmp, body=text, files={"scripts/a.py": "print()\n", "scripts/b.ps1": "Write-Host\n", "scripts/c.jsx": "x\n"})
    assert codes(only(check("demo"))) == []


def test_data_files_in_scripts_are_left_alone(in_tmp: Path) -> None:
    files = {"scripts/data.gz": b"\x1f\x8b\x08", "scripts/template.xml": "<a/>\n", "scripts/page.html": "<p>\n", "scripts/.gitignore": "x\n"}
    make_skill(in_tmp, body=body("Use the files in scripts/."), files=files)
    assert codes(only(check("demo"))) == ["SK233"]  # only the hidden .gitignore: a packaging note


@pytest.mark.parametrize(
    ("name", "advice"),
    [
        ("go.py", "add '#!/usr/bin/env python3' as its first line, or run it as `python3 scripts/go.py`"),
        ("go.ps1", "add '#!/usr/bin/env pwsh' as its first line, or run it as `pwsh scripts/go.ps1`"),
        ("go.sh", "add '#!/bin/sh' as its first line, or run it as `sh scripts/go.sh`"),
        ("go", "run it through its interpreter in the instructions instead"),
    ],
)
def test_a_script_run_directly_gets_advice_that_fits_its_type(in_tmp: Path, name: str, advice: str) -> None:
    make_skill(in_tmp, body=body("```", f"scripts/{name} --all", "```"), files={f"scripts/{name}": ("x = 1\n", 0o644)})
    report = only(check("demo"))
    [missing] = messages(report, "SK221")
    assert f"scripts/{name} is run directly (SKILL.md:{BODY_START + 2}) but has no shebang line; {advice}" in missing
    [mode] = messages(report, "SK222")
    assert f"chmod +x scripts/{name}" in mode and "git update-index --chmod=+x" in mode


def test_a_binary_run_directly_needs_no_shebang(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("```", "scripts/tool --help", "```"), files={"scripts/tool": (b"\x7fELF\x02\x01\x01", 0o755)})
    assert codes(only(check("demo"))) == []


def test_shebang_without_run_bit_unless_run_through_an_interpreter(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("Nothing runs it."), files={"scripts/x.py": ("#!/usr/bin/env python3\n", 0o644)})
    [message] = messages(only(check("demo")), "SK222")
    assert "starts with a shebang but is not executable" in message and "only run as `python3 scripts/x.py`" in message
    make_skill(in_tmp, body=body("`python scripts\\x.py` does it."), files={"scripts/x.py": ("#!/usr/bin/env python3\n", 0o644)})
    assert codes(only(check("demo"))) == []


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"scripts/x.py": ('#!/usr/bin/env python3\n"""Usage: uv run x.py --in FILE"""\n', 0o644)}, "its usage runs it with uv"),
        ({"scripts/x.py": ("#!/usr/bin/env python3\n", 0o644), "scripts/main.py": ("import x\n", 0o755)}, "imported by another script"),
        ({"scripts/x.py": ("#!/usr/bin/env python3\n", 0o644), "scripts/all.py": ("run('x.py')\n", 0o755)}, "run by another script"),
        ({"scripts/test_x.py": ("#!/usr/bin/env python3\n", 0o644)}, "a test file"),
    ],
)
def test_shebang_without_run_bit_that_needs_none(in_tmp: Path, files: dict, why: str) -> None:
    make_skill(in_tmp, body=body("Nothing here runs it directly."), files=files)
    assert codes(only(check("demo"))) == [], why


def test_an_interpreter_given_a_path_outside_the_skill_still_names_the_script(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("```", "python /path/to/demo/scripts/x.py --all", "```"), files={"scripts/x.py": ("#!/usr/bin/env python3\n", 0o644)})
    assert codes(only(check("demo"))) == []


def test_a_markdown_file_is_read_not_run(in_tmp: Path) -> None:
    make_skill(in_tmp, body=body("```", "references/guide.md   the guide", "```"), files={"references/guide.md": "# G\n"})
    assert codes(only(check("demo"))) == []


def test_commands_in_a_referenced_file_count(in_tmp: Path) -> None:
    files = {"references/how.md": "```bash\nscripts/go.sh\n```\n", "scripts/go.sh": ("echo\n", 0o644)}
    make_skill(in_tmp, body=body("See [how](references/how.md)."), files=files)
    report = only(check("demo"))
    assert sorted(codes(report)) == ["SK221", "SK222"]
    assert "(how.md:2)" in messages(report, "SK221")[0]


# ------------------------------------------------------------------ SK301: "1.0"


def test_major_minor_is_a_note_and_packs_as_major_minor_zero(in_tmp: Path) -> None:
    folder = make_skill(in_tmp, front_matter_text='name: demo\ndescription: d\nmetadata:\n  version: "1.0"\n')
    report = only(check("demo"))
    [d] = report.diagnostics
    assert (d.code, d.severity) == ("SK301", "info") and report.valid(strict=True)
    assert "write \"1.0.0\"" in d.message
    assert prepare_folder(folder).version == "1.0.0"
    assert report.skill is not None and report.skill.front_matter()["metadata"] == {"version": "1.0"}  # as written


@pytest.mark.parametrize("version, codes_found", [
    ("99999999999999999999.0.0", ["SK241"]),
    ("9007199254740992.0.0", ["SK241"]),
    ("1.0.0-rc.99999999999999999999", ["SK241"]),
    ("99999999999999999999.0", ["SK241", "SK301"]),  # read as …0.0.0: still over the bound
])
def test_a_version_number_over_the_bound_is_a_located_warning_and_is_not_packed(in_tmp: Path, version: str,
                                                                                codes_found: list[str]) -> None:
    folder = make_skill(in_tmp, front_matter_text=f'name: demo\ndescription: d\nmetadata:\n  version: "{version}"\n')
    report = only(check("demo"))
    assert sorted(codes(report)) == codes_found
    [d] = with_code(report, "SK241")
    assert (d.line, d.column) == (5, 12) and "is over 9007199254740991 (2^53-1)" in d.message
    with pytest.raises(SkillctlError, match="is over 9007199254740991"):
        prepare_folder(folder)


def test_the_largest_version_number_passes(in_tmp: Path) -> None:
    make_skill(in_tmp, front_matter_text='name: demo\ndescription: d\nmetadata:\n  version: "9007199254740991.0.0"\n')
    assert codes(only(check("demo"))) == []


def test_run_bits_come_from_the_file_system(in_tmp: Path) -> None:
    folder = make_skill(in_tmp, body=body("```", "scripts/go.sh", "```"), files={"scripts/go.sh": script()})
    assert codes(only(check("demo"))) == []
    os.chmod(folder / "scripts" / "go.sh", 0o644)
    assert codes(only(check("demo"))) == ["SK222"]
