"""An upload whose validation (or audit) is slow holds up no other upload: the work happens
before the registry's write lock, and under the lock only the version is decided — again,
against every version there by then.

The slow upload is held inside the real validator (or the real audit) by a gate the test
opens when it has seen the other uploads through: a rendezvous, not a race against a clock.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import openai
import pytest

import skillctl.audit
import skillctl.registry.prepare

from .helpers import files_of_zip, openai_client, skill_dir, skill_files

# How long an upload beside the held one may take before the test gives up (they finish in well
# under a second; one stalled behind the held upload waits this long and fails the test). The
# gate opens by itself after twice that, so a failing test still ends.
DEADLINE_S = 60


class Gate:
    """Wraps ``module.attr`` so that the first call ``held(args, kwargs)`` picks waits, in the real
    function's place, until the test opens the gate; every other call goes straight through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, attr: str, held: Callable[[tuple, dict], bool]) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self._taken = threading.Lock()
        real = getattr(module, attr)

        def gated(*args: Any, **kwargs: Any) -> Any:
            if held(args, kwargs) and self._taken.acquire(blocking=False):
                self.entered.set()
                self.opened.wait(2 * DEADLINE_S)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attr, gated)

    def wait_entered(self) -> None:
        assert self.entered.wait(DEADLINE_S), "the held upload never reached the gate"


STAGES = {
    # skillctl.registry.prepare validates every upload with check_skill(folder, name)
    "validation": lambda mp, name: Gate(mp, skillctl.registry.prepare, "check_skill", lambda a, kw: a[1:2] == (name,)),
    # an audit gate audits the packed bundle: audit_bundle(data, …, source="NAME@VERSION")
    "audit": lambda mp, name: Gate(mp, skillctl.audit, "audit_bundle", lambda a, kw: kw["source"].startswith(f"{name}@")),
}


@pytest.fixture(params=sorted(STAGES))
def stage(request) -> str:
    return request.param


@pytest.fixture
def admin(start_server, keys, stage) -> openai.OpenAI:
    return openai_client(start_server(audit_gate="high" if stage == "audit" else None), keys.admin, timeout=DEADLINE_S)


def test_an_upload_held_in_validation_stalls_no_other_upload_and_still_gets_the_next_version(
    admin: openai.OpenAI, src: Path, stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = admin.skills.create(files=skill_files(skill_dir(src, "slow", version=None)))
    assert skill.latest_version == "1.0.0"
    gate = STAGES[stage](monkeypatch, "slow")
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            held = pool.submit(admin.skills.versions.create, skill.id, files=skill_files(skill_dir(src, "slow", version=None, body="held")))
            gate.wait_entered()  # its provisional version is 1.1.0
            # Meanwhile: a version of the same skill, a new skill, a version of that one.
            beside = admin.skills.versions.create(skill.id, files=skill_files(skill_dir(src, "slow", version=None, body="beside")))
            other = admin.skills.create(files=skill_files(skill_dir(src, "other", version=None)))
            other_next = admin.skills.versions.create(other.id, files=skill_files(skill_dir(src, "other", version=None, body="2")))
            assert not held.done()
        finally:
            gate.opened.set()
        late = held.result(timeout=DEADLINE_S)
    assert (beside.version, other.latest_version, other_next.version) == ("1.1.0", "1.0.0", "1.1.0")
    assert late.version == "1.2.0"  # decided again under the lock: 1.1.0 was taken meanwhile
    assert [v.version for v in admin.skills.versions.list(skill.id)] == ["1.2.0", "1.1.0", "1.0.0"]
    content = files_of_zip(admin.skills.versions.content.retrieve("1.2.0", skill_id=skill.id).content)
    assert b"held" in content["slow/SKILL.md"][0]


def test_a_skill_created_while_another_creation_of_it_is_held_refuses_the_held_one(
    admin: openai.OpenAI, src: Path, stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = STAGES[stage](monkeypatch, "dup")
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            held = pool.submit(admin.skills.create, files=skill_files(skill_dir(src, "dup", body="held")))
            gate.wait_entered()
            first = admin.skills.create(files=skill_files(skill_dir(src, "dup", body="first")))
        finally:
            gate.opened.set()
        with pytest.raises(openai.ConflictError, match=f"a skill named 'dup' already exists \\({first.id}\\)"):
            held.result(timeout=DEADLINE_S)
    assert [v.version for v in admin.skills.versions.list(first.id)] == ["1.0.0"]
    assert b"first" in files_of_zip(admin.skills.content.retrieve(first.id).content)["dup/SKILL.md"][0]
