"""``skillctl run`` with the OpenAI-protocol adapters, end to end: the real ``openai`` client
talks to a real HTTP server on loopback, and the tool calls it returns run in a real container.
The server records every request body, so the test sees exactly what the "model" received."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE
from skillctl.messages import Message
from skillctl.models.openai_chat import to_chat_messages
from skillctl.models.openai_responses import to_input_items
from skillctl.runtime.tools import SHELL_SCHEMA
from skillctl.runtime.transcript import rebuild_requests

from model_server import CHAT_PATH, RESPONSES_PATH

pytestmark = [pytest.mark.requires_docker]

LS = json.dumps({"commands": ["ls /skills"]})


@pytest.fixture
def env(example_registry_path, tmp_path) -> dict[str, str]:
    return {
        "SKILLCTL_REGISTRY": str(example_registry_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "OPENAI_BASE_URL": "",
        "OPENAI_API_KEY": "",
    }


def run(env, tmp_path, model: str, base_url: str, *extra: str):
    transcript = tmp_path / "run.jsonl"
    args = ["run", "--skill", "tally", "--skill", "csv-sql", "--model", model, "--base-url", base_url,
            "--transcript", str(transcript), "--format", "json", *extra, "Which skills are installed?"]
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False), transcript


def as_messages(request: list[dict]) -> list[Message]:
    return [Message.from_dict(d) for d in request]


def test_chat_completions_drives_a_container(env, tmp_path, model_server, agent_image):
    model_server.reply(tool_calls=[("shell", LS)], input_tokens=1234, output_tokens=9)
    model_server.reply("Two skills: csv-sql and tally.", input_tokens=1500, output_tokens=8)
    result, transcript = run(env, tmp_path, "openai-chat:test-model", model_server.base_url)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["outcome"], report["answer"], report["steps"]) == ("answered", "Two skills: csv-sql and tally.", 2)
    # The API's reported input tokens are c_k.
    assert report["context_sizes"] == [1234, 1500] and report["Z"] == 2734
    first, second = (r.body for r in model_server.requests)
    assert [r.path for r in model_server.requests] == [CHAT_PATH, CHAT_PATH]
    assert first["model"] == "test-model"
    assert first["tools"] == [{"type": "function", "function": {
        "name": "shell", "description": first["tools"][0]["function"]["description"], "parameters": SHELL_SCHEMA}}]
    system, task = first["messages"]
    assert system["role"] == "system" and "<location>/skills/tally/SKILL.md</location>" in system["content"]
    assert task == {"role": "user", "content": "Which skills are installed?"}
    call, answer = second["messages"][2:]
    call_id = call["tool_calls"][0]["id"]
    assert call["tool_calls"][0]["function"] == {"name": "shell", "arguments": LS}
    assert answer["role"] == "tool" and answer["tool_call_id"] == call_id
    assert answer["content"] == "$ ls /skills\nexit_code: 0\nstdout:\ncsv-sql\ntally\n"
    # The transcript rebuilds exactly the bodies the server received.
    rebuilt = rebuild_requests(transcript)
    assert [to_chat_messages(as_messages(r)) for r in rebuilt] == [first["messages"], second["messages"]]


def test_responses_api_drives_a_container(env, tmp_path, model_server, agent_image):
    model_server.reply(tool_calls=[("shell", LS)], input_tokens=900)
    model_server.reply("csv-sql and tally.", input_tokens=1111)
    result, transcript = run(env, tmp_path, "openai:test-model", model_server.base_url)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["outcome"], report["answer"], report["context_sizes"], report["Z"]) == (
        "answered", "csv-sql and tally.", [900, 1111], 2011)
    first, second = (r.body for r in model_server.requests)
    assert [r.path for r in model_server.requests] == [RESPONSES_PATH, RESPONSES_PATH]
    assert first["store"] is False
    [tool] = first["tools"]
    assert (tool["type"], tool["name"], tool["parameters"]) == ("function", "shell", SHELL_SCHEMA)
    call, output = second["input"][2:]
    assert call["type"] == "function_call" and call["name"] == "shell" and call["arguments"] == LS
    assert output == {"type": "function_call_output", "call_id": call["call_id"],
                      "output": "$ ls /skills\nexit_code: 0\nstdout:\ncsv-sql\ntally\n"}
    rebuilt = rebuild_requests(transcript)
    assert [to_input_items(as_messages(r)) for r in rebuilt] == [first["input"], second["input"]]


def test_without_reported_usage_c_k_is_the_estimate(env, tmp_path, model_server, agent_image):
    model_server.reply(tool_calls=[("shell", LS)])
    model_server.reply("done")
    result, transcript = run(env, tmp_path, "openai-chat:m", model_server.base_url)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    estimates = [json.loads(line)["estimated_tokens"] for line in transcript.read_text().splitlines()
                 if json.loads(line)["type"] == "request"]
    assert report["context_sizes"] == estimates and estimates[1] > estimates[0] > 0


def test_context_length_rejection_ends_the_run_without_retrying(env, tmp_path, model_server, agent_image):
    model_server.fail(400, "This model's maximum context length is 8192 tokens.", code="context_length_exceeded")
    result, _ = run(env, tmp_path, "openai-chat:m", model_server.base_url)
    assert result.exit_code == 7, result.output
    report = json.loads(result.stdout)
    assert (report["outcome"], report["message"], report["steps"]) == ("context_too_long", CONTEXT_TOO_LONG_MESSAGE, 0)
    assert model_server.count() == 1  # a 400 is never retried


def test_a_transient_failure_is_retried_and_the_run_goes_on(env, tmp_path, model_server, agent_image):
    model_server.fail(503)
    model_server.reply(tool_calls=[("shell", LS)], input_tokens=50)
    model_server.fail(429)
    model_server.reply("done", input_tokens=60)
    result, _ = run(env, tmp_path, "openai-chat:m", model_server.base_url)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["outcome"], report["context_sizes"]) == ("answered", [50, 60])
    assert model_server.count(CHAT_PATH) == 4


def test_an_invalid_request_is_a_model_error_not_retried(env, tmp_path, model_server, agent_image):
    model_server.fail(400, "Invalid value for 'tools'.")
    result, _ = run(env, tmp_path, "openai:m", model_server.base_url)
    assert result.exit_code == 8, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "model_error" and "400" in report["message"] and "not retried" in report["message"]
    assert model_server.count() == 1
