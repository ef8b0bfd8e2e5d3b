"""``open_model``: backends by name, settings from arguments or the environment, and one-line
errors for every spec or setting that cannot work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillctl.errors import ConfigError
from skillctl.models import BACKENDS, open_model
from skillctl.models.openai_api import OPENAI_BASE_URL, PLACEHOLDER_KEY, Endpoint, resolve_endpoint


@pytest.mark.parametrize("spec", ["gpt-4o", "anthropic:claude", "", "scripts:x.yaml", "OPENAI:gpt"])
def test_unknown_spec_lists_the_valid_forms(spec: str) -> None:
    msg = str(pytest.raises(ConfigError, open_model, spec).value)
    assert "script:FILE" in msg and "openai:MODEL" in msg and "openai-chat:MODEL" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("spec", ["script:", "openai:", "openai-chat:  "])
def test_spec_without_argument(spec: str) -> None:
    name = spec.split(":")[0]
    with pytest.raises(ConfigError, match=f"write {BACKENDS[name][1]}"):
        open_model(spec, base_url="http://127.0.0.1:1/v1")


def test_openai_without_key_or_base_url_says_what_to_set() -> None:
    msg = str(pytest.raises(ConfigError, open_model, "openai:gpt-test").value)
    assert "OPENAI_API_KEY" in msg and "--base-url" in msg


def test_base_url_without_key_uses_a_placeholder() -> None:
    ep = resolve_endpoint("http://127.0.0.1:8000/v1")
    assert ep.api_key == PLACEHOLDER_KEY and ep.base_url == "http://127.0.0.1:8000/v1"


def test_key_without_base_url_talks_to_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    ep = resolve_endpoint()
    assert (ep.base_url, ep.api_key) == (OPENAI_BASE_URL, "sk-env")


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.invalid/v1")
    ep = resolve_endpoint("http://127.0.0.1:9/v1", "sk-arg")
    assert (ep.base_url, ep.api_key) == ("http://127.0.0.1:9/v1", "sk-arg")


@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "ftp://host/v1", "http://", "localhost"])
def test_base_url_must_be_http(url: str) -> None:
    with pytest.raises(ConfigError, match="is not an http"):
        open_model("openai-chat:m", base_url=url)


@pytest.mark.parametrize(("kw", "word"), [({"timeout_s": 0}, "timeout"), ({"max_retries": -1}, "max_retries")])
def test_bad_retry_settings(kw: dict, word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        open_model("openai-chat:m", base_url="http://127.0.0.1:1/v1", **kw)


def test_the_key_is_not_in_repr_or_display() -> None:
    ep = Endpoint("http://user:pw@127.0.0.1:8000/v1/?token=abc", "sk-hidden-123")
    assert "sk-hidden-123" not in repr(ep)
    assert ep.display == "http://127.0.0.1:8000/v1"
    model = open_model("openai-chat:m", base_url="http://127.0.0.1:1/v1", api_key="sk-hidden-123")
    assert "sk-hidden-123" not in repr(vars(model).get("endpoint"))


def test_scrubbing_covers_the_key_and_the_url_credentials_in_any_case() -> None:
    ep = Endpoint("https://me:Pa%20ss-1234@host.example/v1", "sk-Hidden-123")
    assert ep.secrets == ("me:Pa%20ss-1234", "me:Pa ss-1234", "sk-Hidden-123", "Pa%20ss-1234", "Pa ss-1234")
    text = "SK-HIDDEN-123 sk-hidden-123 ME:PA SS-1234 pa%20ss-1234 me"
    assert ep.scrub(text) == "*** *** *** *** me"
    assert Endpoint("http://127.0.0.1/v1", "sk-no-key-required").secrets == ()  # the placeholder is no secret
    assert Endpoint("http://a:b@127.0.0.1/v1", "sk-x").secrets == ("sk-x",)  # "a:b": too short to scrub usefully
    with pytest.raises(ConfigError) as err:
        open_model("openai-chat:m", base_url="ftp://user:hunter22@example.org/v1")
    assert "hunter22" not in str(err.value) and "ftp://***@example.org/v1" in str(err.value)


def test_names_follow_the_spec(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("steps:\n  - answer: hi\n")
    assert open_model(f"script:{script}").name == f"script:{script}"
    assert open_model("openai:gpt-x", base_url="http://127.0.0.1:1/v1").name == "openai:gpt-x"
    assert open_model("openai-chat:llama3", base_url="http://127.0.0.1:1/v1").name == "openai-chat:llama3"


def test_the_openai_sdk_is_imported_only_for_openai_backends(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("steps:\n  - answer: hi\n")
    code = (
        "import sys; from skillctl.models import open_model; from skillctl.messages import user\n"
        f"m = open_model('script:{script}'); m.complete([user('x')], [])\n"
        "assert 'openai' not in sys.modules, 'script backend imported openai'\n"
        "open_model('openai-chat:m', base_url='http://127.0.0.1:1/v1')\n"
        "assert 'openai' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
