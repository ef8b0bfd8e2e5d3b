"""The scripted model: replaying a written run, and refusing files that are not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillctl.errors import ConfigError, ModelError
from skillctl.messages import user
from skillctl.models import open_model
from skillctl.models.script import ScriptModel, load_script, parse_script, script_schema
from skillctl.protocols import Model

SCRIPT_FORMAT_EXAMPLE = """\
steps:
  - shell: ["ls /skills", "cat /skills/tally/SKILL.md"]   # one shell call, two commands
  - tool: shell                                            # any tool call, raw arguments
    arguments: {commands: ["id -u"], timeout_ms: 5000}
  - tool: no_such_tool                                     # answered with an error result
    arguments: {}
  - answer: "The file has 42 words."
"""

HISTORY = [user("count the words")]


def write(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_the_example_replays_step_by_step(tmp_path: Path) -> None:
    model = open_model(f"script:{write(tmp_path, SCRIPT_FORMAT_EXAMPLE)}")
    assert isinstance(model, Model)

    r1 = model.complete(HISTORY, [])
    assert [(c.id, c.name, json.loads(c.arguments)) for c in r1.tool_calls] == [
        ("call_1", "shell", {"commands": ["ls /skills", "cat /skills/tally/SKILL.md"]})
    ]
    r2 = model.complete(HISTORY, [])
    assert [(c.id, c.name, json.loads(c.arguments)) for c in r2.tool_calls] == [
        ("call_2", "shell", {"commands": ["id -u"], "timeout_ms": 5000})
    ]
    r3 = model.complete(HISTORY, [])
    assert [(c.id, c.name, c.arguments) for c in r3.tool_calls] == [("call_3", "no_such_tool", "{}")]
    r4 = model.complete(HISTORY, [])
    assert r4.tool_calls == () and r4.content == "The file has 42 words."
    # The script reports no usage: the loop must fall back to the per-script estimate.
    assert {r.input_tokens for r in (r1, r2, r3, r4)} == {None}


def test_running_past_the_last_step_names_file_and_count(tmp_path: Path) -> None:
    path = write(tmp_path, "steps:\n  - shell: [ls]\n")
    model = ScriptModel(path)
    model.complete(HISTORY, [])
    with pytest.raises(ModelError) as err:
        model.complete(HISTORY, [])
    msg = str(err.value)
    assert str(path) in msg and "has 1 step " in msg and "answer" in msg


def test_raw_string_arguments_are_sent_verbatim_even_when_not_json(tmp_path: Path) -> None:
    path = write(tmp_path, """steps:\n  - tool: shell\n    arguments: '{"commands": ["ls"'\n  - answer: done\n""")
    call = ScriptModel(path).complete(HISTORY, []).tool_calls[0]
    assert call.arguments == '{"commands": ["ls"'
    with pytest.raises(ValueError):
        call.parsed_arguments()


def test_several_calls_in_one_step_with_say_and_shell_options(tmp_path: Path) -> None:
    path = write(tmp_path, """\
steps:
  - say: "Two things at once."
    calls:
      - shell: ["wc -w /data/in.txt"]
        timeout_ms: 2000
        max_output_length: 500
      - tool: read_file
        arguments: {path: /data/in.txt}
  - shell: [date]
    say: "And the date."
  - answer: ok
