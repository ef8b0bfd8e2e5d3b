"""A real HTTP server on loopback that speaks enough of the OpenAI protocols for tests.

``POST /v1/responses`` (Responses API) and ``POST /v1/chat/completions`` (Chat Completions) are
answered from one queue of protocol-neutral replies, so the same test script drives both
adapters. The real ``openai`` client talks to it over TCP; nothing is patched.

    server.reply("done", input_tokens=120, output_tokens=5)       # a final answer
    server.reply(tool_calls=[("shell", '{"commands": ["ls"]}')])  # one tool call
    server.fail(500)                                               # a fault, then…
    server.fail(400, "This model's maximum context length is 8192 tokens", code="context_length_exceeded")
    server.drop()                                                  # close without answering
    server.requests[-1].body                                       # what the client sent

Like the real services it checks the conversation it is sent: every tool result must answer a
call made earlier, and every call must be answered before the conversation moves on (OpenAI
rejects both with a 400). A request that arrives with nothing queued gets a 400 (never retried)
whose message says so, so a test that sends one request too many fails loudly.

Faults for 429 and 5xx carry ``retry-after-ms`` (10 ms unless told otherwise), a header the
OpenAI API really sends and the SDK honours; it keeps retry tests fast without touching the
client's backoff code.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

RESPONSES_PATH = "/v1/responses"
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON


@dataclass(frozen=True)
class QueuedReply:
    """What the server does with the next request. ``status`` 200 renders a model turn in the
    protocol of the path asked; anything else sends ``error`` as an OpenAI error body."""

    text: str = ""
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, raw JSON arguments)
    input_tokens: int | None = None
    output_tokens: int | None = None
    status: int = 200
    error: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    drop: bool = False  # close the connection without a response
    raw_body: str | None = None  # sent verbatim instead of a rendered body


@dataclass
class ModelServer:
    """The server; use as a context manager or through the ``model_server`` fixture."""

    host: str = "127.0.0.1"
    port: int = 0  # chosen by the OS at start()
    requests: list[ReceivedRequest] = field(default_factory=list)
    _queue: deque[QueuedReply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _ids: int = 0

    # ------------------------------------------------------------------ queueing

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: list[tuple[str, str]] | tuple[tuple[str, str], ...] = (),
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue a successful model turn: text and/or tool calls, with optional usage numbers."""
        self._push(QueuedReply(text, tuple(tool_calls), input_tokens, output_tokens, delay_s=delay_s))

    def fail(
        self,
        status: int,
        message: str = "",
        *,
        code: str | None = None,
        type: str | None = None,
        headers: dict[str, str] | None = None,
        retry_after_ms: int | None = 10,
        delay_s: float = 0.0,
    ) -> None:
        """Queue an error response with an OpenAI-shaped body ``{"error": {...}}``."""
        hdrs = dict(headers or {})
        if retry_after_ms is not None and (status == 429 or status >= 500):
            hdrs.setdefault("retry-after-ms", str(retry_after_ms))
        error = {
            "message": message or f"model_server fault {status}",
            "type": type or ("invalid_request_error" if status < 500 else "server_error"),
            "param": None,
            "code": code,
        }
        self._push(QueuedReply(status=status, error=error, headers=tuple(hdrs.items()), delay_s=delay_s))

    def send_raw(self, status: int, body: str, *, headers: dict[str, str] | None = None) -> None:
        """Queue a response whose body is sent exactly as given (e.g. not JSON at all)."""
        self._push(QueuedReply(status=status, raw_body=body, headers=tuple((headers or {}).items())))

    def drop(self) -> None:
        """Queue a dropped connection: the request is read, then the socket is closed."""
        self._push(QueuedReply(drop=True))

    def _push(self, reply: QueuedReply) -> None:
        with self._lock:
            self._queue.append(reply)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def count(self, path: str | None = None) -> int:
        """Requests received so far (to ``path`` only, when given)."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "ModelServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        # A short poll interval: shutdown() waits for the next poll, and tests start many servers.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="model-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ internals

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_{self._ids}"

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _pop(self) -> QueuedReply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None


def free_port() -> int:
    """A TCP port on loopback that nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------- protocol checks


def _check_tools(tools: Any, chat: bool) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "'tools' must be an array"
    names = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return f"tools[{i}]: only function tools are supported here"
        spec = tool.get("function") if chat else tool
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            return f"tools[{i}]: missing function name"
        if not isinstance(spec.get("parameters", {}), dict):
            return f"tools[{i}]: parameters must be a JSON Schema object"
        names.append(spec["name"])
    if len(set(names)) != len(names):
        return "tool names must be unique"
    return None


