"""Both OpenAI-protocol adapters, end to end through the real ``openai`` client against a real
HTTP server on loopback (tests/model_server.py). Each test runs once per protocol."""

from __future__ import annotations

import json

import pytest

from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE, ContextTooLong, ModelError
from skillctl.messages import Message, ToolCall, assistant, system, tool_result, user
from skillctl.models import open_model
from skillctl.models.openai_api import PLACEHOLDER_KEY
from skillctl.protocols import ModelReply, ToolSpec
from model_server import CHAT_PATH, RESPONSES_PATH, ModelServer, free_port, model_server  # noqa: F401

SHELL = ToolSpec(
    "shell",
    "Run shell commands in the container.",
    {
        "type": "object",
        "properties": {"commands": {"type": "array", "items": {"type": "string"}}, "timeout_ms": {"type": "integer"}},
        "required": ["commands"],
    },
)
SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture(params=["openai", "openai-chat"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def path_of(backend: str) -> str:
    return RESPONSES_PATH if backend == "openai" else CHAT_PATH


def open_at(server: ModelServer, backend: str, **kw):
    kw.setdefault("api_key", SECRET)
    kw.setdefault("max_retries", 2)
    kw.setdefault("timeout_s", 5.0)
    return open_model(f"{backend}:test-model", base_url=server.base_url, **kw)


def ask(model, messages=None, tools=(SHELL,)) -> ModelReply:
    return model.complete(messages or [system("You are terse."), user("hi")], list(tools))


# ------------------------------------------------------------------------------ happy paths


def test_text_answer_and_usage(model_server: ModelServer, backend: str) -> None:
    model_server.reply("The file has 42 words.", input_tokens=1234, output_tokens=9)
    reply = ask(open_at(model_server, backend))
    assert reply.content == "The file has 42 words."
    assert reply.tool_calls == ()
    assert (reply.input_tokens, reply.output_tokens) == (1234, 9)
    assert reply.raw  # the full API reply is kept for the transcript
    req = model_server.requests[-1]
    assert req.path == path_of(backend) and req.body["model"] == "test-model"
    assert req.headers["authorization"] == f"Bearer {SECRET}"


def test_missing_or_zero_usage_is_none(model_server: ModelServer, backend: str) -> None:
    model = open_at(model_server, backend)
    model_server.reply("a")
    assert ask(model).input_tokens is None
    model_server.reply("b", input_tokens=0, output_tokens=0)
    reply = ask(model)
    assert (reply.input_tokens, reply.output_tokens) == (None, None)


def test_tool_call_arguments_stay_raw_even_when_invalid(model_server: ModelServer, backend: str) -> None:
    model_server.reply("Looking.", tool_calls=[("shell", '{"commands": ["ls /skills"]}'), ("shell", '{"commands": [')])
    reply = ask(open_at(model_server, backend))
    assert reply.content == "Looking."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("shell", '{"commands": ["ls /skills"]}'),
        ("shell", '{"commands": ['),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2 and all(c.id for c in reply.tool_calls)


def test_tools_are_sent_as_function_tools(model_server: ModelServer, backend: str) -> None:
    model_server.reply("ok")
    ask(open_at(model_server, backend))
    tools = model_server.requests[-1].body["tools"]
    if backend == "openai":
        assert tools == [{"type": "function", "name": "shell", "description": SHELL.description,
                          "parameters": SHELL.parameters, "strict": False}]
    else:
        assert tools == [{"type": "function", "function": {"name": "shell", "description": SHELL.description,
                                                           "parameters": SHELL.parameters}}]


def test_no_tools_sends_no_tools_key(model_server: ModelServer, backend: str) -> None:
    model_server.reply("ok")
    ask(open_at(model_server, backend), tools=())
    assert "tools" not in model_server.requests[-1].body


def test_tool_call_round_trip(model_server: ModelServer, backend: str) -> None:
    """The model calls a tool; our history (call + result) goes back in the API's own shape and
    the server, which checks call/result pairing like the real API, accepts it."""
    model = open_at(model_server, backend)
    model_server.reply(tool_calls=[("shell", '{"commands": ["wc -w in.txt"]}')], input_tokens=50)
    history: list[Message] = [system("sys"), user("count")]
    first = model.complete(history, [SHELL])
    call = first.tool_calls[0]
    history += [assistant(first.content, first.tool_calls), tool_result(call, "42 in.txt")]

    model_server.reply("42 words.", input_tokens=80)
    second = model.complete(history, [SHELL])
    assert second.content == "42 words." and second.input_tokens == 80

    body = model_server.requests[-1].body
    if backend == "openai":
        assert body["store"] is False
        assert body["input"] == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "count"},
            {"type": "function_call", "call_id": call.id, "name": "shell", "arguments": '{"commands": ["wc -w in.txt"]}'},
            {"type": "function_call_output", "call_id": call.id, "output": "42 in.txt"},
        ]
    else:
        assert body["messages"] == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "count"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": "shell", "arguments": '{"commands": ["wc -w in.txt"]}'}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "42 in.txt"},
        ]


