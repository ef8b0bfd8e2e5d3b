"""``skillctl env list`` and ``skillctl env prune`` on the real engine.

Everything is built on a throwaway agent image of this test's own (the agent image plus a
label: a new image id), and prune is scoped to it with ``--base``, so the test never touches
the environment images other tests and people keep on the shared engine."""

from __future__ import annotations

import io
import json
import uuid

import pytest

from .conftest import remove_images
from .runs import invoke, make_skill, publish

pytestmark = [pytest.mark.requires_docker, pytest.mark.slow]

LISTED_KEYS = {"id", "tags", "env", "base", "packages", "created", "size"}


def build_image(client, dockerfile: str, tag: str) -> str:
    for event in client.api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, pull=False,
                                  network_mode="none", decode=True):
        assert "error" not in event, event
    return client.images.get(tag).id


@pytest.fixture
def base(docker_client, agent_image):
    """(tag, id) of a throwaway agent image, and a foreign image built on it that is named like
    an environment image but is not labelled as one. Removed afterwards with everything built
    on it."""
    token = uuid.uuid4().hex[:10]
    tag = f"skillctl-test-base:{token}"
    base_id = build_image(docker_client, f"FROM {agent_image}\nLABEL org.skillctl.test.base={token}\n", tag)
    foreign = f"skillctl-env:foreign-{token}"
    foreign_id = build_image(docker_client, f"FROM {tag}\nLABEL org.example.foreign=yes\n", foreign)
    try:
        yield tag, base_id, foreign_id
    finally:
        built_on = docker_client.images.list(filters={"label": f"org.skillctl.env.base={base_id}"})
        remove_images([foreign_id, *(i.id for i in built_on), base_id])