""")
    model = ScriptModel(path)
    r1 = model.complete(HISTORY, [])
    assert r1.content == "Two things at once."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in r1.tool_calls] == [
        ("call_1", "shell", {"commands": ["wc -w /data/in.txt"], "timeout_ms": 2000, "max_output_length": 500}),
        ("call_2", "read_file", {"path": "/data/in.txt"}),
    ]
    r2 = model.complete(HISTORY, [])
    assert r2.content == "And the date." and r2.tool_calls[0].id == "call_3"


def test_two_opens_of_one_file_replay_identically(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT_FORMAT_EXAMPLE)
    runs = []
    for _ in range(2):
        m = open_model(f"script:{path}")
        runs.append([m.complete(HISTORY, []) for _ in range(4)])
    assert runs[0] == runs[1]


def test_schema_ships_with_the_package() -> None:
    schema = script_schema()
    assert schema["required"] == ["steps"] and "step" in schema["$defs"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("steps:\n  - answer: 42\n", "steps[0]: 'answer' must be a string"),
        ("steps:\n  - shell: [ls]\n  - shell: [ls]\n  - answer: [a]\n", "steps[2]: 'answer' must be a string"),
        ("steps: []\n", "'steps' must not be empty"),
        ("{}\n", "top level: missing 'steps'"),
        ("- answer: hi\n", "top level: must be a mapping"),
        ("steps:\n  - answer: hi\n    shell: [ls]\n", "steps[0]: a step needs exactly one of 'answer', 'shell', 'tool' or 'calls'"),
        ("steps:\n  - say: hello\n", "steps[0]: a step needs exactly one of"),
        ("steps:\n  - answer: hi\n    say: hello\n", "steps[0]: 'say' goes with a call"),
        ("steps:\n  - shell: ls\n", "steps[0]: 'shell' must be a list"),
        ("steps:\n  - shell: []\n", "steps[0]: 'shell' must not be empty"),
        ("steps:\n  - shell: [ls, 3]\n", "steps[0].shell[1]: must be a string"),
        ("steps:\n  - shell: [ls]\n    arguments: {}\n", "steps[0]: 'arguments' is only allowed together with 'tool'"),
        ("steps:\n  - tool: x\n    timeout_ms: 5\n", "steps[0]: 'timeout_ms' is only allowed together with 'shell'"),
        ("steps:\n  - shell: [ls]\n    timeout_ms: 0\n", "steps[0]: 'timeout_ms' must be at least 1"),
        ("steps:\n  - tool: x\n    arguments: 3\n", "steps[0]: 'arguments' must be a mapping or a string"),
        ("steps:\n  - tool: x\n    argumnets: {}\n", "steps[0]: unknown key 'argumnets'"),
        ("steps:\n  - calls: []\n", "steps[0]: 'calls' must not be empty"),
        ("steps:\n  - calls: [{answer: hi}]\n", "steps[0].calls[0]: unknown key 'answer'"),
        ("steps:\n  - calls: [{shell: [ls], tool: x}]\n", "steps[0].calls[0]: a call needs exactly one of 'shell' or 'tool'"),
        ("steps:\n  - answer: yes\n", "steps[0]: 'answer' must be a string"),  # YAML's yes is a boolean
        ("stepz:\n  - answer: hi\n", "unknown key 'stepz'"),
    ],
)
def test_invalid_scripts_are_config_errors_naming_file_and_place(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_script(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and expected in msg, msg
    assert "\n" not in msg


def test_every_problem_is_reported_not_only_the_first(tmp_path: Path) -> None:
    path = write(tmp_path, "steps:\n  - answer: 1\n  - shell: ls\n  - tool: 7\n")
    msg = str(pytest.raises(ConfigError, load_script, path).value)
    assert "steps[0]: 'answer' must be a string" in msg
    assert "steps[1]: 'shell' must be a list" in msg
    assert "steps[2]: 'tool' must be a string" in msg


def test_not_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "steps:\n  - answer: [unclosed\n")
    msg = str(pytest.raises(ConfigError, load_script, path).value)
    assert msg.startswith(f"{path}:") and ": not valid YAML: " in msg and "\n" not in msg


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "# nothing yet\n")
    assert "the script is empty" in str(pytest.raises(ConfigError, load_script, path).value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        open_model(f"script:{tmp_path / 'nope.yaml'}")


def test_parse_script_accepts_loaded_data() -> None:
    steps = parse_script({"steps": [{"shell": ["ls"]}, {"answer": "done"}]}, source="inline")
    assert [s.is_answer for s in steps] == [False, True]
    with pytest.raises(ConfigError, match=r"^inline: steps\[0\]"):
        parse_script({"steps": [{"answer": 1}]}, source="inline")