def test_history_with_text_and_several_calls(model_server: ModelServer, backend: str) -> None:
    a, b = ToolCall("call_a", "shell", '{"commands":["ls"]}'), ToolCall("call_b", "nope", "{}")
    history = [user("go"), assistant("Two at once.", (a, b)), tool_result(a, "x"), tool_result(b, "unknown tool"),
               assistant("Noted."), user("and now?")]
    model_server.reply("done")
    ask(open_at(model_server, backend), history)
    body = model_server.requests[-1].body
    if backend == "openai":
        assert body["input"] == [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Two at once."},
            {"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": '{"commands":["ls"]}'},
            {"type": "function_call", "call_id": "call_b", "name": "nope", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "x"},
            {"type": "function_call_output", "call_id": "call_b", "output": "unknown tool"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "and now?"},
        ]
    else:
        assert body["messages"][1] == {"role": "assistant", "content": "Two at once.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "shell", "arguments": '{"commands":["ls"]}'}},
            {"id": "call_b", "type": "function", "function": {"name": "nope", "arguments": "{}"}}]}
        assert body["messages"][2:4] == [{"role": "tool", "tool_call_id": "call_a", "content": "x"},
                                         {"role": "tool", "tool_call_id": "call_b", "content": "unknown tool"}]


def test_a_result_without_its_call_is_rejected_by_the_server(model_server: ModelServer, backend: str) -> None:
    """The loopback server is as strict as the real API about pairing (so the loop's context
    fitting cannot split a call from its result unnoticed)."""
    orphan = tool_result(ToolCall("call_gone", "shell"), "out")
    model_server.reply("never sent")
    with pytest.raises(ModelError, match="400") as err:
        ask(open_at(model_server, backend), [user("go"), orphan])
    assert "call_gone" in str(err.value)
    assert model_server.count() == 1


# ------------------------------------------------------------------------------ retries


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_status_is_retried_then_succeeds(model_server: ModelServer, backend: str, status: int) -> None:
    model_server.fail(status)
    model_server.reply("after retry")
    assert ask(open_at(model_server, backend)).content == "after retry"
    assert model_server.count() == 2
    assert model_server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_persistent_5xx_gives_up_after_max_retries(model_server: ModelServer, backend: str) -> None:
    for _ in range(3):
        model_server.fail(502, "upstream exploded")
    with pytest.raises(ModelError) as err:
        ask(open_at(model_server, backend, max_retries=2))
    msg = str(err.value)
    assert model_server.count() == 3
    assert "502" in msg and model_server.base_url in msg and "after 2 retries" in msg and "upstream exploded" in msg
    assert not isinstance(err.value, ContextTooLong)


def test_bad_request_is_never_retried(model_server: ModelServer, backend: str) -> None:
    model_server.fail(400, "Invalid value for 'tools[0].parameters'", code="invalid_value")
    model_server.reply("should not be reached")
    with pytest.raises(ModelError) as err:
        ask(open_at(model_server, backend, max_retries=4))
    assert model_server.count() == 1 and model_server.pending == 1
    msg = str(err.value)
    assert "400" in msg and "invalid_value" in msg and "not retried" in msg and "\n" not in msg


