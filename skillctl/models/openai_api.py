"""What the two OpenAI-protocol adapters share: where the endpoint is, the SDK client, and the
translation of SDK failures into skillctl's error tree.

Retries are the official SDK's (exponential backoff with jitter, honouring ``retry-after``): it
retries connection errors, timeouts, 408, 409, 429 and 5xx, and never a 400 — an invalid
request is not retried, since sending it again cannot help. We only choose how many times.

The API key never appears in a message we raise: 401 texts from the server are dropped (OpenAI
echoes part of the key back), other texts are scrubbed of the key and of the base URL's
credentials (``user:password@``, as written and percent-decoded), in any letter case, and the
endpoint is shown without them.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit, urlunsplit

from skillctl.errors import ConfigError, ContextTooLong, ModelError

OPENAI_BASE_URL = "https://api.openai.com/v1"
# Local servers (vLLM, Ollama, llama.cpp) ignore the key, but the SDK insists on having one.
PLACEHOLDER_KEY = "sk-no-key-required"
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_RETRIES = 4
_DETAIL_CHARS = 240

# How servers say "the conversation does not fit": OpenAI (code context_length_exceeded,
# "Your input exceeds the context window"), vLLM ("maximum context length", "maximum model
# length"), llama.cpp (type exceed_context_size_error, "exceeds the available context size"),
# Anthropic-compatible proxies ("prompt is too long").
_CONTEXT_CODES = {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
_CONTEXT_TEXT = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|exceeds? the (?:available )?context"
    r"|context window|maximum model length|prompt is too long|too many tokens|context size",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and how patiently. ``api_key`` is kept out of ``repr``."""

    base_url: str
    api_key: str = field(repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES

    @property
    def display(self) -> str:
        """The base URL for messages: no credentials, no query string."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no message may show: the key, and the base URL's credentials, longest first.
        Shorter than 4 characters is left alone (scrubbing it would garble every message)."""
        found = [self.api_key] if self.api_key != PLACEHOLDER_KEY else []
        netloc = urlsplit(self.base_url).netloc
        if "@" in netloc:
            userinfo = netloc.rpartition("@")[0]
            password = userinfo.partition(":")[2]
            found += [userinfo, unquote(userinfo), password, unquote(password)]
        return tuple(sorted({s for s in found if len(s) >= 4}, key=lambda s: (-len(s), s)))

    def scrub(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``, whatever its letter case."""
        for secret in self.secrets:
            text = re.sub(re.escape(secret), "***", text, flags=re.IGNORECASE)
        return text


def resolve_endpoint(
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Endpoint:
    """Fill in ``base_url`` from ``OPENAI_BASE_URL`` and ``api_key`` from ``OPENAI_API_KEY``.
    With a base URL and no key, a placeholder key is used (local servers need none); with
    neither, ``ConfigError`` says what to set."""
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = Endpoint(url, key or PLACEHOLDER_KEY).scrub(url)  # never echo credentials
            raise ConfigError(
                f"model base URL {shown!r} is not an http(s) URL; use e.g. http://127.0.0.1:8000/v1"
            )
    if key is None:
        if url is None:
            raise ConfigError(
                "no API key for the OpenAI API: set OPENAI_API_KEY, or pass --base-url (or OPENAI_BASE_URL) "
                "for a local server such as vLLM, Ollama or llama.cpp"
            )
        key = PLACEHOLDER_KEY
    if timeout_s <= 0:
        raise ConfigError(f"model timeout must be positive, got {timeout_s}")
    if max_retries < 0:
        raise ConfigError(f"model max_retries must be 0 or more, got {max_retries}")
    return Endpoint(url or OPENAI_BASE_URL, key, float(timeout_s), int(max_retries))


def make_client(endpoint: Endpoint) -> Any:
    """The official SDK client for ``endpoint``."""
    import openai

    try:
        return openai.OpenAI(
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            timeout=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
        )
    except openai.OpenAIError as exc:
        raise ConfigError(f"cannot set up a client for {endpoint.display}: {_one_line(str(exc), endpoint)}") from None


def is_context_too_long(status: int | None, code: str | None, kind: str | None, message: str) -> bool:
    """Whether an error means the conversation no longer fits the model."""
    if status == 413:  # body too large for the endpoint: the same remedy as a too-long conversation
        return True
    if status not in (None, 400, 422):
        return False
    if code in _CONTEXT_CODES or kind in _CONTEXT_CODES:
        return True
    return bool(_CONTEXT_TEXT.search(message or ""))


def _one_line(text: str, endpoint: Endpoint) -> str:
    text = " ".join(endpoint.scrub(str(text)).split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body
    return getattr(exc, "message", "") or ""


@contextmanager
def translated_errors(endpoint: Endpoint, model: str) -> Iterator[None]:
    """Run an SDK call; turn what the SDK raises (after its retries) into ``ModelError``, or
    ``ContextTooLong`` when the conversation does not fit the model."""
    import openai

    where = endpoint.display
    retried = f"after {endpoint.max_retries} retr{'y' if endpoint.max_retries == 1 else 'ies'}"
    try:
        yield
    except openai.APITimeoutError:
        raise ModelError(
            f"model endpoint {where} did not answer within {endpoint.timeout_s:g}s ({retried}); "
            "try again later or allow a longer timeout"
        ) from None
    except openai.APIConnectionError as exc:
        cause = _one_line(str(exc.__cause__ or exc), endpoint)
        raise ModelError(
            f"cannot reach model endpoint {where} ({retried}): {cause}; "
            "check --base-url / OPENAI_BASE_URL and that the server is running"
        ) from None
    except openai.AuthenticationError as exc:
        # The server's text is dropped on purpose: OpenAI's 401 message quotes part of the key.
        raise ModelError(
            f"model endpoint {where} rejected the API key ({exc.status_code}); "
            "set OPENAI_API_KEY to a valid key for this endpoint"
        ) from None
    except openai.APIStatusError as exc:
        status = exc.status_code
        text = _one_line(_server_message(exc), endpoint)
        if is_context_too_long(status, exc.code, getattr(exc, "type", None), text):
            raise ContextTooLong(f"model {model!r} at {where}: {text}") from None
        code = f", {exc.code}" if exc.code else ""
        if status == 404:
            hint = "check the model name and that the base URL ends in /v1"
        elif status == 429 and exc.code == "insufficient_quota":
            hint = "the account has no quota left; check its plan and billing"
        elif status == 429:
            hint = f"rate limited {retried}; wait and try again"
        elif status >= 500:
            hint = f"the server failed {retried}; try again later"
        elif status == 400:
            hint = "the request was rejected as invalid and is not retried"
        else:
            hint = "the request was refused"
        raise ModelError(f"model endpoint {where} answered {status}{code} for model {model!r}: {text}; {hint}") from None
    except openai.APIResponseValidationError as exc:
        raise ModelError(f"model endpoint {where} sent a reply that does not fit the API: {_one_line(str(exc), endpoint)}") from None
    except openai.OpenAIError as exc:
        raise ModelError(f"model endpoint {where}: {_one_line(str(exc), endpoint)}") from None


def require_api_object(reply: Any, endpoint: Endpoint, model: str) -> None:
    """The SDK hands back the body as text when it is not JSON (an HTML proxy page, a wrong
    URL answered by some other server); say so instead of failing on a missing attribute."""
    if not hasattr(reply, "model_dump"):
        snippet = _one_line(str(reply), endpoint)[:80]
        raise ModelError(
            f"model endpoint {endpoint.display} sent a reply that is not API JSON for model {model!r} "
            f"({snippet!r}); check that the base URL points at an OpenAI-compatible API (usually ending in /v1)"
        )


def failed_response_error(endpoint: Endpoint, model: str, code: str | None, message: str) -> ModelError:
    """The error for a reply that arrived (200) but says generation failed."""
    text = _one_line(message, endpoint)
    if is_context_too_long(None, code, None, text):
        return ContextTooLong(f"model {model!r} at {endpoint.display}: {text}")
    return ModelError(f"model endpoint {endpoint.display} failed to answer model {model!r} ({code or 'no code'}): {text}")


def usage_tokens(value: Any) -> int | None:
    """A usage count as reported, or None when it is missing or zero (a context is never empty,
    so 0 means the server did not count; the loop then uses the per-script estimate)."""
    return value if isinstance(value, int) and value > 0 else None
