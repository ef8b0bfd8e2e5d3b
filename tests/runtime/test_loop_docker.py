"""The loop end to end in a real container: the shell tool, approval, concurrency, timeouts,
truncation for the model versus full output in the transcript."""

from __future__ import annotations

import json
import time

import pytest

from skillctl.runtime.approval import ApprovalPolicy, Approver
from skillctl.runtime.loop import Agent, Limits
from skillctl.runtime.prompt import system_prompt
from skillctl.runtime.tools import REJECTED, ToolBox, shell_tool
from skillctl.runtime.transcript import Transcript

from .helpers import Recording, write_script

pytestmark = [pytest.mark.requires_docker]

# A short example of the script format (two commands in one call, a raw tool call, an unknown
# tool, an answer): it must run unchanged against a real sandbox.
SCRIPT_FORMAT_EXAMPLE = """\
steps:
  - shell: ["ls /skills", "cat /skills/tally/SKILL.md"]   # one shell call, two commands
  - tool: shell                                            # any tool call, raw arguments
    arguments: {commands: ["id -u"], timeout_ms: 5000}
  - tool: no_such_tool                                     # answered with an error result
    arguments: {}
  - answer: "The file has 42 words."
"""


def agent_run(tmp_path, sandbox, script: str | list, *, approver=None, task="Count the words.", limits=Limits(),
              catalog: str = ""):
    from skillctl.models.script import ScriptModel

    if isinstance(script, str):
        path = tmp_path / "run.script.yaml"
        path.write_text(script, "utf-8")
    else:
        path = write_script(tmp_path, script)
    model = Recording(ScriptModel(path))
    runs: list[str] = []

    def on_result(cmd, res, reason):
        runs.append(cmd if res is not None else f"refused: {cmd}")

    tools = ToolBox([shell_tool(sandbox, approve=approver.approve if approver else None, on_result=on_result)])
    transcript = tmp_path / "run.jsonl"
    result = Agent(model, tools, limits=limits, transcript=Transcript(transcript)).run(system_prompt(catalog), task)
    return result, model, runs, transcript


def tool_texts(result) -> list[str]:
    return [m.content for m in result.history if m.role == "tool"]


def test_the_script_format_example_works_verbatim(tmp_path, shared_sandbox):
    result, model, runs, transcript = agent_run(tmp_path, shared_sandbox, SCRIPT_FORMAT_EXAMPLE, catalog=shared_sandbox.loaded.catalog_text)
    assert (result.outcome, result.answer, result.steps, result.exit_code) == ("answered", "The file has 42 words.", 4, 0)
    ls_and_cat, uid, unknown = tool_texts(result)
    assert ls_and_cat.startswith("$ ls /skills\nexit_code: 0\nstdout:\ncsv-sql\nfind-excerpts\njson-shape\ntally\n")
    assert "\n\n$ cat /skills/tally/SKILL.md\nexit_code: 0\nstdout:\n---\nname: tally\n" in ls_and_cat
    assert uid == "$ id -u\nexit_code: 0\nstdout:\n1000\n"
    assert unknown == "error: unknown tool 'no_such_tool'; available tools: shell. Nothing was run."
    # Exactly three commands ran; the unknown tool ran nothing.
    assert runs == ["ls /skills", "cat /skills/tally/SKILL.md", "id -u"]
    # The model saw the catalog in c₁ and the shell tool's spec.
    assert "<location>/skills/tally/SKILL.md</location>" in model.sent[0][0]["content"]
    assert [t.name for t in model.tools[0]] == ["shell"]
    tool_events = [json.loads(line) for line in transcript.read_text().splitlines()]
    unknown_event = [e for e in tool_events if e["type"] == "message" and e["message"]["role"] == "tool"][-1]
    assert unknown_event["valid"] is False and unknown_event["details"] == {}


def test_shell_schema_failures_run_nothing(tmp_path, shared_sandbox):
    steps = [
        {"tool": "shell", "arguments": {"commands": "touch /workspace/schema-marker"}},  # not a list
        {"tool": "shell", "arguments": {"commands": ["touch /workspace/schema-marker"], "timeout_ms": 5}},  # too small
        {"shell": ["test -e /workspace/schema-marker"]},
        {"answer": "done"},
    ]
    result, _, runs, _ = agent_run(tmp_path, shared_sandbox, steps)
    not_list, too_small, check = tool_texts(result)
    assert not_list == ("error: invalid arguments for shell: commands: 'touch /workspace/schema-marker' is not of "
                        "type 'array'. Nothing was run.")
    assert too_small == "error: invalid arguments for shell: timeout_ms: 5 is less than the minimum of 100. Nothing was run."
    assert check == "$ test -e /workspace/schema-marker\nexit_code: 1"
    assert runs == ["test -e /workspace/schema-marker"]


def test_refused_commands_return_rejected_and_the_loop_goes_on(tmp_path, shared_sandbox):
    policy = ApprovalPolicy.from_mapping({
        "rules": [
            {"pattern": "touch /workspace/ask-*", "action": "ask"},
            {"pattern": "re:deny-me", "action": "deny", "reason": "tests deny this"},
        ],
    })
    steps = [
        {"shell": ["touch /workspace/ask-marker", "echo allowed", "echo deny-me"]},
        {"shell": ["ls /workspace/ask-marker"]},
        {"answer": "went on"},
    ]
    result, _, runs, _ = agent_run(tmp_path, shared_sandbox, steps, approver=Approver(policy, mode="never", interactive=False))
    assert (result.outcome, result.answer) == ("answered", "went on")
    first, second = tool_texts(result)
    asked, allowed, denied = first.split("\n\n$ ")
    assert asked.startswith(f"$ touch /workspace/ask-marker\n{REJECTED}: the command was not run (refused by --approve never")
    assert allowed == "echo allowed\nexit_code: 0\nstdout:\nallowed\n"
    assert denied.startswith(f"echo deny-me\n{REJECTED}: the command was not run (denied by policy (rule 2: tests deny this))")
    assert second.startswith("$ ls /workspace/ask-marker\nexit_code: 2")  # it really did not run
    assert runs == ["refused: touch /workspace/ask-marker", "echo allowed", "refused: echo deny-me", "ls /workspace/ask-marker"]