def test_timeout_is_retried_then_succeeds(model_server: ModelServer, backend: str) -> None:
    model_server.reply("too late", delay_s=3.0)
    model_server.reply("in time")
    assert ask(open_at(model_server, backend, timeout_s=0.3, max_retries=1)).content == "in time"
    assert model_server.count() == 2


def test_timeout_after_retries_is_a_model_error(model_server: ModelServer, backend: str) -> None:
    model_server.reply("too late", delay_s=3.0)
    with pytest.raises(ModelError, match=r"did not answer within 0\.3s \(after 0 retries\)"):
        ask(open_at(model_server, backend, timeout_s=0.3, max_retries=0))


def test_dropped_connection_is_retried(model_server: ModelServer, backend: str) -> None:
    model_server.drop()
    model_server.reply("second try")
    assert ask(open_at(model_server, backend, max_retries=1)).content == "second try"
    assert model_server.count() == 2


def test_connection_refused_is_a_model_error_after_retries(backend: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelError) as err:
        open_model(f"{backend}:m", base_url=url, max_retries=1).complete([user("hi")], [])
    msg = str(err.value)
    assert msg.startswith(f"cannot reach model endpoint {url} (after 1 retry)")
    assert "OPENAI_BASE_URL" in msg and "\n" not in msg


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("message", "code", "kind"),
    [
        ("Your input exceeds the context window of this model.", "context_length_exceeded", "invalid_request_error"),
        ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", None, "BadRequestError"),
        ("the request exceeds the available context size, try increasing it", None, "exceed_context_size_error"),
        ("prompt is too long: 210000 tokens > 200000 maximum", None, "invalid_request_error"),
    ],
)
def test_context_length_rejection_is_context_too_long(
    model_server: ModelServer, backend: str, message: str, code: str | None, kind: str
) -> None:
    model_server.fail(400, message, code=code, type=kind)
    with pytest.raises(ContextTooLong) as err:
        ask(open_at(model_server, backend))
    assert str(err.value).startswith(CONTEXT_TOO_LONG_MESSAGE)
    assert model_server.count() == 1  # an invalid request is not retried


def test_request_too_large_is_context_too_long(model_server: ModelServer, backend: str) -> None:
    model_server.send_raw(413, "<html><body>413 Request Entity Too Large</body></html>", headers={"content-type": "text/html"})
    with pytest.raises(ContextTooLong):
        ask(open_at(model_server, backend))
    assert model_server.count() == 1


def test_quota_exhausted_says_so(model_server: ModelServer, backend: str) -> None:
    for _ in range(2):
        model_server.fail(429, "You exceeded your current quota", code="insufficient_quota")
    with pytest.raises(ModelError, match="no quota left"):
        ask(open_at(model_server, backend, max_retries=1))


def test_unauthorized_says_to_set_the_key_and_never_shows_it(model_server: ModelServer, backend: str) -> None:
    model_server.fail(401, f"Incorrect API key provided: {SECRET[:8]}****{SECRET[-4:]}", code="invalid_api_key")
    with pytest.raises(ModelError) as err:
        ask(open_at(model_server, backend))
    msg = str(err.value)
    assert "OPENAI_API_KEY" in msg and "401" in msg
    assert SECRET not in msg and SECRET[:8] not in msg and SECRET[-4:] not in msg
    # Raised "from None": the SDK error (whose request carries the key header) is not chained.
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert model_server.count() == 1


def test_key_echoed_by_a_server_is_scrubbed(model_server: ModelServer, backend: str) -> None:
    for _ in range(2):
        model_server.fail(500, f"backend rejected token {SECRET} for org")
    with pytest.raises(ModelError) as err:
        ask(open_at(model_server, backend, max_retries=1))
    assert SECRET not in str(err.value) and "***" in str(err.value)
    assert SECRET not in repr(err.value)


