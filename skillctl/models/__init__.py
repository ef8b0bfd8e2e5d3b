"""Model backends, chosen by name and imported lazily.

    script:FILE          replays a written run from a YAML file (deterministic; demo and tests)
    openai:MODEL         the OpenAI Responses API
    openai-chat:MODEL    Chat Completions: OpenAI, vLLM, Ollama, llama.cpp (with --base-url)

``open_model(spec)`` returns an object satisfying ``skillctl.protocols.Model``. The OpenAI SDK is
imported only when an OpenAI backend is opened, so scripted runs do not pay for it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from skillctl.errors import ConfigError
from skillctl.models.openai_api import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, resolve_endpoint
from skillctl.protocols import Model

# name -> ("module:class", form shown to people, what it is)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "script": ("skillctl.models.script:ScriptModel", "script:FILE", "replay a written run from a YAML file"),
    "openai": ("skillctl.models.openai_responses:ResponsesModel", "openai:MODEL", "OpenAI Responses API"),
    "openai-chat": (
        "skillctl.models.openai_chat:ChatModel",
        "openai-chat:MODEL",
        "Chat Completions (OpenAI, vLLM, Ollama, llama.cpp via --base-url)",
    ),
}


def valid_forms() -> str:
    return ", ".join(f"{form} ({what})" for _, form, what in BACKENDS.values())


def _backend(name: str) -> Any:
    target, _, _ = BACKENDS[name]
    module_name, attr = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"model backend {name!r} needs a package that is not installed ({exc.name}); pip install {exc.name}") from None
    return getattr(module, attr)


def open_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> Model:
    """Open the model named by ``spec`` (``BACKEND:ARG``).

    For the OpenAI backends ``base_url`` falls back to ``OPENAI_BASE_URL`` and ``api_key`` to
    ``OPENAI_API_KEY``; a base URL without a key uses a placeholder key (local servers need
    none). ``timeout_s`` bounds each HTTP attempt; ``max_retries`` is how often the SDK retries
    429, 5xx, timeouts and connection errors (never a 400). The script backend ignores them.
    Any unusable spec or setting raises ``ConfigError`` with one line saying what to change.
    """
    name, sep, arg = (spec or "").partition(":")
    if not sep or name not in BACKENDS:
        raise ConfigError(f"unknown model {spec!r}; use one of: {valid_forms()}")
    if not arg.strip():
        raise ConfigError(f"model {spec!r} lacks its argument; write {BACKENDS[name][1]}")
    cls = _backend(name)
    if name == "script":
        return cls(Path(arg))
    endpoint = resolve_endpoint(base_url, api_key, timeout_s=timeout_s, max_retries=max_retries)
    return cls(arg, endpoint)


__all__ = ["BACKENDS", "open_model", "valid_forms"]
