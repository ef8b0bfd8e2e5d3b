"""evals/evals.json: the documented shape is read as written; every way it can be wrong is one
line naming the place, and nothing runs."""

from __future__ import annotations

import json

import pytest

from skillctl.errors import ConfigError
from skillctl.many.evalfile import evals_schema, load_evals
from skillctl.many.job import Expectation

from .conftest import tally_with_evals

# The example of the Agent Skills guide ("Evaluating skills"), with its skill name changed.
GUIDE_EXAMPLE = {
    "skill_name": "tally",
    "evals": [{
        "id": 1,
        "prompt": "I have a CSV of monthly sales data in data/sales_2025.csv. Can you find the top 3 months by revenue and make a bar chart?",
        "expected_output": "A bar chart image showing the top 3 months by revenue, with labeled axes and values.",
        "files": ["evals/files/notes.txt"],
        "expectations": ["The output includes a bar chart image file", "The chart shows exactly 3 months",
                         "Both axes are labeled", "The chart title or caption mentions revenue"],
    }],
}


def write(skill, data) -> None:
    (skill / "evals" / "evals.json").write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")


def test_the_guides_example_is_read_as_written(tmp_path):
    skill = tally_with_evals(tmp_path)
    write(skill, GUIDE_EXAMPLE)
    evals = load_evals(skill, "tally")
    [case] = evals.cases
    assert (case.id, case.name, case.files) == (1, "eval-1", ("evals/files/notes.txt",))
    assert case.expectations[0] == Expectation("The output includes a bar chart image file")
    assert case.graded == case.expectations


def test_check_expectations_and_the_expected_output_as_the_only_expectation(tmp_path):
    evals = load_evals(tally_with_evals(tmp_path), "tally")
    first, second = evals.cases
    assert first.expectations[1] == Expectation("count.txt holds 4", "grep -qx 4 count.txt")
    assert second.expectations == () and second.graded == (Expectation("A greeting."),)
    assert second.name == "eval-greeting"


def test_the_schema_ships_and_is_a_json_schema():
    schema = evals_schema()
    assert schema["required"] == ["skill_name", "evals"]
    assert set(schema["$defs"]["case"]["properties"]) == {"id", "prompt", "expected_output", "files", "expectations"}


CASE = {"id": 1, "prompt": "p", "expected_output": "e"}


@pytest.mark.parametrize("data, message", [
    ("{not json", r"not JSON \(Expecting property name enclosed in double quotes at line 1 column 2\)"),
    ({"evals": [CASE]}, "top level: missing 'skill_name'"),
    ({"skill_name": "tally", "evals": []}, "'evals' must not be empty"),
    ({"skill_name": "tally", "evals": [{**CASE, "assertions": ["x"]}]}, r"evals\[0\]: unknown key 'assertions'"),
    ({"skill_name": "tally", "evals": [{"id": 1, "expected_output": "e"}]}, r"evals\[0\]: missing 'prompt'"),
    ({"skill_name": "tally", "evals": [{**CASE, "id": "a b"}]}, r"an id is a number or a name"),
    ({"skill_name": "tally", "evals": [{**CASE, "expectations": [{"text": "t"}]}]}, "an expectation is a statement"),
    ({"skill_name": "tally", "evals": [{**CASE, "expectations": [""]}]}, "an expectation is a statement"),
    ({"skill_name": "other", "evals": [CASE]}, "skill_name is 'other' but the skill is named 'tally'"),
    ({"skill_name": "tally", "evals": [CASE, {**CASE, "id": "1"}]}, r"evals\[1\]: id '1' is already used by evals\[0\]"),
    ({"skill_name": "tally", "evals": [{**CASE, "files": ["evals/files/missing.csv"]}]},
     r"evals\[0\].files\[0\]: evals/files/missing.csv does not exist in"),
    ({"skill_name": "tally", "evals": [{**CASE, "files": ["../../etc/passwd"]}]},
     r"files\[0\]: ../../etc/passwd must be a path inside the skill folder"),
    ({"skill_name": "tally", "evals": [{**CASE, "files": ["evals/files/notes.txt", "evals/files/notes.txt"]}]},
     r"would both be staged as notes.txt"),
    ({"skill_name": "tally", "evals": [{"id": 2, "prompt": "p"}]}, r"evals\[0\]: nothing to grade"),
])
def test_a_bad_evals_file_is_one_line_naming_the_place(tmp_path, data, message):
    skill = tally_with_evals(tmp_path)
    write(skill, data)
    with pytest.raises(ConfigError, match=message) as exc:
        load_evals(skill, "tally")
    assert "\n" not in str(exc.value) and str(skill / "evals" / "evals.json") in str(exc.value)


def test_a_link_out_of_the_skill_folder_is_outside_it(tmp_path):
    skill = tally_with_evals(tmp_path)
    (tmp_path / "secret.txt").write_text("s")
    (skill / "evals" / "files" / "link.txt").symlink_to(tmp_path / "secret.txt")
    write(skill, {"skill_name": "tally", "evals": [{**CASE, "files": ["evals/files/link.txt"]}]})
    with pytest.raises(ConfigError, match=r"files\[0\]: evals/files/link.txt must be a path inside the skill folder"):
        load_evals(skill, "tally")


def test_every_problem_is_reported_at_once(tmp_path):
    skill = tally_with_evals(tmp_path)
    write(skill, {"skill_name": "x", "evals": [{"id": 1, "prompt": "p"}, {"id": 1, "prompt": "q", "expected_output": "e"}]})
    with pytest.raises(ConfigError) as exc:
        load_evals(skill, "tally")
    text = str(exc.value)
    assert "skill_name is 'x'" in text and "nothing to grade" in text and "already used" in text


def test_a_missing_file_says_where_it_goes_and_what_it_holds(tmp_path):
    skill = tally_with_evals(tmp_path)
    (skill / "evals" / "evals.json").unlink()
    with pytest.raises(ConfigError, match=r"evals/evals.json does not exist; write the skill's test cases there .*skill_name.*tally"):
        load_evals(skill, "tally")