def test_key_echoed_in_another_letter_case_is_scrubbed(model_server: ModelServer, backend: str) -> None:
    for _ in range(2):
        model_server.fail(500, f"backend rejected token {SECRET.upper()} (normalised: {SECRET.lower()})")
    with pytest.raises(ModelError) as err:
        ask(open_at(model_server, backend, max_retries=1))
    assert SECRET.lower() not in str(err.value).lower() and str(err.value).count("***") == 2


def test_credentials_in_the_base_url_are_scrubbed(model_server: ModelServer, backend: str) -> None:
    password = "pa%24sw0rd-URL"  # percent-encoded in the URL: the server sees "pa$sw0rd-URL"
    url = model_server.base_url.replace("http://", f"http://someone:{password}@")
    for _ in range(2):
        model_server.fail(500, "login failed for someone:pa$sw0rd-url and PA%24SW0RD-URL")
    with pytest.raises(ModelError) as err:
        ask(open_model(f"{backend}:test-model", base_url=url, api_key=SECRET, max_retries=1, timeout_s=5.0))
    message = str(err.value)
    assert "sw0rd" not in message.lower() and "login failed for ***" in message, message
    assert "someone" not in message  # the endpoint is shown without its user either


def test_unknown_model_404_hints_at_name_and_url(model_server: ModelServer, backend: str) -> None:
    model_server.fail(404, "The model `test-model` does not exist", code="model_not_found")
    with pytest.raises(ModelError, match="check the model name"):
        ask(open_at(model_server, backend))


def test_reply_that_is_not_json_is_a_model_error(model_server: ModelServer, backend: str) -> None:
    model_server.send_raw(200, "<html>proxy login</html>", headers={"content-type": "text/html"})
    with pytest.raises(ModelError):
        ask(open_at(model_server, backend))


# ------------------------------------------------------------------------------ protocol specifics


def test_responses_status_failed_is_a_model_error(model_server: ModelServer) -> None:
    failed = {"id": "resp_1", "object": "response", "created_at": 0, "status": "failed", "model": "m",
              "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
              "error": {"code": "server_error", "message": "generation failed"}}
    model_server.send_raw(200, json.dumps(failed))
    with pytest.raises(ModelError, match=r"server_error\): generation failed") as err:
        ask(open_at(model_server, "openai"))
    assert not isinstance(err.value, ContextTooLong)


def test_responses_failed_for_context_is_context_too_long(model_server: ModelServer) -> None:
    failed = {"id": "resp_1", "object": "response", "created_at": 0, "status": "failed", "model": "m",
              "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
              "error": {"code": "invalid_prompt", "message": "Your input exceeds the context window of this model."}}
    model_server.send_raw(200, json.dumps(failed))
    with pytest.raises(ContextTooLong):
        ask(open_at(model_server, "openai"))


def test_chat_tool_calls_without_ids_get_stable_ones(model_server: ModelServer) -> None:
    body = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
            {"id": "", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]}}]}
    model_server.send_raw(200, json.dumps(body))
    reply = ask(open_at(model_server, "openai-chat"))
    assert [c.id for c in reply.tool_calls] == ["call_1_1", "call_1_2"]


def test_chat_reply_without_choices_is_a_model_error(model_server: ModelServer) -> None:
    model_server.send_raw(200, json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": []}))
    with pytest.raises(ModelError, match="no choices"):
        ask(open_at(model_server, "openai-chat"))


def test_placeholder_key_when_only_a_base_url_is_given(model_server: ModelServer, backend: str) -> None:
    model_server.reply("ok")
    open_model(f"{backend}:m", base_url=model_server.base_url).complete([user("hi")], [])
    assert model_server.requests[-1].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


def test_environment_supplies_base_url_and_key(model_server: ModelServer, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model_server.reply("ok")
    assert open_model(f"{backend}:m").complete([user("hi")], []).content == "ok"
    assert model_server.requests[-1].headers["authorization"] == "Bearer sk-from-env"
