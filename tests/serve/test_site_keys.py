"""``skillctl`` reading a keyed ``skillctl serve`` as a well-known site: the key from
``--token-stdin`` or ``SKILLCTL_SITE_TOKEN``, every read command and lock + frozen install with
it, and one-line refusals without it, with a key that may not read, a wrong or revoked key, and
a key given where it would go nowhere. The server is the real one on loopback, with keys made
by ``skillctl serve key add``; nothing is served without a key (no ``--public-read``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from registry.helpers import tree
from skillctl.cli import cli

from .helpers import openai_client, skill_dir, skill_files

WK = "/.well-known/agent-skills"


def run(*args: object, ok: bool = True, key: str | None = None, env: dict[str, str] | None = None,
        code: int | None = None) -> Result:
    """``skillctl ARGS``; ``key`` is piped to stdin (with ``--token-stdin`` among ARGS)."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=None if key is None else key + "\n", env=env,
                                catch_exceptions=False)
    assert "Traceback" not in result.output
    assert result.exit_code == (code if code is not None else 0 if ok else 1), result.output
    return result


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def add_key(keys_path: Path, name: str, scopes: str) -> str:
    """A key made the way an operator makes one: ``skillctl serve key add``, the key alone on stdout."""
    [key] = run("serve", "key", "add", name, "--scopes", scopes, "--keys", keys_path).stdout.splitlines()
    return key


@pytest.fixture
def private(start_server, keys, tmp_path: Path):
    """A server whose reads need a key, with tally 1.0.0 and 1.1.0 and note 0.1.0 (a lone
    SKILL.md) uploaded through the OpenAI API, and a read key ``server.read_key``."""
    server = start_server()
    client = openai_client(server, keys.writer)
    src = tmp_path / "src"
    server.folders = {"tally": skill_dir(src, "tally", "1.1.0", body="newer"), "note": skill_dir(src, "note", "0.1.0", files={})}
    tally = client.skills.create(files=skill_files(skill_dir(src, "tally", "1.0.0")))
    client.skills.versions.create(tally.id, files=skill_files(server.folders["tally"]))
    client.skills.create(files=skill_files(server.folders["note"]))
    server.read_key = add_key(keys.path, "reader-ci", "read")
    server.site = ["--registry", server.url, "--insecure"]
    return server


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def assert_nowhere(key: str, *roots: Path) -> None:
    for path in files_under(*roots):
        assert key.encode() not in path.read_bytes(), path


def test_a_read_key_from_stdin_lists_versions_shows_and_pulls(private, tmp_path: Path) -> None:
    key = private.read_key
    listed = json.loads(run("list", *private.site, "--token-stdin", "--format", "json", key=key).stdout)
    assert {s["name"]: s["default_version"] for s in listed} == {"note": "0.1.0", "tally": "1.1.0"}
    versions = json.loads(run("versions", "tally", *private.site, "--token-stdin", "--format", "json", key=key).stdout)
    assert sorted(v["version"] for v in versions) == ["1.0.0", "1.1.0"]
    shown = json.loads(run("show", "tally", *private.site, "--token-stdin", "--format", "json", key=key).stdout)
    assert shown["resolved"]["version"] == "1.1.0"

    pulled = run("pull", "tally", "-o", tmp_path / "vendor", *private.site, "--token-stdin", key=key)
    assert tree(tmp_path / "vendor" / "tally") == tree(private.folders["tally"])  # bytes and modes
    run("pull", "note", "-o", tmp_path / "vendor", *private.site, "--token-stdin", key=key)
    assert tree(tmp_path / "vendor" / "note") == tree(private.folders["note"])
    assert key not in pulled.output
    assert_nowhere(key, tmp_path / "cache", tmp_path / "vendor")


