"""The commands against a real distribution server, as separate client processes.

What makes the OCI registry done: a skill published with ``--registry oci://…`` is locked,
installed and run from another client (its own HOME, nothing shared but the registry URL)
exactly as from the folder registry, digests verified end to end; ``copy`` moves versions both
ways with the same digests, so one skills.lock works against either registry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PASSWORD, USER
from .helpers import write_skill
from .server import DistributionServer

pytestmark = [pytest.mark.requires_registry]
REPO = Path(__file__).resolve().parents[2]
TALLY = REPO / "skills" / "tally"
NOTES = REPO / "examples" / "demo" / "notes.txt"


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh client: its own HOME and data folders, no registry settings inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLCTL_", "DOCKER_CONFIG", "XDG_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), **extra)
    return env


def skillctl(*args: object, env: dict[str, str], cwd: Path, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-c", "from skillctl.cli import main; main()", *map(str, args)],
        env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300,
    )
    if ok:
        assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


def retag_behind_our_back(server: DistributionServer, repo: str, tag: str, donor_repo: str) -> None:
    """Point ``repo:tag`` at the manifest of ``donor_repo:tag`` (a mutable tag being moved)."""
    body = server.get_manifest(donor_repo, tag)
    doc = json.loads(body)
    for d in (doc["config"], doc["layers"][0]):
        server.push_blob(repo, server.blob_file(d["digest"]).read_bytes())
    server.put_manifest(repo, tag, body)


@pytest.mark.requires_docker
def test_done_when_publish_then_lock_install_and_run_from_another_client(
    registry_server: DistributionServer, ns: str, tmp_path: Path, agent_image: str
) -> None:
    url = registry_server.url(ns)
    author = tmp_path / "author"
    author.mkdir()
    pub = skillctl("publish", TALLY, "--registry", url, "--insecure", "--format", "json", env=client_env(author / "home"), cwd=author)
    [published] = json.loads(pub.stdout)
    assert published["status"] == "published"

    # Another machine: its own HOME; the registry and --insecure come from the environment.
    project = tmp_path / "project"
    project.mkdir()
    env = client_env(project / "home", SKILLCTL_REGISTRY=url, SKILLCTL_INSECURE="1")
    (project / "skills.yaml").write_text("skills:\n  tally: ^1.0\n", "utf-8")
    skillctl("lock", env=env, cwd=project)
    lock = json.loads((project / "skills.lock").read_text())
    assert lock["skills"]["tally"]["digest"] == published["digest"]
    assert lock["skills"]["tally"]["id"] == published["skill_id"]
    skillctl("install", "--frozen", env=env, cwd=project)
    installed = project / ".agents" / "skills" / "tally"
    assert (installed / "SKILL.md").read_bytes() == (TALLY / "SKILL.md").read_bytes()
    assert (installed / "scripts" / "tally.py").read_bytes() == (TALLY / "scripts" / "tally.py").read_bytes()

    script = project / "run.script.yaml"
    script.write_text(
        'steps:\n  - shell: ["cat /skills/tally/SKILL.md", "python3 /skills/tally/scripts/tally.py /workspace/notes.txt"]\n'
        '  - answer: "counted"\n', "utf-8",
    )
    transcript = project / "run.jsonl"
    run = skillctl("run", "--lock", "skills.lock", "--model", f"script:{script}", "--image", agent_image, "--input", NOTES,
                   "--transcript", transcript, "Count the words in notes.txt.", env=env, cwd=project)
    assert run.stdout.strip() == "counted"
    assert "loaded tally@1.0.0 -> /skills/tally/" in run.stderr
    tool_results = [e["message"]["content"] for e in map(json.loads, transcript.read_text().splitlines())
                    if e.get("type") == "message" and e["message"]["role"] == "tool"]
    assert tool_results and "$ cat /skills/tally/SKILL.md\nexit_code: 0\nstdout:\n---\nname: tally\n" in tool_results[0]
    assert "$ python3 /skills/tally/scripts/tally.py /workspace/notes.txt\nexit_code: 0\n" in tool_results[0]

    # The tag is moved behind our back: install --frozen and run --lock both refuse it.
    other = write_skill(tmp_path / "evil", "tally", "1.0.0", body="Something else entirely.")
    skillctl("publish", other, "--registry", registry_server.url(ns + "evil"), "--insecure", env=client_env(author / "home"), cwd=author)
    retag_behind_our_back(registry_server, f"{ns}/tally", "1.0.0", f"{ns}evil/tally")
    bad = skillctl("install", "--frozen", "-o", "again", env=env, cwd=project, ok=False)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "tally@1.0.0: the registry now serves" in bad.stderr and "changed behind your back" in bad.stderr
    assert not (project / "again" / "tally").exists()
    bad = skillctl("run", "--lock", "skills.lock", "--model", f"script:{script}", "--image", agent_image, "task", env=env, cwd=project, ok=False)
    assert bad.returncode == 1 and "changed behind your back" in bad.stderr and "Traceback" not in bad.stderr


def test_commands_read_the_oci_registry(registry_server: DistributionServer, ns: str, tmp_path: Path) -> None:
    url = registry_server.url(ns)
    env = client_env(tmp_path / "home", SKILLCTL_REGISTRY=url, SKILLCTL_INSECURE="1")
    skillctl("publish", write_skill(tmp_path / "a", "demo", "1.0.0"), env=env, cwd=tmp_path)
    skillctl("publish", write_skill(tmp_path / "b", "demo", "1.1.0", body="newer"), env=env, cwd=tmp_path)
    again = skillctl("publish", write_skill(tmp_path / "b", "demo", "1.1.0", body="newer"), env=env, cwd=tmp_path)
    assert again.stdout.startswith("unchanged demo@1.1.0")
    clash = skillctl("publish", write_skill(tmp_path / "c", "demo", "1.1.0", body="other"), env=env, cwd=tmp_path, ok=False)
    assert clash.returncode == 1 and "demo@1.1.0 is already published with other content" in clash.stderr

    versions = json.loads(skillctl("versions", "demo", "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [v["version"] for v in versions] == ["1.1.0", "1.0.0"]
    shown = json.loads(skillctl("show", "demo@~1.0", "--format", "json", env=env, cwd=tmp_path).stdout)
    assert shown["resolved"]["version"] == "1.0.0" and shown["default_version"] == "1.1.0"
    listed = json.loads(skillctl("list", "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [(s["name"], s["versions"]) for s in listed] == [("demo", 2)]
    skillctl("pull", "demo@1.0.0", "-o", "vendor", env=env, cwd=tmp_path)
    assert (tmp_path / "vendor" / "demo" / "SKILL.md").exists()
    yank = skillctl("yank", "demo@1.1.0", "--reason", "bad", env=env, cwd=tmp_path)
    assert yank.stdout.strip() == "yanked demo@1.1.0"
    assert json.loads(skillctl("show", "demo", "--format", "json", env=env, cwd=tmp_path).stdout)["resolved"]["version"] == "1.0.0"
    verify = skillctl("registry", "verify", "--format", "json", env=env, cwd=tmp_path)
    assert json.loads(verify.stdout)["ok"] is True
    for args in (("registry", "remove", "demo@1.0.0", "--yes"), ("registry", "gc")):
        refused = skillctl(*args, env=env, cwd=tmp_path, ok=False)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "OCI" in refused.stderr


def test_plain_http_only_on_request(registry_server: DistributionServer, ns: str, tmp_path: Path) -> None:
    env = client_env(tmp_path / "home")
    proc = skillctl("versions", "demo", "--registry", registry_server.url(ns), env=env, cwd=tmp_path, ok=False)
    assert proc.returncode == 1 and "failed" in proc.stderr and "--insecure" in proc.stderr


def test_credentials_from_password_stdin_and_env(auth_server: DistributionServer, ns: str, tmp_path: Path) -> None:
    url = auth_server.url(ns)
    env = client_env(tmp_path / "home")
    folder = write_skill(tmp_path / "src", "demo", "1.0.0")
    denied = skillctl("publish", folder, "--registry", url, "--insecure", env=env, cwd=tmp_path, ok=False)
    assert denied.returncode == 1 and f"registry {auth_server.host} requires credentials (HTTP 401)" in denied.stderr
    skillctl("publish", folder, "--registry", url, "--insecure", "--username", USER, "--password-stdin", env=env, cwd=tmp_path, stdin=PASSWORD + "\n")
    wrong = skillctl("versions", "demo", "--registry", url, "--insecure", "--username", USER, "--password-stdin", env=env, cwd=tmp_path, stdin="nope\n", ok=False)
    assert f"rejected the credentials of '{USER}' (from --username/--password-stdin)" in wrong.stderr
    nothing = skillctl("versions", "demo", "--registry", url, "--insecure", "--password-stdin", env=env, cwd=tmp_path, stdin="", ok=False)
    assert nothing.returncode == 2 and "nothing was read from standard input" in nothing.stderr
    half = skillctl("versions", "demo", "--registry", url, "--insecure", "--username", USER, env=env, cwd=tmp_path, ok=False)
    assert half.returncode == 1 and "--username needs a password" in half.stderr
    env_creds = client_env(tmp_path / "home2", SKILLCTL_REGISTRY_USERNAME=USER, SKILLCTL_REGISTRY_PASSWORD=PASSWORD, SKILLCTL_INSECURE="1")
    out = skillctl("versions", "demo", "--registry", url, "--format", "json", env=env_creds, cwd=tmp_path)
    assert [v["version"] for v in json.loads(out.stdout)] == ["1.0.0"]


def test_copy_local_to_oci_to_local_keeps_digests_and_locks(registry_server: DistributionServer, ns: str, tmp_path: Path) -> None:
    env = client_env(tmp_path / "home", SKILLCTL_INSECURE="1")
    local_a, local_b, url = tmp_path / "reg-a", tmp_path / "reg-b", registry_server.url(ns)
    for v, body in (("1.0.0", "one"), ("1.1.0", "two"), ("2.0.0-rc.1", "three")):
        skillctl("publish", write_skill(tmp_path / f"src-{v}", "demo", v, body=body), "--registry", local_a, env=env, cwd=tmp_path)
    skillctl("yank", "demo@1.1.0", "--reason", "broken", "--registry", local_a, env=env, cwd=tmp_path)
    source = json.loads(skillctl("versions", "demo", "--registry", local_a, "--format", "json", env=env, cwd=tmp_path).stdout)

    up = json.loads(skillctl("copy", "demo", "--from", local_a, "--to", url, "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [(c["version"], c["status"], c["yanked"]) for c in up] == [("1.0.0", "published", False), ("1.1.0", "published", True), ("2.0.0-rc.1", "published", False)]
    on_oci = json.loads(skillctl("versions", "demo", "--registry", url, "--format", "json", env=env, cwd=tmp_path).stdout)
    pick = lambda recs: [(r["version"], r["digest"], r["tar_digest"], r["yanked"], r["created_at"], r["skill_id"]) for r in recs]  # noqa: E731
    assert pick(on_oci) == pick(source)  # digests, yank state, publish time and even the id survive

    again = json.loads(skillctl("copy", "demo", "--from", local_a, "--to", url, "--format", "json", env=env, cwd=tmp_path).stdout)
    assert {c["status"] for c in again} == {"unchanged"}

    down = json.loads(skillctl("copy", "demo", "--from", url, "--to", local_b, "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [c["status"] for c in down] == ["published"] * 3
    back = json.loads(skillctl("versions", "demo", "--registry", local_b, "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [(r["version"], r["digest"], r["yanked"]) for r in back] == [(r["version"], r["digest"], r["yanked"]) for r in source]

    # a lock written against the folder registry installs from the OCI mirror, digests enforced
    (tmp_path / "skills.yaml").write_text("skills:\n  demo: ^1.0\n", "utf-8")
    skillctl("lock", "--registry", local_a, env=env, cwd=tmp_path)
    assert json.loads((tmp_path / "skills.lock").read_text())["skills"]["demo"]["version"] == "1.0.0"
    skillctl("install", "--frozen", "--registry", url, env=env, cwd=tmp_path)
    assert "one" in (tmp_path / ".agents" / "skills" / "demo" / "SKILL.md").read_text()

    one = json.loads(skillctl("copy", "demo@1.0.0", "--from", url, "--to", tmp_path / "reg-c", "--format", "json", env=env, cwd=tmp_path).stdout)
    assert [(c["version"], c["status"]) for c in one] == [("1.0.0", "published")]


def test_copy_reports_a_conflicting_target_version_and_overwrites_nothing(registry_server: DistributionServer, ns: str, tmp_path: Path) -> None:
    env = client_env(tmp_path / "home", SKILLCTL_INSECURE="1")
    url, local = registry_server.url(ns), tmp_path / "reg"
    skillctl("publish", write_skill(tmp_path / "a", "demo", "1.0.0", body="local"), "--registry", local, env=env, cwd=tmp_path)
    skillctl("publish", write_skill(tmp_path / "a2", "demo", "1.1.0", body="local2"), "--registry", local, env=env, cwd=tmp_path)
    skillctl("publish", write_skill(tmp_path / "b", "demo", "1.0.0", body="remote"), "--registry", url, env=env, cwd=tmp_path)
    remote_before = json.loads(skillctl("versions", "demo", "--registry", url, "--format", "json", env=env, cwd=tmp_path).stdout)
    proc = skillctl("copy", "demo", "--from", local, "--to", url, env=env, cwd=tmp_path, ok=False)
    assert proc.returncode == 1
    assert "demo@1.0.0 is already published with other content" in proc.stderr
    assert "1 of 2 versions could not be copied" in proc.stderr
    assert proc.stdout.startswith("published demo@1.1.0")  # the others still go
    after = json.loads(skillctl("versions", "demo", "--registry", url, "--format", "json", env=env, cwd=tmp_path).stdout)
    assert after[-1]["digest"] == remote_before[0]["digest"]
    same = skillctl("copy", "demo", "--from", url, "--to", url, env=env, cwd=tmp_path, ok=False)
    assert same.returncode == 1 and "are the same registry" in same.stderr