def _check_chat(body: dict[str, Any]) -> str | None:
    messages = body.get("messages")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}]: invalid role {role!r}"
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in open_calls:
                return (f"messages[{i}]: messages with role 'tool' must be a response to a preceding "
                        f"message with 'tool_calls' (tool_call_id {call_id!r})")
            open_calls.discard(call_id)
            continue
        if open_calls:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding "
                    f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(sorted(open_calls))}")
        if role == "assistant":
            for c in m.get("tool_calls") or ():
                fn = c.get("function") or {}
                if c.get("type") != "function" or not c.get("id") or not isinstance(fn.get("arguments"), str):
                    return f"messages[{i}]: malformed tool call {c!r}"
                open_calls.add(c["id"])
    if open_calls:
        return f"tool_call_ids without response messages: {', '.join(sorted(open_calls))}"
    return _check_tools(body.get("tools"), chat=True)


def _check_responses(body: dict[str, Any]) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    items = body.get("input")
    if isinstance(items, str):
        return _check_tools(body.get("tools"), chat=False)
    if not isinstance(items, list) or not items:
        return "'input' must be a string or a non-empty array"
    calls: set[str] = set()
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            if item.get("role") not in ("system", "developer", "user", "assistant"):
                return f"input[{i}]: invalid role {item.get('role')!r}"
            if not isinstance(item.get("content"), (str, list)):
                return f"input[{i}]: content must be a string or an array"
        elif kind == "function_call":
            if not item.get("call_id") or not isinstance(item.get("arguments"), str) or not item.get("name"):
                return f"input[{i}]: function_call needs call_id, name and string arguments"
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            if not isinstance(item.get("output"), (str, list)):
                return f"input[{i}]: output must be a string"
            answered.add(item["call_id"])
        else:
            return f"input[{i}]: unsupported item type {kind!r}"
    missing = calls - answered
    if missing:
        return f"No tool output found for function call {sorted(missing)[0]}."
    return _check_tools(body.get("tools"), chat=False)


# ---------------------------------------------------------------------- rendering


def _render_chat(state: ModelServer, body: dict[str, Any], r: QueuedReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": r.text or None, "refusal": None}
    if r.tool_calls:
        message["tool_calls"] = [
            {"id": state._next_id("call"), "type": "function", "function": {"name": n, "arguments": a}}
            for n, a in r.tool_calls
        ]
    out: dict[str, Any] = {
        "id": state._next_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if r.tool_calls else "stop"}],
    }
    if r.input_tokens is not None or r.output_tokens is not None:
        i, o = r.input_tokens or 0, r.output_tokens or 0
        out["usage"] = {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}
    return out


def _render_responses(state: ModelServer, body: dict[str, Any], r: QueuedReply) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if r.text:
        output.append({
            "id": state._next_id("msg"), "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": r.text, "annotations": []}],
        })
    for name, arguments in r.tool_calls:
        output.append({
            "id": state._next_id("fc"), "type": "function_call", "status": "completed",
            "call_id": state._next_id("call"), "name": name, "arguments": arguments,
        })
    out: dict[str, Any] = {
        "id": state._next_id("resp"),
        "object": "response",
        "created_at": time.time(),
        "status": "completed",
        "model": body.get("model", ""),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "error": None,
        "incomplete_details": None,
    }
    if r.input_tokens is not None or r.output_tokens is not None:
        i, o = r.input_tokens or 0, r.output_tokens or 0
        out["usage"] = {
            "input_tokens": i, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": o, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": i + o,
        }
    return out


class _Handler(BaseHTTPRequestHandler):
    server_state: ModelServer
    protocol_version = "HTTP/1.0"  # one request per connection: request counts stay exact

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        self._handle()

    def _handle(self) -> None:
        state = self.server_state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        path = self.path.split("?", 1)[0]
        received = ReceivedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
        state._record(received)
        if path not in (RESPONSES_PATH, CHAT_PATH) or self.command != "POST":
            return self._send(404, {"error": {"message": f"Unknown request URL: {self.command} {path}",
                                              "type": "invalid_request_error", "param": None, "code": None}})
        reply = state._pop()
        if reply is None:
            return self._send(400, {"error": {"message": f"model_server: no reply queued for {path}",
                                              "type": "invalid_request_error", "param": None,
                                              "code": "no_reply_queued"}}, {"x-should-retry": "false"})
        if reply.delay_s and state._stopping.wait(reply.delay_s):
            return
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        headers = dict(reply.headers)
        if reply.raw_body is not None:
            return self._send(reply.status, reply.raw_body, headers)
        if reply.status != 200:
            return self._send(reply.status, {"error": reply.error}, headers)
        problem = (_check_chat if path == CHAT_PATH else _check_responses)(body if isinstance(body, dict) else {})
        if problem:
            return self._send(400, {"error": {"message": problem, "type": "invalid_request_error",
                                              "param": None, "code": None}})
        render = _render_chat if path == CHAT_PATH else _render_responses
        self._send(200, render(state, body, reply), headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("x-request-id", f"req_{len(self.server_state.requests)}")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout passed); that is what the test wanted


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A fresh loopback model server per test; its ``base_url`` ends in ``/v1``."""
    with ModelServer() as server:
        yield server