def test_lock_and_a_frozen_install_with_the_key_from_the_environment(private, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    key = private.read_key
    env = {"SKILLCTL_SITE_TOKEN": key}
    (tmp_path / "skills.yaml").write_text("skills:\n  tally: ^1\n  note: '*'\n")
    locked = run("lock", *private.site, env=env)
    lock = json.loads((tmp_path / "skills.lock").read_text())
    assert lock["skills"]["tally"]["version"] == "1.1.0"
    assert lock["skills"]["tally"]["index"] == f"{private.url}{WK}/tally/v1.1.0/index.json"
    installed = run("install", "--frozen", *private.site, env=env)
    assert without_marker(tree(tmp_path / ".agents" / "skills" / "tally")) == tree(private.folders["tally"])
    assert without_marker(tree(tmp_path / ".agents" / "skills" / "note")) == tree(private.folders["note"])
    assert key not in locked.output + installed.output
    assert_nowhere(key, tmp_path / "skills.lock", tmp_path / ".agents", tmp_path / "cache")


def test_without_a_key_the_site_says_one_is_needed_and_how_to_give_it(private) -> None:
    line = error_line(run("list", *private.site, ok=False))
    assert "needs a key" in line and "HTTP 401" in line and private.url in line
    assert "--token-stdin" in line and "SKILLCTL_SITE_TOKEN" in line


def test_a_frozen_install_without_the_key_is_refused_although_the_cache_holds_everything(private, keys, tmp_path: Path,
                                                                                         monkeypatch) -> None:
    # The snapshot indexes are served as immutable for a year, and the cache keeps them and every
    # artifact: without the rule for documents read with a key, the second install would need no
    # request at all, and the server would never get to refuse it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skills.yaml").write_text("skills:\n  tally: ^1\n")
    run("lock", *private.site, "--token-stdin", key=private.read_key)
    run("install", "--frozen", *private.site, "-o", tmp_path / "with-key", "--token-stdin", key=private.read_key)
    assert (tmp_path / "with-key" / "tally" / "SKILL.md").exists()

    line = error_line(run("install", "--frozen", *private.site, "-o", tmp_path / "without", ok=False))
    assert "needs a key" in line and "HTTP 401" in line
    assert not (tmp_path / "without").exists()

    run("serve", "key", "revoke", "reader-ci", "--keys", keys.path)
    line = error_line(run("install", "--frozen", *private.site, "-o", tmp_path / "revoked", "--token-stdin",
                          key=private.read_key, ok=False))
    assert "does not accept the key given" in line and "HTTP 401" in line
    assert not (tmp_path / "revoked").exists()
    # A valid key still installs from what the cache holds: the server answers 304, not the files.
    run("install", "--frozen", *private.site, "-o", tmp_path / "again", "--token-stdin", key=keys.reader)
    # the same files (each install's marker records its own files' stat data)
    assert without_marker(tree(tmp_path / "again" / "tally")) == without_marker(tree(tmp_path / "with-key" / "tally"))


def without_marker(files: dict) -> dict:
    from skillctl.project.marker import MARKER

    return {rel: v for rel, v in files.items() if rel != MARKER}


def test_a_publish_only_key_or_a_wrong_key_is_one_line(private, keys) -> None:
    publisher = add_key(keys.path, "uploader", "publish")
    line = error_line(run("list", *private.site, "--token-stdin", key=publisher, ok=False))
    assert "does not allow the key given" in line and "HTTP 403" in line and "read access" in line
    assert publisher not in line

    wrong = "skctl_" + "A" * 43
    line = error_line(run("pull", "tally", *private.site, "--token-stdin", key=wrong, ok=False))
    assert "does not accept the key given" in line and "HTTP 401" in line and wrong not in line
    line = error_line(run("list", *private.site, env={"SKILLCTL_SITE_TOKEN": wrong}, ok=False))
    assert "does not accept the key given" in line


def test_copy_from_the_private_site_into_a_folder_registry(private, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    out = json.loads(run("copy", "tally", "--from", private.url, "--to", mirror, "--insecure", "--token-stdin",
                         "--format", "json", key=private.read_key).stdout)
    assert sorted((r["version"], r["status"]) for r in out) == [("1.0.0", "published"), ("1.1.0", "published")]
    assert_nowhere(private.read_key, mirror)


def test_a_key_given_for_a_folder_or_oci_registry_is_refused(tmp_path: Path) -> None:
    line = error_line(run("list", "--registry", tmp_path / "folder", "--token-stdin", key="skctl_x", ok=False))
    assert "only for a well-known site" in line and "folder registry" in line
    line = error_line(run("list", "--registry", "oci://127.0.0.1:9/team", "--token-stdin", key="skctl_x", ok=False))
    assert "only for a well-known site" in line and "--password-stdin" in line
    result = run("copy", "tally", "--from", tmp_path / "a", "--to", tmp_path / "b", "--token-stdin", key="skctl_x", code=2)
    assert "neither --from nor --to" in result.stderr
    # The environment variable is ambient: a folder registry just does not use it.
    run("registry", "init", "--registry", tmp_path / "folder")
    run("list", "--registry", tmp_path / "folder", env={"SKILLCTL_SITE_TOKEN": "skctl_x"})


def test_token_stdin_needs_a_key_on_its_first_line(private) -> None:
    assert "first line of standard input is empty" in run("list", *private.site, "--token-stdin", key="", code=2).stderr
    result = run("list", *private.site, "--token-stdin", "--password-stdin", key=private.read_key, code=2)
    assert "both read standard input" in result.stderr
    line = error_line(run("list", *private.site, env={"SKILLCTL_SITE_TOKEN": "two words"}, ok=False))
    assert "SKILLCTL_SITE_TOKEN is not a key" in line and "two words" not in line


def test_a_user_name_or_password_for_a_site_is_refused(private) -> None:
    line = error_line(run("list", *private.site, "--username", "me", "--password-stdin", key="secret", ok=False))
    assert "takes a key" in line and "secret" not in line


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_key_never_reaches_the_servers_access_log(private, tmp_path: Path) -> None:
    logger, seen = logging.getLogger("skillctl.serve.access"), Lines()
    level = logger.level
    logger.addHandler(seen)
    logger.setLevel(logging.INFO)
    try:
        run("pull", "tally", "-o", tmp_path / "vendor", *private.site, "--token-stdin", key=private.read_key)
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    lines = seen.lines
    assert any(f"GET {WK}/index.json" in line and "key=reader-ci" in line for line in lines), lines
    assert not [line for line in lines if private.read_key in line]


def test_an_http_site_without_insecure_is_refused_with_or_without_a_key(private) -> None:
    line = error_line(run("list", "--registry", private.url, "--token-stdin", key=private.read_key, ok=False))
    assert "plain http" in line and "--insecure" in line


def test_run_loads_a_skill_from_the_private_site_and_the_transcript_holds_no_key(private, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"shell": ['head -3 "$SKILLS_DIR/tally/SKILL.md"']}, {"answer": "read it"}]}))
    transcript = tmp_path / "t.jsonl"
    result = run("run", "--skill", "tally", *private.site, "--token-stdin", "--sandbox", "local", "--allow-unsafe-local",
                 "--model", f"script:{script}", "--transcript", transcript, "--format", "json", "count", key=private.read_key)
    assert json.loads(result.stdout)["answer"] == "read it"
    assert "name: tally" in transcript.read_text()
    assert private.read_key not in result.output and private.read_key not in transcript.read_text()


def test_eval_and_batch_refuse_a_key_from_stdin_they_cannot_hand_on(private, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "count", "skills": ["tally"]}\n')
    result = run("batch", tasks, "--model", "script:none.yaml", *private.site, "--token-stdin", key=private.read_key, code=2)
    assert "SKILLCTL_SITE_TOKEN" in result.stderr and private.read_key not in result.output
    result = run("eval", "tally", "--model", "script:none.yaml", *private.site, "--token-stdin", key=private.read_key, code=2)
    assert "SKILLCTL_SITE_TOKEN" in result.stderr