def test_deny_wins_even_with_approve_all(tmp_path, shared_sandbox):
    policy = ApprovalPolicy.from_mapping({"rules": [{"pattern": "*approve-all-denied*", "action": "deny"}]})
    steps = [{"shell": ["echo approve-all-denied", "rm -rf /workspace/approve-all-dir"]}, {"answer": "ok"}]
    result, _, runs, _ = agent_run(tmp_path, shared_sandbox, steps, approver=Approver(policy, mode="all", interactive=False))
    assert runs == ["refused: echo approve-all-denied", "rm -rf /workspace/approve-all-dir"]  # ask -> approved by 'all'
    assert REJECTED in tool_texts(result)[0]


def test_commands_of_one_call_run_concurrently_and_come_back_in_order(tmp_path, shared_sandbox):
    # A rendezvous: each command waits for the other's file, so both succeed only if they overlap.
    wait = "touch /tmp/rv-{me}; i=0; while [ ! -e /tmp/rv-{other} ]; do i=$((i+1)); [ $i -gt 100 ] && exit 9; sleep 0.05; done; echo {me}"
    steps = [
        {"shell": [wait.format(me="a", other="b"), wait.format(me="b", other="a")]},
        {"shell": ["sleep 1; echo first", "sleep 1; echo second"]},
        {"answer": "ok"},
    ]
    result, _, _, _ = agent_run(tmp_path, shared_sandbox, steps)
    rendezvous, sleeps = tool_texts(result)
    assert rendezvous.count("exit_code: 0") == 2 and rendezvous.index("stdout:\na\n") < rendezvous.index("stdout:\nb\n")
    assert sleeps.index("stdout:\nfirst\n") < sleeps.index("stdout:\nsecond\n")
    # Concurrency is proven by the rendezvous above, not by a stopwatch (machines are shared).


def test_a_command_timeout_is_reported_and_the_loop_continues(tmp_path, shared_sandbox):
    steps = [
        {"shell": ["sleep 30; echo never"], "timeout_ms": 500},
        {"shell": ["ps -eo args | grep -c '^sleep 30' || true"]},
        {"answer": "moved on"},
    ]
    result, _, _, _ = agent_run(tmp_path, shared_sandbox, steps)
    assert (result.outcome, result.answer) == ("answered", "moved on")
    timed_out, ps = tool_texts(result)
    assert timed_out == "$ sleep 30; echo never\ntimeout: the command did not finish in time and was killed"
    assert ps.endswith("stdout:\n0\n")  # killed inside the container, not just abandoned


def test_the_model_reads_head_and_tail_while_the_transcript_keeps_everything(tmp_path, shared_sandbox):
    flood = "python3 -c \"print('A' * 30000 + 'MIDDLE' + 'Z' * 30000)\""
    steps = [{"shell": [flood], "max_output_length": 1000}, {"answer": "ok"}]
    result, model, _, transcript = agent_run(tmp_path, shared_sandbox, steps)
    seen = model.sent[1][-1]["content"]
    assert seen.startswith(f"$ {flood}\nexit_code: 0\nstdout:\nAAAA") and seen.endswith("ZZZZ\n")
    shown = seen[len(f"$ {flood}\n"):]
    assert len(shown) <= 1000
    assert "characters truncated" in shown and "MIDDLE" not in shown
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    [record] = [e for e in events if e["type"] == "message" and e["message"]["role"] == "tool"]
    [output] = record["details"]["output"]
    assert output["stdout"] == "A" * 30000 + "MIDDLE" + "Z" * 30000 + "\n"
    assert output["outcome"] == {"type": "exit", "exit_code": 0} and output["approved"] is True


def test_a_sandbox_that_is_gone_ends_the_run_with_sandbox_error(tmp_path, agent_image, docker_client):
    from skillctl.models.script import ScriptModel
    from skillctl.sandbox.docker_backend import DockerSandbox

    from .helpers import NoteTool

    with DockerSandbox(image=agent_image, client=docker_client) as sandbox:
        vanish = NoteTool("vanish")
        original = vanish.tool.procedure

        def remove_container(args):
            docker_client.api.remove_container(sandbox.container_id, force=True)  # as an operator might
            return original(args)

        vanish.tool = vanish.tool.__class__("vanish", "Removes the sandbox.", NoteTool.SCHEMA, remove_container)
        path = write_script(tmp_path, [{"shell": ["true"]}, {"tool": "vanish", "arguments": {"text": "x"}},
                                       {"shell": ["echo still here?"]}, {"shell": ["true"]}, {"answer": "fine"}])
        tools = ToolBox([shell_tool(sandbox), vanish.tool])
        result = Agent(ScriptModel(path), tools).run(system_prompt(""), "task")
    # Not four more turns of "the sandbox failed" to a model that can do nothing about it.
    assert (result.outcome, result.steps, result.exit_code) == ("sandbox_error", 3, 9)
    assert "is no longer running" in result.message and "start a new sandbox" in result.message