def env_build(env, *args) -> str:
    result = invoke(env, "env", "build", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["image"]


def prune(env, *args) -> dict:
    result = invoke(env, "env", "prune", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ids(items) -> set[str]:
    return {i["id"] for i in items}


def test_list_shows_environment_images_and_prune_removes_only_unused_ones(base, project, tmp_path, docker_client,
                                                                          agent_image, monkeypatch):
    base_tag, base_id, foreign_id = base
    env = project
    old = make_skill(tmp_path, "old-six", "import six\n", {"scripts/requirements.txt": "six==1.16.0\n"})
    new = make_skill(tmp_path, "new-six", "import six\n", {"scripts/requirements.txt": "six==1.17.0\n"})
    in_container = docker_client.images.get(env_build(env, str(old), "--image", base_tag)).id
    unused = docker_client.images.get(env_build(env, str(new), "--image", base_tag)).id
    publish(env, make_skill(tmp_path / "pub", "yaml-user", "import yaml\n", {"scripts/requirements.txt": "pyyaml\n"}))
    (tmp_path / "skills.yaml").write_text("skills:\n  yaml-user: ^1\n")
    lock = tmp_path / "skills.lock"
    made = invoke(env, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock), "--image", base_tag)
    assert made.exit_code == 0, made.output
    locked = docker_client.images.get(env_build(env, "--lock", str(lock), "--image", base_tag)).id
    mine = {in_container, unused, locked}
    others = {foreign_id, base_id, docker_client.images.get(agent_image).id}

    listed = invoke(env, "env", "list", "--format", "json")
    assert listed.exit_code == 0, listed.output
    doc = json.loads(listed.stdout)
    assert mine <= ids(doc) and not others & ids(doc)
    for item in (i for i in doc if i["id"] in mine):
        assert set(item) == LISTED_KEYS and item["base"] == base_id and item["size"] > 0
        assert len(item["tags"]) == 1 and item["tags"][0].startswith("skillctl-env:") and len(item["env"]) == 64
    assert "six==1.16.0" in next(i for i in doc if i["id"] == in_container)["packages"]

    container = docker_client.containers.create(in_container, command=["true"], labels={"org.skillctl.test": "prune"})
    try:
        monkeypatch.chdir(tmp_path)  # ./skills.lock pins `locked` by default
        dry = prune(env, "--base", base_tag, "--keep-within", "0", "--dry-run")
        assert dry["dry_run"] and ids(dry["removed"]) == {unused}
        reasons = reasons_of(dry)
        assert reasons[in_container] == f"in use by container {container.name}"
        assert reasons[locked] == "pinned by skills.lock"
        assert all(docker_client.images.get(i) for i in mine | others)  # a dry run changes nothing

        young = prune(env, "--base", base_tag)  # the default grace period: just built, so kept
        assert young["removed"] == [] and reasons_of(young)[unused] == "built less than 1h ago"
        current = prune(env, "--base", base_tag, "--image", base_tag, "--keep-within", "0", "--dry-run")
        assert current["removed"] == []
        assert reasons_of(current)[unused] == "built on the current agent image (--all removes it)"

        monkeypatch.chdir(tmp_path / "pub")  # no skills.lock here: only --lock pins
        explicit = prune(env, "--base", base_tag, "--keep-within", "0", "--lock", str(lock), "--dry-run")
        assert ids(explicit["removed"]) == {unused} and reasons_of(explicit)[locked] == f"pinned by {lock}"

        done = prune(env, "--base", base_tag, "--keep-within", "0", "--lock", str(lock))
        assert not done["dry_run"] and ids(done["removed"]) == {unused}
        left = {i.id for i in docker_client.images.list(filters={"label": "org.skillctl.env"})}
        assert unused not in left and {in_container, locked} <= left
    finally:
        container.remove(force=True)

    # A container that appears between planning and removing: Docker refuses, the image is kept.
    from skillctl.env.images import apply_prune, plan_prune

    plan = [d for d in plan_prune(docker_client, current_base=base_id, bases=[base_id], keep_within_s=0, everything=True)
            if d.image.id == locked]
    assert [d.remove for d in plan] == [True]
    late = docker_client.containers.create(locked, command=["true"], labels={"org.skillctl.test": "prune"})
    try:
        (refused,) = apply_prune(docker_client, plan)
    finally:
        late.remove(force=True)
    assert not refused.remove and refused.reason.startswith("Docker refused to remove it (")

    rest = prune(env, "--base", base_tag, "--image", base_tag, "--all", "--keep-within", "0")
    assert ids(rest["removed"]) == {in_container, locked}
    left = {i.id for i in docker_client.images.list()}
    assert not mine & left and others <= left  # the agent image, the base and the foreign image stay


def reasons_of(doc: dict) -> dict[str, str]:
    return {k["id"]: k["reason"] for k in doc["kept"]}


def test_prune_refuses_an_unknown_base_and_a_bad_duration(project):
    unknown = invoke(project, "env", "prune", "--base", "no-such-image:nowhere", "--dry-run")
    assert unknown.exit_code == 1 and "no image no-such-image:nowhere on this Docker Engine" in unknown.stderr, unknown.output
    bad = invoke(project, "env", "prune", "--keep-within", "soon")
    assert bad.exit_code == 2 and "'soon' is not a duration; write e.g. 90s, 30m, 1h, 7d or 0" in bad.stderr, bad.output


def test_a_cached_environment_is_found_by_its_tag_and_a_moved_or_removed_tag_by_its_label(base, docker_client):
    """A start inspects the environment's tag instead of listing images by label (which the
    engine pays for with every image's config); the tag counts only when it carries the label."""
    from skillctl.env.build import ENV_REPO, LABEL_ENV, existing_env_image, find_env_image

    base_tag, base_id, _foreign = base
    digest = uuid.uuid4().hex + uuid.uuid4().hex
    tag = f"{ENV_REPO}:{digest[:12]}"
    labelled = build_image(docker_client, f"FROM {base_tag}\nLABEL {LABEL_ENV}={digest} org.skillctl.env.base={base_id}\n",
                           tag)
    assert find_env_image(docker_client, digest).id == labelled
    assert existing_env_image(docker_client, base_tag, lambda _base_id: digest, False)[2] == tag

    docker_client.images.get(base_id).tag(ENV_REPO, digest[:12])  # the tag moved to an image without the label
    assert find_env_image(docker_client, digest).id == labelled  # the listing still finds it by its label
    assert find_env_image(docker_client, "f" * 64) is None
    docker_client.images.get(base_id).tag(ENV_REPO, "f" * 12)  # a tag alone is not an environment
    try:
        assert find_env_image(docker_client, "f" * 64) is None
    finally:
        docker_client.images.remove(f"{ENV_REPO}:{'f' * 12}")

    docker_client.images.remove(tag)  # untags the base: the labelled image has no tag now
    assert not docker_client.images.get(labelled).tags  # found by its label, and tagged again:
    assert existing_env_image(docker_client, base_tag, lambda _base_id: digest, False)[2] == tag
    assert docker_client.images.get(tag).id == labelled
    assert existing_env_image(docker_client, base_tag, lambda _base_id: digest, True)[2] is None  # forced: rebuilt
