"""The environment images on a Docker Engine: listing them, and pruning the ones not in use.

Only images labelled ``org.skillctl.env`` (every environment image carries it; nothing else
does) are ever listed or removed — never the agent image, never anyone else's image.

What pruning keeps, with the reason reported:

* **in use by a container** — any container, running or stopped, created from it;
* **pinned by a lock** — it is the image ``skillctl run --lock FILE`` would start for one of
  the given locks (the project's ``skills.lock`` by default): the same hash of agent image,
  files and recipe that the run computes;
* **recent** — built less than the grace period ago: a run that has just built its image may
  not have started its container yet;
* **current** (unless ``everything``) — built on the current agent image, so a later run may
  still reuse it; an image built on any other agent image never will be by default.

Everything else is removed (or, in a dry run, reported as what would be), and so are build
stages a build could not remove (untagged, labelled ``org.skillctl.env.stage``) once they are
older than the grace period. Parts (``skillctl-env-part:…``, labelled ``org.skillctl.env.part``:
the installed wheels an environment image is assembled from, see ``build``) are removed when no
environment image that stays lists them and they are older than the grace period; the others are
kept for the next environment that shares them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillctl.env.build import ENV_REPO, LABEL_BASE, LABEL_ENV, LABEL_PACKAGES, LABEL_PART, LABEL_PARTS, LABEL_STAGE, env_hash
from skillctl.sandbox.client import list_images
from skillctl.errors import EnvError


@dataclass(frozen=True)
class EnvImage:
    id: str
    tags: tuple[str, ...]
    env: str  # the environment hash the image was built for
    base: str  # id of the agent image it was built on
    packages: tuple[str, ...]  # "name==version" (Python), "name=version" (Debian)
    created: str  # as Docker reports it (RFC 3339)
    size: int

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["tags"], doc["packages"] = list(self.tags), list(self.packages)
        return doc

    def age_s(self, now: dt.datetime) -> float:
        # Docker prints nanoseconds; Python reads at most microseconds.
        text = re.sub(r"(\.\d{6})\d+", r"\1", self.created.replace("Z", "+00:00"))
        try:
            return (now - dt.datetime.fromisoformat(text)).total_seconds()
        except ValueError:
            return 0.0  # an unreadable date counts as brand new: kept within any grace period


def _env_image(image: Any, env_label: str = LABEL_ENV) -> EnvImage:
    labels = (image.attrs.get("Config") or {}).get("Labels") or {}
    return EnvImage(
        image.id, tuple(sorted(image.tags)), labels.get(env_label, ""), labels.get(LABEL_BASE, ""),
        tuple(labels.get(LABEL_PACKAGES, "").split()), str(image.attrs.get("Created", "")),
        int(image.attrs.get("Size") or 0),
    )


def list_env_images(client: Any) -> list[EnvImage]:
    """Environment images (by label), newest first."""
    images = [_env_image(image) for image in list_images(client, {"label": LABEL_ENV})]
    return sorted(images, key=lambda i: i.created, reverse=True)


@dataclass(frozen=True)
class LockedFiles:
    """What a lock's environment is made of, enough to compute its image's hash on any base."""

    lock: str
    wheels: tuple[tuple[str, str], ...]
    debs: tuple[tuple[str, str], ...]
    isolated: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (skill, its venv's wheels)


def locked_files(locks: Sequence[tuple[Path, Any]]) -> list[LockedFiles]:
    """The environments these locks pin — (lock path, its ``environment`` section) each; locks
    without one are skipped."""
    from skillctl.env.prepare import locked_environment

    out = []
    for path, section in locks:
        env = locked_environment(section, path)
        if env is not None:
            out.append(LockedFiles(str(path), tuple((f.filename, f.sha256) for f in env.python.files),
                                   tuple((d.filename, d.sha256) for d in env.debian),
                                   tuple((i.skill, tuple((f.filename, f.sha256) for f in i.python.files))
                                         for i in env.isolated)))
    return out


@dataclass(frozen=True)
class Decision:
    image: EnvImage
    remove: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.image.id, "tags": list(self.image.tags), "packages": list(self.image.packages),
                "reason": self.reason}


def _containers_by_image(client: Any) -> dict[str, str]:
    """image id -> the name of one container created from it (any state)."""
    out: dict[str, str] = {}
    for c in client.api.containers(all=True):
        names = c.get("Names") or [c.get("Id", "")[:12]]
        out.setdefault(str(c.get("ImageID", "")), str(names[0]).lstrip("/"))
    return out


def plan_prune(
    client: Any,
    *,
    current_base: str | None,
    bases: Sequence[str] = (),
    locks: Sequence[LockedFiles] = (),
    keep_within_s: float = 3600.0,
    everything: bool = False,
    uv: str = "",
) -> list[Decision]:
    """What pruning would do with every environment image (only those built on ``bases`` when
    given, as image ids). ``current_base``: the current agent image's id; ``uv``: uv's version,
    part of an environment image's hash."""
    now = dt.datetime.now(dt.timezone.utc)
    used = _containers_by_image(client)
    images = [i for i in list_env_images(client) if not bases or i.base in bases]
    in_scope = {i.env for i in images}
    out = []
    for stage in list_images(client, {"label": LABEL_STAGE, "dangling": True}):
        leftover = _env_image(stage, LABEL_STAGE)
        if bases and leftover.env not in in_scope and leftover.base not in bases:
            continue  # a part's stage carries the agent image it was built on
        if leftover.id in used:
            out.append(Decision(leftover, False, f"build stage in use by container {used[leftover.id]}"))
        elif leftover.age_s(now) < keep_within_s:
            out.append(Decision(leftover, False, f"build stage made less than {_duration(keep_within_s)} ago"))
        else:
            out.append(Decision(leftover, True, "a build stage left behind"))
    for image in images:
        pinned = next((lk.lock for lk in locks if env_hash(image.base, lk.wheels, lk.debs, uv, dict(lk.isolated)) == image.env), None)
        foreign = [t for t in image.tags if not t.startswith(f"{ENV_REPO}:")]
        if image.id in used:
            keep = f"in use by container {used[image.id]}"
        elif pinned:
            keep = f"pinned by {pinned}"
        elif image.age_s(now) < keep_within_s:
            keep = f"built less than {_duration(keep_within_s)} ago"
        elif foreign:
            keep = f"also tagged {', '.join(foreign)}"
        elif not everything and current_base and image.base == current_base:
            keep = "built on the current agent image (--all removes it)"
        else:
            keep = ""
        reason = keep or ("built on another agent image" if image.base != current_base else "not in use")
        out.append(Decision(image, not keep, reason))
    return out


