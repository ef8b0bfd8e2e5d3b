"""The loopback model server itself: what a test gets when it queues too little, asks the
wrong path, or sends a conversation the real API would refuse."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from model_server import CHAT_PATH, RESPONSES_PATH, ModelServer, model_server  # noqa: F401


def post(server: ModelServer, path: str, body: dict) -> tuple[int, dict, dict]:
    req = urllib.request.Request(server.base_url.removesuffix("/v1") + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def test_nothing_queued_is_a_400_that_must_not_be_retried(model_server: ModelServer) -> None:
    status, headers, body = post(model_server, CHAT_PATH, {"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert status == 400 and headers["x-should-retry"] == "false"
    assert body["error"]["code"] == "no_reply_queued"


def test_unknown_path_is_404_and_does_not_consume_a_reply(model_server: ModelServer) -> None:
    model_server.reply("kept")
    status, _, _ = post(model_server, "/v1/completions", {"model": "m", "prompt": "x"})
    assert status == 404 and model_server.pending == 1


def test_one_queue_answers_in_either_protocol(model_server: ModelServer) -> None:
    model_server.reply("hello", input_tokens=3, output_tokens=1)
    model_server.reply(tool_calls=[("shell", "{}")])
    _, _, chat = post(model_server, CHAT_PATH, {"model": "m", "messages": [{"role": "user", "content": "x"}]})
    _, _, resp = post(model_server, RESPONSES_PATH, {"model": "m", "input": "x"})
    assert chat["choices"][0]["message"]["content"] == "hello" and chat["usage"]["prompt_tokens"] == 3
    assert resp["output"][0]["type"] == "function_call" and resp["output"][0]["name"] == "shell"
    assert "usage" not in resp
    assert [r.path for r in model_server.requests] == [CHAT_PATH, RESPONSES_PATH]


def test_unanswered_call_is_refused_like_the_real_api(model_server: ModelServer) -> None:
    model_server.reply("x")
    status, _, body = post(model_server, RESPONSES_PATH, {"model": "m", "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"role": "user", "content": "and?"}]})
    assert status == 400 and "No tool output found for function call c1" in body["error"]["message"]


def test_duplicate_tool_names_are_refused(model_server: ModelServer) -> None:
    model_server.reply("x")
    tool = {"type": "function", "function": {"name": "shell", "parameters": {}}}
    status, _, body = post(model_server, CHAT_PATH, {"model": "m", "messages": [{"role": "user", "content": "x"}],
                                                    "tools": [tool, tool]})
    assert status == 400 and "unique" in body["error"]["message"]
