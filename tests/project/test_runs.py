"""A run with a lock (``RunSpec(lock=…)``, ``skillctl run --lock``) loads the lock's skills from
their sources — a folder of the project here, whose files are checked against the lock — and
applies the project's ``network:`` section as the CLI does. The local sandbox keeps these fast;
nothing here needs a container."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from registry.helpers import write_skill
from skillctl.errors import ConfigError, IntegrityError
from skillctl.runtime import RunSpec, run


def script(tmp_path: Path, steps: list) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({"steps": steps}), "utf-8")
    return f"script:{path}"


def spec(tmp_path: Path, lock: Path, steps: list, **kw) -> RunSpec:
    return RunSpec(task="Do the task.", model=script(tmp_path, steps), lock=lock, sandbox="local", allow_unsafe_local=True,
                   transcript=tmp_path / "t.jsonl", **kw)


@pytest.fixture
def locked_folder_skill(project: Path, lock_of) -> Path:
    write_skill(project / "skills", "helper", "0.3.0", body="# Helper\n\nThe answer is forty-two.\n")
    lock_of("skills:\n  helper: {path: ./skills/helper}\n")
    return project / "skills.lock"


def test_a_lock_with_a_folder_skill_loads_it_into_the_run(tmp_path: Path, locked_folder_skill: Path) -> None:
    seen: dict[str, str] = {}

    def after_run(sandbox, result) -> None:
        seen["skill"] = sandbox.exec(f"cat {sandbox.agent_path('/skills/helper/SKILL.md')}", timeout_s=60).stdout

    result = run(spec(tmp_path, locked_folder_skill, [{"answer": "done"}], after_run=after_run))
    assert result.outcome == "answered"
    assert [s["name"] for s in result.skills] == ["helper"]
    assert "forty-two" in seen["skill"]
    assert "<name>helper</name>" in (tmp_path / "t.jsonl").read_text()  # in the catalog the model saw


def test_a_folder_changed_since_the_lock_is_refused_before_the_run(tmp_path: Path, locked_folder_skill: Path,
                                                                     project: Path) -> None:
    (project / "skills" / "helper" / "SKILL.md").write_text((project / "skills" / "helper" / "SKILL.md").read_text() + "x\n")
    with pytest.raises(IntegrityError, match="helper: the files in .* changed since the lock was written"):
        run(spec(tmp_path, locked_folder_skill, [{"answer": "done"}]))
    assert not (tmp_path / "t.jsonl").exists()


def test_the_lock_brings_the_projects_network_section(tmp_path: Path, locked_folder_skill: Path, project: Path) -> None:
    text = (project / "skills.yaml").read_text()
    (project / "skills.yaml").write_text(text + "network: {type: allowlist, allowed_domains: [api.example.test]}\n")
    with pytest.raises(ConfigError, match="needs the docker sandbox"):
        run(spec(tmp_path, locked_folder_skill, [{"answer": "done"}]))
    # explicitly disabled, the run goes ahead without it
    assert run(spec(tmp_path, locked_folder_skill, [{"answer": "done"}], network={"type": "disabled"})).outcome == "answered"


def test_a_projects_secrets_need_the_opt_in_in_the_library_too(tmp_path: Path, locked_folder_skill: Path,
                                                                project: Path) -> None:
    text = (project / "skills.yaml").read_text()
    (project / "skills.yaml").write_text(text + (
        "network:\n  type: allowlist\n  allowed_domains: [api.example.test]\n"
        "  domain_secrets: [{domain: api.example.test, name: TOKEN, value: env:HOME}]\n"))
    with pytest.raises(ConfigError, match="project"):
        run(spec(tmp_path, locked_folder_skill, [{"answer": "done"}]))
