"""Reading references out of Markdown the way an agent reads them: links only in prose, commands
only in shell code, placeholders for the skill's folder, words that are not files."""

from __future__ import annotations

import pytest

from skillctl.skill.references import find_references, split_token

FOLDERS = frozenset({"scripts", "references", "templates"})


def refs(text: str, name: str = "demo") -> list[tuple[str, str, str]]:
    return [(r.raw, r.kind, r.role) for r in find_references(text, name, FOLDERS)]


def test_links_in_prose_are_links_and_in_code_are_not() -> None:
    text = "See [the guide](references/guide.md).\n\n```python\nrxn = '[C:1](=[O:2])'\n```\n`[x](scripts/y.py)`\n"
    # the last one is code: a path mentioned, not a link and not a command
    assert refs(text) == [("references/guide.md", "link", ""), ("scripts/y.py", "code", "")]


def test_a_smiles_string_in_prose_is_not_a_path() -> None:
    # `=`, `[` and `]` are not characters of a link target a skill would write
    assert refs("The reaction [C:1](=[O:2]) closes the ring.\n") == []


def test_reference_style_link_definitions() -> None:
    assert refs("[guide]: references/guide.md\n") == [("references/guide.md", "link", "")]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("{baseDir}/scripts/run.py", "scripts/run.py"),
        ("${CLAUDE_SKILL_DIR}/scripts/run.py", "scripts/run.py"),
        ("$SKILL_DIR/scripts/run.py", "scripts/run.py"),
        ("<path-to-skill>/scripts/run.py", "scripts/run.py"),
        ("{{skill_dir}}/scripts/run.py", "scripts/run.py"),
        (".claude/skills/demo/scripts/run.py", "scripts/run.py"),
        ("~/.agents/skills/demo/references/a.md", "references/a.md"),
        ("./scripts/run.py", "scripts/run.py"),
        ("templates/page.html", "templates/page.html"),  # a folder the skill has
    ],
)
def test_paths_into_the_skill_however_written(written: str, expected: str) -> None:
    assert split_token(written, "demo", FOLDERS) is not None
    assert split_token(written, "demo", FOLDERS)[0] == expected


@pytest.mark.parametrize(
    "written",
    ["{project}/scripts/run.py", "$HOME/scripts/run.py", "${PLUGIN_ROOT}/scripts/x.py", "/usr/bin/python3", "https://x.io/scripts/a",
     "src/app/main.py", ".claude/skills/other/scripts/run.py", "and/or", "references/{a"],
)
def test_paths_that_are_not_this_skills(written: str) -> None:
    assert split_token(written, "demo", FOLDERS) is None


def test_commands_and_interpreters_in_shell_code() -> None:
    text = (
        "```bash\n"
        "scripts/run.sh --in x\n"
        "python3 scripts/a.py && ./scripts/b.py\n"
        "uv run scripts/c.py\n"
        "sudo DEBUG=1 scripts/d.sh | tee log\n"
        "cat references/notes.md\n"
        "npx tsx scripts/e.ts\n"
        "```\n"
    )
    assert refs(text) == [
        ("scripts/run.sh", "code", "command"),
        ("scripts/a.py", "code", "interpreted"),
        ("scripts/b.py", "code", "command"),
        ("scripts/c.py", "code", "interpreted"),
        ("scripts/d.sh", "code", "command"),
        ("references/notes.md", "code", ""),
        ("scripts/e.ts", "code", "interpreted"),
    ]


def test_code_in_another_language_runs_nothing() -> None:
    assert refs("```python\nsubprocess.run(['scripts/x.sh'])\n```\n") == [("scripts/x.sh", "code", "")]


def test_an_unlabelled_fence_is_commands_as_in_the_spec() -> None:
    # the spec's own example: "Run the extraction script:" then scripts/extract.py in a fence
    assert refs("Run the extraction script:\n```\nscripts/extract.py\n```\n") == [("scripts/extract.py", "code", "command")]


def test_inline_code_runs_with_arguments_or_when_the_text_says_run() -> None:
    assert refs("Use `scripts/x.py` for that.\n") == [("scripts/x.py", "code", "")]
    assert refs("Call `scripts/x.py --all`.\n") == [("scripts/x.py", "code", "command")]
    assert refs("Run `scripts/x.py` first.\n") == [("scripts/x.py", "code", "command")]
    assert refs("Run scripts/x.py first.\n") == [("scripts/x.py", "prose", "command")]


def test_a_folder_is_never_run() -> None:
    assert refs("```\nscripts/\n  references/\n```\n") == [("scripts/", "code", ""), ("references/", "code", "")]


def test_windows_paths_and_files_at_the_root() -> None:
    assert refs("```\npython scripts\\convert.py x.xlsx\npython3 tool.py setup\n```\n") == [
        ("scripts/convert.py", "code", "interpreted"),
        ("tool.py", "code", "interpreted"),
    ]


def test_console_prompts_are_not_commands() -> None:
    assert refs("```console\n$ scripts/run.sh\n```\n") == [("scripts/run.sh", "code", "command")]


def test_line_numbers_and_sentence_ends_are_not_part_of_the_path() -> None:
    assert [r[0] for r in refs("Fix scripts/x.py:42 and references/a.md.\n")] == ["scripts/x.py", "references/a.md"]


def test_locations_are_zero_based_line_and_column() -> None:
    [r] = find_references("intro\n\nSee [g]({baseDir}/references/g.md).\n", "demo", FOLDERS)
    assert (r.line, r.column, r.raw, r.placeholder) == (2, 18, "references/g.md", True)


# The fast forms of two searches must find what their plain forms find: the validator's output
# may not change with how it searches.

LINES = [
    "run tool.py", "run tool.PY now", "a.py.sh", ".py alone", "x.pyc is not", "x.py3", "run.sh.", "é.sh", "ſ.sh",
    "x.r", "x.rb", "x.R.", "x._py", "x..py", "a-b.ps1 c", "__init__.py", "x.lua\n", "", "....", "x.\npy", "see e.g. this",
]


@pytest.mark.parametrize("line", LINES)
def test_the_file_name_pattern_matches_the_lines_its_plain_form_matches(line) -> None:
    import re

    from skillctl.skill.references import file_name_pattern

    extensions = ("py", "sh", "r", "rb", "ps1", "lua")
    plain = re.compile(r"\w\.(?:" + "|".join(extensions) + r")\b", re.IGNORECASE)
    fast = file_name_pattern(extensions)
    assert bool(fast.search(line)) == bool(plain.search(line))
    lines_of = lambda pattern: {line[: m.start()].count("\n") for m in pattern.finditer(line)}  # noqa: E731
    assert lines_of(fast) == lines_of(plain)


@pytest.mark.parametrize(
    "text",
    ["see references/a.md", "(x/y.md", "a b\n.md", "a b\n\n.md", "\n.md", ".md", "x" * 300 + ".md", "`a`b.md", "é/ü.md", "a\r.md"],
)
def test_the_word_before_a_markdown_extension_is_found_as_the_plain_regex_finds_it(text) -> None:
    import re

    from skillctl.skill.refcheck import _word_start

    plain = re.compile(r"[^\s()<>\[\]`'\"|*,;=]+$")
    for end in range(len(text) + 1):
        m = plain.search(text, max(0, end - 256), end)
        assert _word_start(text, end) == (None if m is None else m.start()), end
