"""PEP 723 blocks: the linear scanner finds what the PEP's reference regex finds, and a script
built to make that regex backtrack is validated within a small CPU budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillctl.env.declare import MAX_SCRIPT_BYTES, read_script_metadata
from skillctl.env.pep723 import blocks

from registry.helpers import run_cli, write_skill

# The reference implementation's regular expression, verbatim from PEP 723: the oracle.
REFERENCE_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def reference(text: str) -> list[tuple[str, int, int, str]]:
    return [(m.group("type"), m.start(), m.end(), m.group("content")) for m in REFERENCE_RE.finditer(text)]


def scanned(text: str) -> list[tuple[str, int, int, str]]:
    return [(b.type, b.start, b.end, b.content) for b in blocks(text)]


# Lines that matter to the grammar, and their near misses: headers of several types, closings
# with and without trailing text, content lines, comment lines that are not content ("#x"),
# lines that end in "\r", other whitespace (\x0c, \x85, \u2028: not line ends for ^ and $, but
# line ends for str.splitlines), code.
_LINES = st.sampled_from([
    "# /// script", "# /// pyproject", "# /// a-1", "# /// ", "# ///script", "#  /// script", "# /// script ",
    "# /// script\r", "# /// sc\x0cript", "# ///", "# /// ", "# ////", " # ///", "# ///\r", "#", "# ", "#x", "##",
    "# dependencies = []", '# requires-python = ">=3.10"', "# a = 1", "#\x0c", "# x\x85y", "# x\u2028# ///",
    "", " ", "x", "import os", "\r", "\x0c",
])
_HEADERS = st.sampled_from(["# /// script", "# /// script", "# /// tool", "# /// a-1"])
_CONTENT = st.sampled_from(["#", "# a = 1", "# dependencies = []", "# ///", "# /// script", "# x\x85y"])
# Well-formed blocks (header, content lines, closing), so that most texts hold some, mixed with
# the lines above, which make them overlap, nest, lose their closing or stop being blocks.
_BLOCK = st.tuples(_HEADERS, st.lists(_CONTENT, max_size=4), st.sampled_from(["# ///", "# ///", "# /// ", "#"])).map(
    lambda t: [t[0], *t[1], t[2]]
)
_SEGMENTS = st.lists(st.one_of(_BLOCK, _LINES.map(lambda line: [line])), max_size=10)
_TEXTS = st.one_of(
    st.tuples(_SEGMENTS, st.booleans()).map(lambda t: "\n".join(sum(t[0], [])) + ("\n" if t[1] else "")),
    st.text(alphabet="# /\nscript-a=\r\x0c", max_size=120),
)


@settings(max_examples=3000, deadline=None, database=None)
@given(_TEXTS)
def test_the_scanner_finds_exactly_the_blocks_the_reference_regex_finds(text):
    assert scanned(text) == reference(text), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        # the block ends at the last "# ///" before the first line that is not a content line
        "# /// script\n# a = 1\n# ///\n# b = 2\n# ///\nx = 1\n# ///\n",
        # a header with no closing opens nothing; the next header inside its run may
        "# /// script\n# /// tool\n# a = 1\n# ///\n",
        "# /// script\nx\n# /// script\n# a = 1\n# ///",  # the closing at the end of the text, no newline
        "# /// script\n# ///\n",  # no content line: not a block
        "# /// script\r\n# a = 1\r\n# ///\r\n",  # CRLF: "\r" is part of the line, so no block
        "# /// a\n#\n# ///\n" * 4,  # one run: one block, to its last closing
        "# /// a\n#\n# ///\nx\n" * 4,  # four runs: four blocks
    ],
)
def test_edge_cases_of_the_reference_grammar(text):
    assert scanned(text) == reference(text)


def test_two_blocks_of_other_types_and_one_script_block_read_the_script_block():
    text = "# /// pyproject\n# x = 1\n# ///\nimport os\n# /// script\n# dependencies = ['a']\n# ///\n\n# /// tool\n# y = 2\n# ///\n"
    assert read_script_metadata(text, "s.py") == {"dependencies": ["a"]}


def test_a_toml_error_keeps_its_line_number_within_the_block():
    with pytest.raises(Exception, match=r"s\.py: the '# /// script' block is not valid TOML \(.*line 2"):
        read_script_metadata("# /// script\n# a = 1\n# b = = 2\n# ///\n", "s.py")


# ------------------------------------------------------------------------------ hostile scripts

# CPU seconds a `skillctl validate` process may use on one hostile script. The linear scan
# needs well under one (interpreter start and imports included); the reference regex needed
# about 16 s for 12,000 headers on the development machine, and hours at the 2 MiB cap.
CPU_BUDGET_S = 5


def _hostile_skill(root: Path, script: str) -> Path:
    return write_skill(root, "hostile", None, body="# Hostile\n\nRun `python scripts/go.py`.\n",
                       files={"scripts/go.py": script})


@pytest.mark.parametrize(
    "script",
    [
        pytest.param("# /// script\n" * 12_000, id="12000-headers"),
        pytest.param("# /// script\n" * (MAX_SCRIPT_BYTES // 13) + "#" * (MAX_SCRIPT_BYTES % 13), id="headers-at-the-2MiB-cap"),
        pytest.param("# /// script\n" + "#\n" * ((MAX_SCRIPT_BYTES - 13) // 2), id="one-header-then-2MiB-of-comment-lines"),
    ],
)
def test_a_script_built_to_make_the_block_scan_backtrack_is_validated_within_a_cpu_budget(tmp_path, script):
    assert len(script.encode()) <= MAX_SCRIPT_BYTES  # scripts over the cap are not read for metadata at all
    skill = _hostile_skill(tmp_path, script)
    done = run_cli(["validate", str(skill)], cpu_seconds=CPU_BUDGET_S, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)  # -24: SIGXCPU, the budget ran out
    assert "Traceback" not in done.stderr