def plan_part_prune(client: Any, decisions: Sequence[Decision], *, bases: Sequence[str] = (),
                    keep_within_s: float = 3600.0) -> list[Decision]:
    """What pruning does with the parts, once ``decisions`` (``plan_prune``'s) are carried out:
    a part stays while an environment image that stays lists it (or when new, or in use)."""
    now = dt.datetime.now(dt.timezone.utc)
    used = _containers_by_image(client)
    removed = {d.image.id for d in decisions if d.remove}
    users: dict[str, str] = {}
    for image in list_images(client, {"label": LABEL_ENV}):
        if image.id not in removed:
            labels = (image.attrs.get("Config") or {}).get("Labels") or {}
            for h in labels.get(LABEL_PARTS, "").split():
                users.setdefault(h, ", ".join(image.tags) or image.id[:19])
    out = []
    for part_image in list_images(client, {"label": LABEL_PART}):
        part = _env_image(part_image, LABEL_PART)
        if bases and part.base not in bases:
            continue
        if part.id in used:
            out.append(Decision(part, False, f"part in use by container {used[part.id]}"))
        elif part.env[:12] in users:
            out.append(Decision(part, False, f"part of {users[part.env[:12]]}"))
        elif part.age_s(now) < keep_within_s:
            out.append(Decision(part, False, f"part made less than {_duration(keep_within_s)} ago"))
        else:
            out.append(Decision(part, True, "a part no environment image uses"))
    return out


def apply_prune(client: Any, plan: Sequence[Decision]) -> list[Decision]:
    """Remove what ``plan`` says; returns the plan with what Docker refused turned into kept
    (a container or a child image appeared meanwhile)."""
    import docker.errors
    import requests.exceptions

    out = []
    for decision in plan:
        if decision.remove:
            try:
                client.images.remove(decision.image.id, force=False, noprune=False)
            except docker.errors.NotFound:
                pass  # already gone: removed by a concurrent prune
            except docker.errors.APIError as exc:
                why = str(getattr(exc, "explanation", "") or exc).splitlines()[0]
                decision = Decision(decision.image, False, f"Docker refused to remove it ({why})")
            except requests.exceptions.RequestException as exc:
                decision = Decision(decision.image, False, f"Docker did not answer in time ({type(exc).__name__}); "
                                    "run prune again")
        out.append(decision)
    return out


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def image_id(client: Any, ref: str) -> str:
    try:
        return str(client.images.get(ref).id)
    except Exception as exc:
        raise EnvError(f"no image {ref} on this Docker Engine ({str(exc).splitlines()[0]})") from None
